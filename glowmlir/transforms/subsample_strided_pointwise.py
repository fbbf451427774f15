"""`glow-subsample-strided-pointwise`: a float 1x1 convolution of stride s (unpadded,
unpooled, NCHW) becomes a strided `glow.slice` of its input (every s-th row and column) and
a 1x1 convolution of stride 1.

For the vector units of a host: a 1x1 convolution of stride 1 sees each channel's plane as
one row (`vector-columns`), its vectors full across the plane's rows, where one of stride 2
loads two vectors and shuffles out the even lanes for every input channel of every row
(ResNet-50's downsampling shortcuts: 7 lanes of 8 on 7x7 outputs). The subsampled input is
a quarter of the input's size, read once; the pipeline adds the pass for targets with a
vector tile only (on a microcontroller it would cost RAM)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, f32
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriteWalker

from glowmlir.dialects import glow
from glowmlir.transforms.constants import names_in
from glowmlir.transforms.decompose_builder import DecomposeOps, DecompositionBuilder


def subsampled(builder: DecompositionBuilder, op: glow.ConvolutionOp) -> SSAValue | None:
    """The 1x1 convolution of stride 1 over the subsampled input, or None to keep `op`."""
    strides = tuple(op.strides.get_values())
    if (glow.shape_of(op.filter)[2:] != (1, 1) or strides == (1, 1) or any(op.pads.get_values())
            or op.pool is not None or glow.is_nhwc(op) or op.result.type.element_type != f32
            or op.input.type.element_type != f32):
        return None
    n, channels, *_ = glow.shape_of(op.input)
    height, width = glow.shape_of(op.result)[2:]
    taken = builder.slice(op.input, [0, 0, 0, 0], [n, channels, height, width], [1, 1, *strides])
    return builder.add(glow.ConvolutionOp(taken, op.filter, op.bias, **op.builder_arguments() | {"strides": [1, 1]}))


@dataclass(frozen=True)
class SubsampleStridedPointwise(ModulePass):
    """Rewrites float 1x1 convolutions of stride over 1 as a strided slice of the input and
    a 1x1 convolution of stride 1."""

    name = "glow-subsample-strided-pointwise"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(DecomposeOps((glow.ConvolutionOp,), subsampled, names_in(op))).rewrite_module(op)
