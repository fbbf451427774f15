"""`glow-decompose-1d-windows`: a 1-D convolution or pool, on [N, C, L] tensors, becomes the
2-D one over [N, C, 1, L] that the lowering takes: a filter [O, I, K] is seen as
[O, I, 1, K], the window gets a unit first axis (pads [b, e] become [0, b, 0, e]), and the
result is reshaped back to [N, O, L']."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriteWalker

from glowmlir.dialects import glow
from glowmlir.transforms.constants import names_in
from glowmlir.transforms.decompose_builder import DecomposeOps, DecompositionBuilder


def as_two_dimensional(builder: DecompositionBuilder, op: glow.ConvolutionOp | glow.PoolOp) -> SSAValue | None:
    """The 2-D form of a 1-D convolution or pool (None for any other, or for a convolution
    with a fused pool or residual, which only 2-D ones get)."""
    shape = glow.shape_of(op.input)
    if len(shape) != 3 or op.properties.get("pool") is not None or getattr(op, "residual", None) is not None:
        return None
    n, c, length = shape
    x = builder.reshape(op.input, (n, c, 1, length))
    begin, end = op.pads.get_values()
    pads = [0, begin, 0, end]
    if isinstance(op, glow.PoolOp):
        result = builder.pool(x, [1, *op.kernel.get_values()], [1, *op.strides.get_values()], pads)
    else:
        out_channels, in_channels, width = glow.shape_of(op.filter)
        filter_ = builder.reshape(op.filter, (out_channels, in_channels, 1, width))
        strides, dilations = [1, *op.strides.get_values()], [1, *op.dilations.get_values()]
        result_shape = glow.ConvolutionOp.shape_rule(glow.shape_of(x), glow.shape_of(filter_), strides, pads, dilations,
                                                     op.group.value.data)
        result = builder.copy_of_op([x, filter_, op.bias], result_shape, strides=strides, pads=pads,
                                    dilations=dilations)
    return builder.reshape(result, glow.shape_of(op.results[0]))


@dataclass(frozen=True)
class Decompose1DWindows(ModulePass):
    """Rewrites 1-D convolutions and pools as 2-D ones over a unit height."""

    name = "glow-decompose-1d-windows"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pattern = DecomposeOps((glow.ConvolutionOp, glow.PoolOp), as_two_dimensional, names_in(op))
        PatternRewriteWalker(pattern).rewrite_module(op)
