"""`glow-decompose-conv-transpose`: a `glow.conv_transpose` becomes a `glow.convolution` with
stride 1, the flipped filter (in and out channels swapped within each group, the window
reversed) and no pads, over the input with (stride - 1) zeros between its elements, padded
by dilation * (kernel - 1) minus the transposed convolution's pads (and output padding at
the end). A constant filter is flipped here; any other by ops at run time."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriteWalker

from glowmlir.dialects import glow
from glowmlir.dialects.weights import dense_from_array
from glowmlir.transforms.constants import constant_value, names_in
from glowmlir.transforms.decompose_builder import DecomposeOps, DecompositionBuilder


def with_zeros_between(builder: DecompositionBuilder, x: SSAValue, strides: list[int]) -> SSAValue:
    """x [N, C, *spatial] with (stride - 1) zeros between the elements along each spatial axis:
    [n, c, h, w] -> [n, c, h, 1, w, 1] -> pad -> [n, c, h, s, w, s] -> [n, c, h*s, w*s], the tail cropped."""
    if all(s == 1 for s in strides):
        return x
    n, c, *spatial = glow.shape_of(x)
    grid = builder.reshape(x, (n, c, *[v for size in spatial for v in (size, 1)]))
    grid = builder.zero_pad(grid, [0] * (2 + 2 * len(spatial)), [0, 0, *[v for s in strides for v in (0, s - 1)]])
    x = builder.reshape(grid, (n, c, *[size * s for size, s in zip(spatial, strides)]))
    return builder.zero_pad(x, [0] * (2 + len(spatial)), [0, 0, *[1 - s for s in strides]])


def flipped_filter(builder: DecompositionBuilder, w: SSAValue, group: int) -> SSAValue:
    """A transposed convolution's filter [C_in, C_out / group, *kernel] as the equivalent
    convolution's [C_out, C_in / group, *kernel]: in and out channels swapped within each
    group, the window reversed."""
    c_in, out_per_group, *kernel = glow.shape_of(w)
    spatial_axes = tuple(range(2, 2 + len(kernel)))
    known = constant_value(w)
    if known is not None:
        per_group = c_in // group
        flipped = np.concatenate([np.flip(known[g * per_group:(g + 1) * per_group].swapaxes(0, 1), spatial_axes)
                                  for g in range(group)], axis=0)
        return builder.constant(f"{w.owner.name_.data}_flipped", np.ascontiguousarray(flipped))
    grouped = builder.reshape(w, (group, c_in // group, out_per_group, *kernel))
    swapped = builder.transpose(grouped, [0, 2, 1, *(axis + 1 for axis in spatial_axes)])
    w = builder.reshape(swapped, (group * out_per_group, c_in // group, *kernel))
    name = builder.node_name("conv_transpose")
    for axis, size in zip(spatial_axes, kernel):  # reverse the window: a resampling by reversed taps
        if size > 1:
            reversed_taps = dense_from_array(np.arange(size - 1, -1, -1, dtype=np.int32)[:, None])
            taps = builder.add(glow.ConstantOp(builder.names(f"{name}_reversed{axis}"), reversed_taps))
            ones = builder.constant(f"{name}_ones{axis}", np.ones((size, 1), np.float32))
            w = builder.add(glow.ResampleOp(w, taps, ones, axis))
    return w


def as_convolution(builder: DecompositionBuilder, op: glow.ConvTransposeOp) -> SSAValue:
    """The convolution computing a transposed convolution."""
    strides, pads = list(op.strides.get_values()), op.pads.get_values()
    dilations, output_padding = list(op.dilations.get_values()), op.output_padding.get_values()
    kernel = glow.shape_of(op.filter)[2:]
    rank = len(kernel)
    x = with_zeros_between(builder, op.input, strides)
    begin = [d * (k - 1) - pads[axis] for axis, (k, d) in enumerate(zip(kernel, dilations))]
    end = [d * (k - 1) - pads[axis + rank] + extra
           for axis, (k, d, extra) in enumerate(zip(kernel, dilations, output_padding))]
    x = builder.zero_pad(x, [0, 0, *begin], [0, 0, *end])
    group = op.group.value.data
    return builder.convolution(x, flipped_filter(builder, op.filter, group), op.bias, [1] * rank, [0] * (2 * rank),
                               dilations, group)


@dataclass(frozen=True)
class DecomposeConvTranspose(ModulePass):
    """Rewrites transposed convolutions as convolutions over zero-interleaved, padded inputs."""

    name = "glow-decompose-conv-transpose"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(DecomposeOps((glow.ConvTransposeOp,), as_convolution, names_in(op))).rewrite_module(op)
