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
    same with `negative_offset` for v < 0 (all three single-precision numbers)."""

    scale: float
    offset: float
    negative_offset: float

    def levels(self, values: np.ndarray) -> np.ndarray:
        """What the kernel computes for int32 `values`, operation by operation in float32."""
        values = np.asarray(values, dtype=np.int64)
        products = values.astype(np.float32) * np.float32(self.scale)
        offsets = np.where(values < 0, np.float32(self.negative_offset), np.float32(self.offset)).astype(np.float32)
        return np.clip(np.rint(products + offsets), *INT8_LEVELS).astype(np.int32)

    def attribute(self) -> DenseArrayBase:
        """The op property `float_step = array<f32: scale, offset, negative_offset>`."""
        return DenseArrayBase.from_list(f32, [self.scale, self.offset, self.negative_offset])

    @staticmethod
    def of(attribute: DenseArrayBase) -> FloatStep:
        """The step an op's `float_step` property holds."""
        return FloatStep(*(float(number) for number in attribute.get_values()))


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


def float_step(multiplier: int, shift: int, offset: int, low: int, high: int) -> FloatStep | None:
    """A `FloatStep` equal to TFLite's int8 step (`tflite_levels`) on every int32 value in
    [low, high] (the layer's value bounds), or None where none of the candidates is, or where
    TFLite's left shift would wrap a value of [low, high] (its step is then not monotone)."""
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
        for direction in (np.inf, -np.inf) if ulps else (np.inf,):
            scale = nearest
            for _ in range(ulps):
                scale = np.nextafter(scale, np.float32(direction))
            products = singles * scale
            offsets = [_side_offset(products[side], levels[side]) for side in (~negative, negative)]
            if offsets[0] is None or offsets[1] is None:
                continue
            step = FloatStep(float(scale), float(offsets[0]), float(offsets[1]))
            if np.array_equal(step.levels(values), levels):
                return step
    return None
