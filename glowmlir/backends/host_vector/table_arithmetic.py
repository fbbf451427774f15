"""A HardSwish-shaped int8 lookup table computed in int16 arithmetic on AVX2 instead of
looked up (`table_lookup.emit_int_lookup_table`, where the form is proved).

HardSwish's levels are y = zo + rint(si / so * d * clip(si d + 3, 0, 6) / 6), d = x - zi: a
product of the level (from its zero point) and a clamped affine ramp. In int16, with
vpmulhrsw's mulhrs(a, b) = (a b + 2^14) >> 15 (`mulhrs`), the form

    w = x << 8                                   (the level in a word's high byte)
    R = min(max(mulhrs(w, slope) + ramp, 0), top) (the ramp clip(si d + 3, 0, 6), scaled)
    y = sat8(zo + mulhrs((x << shift) - (zi << shift), R))

(`HardSwishForm`) gives every one of the 256 entries of 17 of the PP-OCR-cls-style net's 18
HardSwish tables (not block 3's depthwise one), and of 30 of 40 with random HardSwish types
(`tests/unit/test_host_table_lookup.py`): `hard_swish_form` tries the parameters near the
real ones and keeps the first that reproduces every entry, the proof; a table none
reproduces keeps the blend tree. 32 levels take two unpacks, two shifts, two subtractions,
four vpmulhrsw, two additions, two max, two min, two more additions and a pack: 19
instructions against the tree's 35 (16 of them shuffles, two a cycle on Zen 3); llvm-mca
(znver3) 5.1 cycles a step against the tree's ~10.6. AVX2 (ymm) only: the AVX-512BW kernel
(zmm) keeps its tree (the form's zmm twin is not built: not runnable on this host).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, VectorType, i8, i16, i32
from xdsl.ir import SSAValue

from glowmlir.lowering.kernel_builder import KernelBuilder

MULHRS = "llvm.x86.avx2.pmul.hr.sw"
"""ymm `vpmulhrsw`."""

PACK = "llvm.x86.avx2.packsswb"
"""ymm `vpacksswb`: two word vectors to one of saturated bytes, 128-bit lane by lane."""

LEVELS = np.arange(-128, 128, dtype=np.int64)
"""The int8 levels a table has an entry for, in its order."""

SLOPE_STEPS, RAMP_STEPS, TOP_STEPS = 8, 12, 3
"""How far `hard_swish_form` tries each of its parameters from the real one (each way)."""

MISSES_TO_TRY = 8
"""Entries the real parameters of a shift may miss for its nearby ones to be tried."""


def _wrap(values: np.ndarray) -> np.ndarray:
    """int16 wrap-around, as vpaddw and vpsubw give."""
    return (values + (1 << 15)) % (1 << 16) - (1 << 15)


def mulhrs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """vpmulhrsw on int16 words: (a b + 2^14) >> 15, saturated (-2^15 * -2^15 only)."""
    return np.clip((a * b + (1 << 14)) >> 15, -(1 << 15), (1 << 15) - 1)


@dataclass(frozen=True)
class HardSwishForm:
    """The parameters of the module doc's int16 form of a table."""

    shift: int
    centre: int
    slope: int
    ramp: int
    top: int
    output_offset: int

    def entries(self) -> np.ndarray:
        """The form's output for each of `LEVELS` (int16 words, as the kernel computes)."""
        return self.evaluate(LEVELS[None, :], np.array([[self.slope]]), np.array([[self.ramp]]))[0]

    def evaluate(self, levels: np.ndarray, slope: np.ndarray, ramp: np.ndarray) -> np.ndarray:
        """The form on int8 `levels` for (broadcast) candidate `slope`s and `ramp`s."""
        ramp_words = np.clip(_wrap(mulhrs(levels << 8, slope) + ramp), 0, self.top)
        level_words = _wrap((levels << self.shift) - (self.centre << self.shift))
        return np.clip(_wrap(mulhrs(level_words, ramp_words) + self.output_offset), -128, 127)


def hard_swish_form(entries: np.ndarray, input_scale: float, input_offset: int, output_scale: float,
                    output_offset: int) -> HardSwishForm | None:
    """The first `HardSwishForm` (least shift, then the candidates nearest the real
    parameters) that gives every one of the table's 256 `entries` (by level, -128..127) of
    the int8 types (scale, offset) in and out; None where none does."""
    ratio = input_scale / output_scale
    for shift in range(8):
        if (np.abs(LEVELS - input_offset).max() << shift) >= 1 << 15:
            break
        scale = 2.0 ** (15 - shift) * ratio / 6  # R per unit of clip(x + 3, 0, 6)
        if 6 * scale >= 1 << 15:
            continue
        real_slope = int(round(scale * input_scale * 128))  # mulhrs(x << 8, slope): slope / 128 a level
        if not SLOPE_STEPS <= real_slope < (1 << 15) - SLOPE_STEPS:
            continue
        slopes = real_slope + np.arange(-SLOPE_STEPS, SLOPE_STEPS + 1)  # the real one at SLOPE_STEPS
        real_ramps = np.rint(3 * scale - mulhrs(np.int64(input_offset << 8), slopes)).astype(np.int64)
        for top in int(round(6 * scale)) + np.arange(-TOP_STEPS, TOP_STEPS + 1):
            if not 0 <= top < 1 << 15:
                continue
            form = HardSwishForm(shift, input_offset, 0, 0, int(top), output_offset)
            nearest = form.evaluate(LEVELS[None, :], slopes[SLOPE_STEPS:SLOPE_STEPS + 1, None],
                                    real_ramps[SLOPE_STEPS:SLOPE_STEPS + 1, None])
            if (nearest != entries).sum() > MISSES_TO_TRY:
                continue
            for step in sorted(range(-RAMP_STEPS, RAMP_STEPS + 1), key=abs):
                ramps = real_ramps + step
                outputs = form.evaluate(LEVELS[None, :], slopes[:, None], ramps[:, None])
                in_words = (ramps >= -(1 << 15)) & (ramps < 1 << 15)
                exact = np.nonzero((outputs == entries[None, :]).all(axis=1) & in_words)[0]
                if exact.size:
                    best = exact[np.argmin(np.abs(exact - SLOPE_STEPS))]
                    return HardSwishForm(shift, input_offset, int(slopes[best]), int(ramps[best]), int(top),
                                         output_offset)
    return None


def high_byte_words(b: KernelBuilder, values: SSAValue, high: bool) -> SSAValue:
    """The low (or high) 8 bytes of each 128-bit lane of int8 `values`, each the high byte of
    a word (level << 8; vpunpcklbw / vpunpckhbw with zero)."""
    width = values.type.get_shape()[0]
    lanes = []
    for word in range(width // 2):
        lane, at = divmod(word, 8)
        lanes += [width, 16 * lane + at + 8 * high]  # the zero vector's first byte, then the level
    zero = b.constant(0, values.type)
    interleaved = b.emit(llvm.ShuffleVectorOp(values, zero, DenseArrayBase.from_list(i32, lanes),
                                              VectorType(i8, [width])))
    return b.bitcast(interleaved, VectorType(i16, [width // 2]))


def computed_entries(b: KernelBuilder, form: HardSwishForm, levels: SSAValue) -> SSAValue:
    """Each of 32 int8 levels (ymm) replaced by the form's output (the module doc)."""
    width = levels.type.get_shape()[0]
    words_type = VectorType(i16, [width // 2])

    def words(value: int) -> SSAValue:
        return b.constant(value, words_type)

    def multiply(x: SSAValue, y: SSAValue) -> SSAValue:
        return b.emit(llvm.CallIntrinsicOp(MULHRS, [x, y], [words_type]))

    halves = []
    for high in (False, True):
        shifted = high_byte_words(b, levels, high)
        ramp = b.clamp(b.int_add(multiply(shifted, words(form.slope)), words(form.ramp)), words(0), words(form.top))
        level = b.int_sub(b.shift_right(shifted, words(8 - form.shift)), words(form.centre << form.shift))
        halves.append(b.int_add(multiply(level, ramp), words(form.output_offset)))
    return b.emit(llvm.CallIntrinsicOp(PACK, halves, [levels.type]))
