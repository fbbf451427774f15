"""Int8 kernels on Helium, the M-profile vector extension (MVE: Cortex-M55).

Written as LLVM vector IR on `<4 x i32>`, which the Arm backend selects to MVE directly:
a sign-extending load of four int8 is `VLDRB.S32`, a weight broadcast over the lanes and
multiplied into an accumulator is `VMLA.I32 q, q, r`, a masked load or store a predicated
`VLDRB`/`VSTRB`, and counted loops become low-overhead loops (`DLS`/`LE`).

* Convolution of stride 1 along its rows: `vector_columns`' kernel with `Int8Columns`, 4
  accumulators of 4 int32 lanes (4 output channels x 4 columns, 2 x 8 or 1 x 16), the
  filter int16 with its zero point subtracted (`lowering.vector_layout`), requantization
  on the vectors (`VQRDMULH`).
* `emit_fully_connected`: each output a plain dot product of int8 rows, which LLVM
  vectorizes into `VMLAVA.S8` (16 products an instruction).
* `emit_elementwise`: int8 Add, Sub and Mul, of operands of one shape or broadcast, four
  int32 lanes at a time; `emit_softmax`: int8 softmax, its exps on four lanes.

Every output is the level the generic int8 kernel computes (the same int32 sums, the same
rounding), bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import VectorType, i8, i32
from xdsl.ir import Attribute, SSAValue

from glowmlir.backends.arm_mve.layout import IM2COL
from glowmlir.backends.arm_mve.layout import TILE as HELIUM
from glowmlir.dialects import glow, glowll
from glowmlir.lowering import vector_columns
from glowmlir.lowering.fused_tables import looked_up
from glowmlir.lowering.int8_sums import level, start, weight_offset_correction
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View, is_zero
from glowmlir.lowering.loop_skeletons import ArithmeticDomain, GlobalPool, elementwise_views, merge_dimensions
from glowmlir.lowering.requantization import requantize, shift_split
from glowmlir.quantization.rescaling import (
    ADD_LEFT_SHIFT,
    activation_bounds,
    add_multipliers,
    mul_multiplier,
    softmax_fraction_bits,
    softmax_parameters,
)

if TYPE_CHECKING:  # the int8 domain's module picks these kernels
    from glowmlir.lowering.quantized_kernels import QuantizedArithmetic

"""The microkernel of an unpooled, ungrouped convolution as dot products (`emit_im2col_convolution`)."""

VECTOR = VectorType(i32, [HELIUM.lanes])
"""One Q register as int32 lanes."""


class Int8Columns(vector_columns.Int8ColumnArithmetic):
    """int8 inputs widened to int32 lanes of Q registers, less the input zero point unless the
    pass folded it into the bias; int16 weights (zero point subtracted); requantized on the
    vectors."""

    lanes, accumulators, vector = HELIUM.lanes, HELIUM.accumulators, VECTOR
    domain: QuantizedArithmetic
    gathers_strided_columns = True
    """A strided vector of input columns is one MVE gather (`gather_columns`)."""

    def input(self, view: View, indices: list[Index], loaded: list[bool] | SSAValue | None, stride: int) -> SSAValue:
        """`Int8ColumnArithmetic.input`, a strided vector gathered. (A gather reads the lanes
        not `loaded` as 0: Helium folds the zero point only where no tap is in the padding.)"""
        if not (stride > 1 and self.gathers_strided_columns):
            return super().input(view, indices, loaded, stride)
        folded = self.op.folded_input_offset is not None
        offset = self.domain.input_offset
        widened = gather_columns(self.b, view, indices, loaded, stride)
        if folded or is_zero(offset):
            return widened
        centred = self.b.int_sub(widened, self.b.lanewise(offset, VECTOR))
        if loaded is None or all(loaded):
            return centred
        return self.b.select(self.b.lane_mask(loaded), centred, self.b.integer(0, VECTOR))

    def output(self, channel: Index, total: SSAValue, storage: Attribute) -> SSAValue:
        if self.domain.output(channel, storage) is None:  # accumulators kept (a fused max pool)
            return total
        levels = self.b.truncate(requantized(self.b, self.domain, channel, total), VectorType(storage, [self.lanes]))
        return looked_up(self.b, self.domain.lookup_table, levels)


def gather_columns(b: KernelBuilder, view: View, indices: list[Index], loaded: list[bool] | None,
                   stride: int) -> SSAValue:
    """Four int8 elements of `view` `stride` apart from `indices` (its last index, the first
    lane's column, may be negative when masked), sign-extended into int32 lanes by one gather
    load from a base register and a constant vector of byte offsets (`VLDRB.S32 q, [r, q]`).
    With `loaded`, only those lanes are read (a predicated gather): the others are 0. (A
    load of `stride` times the lanes and a shuffle took three instructions a vector.)"""
    base = vector_columns.column_address(b, view, indices)
    offsets = b.lane_constants([lane * stride for lane in range(HELIUM.lanes)], i32)
    # memory element bits, offset shift, unsigned
    arguments = [base, offsets, b.integer(8), b.integer(0), b.integer(0)]
    if loaded is None or all(loaded):
        return b.emit(llvm.CallIntrinsicOp("llvm.arm.mve.vldr.gather.offset.v4i32.p0.v4i32", arguments, [VECTOR]))
    return b.emit(llvm.CallIntrinsicOp("llvm.arm.mve.vldr.gather.offset.predicated.v4i32.p0.v4i32.v4i1",
                                       [*arguments, b.lane_mask(loaded)], [VECTOR]))


def requantized(b: KernelBuilder, domain: QuantizedArithmetic, channel: Index, total: SSAValue) -> SSAValue:
    """`clamp(requantize(total, M, S) + y_offset)` lane by lane (`requantize_lanes`)."""
    multiplier, shift = domain.requantization.of(channel)
    return b.clamp(b.int_add(requantize_lanes(b, total, multiplier, shift), b.lanewise(domain.output_offset, VECTOR)),
                   b.lanewise(domain.low, VECTOR), b.lanewise(domain.high, VECTOR))


def requantize_lanes(b: KernelBuilder, total: SSAValue, multiplier: int | SSAValue,
                     shift: int | SSAValue) -> SSAValue:
    """`requantization.requantize` on int32 lanes: the doubling high multiply is `VQRDMULH`
    (the same rounding, and no lane can saturate: M > 0), the division by a power of two
    `rounding_divide_by_power_of_two`."""
    left, right = shift_split(b, shift)
    vector = total.type
    if not (isinstance(left, int) and left == 0):
        total = b.shift_left(total, left if isinstance(left, int) else b.splat(left, vector))
    return rounding_divide_by_power_of_two(b, high_mult(b, total, multiplier), right)


def rounding_divide_by_power_of_two(b: KernelBuilder, value: SSAValue, exponent: int | SSAValue) -> SSAValue:
    """`requantization.divide_by_power_of_two` (rounded half away from zero) in three Helium
    instructions, as CMSIS-NN's `arm_divide_by_power_of_two_mve`: a negative lane less one
    (`VQADD`: INT_MIN stays, and divides exactly), then a shift right rounding half up
    (`VRSHR`, `VRSHL` by a run-time exponent; exact, no carry out). The generic form took
    seven and two constants."""
    if isinstance(exponent, int) and exponent == 0:
        return value
    vector = value.type
    if isinstance(exponent, int):  # any exponent > 0: its negation's sign bit is set
        fixup = b.shift_right(value, 31)
    else:  # exponent 0 leaves the lane as it is
        negated = b.splat(b.int_sub(0, exponent), vector)
        fixup = b.shift_right(b.int_and(value, negated), 31)
    fixed = b.emit(llvm.CallIntrinsicOp("llvm.sadd.sat.v4i32", [value, fixup], [vector]))
    if isinstance(exponent, int):  # signed
        return b.emit(llvm.CallIntrinsicOp("llvm.arm.mve.vrshr.imm.v4i32", [fixed, b.integer(exponent), b.integer(0)],
                                           [vector]))
    # not saturating, rounding, signed
    return b.emit(llvm.CallIntrinsicOp("llvm.arm.mve.vshl.vector.v4i32.v4i32",
                                       [fixed, negated, b.integer(0), b.integer(1), b.integer(0)], [vector]))


def emit_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view) -> None:
    if op.microkernel.data == IM2COL:
        emit_im2col_convolution(b, domain, op, view)
    else:
        vector_columns.emit_convolution(b, domain, op, view, Int8Columns)


def writes_over_input(op: glowll.ConvolutionOp) -> bool:
    """Whether the kernel may write its output over its input (`glowll-convolve-in-place`):
    the unpooled im2col product copies each output pixel's window (a 1x1 one: the pixel's
    channels) to its stack patch before it stores that pixel's outputs, and later pixels
    read later pixels only, so output (o, p) may lie on input (o, p) (NCHW, no more output
    channels). The column kernel reads whole rows of columns across channels: not it."""
    return op.microkernel is not None and op.microkernel.data == IM2COL and op.pool is None


# ----------------------------------------------------------------------------- elementwise


def emit_elementwise(b: KernelBuilder, op: glowll.ElementwiseOp, view) -> None:
    """An int8 Add, Sub or Mul as TFLite's (and CMSIS-NN's `arm_elementwise_add_s8` and
    `arm_elementwise_mul_s8` on MVE), four int32 lanes at a time, over the instruction's loops
    (`loop_skeletons.merge_dimensions`: operands of one shape are one loop) with the innermost
    in vectors, its last partial vector's lanes predicated. An operand broadcast along the
    innermost loop (a [1] scalar; a squeeze-excitation's [N, C, 1, 1] scale of [N, C, H, W]) is
    read and rescaled once per run of it, on one level, then splat over the lanes.

    Add and Sub: each input less its zero point, shifted left by `ADD_LEFT_SHIFT` and
    requantized to twice the larger input scale, the sum (or difference) requantized to the
    output's; Mul: the product of the inputs less their zero points requantized by
    `first x second / output` scale (`mul_multiplier`). Then the output zero point, clamped
    to the fused activation's bounds."""
    dest, sources = elementwise_views(op, view)
    shape, (dest, *sources) = merge_dimensions(dest, sources)
    kind = op.kind.data
    types = [view_type.element_type for view_type in (op.inputs[0].type, op.inputs[1].type)]
    out = op.dest.type.element_type
    low, high = activation_bounds(op, out)
    if kind == "mul":
        multiplier, shift = mul_multiplier(*types, out)

        def operand(levels: SSAValue, source: int) -> SSAValue:
            return b.int_sub(levels, types[source].offset)

        def combined(first: SSAValue, second: SSAValue) -> SSAValue:
            return rescaled(b.int_mul(first, second), multiplier, shift)
    else:
        *inputs, (mo, so) = add_multipliers(*types, out)
        combine = b.int_add if kind == "add" else b.int_sub

        def operand(levels: SSAValue, source: int) -> SSAValue:
            return rescaled(b.shift_left(b.int_sub(levels, types[source].offset), ADD_LEFT_SHIFT), *inputs[source])

        def combined(first: SSAValue, second: SSAValue) -> SSAValue:
            return rescaled(combine(first, second), mo, so)

    def rescaled(value: SSAValue, multiplier: int, shift: int) -> SSAValue:
        """`requantize` of a level (a broadcast operand's) or of the lanes."""
        if isinstance(value.type, VectorType):
            return requantize_lanes(b, value, multiplier, shift)
        return requantize(b, value, multiplier, shift)

    lanes, run = HELIUM.lanes, shape[-1]
    with b.loops(shape[:-1]) as outer:
        # the operands broadcast along the run, read once for it
        steady = [b.splat(operand(b.sign_extend(b.load(source, [*outer, 0])), index), VECTOR)
                  if source.strides[-1] == 0 else None for index, source in enumerate(sources)]

        def vector_at(x: Index, loaded: list[bool] | None) -> None:
            first, second = (
                value if value is not None else operand(b.emit(llvm.SExtOp(
                    vector_columns.load_vector(b, source, [*outer, x], lanes, loaded), VECTOR)), index)
                for index, (source, value) in enumerate(zip(sources, steady)))
            level = b.clamp(b.int_add(combined(first, second), b.lanewise(out.offset, VECTOR)),
                            b.lanewise(low, VECTOR), b.lanewise(high, VECTOR))
            vector_columns.store_vector(b, b.truncate(level, VectorType(dest.element_type, [lanes])), dest,
                                        [*outer, x], loaded)

        in_vectors(b, run, lanes, vector_at)


def in_vectors(b: KernelBuilder, size: int, lanes: int, step: Callable[..., Sequence[SSAValue] | None],
               carried: Sequence[SSAValue] = ()) -> list[SSAValue]:
    """`step(x, loaded, *carried)` over vectors of `lanes` elements from 0 to `size`: the
    whole vectors in a loop (`loaded` None), then the last partial one (`loaded` its lanes,
    for predicated loads and stores); `step` returns the next carried values, and so does
    this, after the last."""
    with b.loop(0, size // lanes, carried=carried) as i:
        i.next(*(step(b.mul(i.index, lanes), None, *i.carried) or ()))
    results = i.results
    if size % lanes:
        results = list(step(size - size % lanes, [lane < size % lanes for lane in range(lanes)], *results) or ())
    return results


# ----------------------------------------------------------------------------- softmax


def emit_softmax(b: KernelBuilder, op: glowll.SoftMaxOp, view) -> None:
    """An int8 softmax over the last axis as `arm_softmax_s8` (the generic kernel,
    `quantized_kernels.emit_quantized_softmax`), on vectors. Per row: its maximum 16 levels at
    a time (`VMAX.S8`, one `VMAXV` at the end); each level's distance to it, its exp
    (`exp_on_negative_values` on four int32 lanes) summed in Q12.19 (`VADDV` at the end); the
    reciprocal of the sum once (`softmax_reciprocal`, on scalars); then each exp again, times
    the reciprocal, as an int8 level. A partial last vector is predicated. The doubling high
    multiply is `VQRDMULH` (`high_mult`), the division by a power of two
    `rounding_divide_by_power_of_two`: the same numbers as the generic kernel's."""
    # the generic kernel's module picks this one
    from glowmlir.lowering.quantized_kernels import ACCUMULATION_BITS, exp_on_negative_values, softmax_reciprocal

    dest, src = view(op.dest), view(op.input)
    multiplier, shift, diff_min = softmax_parameters(op.input.type.element_type)
    out = op.dest.type.element_type
    low, high = out.value_range
    size = dest.shape[-1]
    rows = int(np.prod(dest.shape[:-1]))
    dest, src = dest.reshaped((rows, size), (size, 1)), src.reshaped((rows, size), (size, 1))
    levels = VectorType(i8, [MAXIMUM_LANES])
    with b.loop(0, rows) as row:
        def maximum(x: Index, loaded: list[bool] | None, largest: SSAValue) -> list[SSAValue]:
            return [b.int_max(largest, vector_columns.load_vector(b, src, [row.index, x], MAXIMUM_LANES, loaded,
                                                                  -128))]

        (largest,) = in_vectors(b, size, MAXIMUM_LANES, maximum, [b.integer(-128, levels)])
        largest = b.splat(b.sign_extend(b.emit(llvm.CallIntrinsicOp(
            f"llvm.vector.reduce.smax.v{MAXIMUM_LANES}i8", [largest], [i8]))), VECTOR)

        def exp_at(x: Index, loaded: list[bool] | None) -> tuple[SSAValue, SSAValue]:
            """(whether each lane counts, the exp of its distance to the maximum in Q0.31)."""
            distance = b.int_sub(b.emit(llvm.SExtOp(
                vector_columns.load_vector(b, src, [row.index, x], HELIUM.lanes, loaded), VECTOR)), largest)
            counts = b.int_compare("sge", distance, diff_min)
            if loaded is not None:
                counts = b.int_and(counts, b.lane_mask(loaded))
            scaled = high_mult(b, b.int_mul(distance, 1 << shift), multiplier)
            return counts, exp_on_negative_values(b, scaled, high_mult, rounding_divide_by_power_of_two)

        def add(x: Index, loaded: list[bool] | None, total: SSAValue) -> list[SSAValue]:
            counts, value = exp_at(x, loaded)
            return [b.int_add(total, b.select(counts, rounding_divide_by_power_of_two(b, value, ACCUMULATION_BITS),
                                              b.integer(0, VECTOR)))]

        (total,) = in_vectors(b, size, HELIUM.lanes, add, [b.integer(0, VECTOR)])
        total = b.emit(llvm.CallIntrinsicOp("llvm.vector.reduce.add.v4i32", [total], [i32]))
        scale, exponent = softmax_reciprocal(b, total, softmax_fraction_bits(out))

        def output(x: Index, loaded: list[bool] | None) -> None:
            counts, value = exp_at(x, loaded)
            quotient = rounding_divide_by_power_of_two(b, high_mult(b, value, scale), exponent)
            level = b.clamp(b.select(counts, b.int_add(quotient, out.offset), b.integer(out.offset, VECTOR)),
                            low, high)
            vector_columns.store_vector(b, b.truncate(level, VectorType(dest.element_type, [HELIUM.lanes])), dest,
                                        [row.index, x], loaded)

        in_vectors(b, size, HELIUM.lanes, output)


MAXIMUM_LANES = 16
"""int8 levels a softmax compares at a time for its row's maximum (one Q register)."""


def high_mult(b: KernelBuilder, value: SSAValue, factor: int | SSAValue) -> SSAValue:
    """`quantized_kernels.doubling_high_mult` of int32 lanes by lanes, by a number or by a
    scalar value in every lane: `VQRDMULH`. Its rounding is the same (half up: the generic
    nudge of 1 - 2^30 to a negative product, then a division truncating toward zero, rounds
    half up too), and so is its one saturation (INT32_MIN x INT32_MIN)."""
    factors = b.int_value(b.lanewise(factor, value.type), value.type)
    return b.emit(llvm.CallIntrinsicOp("llvm.arm.mve.vqrdmulh.v4i32", [value, factors], [value.type]))


# ----------------------------------------------------------------------------- fully connected


def emit_fully_connected(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.FullyConnectedOp, view) -> None:
    """Each output one dot product of int8 rows (`dot_products`)."""
    dest, src, weights, bias = view(op.dest), view(op.input), view(op.weights), view(op.bias)
    with b.loop(0, dest.shape[0]) as m:
        def store(n: Index, total: SSAValue, m: Index = m.index) -> None:
            b.store(domain.output(n, dest.element_type)(total), dest, [m, n])

        dot_products(b, domain, op, src, m.index, weights, bias, store)


DOT_PRODUCT_ROWS = 4
"""Rows of weights `dot_products` takes at a time: each vector of 16 input levels is loaded
once for all of them."""


def dot_products(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.FullyConnectedOp | glowll.ConvolutionOp,
                 src: View, m: Index, weights: View, bias: View, store: Callable[[Index, SSAValue], None]) -> None:
    """For each row n of `weights`, `store(n, sum)`: its bias plus the dot product of
    `src[m]` and `weights[n]`, written plainly so that LLVM vectorizes it for MVE into
    VMLAVA.S8 (16 products an instruction, the tail predicated), `DOT_PRODUCT_ROWS` rows at a
    time (then one at a time): with the input offset folded, the levels as they are and
    `- w_offset * sum x` once per row; else the generic products with their zero points."""
    depth = src.shape[1]
    folded = op.folded_input_offset is not None
    correction = weight_offset_correction(b, domain, op, src, m)
    # An opaque trip count: LLVM would unroll a short constant one whole and pair up int32
    # lanes (4 products an instruction) instead of vectorizing the loop on int8 (16).
    depth = b.opaque(b.index(depth))

    def rows_from(first: Index, count: int) -> None:
        rows = [b.add(first, j) for j in range(count)]
        with b.loop(0, depth, carried=[start(b, domain, bias, n, correction) for n in rows]) as k:
            if folded:
                x = level(b, src, [m, k.index])
                k.next(*(b.int_add(total, b.int_mul(x, level(b, weights, [n, k.index])))
                         for total, n in zip(k.carried, rows)))
            else:
                x = domain.input(src, [m, k.index])
                k.next(*(domain.multiply_accumulate(total, x, domain.weight(weights, [n, k.index]))
                         for total, n in zip(k.carried, rows)))
        for n, total in zip(rows, k.results):
            store(n, total)

    outputs = weights.shape[0]
    with b.loop(0, outputs // DOT_PRODUCT_ROWS) as block:
        rows_from(b.mul(block.index, DOT_PRODUCT_ROWS), DOT_PRODUCT_ROWS)
    if outputs % DOT_PRODUCT_ROWS:
        with b.loop(outputs - outputs % DOT_PRODUCT_ROWS, outputs) as n:
            rows_from(n.index, 1)


def emit_im2col_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view) -> None:
    """An ungrouped convolution, unpooled or with a global pool (`glow.pools_globally`), as
    dot products: per output pixel, its window's input levels are gathered once into a
    stack row (the *patch*, channel-major like the OIHW filter row; taps in the padding hold
    the input zero point, which the folded bias expects), then every output channel is
    `dot_products` of the patch and its filter row. A global pool folds each output level
    into a running sum or maximum per channel (`loop_skeletons.GlobalPool`)."""
    dest, src, weights, bias = view(op.dest), view(op.input), view(op.filter), view(op.bias)
    n_size, out_c, out_h, out_w = glow.convolution_shape(op)
    _, in_c, in_h, in_w = src.shape
    _, _, k_h, k_w = weights.shape
    depth = in_c * k_h * k_w
    rows = weights.reshaped((out_c, depth), (depth, 1))
    patch = View.contiguous(b.alloca(depth, i8), (1, depth), element_type=i8)
    pool = None if op.pool is None else GlobalPool(b, domain, op, dest)
    sy, sx = op.strides.get_values()
    pt, pl, pb, pr = op.pads.get_values()
    dy, dx = op.dilations.get_values()
    padding = b.truncate(b.int_value(domain.input_offset), i8)
    with b.loop(0, n_size) as image:
        n = image.index
        if pool is not None:
            pool.start()
        with b.loops([out_h, out_w]) as (y, x):
            with b.loop(0, in_c) as c:
                for ky in range(k_h):
                    in_y = b.add(b.sub(b.mul(y, sy), pt), ky * dy)
                    for kx in range(k_w):
                        in_x = b.add(b.sub(b.mul(x, sx), pl), kx * dx)
                        at = [n, c.index, b.min(b.max(in_y, 0), in_h - 1), b.min(b.max(in_x, 0), in_w - 1)]
                        value = b.load(src, at)
                        if pt or pb or pl or pr:
                            inside = b.emit(llvm.AndOp(b.in_range(in_y, in_h), b.in_range(in_x, in_w)))
                            value = b.select(inside, value, padding)
                        b.store(value, patch, [0, b.add(b.mul(c.index, k_h * k_w), ky * k_w + kx)])

            def store(o: Index, total: SSAValue, y: Index = y, x: Index = x) -> None:
                level = domain.output(o, dest.element_type)(total)
                if pool is None:
                    b.store(level, dest, [n, o, y, x])
                else:
                    pool.fold(o, [level])

            dot_products(b, domain, op, patch, 0, rows, bias, store)
        if pool is not None:
            pool.finish(n)
