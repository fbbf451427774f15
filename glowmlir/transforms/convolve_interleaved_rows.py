"""`glow-convolve-interleaved-rows`: a convolution of an NHWC input transposed to NCHW reads
the input in place, as one channel whose rows interleave the channels.

TFLite graphs are NHWC; the importer transposes their input to the NCHW our kernels read,
a copy of the whole input before the first layer (visual wake words: 27,648 B and ~100k
instructions on a Cortex-M7). The DSP-extension cores without Helium run this pass
(`backends.arm_dsp.backend.graph_passes`): their kernels take the long strided rows.

An NHWC tensor [N, H, W, C] is, unchanged in memory, the NCHW tensor [N, 1, H, W*C]: row h
holds pixel w's channel c at column w*C + c. A
convolution with an undilated row (KW taps, stride s, pads l and r, one group) over the C
channels is then the one-channel convolution over those rows with KW*C taps (filter [O, 1,
KH, KW*C], the OHWI filter's rows), stride s*C and pads l*C and r*C: the same products in
each output's sum, so the same (exact, integer) result, and the transpose's copy goes
(reshapes are views). Transposes that feed anything else stay, and so do those of float
convolutions (their sums would be reassociated) and of tensors other than the graph's inputs
(a library's NHWC activation into one of our convolutions: hundreds of channels, rows of
hundreds of taps, which no kernel here is measured on).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriteWalker

from glowmlir.dialects import glow, quant
from glowmlir.transforms.constants import constant_value, names_in, typed_constant
from glowmlir.transforms.decompose_builder import DecomposeOps, DecompositionBuilder


def interleaved_rows(builder: DecompositionBuilder, op: glow.ConvolutionOp) -> SSAValue | None:
    """The one-channel convolution over the rows of the NHWC graph input `op`'s input is a
    transpose of, or None to keep `op`."""
    transpose = op.input.owner
    if (not isinstance(transpose, glow.TransposeOp) or tuple(transpose.perm.get_values()) != glow.NHWC_TO_NCHW
            or not isinstance(transpose.input.owner, glow.PlaceholderOp)
            or glow.is_nhwc(op) or op.group.value.data != 1 or op.dilations.get_values()[1] != 1
            or not quant.is_quantized(op.input.type)):
        return None
    filter_ = constant_value(op.filter)
    if filter_ is None or not isinstance(op.filter.owner, glow.ConstantOp):
        return None
    n, height, width, channels = glow.shape_of(transpose.input)
    outputs, _, kernel_height, kernel_width = filter_.shape
    rows = builder.reshape(transpose.input, [n, 1, height, width * channels])
    row_filter = np.ascontiguousarray(np.transpose(filter_, glow.NCHW_TO_NHWC)).reshape(
        outputs, 1, kernel_height, kernel_width * channels)
    name = builder.names(f"{op.filter.owner.name_.data}_rows")
    filter_rows = builder.add(typed_constant(name, row_filter.astype(filter_.dtype), op.filter.type.element_type))
    stride_h, stride_w = op.strides.get_values()
    top, left, bottom, right = op.pads.get_values()
    return builder.add(glow.ConvolutionOp(rows, filter_rows, op.bias, **op.builder_arguments() | {
        "strides": [stride_h, stride_w * channels], "pads": [top, left * channels, bottom, right * channels],
        "result_element": op.result.type.element_type}))


@dataclass(frozen=True)
class ConvolveInterleavedRows(ModulePass):
    """Rewrites convolutions of NHWC graph inputs transposed to NCHW as one-channel
    convolutions over the NHWC rows (see module doc)."""

    name = "glow-convolve-interleaved-rows"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(DecomposeOps((glow.ConvolutionOp,), interleaved_rows, names_in(op))).rewrite_module(op)
        from xdsl.transforms.dead_code_elimination import dce

        dce(op)
