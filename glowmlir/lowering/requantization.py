"""Requantization: an int32 accumulator to the output's scale, as CMSIS-NN's s8 functions do.

`requantize` is `arm_nn_requantize`: a rounding doubling high multiply by a 31-bit
multiplier M, then a rounding division by a power of two. `requantize` and
`divide_by_power_of_two` work on i32 values and on vectors of them (the VNNI and Helium
kernels' lanes).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, VectorType, f32, i32, i64
from xdsl.ir import Attribute, SSAValue

from glowmlir.dialects.llvm_casts import FPToSIOp
from glowmlir.lowering.fused_tables import looked_up
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View, is_zero
from glowmlir.lowering.loop_skeletons import ArithmeticDomain
from glowmlir.quantization.float_steps import FloatStep
from glowmlir.quantization.rescaling import KernelParameters, offset_folds, reduced_multiplier


def shift_split(b: KernelBuilder, shift: int | SSAValue) -> tuple[int | SSAValue, int | SSAValue]:
    """A requantization shift as (left shift, right shift), each max(+-shift, 0). A shift is
    far from int32's minimum: its negation does not wrap (`nsw`), so that LLVM drops the
    right shift's max where the shift is known to be 0 or less (`table_shift_sign`: one
    `RSB` a channel, not `RSB` and `BIC`)."""
    if isinstance(shift, int):
        return max(shift, 0), max(-shift, 0)
    return b.int_max(shift, 0), b.int_max(b.int_sub(0, shift, no_signed_wrap=True), 0)


SINGLE_ROUNDING: contextvars.ContextVar[bool] = contextvars.ContextVar("single_rounding", default=False)
"""Set while a kernel that rounds its requantizations once is emitted: `requantize` is then
`requantize_once` (and the narrow forms, which round twice, are not taken)."""
FULLY_CONNECTED_ROUNDS_ONCE: contextvars.ContextVar[bool] = contextvars.ContextVar("fully_connected_rounds_once",
                                                                                   default=False)
"""Set while a bundle compiled with `-tflite-rounding=single` is lowered: its int8
FullyConnected kernels round once (`SINGLE_ROUNDING`), as the ai-edge-litert wheel's
FULLY_CONNECTED does; its other int8 kernels round twice, as that wheel's do too. Only the
generic kernels are selected then (`CompileOptions.pipeline`)."""


def requantize_once(b: KernelBuilder, value: SSAValue, multiplier: int | SSAValue, shift: int | SSAValue) -> SSAValue:
    """TFLite's single-rounding `MultiplyByQuantizedMultiplier`: `(value * M + 2^(30 - shift))
    >> (31 - shift)` in 64 bits (rounded half up, once), on i32 values or vectors of them."""
    wide_type = VectorType(i64, value.type.get_shape()) if isinstance(value.type, VectorType) else i64
    wide = b.int_mul(b.sign_extend(value, wide_type), b.sign_extend(b.int_value(multiplier, value.type), wide_type))
    if isinstance(shift, int):
        total = 31 - shift
        rounded = b.shift_right(b.int_add(wide, b.int_value(1 << (total - 1), wide_type)),
                                b.int_value(total, wide_type))
    else:
        total = b.int_sub(b.integer(31, i64), b.sign_extend(shift, i64))
        if isinstance(value.type, VectorType):
            total = b.splat(total, wide_type)
        half = b.shift_left(b.int_value(1, wide_type), b.int_sub(total, b.int_value(1, wide_type)))
        rounded = b.shift_right(b.int_add(wide, half), total)
    return b.truncate(rounded, value.type)


def requantize(b: KernelBuilder, value: SSAValue, multiplier: int | SSAValue, shift: int | SSAValue) -> SSAValue:
    """CMSIS-NN's `arm_nn_requantize(value, multiplier, shift)` on i32 values (under
    `SINGLE_ROUNDING`, `requantize_once`).

    `divide_by_power_of_two(doubling_high_mul(value << max(shift, 0), multiplier), max(-shift, 0))`
    where the doubling high multiply is `(value * multiplier + 2^30) >> 31` in 64 bits.
    Compile-time multiplier/shift fold into constants. On a vector of i32 lanes (the VNNI
    kernel's), a run-time multiplier and shift are vectors too, lane by lane.
    """
    if SINGLE_ROUNDING.get():
        return requantize_once(b, value, multiplier, shift)
    left, right = shift_split(b, shift)
    if not (isinstance(left, int) and left == 0):
        value = b.shift_left(value, left)
    wide_type = VectorType(i64, value.type.get_shape()) if isinstance(value.type, VectorType) else i64
    wide = b.int_mul(b.sign_extend(value, wide_type), b.sign_extend(b.int_value(multiplier, value.type), wide_type))
    high = b.truncate(b.shift_right(b.int_add(wide, 1 << 30), 31), value.type)
    return divide_by_power_of_two(b, high, right)


def _lane_halves(b: KernelBuilder, vector: SSAValue) -> tuple[SSAValue, SSAValue]:
    """The even and the odd lanes of an i32 vector, each sign-extended in its i64 half (what
    `vpmuldq` multiplies). Both are sign-extended in place (`shl 32; ashr 32`), the odd lanes
    first moved onto the even ones by a shuffle: LLVM sees that form as `vpmuldq`'s operand
    on every x86 vector unit, where an i64 `ashr` by 32 (no `vpsraq` below AVX-512) became a
    64 x 64 multiply of three `vpmuludq`s (and a shift's form folds back to that `ashr`)."""
    lanes = vector.type.get_shape()[0]
    halves = VectorType(i64, [lanes // 2])
    odd_down = b.emit(llvm.ShuffleVectorOp(vector, vector, DenseArrayBase.from_list(
        i32, [lane | 1 for lane in range(lanes)]), vector.type))

    def sign_extended(pairs: SSAValue) -> SSAValue:
        return b.shift_right(b.shift_left(b.bitcast(pairs, halves), 32), 32)

    return sign_extended(vector), sign_extended(odd_down)


def requantize_in_halves(b: KernelBuilder, value: SSAValue, multiplier: int | SSAValue,
                         shift: int | SSAValue) -> SSAValue:
    """`requantize` on a vector of i32 lanes, in fewer vector instructions, the same numbers
    (a run-time `shift` is a vector, lane by lane). The doubling high multiply: the vector seen as i64
    halves, the even lanes' and the odd lanes' products by one 32x32->64 multiply each
    (`vpmuldq` reads each half's low lane, sign-extended), bits 31-62 of each rounded product
    brought into its half's low lane by one shift, and the two interleaved by one shuffle.
    The division by 2^right, halves away from zero, is `(y >> right) + ((y >> (right - 1)) & 1)`
    with y = high - 1 for a negative high (so a negative half rounds down; high > INT32_MIN as
    M < 2^31): no compare or select (with a run-time shift, one select keeps the lanes that
    shift right by 0)."""
    if SINGLE_ROUNDING.get():
        return requantize_once(b, value, multiplier, shift)
    left, right = shift_split(b, shift)
    if not is_zero(left):
        value = b.shift_left(value, left)
    lanes = value.type.get_shape()[0]
    halves = VectorType(i64, [lanes // 2])
    rounding = b.int_value(1 << 30, halves)
    factors = _lane_halves(b, b.int_value(multiplier, value.type) if isinstance(multiplier, int) else multiplier)
    even, odd = (b.bitcast(b.shift_right_logical(b.int_add(b.int_mul(x, m), rounding), 31), value.type)
                 for x, m in zip(_lane_halves(b, value), factors))
    order = [lane + (lanes - 1) * (lane % 2) for lane in range(lanes)]  # 0, 16, 2, 18, ... for 16 lanes
    high = b.emit(llvm.ShuffleVectorOp(even, odd, DenseArrayBase.from_list(i32, order), value.type))
    if is_zero(right):
        return high
    rounded_down = b.int_add(high, b.shift_right(high, 31))
    if isinstance(right, int):
        return b.int_add(b.shift_right(rounded_down, right), b.int_and(b.shift_right(rounded_down, right - 1), 1))
    half_bit = b.int_and(b.shift_right(rounded_down, b.int_max(b.int_sub(right, 1), 0)), 1)
    divided = b.int_add(b.shift_right(rounded_down, right), half_bit)
    return b.select(b.int_compare("sgt", right, 0), divided, high)


def wrapped_double(multiplier: int) -> int | None:
    """`2 * multiplier - 2^32`, the int32 that `2 * multiplier` wraps to, for a multiplier in
    [2^30, 2^31) (a normalized one: `requantize_narrow`'s `doubled` form); else None."""
    return 2 * multiplier - 2**32 if 2**30 <= multiplier < 2**31 else None


def requantize_narrow(b: KernelBuilder, value: SSAValue, multiplier: int | SSAValue,
                      shift: int | SSAValue, offset: int | SSAValue = 0, wrapped: bool = False,
                      doubled: bool = False, rounding: SSAValue | None = None,
                      clamped_below_offset: bool = False, shift_folds: bool = False) -> SSAValue:
    """`requantize` plus `offset` for a value known to fit after `<< (max(shift, 0) + 1)` (see
    `narrow_requantization`): `(2 * (value << left) * M + 2^31) >> 32` is the doubling high
    multiply exactly (one SMMULR on Arm), and the rounding division by 2^right is
    `(high + 2^(right - 1) - (high < 0)) >> right` (|high| < 2^30: no overflow). As M > 0,
    `high < 0` only where value < 0, and where value < 0 but high = 0 both give 0 (right > 0):
    the sign is taken from `value`, so LLVM adds the rounding terms by the multiply's own
    accumulator (one SMMLAR) instead of multiplying twice (SMMULR for the sign, then SMMLAR).
    A constant offset (an output zero point) joins the rounding term as `offset << right`
    (`(a + offset * 2^right) >> right` is `(a >> right) + offset` exactly): one add fewer,
    and a clamp to the int8 range is then one SSAT of the shifted sum.

    `wrapped`: `multiplier` is `wrapped_double(M)`, 2M - 2^32. Then `(v * (2M - 2^32) + 2^31)
    >> 32` is the high part of `2v * M` less v, so v is added back instead of doubled first:
    LLVM adds v and its sign by the multiply's accumulator (`add r, v, v, asr #31` and one
    SMMLAR), one instruction fewer than the shift to 2v.

    `doubled`: `value` is already twice the accumulator (`doubled_accumulators`): it is
    multiplied as it is. `rounding`: the constant rounding terms (`rounding_terms`) as a
    value made once where the kernel starts (`KernelBuilder.opaque`), so that LLVM adds them
    and the sign in one `add r, k, v, asr #31` (with `doubled`: add, SMMLAR, SSAT).

    `clamped_below_offset` (a fused relu: the caller clamps levels below `offset` to it, or
    higher) drops the sign: where value < 0, high <= 0 (M > 0), so the rounded quotient is at
    most 0 and the level at most the offset with the sign or without it, and the clamp gives
    the same number. With `rounding` the step is then SMMLAR (the rounding terms as its
    accumulator), SSAT: one instruction fewer an output.

    `shift_folds`: a run-time shift (a per-channel table's) is known to be small enough that
    a constant offset joins the rounding term in int32 (`quantized_kernels.table_rights_fold`):
    the term made once a channel, `2^(right - 1) + offset * 2^right`, instead of the offset
    added to each output (the output step of a per-channel int8 layer SMMLAR, ASR, SSAT: one
    `SUB` fewer an output)."""
    assert not SINGLE_ROUNDING.get(), "the narrow forms round twice: single rounding takes the generic kernels"
    left, right = shift_split(b, shift)
    if wrapped or doubled:  # value << left, multiplied as it is
        multiplicand = value if isinstance(left, int) and left == 0 else b.shift_left(value, left)
    else:
        multiplicand = b.shift_left(value, b.int_add(left, 1) if isinstance(left, SSAValue) else left + 1)
    wide = b.int_mul(b.sign_extend(multiplicand, i64), b.sign_extend(b.int_value(multiplier), i64))
    high = b.truncate(b.shift_right(b.int_add(wide, 1 << 31), 32), i32)
    if wrapped:
        high = b.int_add(high, multiplicand)
    folded = rounding_terms(shift, offset) is not None or (
        shift_folds and isinstance(shift, SSAValue) and isinstance(offset, int))
    sign = None if clamped_below_offset else multiplicand
    if rounding is not None:
        assert folded, "rounding terms in a register need a constant shift and offset"
        terms = rounding if sign is None else b.int_add(b.shift_right(sign, 31), rounding)
        return b.shift_right(b.int_add(high, terms), right)
    divided = _divide_narrow(b, high, sign, right, offset if folded else 0)
    return divided if folded or is_zero(offset) else b.int_add(divided, offset)


def requantize_narrow_in_halves(b: KernelBuilder, value: SSAValue, multiplier: int | SSAValue,
                                shift: int | SSAValue, offset: int | SSAValue, clamped_below_offset: bool = False,
                                right_shift: bool | None = None, doubled: bool = False) -> SSAValue:
    """`requantize_narrow(value, multiplier, shift, offset)` on a vector of i32 lanes, for a
    shift of at most `OFFSET_SHIFTS` to the right and |offset| <= 256: the
    doubled value's even and odd lanes multiplied as `requantize_in_halves` does (one
    `vpmuldq` each), each 64-bit product plus 2^31 + 2^32 * (2^(right - 1) + offset * 2^right),
    so that its high half is the rounded high multiply with the division's rounding term
    and the offset already added; one shuffle takes the high halves, then the sign is added
    and the sum shifted: `_divide_narrow`'s numbers in 12 vector instructions, not 18.
    `clamped_below_offset` (a fused relu: levels below the offset are clamped to it) drops the
    sign: a negative value's high half is at most 0, so its level is at most the offset with
    or without it. The shift and the offset may be run-time scalars (a quantization
    record's, the same for every lane): the rounding term is then made once, and a run-time
    shift's direction is known at compile time (`right_shift`: the record's shift keeps its
    sign in the code, `quantized_kernels.kernel_parameters`). `doubled`: `value` is already
    twice the accumulator (`doubled_accumulators`), shifted left by the left shift alone."""
    assert not SINGLE_ROUNDING.get(), "the narrow forms round twice: single rounding takes the generic kernels"
    if isinstance(shift, int):
        left, right = shift_split(b, shift)
        assert isinstance(offset, SSAValue) or offset_folds(right, offset), "the sum stays in int32"
    else:
        assert right_shift is not None, "a run-time shift's direction is known"
        left, right = (0, b.int_sub(0, shift)) if right_shift else (shift, 0)
    lanes = value.type.get_shape()[0]
    by = b.int_add(left, int(not doubled)) if isinstance(left, SSAValue) else left + int(not doubled)
    twice = value if is_zero(by) else b.shift_left(value, b.splat(by, value.type) if isinstance(by, SSAValue) else by)
    halves = VectorType(i64, [lanes // 2])
    if isinstance(shift, int) and isinstance(offset, int):
        added = offset * (1 << right) + ((1 << (right - 1)) if right else 0)
        rounding = b.int_value((1 << 31) + added * (1 << 32), halves)
    else:  # 2^(right - 1) + offset * 2^right, from a run-time offset or shift, in i64
        wide_right = right if isinstance(right, int) else b.sign_extend(right, i64)
        added = b.shift_left(b.sign_extend(b.int_value(offset), i64), wide_right)
        if not is_zero(right):
            added = b.int_add(added, b.shift_left(b.integer(1, i64), b.int_sub(wide_right, 1)))
        rounding = b.splat(b.int_add(b.shift_left(added, 32), b.integer(1 << 31, i64)), halves)
    factors = _lane_halves(b, b.int_value(multiplier, value.type) if isinstance(multiplier, int) else
                           multiplier if isinstance(multiplier.type, VectorType) else b.splat(multiplier, value.type))
    even, odd = (b.bitcast(b.int_add(b.int_mul(x, m), rounding), value.type)
                 for x, m in zip(_lane_halves(b, twice), factors))
    order = [lane + 1 if lane % 2 == 0 else lanes + lane for lane in range(lanes)]  # the high halves: 1, 17, 3, 19, ...
    high = b.emit(llvm.ShuffleVectorOp(even, odd, DenseArrayBase.from_list(i32, order), value.type))
    if is_zero(right):
        return high
    shifted = right if isinstance(right, int) else b.splat(right, value.type)
    return b.shift_right(high if clamped_below_offset else b.int_add(high, b.shift_right(twice, 31)), shifted)


def requantize_bounded(b: KernelBuilder, value: SSAValue, bound: int, multiplier: int | SSAValue, shift: int,
                       offset: int = 0) -> SSAValue:
    """`requantize(value, multiplier, shift) + offset` of an i32 value, or a vector of them,
    known to satisfy |value| <= `bound`: where the bound keeps the doubled value in int32, by
    `requantize_narrow` (`requantize_narrow_in_halves` on vectors), else the general way."""
    narrow = is_narrow(bound, shift)
    if not isinstance(value.type, VectorType):
        if narrow:
            return requantize_narrow(b, value, multiplier, shift, offset)
        level = requantize(b, value, multiplier, shift)
    elif narrow and offset_folds(max(-shift, 0), offset):
        return requantize_narrow_in_halves(b, value, multiplier, shift, offset)
    else:
        level = requantize_in_halves(b, value, multiplier, shift)
    return level if offset == 0 else b.int_add(level, offset)


def is_narrow(bound: int, shift: int) -> bool:
    """Whether a value of |value| <= `bound` stays in int32 doubled after its left shift
    (`requantize_narrow` then computes `requantize` exactly); never under `SINGLE_ROUNDING`
    (the narrow form rounds twice)."""
    return bound << (max(shift, 0) + 1) < 2**31 and not SINGLE_ROUNDING.get()


def rounding_terms(shift: int | SSAValue, offset: int | SSAValue) -> int | None:
    """The constant `requantize_narrow` adds before its division by 2^right, `2^(right - 1) +
    offset * 2^right`, when the shift and the offset are constants it folds (else None)."""
    if not isinstance(shift, int) or not isinstance(offset, int):
        return None
    right = max(-shift, 0)
    return (1 << (right - 1)) + offset * (1 << right) if right > 0 and offset_folds(right, offset) else None


def channel_rounding_terms(shifts: np.ndarray, offset: int) -> np.ndarray:
    """Each channel's rounding term `_divide_narrow` adds before its division by 2^right
    (right = max(-shift, 0)), `((2 offset + 1) << right) >> 1`: `2^(right - 1) + offset * 2^right`
    for right > 0 (the half, and the offset inside the division), `offset` for right = 0 (the
    arithmetic shift's floor of offset + 1/2). The same int32 numbers as the kernel makes from a
    loaded shift (where `quantized_kernels.table_rights_fold` holds: no term leaves int32); with
    the offset inside, the rounding division of `requantize_narrow` is `floor((high + h) / 2^r)`
    (`requantize_floored` builds on it)."""
    rights = np.maximum(-shifts.astype(np.int64), 0)
    return ((2 * offset + 1) << rights) >> 1


UNIFORM_SHIFT = "uniform_shift"
"""The microkernel parameter of a convolution requantized at one right shift for every channel
(`arm_dsp.select_kernels.uniform_shift_table`): its table's second row that shift (negated), its
third each channel's terms for `requantize_floored`."""


ACCUMULATOR_SHIFTS = "accumulator_shifts"
"""The microkernel parameter (its value the right shift k) of a convolution requantized at one
right shift for every channel with its accumulators scaled at run time
(`arm_dsp.select_kernels.accumulator_shift_table`): its table's second row each channel's left
shift s = 1 + k - r, its third each channel's terms for `requantize_floored`."""


STORED_CHANNELS = "stored_channels"
"""The microkernel parameter of an `ACCUMULATOR_SHIFTS` convolution whose output channels the
kernel takes in an order of its own (`arm_dsp.select_kernels.dead_channel_order`): each
channel's table word of the second row holds its left shift in its low `LEFT_SHIFT_BITS` and,
above them, the channel of the output it is stored to."""

LEFT_SHIFT_BITS = 8


def requantize_floored(b: KernelBuilder, value: SSAValue, multiplier: int | SSAValue, right: int,
                       terms: SSAValue) -> SSAValue:
    """`(floor(value * M / 2^32) + terms) >> right`, one `SMMLA` and the clamp's `SSAT` with
    its `ASR #right`: a layer requantized at one right shift for every channel
    (`uniform_shift_table`), `value` twice the accumulator scaled by the channel's 2^(right - r).

    Why it equals `requantize_narrow` at the channel's own right shift r (the sums doubled, no
    sign: a relu, `clamped_below_offset`): that one is `floor((high + h) / 2^r)`, high =
    `floor((2a M + 2^31) / 2^32)`, h = `channel_rounding_terms` (2^(r - 1) + offset * 2^r; the
    offset at r = 0). As `floor((floor(y / m) + h) / n) = floor((y + h m) / (m n))` for integers
    (m, n > 0), it is `floor(S / 2^(32 + r))`, S = 2a M + 2^31 + h 2^32. With f = 2^(right - r)
    (right > r: f even), `S / 2^(32 + r) = f S / 2^(32 + right)` and `f S = 2(f a) M + 2^32 (f h +
    f / 2)`: an integer multiple of 2^32 beside the product, so the level is `floor((floor(2 (f a)
    M / 2^32) + terms) / 2^right)` with terms = f h + f / 2, the same rounding once. The filter
    and bias of the channel are scaled by f at compile time (the accumulator f a exactly), or
    (`ACCUMULATOR_SHIFTS`) the accumulator at run time, `a << (1 + right - r)`; the selection
    checks that 2 f |a| and |terms| + f |a| stay in int32."""
    wide = b.int_mul(b.sign_extend(value, i64), b.sign_extend(b.int_value(multiplier), i64))
    high = b.truncate(b.shift_right(wide, 32), i32)
    return b.shift_right(b.int_add(high, terms), right)


def _divide_narrow(b: KernelBuilder, high: SSAValue, doubled: SSAValue | None, right: int | SSAValue,
                   offset: int = 0) -> SSAValue:
    """`high / 2^right + offset`, the quotient rounded half away from zero, the sign taken from
    `doubled`; rounded half up when `doubled` is None (a level clamped below the offset,
    `requantize_narrow`'s `clamped_below_offset`). The offset is added inside the division,
    as `offset * 2^right` with its rounding term (`(a + offset * 2^right) >> right` is `(a >>
    right) + offset` exactly): the caller knows the sum stays in int32 (`offset_folds`)."""
    if isinstance(right, int):
        if right == 0:
            return b.int_add(high, offset) if offset else high
        terms = (1 << (right - 1)) + offset * (1 << right)
        if doubled is not None:
            terms = b.int_add(b.shift_right(doubled, 31), terms)
        return b.shift_right(b.int_add(high, terms), right)
    # 2^(right - 1) + offset * 2^right as ((2 * offset + 1) << right) >> 1 (offset at right 0),
    # made once a channel where the shift is loaded
    half = b.shift_right(b.shift_left(2 * offset + 1, right), 1)
    if doubled is None:
        return b.shift_right(b.int_add(high, half), right)
    negative = b.select(b.int_compare("sgt", right, 0), b.shift_right(doubled, 31), 0)
    return b.shift_right(b.int_add(b.int_add(high, half), negative), right)


def divide_by_power_of_two(b: KernelBuilder, value: SSAValue, exponent: int | SSAValue) -> SSAValue:
    """`arm_nn_divide_by_power_of_two`: value / 2^exponent rounded half away from zero (on
    i32 values or vectors of them; an `exponent` value has the type of `value`)."""
    if isinstance(exponent, int) and exponent == 0:
        return value
    mask = b.int_value((1 << exponent) - 1, value.type) if isinstance(exponent, int) else \
        b.int_sub(b.shift_left(1, exponent), 1)
    quotient = b.shift_right(value, exponent)
    remainder = b.int_and(value, mask)
    one, zero = b.int_value(1, value.type), b.int_value(0, value.type)
    threshold = b.int_add(b.shift_right(mask, 1), b.select(b.int_compare("slt", quotient, 0), one, zero))
    return b.int_add(quotient, b.select(b.int_compare("sgt", remainder, threshold), one, zero))


def requantize_wide(b: KernelBuilder, value: SSAValue, multiplier: int | SSAValue, shift: int | SSAValue) -> SSAValue:
    """CMSIS-NN's `arm_nn_requantize_s64` (TFLite's int64 `MultiplyByQuantizedMultiplier`) of an
    i64 accumulator (|value| < 2^47) to an i32: `((value * R) >> (14 - shift) + 1) >> 1` with
    R the Q15 `reduced_multiplier` of M, the product in 64 bits, the first shift's result
    saturated to [-2^31, 2^31 - 2] (CMSIS-NN truncates it to 32 bits: an int64 bias far beyond
    the output's range, `quantized_conversion._quantized_bias`, would wrap there; saturated, and short of
    the top so that the rounding's + 1 cannot wrap, it clamps as it should). A run-time
    multiplier and shift (a per-channel table) are reduced here; compile-time ones fold."""
    if isinstance(multiplier, int):
        reduced = b.integer(reduced_multiplier(multiplier), i64)
    else:
        rounded = b.shift_right(b.int_add(multiplier, 1 << 15), 16)
        reduced = b.sign_extend(b.select(b.int_compare("slt", multiplier, 0x7FFF0000), rounded, 0x7FFF), i64)
    right = 14 - shift if isinstance(shift, int) else b.sign_extend(b.int_sub(14, shift), i64)
    scaled = b.shift_right(b.int_mul(value, reduced), b.int_value(right, i64))
    scaled = b.truncate(b.clamp(scaled, -(1 << 31), (1 << 31) - 2), i32)
    return b.shift_right(b.int_add(scaled, 1), 1)


EXACT_FLOATS = llvm.FastMathAttr([])
"""No fast-math flag: a multiply and an add stay two IEEE operations (no fused multiply-add),
as `FloatStep.levels` computes them."""


NearestLevels = Callable[[KernelBuilder, SSAValue, VectorType], SSAValue]
"""`nearest_levels`' contract: singles rounded to nearest even and converted to int32 lanes."""


def nearest_levels(b: KernelBuilder, singles: SSAValue, levels_type) -> SSAValue:
    """A vector of singles rounded to nearest even (`llvm.rint`) and converted to the integer
    vector `levels_type` (exact where each is below 2^31; on x86 LLVM makes the two one
    `vcvtps2dq`): the last step of every proved float form."""
    lanes = singles.type.get_shape()[0]
    rounded = b.emit(llvm.CallIntrinsicOp(f"llvm.rint.v{lanes}f32", [singles], [singles.type]))
    return b.emit(FPToSIOp(rounded, levels_type))


def float_step_levels(b: KernelBuilder, value: SSAValue, step: FloatStep,
                      nearest: NearestLevels = nearest_levels) -> SSAValue:
    """TFLite's level of each i32 lane of `value` (before the int8 clamp: the caller saturates)
    by `step` (`quantization.float_steps`, proved equal at compile time): the lanes as
    singles, times the scale, plus the offset of their sign (a select on the lane's sign, one
    blend; none where the two are one, as under a relu: `LaneRequantization.negatives_clamped`)
    by a multiply and an add, or (`FloatStep.fused`) one fused multiply-add (`llvm.fma`),
    rounded to nearest even (`llvm.rint`) and converted back (on x86 LLVM makes the two one
    `vcvtps2dq`; `nearest`: another form of the two, a unit's own). Each |v * scale + offset|
    < 2^31 (scale < 1/2), so the conversion is exact."""
    lanes = value.type.get_shape()[0]
    singles = VectorType(f32, [lanes])

    def splat(number: float | SSAValue) -> SSAValue:  # a compile-time single, or a loaded one (`ChannelStep`)
        return b.splat(number if isinstance(number, SSAValue) else b.f32(number), singles)

    offset = splat(step.offset)
    if step.negative_offset != step.offset:  # one offset for both signs (a loaded one: the same value): no blend
        negative = b.int_compare("slt", value, b.int_value(0, value.type))
        offset = b.select(negative, splat(step.negative_offset), offset)
    if step.fused:  # one rounding: `vfmadd`
        return fused_step_levels(b, value, step.scale, offset, nearest)
    products = b.fmul(b.emit(llvm.SIToFPOp(value, singles)), splat(step.scale), EXACT_FLOATS)
    return nearest(b, b.fadd(products, offset, EXACT_FLOATS), value.type)


def fused_step_levels(b: KernelBuilder, value: SSAValue, scale: float, offset: SSAValue,
                      nearest: NearestLevels = nearest_levels) -> SSAValue:
    """The level of each i32 lane of `value` by a fused step, rint(fma(f32(v), scale,
    `offset`)) (`offset` a vector of singles: a `FloatStep.fused`'s offset of each lane's
    sign, or a `bias_in_step` layer's channel single, `float_steps.fused_bias_offsets`):
    a conversion, one `vfmadd` and a conversion back (x86 FMA; the caller saturates;
    `nearest`: as `float_step_levels` takes it)."""
    scales = b.splat(scale if isinstance(scale, SSAValue) else b.f32(scale), offset.type)
    return nearest(b, b.fma(b.emit(llvm.SIToFPOp(value, offset.type)), scales, offset), value.type)




@dataclass(frozen=True)
class ChannelStep:
    """One channel's float step of a per-channel layer (`float_step_table`): `loaded`, a
    `FloatStep` of the channel's singles loaded from the table (SSA values); `bounds`, one of
    compile-time numbers that bound every channel's for `LaneRequantization.negatives_clamped`
    (the smallest scale, the largest offset)."""

    loaded: FloatStep
    bounds: FloatStep


def channel_step(b: KernelBuilder, table: View, channel: Index, numbers: np.ndarray, fused: bool,
                 doubled: bool = False) -> ChannelStep:
    """Channel `channel`'s `ChannelStep` from a `float_step_table` layer's table (`table`, [3,
    channels] of singles' bits; `numbers`, its constant values as int32): three loads, the
    scale halved where the sums are twice the accumulator (`doubled`, exact as in
    `LaneRequantization.float_step`)."""
    scale, offset, negative = (b.bitcast(b.load(table, [row, channel]), f32) for row in range(3))
    if doubled:
        scale = b.fmul(scale, b.f32(0.5))
    singles = np.asarray(numbers, np.int32).view(np.float32)
    return ChannelStep(FloatStep(scale, offset, negative, fused),
                       FloatStep(float(singles[0].min()), float(singles[1].max()), float(singles[2].max()), fused))


class LaneRequantization:
    """The output step on vectors of int32 lanes, `clamp(requantize(total) + y_offset)` lane
    by lane (the generic kernel's arithmetic): `multiplier` and `shift` a vector each (a
    lane's own channel) or one number for every lane (compile-time, or a run-time value of a
    quantization record or of one channel's table entry)."""

    def __init__(self, b: KernelBuilder, domain: ArithmeticDomain, vector: VectorType, multiplier: int | SSAValue,
                 shift: int | SSAValue, fused_offset: SSAValue | None = None, nearest: NearestLevels = nearest_levels,
                 channel: ChannelStep | None = None):
        self.b, self.domain, self.vector = b, domain, vector
        self.nearest = nearest  # the float steps' rounding and conversion (a unit's own)
        self.fused_offset = fused_offset  # the channel's single of a `bias_in_step` layer: `fused_step_levels`
        self.channel = channel  # a `float_step_table` layer's step of the channel: `float_step_levels`
        self.multiplier, self.shift = b.lanewise(multiplier, self.vector), b.lanewise(shift, self.vector)
        self.layer_shift = shift  # a compile-time or record's shift for every lane: `narrow` may fold it

    def narrow(self) -> KernelParameters | None:
        """The layer's compile-time numbers, when its output step is `requantize_narrow_in_halves`'s:
        a narrow requantization by one shift for every lane (compile-time or its record's, whose
        value the code does not depend on but for its direction, nor on the offset's but for
        whether a relu clamps at it) whose offset folds into the rounding term (`offset_folds`);
        or by the channel's shift loaded from a constant per-channel table, every one of them a
        right shift of at least 1 whose rounding term takes a constant offset (`offset_folds`
        for the largest): the term made once a channel (`right_shift_table`)."""
        op = self.domain.op
        if getattr(op, "narrow_requantization", None) is None:
            return None
        if isinstance(self.layer_shift, SSAValue) and isinstance(self.layer_shift.type, VectorType):
            return None  # a shift for each lane (its channel's): no one number folds into the rounding
        numbers = KernelParameters.of(op)
        if isinstance(self.layer_shift, SSAValue) and self.domain.requantization.table is not None:
            return numbers if self.right_shift_table(numbers.output_offset) else None
        shift = self.layer_shift if isinstance(self.layer_shift, int) else numbers.shift
        return numbers if offset_folds(max(-shift, 0), numbers.output_offset) else None

    def right_shift_table(self, offset: int | SSAValue) -> bool:
        """Whether the layer's shifts are a constant table's (`ChannelRequantization.numbers`),
        every one a right shift of at least 1 (no left shift, and the division's rounding term
        2^(right - 1) exists) of at most `OFFSET_SHIFTS` with a constant `offset`
        (`offset_folds`): a per-channel layer's, whose output step then takes the narrow form
        as a per-tensor one's does, not `requantize_in_halves` with its run-time shifts (the
        PP-OCR-cls-style 5x5 depthwise of 200 channels on 2x96, per channel, on AVX2: 23.1 ->
        17.4 µs; the MLPerf image classification net on the host 494 -> 352 µs)."""
        numbers = getattr(self.domain.requantization, "numbers", None)
        if numbers is None or not isinstance(offset, int) or numbers.shape[0] != 2:
            return False
        rights = -numbers[1].astype(np.int64)
        return bool((rights >= 1).all()) and offset_folds(int(rights.max()), offset)

    def output(self, total: SSAValue, storage: Attribute, sign_matters: bool = False) -> SSAValue:
        """The levels of `total`; `sign_matters`: even where the layer's relu clamps at the
        output zero point (code the same for relu and other layers)."""
        return looked_up(self.b, self.domain.lookup_table, self.narrowed(self.level(total, sign_matters), storage))

    def level(self, total: SSAValue, sign_matters: bool = False) -> SSAValue:
        """`output`'s int32 levels before `narrowed` clamps and narrows them (where the relu
        clamps at the output zero point, a negative total's level may lie anywhere below it:
        `narrowed` must follow)."""
        b, domain = self.b, self.domain
        offset = domain.output_offset
        doubled = getattr(domain, "doubled", False)  # `doubled_accumulators`: total is twice the sum
        if self.channel is not None:  # (its scale already halved where doubled: `channel_step`)
            step = self.channel.loaded
            if not sign_matters and self.negatives_clamped(self.channel.bounds):
                step = replace(step, negative_offset=step.offset)
            return float_step_levels(b, total, step, self.nearest)
        step = self.float_step(doubled)
        if step is not None and self.fused_offset is not None:
            return fused_step_levels(b, total, step.scale,
                                     b.splat(self.fused_offset, VectorType(f32, total.type.get_shape())), self.nearest)
        if step is not None:
            if not sign_matters and self.negatives_clamped(step):
                step = replace(step, negative_offset=step.offset)
            return float_step_levels(b, total, step, self.nearest)
        numbers = self.narrow()
        if numbers is not None:
            relu = not sign_matters and numbers.clamped_at_offset(domain.out_type.value_range[0])
            right_shift = numbers.shift < 0 or self.right_shift_table(offset)
            level = requantize_narrow_in_halves(b, total, self.multiplier, self.layer_shift, offset, relu,
                                                right_shift=right_shift, doubled=doubled)
        else:
            if doubled:  # an even number: halved exactly
                total = b.shift_right(total, 1)
            scaled = requantize_in_halves(b, total, self.multiplier, self.shift)
            level = b.int_add(scaled, b.lanewise(offset, self.vector))
        return level

    def negatives_clamped(self, step: FloatStep) -> bool:
        """Whether the relu clamps every negative total's level to its bound `low` with either
        of `step`'s offsets, so that its positive one serves both (`float_step_levels` then
        blends none): `low` (compile-time) at or above the output zero point, where TFLite's
        level of any v < 0 lies (its step is monotone and gives the zero point at 0), and at or
        above rint(offset), which bounds the float form's level of any v < 0 (f32(v) x scale
        <= 0 for a scale > 0, and IEEE adds and rint are monotone). `narrowed` follows `level`."""
        low, offset = getattr(self.domain, "low", None), getattr(self.domain, "output_offset", None)
        return (isinstance(low, int) and isinstance(offset, int) and low >= offset
                and np.rint(np.float32(step.offset)) <= low and step.scale > 0)

    def float_step(self, doubled: bool) -> FloatStep | None:
        """The layer's `float_step` (a per-tensor layer's, its numbers compiled in), for a total
        of the accumulator; where the total is twice it (`doubled`), the scale halved: exact, as
        f32(2 a) = 2 f32(a) and 2 f32(a) x s/2 = f32(a) x s, each rounding scaled by a power of 2
        (fused: 2 f32(a) x s/2 + offset is f32(a) x s + offset, exactly, rounded once)."""
        op, requantization = self.domain.op, getattr(self.domain, "requantization", None)
        step = getattr(op, "float_step", None)
        if step is None or getattr(requantization, "table", None) is not None or not isinstance(self.layer_shift, int):
            return None
        step = FloatStep.of(step)
        return replace(step, scale=float(np.float32(step.scale) / np.float32(2))) if doubled else step

    def narrowed(self, level: SSAValue, storage: Attribute) -> SSAValue:
        """`level` clamped to [low, high] as `storage` lanes: saturated to the storage's range
        first (the form LLVM narrows by saturating packs, `vpackssdw`/`vpacksswb`), then the
        activation's bounds inside it on the narrow lanes (a relu's at the output zero point:
        one `vpmaxsb` for 16 or 32 levels instead of a compare on every 8 int32 lanes). `level`
        may be wider than the step's vectors: several of their levels joined
        (`HostInt8Columns.outputs`: 4 channels' 8 levels narrowed by one sequence of packs)."""
        narrow = VectorType(storage, level.type.get_shape())
        bits = storage.width.data
        lowest, highest = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        return self.bounded(self.b.truncate(self.b.clamp(level, lowest, highest), narrow))

    def bounded(self, levels: SSAValue) -> SSAValue:
        """Narrow `levels` (saturated to their storage's range) clamped to the activation's
        bounds inside it."""
        b, domain = self.b, self.domain
        storage, narrow = levels.type.element_type, levels.type
        bits = storage.width.data
        lowest, highest = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

        def bound(value: int | SSAValue) -> int | SSAValue:
            return value if isinstance(value, int) else b.splat(b.truncate(value, storage), narrow)

        if not (isinstance(domain.low, int) and domain.low <= lowest):
            levels = b.int_max(levels, bound(domain.low))
        if not (isinstance(domain.high, int) and domain.high >= highest):
            levels = b.int_min(levels, bound(domain.high))
        return levels
