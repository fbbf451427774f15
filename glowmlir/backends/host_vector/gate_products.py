"""A squeeze-and-excitation block's channel Mul (int8 x by an int8 gate fixed along x's runs)
in int16 lanes on AVX2, where its form is proved on every pair of levels (`int16_gate`).

TFLite's level of x by a gate level g is zo + rdhm((x - zx)(g - zg), M, s), two roundings
(`float_steps.tflite_levels`). In int16, with vpmulhrsw's mulhrs(a, b) = (a b + 2^14) >> 15
(`table_arithmetic.mulhrs`, the one model of the instruction),

    level = (mulhrs(x << 8, k_g) + b_g) >> r_g     (x << 8: the level a byte up, exact)

k_g, the offset b_g of x's side of zx (`nonnegative` where x >= zx, else `negative`: the two
roundings of each sign and the zero points folded in) and the shift r_g a row of a table a
gate level (`Int16Gate`). `int16_gate` finds each row (the largest shift whose nearest k, or
one of `GATE_SLOPE_STEPS` each side, has offsets putting every x level on its level with every
sum inside int16) and checks the form on every pair of the levels x and the gate can hold (the
proof); a Mul none is proved for keeps its fma form (`float_gate`).

A Mul some of whose gate levels have no row, where its fma form is proved on every pair, is a
hybrid (`mul_int16_gate(op, partial=True)`): the table's rows of those levels are marked (the
shift `UNPROVED`, -1), the proof covers the other rows' pairs, and the op has both its
`int16_gate` and its `float_gate`; the kernel branches once a run on the gate level's row,
the int16 loop or `vector_elementwise.emit_float_gate_run`'s (docs/quantization.md, stop 58,
branch se58b).

The table is a weight (`glowll.weight`, i16 [rows, 4]) in the bundle's constant region, the
op's `gate_table` operand, not code: a row for each level the gate can hold, no more
(`vector_elementwise.produced_levels`: the gate's type, its writer's clamp or its lookup
table's entries), the op's `int16_gate = array<i32: first, last>` naming them. The kernel
(`emit_int16_gate`) reads a gate level's row once a run (four `vpbroadcastw`), then per 32
levels two unpacks, two `vpmulhrsw`, the side's offsets (`vpcmpgtw`, `vpblendvb`; none where
zx is -128), two additions, two shifts and `vpacksswb` (docs/quantization.md, stops 57-58)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, VectorType, i8, i16, i32
from xdsl.ir import SSAValue

from glowmlir.backends.host_vector.int8_depthwise import neon_saturated_words
from glowmlir.backends.host_vector.table_arithmetic import MULHRS, PACK, high_byte_words, mulhrs
from glowmlir.dialects import glowll
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.vector_columns import in_runs, join, load_vector, store_vector
from glowmlir.lowering.vector_elementwise import emit_float_gate_run, gate_operand, gate_types, produced_levels
from glowmlir.quantization.float_steps import INT8_LEVELS, tflite_levels
from glowmlir.quantization.rescaling import activation_bounds, mul_multiplier

GATE_SLOPE_STEPS = 8
"""The k_g an `Int16Gate` row tries each side of the nearest to the gate level's real slope."""
INT16 = (-(1 << 15), (1 << 15) - 1)
UNPROVED = -1
"""The shift of a row marking a gate level with no int16 row (a hybrid's: that level takes `float_gate`)."""


@dataclass(frozen=True)
class HighProducts:
    """A vector unit's rounded high products of int16 words, mulhrs(a, b) = (a b + 2^14) >> 15
    (`table_arithmetic.mulhrs`; a k_g is never -2^15, so where the units differ, on
    -2^15 x -2^15, no row reaches), and its narrowing of two vectors of words to one of
    saturated bytes, in order: `step` int8 levels a vector."""

    step: int
    multiply: str
    narrow: Callable[[KernelBuilder, list[SSAValue]], SSAValue]

    @property
    def words(self) -> VectorType:
        """The int16 vector of half a step's levels."""
        return VectorType(i16, [self.step // 2])


def _avx2_packed(b: KernelBuilder, halves: list[SSAValue]) -> SSAValue:
    """`vpacksswb`, whose 128-bit lanes undo `high_byte_words`' lane by lane unpacks."""
    return b.emit(llvm.CallIntrinsicOp(PACK, halves, [VectorType(i8, [2 * halves[0].type.get_shape()[0]])]))


def _neon_narrowed(b: KernelBuilder, halves: list[SSAValue]) -> SSAValue:
    """`sqxtn` and `sqxtn2` (`int8_depthwise.neon_saturated_words`) of the low and high half."""
    return neon_saturated_words(b, join(b, halves))


HIGH_PRODUCTS = {"avx2": HighProducts(32, MULHRS, _avx2_packed),
                 "neon": HighProducts(16, "llvm.aarch64.neon.sqrdmulh.v8i16", _neon_narrowed)}
"""The units an `Int16Gate` runs on, by the kernel's `products` parameter ("avx2" where it
has none): AVX2's `vpmulhrsw` and `vpacksswb` on a ymm of 32 levels, AArch64 NEON's
`sqrdmulh` (a doubling high half, rounded and saturated: the same as mulhrs) and `sqxtn` on
a register of 16."""


@dataclass(frozen=True)
class Int16Gate:
    """The module doc's form: `table` a row (k, nonnegative, negative, r) a gate level from
    `first` on. Every sum stays inside int16 (the proof checks it), so the kernel's adds do
    not wrap. A hybrid's table marks the gate levels it has no row for (r `UNPROVED`)."""

    first: int
    table: np.ndarray

    @property
    def proved(self) -> np.ndarray:
        """Which rows are the form's (the others `UNPROVED`, their gate levels `float_gate`'s)."""
        return self.table[:, 3] != UNPROVED

    @property
    def complete(self) -> bool:
        """Whether every gate level of the table has its row (no `float_gate` needed)."""
        return bool(self.proved.all())

    @property
    def gate_levels(self) -> tuple[int, int]:
        """The first and last gate levels the table has a row of."""
        return self.first, self.first + len(self.table) - 1

    def levels(self, x: np.ndarray, gates: np.ndarray, x_offset: int) -> np.ndarray:
        """What the kernel computes (before its clamp) for levels `x` by gate levels `gates`
        (of proved rows: a marked row's are meaningless)."""
        x, gates = np.broadcast_arrays(np.asarray(x, np.int64), np.asarray(gates, np.int64))
        k, nonnegative, negative, r = (self.table[gates - self.first, column].astype(np.int64) for column in range(4))
        return (mulhrs(x << 8, k) + np.where(x >= x_offset, nonnegative, negative)) >> r

    def attribute(self) -> DenseArrayBase:
        """The op property `int16_gate = array<i32: first, last>`."""
        return DenseArrayBase.from_list(i32, list(self.gate_levels))


def _offset_interval(products: np.ndarray, levels: np.ndarray, shift: int, clamp: tuple[int, int]) -> tuple[int, int]:
    """The offsets b (an interval, empty where low > high) putting every (product + b) >> shift
    on its level, where the level is inside `clamp` (at its saturated ends, past them)."""
    unit = 1 << shift
    low = np.max(np.where(levels > clamp[0], levels * unit - products, INT16[0]), initial=INT16[0])
    high = np.min(np.where(levels < clamp[1], (levels + 1) * unit - 1 - products, INT16[1]), initial=INT16[1])
    return int(low), int(high)


def _row(multiplier: int, shift: int, x: np.ndarray, levels: np.ndarray, centred_gate: int, x_offset: int,
         bounds: tuple[int, int]) -> tuple[int, int, int, int] | None:
    """(k, nonnegative, negative, r) of one gate level: the largest shift r whose nearest k
    (or one of `GATE_SLOPE_STEPS` each side) has offsets giving `levels` on both sides of zx
    with every sum in int16; None where none has."""
    sides = x >= x_offset, x < x_offset
    for r in range(14, -1, -1):
        nearest = round(centred_gate * multiplier * 2.0 ** (shift - 31 + 7 + r))
        for k in sorted(range(nearest - GATE_SLOPE_STEPS, nearest + GATE_SLOPE_STEPS + 1),
                        key=lambda k: abs(k - nearest)):
            if not INT16[0] < k <= INT16[1]:
                continue
            products = mulhrs(x << 8, k)
            offsets = []
            for side in sides:
                low, high = _offset_interval(products[side], levels[side], r, bounds)
                offset = (low + high) // 2
                sums = products[side] + offset
                if (low > high or not INT16[0] <= offset <= INT16[1]
                        or sums.size and not (sums.min() >= INT16[0] and sums.max() <= INT16[1])):
                    break
                offsets.append(offset)
            else:
                return k, offsets[0], offsets[1], r
    return None


def int16_gate(multiplier: int, shift: int, x_levels: tuple[int, int], gate_levels: tuple[int, int],
               zero_points: tuple[int, int, int], bounds: tuple[int, int], partial: bool = False) -> Int16Gate | None:
    """An `Int16Gate` giving TFLite's Mul level (`tflite_levels` of (x - zx)(g - zg), clamped
    to the fused activation's `bounds`) on every pair of an x level in `x_levels` and a gate
    level in `gate_levels` (the table's rows), checked on all of them (the check is the proof;
    `zero_points` (zx, zg, zo)); None where some gate level has no row (`_row`) or, `partial`,
    where none has: then the rows of those without are marked `UNPROVED` and the proof is on
    the pairs of the others."""
    x_offset, gate_offset, out_offset = zero_points
    if multiplier <= 0:
        return None
    x = np.arange(x_levels[0], x_levels[1] + 1, dtype=np.int64)
    rows = []
    for gate in range(gate_levels[0], gate_levels[1] + 1):
        levels = np.clip(tflite_levels((x - x_offset) * (gate - gate_offset), multiplier, shift, out_offset), *bounds)
        row = _row(multiplier, shift, x, levels, gate - gate_offset, x_offset, bounds)
        if row is None and not partial:
            return None
        rows.append(row or (0, 0, 0, UNPROVED))
    form = Int16Gate(gate_levels[0], np.array(rows, np.int16))
    if not form.proved.any():
        return None
    proved_gates = np.arange(gate_levels[0], gate_levels[1] + 1)[form.proved]
    x_all, gates = (pair.ravel() for pair in np.meshgrid(x, proved_gates, indexing="ij"))
    expected = np.clip(tflite_levels((x_all - x_offset) * (gates - gate_offset), multiplier, shift, out_offset),
                       *bounds)
    return form if np.array_equal(np.clip(form.levels(x_all, gates, x_offset), *bounds), expected) else None


def mul_int16_gate(op: glowll.ElementwiseOp, partial: bool = False) -> Int16Gate | None:
    """The int16 form of an int8 Mul by a gate fixed along x's runs (`int16_gate`), proved on
    every pair of the levels x and the gate can hold (`vector_elementwise.produced_levels`)
    against TFLite's Mul clamped to the fused activation; None where the Mul has no such gate
    or none is proved (`partial`: a hybrid's, the rows of some gate levels marked, as
    `int16_gate`'s; the op's `float_gate` then takes them)."""
    types = gate_types(op)
    if types is None:
        return None
    gate, gate_type, x_type, out_type = types
    return int16_gate(*mul_multiplier(x_type, gate_type, out_type), produced_levels(op.inputs[1 - gate]),
                      produced_levels(op.inputs[gate]), (x_type.offset, gate_type.offset, out_type.offset),
                      activation_bounds(op, out_type), partial)


def emit_int16_gate(b: KernelBuilder, op: glowll.ElementwiseOp, table: View, shape: list[int], views: list[View],
                    bounds: tuple[int, int]) -> bool:
    """A Mul with an `int16_gate` (`table` its `gate_table`'s view) over the merged views
    (`vector_elementwise.emit_elementwise`'s) where its gate is fixed along their runs: a gate
    level's row read once a run, then a step of levels (the last masked) by the module
    doc's form on the kernel's unit (`HIGH_PRODUCTS`, its `products` parameter), clamped
    (only inside int8) and narrowed (`vpacksswb`, `sqxtn`); a hybrid's (with a
    `float_gate`) run whose row is marked `UNPROVED` by `emit_float_gate_run` instead (one
    branch a run). False (nothing emitted) where the gate is not along the merged runs."""
    gate_index = gate_operand(op)
    if gate_index is None or views[1 + gate_index].strides[-1] != 0:
        return False
    x_view, gate_view = views[2 - gate_index], views[1 + gate_index]
    x_offset = op.inputs[1 - gate_index].type.element_type.offset
    first = op.int16_gate.get_values()[0]
    products = op.microkernel.parameter("products")
    unit = HIGH_PRODUCTS["avx2" if products is None else products.data]
    step, words_type = unit.step, unit.words
    *outer, inner = shape

    def vector_at(indices: list[Index], row: tuple[SSAValue, ...], start: Index, count: int) -> None:
        loaded = None if count == step else [lane < count for lane in range(step)]
        x = load_vector(b, x_view, [*indices, start], step, loaded)
        k, nonnegative, negative, shift = row
        halves = []
        for high in (False, True):
            words = high_byte_words(b, x, high)
            offsets = nonnegative
            if x_offset > INT8_LEVELS[0]:  # x << 8 > (zx << 8) - 1, in int16
                ahead = b.int_compare("sgt", words, b.int_value((x_offset << 8) - 1, words_type))
                offsets = b.select(ahead, nonnegative, negative)
            product = b.emit(llvm.CallIntrinsicOp(unit.multiply, [words, k], [words_type]))
            value = b.shift_right(b.int_add(product, offsets), shift)
            if tuple(bounds) != INT8_LEVELS:
                value = b.clamp(value, b.int_value(bounds[0], words_type), b.int_value(bounds[1], words_type))
            halves.append(value)
        store_vector(b, unit.narrow(b, halves), views[0], [*indices, start], loaded)

    def int16_run(indices: list[Index], at: SSAValue) -> None:
        row = tuple(b.splat(b.load(table, [at, column]), words_type) for column in range(4))
        in_runs(b, inner, step, functools.partial(vector_at, indices, row))

    with b.loops(outer) as indices:
        gate = b.sign_extend(b.load(gate_view, [*indices, 0]))
        at = b.as_index(b.int_sub(gate, b.int_value(first, gate.type)))
        if getattr(op, "float_gate", None) is None:
            int16_run(list(indices), at)
        else:  # a hybrid: the row's shift says which loop the run takes
            shift = b.load(table, [at, 3])
            with b.when(b.int_compare("ne", shift, b.int_value(UNPROVED, i16))):
                int16_run(list(indices), at)
            with b.when(b.int_compare("eq", shift, b.int_value(UNPROVED, i16))):
                emit_float_gate_run(b, op, views, list(indices), gate, inner, bounds)
    return True
