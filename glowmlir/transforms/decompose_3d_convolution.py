"""`glow-decompose-3d-convolution`: a 3-D convolution, input [N, C, D, H, W] and filter
[O, I, KD, KH, KW], becomes a sum of 2-D ones. With the depth planes of the depth-padded
input as a batch [N * D', C, H, W], one 2-D convolution per depth tap kd of the filter
(the slice W[:, :, kd]) runs over every plane; output plane z sums, over kd, plane
z * stride + kd * dilation of the kd-th result. Only the first tap adds the bias."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriteWalker

from glowmlir.dialects import glow
from glowmlir.transforms.constants import names_in
from glowmlir.transforms.decompose_builder import DecomposeOps, DecompositionBuilder

_WINDOW = {"strides", "pads", "dilations", "group"}
"""The properties of a plain convolution."""


def as_sum_of_two_dimensional(builder: DecompositionBuilder, op: glow.ConvolutionOp) -> SSAValue | None:
    """The 2-D convolutions and sum computing a 3-D convolution (None for one of another
    rank, or one with a fused activation, pool or residual, which only 2-D ones get)."""
    shape = glow.shape_of(op.input)
    if len(shape) != 5 or set(op.properties) - _WINDOW or op.residual is not None:
        return None
    n, c, d, h, w = shape
    out_channels, in_channels, k_d, k_h, k_w = glow.shape_of(op.filter)
    strides, pads, dilations = op.strides.get_values(), op.pads.get_values(), op.dilations.get_values()
    padded = builder.zero_pad(op.input, [0, 0, pads[0], 0, 0], [0, 0, pads[3], 0, 0])
    depth = glow.shape_of(padded)[2]
    planes = builder.reshape(builder.transpose(padded, [0, 2, 1, 3, 4]), (n * depth, c, h, w))
    out_depth = glow.pooled_size(d, k_d, strides[0], pads[0], pads[3], dilations[0])
    name = builder.node_name("convolution")
    total = None
    for tap in range(k_d):
        tap_filter = builder.slice(op.filter, [0, 0, tap, 0, 0], [out_channels, in_channels, 1, k_h, k_w])
        tap_filter = builder.reshape(tap_filter, (out_channels, in_channels, k_h, k_w))
        bias = op.bias if tap == 0 else builder.constant(f"{name}_tap{tap}_bias", np.zeros(out_channels, np.float32))
        result = builder.convolution(planes, tap_filter, bias, strides[1:], [*pads[1:3], *pads[4:6]], dilations[1:],
                                     op.group.value.data)
        _, _, out_h, out_w = glow.shape_of(result)
        result = builder.reshape(result, (n, depth, out_channels, out_h, out_w))
        sliced = builder.slice(result, [0, tap * dilations[0], 0, 0, 0], [n, out_depth, out_channels, out_h, out_w],
                               [1, strides[0], 1, 1, 1])
        total = sliced if total is None else builder.add_values(total, sliced)
    return builder.transpose(total, [0, 2, 1, 3, 4])


@dataclass(frozen=True)
class Decompose3DConvolution(ModulePass):
    """Rewrites 3-D convolutions as sums of 2-D ones, one per depth tap of the filter."""

    name = "glow-decompose-3d-convolution"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(DecomposeOps((glow.ConvolutionOp,), as_sum_of_two_dimensional, names_in(op))) \
            .rewrite_module(op)
