"""Conv and ConvTranspose, over 1 to 3 spatial axes as the model states them: the
`glow-decompose-*` passes turn them into the 2-D convolutions the lowering takes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from glowmlir.dialects import glow
from glowmlir.importers.onnx.importer import OnnxImporter, imports


def window_pads(importer: OnnxImporter, attrs: dict, spatial: Sequence[int], kernel: Sequence[int],
                 strides: Sequence[int], dilations: Sequence[int]) -> list[int]:
    """ONNX `pads`/`auto_pad` as the begin of each spatial axis, then its end (2-D: [top, left,
    bottom, right]); the window's kernel_shape, strides and dilations must be positive."""
    for name, values in (("kernel_shape", kernel), ("strides", strides), ("dilations", dilations)):
        if len(values) != len(spatial) or min(values, default=1) < 1:
            raise importer.error(f"{name} {list(values)} must give a positive size for each of the "
                                 f"{len(spatial)} spatial axes")
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad in ("NOTSET", "VALID"):
        pads = list(attrs.get("pads", [0] * (2 * len(spatial)))) if auto_pad == "NOTSET" else [0] * (2 * len(spatial))
        if len(pads) != 2 * len(spatial):
            raise importer.error(f"pads {pads} do not give a begin and an end for {len(spatial)} spatial axes")
        return pads
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise importer.error(f"unknown auto_pad \"{auto_pad}\"")
    return glow.same_pads(spatial, kernel, strides, dilations, upper=auto_pad == "SAME_UPPER")


@imports("Conv")
def _conv(importer: OnnxImporter, node, attrs):
    """A `glow.convolution` over the node's 1, 2 or 3 spatial axes."""
    x, w = importer.tensor(node.input[0]), importer.tensor(node.input[1])
    x_shape, w_shape = glow.shape_of(x), glow.shape_of(w)
    rank = len(x_shape) - 2
    if not 1 <= rank <= 3:
        raise importer.error(f"only 1-D, 2-D and 3-D convolution are supported (input {list(x_shape)})")
    check_kernel_shape(importer, attrs, w_shape[2:])
    strides = list(attrs.get("strides", [1] * rank))
    dilations = list(attrs.get("dilations", [1] * rank))
    pads = window_pads(importer, attrs, x_shape[2:], w_shape[2:], strides, dilations)
    group = attrs.get("group", 1)
    if len(node.input) > 2 and node.input[2]:
        bias = importer.tensor(node.input[2])
    else:
        bias = importer.constant(f"{node.output[0]}_bias", np.zeros(w_shape[0], np.float32))
    return [importer.add(glow.ConvolutionOp(x, w, bias, strides=strides, pads=pads, dilations=dilations,
                                            group=group))]


def check_kernel_shape(importer: OnnxImporter, attrs: dict, filter_window: Sequence[int]) -> None:
    """A Conv's or ConvTranspose's `kernel_shape` attribute, if given, is its filter's window."""
    if "kernel_shape" in attrs and list(attrs["kernel_shape"]) != list(filter_window):
        raise importer.error(f"kernel_shape {list(attrs['kernel_shape'])} disagrees with the filter's window "
                             f"{list(filter_window)}")


def transposed_window_pads(importer: OnnxImporter, attrs: dict, spatial: Sequence[int], kernel: Sequence[int],
                           strides: Sequence[int], dilations: Sequence[int],
                           output_padding: Sequence[int]) -> tuple[list[int], list[int]]:
    """A ConvTranspose's (pads, output_padding): its `pads`, or, given `output_shape` or a SAME
    `auto_pad` (output = input * stride), the pads that give that output, as ONNX defines
    them (the odd one at the end for SAME_UPPER, at the begin otherwise). An output up to a
    stride larger than the windows reach gets the excess as output padding; a larger one is
    refused, as onnxruntime refuses it."""
    rank = len(spatial)
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise importer.error(f"unknown auto_pad \"{auto_pad}\"")
    if "output_shape" in attrs:
        wanted = list(attrs["output_shape"])[-rank:]
    elif auto_pad.startswith("SAME"):
        wanted = [size * s for size, s in zip(spatial, strides)]
    else:
        pads = [0] * 2 * rank if auto_pad == "VALID" else list(attrs.get("pads", [0] * 2 * rank))
        return pads, list(output_padding)
    if len(wanted) != rank:
        raise importer.error(f"output_shape {list(attrs['output_shape'])} does not give {rank} spatial sizes")
    begin, end, extra = [0] * rank, [0] * rank, list(output_padding)
    for axis, (size, k, s, d, out) in enumerate(zip(spatial, kernel, strides, dilations, wanted)):
        total = s * (size - 1) + output_padding[axis] + (k - 1) * d + 1 - out
        if total < 0 and extra[axis] - total >= s:  # output padding must stay below the stride
            raise importer.error(f"output size {out} of spatial axis {axis} is larger than the windows reach "
                                 f"({out + total})")
        if total < 0:  # a little beyond the last window: output padding (bias only there)
            extra[axis] -= total
            continue
        small, large = total // 2, total - total // 2
        begin[axis], end[axis] = (small, large) if auto_pad == "SAME_UPPER" else (large, small)
    return begin + end, extra


@imports("ConvTranspose")
def _conv_transpose(importer: OnnxImporter, node, attrs):
    """A `glow.conv_transpose` over the node's 1 or 2 spatial axes, its pads given or derived
    from `output_shape`/`auto_pad`. The filter may be computed at run time."""
    x, w = importer.tensor(node.input[0]), importer.tensor(node.input[1])
    x_shape, w_shape = glow.shape_of(x), glow.shape_of(w)
    check_kernel_shape(importer, attrs, w_shape[2:])
    rank = len(x_shape) - 2
    if rank not in (1, 2):
        raise importer.error("only 1-D and 2-D ConvTranspose are supported")
    strides, dilations = list(attrs.get("strides", [1] * rank)), list(attrs.get("dilations", [1] * rank))
    pads, output_padding = transposed_window_pads(importer, attrs, x_shape[2:], w_shape[2:], strides, dilations,
                                                  list(attrs.get("output_padding", [0] * rank)))
    group = attrs.get("group", 1)
    bias = importer.tensor(node.input[2]) if len(node.input) > 2 and node.input[2] else \
        importer.constant(f"{node.output[0]}_bias", np.zeros(w_shape[1] * group, np.float32))
    return [importer.add(glow.ConvTransposeOp(x, w, bias, strides=strides, pads=pads, dilations=dilations,
                                              output_padding=output_padding, group=group))]
