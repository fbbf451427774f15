"""Int8 Add, Sub and Mul on a vector unit's int32 lanes, broadcasting as the generic map does
(`microkernel = "vector-elementwise-int8"` on a host's vector unit, `"x86-avx512"` where the
AVX-512 VNNI kernels run): the views' dimensions merged, the innermost in vectors of
`LANES` levels (the last run masked), a source broadcast along it (stride 0: a
squeeze-and-excitation block's channel scale) one level in every lane, the generic kernel's
arithmetic (`quantized_kernels.binary_level`, each requantization its value's bound) on the
lanes, clamped and narrowed. Views whose innermost stride is another take the generic map,
level by level. 16 lanes: a zmm register of int32, two ymm, four xmm or NEON registers; LLVM
splits the vector to the target's width. A broadcast source's level is loaded once a run of
the innermost loop (its splat and zero point then leave the loop: LLVM cannot hoist a load
that the kernel's stores may alias).

A Mul whose output step has a proved float form (`float_step`, the op's `float_step`
property, `mul_float_step`) takes it instead of the exact 64-bit multiply
(`requantize_bounded`): v = (a - a_offset)(b - b_offset), |v| <= 255 x 255, then
`float_step_levels` (a conversion, a multiply, a blend of the sign's offset, an add, a
rounding and a conversion back), about half the instructions. On the PP-OCR-cls-style
net's squeeze-and-excitation Mul (200 x 2 x 96 levels by a gate a channel, AVX2) int8 went
from 2.0x float to about 1.5x (docs/quantization.md).

An Add or Sub proved equal to a float form on every pair of levels (`add_float_form`, the
op's `float_add` property, `float_add_levels`) takes it instead of TFLite's three integer
steps (`add_terms`): rint(f32(q1 a) + f32(q2 b) + offset), a conversion and a multiply a
source, two adds and a rounding conversion (a compare and a blend more where the offset
depends on the sum's side). On a residual block's Add (32 x 2 x 96, AVX2) int8 went from
about 1.9x float (the float Add alone) to about 1.1x. A backend may give such an op's
contiguous runs a loop of its own (`emit_elementwise`'s `contiguous`: on AVX2 32 levels a step
as bytes, `backends.host_vector.byte_elementwise`).

A Mul by a gate fixed along x's runs (a squeeze-and-excitation block's channel Mul,
`gate_operand`) with a proved fused multiply-add form (`mul_float_gate`, the op's
`float_gate` property, `float_gate_levels`; targets with an fma only) takes it instead of
the float step: the gate's slope once a run, then per level rint(fma(x - zx, a_g, offset of
the product's side)), no `vpmulld`; about -10% on the PP-OCR-cls-style net's SE Mul (AVX2,
docs/quantization.md)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import VectorType, f32, i32
from xdsl.ir import SSAValue

from glowmlir.dialects import glow, glowll
from glowmlir.dialects.weights import array_from_dense
from glowmlir.lowering import loop_skeletons
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.requantization import EXACT_FLOATS, NearestLevels, float_step_levels, nearest_levels
from glowmlir.lowering.vector_columns import in_runs, load_vector, store_vector
from glowmlir.quantization.float_steps import (
    FloatAdd,
    FloatGate,
    FloatStep,
    float_add,
    float_gate,
    float_step,
    tflite_add_levels,
)
from glowmlir.quantization.rescaling import (
    activation_bounds,
    add_left_shift,
    add_multipliers,
    largest_difference,
    mul_multiplier,
)

LANES = 16
"""Levels a step computes, as int32 lanes."""
VECTOR = VectorType(i32, [LANES])
KINDS = ("add", "sub", "mul")
"""The kinds the kernel takes (operands int8, of one shape or broadcast)."""
def mul_float_step(op: glowll.ElementwiseOp, fused: bool = False) -> FloatStep | None:
    """The float form of an int8 Mul's output step (`quantization.float_steps.float_step`)
    over every product its levels can make, |v| <= `largest_difference` of each operand
    multiplied (`fused`: the fused form first, `FloatStep.fused`); None where none is proved
    (the Mul keeps `requantize_bounded`)."""
    first, second, out_type = (v.type.element_type for v in (*op.inputs, op.dest))
    bound = largest_difference(first) * largest_difference(second)
    numbers = (*mul_multiplier(first, second, out_type), out_type.offset, -bound, bound)
    return (fused and float_step(*numbers, fused=True)) or float_step(*numbers)


def gate_operand(op: glowll.ElementwiseOp) -> int | None:
    """Which source of a Mul is a gate fixed along the other's innermost run (its shape the
    destination's with ones from some dimension on: a squeeze-and-excitation block's [N, C,
    1, 1] against [N, C, H, W]), the other of the destination's shape; None where neither is."""
    shapes = [glow.shape_of(v) for v in op.inputs]
    dest = glow.shape_of(op.dest)
    for gate, other in ((0, 1), (1, 0)):
        shape = shapes[gate]
        if (tuple(shapes[other]) == tuple(dest) and len(shape) == len(dest) and dest[-1] > 1
                and any(tuple(shape[:axis]) == tuple(dest[:axis]) and all(n == 1 for n in shape[axis:])
                        for axis in range(len(dest)))):
            return gate
    return None


def mul_float_gate(op: glowll.ElementwiseOp) -> FloatGate | None:
    """The fused multiply-add form of an int8 Mul by a gate fixed along x's runs
    (`quantization.float_steps.float_gate`, proved on every pair of an x level and a gate
    level against TFLite's Mul clamped to the fused activation); None where the Mul has no
    such gate (`gate_types`) or none is proved."""
    types = gate_types(op)
    if types is None:
        return None
    _, gate_type, x_type, out_type = types
    return float_gate(*mul_multiplier(x_type, gate_type, out_type), x_type.value_range, gate_type.value_range,
                      (x_type.offset, gate_type.offset, out_type.offset), activation_bounds(op, out_type))


def gate_types(op: glowll.ElementwiseOp) -> tuple[int, Any, Any, Any] | None:
    """(gate index, gate type, x type, output type) of a Mul by a gate fixed along x's runs
    (`gate_operand`), all int8; None where it has none."""
    gate = gate_operand(op)
    if gate is None:
        return None
    gate_type, x_type = (op.inputs[i].type.element_type for i in (gate, 1 - gate))
    out_type = op.dest.type.element_type
    if any(t.bitwidth != 8 for t in (gate_type, x_type, out_type)):
        return None
    return gate, gate_type, x_type, out_type


def produced_levels(buffer: SSAValue) -> tuple[int, int]:
    """The levels a quantized buffer can hold: its type's range, narrowed where one instruction
    alone writes the whole scratch buffer (every other use reads it) to that writer's clamp
    (`activation_bounds`: a fused relu or clip, a relu or clip kind) or, for a lookup table (or
    a fused one, `lookup_table`) of constant entries, to their least and greatest."""
    element_type = buffer.type.element_type
    low, high = element_type.value_range
    if not isinstance(buffer.owner, glowll.AllocOp):
        return low, high  # (an input, a weight, a view: any level of its type)
    users = [use.operation for use in buffer.uses]
    writers = [user for user in users if isinstance(user, glowll.InstructionOp) and user.dest is buffer]
    if len(writers) != 1 or not all(isinstance(user, glowll.InstructionOp) for user in users):
        return low, high
    writer = writers[0]
    table = writer.table if isinstance(writer, glowll.IntLookupTableOp) else getattr(writer, "lookup_table", None)
    if table is None:
        bounds = activation_bounds(writer, element_type)
    elif isinstance(table.owner, glowll.WeightOp) and table.owner.value is not None:
        entries = array_from_dense(table.owner.value)  # (a fused table's entries are what it writes)
        bounds = (int(entries.min()), int(entries.max()))
    else:
        return low, high
    return max(low, bounds[0]), min(high, bounds[1])


def add_float_form(op: glowll.ElementwiseOp, fused: bool = False) -> FloatAdd | None:
    """The float form of an int8 Add or Sub (`quantization.float_steps.float_add`), proved on
    every pair of levels of its two operands against TFLite's Add (`tflite_add_levels`, at
    most 256 x 256 pairs), its scales near the Add's real multipliers of each difference
    (M1 2^(s1 - 31) 2^20 Mo 2^(so - 31), the second negated for a Sub); `fused`: the fused
    form first (`FloatAdd.fused`); None where none is proved or an operand is not int8 (the
    op keeps `add_terms`)."""
    first, second, out_type = (v.type.element_type for v in (*op.inputs, op.dest))
    if any(t.bitwidth != 8 for t in (first, second, out_type)):
        return None
    multipliers = add_multipliers(first, second, out_type)
    left_shift = add_left_shift(first, second, out_type)
    pairs = [pair.ravel() for pair in np.meshgrid(np.arange(first.value_range[0], first.value_range[1] + 1),
                                                   np.arange(second.value_range[0], second.value_range[1] + 1),
                                                   indexing="ij")]
    subtract = op.kind.data == "sub"
    levels = tflite_add_levels(pairs[0] - first.offset, pairs[1] - second.offset, multipliers, left_shift,
                               out_type.offset, subtract)
    output_ratio = multipliers[2][0] * 2.0 ** (multipliers[2][1] - 31 + left_shift)
    first_ratio, second_ratio = (m * 2.0 ** (s - 31) * output_ratio for m, s in multipliers[:2])
    return float_add(*pairs, levels, (first_ratio, -second_ratio if subtract else second_ratio),
                     (first.offset, second.offset), fused)


def float_add_levels(b: KernelBuilder, op: glowll.ElementwiseOp, unit: int = 1,
                     nearest: NearestLevels = nearest_levels) -> Callable[[SSAValue, SSAValue], SSAValue]:
    """An Add's or Sub's level (before the clamp) of two vectors of levels by its `float_add`
    property (`FloatAdd.levels`, operation by operation): each level as a single times its
    scale, the two summed, plus the offset (of the sum's side of the threshold: a compare and
    a blend, only where the two offsets differ), rounded to nearest even and converted back
    (on AVX2 a conversion, a multiply each, two adds and a `vcvtps2dq` a vector of 8); a
    `FloatAdd.fused` form rint(fma(q1, a, fma(q2, b, offset))), two `llvm.fma` (a conversion
    each, two `vfmadd` and a `vcvtps2dq`). With `unit` (a power of two: the host's bytes,
    `byte_elementwise.HIGH_BYTE`), the vectors hold the levels times `unit` and the scales are
    divided by it: every product, and so every step, the same single. `nearest`: the
    rounding conversion (a unit's own, `requantization.NearestLevels`)."""
    form = FloatAdd.of(op.float_add)
    assert all(float(np.float32(scale / unit)) * unit == scale for scale in (form.first_scale, form.second_scale))

    def levels(x: SSAValue, y: SSAValue) -> SSAValue:
        singles = VectorType(f32, x.type.get_shape())

        def splat(number: float) -> SSAValue:
            return b.splat(b.f32(number), singles)

        def scaled(levels: SSAValue, scale: float) -> SSAValue:
            return b.fmul(b.emit(llvm.SIToFPOp(levels, singles)), splat(scale / unit), EXACT_FLOATS)

        if form.fused:
            inner = b.fma(b.emit(llvm.SIToFPOp(y, singles)), splat(form.second_scale / unit), splat(form.offset))
            return nearest(b, b.fma(b.emit(llvm.SIToFPOp(x, singles)), splat(form.first_scale / unit), inner), x.type)
        summed = b.fadd(scaled(x, form.first_scale), scaled(y, form.second_scale), EXACT_FLOATS)
        offset = splat(form.offset)
        if form.negative_offset != form.offset:
            below = b.emit(llvm.FCmpOp(summed, splat(form.threshold), "olt"))
            offset = b.select(below, splat(form.negative_offset), offset)
        return nearest(b, b.fadd(summed, offset, EXACT_FLOATS), x.type)
    return levels


def float_step_product(b: KernelBuilder, op: glowll.ElementwiseOp) -> Callable[[SSAValue, SSAValue], SSAValue]:
    """A Mul's level (before the clamp) of two vectors of levels by its `float_step`
    property: (a - a_offset)(b - b_offset), exact in int32, through `float_step_levels`."""
    first, second = (v.type.element_type for v in op.inputs)
    step = FloatStep.of(op.float_step)
    return lambda x, y: float_step_levels(b, b.int_mul(b.int_sub(x, b.int_value(first.offset, x.type)),
                                                       b.int_sub(y, b.int_value(second.offset, y.type))), step)


def float_gate_levels(b: KernelBuilder, op: glowll.ElementwiseOp, gate: SSAValue):
    """A Mul's level (before the clamp) of vectors of x levels by one gate level
    `gate` (an i32 scalar, loaded once a run) by its `float_gate` property (`FloatGate.levels`,
    operation by operation): once a run the slope a_g = f32(g - zg) x scale and a mask s of
    the gate's sign (0 where g > zg, else -1), then per vector d = x - zx, as singles, times
    a_g plus the offset of the product's side in one `llvm.fma`, and a rounding conversion
    (`nearest_levels`). The side is the sign of d xor s (an xor and a blend on its sign bit;
    d = 0 takes the gate's zero side, as the model does; neither where the two offsets are
    one): on AVX2 `vpmovsxbd`, `vpaddd`, `vpxor`, `vcvtdq2ps`, `vblendvps`, `vfmadd`,
    `vcvtps2dq` a vector of 8, against the float step's `vpmulld` and a multiply and an add
    more (and a compare of d itself LLVM folds into one of the int8 levels, whose mask it
    then widens: three shuffles more)."""
    form = FloatGate.of(op.float_gate)
    gate_index = gate_operand(op)
    gate_type, x_type = (op.inputs[i].type.element_type for i in (gate_index, 1 - gate_index))
    singles = VectorType(f32, [LANES])
    centred_gate = b.int_sub(gate, b.int_value(gate_type.offset, gate.type))
    slopes = b.splat(b.fmul(b.emit(llvm.SIToFPOp(centred_gate, f32)), b.f32(form.scale), EXACT_FLOATS), singles)
    offsets = [b.splat(b.f32(offset), singles) for offset in (form.offset, form.negative_offset)]
    zero_point = b.int_value(x_type.offset, VECTOR)

    def fma(centred: SSAValue, offset: SSAValue) -> SSAValue:
        return b.fma(b.emit(llvm.SIToFPOp(centred, singles)), slopes, offset)
    if form.negative_offset == form.offset:
        return lambda x: nearest_levels(b, fma(b.int_sub(x, zero_point), offsets[0]), x.type)
    at_most_zero = b.int_compare("sle", centred_gate, b.int_value(0, gate.type))
    gate_sign = b.splat(b.emit(llvm.SExtOp(at_most_zero, i32)), VECTOR)

    def levels(x: SSAValue) -> SSAValue:
        centred = b.int_sub(x, zero_point)
        negative = b.int_compare("slt", b.emit(llvm.XOrOp(centred, gate_sign)), b.int_value(0, VECTOR))
        return nearest_levels(b, fma(centred, b.select(negative, offsets[1], offsets[0])), x.type)
    return levels


def emit_elementwise(b: KernelBuilder, op: glowll.ElementwiseOp, view,
                     contiguous: Callable[[list[int], list[View], tuple[int, int]], bool] | None = None) -> None:
    """The op, its views merged (`loop_skeletons.merge_dimensions`): strided views level by level
    (the exact step); contiguous ones by `contiguous` where a backend gives one (the merged shape,
    views and the activation's bounds; it says whether it emitted them), else `LANES` levels a
    step on int32 lanes."""
    from glowmlir.lowering.quantized_kernels import binary_level  # (that module imports the emitters)

    dest, sources = loop_skeletons.elementwise_views(op, view)
    shape, views = loop_skeletons.merge_dimensions(dest, sources)
    low, high = activation_bounds(op, op.dest.type.element_type)
    if views[0].strides[-1] != 1 or any(v.strides[-1] not in (0, 1) for v in views[1:]):
        level = binary_level(b, op)  # level by level: the exact step
        loop_skeletons.emit_strided_map(b, dest, sources, lambda v: b.truncate(
            b.clamp(level(*map(b.sign_extend, v)), low, high), dest.element_type))
        return
    if contiguous is not None and contiguous(shape, views, (low, high)):
        return
    gate_index = gate_operand(op) if getattr(op, "float_gate", None) is not None else None
    *outer, inner = shape
    if gate_index is not None and views[1 + gate_index].strides[-1] == 0:
        with b.loops(outer) as indices:
            gate = b.sign_extend(b.load(views[1 + gate_index], [*indices, 0]))
            emit_float_gate_run(b, op, views, list(indices), gate, inner, (low, high))
        return
    if getattr(op, "float_step", None) is not None:
        level = float_step_product(b, op)
    elif getattr(op, "float_add", None) is not None:
        level = float_add_levels(b, op)
    else:  # (and a float_gate Mul whose gate is not along the merged run: the exact step)
        level = binary_level(b, op)

    def vector_at(indices: list[Index], broadcast: dict[int, SSAValue], first: Index, count: int) -> None:
        loaded = None if count == LANES else [lane < count for lane in range(LANES)]
        value = level(*(broadcast[i] if i in broadcast else widened_levels(b, source, [*indices, first], loaded)
                        for i, source in enumerate(views[1:])))
        store_levels(b, value, views[0], [*indices, first], loaded, (low, high))

    with b.loops(outer) as indices:
        broadcast = {i: b.splat(b.sign_extend(b.load(source, [*indices, 0])), VECTOR)
                     for i, source in enumerate(views[1:]) if source.strides[-1] == 0}
        in_runs(b, inner, LANES, functools.partial(vector_at, list(indices), broadcast))


def emit_float_gate_run(b: KernelBuilder, op: glowll.ElementwiseOp, views: list[View], indices: list[Index],
                        gate: SSAValue, inner: int, bounds: tuple[int, int]) -> None:
    """One run of `inner` levels of a Mul by its `float_gate` (`float_gate_levels`), `gate`
    the run's gate level (an i32 scalar), `views` (destination first) merged as
    `emit_elementwise`'s, the gate's along the run; `LANES` levels a step (the last masked),
    clamped to `bounds`. (Also a backend's fallback, a run at a time: `gate_products`.)"""
    levels = float_gate_levels(b, op, gate)
    x_view = views[2 - gate_operand(op)]

    def vector_at(first: Index, count: int) -> None:
        loaded = None if count == LANES else [lane < count for lane in range(LANES)]
        store_levels(b, levels(widened_levels(b, x_view, [*indices, first], loaded)), views[0], [*indices, first],
                     loaded, bounds)
    in_runs(b, inner, LANES, vector_at)


def widened_levels(b: KernelBuilder, source: View, at: list[Index], loaded: list[bool] | None) -> SSAValue:
    """`LANES` int8 levels of `source` from `at` (the lanes of `loaded` only, where given) as int32."""
    return b.emit(llvm.SExtOp(load_vector(b, source, at, LANES, loaded), VECTOR))


def store_levels(b: KernelBuilder, value: SSAValue, dest: View, at: list[Index], loaded: list[bool] | None,
                 bounds: tuple[int, int]) -> None:
    """int32 lanes `value` clamped to `bounds`, narrowed to `dest`'s storage and stored at `at`."""
    clamped = b.clamp(value, b.int_value(bounds[0], VECTOR), b.int_value(bounds[1], VECTOR))
    store_vector(b, b.truncate(clamped, VectorType(dest.element_type, [LANES])), dest, at, loaded)
