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
points in the offset), a and b within `ADD_SCALE_ULPS` of the real ratios; on a target with a
fused multiply-add first rint(fma(q1, a, fma(q2, b, offset))) (`FloatAdd.fused`: two `vfmadd`,
no multiply, no add, no compare).

The candidates: scales within `SCALE_ULPS` units in the last place of f32(M 2^(shift - 31)),
and for each scale and side the offset in the middle of the interval that puts every checked
product within half a level of its level.
"""

from __future__ import annotations

from collections.abc import Iterator
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
            return np.clip(np.rint(fma_singles(singles, np.float32(self.scale), offsets)),
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


def fma_singles(x: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """f32(x a + b), the exact value rounded once to nearest even (IEEE fused multiply-add,
    `llvm.fma.f32`), for singles x, a and b (finite, their sum without overflow). The product
    x a is exact in double (24 + 24 bits); s = x a + b in double with its exact error e (TwoSum: x a + b = s + e); s
    rounded to single is the exact sum's rounding except where s lies exactly halfway between
    two singles and e moves the sum off the tie (then the neighbour on e's side)."""
    product = np.asarray(x, np.float32).astype(np.float64) * np.asarray(a, np.float32).astype(np.float64)
    addend = np.asarray(b, np.float32).astype(np.float64)
    total = product + addend
    virtual = total - product
    error = (product - (total - virtual)) + (addend - virtual)
    rounded = total.astype(np.float32)
    off = total - rounded.astype(np.float64)
    neighbour = np.nextafter(rounded, np.where(off > 0, np.float32(np.inf), np.float32(-np.inf)).astype(np.float32))
    tie = (off != 0) & (total == (rounded.astype(np.float64) + neighbour.astype(np.float64)) / 2)
    return np.where(tie & (error != 0) & (np.sign(error) == np.sign(off)), neighbour, rounded).astype(np.float32)


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


def _side_offset(products: np.ndarray, levels: np.ndarray, clamp: tuple[int, int] = INT8_LEVELS) -> np.float32 | None:
    """An offset that puts every product within half a level of its level where the level is
    inside `clamp` (at its saturated ends, past them): the midpoint of the feasible
    interval, or None where it is empty."""
    if products.size == 0:
        return np.float32(0)
    wide = products.astype(np.float64)
    lowest = np.max(levels - 0.5 - wide, where=levels > clamp[0], initial=-np.inf)
    highest = np.min(levels + 0.5 - wide, where=levels < clamp[1], initial=np.inf)
    if not lowest < highest:
        return None
    if np.isinf(lowest) or np.isinf(highest):
        return np.float32(highest - 1 if np.isinf(lowest) else lowest + 1)
    return np.float32((lowest + highest) / 2)


def _nearby_singles(number: np.float32, ulps: int) -> Iterator[np.float32]:
    """`number`, then the singles 1, -1, 2, -2, ... `ulps` units in the last place from it:
    the candidates a proof tries, nearest first (lazily: a proof stops at the first that passes)."""
    above = below = np.float32(number)
    yield above
    for _ in range(ulps):
        above, below = np.nextafter(above, np.float32(np.inf)), np.nextafter(below, np.float32(-np.inf))
        yield above
        yield below


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
    for scale in _nearby_singles(nearest, SCALE_ULPS):
        products = singles.astype(np.float64) * np.float64(scale) if fused else singles * scale
        offsets = [_side_offset(products[side], levels[side]) for side in (~negative, negative)]
        if offsets[0] is None or offsets[1] is None:
            continue
        step = FloatStep(float(scale), float(offsets[0]), float(offsets[1]), fused)
        if np.array_equal(step.levels(values), levels):
            return step
    return None


def fused_levels(values: np.ndarray, scale: float, offsets: np.ndarray) -> np.ndarray:
    """clamp(rint(fma(f32(v), scale, offset)), -128, 127) of int32 `values` (`fma_singles`)."""
    singles = np.asarray(values, np.int64).astype(np.float32)
    return np.clip(np.rint(fma_singles(singles, np.float32(scale), offsets)), *INT8_LEVELS).astype(np.int32)


FUSED_EXACT = 2 ** 24
"""The largest |sum| a fused step takes: below it f32(v) is v (the check's conversion and the
kernel's agree without a rounding of their own)."""


FUSED_OFFSET_ULPS = 16
"""The singles tried each side of the middle offset of a fused step's channel (`fused_bias_offsets`)."""


def fused_bias_offsets(step: FloatStep, multiplier: int, shift: int, offset: int, biases: np.ndarray,
                       bounds: np.ndarray, clamp: tuple[int, int]) -> np.ndarray | None:
    """Per output channel j, the single c_j with which `clamp(rint(fma(f32(u), step.scale,
    c_j)))` is TFLite's clamped level (`tflite_levels`, then `clamp`: the activation's levels)
    of the accumulator u + biases[j] for every sum of products u whose accumulator lies in
    [-bounds[j], bounds[j]]: the bias and the output offset in one single, the kernel's sums
    starting at 0 and its output step one `vfmadd` (no bias add, no separate multiply and
    add). Both sides are monotone non-decreasing in u (a positive scale; IEEE fma and rint are
    monotone), so agreement on TFLite's thresholds and the ends (`step_points`, shifted by the
    bias) is the proof. One offset rarely serves both signs (TFLite rounds its halves away
    from zero, twice: each side's thresholds lie 2^-(r + 1) of a level nearer 0, r its right
    shift, so on a side that crosses many levels the offsets close in on the zero point plus
    2^-(r + 1), on the other minus it, 2^-r apart: on the PP-OCR-cls-style net's layers
    without a relu, no channel has one), so only where the clamp's low end is at
    or above the output zero point (a relu), where every accumulator below 0 has the low
    level: there agreeing at -1 proves every accumulator below it (the fused level is at most
    the one of -1), and the check covers [-1, bound]. c_j the middle of the interval that
    puts every checked product within half a level of its level (or, where the single
    rounding of a sum lands on a half level, the first of the `FUSED_OFFSET_ULPS` singles each
    side of it that passes), checked exactly (`fused_levels`). None where some channel has
    none, a sum reaches `FUSED_EXACT`, or no relu clamps."""
    left = max(shift, 0)
    low, high = clamp
    if step.scale <= 0 or multiplier <= 0 or low < offset:
        return None
    offsets = []
    for bias, bound in zip(np.asarray(biases, np.int64), np.asarray(bounds, np.int64)):
        if bound > (2**31 - 1) >> left or bound + abs(bias) >= FUSED_EXACT:
            return None
        values = step_points(multiplier, shift, offset, -1, max(int(bound), 0))
        levels = np.clip(tflite_levels(values, multiplier, shift, offset), low, high)
        sums = values - bias
        products = sums.astype(np.float32).astype(np.float64) * np.float64(np.float32(step.scale))
        middle = _side_offset(products, levels, clamp)
        if middle is None:
            return None
        for candidate in _nearby_singles(middle, FUSED_OFFSET_ULPS):
            if np.array_equal(np.clip(fused_levels(sums, step.scale, np.full(sums.shape, candidate)), low, high),
                              levels):
                offsets.append(candidate)
                break
        else:
            return None
    return np.array(offsets, np.float32)


@dataclass(frozen=True)
class FloatAdd:
    """An int8 Add (or Sub) of two levels q1, q2 in singles:
    `level = clamp(rint(s + offset), -128, 127)`, s = f32(f32(q1 * first_scale) + f32(q2 *
    second_scale)) (the levels as they are: their zero points are in the offset), with
    `negative_offset` in place of `offset` where s < `threshold` (the sum of the zero points'
    products: there the real sum is negative, and TFLite's halves round the other way; where
    the two offsets are equal, no compare). A Sub's `second_scale` is negative. `fused`:
    `level = clamp(rint(fma(q1, first_scale, fma(q2, second_scale, offset))), -128, 127)`, each
    fused multiply-add rounded once (`fma_singles`), one offset (`negative_offset` the same,
    `threshold` unused)."""

    first_scale: float
    second_scale: float
    threshold: float
    offset: float
    negative_offset: float
    fused: bool = False

    def sums(self, first: np.ndarray, second: np.ndarray) -> np.ndarray:
        """s = f32(f32(q1 * first_scale) + f32(q2 * second_scale)) of the int levels `first`, `second`."""
        return (np.asarray(first).astype(np.float32) * np.float32(self.first_scale)
                + np.asarray(second).astype(np.float32) * np.float32(self.second_scale))

    def levels(self, first: np.ndarray, second: np.ndarray) -> np.ndarray:
        """What the kernel computes for the levels `first`, `second`, operation by operation in float32."""
        if self.fused:
            inner = fma_singles(np.asarray(second).astype(np.float32), np.float32(self.second_scale),
                                np.float32(self.offset))
            return np.clip(np.rint(fma_singles(np.asarray(first).astype(np.float32), np.float32(self.first_scale),
                                               inner)), *INT8_LEVELS).astype(np.int32)
        sums = self.sums(first, second)
        offsets = np.where(sums < np.float32(self.threshold), np.float32(self.negative_offset),
                           np.float32(self.offset)).astype(np.float32)
        return np.clip(np.rint(sums + offsets), *INT8_LEVELS).astype(np.int32)

    def attribute(self) -> DenseArrayBase:
        """The op property `float_add = array<f32: first_scale, second_scale, threshold, offset,
        negative_offset>`, with a sixth number 1 where `fused`."""
        return DenseArrayBase.from_list(f32, [self.first_scale, self.second_scale, self.threshold, self.offset,
                                              self.negative_offset] + [1.0] * self.fused)

    @staticmethod
    def of(attribute: DenseArrayBase) -> FloatAdd:
        """The form an op's `float_add` property holds."""
        numbers = [float(number) for number in attribute.get_values()]
        return FloatAdd(*numbers[:5], fused=len(numbers) > 5 and numbers[5] != 0)


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
              zero_points: tuple[int, int], fused: bool = False) -> FloatAdd | None:
    """A `FloatAdd` giving `levels` (an int8 Add's, clamped to int8) on every pair of levels
    (`first[i]`, `second[i]`: every pair the op can see, so that the check is the proof), its
    scales within `ADD_SCALE_ULPS` of f32 of the two `ratios` (the Add's real multipliers of
    each level less its zero point, `zero_points`), the offset the middle of the interval
    that keeps every sum within half a level of its level: one for both signs where that is
    equal (the kernel then compares nothing), else one a side of the threshold f32(z1 a +
    z2 b); None where no candidate is equal. `fused`: a `FloatAdd.fused` form first (its
    offset the first of the `FUSED_OFFSET_ULPS` singles each side of the middle offset of the
    exact sums that passes, `fused_float_add`), the unfused one where none is."""
    nearest = np.float32(ratios[0]), np.float32(ratios[1])
    if not all(np.isfinite(n) and 0 < abs(n) < 2 ** 16 for n in nearest):
        return None
    steps = sorted(((i, j) for i in range(-ADD_SCALE_ULPS, ADD_SCALE_ULPS + 1)
                    for j in range(-ADD_SCALE_ULPS, ADD_SCALE_ULPS + 1)), key=lambda ij: (max(map(abs, ij)), ij))
    scale_pairs = [(_ulps_away(nearest[0], i), _ulps_away(nearest[1], j)) for i, j in steps]
    if fused and (add := fused_float_add(first, second, levels, scale_pairs)) is not None:
        return add
    for scales in scale_pairs:
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


def fused_float_add(first: np.ndarray, second: np.ndarray, levels: np.ndarray,
                    scale_pairs: list[tuple[np.float32, np.float32]]) -> FloatAdd | None:
    """The first `FloatAdd.fused` of the candidate `scale_pairs` giving `levels` on every pair
    of levels (`first[i]`, `second[i]`), its offset the first of the `FUSED_OFFSET_ULPS`
    singles each side of the middle of the interval that keeps every exact sum q1 a + q2 b
    within half a level of its level (`_side_offset`) that passes; None where none does."""
    singles = np.asarray(first).astype(np.float32), np.asarray(second).astype(np.float32)
    for scales in scale_pairs:
        exact = singles[0].astype(np.float64) * np.float64(scales[0]) + singles[1].astype(np.float64) * np.float64(
            scales[1])
        middle = _side_offset(exact, levels)
        if middle is None:
            continue
        for offset in _nearby_singles(middle, FUSED_OFFSET_ULPS):
            add = FloatAdd(float(scales[0]), float(scales[1]), 0.0, float(offset), float(offset), fused=True)
            if np.array_equal(add.levels(first, second), levels):
                return add
    return None


@dataclass(frozen=True)
class FloatGate:
    """An int8 Mul of x by a gate g fixed along x's innermost run (a squeeze-and-excitation
    block's channel Mul) as one fused multiply-add a level:
    `level = rint(fma(f32(x - zx), a_g, b))`, the slope a_g = f32(f32(g - zg) scale) computed
    once a run from the gate's level (zx, zg the zero points of x and the gate), b `offset`
    where the product (x - zx)(g - zg) is positive or zero, `negative_offset` where it is
    negative (which side of x, the gate's sign says): TFLite rounds the two signs' halves away
    from zero, twice (`FloatStep`). Every step is one IEEE single operation (`FloatGate.levels`
    models the kernel's: the fma by `fma_singles`)."""

    scale: float
    offset: float
    negative_offset: float

    def slopes(self, gates: np.ndarray, gate_offset: int) -> np.ndarray:
        """a_g of each gate level, as the kernel computes it."""
        return ((np.asarray(gates, np.int64) - gate_offset).astype(np.float32) * np.float32(self.scale)).astype(
            np.float32)

    @staticmethod
    def negative_side(x: np.ndarray, gates: np.ndarray, gate_offset: int, x_offset: int) -> np.ndarray:
        """Where the kernel takes `negative_offset`: the sign of x - zx flipped where g <= zg
        (a product of 0 on either side, as the kernel's xor of sign masks puts it)."""
        return (np.asarray(x, np.int64) - x_offset < 0) == (np.asarray(gates, np.int64) > gate_offset)

    def levels(self, x: np.ndarray, gates: np.ndarray, gate_offset: int, x_offset: int) -> np.ndarray:
        """What the kernel computes (before the clamp) for levels `x` by gate levels `gates`."""
        centred = np.asarray(x, np.int64) - x_offset
        negative = self.negative_side(x, gates, gate_offset, x_offset)
        offsets = np.where(negative, np.float32(self.negative_offset), np.float32(self.offset)).astype(np.float32)
        return np.rint(fma_singles(centred.astype(np.float32), self.slopes(gates, gate_offset), offsets)).astype(
            np.int64)

    def attribute(self) -> DenseArrayBase:
        """The op property `float_gate = array<f32: scale, offset, negative_offset>`."""
        return DenseArrayBase.from_list(f32, [self.scale, self.offset, self.negative_offset])

    @staticmethod
    def of(attribute: DenseArrayBase) -> FloatGate:
        """The form an op's `float_gate` property holds."""
        return FloatGate(*(float(number) for number in attribute.get_values()))


GATE_SCALE_ULPS = 8
"""The scales a gate's form tries each side of the nearest single to the real multiplier."""


def float_gate(multiplier: int, shift: int, x_levels: tuple[int, int], gate_levels: tuple[int, int],
               zero_points: tuple[int, int, int], bounds: tuple[int, int]) -> FloatGate | None:
    """A `FloatGate` giving TFLite's Mul level (`tflite_levels` of (x - zx)(g - zg), clamped
    to the fused activation's `bounds`) on every pair of an x level in `x_levels` and a gate
    level in `gate_levels` (inclusive ranges; `zero_points` (zx, zg, zo)), checked on all of
    them (at most 65,536: the check is the proof): its scale within `GATE_SCALE_ULPS` of f32
    of the real multiplier M 2^(shift - 31), each sign's offset the middle of the interval
    that keeps that side's levels within half a level of the products times the scale
    (`_side_offset`, where the level is not clamped); None where no candidate is equal."""
    x_offset, gate_offset, out_offset = zero_points
    low, high = bounds
    nearest = np.float32(multiplier * 2.0 ** (shift - 31))
    if multiplier <= 0 or not 0 < nearest < 0.5:
        return None
    x, gates = (pair.ravel() for pair in np.meshgrid(np.arange(x_levels[0], x_levels[1] + 1),
                                                     np.arange(gate_levels[0], gate_levels[1] + 1), indexing="ij"))
    products = (x - x_offset) * (gates - gate_offset)
    levels = np.clip(tflite_levels(products, multiplier, shift, out_offset), low, high)
    negative = FloatGate.negative_side(x, gates, gate_offset, x_offset)
    for scale in _nearby_singles(nearest, GATE_SCALE_ULPS):
        line = products * np.float64(scale)
        offsets = [_side_offset(line[side], levels[side], bounds) for side in (~negative, negative)]
        if offsets[0] is None or offsets[1] is None:
            continue
        gate = FloatGate(float(scale), float(offsets[0]), float(offsets[1]))
        if np.array_equal(np.clip(gate.levels(x, gates, gate_offset, x_offset), low, high), levels):
            return gate
    return None
