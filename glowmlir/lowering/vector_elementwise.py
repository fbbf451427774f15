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
about 1.9x float (the float Add alone) to about 1.1x.

A Mul by a gate fixed along x's runs (a squeeze-and-excitation block's channel Mul,
`gate_operand`) with a proved fused multiply-add form (`mul_float_gate`, the op's
`float_gate` property, `float_gate_levels`; targets with an fma only) takes it instead of
the float step: the gate's slope once a run, then per level rint(fma(x - zx, a_g, offset of
the product's side)), no `vpmulld`; about -10% on the PP-OCR-cls-style net's SE Mul (AVX2,
docs/quantization.md).

Such a Mul with a proved int16 form (`mul_int16_gate`, the op's `int16_gate` property,
`int16_gate_levels`; AVX2 only) takes it before the fma form: 32 levels a step in int16
lanes, (`vpmulhrsw`(256 x, k_g) + the offset of x's side) >> r_g, k_g, the offsets and r_g
a gate level's row of a table, packed by `vpacksswb`: int8 / float of the SE Mul 1.3 ->
0.55-0.75 (docs/quantization.md, stop 57)."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, VectorType, f32, i8, i16, i32
from xdsl.ir import SSAValue

from glowmlir.dialects import glow, glowll
from glowmlir.lowering import loop_skeletons
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.requantization import EXACT_FLOATS, float_step_levels, nearest_levels
from glowmlir.lowering.vector_columns import in_runs, load_vector, store_vector
from glowmlir.quantization.float_steps import (
    INT8_LEVELS,
    FloatAdd,
    FloatGate,
    FloatStep,
    Int16Gate,
    float_add,
    float_gate,
    float_step,
    int16_gate,
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


def gate_types(op: glowll.ElementwiseOp):
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


def mul_int16_gate(op: glowll.ElementwiseOp) -> Int16Gate | None:
    """The int16 form of an int8 Mul by a gate fixed along x's runs
    (`quantization.float_steps.int16_gate`, proved on every pair of an x level and each of
    the 256 gate levels against TFLite's Mul clamped to the fused activation); None where the
    Mul has no such gate or none is proved."""
    types = gate_types(op)
    if types is None:
        return None
    _, gate_type, x_type, out_type = types
    return int16_gate(*mul_multiplier(x_type, gate_type, out_type), x_type.value_range,
                      (x_type.offset, gate_type.offset, out_type.offset), activation_bounds(op, out_type))


def add_float_form(op: glowll.ElementwiseOp) -> FloatAdd | None:
    """The float form of an int8 Add or Sub (`quantization.float_steps.float_add`), proved on
    every pair of levels of its two operands against TFLite's Add (`tflite_add_levels`, at
    most 256 x 256 pairs), its scales near the Add's real multipliers of each difference
    (M1 2^(s1 - 31) 2^20 Mo 2^(so - 31), the second negated for a Sub); None where none is
    proved or an operand is not int8 (the op keeps `add_terms`)."""
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
                     (first.offset, second.offset))


def float_add_levels(b: KernelBuilder, op: glowll.ElementwiseOp) -> Callable[[SSAValue, SSAValue], SSAValue]:
    """An Add's or Sub's level (before the clamp) of two vectors of levels by its `float_add`
    property (`FloatAdd.levels`, operation by operation): each level as a single times its
    scale, the two summed, plus the offset (of the sum's side of the threshold: a compare and
    a blend, only where the two offsets differ), rounded to nearest even and converted back
    (on AVX2 a conversion, a multiply each, two adds and a `vcvtps2dq` a vector of 8)."""
    form = FloatAdd.of(op.float_add)

    def levels(x: SSAValue, y: SSAValue) -> SSAValue:
        singles = VectorType(f32, x.type.get_shape())

        def splat(number: float) -> SSAValue:
            return b.splat(b.f32(number), singles)

        def scaled(levels: SSAValue, scale: float) -> SSAValue:
            return b.fmul(b.emit(llvm.SIToFPOp(levels, singles)), splat(scale), EXACT_FLOATS)

        summed = b.fadd(scaled(x, form.first_scale), scaled(y, form.second_scale), EXACT_FLOATS)
        offset = splat(form.offset)
        if form.negative_offset != form.offset:
            below = b.emit(llvm.FCmpOp(summed, splat(form.threshold), "olt"))
            offset = b.select(below, splat(form.negative_offset), offset)
        return nearest_levels(b, b.fadd(summed, offset, EXACT_FLOATS), x.type)
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


INT16_STEP = 32
"""Levels an `int16_gate` step computes: a ymm register of int8 levels, two of int16."""
INT16_LANES = VectorType(i16, [INT16_STEP // 2])
HIGH_PRODUCTS = "llvm.x86.avx2.pmul.hr.sw"
"""`vpmulhrsw` of 16 int16 lanes: (a b + 2^14) >> 15."""
PACK_SATURATED = "llvm.x86.avx2.packsswb"
"""`vpacksswb`: two vectors of 16 int16 to 32 int8, saturated, each 128-bit lane its own."""


def bytes_up(b: KernelBuilder, x: SSAValue) -> tuple[SSAValue, SSAValue]:
    """256 x of each of 32 int8 levels as two vectors of 16 int16 (`vpunpcklbw`,
    `vpunpckhbw` with zero bytes below: each 128-bit lane's low and high eight levels, the
    order `vpacksswb` puts back)."""
    zero = b.int_value(0, x.type)
    halves = []
    for high in (0, 1):
        order = [element for lane in (0, 16) for i in range(8)
                 for element in (lane + 8 * high + i, INT16_STEP + lane + 8 * high + i)]
        interleaved = b.emit(llvm.ShuffleVectorOp(zero, x, DenseArrayBase.from_list(i32, order), x.type))
        halves.append(b.bitcast(interleaved, INT16_LANES))
    return halves[0], halves[1]


def int16_gate_levels(b: KernelBuilder, op: glowll.ElementwiseOp,
                      bounds: tuple[int, int]) -> Callable[[SSAValue], Callable]:
    """A Mul's int8 levels (clamped to `bounds`) of a vector of 32 int8 x levels by a gate
    level (an i32 scalar, loaded once a run) by its `int16_gate` property (`Int16Gate.levels`,
    operation by operation): the table's four columns stored once a call in a stack array
    (k, the two sides' offsets, the shift r of each gate level), the gate level's row loaded
    once a run; then per 32 levels 256 x (`bytes_up`), `vpmulhrsw` by k, the offset of x's
    side of zx (`vpcmpgtw`, `vpblendvb`; none where zx is -128) added, the sum shifted right
    by r, clamped (only inside int8) and narrowed (`vpacksswb`): on AVX2 fifteen
    instructions, against `float_gate_levels`' about forty. Gives the function of a gate
    level that gives the levels' function."""
    form = Int16Gate.of(op.int16_gate)
    x_type = op.inputs[1 - gate_operand(op)].type.element_type
    columns = View.contiguous(b.alloca(form.table.size, i16, alignment=32), [4, 256], element_type=i16)
    for column in range(4):
        store_vector(b, b.lane_constants([int(n) for n in form.table[:, column]], i16), columns, [column, 0])
    low, high = bounds

    def of_gate(gate: SSAValue) -> Callable[[SSAValue], SSAValue]:
        row = b.as_index(b.int_add(gate, b.int_value(128, gate.type)))
        k, nonnegative, negative, shift = (b.splat(b.load(columns, [column, row]), INT16_LANES) for column in range(4))

        def level(scaled: SSAValue) -> SSAValue:
            products = b.emit(llvm.CallIntrinsicOp(HIGH_PRODUCTS, [scaled, k], [INT16_LANES]))
            offsets = nonnegative
            if x_type.offset > INT8_LEVELS[0]:  # 256 x > 256 zx - 1, in int16
                ahead = b.int_compare("sgt", scaled, b.int_value(256 * x_type.offset - 1, INT16_LANES))
                offsets = b.select(ahead, nonnegative, negative)
            value = b.shift_right(b.int_add(products, offsets), shift)
            if (low, high) != INT8_LEVELS:
                value = b.clamp(value, b.int_value(low, INT16_LANES), b.int_value(high, INT16_LANES))
            return value

        def levels(x: SSAValue) -> SSAValue:
            return b.emit(llvm.CallIntrinsicOp(PACK_SATURATED, [level(half) for half in bytes_up(b, x)],
                                               [VectorType(i8, [INT16_STEP])]))
        return levels
    return of_gate


def emit_elementwise(b: KernelBuilder, op: glowll.ElementwiseOp, view) -> None:
    from glowmlir.lowering.quantized_kernels import binary_level  # (that module imports the emitters)

    dest, sources = loop_skeletons.elementwise_views(op, view)
    shape, views = loop_skeletons.merge_dimensions(dest, sources)
    low, high = activation_bounds(op, op.dest.type.element_type)
    storage = dest.element_type
    if views[0].strides[-1] != 1 or any(v.strides[-1] not in (0, 1) for v in views[1:]):
        level = binary_level(b, op)  # level by level: the exact step
        loop_skeletons.emit_strided_map(b, dest, sources, lambda v: b.truncate(
            b.clamp(level(*map(b.sign_extend, v)), low, high), storage))
        return
    int16 = getattr(op, "int16_gate", None) is not None
    gate_index = gate_operand(op) if int16 or getattr(op, "float_gate", None) is not None else None
    gated = gate_index is not None and views[1 + gate_index].strides[-1] == 0
    if getattr(op, "float_step", None) is not None:
        level = float_step_product(b, op)
    elif getattr(op, "float_add", None) is not None:
        level = float_add_levels(b, op)
    else:  # (and a float_gate Mul whose gate is not along the merged run: the exact step)
        level = binary_level(b, op)
    *outer, inner = shape
    int16_levels = int16_gate_levels(b, op, (low, high)) if gated and int16 else None
    lanes = INT16_STEP if int16_levels else LANES

    def levels(source: View, at: list[Index], loaded: list[bool] | None) -> SSAValue:
        return b.emit(llvm.SExtOp(load_vector(b, source, at, LANES, loaded), VECTOR))

    def vector_at(indices: list[Index], broadcast: dict[int, SSAValue], first: Index, count: int) -> None:
        loaded = None if count == lanes else [lane < count for lane in range(lanes)]
        if int16_levels:  # int8 levels of int16 lanes, clamped
            value = broadcast[gate_index](load_vector(b, views[2 - gate_index], [*indices, first], lanes, loaded))
            store_vector(b, value, views[0], [*indices, first], loaded)
            return
        if gated:  # the gate's level made `broadcast`'s function of x
            value = broadcast[gate_index](levels(views[2 - gate_index], [*indices, first], loaded))
        else:
            value = level(*(broadcast[i] if i in broadcast else levels(source, [*indices, first], loaded)
                            for i, source in enumerate(views[1:])))
        clamped = b.clamp(value, b.int_value(low, value.type), b.int_value(high, value.type))
        store_vector(b, b.truncate(clamped, VectorType(storage, [LANES])), views[0], [*indices, first], loaded)

    with b.loops(outer) as indices:
        if gated:
            gate = b.sign_extend(b.load(views[1 + gate_index], [*indices, 0]))
            broadcast = {gate_index: int16_levels(gate) if int16_levels else float_gate_levels(b, op, gate)}
        else:
            broadcast = {i: b.splat(b.sign_extend(b.load(source, [*indices, 0])), VECTOR)
                         for i, source in enumerate(views[1:]) if source.strides[-1] == 0}
        in_runs(b, inner, lanes, functools.partial(vector_at, list(indices), broadcast))
