"""TFLite's int8 requantization computed in single-precision floats, exactly, where a check at
compile time over every value the step can see proves it (`float_step`).

TFLite's output step `offset + requantize(v, M, shift)` (`params.requantize`: a rounding
doubling high multiply, then a rounding division by 2^right, halves away from zero) is a
monotone step function of the int32 value v. On a vector unit without 64-bit multiplies per
lane it costs about a dozen instructions a vector (`lowering.requantization`); the float form

    level = clamp(rint(f32(f32(v) * scale) + offset[v < 0]), -128, 127)

is a conversion, a multiply, an add (the offset chosen by v's sign: the two roundings of
TFLite, half away from zero, tilt each side's thresholds the other way) and a conversion back
(`rint`: round half to even, the default mode), every step one IEEE single operation whose
result numpy reproduces bit for bit (`FloatStep.levels`). Whether some (scale, offset,
negative_offset) gives TFLite's level for every v is not left to error bounds: both are
monotone non-decreasing step functions of v on each side of 0 (TFLite's wherever its left
shift does not wrap), so they agree on an interval of values where they agree at its ends
and on both sides of every threshold of TFLite's (the first value of each level, found by
bisection: `step_points`). `float_step` checks exactly those values, at most 2 x 255 + 4;
where no candidate passes it gives None and the layer keeps the integer step.

An int8 Add (or Sub) as a whole (`float_add`): its level is a function of two levels, at most
256 x 256 pairs, so the proof is TFLite's Add (`tflite_add_levels`: two shifted and
requantized terms, their sum requantized) and the float form `FloatAdd` evaluated on every
pair and compared: rint(f32(f32(q1 a) + f32(q2 b)) + offset), the levels as they are (the zero
points in the offset), a and b within `ADD_SCALE_ULPS` of the real ratios.

The candidates: scales within `SCALE_ULPS` units in the last place of f32(M 2^(shift - 31)),
and for each scale and side the offset in the middle of the interval that puts every checked
product within half a level of its level.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, f32

from glowmlir.quantization.params import requantize

SCALE_ULPS = 64
"""The scales tried each side of the nearest single to the real multiplier, in units in the
last place."""
INT8_LEVELS = (-128, 127)


@dataclass(frozen=True)
class FloatStep:
    """`level = clamp(rint(f32(f32(v) * scale) + offset), -128, 127)` for v >= 0, and the
    same with `negative_offset` for v < 0 (all three single-precision numbers); `fused`:
    `rint(fma(f32(v), scale, offset))`, the product and the sum rounded once (one `vfmadd`
    where the target has it, not a multiply and an add)."""

    scale: float
    offset: float
    negative_offset: float
    fused: bool = False

    def levels(self, values: np.ndarray) -> np.ndarray:
        """What the kernel computes for int32 `values`, operation by operation in float32."""
        values = np.asarray(values, dtype=np.int64)
        singles = values.astype(np.float32)
        offsets = np.where(values < 0, np.float32(self.negative_offset), np.float32(self.offset)).astype(np.float32)
        if self.fused:
            return np.clip(np.rint(fused_multiply_add(singles, np.float32(self.scale), offsets)),
                           *INT8_LEVELS).astype(np.int32)
        products = singles * np.float32(self.scale)
        return np.clip(np.rint(products + offsets), *INT8_LEVELS).astype(np.int32)

    def attribute(self) -> DenseArrayBase:
        """The op property `float_step = array<f32: scale, offset, negative_offset>`, with a
        fourth number 1 where `fused`."""
        return DenseArrayBase.from_list(f32, [self.scale, self.offset, self.negative_offset] + [1.0] * self.fused)

    @staticmethod
    def of(attribute: DenseArrayBase) -> FloatStep:
        """The step an op's `float_step` property holds."""
        numbers = [float(number) for number in attribute.get_values()]
        return FloatStep(*numbers[:3], fused=len(numbers) > 3 and numbers[3] != 0)


def fused_multiply_add(singles: np.ndarray, scale: np.float32, offsets: np.ndarray) -> np.ndarray:
    """fma(singles, scale, offsets) in float32, rounded once to nearest even, as `vfmadd`: the
    product of two singles is exact in float64 (48 bits), its sum with the offset rounded to
    float64 (`t`) with the error `e` of that rounding (Knuth's two-sum, exact), and `t`
    rounded to float32, which is the exact sum's rounding unless `t` lies on the midpoint of
    two singles and e != 0: there `t` is first moved one float64 ulp towards e."""
    products = singles.astype(np.float64) * np.float64(scale)
    wide_offsets = np.asarray(offsets, np.float64)
    sums = products + wide_offsets
    back = sums - products
    errors = (products - (sums - back)) + (wide_offsets - back)
    rounded = sums.astype(np.float32)
    other = np.where(rounded.astype(np.float64) > sums, np.nextafter(rounded, np.float32(-np.inf)),
                     np.nextafter(rounded, np.float32(np.inf)))
    midpoint = (rounded.astype(np.float64) + other.astype(np.float64)) / 2 == sums
    nudged = np.nextafter(sums, np.where(errors > 0, np.inf, -np.inf))
    return np.where(midpoint & (errors != 0), nudged.astype(np.float32), rounded)


def tflite_levels(values: np.ndarray, multiplier: int, shift: int, offset: int) -> np.ndarray:
    """TFLite's output levels of int32 `values` (`params.requantize`, the offset, the int8 clamp)."""
    return np.clip(requantize(values, multiplier, shift).astype(np.int64) + offset, *INT8_LEVELS)


def _first_at_least(levels_wanted: np.ndarray, low: int, high: int, level_of) -> np.ndarray:
    """For each wanted level, the first value in [low, high + 1] whose level (a monotone
    non-decreasing `level_of`) is at least it (high + 1 where none is): a bisection of all
    levels at once."""
    first = np.full(levels_wanted.shape, low, dtype=np.int64)
    last = np.full(levels_wanted.shape, high + 1, dtype=np.int64)
    while np.any(first < last):
        middle = (first + last) // 2
        reached = level_of(np.minimum(middle, high)) >= levels_wanted
        last = np.where((first < last) & reached, middle, last)
        first = np.where((first < last) & ~reached, middle + 1, first)
    return first


def step_points(multiplier: int, shift: int, offset: int, low: int, high: int) -> np.ndarray:
    """The values of [low, high] where TFLite's level (`tflite_levels`, monotone there) may
    change, each with the value before it: every threshold (the first value of each level),
    the side ends -1 and 0, and low and high. Two monotone step functions that agree on these
    agree on all of [low, high]."""
    def level_of(values):
        return tflite_levels(values, multiplier, shift, offset)
    levels = np.arange(INT8_LEVELS[0] + 1, INT8_LEVELS[1] + 1, dtype=np.int64)
    thresholds = _first_at_least(levels, low, high, level_of)
    points = np.concatenate([thresholds, thresholds - 1, [low, high, -1, 0]])
    return np.unique(points[(points >= low) & (points <= high)])


def _side_offset(products: np.ndarray, levels: np.ndarray) -> np.float32 | None:
    """An offset that puts every product within half a level of its level where the level is
    inside the int8 range (at the saturated ends, past them): the midpoint of the feasible
    interval, or None where it is empty."""
    if products.size == 0:
        return np.float32(0)
    wide = products.astype(np.float64)
    lowest = np.max(levels - 0.5 - wide, where=levels > INT8_LEVELS[0], initial=-np.inf)
    highest = np.min(levels + 0.5 - wide, where=levels < INT8_LEVELS[1], initial=np.inf)
    if not lowest < highest:
        return None
    if np.isinf(lowest) or np.isinf(highest):
        return np.float32(highest - 1 if np.isinf(lowest) else lowest + 1)
    return np.float32((lowest + highest) / 2)


def _ulps_away(number: np.float32, ulps: int) -> np.float32:
    """`number` moved `ulps` units in the last place (up where positive, down where negative)."""
    for _ in range(abs(ulps)):
        number = np.nextafter(number, np.float32(np.inf if ulps > 0 else -np.inf))
    return number


def float_step(multiplier: int, shift: int, offset: int, low: int, high: int,
               fused: bool = False) -> FloatStep | None:
    """A `FloatStep` equal to TFLite's int8 step (`tflite_levels`) on every int32 value in
    [low, high] (the layer's value bounds), or None where none of the candidates is, or where
    TFLite's left shift would wrap a value of [low, high] (its step is then not monotone).
    `fused`: a `FloatStep.fused` form, rint(fma(f32(v), scale, offset)) (the offsets chosen
    on the exact products; monotone in v as the unfused one, so checked on the same values)."""
    left = max(shift, 0)
    if multiplier <= 0 or low < -(2**31 >> left) or high > (2**31 - 1) >> left:
        return None
    nearest = np.float32(multiplier * 2.0 ** (shift - 31))
    if not 0 < nearest < 0.5:  # a level a value at most: the steps are one level high
        return None
    values = step_points(multiplier, shift, offset, low, high)
    levels = tflite_levels(values, multiplier, shift, offset)
    negative = values < 0
    singles = values.astype(np.float32)
    for ulps in range(SCALE_ULPS + 1):
        for signed_ulps in (ulps, -ulps) if ulps else (0,):
            scale = _ulps_away(nearest, signed_ulps)
            products = singles.astype(np.float64) * np.float64(scale) if fused else singles * scale
            offsets = [_side_offset(products[side], levels[side]) for side in (~negative, negative)]
            if offsets[0] is None or offsets[1] is None:
                continue
            step = FloatStep(float(scale), float(offsets[0]), float(offsets[1]), fused)
            if np.array_equal(step.levels(values), levels):
                return step
    return None


@dataclass(frozen=True)
class FloatAdd:
    """An int8 Add (or Sub) of two levels q1, q2 in singles:
    `level = clamp(rint(s + offset), -128, 127)`, s = f32(f32(q1 * first_scale) + f32(q2 *
    second_scale)) (the levels as they are: their zero points are in the offset), with
    `negative_offset` in place of `offset` where s < `threshold` (the sum of the zero points'
    products: there the real sum is negative, and TFLite's halves round the other way; where
    the two offsets are equal, no compare). A Sub's `second_scale` is negative."""

    first_scale: float
    second_scale: float
    threshold: float
    offset: float
    negative_offset: float

    def sums(self, first: np.ndarray, second: np.ndarray) -> np.ndarray:
        """s = f32(f32(q1 * first_scale) + f32(q2 * second_scale)) of the int levels `first`, `second`."""
        return (np.asarray(first).astype(np.float32) * np.float32(self.first_scale)
                + np.asarray(second).astype(np.float32) * np.float32(self.second_scale))

    def levels(self, first: np.ndarray, second: np.ndarray) -> np.ndarray:
        """What the kernel computes for the levels `first`, `second`, operation by operation in float32."""
        sums = self.sums(first, second)
        offsets = np.where(sums < np.float32(self.threshold), np.float32(self.negative_offset),
                           np.float32(self.offset)).astype(np.float32)
        return np.clip(np.rint(sums + offsets), *INT8_LEVELS).astype(np.int32)

    def attribute(self) -> DenseArrayBase:
        """The op property `float_add = array<f32: first_scale, second_scale, threshold, offset, negative_offset>`."""
        return DenseArrayBase.from_list(f32, [self.first_scale, self.second_scale, self.threshold, self.offset,
                                              self.negative_offset])

    @staticmethod
    def of(attribute: DenseArrayBase) -> FloatAdd:
        """The form an op's `float_add` property holds."""
        return FloatAdd(*(float(number) for number in attribute.get_values()))


def tflite_add_levels(first: np.ndarray, second: np.ndarray, multipliers, left_shift: int, offset: int,
                      subtract: bool = False) -> np.ndarray:
    """TFLite's int8 Add (Sub) of the differences `first`, `second` (levels less their zero
    points) with its `multipliers` ((M, shift) of each input and of the output,
    `rescaling.add_multipliers`): each difference shifted left and requantized, the terms'
    sum (difference) requantized, the offset added, clamped to int8."""
    (m1, s1), (m2, s2), (mo, so) = multipliers
    terms = [requantize(np.asarray(d, np.int64) << left_shift, m, s).astype(np.int64)
             for d, m, s in ((first, m1, s1), (second, m2, s2))]
    total = terms[0] - terms[1] if subtract else terms[0] + terms[1]
    return tflite_levels(total, mo, so, offset)


ADD_SCALE_ULPS = 3
"""The scales tried each side of the nearest singles to an Add's two real ratios, in units in
the last place: (2 x 3 + 1)^2 = 49 pairs at most, each checked on every pair of levels."""


def float_add(first: np.ndarray, second: np.ndarray, levels: np.ndarray, ratios: tuple[float, float],
              zero_points: tuple[int, int]) -> FloatAdd | None:
    """A `FloatAdd` giving `levels` (an int8 Add's, clamped to int8) on every pair of levels
    (`first[i]`, `second[i]`: every pair the op can see, so that the check is the proof), its
    scales within `ADD_SCALE_ULPS` of f32 of the two `ratios` (the Add's real multipliers of
    each level less its zero point, `zero_points`), the offset the middle of the interval
    that keeps every sum within half a level of its level: one for both signs where that is
    equal (the kernel then compares nothing), else one a side of the threshold f32(z1 a +
    z2 b); None where no candidate is equal."""
    nearest = np.float32(ratios[0]), np.float32(ratios[1])
    if not all(np.isfinite(n) and 0 < abs(n) < 2 ** 16 for n in nearest):
        return None
    steps = sorted(((i, j) for i in range(-ADD_SCALE_ULPS, ADD_SCALE_ULPS + 1)
                    for j in range(-ADD_SCALE_ULPS, ADD_SCALE_ULPS + 1)), key=lambda ij: (max(map(abs, ij)), ij))
    for i, j in steps:
        scales = _ulps_away(nearest[0], i), _ulps_away(nearest[1], j)
        threshold = np.float32(np.float32(zero_points[0] * scales[0]) + np.float32(zero_points[1] * scales[1]))
        candidate = FloatAdd(float(scales[0]), float(scales[1]), float(threshold), 0.0, 0.0)
        sums = candidate.sums(first, second)
        below = sums < threshold
        shared = _side_offset(sums, levels)
        for offsets in ([shared, shared], [_side_offset(sums[side], levels[side]) for side in (~below, below)]):
            if offsets[0] is None or offsets[1] is None:
                continue
            add = FloatAdd(candidate.first_scale, candidate.second_scale, candidate.threshold, float(offsets[0]),
                           float(offsets[1]))
            if np.array_equal(add.levels(first, second), levels):
                return add
    return None
