"""`glowll-fold-constant-channels`: an int8 convolution's output channels whose level is the
same for every input are given zero weights and a bias of the least magnitude that gives that
level.

A trained model can hold dead channels: MLPerf Tiny's visual wake words has, in each pointwise
layer from 64 -> 64 on, 3 to 166 channels of filter scale about 1e-8 whose int32 bias is near
2^30 in those units. Their accumulator is the bias plus a product that moves it by a few
hundredths of a level, so their output level is a constant; but the bias alone keeps the
layer's largest accumulator, shifted left by one, outside int32, and so the whole layer off
the one-multiply requantization (`narrow_requantization`, `fits_narrow_requantization`): each
output then takes the 64-bit `requantize` (on the Cortex-M4 about 14 instructions an output
where the narrow form takes 5 or 6).

Per output channel, the accumulator lies in [lo, hi]: the bias plus, per weight, the lesser
(greater) of its products with the least and the greatest input difference (x - x_offset,
the padding's 0 among them). The output level, `clamp(requantize(acc, M, shift) + y_offset)`
to the activation's bounds, never decreases as acc grows (M > 0), so where it is the same at
lo and at hi it is that level for every input. A dead channel (its products span less than
one output level, (hi - lo) M 2^(shift - 31) < 1) of one level whose bound can shrink gets
weights 0 and the accumulator b of least |b| with that level as its bias (0 where it gives
it, else found by bisection between 0 and the nearer of lo and hi): its outputs are the same
bits for every input (a fused pool, lookup table or activation after them sees the same
levels). A live channel whose sums only reach the clamp (a bias of 2^30 at an ordinary
scale) stays: kernels keep their general requantization for it. Only convolutions (a channel
is a row of the filter) of int8 input, filter and output, with a constant bias in
accumulator units and no fused residual; before kernel selection, so that the packed
filters, the folded input offsets and `fits_narrow_requantization` see the new numbers.
Visual wake words' 13 pointwise and depthwise layers with such channels then all take the
narrow requantization (M4: 12,161,195 -> 11,682,191 estimated cycles).

A kernel that reads the per-channel requantization table (the Arm DSP kernels) then gives each
such channel the neutral requantization (`neutral_requantization`): its shift of up to 31 kept
the output offset out of every channel's rounding term of its layer (`table_rights_fold`), an
add an output (visual wake words: M4 11,304,886 -> 11,262,612, M7 6,862,034 -> 6,816,948).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from glowmlir.dialects import glow, glowll
from glowmlir.dialects.quant import UniformQuantizedType
from glowmlir.dialects.weights import array_from_dense
from glowmlir.quantization.params import requantize
from glowmlir.quantization.rescaling import activation_bounds, centred_rows, output_multipliers
from glowmlir.transforms.int8_kernel_selection import accumulator_bias
from glowmlir.transforms.select_kernels import erase_if_unused, insert_weight

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def channel_levels(acc: np.ndarray, multipliers: np.ndarray, shifts: np.ndarray, offset: int,
                   bounds: tuple[int, int]) -> np.ndarray:
    """Each channel's output level of its accumulator `acc` (int64, one a channel)."""
    return np.clip(requantize(acc, multipliers, shifts).astype(np.int64) + offset, *bounds)


def least_biases(levels: np.ndarray, reached: np.ndarray, multipliers: np.ndarray, shifts: np.ndarray, offset: int,
                 bounds: tuple[int, int]) -> np.ndarray:
    """Per channel, the accumulator b of least |b| whose level is `levels`, given one (`reached`)
    that has it: 0 where it gives it, else the nearest to 0 on reached's side (the level is
    monotonic: bisection)."""
    near, far = np.zeros_like(reached), reached.copy()  # level(near) != level, level(far) == level
    done = channel_levels(near, multipliers, shifts, offset, bounds) == levels
    for _ in range(34):
        middle = near + (far - near) // 2
        hit = channel_levels(middle, multipliers, shifts, offset, bounds) == levels
        far, near = np.where(hit, middle, far), np.where(hit, near, middle)
    return np.where(done, 0, far)


def constant_channels(op: glowll.ConvolutionOp) -> tuple[np.ndarray, np.ndarray] | None:
    """(the channels whose level is one constant and that have a weight, their least biases),
    or None when the convolution is not one the pass takes or has no such channel."""
    input_type, output_type = op.input.type.element_type, op.dest.type.element_type
    weight = op.filter.owner
    if (getattr(op, "residual", None) is not None or not isinstance(weight, glowll.WeightOp) or weight.value is None
            or not all(isinstance(t, UniformQuantizedType) and t.bitwidth == 8
                       for t in (input_type, output_type, op.filter.type.element_type))
            or not isinstance(op.bias.type.element_type, UniformQuantizedType)):
        return None
    bias = accumulator_bias(op)
    if bias is None:
        return None
    filter_type = op.filter.type.element_type
    out_type = glow.convolved_element(op)
    centred = centred_rows(array_from_dense(weight.value), filter_type)
    biases = array_from_dense(bias.value).astype(np.int64).reshape(-1)
    low_input, high_input = (level - input_type.offset for level in input_type.value_range)
    lo = biases + np.minimum(centred * low_input, centred * high_input).sum(axis=1)
    hi = biases + np.maximum(centred * low_input, centred * high_input).sum(axis=1)
    if lo.min() < INT32_MIN or hi.max() > INT32_MAX:
        return None
    multipliers, shifts = (np.broadcast_to(np.asarray(a, np.int64).reshape(-1), lo.shape)
                           for a in output_multipliers(input_type, filter_type, out_type))
    bounds = activation_bounds(op, out_type)
    levels = channel_levels(lo, multipliers, shifts, out_type.offset, bounds)
    # dead: the products span less than one output level (a live channel's clamp stays as it is)
    span = (hi - lo).astype(np.float64) * multipliers * np.exp2(shifts.astype(np.float64) - 31)
    constant = (levels == channel_levels(hi, multipliers, shifts, out_type.offset, bounds)) & (span < 1)
    least = least_biases(levels, np.where(np.abs(lo) < np.abs(hi), lo, hi), multipliers, shifts, out_type.offset,
                         bounds)
    folded = constant & (np.abs(least) < np.maximum(np.abs(lo), np.abs(hi)))  # a smaller bound
    if not folded.any():
        return None
    return np.nonzero(folded)[0], least[folded]


class FoldConstantChannelsPattern(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.ConvolutionOp, rewriter: PatternRewriter) -> None:
        if getattr(op, "microkernel", None) is not None:
            return
        found = constant_channels(op)
        if found is None:
            return
        channels, least = found
        weight, bias = op.filter.owner, op.bias.owner
        levels = array_from_dense(weight.value)
        zero_points = levels - centred_rows(levels, op.filter.type.element_type).reshape(levels.shape)
        levels = levels.copy()
        levels[channels] = zero_points[channels]  # weights of 0
        biases = array_from_dense(bias.value).copy()
        biases.reshape(-1)[channels] = least
        op.operands[2] = insert_weight(weight.name_.data, levels, op, rewriter, op.filter.type.element_type)
        op.operands[3] = insert_weight(bias.name_.data, biases, op, rewriter, op.bias.type.element_type)
        erase_if_unused(weight, rewriter)
        erase_if_unused(bias, rewriter)


@dataclass(frozen=True)
class FoldConstantChannels(ModulePass):
    """Gives each int8 convolution's constant output channels zero weights and their least bias
    (see the module doc)."""

    name = "glowll-fold-constant-channels"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(GreedyRewritePatternApplier([FoldConstantChannelsPattern()]),
                             apply_recursively=False).rewrite_module(op)


NEUTRAL_MULTIPLIER = 1 << 30
"""The requantization a channel of zero weights is given (`neutral_requantization`): one half,
no shift, so that the level of an even accumulator 2k is k plus the output offset."""


def neutral_requantization(op: glowll.ConvolutionOp, rewriter: PatternRewriter) -> None:
    """Each output channel of zero weights (a dead one, `FoldConstantChannelsPattern`) given
    the requantization (`NEUTRAL_MULTIPLIER`, shift 0) in the convolution's per-channel table
    and the bias 2 (L - y_offset) that gives its level L there: its accumulator is its bias
    for every input, so its outputs stay the same bits. A dead channel keeps its filter scale
    of about 1e-8 and so a right shift of up to 31, beyond the 22 at which an output offset
    of -128 joins each channel's rounding term in int32 (`quantized_kernels.table_rights_fold`):
    one such channel cost every output of its layer an add. Only for a kernel that reads the
    table (a library deriving the requantization from the types would not see it)."""
    table, bias = op.requantization, accumulator_bias(op)
    weight = op.filter.owner
    if (table is None or not isinstance(table.owner, glowll.WeightOp) or table.owner.value is None or bias is None
            or not isinstance(weight, glowll.WeightOp) or weight.value is None):
        return
    filter_type, out_type = op.filter.type.element_type, glow.convolved_element(op)
    if not isinstance(filter_type, UniformQuantizedType) or not isinstance(out_type, UniformQuantizedType):
        return
    centred = centred_rows(array_from_dense(weight.value), filter_type)
    multipliers, shifts = array_from_dense(table.owner.value).astype(np.int64)
    dead = ~centred.any(axis=1) & ((multipliers != NEUTRAL_MULTIPLIER) | (shifts != 0))
    if not dead.any():
        return
    biases = array_from_dense(bias.value).astype(np.int64).reshape(-1)
    bounds = activation_bounds(op, out_type)
    levels = channel_levels(biases[dead], multipliers[dead], shifts[dead], out_type.offset, bounds)
    neutral = 2 * (levels - out_type.offset)
    assert (channel_levels(neutral, NEUTRAL_MULTIPLIER, 0, out_type.offset, bounds) == levels).all()
    multipliers[dead], shifts[dead] = NEUTRAL_MULTIPLIER, 0
    new_biases = array_from_dense(bias.value).copy()
    new_biases.reshape(-1)[dead] = neutral
    op.operands[3] = insert_weight(bias.name_.data, new_biases, op, rewriter, op.bias.type.element_type)
    old_table = table.owner
    op.operands[list(op.operands).index(table)] = insert_weight(
        old_table.name_.data, np.stack([multipliers, shifts]).astype(np.int32), op, rewriter)
    erase_if_unused(bias, rewriter)
    erase_if_unused(old_table, rewriter)
