"""The compile-time integer constants of quantized kernels, derived from their types.

One place computes every multiplier, shift and clamp bound a quantized op needs, from the
scales and offsets of its operand types, the way TFLite prepares its int8 kernels. Our
generated kernels use them, and so will library calls (CMSIS-NN takes exactly these
arguments), so both compute the same bits.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from glowmlir.dialects.glow import convolved_element
from glowmlir.dialects.glowll import input_element
from glowmlir.lowering.activations import activation_of, clamp_interval
from glowmlir.quantization.params import QuantParams, multiplier_shift_arrays, quantize, quantize_multiplier

if TYPE_CHECKING:
    from xdsl.ir import SSAValue

    Number = int | SSAValue

ADD_LEFT_SHIFT = 20
"""TFLite's int8 Add shifts both inputs left by 20 bits before rescaling them."""
ADD_LEFT_SHIFT_INT16 = 15
"""...and its int16 Add (the 16x8 scheme, CMSIS-NN's `arm_elementwise_add_s16`) by 15: an
int16 level shifted by 20 would leave int32."""


def add_left_shift(*types) -> int:
    """The left shift of an Add/Sub of these operand and result types: 15 when one of them
    is 16-bit, else 20."""
    return ADD_LEFT_SHIFT_INT16 if any(t.bitwidth == 16 for t in types) else ADD_LEFT_SHIFT


def multiplier_and_shift(real: float) -> tuple[int, int]:
    """`real` as a 31-bit fixed-point multiplier and a power-of-two shift (TFLite's QuantizeMultiplier)."""
    return quantize_multiplier(float(real))


def bias_scales(input_type, weight_type) -> np.ndarray:
    """input scale x weight scale (per channel) in float32: the scale of an int32 bias, a
    float32 tensor parameter as in TFLite and Glow."""
    return (np.float32(input_type.scale) * weight_type.scale_array()).astype(np.float32)


def output_multipliers(input_type, weight_type, output_type) -> tuple[np.ndarray, np.ndarray]:
    """Convolution/FullyConnected: (multipliers, shifts) of `input x weight / output` scale,
    one per channel of a per-channel weight type, else a single one; computed in double as
    TFLite's GetQuantizedConvolutionMultipler does."""
    return multiplier_shift_arrays(input_type.scale * weight_type.scale_array().astype(np.float64) / output_type.scale)


def mul_multiplier(first, second, output) -> tuple[int, int]:
    """Mul: `first x second / output` scale, in double (TFLite)."""
    return multiplier_and_shift(first.scale * second.scale / output.scale)


def sign_multipliers(input_type, output_type, negative_scale: float) -> tuple[tuple[int, int], tuple[int, int]]:
    """LeakyRelu and PRelu (TFLite's int8 kernels): the (multiplier, shift) of `x >= 0`,
    `input / output` scale, and of `x < 0`, `input x negative_scale / output` (a LeakyRelu's
    alpha; a PRelu's slope scale, the slope level multiplying x's), in double."""
    return (multiplier_and_shift(input_type.scale / output_type.scale),
            multiplier_and_shift(input_type.scale * negative_scale / output_type.scale))


RESAMPLE_FRACTION_BITS = 14
"""An int8 resample's weights are Q1.14 integers in int16 (1.0 is 2^14): a weighted sum of
taps, even of int16 ones (`FINER_LEVEL_BITS`), stays within int32."""
FINER_LEVEL_BITS = 8
"""An int8 value widened exactly to int16 keeps 8 more fractional bits (1/256 of its scale).
A bilinear Resize's axes before its last do so, so that the resize rounds to int8 once, as
TFLite's int8 bilinear does; so does an average pool whose profiled output is finer than its
input, so that the average rounds once, at its own scale."""


DIVISION_BITS = 15
"""Int8 Div's multiplier `M` has at most 15 bits, so that `(x - x_offset) * M` and the
divisor `(y - y_offset) << E` stay within 32 bits (one SDIV/UDIV, no 64-bit division)."""
DIVISION_MAX_EXPONENT = 22
"""`|y - y_offset| << E` fits 31 bits for E <= 22 (255 x 2^23 < 2^31 keeps the rounding's 2 x)."""


def division_multiplier(first, second, output) -> tuple[int, int]:
    """Int8 Div x / y: `(M, E)` with `first / (second x output)` scale ~ M / 2^E, M < 2^15 + 1,
    0 <= E <= 22. A larger ratio saturates every non-zero quotient anyway (M = 2^15 - 1, E = 0:
    1/255 of it is still beyond 127 levels); a smaller one keeps fewer bits of M, an error
    below 2^-15 levels."""
    real = first.scale / (second.scale * output.scale)
    if real >= 2 ** DIVISION_BITS:
        return 2 ** DIVISION_BITS - 1, 0
    exponent = min(DIVISION_MAX_EXPONENT, max(0, DIVISION_BITS - 1 - int(np.floor(np.log2(real)))))
    return min(int(np.rint(real * 2.0 ** exponent)), 2 ** DIVISION_BITS), exponent


def divide_levels(x, y, first, second, output) -> np.ndarray:
    """The int8 Div kernel's arithmetic in numpy (its reference): a = x - x_offset,
    d = y - y_offset, quotient = a x M / (d << E) rounded half away from zero in 32-bit
    integers, plus the output offset, clamped to int8. A zero divisor gives the saturated
    sign of `a` (0 / 0 gives 0)."""
    multiplier, exponent = division_multiplier(first, second, output)
    a = np.asarray(x).astype(np.int64) - first.offset
    d = np.asarray(y).astype(np.int64) - second.offset
    numerator = a * multiplier
    denominator = np.where(d == 0, 1, np.abs(d) << exponent)
    quotient = (2 * np.abs(numerator) + denominator) // (2 * denominator)
    signed = np.where((numerator < 0) != (d < 0), -quotient, quotient)
    low, high = output.value_range
    return np.clip(signed + output.offset, low, high).astype(np.int8)


def bias_multiplier(input_type, weight_type, bias_type) -> tuple[int, int] | None:
    """None when the bias is stored in accumulator units (scale = input x weight scale, as
    with an Int32 bias); else the (multiplier, shift) that brings it there."""
    products = bias_scales(input_type, weight_type)
    if bias_type.per_channel or weight_type.per_channel:
        if not bias_type.per_channel or not np.array_equal(bias_type.scale_array(), products):
            raise ValueError("with per-channel weights, the bias must have one scale per channel: "
                             "input scale x weight scale")
        return None
    if bias_type.scale == float(products[0]) and bias_type.offset == 0:
        return None
    return multiplier_and_shift(bias_type.scale / float(products[0]))


def add_multipliers(first, second, output) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
    """TFLite's int8 and int16 Add: each input is rescaled to twice the larger input scale
    (after the left shift, `add_left_shift`), the sum to the output scale."""
    twice_max = 2.0 * max(first.scale, second.scale)
    left_shift = add_left_shift(first, second, output)
    return (multiplier_and_shift(first.scale / twice_max), multiplier_and_shift(second.scale / twice_max),
            multiplier_and_shift(twice_max / ((1 << left_shift) * output.scale)))


def quantize_level(real: float, element_type) -> int:
    """The level of a real value in a per-tensor type (Glow's quantize: round half to even, clamp)."""
    low, high = element_type.value_range
    level = quantize(np.float32(real), QuantParams(element_type.scale, element_type.offset), "Int32")
    return int(np.clip(level, low, high))


def activation_bounds(op, output_type) -> tuple[int, int]:
    """The clamp range of a quantized result: the type's range, narrowed by the op's
    relu/clip (its `kind`, or its fused `activation`) to the levels of [0, inf) or [min, max]."""
    low, high = output_type.value_range
    real_low, real_high = clamp_interval(op, activation_of(op))
    if real_low is not None:
        low = max(low, quantize_level(real_low, output_type))
    if real_high is not None:
        high = min(high, quantize_level(real_high, output_type))
    return low, high


SOFTMAX_INPUT_INTEGER_BITS = 5
"""TFLite's int8 softmax feeds exp with the input's distance to the row maximum in Q5.26."""


SOFTMAX_OUTPUTS = {"Int8": (1.0 / 256.0, -128), "Int16": (1.0 / 32768.0, 0)}
"""The (scale, offset) of a quantized SoftMax's result (TFLite's rule for int8, and for int16
in its 16x8 scheme): probabilities in [0, 1) on the whole level range."""


def softmax_fraction_bits(output_type) -> int:
    """The fractional bits of a SoftMax's result levels: 8 (int8) or 15 (int16)."""
    return int(round(-np.log2(output_type.scale)))


def softmax_parameters(input_type, beta: float = 1.0) -> tuple[int, int, int]:
    """(multiplier, shift, diff_min) of TFLite's int8 softmax (arm_softmax_s8's arguments):
    distances below diff_min have exp too small to count."""
    total_bits = 31 - SOFTMAX_INPUT_INTEGER_BITS
    real = min(beta * input_type.scale * (1 << total_bits), (1 << 31) - 1.0)
    multiplier, shift = multiplier_and_shift(real)
    radius = ((1 << SOFTMAX_INPUT_INTEGER_BITS) - 1) * (1 << total_bits) / (1 << shift)
    return multiplier, shift, -int(np.floor(radius))


def accumulator_bounds(input_type, centred_weights: np.ndarray, bias_levels: np.ndarray) -> np.ndarray:
    """The largest |accumulator| each output (row of `centred_weights`, the weight levels less
    their zero point) can reach: |bias| + max |x - x_offset| x sum |w - w_offset|."""
    return np.abs(bias_levels.astype(np.int64)) + largest_difference(input_type) * \
        np.abs(centred_weights.astype(np.int64)).sum(axis=1)


def largest_difference(element) -> int:
    """max |x - offset| over the levels of a quantized type `element`."""
    low, high = element.value_range
    return max(high - element.offset, element.offset - low)


WIDE_ACCUMULATOR_LIMIT = 1 << 47
"""An int64 accumulator below this in magnitude keeps `requantize_wide`'s product with a Q15
multiplier (at most 2^15) within int64, with room to spare."""


def wide_bias_limits(input_type, centred_weights: np.ndarray) -> np.ndarray:
    """Per output (row of `centred_weights`): the largest |bias| (in accumulator units) whose
    accumulator stays below `WIDE_ACCUMULATOR_LIMIT` whatever the input."""
    sums = accumulator_bounds(input_type, centred_weights, np.zeros(len(centred_weights), np.int64))
    return WIDE_ACCUMULATOR_LIMIT - 1 - sums


def needs_wide_accumulators(input_type, centred_weights: np.ndarray, bias_levels: np.ndarray) -> bool:
    """Whether a Convolution/FullyConnected of int16 data must accumulate in int64: some
    accumulator could leave int32 (`accumulator_bounds`; `bias_levels` in accumulator units).
    CMSIS-NN's s16 kernels decide by the number of taps (int64 from 512 on); the bound from
    the layer's own weights keeps int32 wherever it is provably safe."""
    return input_type.bitwidth > 8 and int(accumulator_bounds(input_type, centred_weights, bias_levels).max(
        initial=0)) > (1 << 31) - 1


OFFSET_SHIFTS = 21
"""`requantize_narrow` adds an offset inside its rounding division by 2^right for a right
shift of at most this: |high| < 2^30 and |offset| <= 2^8, so the sum stays in int32."""


def offset_folds(right: int, offset: int) -> bool:
    """Whether an offset joins the rounding term of a division by 2^right (`OFFSET_SHIFTS`)."""
    return right <= OFFSET_SHIFTS and abs(offset) <= 256


def reduced_multiplier(multiplier: int) -> int:
    """CMSIS-NN's `REDUCE_MULTIPLIER`: a Q31 multiplier rounded to Q15, for a requantization of
    int64 accumulators (`requantize_wide`) that stays within 64 bits."""
    return (multiplier + (1 << 15)) >> 16 if multiplier < 0x7FFF0000 else 0x7FFF


def weight_zero_point(weight_type) -> int:
    """The zero point the int8 kernels subtract from weights: a per-tensor type's offset, 0 for
    per-channel weights (which must be symmetric)."""
    if weight_type.per_channel:
        if weight_type.offset_array().any():
            raise NotImplementedError("per-channel weights must be symmetric")
        return 0
    return weight_type.offset


class RecordWords:
    """A dataclass of int fields that a kernel reads as i32 words of a record, in field order."""

    def record(self) -> np.ndarray:
        """The fields as the i32 words of a record, in field order."""
        return np.array(dataclasses.astuple(self), dtype=np.int32)


def centred_rows(levels: np.ndarray, weight_type, output_axis: int = 0) -> np.ndarray:
    """A filter's levels less their zero point (`weight_zero_point`), int64, a row per output
    channel: [O, the rest] (`output_axis`: where the output channels are, 1 in a glow
    FullyConnected's [inputs, outputs])."""
    rows = np.moveaxis(np.asarray(levels).astype(np.int64), output_axis, 0)
    return rows.reshape(len(rows), -1) - weight_zero_point(weight_type)


SIGNED_NUMBERS = ("shift", "bias_shift")
"""The `KernelParameters` whose sign a kernel reading them from a record keeps in its code."""


@dataclass(frozen=True)
class KernelParameters(RecordWords):
    """The per-layer numbers of an int8 Convolution or FullyConnected kernel, each an int known
    at compile time or, in a kernel that reads them from its layer's record (`record`, see
    `glowll-quantization-records`), an SSA value of the kernel.

    `low_above_minimum` and `high_below_maximum` are the clamp bounds as distances from the
    output storage type's range; `multiplier`/`shift` are the output requantization of a
    per-tensor filter (0 with a per-channel one, whose `requantization` table has them);
    `bias_multiplier`/`bias_shift` bring a bias not stored in accumulator units there (0: it
    is). A kernel reading a record keeps every 0 as a constant (the code it leaves out stays
    out), which is why the bounds are stored as distances: the common unclamped or zero-based
    bound is 0.
    """

    input_offset: Number
    weight_offset: Number
    output_offset: Number
    low_above_minimum: Number
    high_below_maximum: Number
    multiplier: Number
    shift: Number
    bias_offset: Number
    bias_multiplier: Number
    bias_shift: Number

    @staticmethod
    def of(op) -> KernelParameters:
        """The numbers of a quantized `glowll.convolution` or `glowll.fully_connected`, from its
        types (the output's: a convolution's own levels, before a widening pool's,
        `glow.convolved_element`)."""
        input_type, weight_type = input_element(op), op.operands[2].type.element_type
        output_type, bias_type = convolved_element(op), op.bias.type.element_type
        minimum, maximum = output_type.value_range
        low, high = activation_bounds(op, output_type)
        multiplier, shift = 0, 0
        if not weight_type.per_channel:
            (multiplier,), (shift,) = output_multipliers(input_type, weight_type, output_type)
        bias_rescaling = bias_multiplier(input_type, weight_type, bias_type) or (0, 0)
        return KernelParameters(input_type.offset, weight_zero_point(weight_type), output_type.offset,
                                low - minimum, maximum - high, int(multiplier), int(shift),
                                0 if bias_type.per_channel else bias_type.offset, *bias_rescaling)

    def clamped_at_offset(self, minimum: int) -> bool:
        """Whether (compile-time numbers) the lower clamp bound is at or above the output zero
        point, as a fused relu's is: an output's rounding need not see its sign."""
        return minimum + self.low_above_minimum >= self.output_offset

    def code_pattern(self) -> tuple[int, ...]:
        """What of these numbers the code of a kernel reading them from a record depends on
        (`quantized_kernels.kernel_parameters`): which are 0 (those stay constants) and the
        signs of the `SIGNED_NUMBERS` (a right shift's code has no left shift): per field,
        its sign for those, else 1 for a nonzero number and 0 for 0."""
        return tuple(int(np.sign(value)) if field in SIGNED_NUMBERS else int(value != 0)
                     for field, value in dataclasses.asdict(self).items())

