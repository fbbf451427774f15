"""MaxPool, AveragePool and their global forms, over 1 to 3 spatial axes as the model
states them: the `glow-decompose-*` passes turn them into 2-D pools."""

from __future__ import annotations

from glowmlir.dialects import glow
from glowmlir.importers.onnx.convolution import window_pads
from glowmlir.importers.onnx.importer import OnnxImporter, imports


@imports("MaxPool", "AveragePool")
def _max_avg_pool(importer: OnnxImporter, node, attrs):
    """A `glow.max_pool` or `glow.avg_pool` over the node's 1, 2 or 3 spatial axes; ceil_mode
    becomes end padding."""
    if len(node.output) > 1 and node.output[1]:
        raise importer.error("the Indices output of MaxPool is not supported")
    x = importer.tensor(node.input[0])
    x_shape = glow.shape_of(x)
    kernel = list(attrs["kernel_shape"])
    rank = len(kernel)
    if len(x_shape) != rank + 2:
        raise importer.error(f"kernel_shape {kernel} does not give one size per spatial axis of the "
                             f"rank-{len(x_shape)} input")
    if not 1 <= rank <= 3:
        raise importer.error("only 1-D, 2-D and 3-D pooling are supported")
    strides = list(attrs.get("strides", [1] * rank))
    if any(d != 1 for d in attrs.get("dilations", [1] * rank)):
        raise importer.error("dilated pooling is not supported")
    pads = window_pads(importer, attrs, x_shape[2:], kernel, strides, [1] * rank)
    if attrs.get("ceil_mode", 0):
        # Extend the end padding so that floor rounding gives ceil's extent, except for a
        # last window that would start in the end padding (ONNX drops that one).
        for axis in range(rank):
            size, k, s = x_shape[2 + axis], kernel[axis], strides[axis]
            out = -(-(size + pads[axis] + pads[axis + rank] - k) // s) + 1
            if (out - 1) * s >= size + pads[axis]:
                out -= 1
            pads[axis + rank] = max(pads[axis + rank], (out - 1) * s + k - size - pads[axis])
        if node.op_type == "AveragePool" and attrs.get("count_include_pad", 0):
            raise importer.error("ceil_mode with count_include_pad is not supported")
    if node.op_type == "MaxPool":
        return [importer.add(glow.MaxPoolOp(x, kernel, strides, pads))]
    return [importer.add(glow.AvgPoolOp(x, kernel, strides, pads,
                                        count_include_pad=bool(attrs.get("count_include_pad", 0))))]


@imports("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(importer: OnnxImporter, node, attrs):
    """A pool whose window is the whole of the 1, 2 or 3 spatial axes."""
    x = importer.tensor(node.input[0])
    x_shape = glow.shape_of(x)
    rank = len(x_shape) - 2
    if not 1 <= rank <= 3:
        raise importer.error("only 1-D, 2-D and 3-D pooling are supported")
    op_type = glow.AvgPoolOp if node.op_type == "GlobalAveragePool" else glow.MaxPoolOp
    return [importer.add(op_type(x, list(x_shape[2:]), [1] * rank, [0] * (2 * rank)))]
