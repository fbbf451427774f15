"""`glow-decompose-3d-pools`: a 3-D max or average pool, on [N, C, D, H, W] tensors, becomes
2-D pools. Both are separable (an average's in-bounds count is the product of the per-axis
counts): H and W are pooled over [N, C*D, H, W], then D over [N, C, D, H'*W'] with a
[kd, 1] window. A window over the whole input is one 2-D pool over [N, C, D, H*W]."""

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


def as_two_dimensional_pools(builder: DecompositionBuilder, op: glow.PoolOp) -> SSAValue | None:
    """The 2-D pools computing a 3-D pool (None for a pool of another rank)."""
    shape = glow.shape_of(op.input)
    if len(shape) != 5:
        return None
    n, c, d, h, w = shape
    kernel, strides, pads = op.kernel.get_values(), op.strides.get_values(), op.pads.get_values()
    if list(kernel) == [d, h, w] and not any(pads):  # a global pool
        whole = builder.pool(builder.reshape(op.input, (n, c, d, h * w)), [d, h * w], [1, 1], [0, 0, 0, 0])
        return builder.reshape(whole, glow.shape_of(op.results[0]))
    planes = builder.pool(builder.reshape(op.input, (n, c * d, h, w)), kernel[1:], strides[1:],
                          [*pads[1:3], *pads[4:6]])
    height, width = glow.shape_of(planes)[2:]
    depth = builder.pool(builder.reshape(planes, (n, c, d, height * width)), [kernel[0], 1], [strides[0], 1],
                         [pads[0], 0, pads[3], 0])
    return builder.reshape(depth, (n, c, glow.shape_of(depth)[2], height, width))


@dataclass(frozen=True)
class Decompose3DPools(ModulePass):
    """Rewrites 3-D max and average pools as a 2-D pool over the planes and one over the depth."""

    name = "glow-decompose-3d-pools"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(DecomposeOps((glow.PoolOp,), as_two_dimensional_pools, names_in(op))).rewrite_module(op)
