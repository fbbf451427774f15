"""What the int8 kernel selections of every backend share: which layers are int8, a filter's
levels less their zero point (`centred_type`), the input zero point folded into the bias
(`fold_input_offset`, `folded_input_offset`), the narrow requantization a bounded
accumulator allows (`mark_narrow_requantization`), the float output step it may allow
(`mark_float_step`) and the int8 Add, Sub and Mul onto a
vector kernel (`SelectInt8Elementwise`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, UnitAttr, i8, i16, i32, i64
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from glowmlir.dialects import glow, glowll
from glowmlir.dialects.glowll import MicrokernelAttr
from glowmlir.dialects.quant import UniformQuantizedType, is_quantized, storage_type, stored_as
from glowmlir.dialects.weights import array_from_dense
from glowmlir.quantization.float_steps import FloatStep, float_step
from glowmlir.quantization.rescaling import KernelParameters, accumulator_bounds, bias_multiplier, output_multipliers
from glowmlir.transforms.select_kernels import erase_if_unused, insert_weight

FOLDED_BIAS_SUFFIX = "_adjusted"
"""The name of a folded bias is its bias's with this suffix (the first selection pass to fold
one named it so; kept, as the weights are laid out by name)."""


def int8_buffers(*buffers) -> bool:
    """Every buffer's elements are int8 levels (a quantized type stored as i8)."""
    return all(storage_type(v.type.element_type) == i8 for v in buffers)


@dataclass
class SelectInt8Elementwise(RewritePattern):
    """An int8 elementwise op of one of `kinds` (operands of one shape or broadcast) that no
    kernel took yet onto `microkernel` (`lowering.vector_elementwise`'s, by its name on the
    target)."""

    microkernel: str
    kinds: tuple[str, ...]

    def takes(self, op: glowll.ElementwiseOp) -> bool:
        """Whether the op is one this pattern selects: no kernel yet, one of `kinds`, int8."""
        return (op.microkernel is None and op.kind.data in self.kinds
                and all(is_quantized(v.type) for v in op.operands) and int8_buffers(*op.operands))

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.ElementwiseOp, rewriter: PatternRewriter) -> None:
        if self.takes(op):
            op.properties["microkernel"] = MicrokernelAttr(self.microkernel)
            rewriter.notify_op_modified(op)


def int8_layer(op: glowll.ConvolutionOp | glowll.FullyConnectedOp) -> bool:
    """Int8 input, weights and outputs (a convolution's own, before a widening pool:
    `glow.convolved_element`)."""
    return int8_buffers(op.input, op.operands[2]) and storage_type(glow.convolved_element(op)) == i8


def centred_type(filter_type: UniformQuantizedType) -> UniformQuantizedType:
    """The type of a filter's levels less their zero point as int16: the same reals with
    offset 0 (per tensor or per channel)."""
    return stored_as(filter_type, i16, centred=True)


def mark_narrow_requantization(op: glowll.ConvolutionOp | glowll.FullyConnectedOp, centred: np.ndarray) -> None:
    """`narrow_requantization` where `fits_narrow_requantization`: requantization is then one
    rounding high multiply (SMMULR)."""
    if fits_narrow_requantization(op, centred):
        op.properties["narrow_requantization"] = UnitAttr()


def fits_narrow_requantization(op: glowll.ConvolutionOp | glowll.FullyConnectedOp, centred: np.ndarray) -> bool:
    """Whether no accumulator, shifted left by its requantization shift plus one, can leave
    int32: |bias| + max |x - x_offset| * sum |w - w_offset| is bounded at compile time (the
    filter's scales: a packed filter's are the int8 one's)."""
    bias, input_type = accumulator_bias(op), op.input.type.element_type
    if bias is None:
        return False
    bound = accumulator_bounds(input_type, centred, array_from_dense(bias.value))
    _, shifts = output_multipliers(input_type, op.operands[2].type.element_type, glow.convolved_element(op))
    left = max(int(np.max(shifts)), 0)
    return int(bound.max(initial=0)) << (left + 1) < 2**31


def mark_float_step(op: glowll.ConvolutionOp, centred: np.ndarray, fused: bool = False) -> None:
    """`float_step = array<f32: scale, offset, negative_offset>` where `layer_float_step`
    finds one: for a selection whose kernel computes its output step on float lanes
    (`lowering.requantization.LaneRequantization`); on a target with fused multiply-adds
    (`fused`) the fused form first (`FloatStep.fused`, a fourth number 1: one `vfmadd` for the
    multiply and the add), else the unfused one."""
    step = (fused and layer_float_step(op, centred, fused=True)) or layer_float_step(op, centred)
    if step is not None:
        op.properties["float_step"] = step.attribute()


def layer_float_step(op: glowll.ConvolutionOp, centred: np.ndarray, fused: bool = False) -> FloatStep | None:
    """TFLite's int8 output step of a per-tensor layer with compile-time numbers as a
    `FloatStep` (`quantization.float_steps.float_step`), proved on every accumulator in
    [-bound, bound], `bound` the largest |accumulator| (`accumulator_bounds`: the true one,
    whatever the kernel sums it as: the bias folded or not, doubled or not); None where the
    filter is per channel, the bias not a constant in accumulator units, the output not int8,
    the numbers a record's, or no float step is exact (a tiny multiplier, about 1e-3 or less)."""
    bias, input_type = accumulator_bias(op), op.input.type.element_type
    if (bias is None or op.operands[2].type.element_type.per_channel or getattr(op, "parameters", None) is not None
            or op.wide_accumulators is not None or storage_type(glow.convolved_element(op)) != i8):
        return None
    bound = int(accumulator_bounds(input_type, centred, array_from_dense(bias.value)).max(initial=0))
    numbers = KernelParameters.of(op)
    return float_step(numbers.multiplier, numbers.shift, numbers.output_offset, -bound, bound, fused)


def mark_channel_float_steps(op: glowll.ConvolutionOp, centred: np.ndarray, fused: bool,
                             rewriter: PatternRewriter) -> None:
    """A per-channel layer's float steps, channel by channel (`channel_float_steps`; fused
    for every channel where `fused` and each has one, else unfused), in place of its integer
    requantization table: its `requantization` operand a new weight [3, output channels] of
    their singles' bits (scales, offsets, negative offsets) and `float_step_table = 0` (or
    1: fused), the output step the kernel computes then on float lanes as a per-tensor
    layer's `float_step` (`lowering.requantization.LaneRequantization`)."""
    steps = (fused and channel_float_steps(op, centred, fused=True)) or channel_float_steps(op, centred)
    if not steps:
        return
    table = op.requantization.owner
    numbers = np.array([[getattr(step, row) for step in steps] for row in ("scale", "offset", "negative_offset")],
                       np.float32)
    at = list(op.operands).index(op.requantization)
    op.operands[at] = insert_weight(table.name_.data + "_float_steps", numbers.view(np.int32), op, rewriter, i32)
    op.properties["float_step_table"] = IntegerAttr(int(steps[0].fused), i64)
    erase_if_unused(table, rewriter)


def channel_float_steps(op: glowll.ConvolutionOp, centred: np.ndarray, fused: bool = False) -> list[FloatStep] | None:
    """Each output channel's TFLite int8 output step of a per-channel layer with compile-time
    numbers (its requantization table's multiplier and shift, the layer's output offset) as a
    `FloatStep` (`float_steps.float_step`), proved on every accumulator of that channel in
    [-bound, bound] (`accumulator_bounds` of the channel's `centred` levels and bias); None
    where the filter is per tensor, the bias not a constant in accumulator units, the table
    not a constant [2, channels], the output not int8, the numbers a record's, or some
    channel has no float step (a multiplier of about 1e-3 or less)."""
    bias, input_type, table = accumulator_bias(op), op.input.type.element_type, op.requantization
    if (bias is None or not op.operands[2].type.element_type.per_channel or table is None
            or not isinstance(table.owner, glowll.WeightOp) or table.owner.value is None
            or getattr(op, "parameters", None) is not None or op.wide_accumulators is not None
            or storage_type(glow.convolved_element(op)) != i8):
        return None
    numbers = array_from_dense(table.owner.value).astype(np.int64)
    if numbers.shape[0] != 2:
        return None
    bounds = accumulator_bounds(input_type, centred, array_from_dense(bias.value))
    offset = KernelParameters.of(op).output_offset
    steps = []
    for multiplier, shift, bound in zip(numbers[0], numbers[1], bounds, strict=True):
        step = float_step(int(multiplier), int(shift), offset, -int(bound), int(bound), fused)
        if step is None:
            return None
        steps.append(step)
    return steps


def fold_input_offset(op: glowll.ConvolutionOp | glowll.FullyConnectedOp, weight_sums: np.ndarray,
                      rewriter: PatternRewriter) -> None:
    """sum (x - x_offset) * w = sum x * w - x_offset * sum w: the second term, a constant per
    output, goes into a new bias (when the bias is stored in accumulator units), so the
    kernel multiplies the inputs as they are (`folded_input_offset`)."""
    folded = folded_bias(op, weight_sums)
    if folded is None:
        return
    bias = accumulator_bias(op)
    op.operands[3] = insert_weight(bias.name_.data + FOLDED_BIAS_SUFFIX, folded.astype(np.int32), op, rewriter,
                                   op.bias.type.element_type)
    op.properties["folded_input_offset"] = UnitAttr()
    erase_if_unused(bias, rewriter)


def folded_bias(op: glowll.ConvolutionOp | glowll.FullyConnectedOp, weight_sums: np.ndarray) -> np.ndarray | None:
    """bias - x_offset * sum w (int64), where the input zero point folds into the bias: a
    constant bias in accumulator units, int32 sums, the folded bias within int32."""
    bias = accumulator_bias(op)
    if bias is None or op.wide_accumulators is not None:  # int64 sums: int16 data, offset 0
        return None
    folded = array_from_dense(bias.value).astype(np.int64) - op.input.type.element_type.offset * weight_sums
    return folded if np.abs(folded).max(initial=0) < 2**31 else None


def accumulator_bias(op: glowll.ConvolutionOp | glowll.FullyConnectedOp) -> glowll.WeightOp | None:
    """The bias weight, when it is a constant stored in accumulator units (input scale x
    weight scale, no offset)."""
    bias = op.bias.owner
    if not isinstance(bias, glowll.WeightOp) or bias.value is None:
        return None
    rescaled = bias_multiplier(op.input.type.element_type, op.operands[2].type.element_type,
                               op.bias.type.element_type)
    return bias if rescaled is None else None
