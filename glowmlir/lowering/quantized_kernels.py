"""Integer kernels for quantized `glowll` instructions.

Storage is int8 or int16 (any `!quant.uniform` storage type), accumulation int32, and there
is no floating point anywhere in them except in `quantize`/`dequantize` themselves, so cores
without an FPU run them without soft-float calls. The arithmetic is TFLite's int8
reference arithmetic, the one CMSIS-NN's s8 functions implement, so that kernel selection
can swap a kernel for a library call without changing a single output bit. Int16 data
(`-quantization-precision=Int16`: symmetric int16 activations, int8 weights, TFLite's 16x8
scheme and CMSIS-NN's s16 functions) takes the same kernels, with int64 sums where int32
ones could overflow (`WideQuantizedArithmetic`) and 513-entry interpolated lookup tables:

* Convolution / FullyConnected: `acc = bias + sum (x - x_offset) * (w - w_offset)`, then
  `y = clamp(requantize(acc, M, S) + y_offset)`, with (M, S) from
  `input_scale * weight_scale / output_scale` (per output channel for per-channel filters);
* Add: both inputs are shifted left by 20 (15 for int16) and requantized to a common scale,
  summed and requantized again; Mul: `requantize((a - a_offset) * (b - b_offset))`;
* Relu/Clip/Rescale: `requantize(x - x_offset)` to the output's parameters, clamped;
* Max/AvgPool: on the raw integers (input and output share parameters), averages rounded
  half away from zero;
* SoftMax: CMSIS-NN's `arm_softmax_s8` fixed-point exp and reciprocal; output scale
  1/256 and offset -128 (int16: 1/32768 and 0, the same arithmetic with 7 more bits kept).

`requantize` is CMSIS-NN's `arm_nn_requantize`: a rounding doubling high multiply by
the 31-bit multiplier M, then a rounding shift by S.

Convolution, pooling and FullyConnected are the loop nests of `loop_skeletons`, run with
`QuantizedArithmetic`; elementwise kinds are `compute`s of its strided map.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from types import ModuleType

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import VectorType, i32, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation

from glowmlir.backends import microkernel
from glowmlir.dialects import glow, glowll
from glowmlir.dialects.quant import UniformQuantizedType, storage_type
from glowmlir.dialects.weights import array_from_dense
from glowmlir.errors import GlowError
from glowmlir.lowering import kernels, loop_skeletons, math_approx
from glowmlir.lowering.fused_tables import looked_up, lookup_table_by_level
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View, is_zero
from glowmlir.lowering.loop_skeletons import (
    ArithmeticDomain,
    Row,
    StoredElement,
    ViewOf,
    Window,
    elementwise_views,
    emit_strided_map,
    fill_row,
    window_size,
)
from glowmlir.lowering.requantization import (
    ACCUMULATOR_SHIFTS,
    FULLY_CONNECTED_ROUNDS_ONCE,
    LEFT_SHIFT_BITS,
    SINGLE_ROUNDING,
    STORED_CHANNELS,
    UNIFORM_SHIFT,
    divide_by_power_of_two,
    is_narrow,
    nearest_levels,
    requantize,
    requantize_bounded,
    requantize_floored,
    requantize_narrow,
    requantize_wide,
    rounding_terms,
    wrapped_double,
)
from glowmlir.quantization.lookup_tables import LOOKUP_STEP_BITS, LOOKUP_STEPS
from glowmlir.quantization.reciprocal_division import ReciprocalDivision
from glowmlir.quantization.rescaling import (
    SIGNED_NUMBERS,
    KernelParameters,
    activation_bounds,
    add_left_shift,
    add_multipliers,
    division_multiplier,
    largest_difference,
    mul_multiplier,
    multiplier_and_shift,
    sign_multipliers,
    softmax_fraction_bits,
    softmax_parameters,
)

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1



def emitters(op: IRDLOperation) -> ModuleType:
    """The module of the op's `microkernel` (registered by its backend, `glowmlir.backends`):
    its `emit_*` for the ops it takes (`emit_convolution`, `emit_fully_connected`,
    `emit_elementwise`, `emit_softmax`, `emit_int_lookup_table`)."""
    return microkernel(op.microkernel.data).emitters()


def _type(value: SSAValue) -> UniformQuantizedType:
    return value.type.element_type


def store_level(b: KernelBuilder, level: SSAValue, low: int, high: int, view: View, indices: Sequence[Index]) -> None:
    """Clamps an i32 level to [low, high] and stores it in the view's storage type."""
    b.store(b.truncate(b.clamp(level, low, high), view.element_type), view, indices)


def load_level(b: KernelBuilder, view: View, indices: Sequence[Index]) -> SSAValue:
    """An element widened to i32."""
    return b.sign_extend(b.load(view, indices))



# ----------------------------------------------------------------------------- the int8 arithmetic domain


def kernel_parameters(b: KernelBuilder, op: glowll.ConvolutionOp | glowll.FullyConnectedOp,
                      view: ViewOf) -> KernelParameters:
    """The layer's numbers (`KernelParameters`): compile-time constants, or, when the op has a
    `parameters` record, its nonzero values loaded from the record where the kernel starts
    (the zero ones stay constants, but for the VNNI shape-parameterised kernel's
    `Microkernel.loaded_numbers`). The code then depends on which numbers are zero, not
    on their values, so layers that differ only in those share it."""
    numbers = KernelParameters.of(op)
    if op.parameters is None:
        return numbers
    record = view(op.parameters)
    always = microkernel(op.microkernel.data).loaded_numbers if op.microkernel is not None else ()
    loaded = {field: value if value == 0 and field not in always else b.load(record, [slot])
              for slot, (field, value) in enumerate(dataclasses.asdict(numbers).items())}
    for field in SIGNED_NUMBERS:  # a shift's sign stays in the code too (no left shift in a right one's)
        value = getattr(numbers, field)
        if value:
            loaded[field] = b.int_min(loaded[field], -1) if value < 0 else b.int_max(loaded[field], 1)
    return KernelParameters(**loaded)


def table_shift_sign(table: SSAValue) -> int:
    """-1 when every shift of a constant requantization table ([2, channels]: multipliers,
    shifts) is 0 or less, 1 when every one is 0 or more, else (or not a constant) 0. A
    loaded shift known to have that sign (`llvm.assume`) lets LLVM drop the shift it never takes (per-channel
    int8 layers, whose scales make every shift a right one: no left shift per output, nor
    its amount per channel). Part of a kernel's signature (`glowll_to_llvm`): instructions
    alike in all else may share a kernel only with tables of one sign."""
    owner = table.owner
    if not isinstance(owner, glowll.WeightOp) or owner.value is None:
        return 0
    shifts = array_from_dense(owner.value)[1]
    return -1 if (shifts <= 0).all() else 1 if (shifts >= 0).all() else 0


def table_rights_fold(table: SSAValue, offset: int | SSAValue | None) -> bool:
    """Whether an output offset (a constant) joins each channel's rounding term of a constant
    requantization table (`requantize_narrow`'s `shift_folds`: no add an output): for every
    channel's right shift r, |offset| * 2^r + 2^(r - 1) <= 2^30, so that the term plus the
    high multiply (|high| < 2^30) stays in int32 (r <= 22 for visual wake words' offset of
    -128). Part of a kernel's signature with `table_shift_sign` (`glowll_to_llvm`)."""
    owner = table.owner
    if not isinstance(owner, glowll.WeightOp) or owner.value is None or not isinstance(offset, int):
        return False
    rights = np.maximum(-array_from_dense(owner.value)[1].astype(np.int64), 0)
    return bool(((2 * abs(offset) + 1) << int(rights.max(initial=0))) <= 1 << 31)


def table_numbers(op: IRDLOperation) -> np.ndarray | None:
    """The numbers ([2, channels]: multipliers, shifts) of an instruction's constant
    requantization table (None if it has none, or its kernel serves layers whose numbers are
    data: records): a kernel that unrolls its channels compiles them in
    (`QuantizedArithmetic.channels_inlined`), so their bytes are part of its signature
    (`glowll_to_llvm`); two layers whose operand types agree have the same numbers, unless
    their scales differ beyond the digits the types print."""
    table = getattr(op, "requantization", None)
    owner = table.owner if table is not None and getattr(op, "parameters", None) is None else None
    if not isinstance(owner, glowll.WeightOp) or owner.value is None:
        return None
    return array_from_dense(owner.value)


class ChannelRequantization:
    """The (multiplier, shift) of each output channel: the layer's `KernelParameters` for a
    per-tensor filter, else loaded from the instruction's `requantization` buffer ([2,
    channels]: multipliers, shifts)."""

    def __init__(self, b: KernelBuilder, op, view: ViewOf, parameters: KernelParameters):
        self.b = b
        table = getattr(op, "requantization", None)
        self.table = view(table) if table is not None else None
        # (not where a kernel serves layers whose numbers are data: records, shape-parameterised)
        constant_table = table is not None and getattr(op, "parameters", None) is None
        self.shift_sign = table_shift_sign(table) if constant_table else 0
        # the output offset in each channel's rounding term
        self.rights_fold = constant_table and table_rights_fold(table, parameters.output_offset)
        self.wrapped = None  # the multiplier as `wrapped_double(M)`, when narrow and a constant
        # the table's numbers, for channels known at compile time (`QuantizedArithmetic.channels_inlined`)
        self.numbers = table_numbers(op)
        self.inlined = False
        # one right shift for every channel (`requantize_floored`; the filter and bias scaled,
        # the table's third row each channel's terms: `arm_dsp.select_kernels.uniform_shift_table`)
        microkernel = getattr(op, "microkernel", None)
        uniform = microkernel is not None and microkernel.parameter(UNIFORM_SHIFT) is not None
        assert not uniform or (self.numbers is not None and self.numbers.shape[0] == 3
                               and (self.numbers[1] == self.numbers[1][0]).all()), "one shift, and the terms"
        self.uniform_right = -int(self.numbers[1][0]) if uniform else None
        # the same with each channel's accumulator scaled at run time by its left shift, the table's
        # second row (`arm_dsp.select_kernels.accumulator_shift_table`)
        scaled = microkernel.parameter(ACCUMULATOR_SHIFTS) if microkernel is not None else None
        if scaled is not None:
            assert self.numbers is not None and self.numbers.shape[0] == 3, "the left shifts, and the terms"
            self.uniform_right = scaled.value.data
        self.scaled_accumulators = scaled is not None
        # each left shift beside its channel's stored channel (`STORED_CHANNELS`)
        self.stored_channels = scaled is not None and microkernel.parameter(STORED_CHANNELS) is not None
        if self.table is None:
            multiplier = parameters.multiplier
            if getattr(op, "narrow_requantization", None) is not None and isinstance(multiplier, int):
                # Seen as a constant, LLVM multiplies by it with UMLAL and a MUL for the
                # sign; an unknown one it takes with one SMMULR (`requantize_narrow`).
                wrapped = wrapped_double(multiplier)
                if wrapped is not None:
                    self.wrapped = b.opaque(b.integer(wrapped))
                multiplier = b.opaque(b.integer(multiplier))
            self.constant = (multiplier, parameters.shift)

    def of(self, channel: Index) -> tuple[int | SSAValue, int | SSAValue]:
        """Channel `channel`'s (multiplier, shift); a loaded shift keeps the sign every
        channel's shares in the code (`table_shift_sign`): right shifts only, no left shift.
        The sign is an `llvm.assume`, not a clamp: a clamp to 0 or less took an `AND` a
        channel (visual wake words on the M4 12,686,727 -> 12,674,049 cycles, on the M7
        7,934,113 -> 7,899,688)."""
        if self.table is None:
            return self.constant
        b = self.b
        if self.inlined and isinstance(channel, int) and self.numbers is not None:
            return self.multiplier_of(channel), int(self.numbers[1, channel])
        shift = b.load(self.table, [1, channel])
        if self.shift_sign:  # no instruction: LLVM knows the shift's sign (the table's: `table_shift_sign`)
            b.assume(b.int_compare("sle" if self.shift_sign < 0 else "sge", shift, 0))
        return b.load(self.table, [0, channel]), shift

    def multiplier_of(self, channel: Index) -> SSAValue:
        """Channel `channel`'s multiplier alone (opaque where a constant: one `SMMLAR` or `SMMLA`;
        a constant would be a `UMLAL` and a `MUL`)."""
        if self.inlined and isinstance(channel, int) and self.numbers is not None:
            return self.b.opaque(self.b.integer(int(self.numbers[0, channel])))
        return self.b.load(self.table, [0, channel])

    def narrow_of(self, channel: Index) -> tuple[int | SSAValue, int | SSAValue, bool]:
        """`of(channel)` for `requantize_narrow`, and whether the multiplier is wrapped."""
        if self.wrapped is not None:
            return self.wrapped, self.constant[1], True
        return (*self.of(channel), False)


class QuantizedArithmetic(ArithmeticDomain):
    """TFLite's int8 reference arithmetic: int32 sums of `(x - x_offset) * (w - w_offset)`
    in stack rows, starting from the bias in accumulator units, then
    `clamp(requantize(sum, M, S) + y_offset)` narrowed to the storage type. Pools fold the
    raw levels (input and output share their parameters) into int32 stack rows; averages
    are rounded half away from zero. A convolution's widening pool (`pool_widening` = k)
    folds its int8 levels the same way and averages 2^k times their sum, the sum of the
    int16 levels they widen to exactly (`glow.convolved_element`)."""

    def __init__(self, b: KernelBuilder, op: glowll.InstructionOp, view: ViewOf):
        super().__init__(b)
        self.op = op
        # sums twice the accumulator (`doubled_accumulators`: the packed filter's levels doubled)
        self.doubled = getattr(op, "doubled_accumulators", None) is not None
        self.rounding = None
        self.out_type = glow.convolved_element(op)  # an output's, before a fused pool
        self.pooled_type = _type(op.dest)
        widening = getattr(op, "pool_widening", None)
        self.pool_widening = 0 if widening is None else widening.value.data
        self.output_offset = self.out_type.offset
        self.low, self.high = activation_bounds(op, self.out_type)
        self.lookup_table = lookup_table_by_level(op, view)  # applied to each clamped level stored
        if isinstance(op, glowll.ConvolutionOp | glowll.FullyConnectedOp):
            if getattr(op, "residual", None) is not None:
                raise GlowError(f"{op.name}: a quantized convolution has no fused residual")
            self.parameters = parameters = kernel_parameters(b, op, view)
            self.input_offset, self.weight_offset = parameters.input_offset, parameters.weight_offset
            self.output_offset = parameters.output_offset
            minimum, maximum = self.out_type.value_range
            self.low = b.int_add(parameters.low_above_minimum, minimum) \
                if isinstance(parameters.low_above_minimum, SSAValue) else minimum + parameters.low_above_minimum
            self.high = b.int_sub(maximum, parameters.high_below_maximum) \
                if isinstance(parameters.high_below_maximum, SSAValue) else maximum - parameters.high_below_maximum
            self.requantization = ChannelRequantization(b, op, view, parameters)
            # doubled sums, clamped to the whole storage range: the rounding terms in a register
            # (`requantize_narrow`), made once here
            terms = rounding_terms(parameters.shift, self.output_offset) \
                if self.doubled and self.requantization.table is None else None
            whole_range = (self.low, self.high) == self.out_type.value_range
            self.rounding = b.opaque(b.integer(terms)) if terms is not None and whole_range else None

    @contextlib.contextmanager
    def channels_inlined(self) -> Iterator[None]:
        """Within it, the output step of a channel known at compile time (an int, of a constant
        per-channel table) takes its multiplier, shift and rounding terms as constants, not
        loaded: the shift is then an immediate (LLVM folds the division's `ASR` into the
        clamp's `SSAT`) and the rounding terms need no arithmetic on the loaded shift. For
        kernels that unroll their channels (`arm_dsp.gathered_product.UNROLLED_CHANNEL_PAIRS`)."""
        self.requantization.inlined = True
        try:
            yield
        finally:
            self.requantization.inlined = False

    @contextlib.contextmanager
    def constants_through(self, through: Callable[[SSAValue], SSAValue]) -> Iterator[None]:
        """Within it, the per-layer values every output reads in a register (the rounding terms,
        a constant multiplier) are `through`'s of them: a kernel whose products fill the
        registers makes them anew after each block's products (`arm_dsp.opaque_after`), so
        that LLVM reloads them once there, not once an output."""
        requantization = self.requantization
        saved = self.rounding, requantization.wrapped, getattr(requantization, "constant", None)

        def anew(value: int | SSAValue | None) -> int | SSAValue | None:
            return through(value) if isinstance(value, SSAValue) else value

        self.rounding, requantization.wrapped = anew(self.rounding), anew(requantization.wrapped)
        if requantization.table is None:
            multiplier, shift = requantization.constant
            requantization.constant = anew(multiplier), shift
        try:
            yield
        finally:
            self.rounding, requantization.wrapped = saved[:2]
            if requantization.table is None:
                requantization.constant = saved[2]

    def _stack_rows(self, count: int, width: int) -> View:
        return View.contiguous(self.b.alloca(count * width, i32), (count, width), element_type=i32)

    accumulator_rows = _stack_rows
    convolution_rows_to_pool = _stack_rows
    pool_rows = _stack_rows

    def zero(self) -> SSAValue:
        return self.b.integer(0)

    def bias(self, bias: View, channel: Index) -> SSAValue:
        """As stored when its scale is input scale x weight scale, else requantized (an
        Int8 bias keeps its own scale in Glow's rule)."""
        b, parameters = self.b, self.parameters
        level = b.int_sub(load_level(b, bias, [channel]), parameters.bias_offset)
        if not is_zero(parameters.bias_multiplier):  # not in accumulator units
            level = requantize(b, level, parameters.bias_multiplier, parameters.bias_shift)
        return b.shift_left(level, 1) if self.doubled else level

    def input(self, view: View, indices: Sequence[Index]) -> SSAValue:
        return self.b.int_sub(load_level(self.b, view, indices), self.input_offset)

    def weight(self, view: View, indices: Sequence[Index]) -> SSAValue:
        return self.b.int_sub(load_level(self.b, view, indices), self.weight_offset)

    def add(self, total: SSAValue, value: SSAValue) -> SSAValue:
        return self.b.int_add(total, value)

    def multiply_accumulate(self, total: SSAValue, x: SSAValue, w: SSAValue, reduction: bool = False) -> SSAValue:
        return self.b.int_add(total, self.b.int_mul(x, w))

    output_is_monotonic = True  # a rounding multiply by a positive multiplier, then a clamp

    def rescale(self) -> Callable[[KernelBuilder, SSAValue, int | SSAValue, int | SSAValue], SSAValue]:
        """How an accumulator is requantized to an i32 level."""
        return requantize_narrow if getattr(self.op, "narrow_requantization", None) is not None else requantize

    def output(self, channel: Index, storage: Attribute) -> StoredElement:
        b = self.b
        if self.requantization.uniform_right is not None:  # doubled, a relu (`uniform_shift_table`)
            multiplier, right = self.requantization.multiplier_of(channel), self.requantization.uniform_right
            terms = b.load(self.requantization.table, [2, channel])
            left = b.load(self.requantization.table, [1, channel]) if self.requantization.scaled_accumulators \
                else None
            if self.requantization.stored_channels:
                left = b.int_and(left, b.integer((1 << LEFT_SHIFT_BITS) - 1))

            def floored(total: SSAValue) -> SSAValue:
                scaled = total if left is None else b.shift_left(total, left)
                level = requantize_floored(b, scaled, multiplier, right, terms)
                if self.lookup_table is not None:
                    return looked_up(b, self.lookup_table, b.clamp(level, self.low, self.high))
                return b.truncate(b.clamp(level, self.low, self.high), storage)

            return floored
        rescale = self.rescale()
        narrow, wrapped = rescale is requantize_narrow, False
        if narrow and not self.doubled:
            multiplier, shift, wrapped = self.requantization.narrow_of(channel)
        else:
            multiplier, shift = self.requantization.of(channel)
        # Clamped to the whole storage range (one SSAT), the offset goes inside the rounding
        # division (one add fewer); a narrower clamp LLVM takes best before the offset is added.
        offset_inside = narrow and (self.low, self.high) == self.out_type.value_range
        # a fused relu (or none, at an offset of the type's minimum): no sign in the rounding
        relu = isinstance(self.low, int) and isinstance(self.output_offset, int) and self.low >= self.output_offset

        def stored(total: SSAValue) -> SSAValue:
            if offset_inside:
                level = requantize_narrow(b, total, multiplier, shift, self.output_offset, wrapped, self.doubled,
                                          self.rounding, clamped_below_offset=relu,
                                          shift_folds=self.requantization.rights_fold)
            elif narrow:
                level = b.int_add(requantize_narrow(b, total, multiplier, shift, wrapped=wrapped, doubled=self.doubled,
                                                    clamped_below_offset=relu), self.output_offset)
            else:
                level = b.int_add(rescale(b, total, multiplier, shift), self.output_offset)
            if self.lookup_table is not None:
                return looked_up(b, self.lookup_table, b.clamp(level, self.low, self.high))
            return b.truncate(b.clamp(level, self.low, self.high), storage)

        return stored

    def pool_start(self, window: Window) -> SSAValue:
        return self.b.integer(INT32_MIN if window.is_max else 0)

    def pool_combine(self, window: Window) -> Callable[[SSAValue, SSAValue], SSAValue]:
        b = self.b
        if window.is_max:
            return lambda pooled, level: b.int_max(pooled, b.sign_extend(level))
        return lambda pooled, level: b.int_add(pooled, b.sign_extend(level))

    def finish_pool_row(self, window: Window, pooled: Row, dest: Row, y: Index, in_hw: tuple[int, int]) -> None:
        """Maxima as they are; sums divided by the window size, rounded half away from zero
        (TFLite's average pool)."""
        b, storage, offset = self.b, dest.view.element_type, self.pooled_type.offset
        width = dest.view.shape[-1]
        if window.is_max:
            fill_row(b, dest, width, lambda x: b.truncate(b.load(pooled.view, pooled.at(x)), storage))
            return
        size = window_size(b, window, y, in_hw)
        padding = None
        if window.count_include_pad and offset and any(window.pads):
            # Padded taps hold real 0, the offset level: add them to the sum.
            inside = window_size(b, replace(window, count_include_pad=False), y, in_hw)
            padding = lambda x: b.int_mul(b.int_sub(size, b.truncate(b.index(inside(x)), i32)), offset)  # noqa: E731

        def average(x: Index) -> SSAValue:
            total = b.load(pooled.view, pooled.at(x))
            if self.pool_widening:  # the sum of the widened levels
                total = b.shift_left(total, self.pool_widening)
            if padding is not None:
                total = b.int_add(total, padding(x))
            count = b.integer(size) if isinstance(size, int) else b.truncate(b.index(size(x)), i32)
            half = b.int_div(count, 2)
            rounded = b.select(b.int_compare("sgt", total, 0), b.int_add(total, half), b.int_sub(total, half))
            return b.truncate(b.int_div(rounded, count), storage)

        fill_row(b, dest, width, average)


class WideQuantizedArithmetic(QuantizedArithmetic):
    """`QuantizedArithmetic` with int64 sums (`wide_accumulators`: int16 data whose int32 sums
    could overflow, as CMSIS-NN's s16 kernels for long dot products): each int32 product
    widened and added, the sum requantized by `requantize_wide`. A fused max pool takes the
    maxima of the requantized levels (its stack rows stay int32)."""

    output_is_monotonic = False

    def accumulator_rows(self, count: int, width: int) -> View:
        return View.contiguous(self.b.alloca(count * width, i64), (count, width), element_type=i64)

    def zero(self) -> SSAValue:
        return self.b.integer(0, i64)

    def bias(self, bias: View, channel: Index) -> SSAValue:
        if bias.element_type == i64:  # an Int64 bias (`quantized_conversion._quantized_bias`): in accumulator units
            return self.b.load(bias, [channel])
        return self.b.sign_extend(super().bias(bias, channel), i64)

    def multiply_accumulate(self, total: SSAValue, x: SSAValue, w: SSAValue, reduction: bool = False) -> SSAValue:
        return self.b.int_add(total, self.b.sign_extend(self.b.int_mul(x, w), i64))

    def rescale(self) -> Callable[[KernelBuilder, SSAValue, int | SSAValue, int | SSAValue], SSAValue]:
        return requantize_wide


def quantized_arithmetic(b: KernelBuilder, op: glowll.ConvolutionOp | glowll.FullyConnectedOp,
                         view: ViewOf) -> QuantizedArithmetic:
    """The arithmetic of a quantized Convolution/FullyConnected: int32 sums, or int64 ones
    for an op with `wide_accumulators`."""
    wide = getattr(op, "wide_accumulators", None) is not None
    return (WideQuantizedArithmetic if wide else QuantizedArithmetic)(b, op, view)


def emit_quantized_convolution(b: KernelBuilder, op: glowll.ConvolutionOp, view: ViewOf) -> None:
    domain = quantized_arithmetic(b, op, view)
    if op.microkernel is not None:  # the filter is packed for the microkernel
        emitters(op).emit_convolution(b, domain, op, view)
    else:
        loop_skeletons.emit_convolution(b, domain, op, view)


def emit_quantized_pool(b: KernelBuilder, op: glowll.MaxPoolOp | glowll.AvgPoolOp, view: ViewOf) -> None:
    loop_skeletons.emit_pool(b, QuantizedArithmetic(b, op, view), op, view)


def emit_quantized_fully_connected(b: KernelBuilder, op: glowll.FullyConnectedOp, view: ViewOf) -> None:
    """Rounding once under `-tflite-rounding=single` (`FULLY_CONNECTED_ROUNDS_ONCE`)."""
    token = SINGLE_ROUNDING.set(FULLY_CONNECTED_ROUNDS_ONCE.get())
    try:
        domain = quantized_arithmetic(b, op, view)
        if op.microkernel is not None:
            emitters(op).emit_fully_connected(b, domain, op, view)
        else:
            loop_skeletons.emit_fully_connected(b, domain, op, view)
    finally:
        SINGLE_ROUNDING.reset(token)


# ----------------------------------------------------------------------------- elementwise


def _rescaled(b: KernelBuilder, level: SSAValue, source: UniformQuantizedType, dest: UniformQuantizedType) -> SSAValue:
    """A level of `source` re-expressed in `dest`'s parameters (before clamping)."""
    multiplier, shift = multiplier_and_shift(source.scale / dest.scale)
    return b.int_add(requantize(b, b.int_sub(level, source.offset), multiplier, shift), dest.offset)


def binary_level(b: KernelBuilder, op: glowll.ElementwiseOp) -> Callable[[SSAValue, SSAValue], SSAValue]:
    """The output level (before the clamp) of an int8/int16 Add, Sub or Mul of two levels (i32
    values, or vectors of them): TFLite's Add and Sub (`add_terms`); its Mul,
    `requantize((a - a_offset) * (b - b_offset))`. Each requantization knows its value's bound
    (`requantize_bounded`)."""
    first, second, out_type = (_type(v) for v in (*op.inputs, op.dest))
    if op.kind.data == "mul":
        multiplier, shift = mul_multiplier(first, second, out_type)
        bound = largest_difference(first) * largest_difference(second)
        return lambda x, y: requantize_bounded(b, b.int_mul(b.int_sub(x, first.offset), b.int_sub(y, second.offset)),
                                               bound, multiplier, shift, out_type.offset)
    steps = add_terms(b, op)
    return lambda x, y: steps.combined(steps.first(x), steps.second(y))


@dataclasses.dataclass
class AddSteps:
    """TFLite's int8/int16 Add or Sub in its three steps (`add_terms`): each input's term, its
    level less its zero point shifted left and requantized to a common scale (`first`,
    `second`: a level to a term), then the terms' sum or difference requantized to the output
    (`combined`, before the clamp). `doubled_combined`, where the sum's requantization is
    narrow with constant rounding terms (`requantize_narrow`), takes twice the terms: it
    multiplies their sum as it is and adds the sign and the rounding terms in one step."""

    first: Callable[[SSAValue], SSAValue]
    second: Callable[[SSAValue], SSAValue]
    combined: Callable[[SSAValue, SSAValue], SSAValue]
    doubled_combined: Callable[[SSAValue, SSAValue], SSAValue] | None


def add_terms(b: KernelBuilder, op: glowll.ElementwiseOp, opaque_multipliers: bool = False) -> AddSteps:
    """The `AddSteps` of an Add or Sub. A term depends on one level only (`level_tables` keeps
    them in tables). `opaque_multipliers`: the multipliers as values LLVM cannot see
    (`KernelBuilder.opaque`), which it multiplies by with one SMMULR on Arm, not a UMLAL and a
    MUL for the sign (see `ChannelRequantization`); only then is there a `doubled_combined`."""
    first, second, out_type = (_type(v) for v in (*op.inputs, op.dest))
    (m1, s1), (m2, s2), (mo, so) = add_multipliers(first, second, out_type)
    if opaque_multipliers:
        m1, m2, mo = (b.opaque(b.integer(m)) for m in (m1, m2, mo))
    left_shift = add_left_shift(first, second, out_type)
    combine = b.int_add if op.kind.data == "add" else b.int_sub
    bounds = [largest_difference(element) << left_shift for element in (first, second)]
    # |a| <= bounds[0] and |c| <= bounds[1] where their multipliers are below 1 (shifts <= 0)
    bound = sum(bounds) if max(s1, s2) <= 0 else 1 << 31

    def term(element: UniformQuantizedType, multiplier: int | SSAValue, shift: int,
             bound: int) -> Callable[[SSAValue], SSAValue]:
        return lambda x: requantize_bounded(b, b.shift_left(b.int_sub(x, element.offset), left_shift), bound,
                                            multiplier, shift)

    doubled_combined = None
    terms = rounding_terms(so, out_type.offset)
    if opaque_multipliers and is_narrow(bound, so) and terms is not None:
        rounding = b.opaque(b.integer(terms))
        doubled_combined = lambda a2, c2: requantize_narrow(  # noqa: E731
            b, combine(a2, c2), mo, so, out_type.offset, doubled=True, rounding=rounding)
    return AddSteps(term(first, m1, s1, bounds[0]), term(second, m2, s2, bounds[1]),
                    lambda a, c: requantize_bounded(b, combine(a, c), bound, mo, so, out_type.offset),
                    doubled_combined)


def _quantize_float(b: KernelBuilder, value: SSAValue, dest: UniformQuantizedType) -> SSAValue:
    """Glow's quantize before its clamp: `nearbyint(x / scale + offset)` as an i32, each step
    rounded in f32 as Glow and the reference round it (x * (1 / scale) or x / scale + offset
    rounded once would differ from them near halves).

    Rounding is done the classic way, without a float-to-int instruction (`nearest_integer`:
    adding 1.5 * 2^23 leaves the nearest integer, ties to even, in the low mantissa bits);
    a level beyond +-2^22 keeps its side, so the caller's integer clamp (`SSAT` for the whole
    int8 range) bounds it, with no clamp in floats (on the M7 the input quantize of the
    MobileNetV3-style net went from 10.8 instructions an element to 8.4)."""
    return math_approx.nearest_integer(b, _quantized_sum(b, value, dest))


def _quantized_sum(b: KernelBuilder, value: SSAValue, dest: UniformQuantizedType,
                   division: ReciprocalDivision | None = None) -> SSAValue:
    """f32(f32(x / scale) + offset) of an f32 or a vector of them; with `division` (a vector
    on a target with FMA), x / scale without a division (`reciprocal_quotient`)."""
    vector = value.type if isinstance(value.type, VectorType) else None

    def constant(number: float) -> SSAValue:
        return b.f32(number) if vector is None else b.splat(b.f32(number), vector)

    if division is None:
        scaled = b.fdiv(value, constant(dest.scale))
    else:
        scaled = reciprocal_quotient(b, value, constant(-division.scale), constant(division.reciprocal))
    return b.fadd(scaled, constant(float(dest.offset))) if dest.offset else scaled


def reciprocal_quotient(b: KernelBuilder, x: SSAValue, negative_scale: SSAValue, reciprocal: SSAValue) -> SSAValue:
    """x / scale as the division rounds it (`quantization.reciprocal_division`, proved at
    compile time for the scale, x a vector of singles at most RN(2^16 scale)): y = x r,
    e = fma(y, -scale, x), q = fma(e, r, y), each rounded once (one `vmulps`, one `vfnmadd`,
    one `vfmadd`; no fast-math: nothing contracted or reassociated)."""
    y = b.fmul(x, reciprocal, llvm.FastMathAttr(None))
    return b.fma(b.fma(y, negative_scale, x), reciprocal, y)


QUANTIZE_BOUND = 2.0**16
"""`quantize_levels` clamps x to +-RN(QUANTIZE_BOUND * scale) first."""


def quantize_bound(dest: UniformQuantizedType) -> float:
    """RN(QUANTIZE_BOUND * scale) in f32 (infinite for a scale beyond 2^111)."""
    with np.errstate(over="ignore"):
        return float(np.float32(QUANTIZE_BOUND) * np.float32(dest.scale))


def quantize_levels(b: KernelBuilder, value: SSAValue, dest: UniformQuantizedType) -> SSAValue:
    """Glow's quantize of a vector of f32 before its clamp to the int8 range, as
    `_quantize_float` gives it after that clamp: x clamped first to +-bound (`quantize_bound`;
    NaN to -bound, `vmaxps`' order), so that |x / scale + offset| < 2^16 + 2^8 and its
    rounding and conversion are one `llvm.rint` and `fptosi` (one `vcvtps2dq` on x86), no
    saturation. The clamp changes no level: the division rounds monotonically, so an |x|
    beyond the bound has a quotient of at least RN(bound / scale) >= 2^16 - 1 in magnitude,
    past every int8 level on its side, as the bound's own."""
    bound = quantize_bound(dest)
    low, high = b.splat(b.f32(-bound), value.type), b.splat(b.f32(bound), value.type)
    value = b.emit(llvm.SelectOp(b.emit(llvm.FCmpOp(value, low, "ogt")), value, low))
    value = b.emit(llvm.SelectOp(b.emit(llvm.FCmpOp(value, high, "olt")), value, high))
    return nearest_levels(b, _quantized_sum(b, value, dest), VectorType(i32, value.type.get_shape()))


def _divided(b: KernelBuilder, a: SSAValue, d: SSAValue, multiplier: int, exponent: int) -> SSAValue:
    """round(a x M / (d << E)), halves away from zero, in 32-bit integers (`divide_levels`):
    one unsigned division of the magnitudes, the sign applied after. d = 0 divides by 1 (the
    quotient a x M then saturates with a's sign)."""
    numerator = b.int_mul(a, multiplier)
    magnitude = b.int_max(numerator, b.int_sub(0, numerator))
    divisor = b.int_max(d, b.int_sub(0, d))
    divisor = b.select(b.int_compare("eq", divisor, 0), 1, b.shift_left(divisor, exponent))
    quotient = b.emit(llvm.UDivOp(b.int_add(b.shift_left(magnitude, 1), divisor), b.shift_left(divisor, 1)))
    negative = b.int_compare("ne", b.int_compare("slt", numerator, 0), b.int_compare("slt", d, 0))
    return b.select(negative, b.int_sub(0, quotient), quotient)


def emit_quantized_elementwise(b: KernelBuilder, op: glowll.ElementwiseOp, view: ViewOf) -> None:
    if op.microkernel is not None:
        emitters(op).emit_elementwise(b, op, view)
        return
    dest, sources = elementwise_views(op, view)
    kind = op.kind.data
    if kind == "dequantize":
        source = _type(op.inputs[0])
        scale = b.f32(source.scale)
        # Not `sitofp` for small levels: LLVM 22 folds `sitofp(x) * 2^-n` into MVE's fixed-point
        # VCVT and, on the Cortex-M55, could give it a register where the encoder needs an
        # immediate (an assertion while writing the object).
        as_float = math_approx.small_integer_as_float if source.bitwidth <= 16 else KernelBuilder.to_f32
        emit_strided_map(b, dest, sources, lambda v: b.fmul(
            as_float(b, b.int_sub(b.sign_extend(v[0]), source.offset)), scale))
        return
    out_type = _type(op.dest)
    low, high = activation_bounds(op, out_type) if kind in ("relu", "clip", "add", "sub") else out_type.value_range
    narrow = dest.element_type

    def store(level: SSAValue) -> SSAValue:
        return b.truncate(b.clamp(level, low, high), narrow)

    if kind == "quantize":
        compute = lambda v: store(_quantize_float(b, v[0], out_type))  # noqa: E731
    elif kind == "splat":
        level = int(op.value.value.data)
        compute = lambda v: b.integer(level, narrow)  # noqa: E731
    elif kind == "copy":
        compute = lambda v: v[0]  # noqa: E731
    elif kind in ("relu", "clip", "rescale_quantized"):
        source = _type(op.inputs[0])
        compute = lambda v: store(_rescaled(b, b.sign_extend(v[0]), source, out_type))  # noqa: E731
    elif kind in ("add", "sub", "mul"):
        level = binary_level(b, op)
        compute = lambda v: store(level(b.sign_extend(v[0]), b.sign_extend(v[1])))  # noqa: E731
    elif kind == "div":
        first, second = (_type(v) for v in op.inputs)
        multiplier, exponent = division_multiplier(first, second, out_type)

        def compute(v):
            return store(b.int_add(_divided(b, b.int_sub(b.sign_extend(v[0]), first.offset),
                                            b.int_sub(b.sign_extend(v[1]), second.offset), multiplier, exponent),
                                   out_type.offset))
    elif kind in ("leaky_relu", "prelu"):  # TFLite's int8 LeakyRelu and PRelu: a multiplier for each sign of x
        source = _type(op.inputs[0])
        slope = _type(op.inputs[1]) if kind == "prelu" else None
        (m1, s1), (m2, s2) = sign_multipliers(source, out_type, op.alpha.value.data if slope is None else slope.scale)

        def compute(v):
            x = b.int_sub(b.sign_extend(v[0]), source.offset)
            negative = x if slope is None else b.int_mul(x, b.int_sub(b.sign_extend(v[1]), slope.offset))
            level = b.select(b.int_compare("sge", x, 0), requantize(b, x, m1, s1), requantize(b, negative, m2, s2))
            return store(b.int_add(level, out_type.offset))
    else:
        raise NotImplementedError(f"quantized elementwise \"{kind}\"")
    emit_strided_map(b, dest, sources, compute)


# ----------------------------------------------------------------------------- softmax


def doubling_high_mult(b: KernelBuilder, a: SSAValue, c: int | SSAValue) -> SSAValue:
    """`arm_nn_doubling_high_mult` (MUL_SAT): round(a * c / 2^31), ties away from zero,
    saturating the one overflow (INT32_MIN * INT32_MIN)."""
    c = b.int_value(c)
    product = b.int_mul(b.sign_extend(a, i64), b.sign_extend(c, i64))
    signs_differ = b.int_compare("ne", b.int_compare("slt", a, 0), b.int_compare("slt", c, 0))
    nudge = b.select(signs_differ, b.integer(1 - (1 << 30), i64), b.integer(1 << 30, i64))
    result = b.truncate(b.int_div(b.int_add(product, nudge), b.integer(1 << 31, i64)), i32)
    overflow = b.int_and(b.int_compare("eq", a, c), b.int_compare("eq", a, INT32_MIN))
    return b.select(overflow, INT32_MAX, result)


def multiply_by_power_of_two(b: KernelBuilder, value: SSAValue, exponent: int) -> SSAValue:
    """`arm_nn_mult_by_power_of_two`: value * 2^exponent, saturated to int32."""
    threshold = (1 << (31 - exponent)) - 1
    result = b.select(b.int_compare("sgt", value, threshold), INT32_MAX, b.shift_left(value, exponent))
    return b.select(b.int_compare("slt", value, -threshold), INT32_MIN, result)


def exp_on_negative_values(b: KernelBuilder, value: SSAValue, high_mult: Callable = doubling_high_mult,
                           divide: Callable = divide_by_power_of_two) -> SSAValue:
    """`arm_nn_exp_on_negative_values`: exp(x) in Q0.31 for x <= 0 given in Q5.26
    (gemmlowp's polynomial on [-1/4, 0) and a product of exp(-2^k) factors). On a vector of
    lanes, `high_mult(b, a, c)` and `divide(b, a, exponent)` are the vectors' doubling high
    multiply and division by a power of two (Helium's: `arm_mve.emit_softmax`)."""
    quarter = 1 << 24
    modulo_minus_quarter = b.int_sub(b.int_and(value, quarter - 1), quarter)
    remainder = b.int_sub(modulo_minus_quarter, value)
    x = b.int_add(b.shift_left(modulo_minus_quarter, 5), 1 << 28)
    x2 = high_mult(b, x, x)
    x3 = high_mult(b, x2, x)
    x4_over_4 = divide(b, high_mult(b, x2, x2), 2)
    polynomial = divide(b, b.int_add(high_mult(b, b.int_add(x4_over_4, x3), 715827883), x2), 1)
    result = b.int_add(1895147668, high_mult(b, b.int_add(x, polynomial), 1895147668))
    for bit, factor in enumerate((1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242), start=24):
        has_bit = b.int_compare("ne", b.int_and(remainder, 1 << bit), 0)
        result = b.select(has_bit, high_mult(b, result, factor), result)
    return b.select(b.int_compare("eq", value, 0), INT32_MAX, result)


def one_over_one_plus_x(b: KernelBuilder, value: SSAValue) -> SSAValue:
    """`arm_nn_one_over_one_plus_x_for_x_in_0_1`: 1 / (1 + x) by Newton-Raphson, Q0.31."""
    total = b.int_add(b.sign_extend(value, i64), b.integer(INT32_MAX, i64))
    rounding = b.select(b.int_compare("sge", total, 0), b.integer(1, i64), b.integer(-1, i64))
    half_denominator = b.truncate(b.int_div(b.int_add(total, rounding), b.integer(2, i64)), i32)
    x = b.int_add(1515870810, doubling_high_mult(b, half_denominator, -1010580540))
    for _ in range(3):
        error = b.int_sub(1 << 29, doubling_high_mult(b, half_denominator, x))
        x = b.int_add(x, multiply_by_power_of_two(b, doubling_high_mult(b, x, error), 2))
    return multiply_by_power_of_two(b, x, 1)


def count_leading_zeros(b: KernelBuilder, value: SSAValue) -> SSAValue:
    """Leading zero bits of a positive i32, by halving the search range five times."""
    count = b.integer(0)
    for bits in (16, 8, 4, 2, 1):
        small = b.int_compare("ult", value, 1 << (32 - bits) if bits < 32 else 0)
        count = b.select(small, b.int_add(count, bits), count)
        value = b.select(small, b.shift_left(value, bits), value)
    return count


ACCUMULATION_BITS = 12


def softmax_reciprocal(b: KernelBuilder, total: SSAValue, fraction_bits: int) -> tuple[SSAValue, SSAValue]:
    """`arm_softmax_s8`'s 1 / `total` (a row's sum of exps in Q12.19) as (scale, exponent):
    a level is `divide_by_power_of_two(doubling_high_mult(scale, exp), exponent)` with
    `fraction_bits` fractional bits."""
    headroom = count_leading_zeros(b, total)
    normalized = b.select(b.int_compare("sgt", total, 0), b.shift_left(total, headroom), 0)
    scale = one_over_one_plus_x(b, b.int_sub(normalized, INT32_MIN))
    return scale, b.int_sub(ACCUMULATION_BITS + 31 - fraction_bits, headroom)


def emit_quantized_softmax(b: KernelBuilder, op: glowll.SoftMaxOp, view: ViewOf) -> None:
    """`arm_softmax_s8` over the last axis: exp of the input's distance to the row maximum
    in fixed point, sum in Q12.19, one reciprocal per row; output scale 1/256, offset -128.
    An int16 softmax (input levels int16, output scale 1/32768, offset 0) runs the same
    arithmetic and keeps 15 fractional bits of the quotient instead of 8. (With a
    `microkernel`, its module's vectors or tables.)"""
    if op.microkernel is not None:
        emitters(op).emit_softmax(b, op, view)
        return
    b.minimize_size = True  # LLVM's vectors over a row of logits: LeNet's softmax 2.5 KB at O3, 1.7 KB at minsize
    if op.axis.value.data != len(op.dest.type.get_shape()) - 1 or op.log is not None:
        raise GlowError("glowll.softmax: a quantized softmax works on the last axis, without log")
    multiplier, shift, diff_min = softmax_parameters(_type(op.input))

    def exp_of(distance: SSAValue) -> tuple[SSAValue, SSAValue]:
        return b.int_compare("sge", distance, diff_min), exp_of_distance(b, distance, multiplier, shift)

    softmax_rows(b, op, view, exp_of, stored_exps=glow.shape_of(op.dest)[-1] <= STORED_EXPS)


STORED_EXPS = 256
"""The longest row whose exps `emit_quantized_softmax` keeps in a stack array (4 bytes a
level) from the loop summing them to the loop dividing them: the exp (`exp_on_negative_values`,
about 250 instructions of fixed-point steps) is then emitted and computed once a level, not
twice (the visual wake words' two-logit softmax: 550 bytes fewer on the Cortex-M4, fewer
cycles too). Longer rows compute it again rather than take a larger stack."""


def exp_of_distance(b: KernelBuilder, distance: SSAValue, multiplier: int, shift: int) -> SSAValue:
    """exp of a level's distance to its row maximum (<= 0, in levels) in Q0.31, as `arm_softmax_s8`
    computes it (`multiplier`, `shift` of `softmax_parameters`)."""
    return exp_on_negative_values(b, doubling_high_mult(b, b.int_mul(distance, 1 << shift), multiplier))


def softmax_rows(b: KernelBuilder, op: glowll.SoftMaxOp, view: ViewOf,
                 exp_of: Callable[[SSAValue], tuple[SSAValue | None, SSAValue]], stored_exps: bool = False) -> None:
    """`emit_quantized_softmax`'s loops on scalars: per row its maximum; the sum of the exps of
    the distances to it; the reciprocal; each exp times it. `exp_of(distance)` gives (whether
    the distance counts, or None where an exp of 0 stands for one that does not; its exp).
    With `stored_exps` the summing loop stores each exp in a stack array of a row and the
    dividing loop loads it (the exp computed once; the distance's test, a compare, again)."""
    dest, src = view(op.dest), view(op.input)
    out_type = _type(op.dest)
    fraction_bits = softmax_fraction_bits(out_type)
    low, high = out_type.value_range
    size = dest.shape[-1]
    rows = int(np.prod(dest.shape[:-1]))
    dest, src = dest.reshaped((rows, size), (size, 1)), src.reshaped((rows, size), (size, 1))
    exps = View.contiguous(b.alloca(size, i32, alignment=4), (size,), element_type=i32) if stored_exps else None
    with b.loop(0, rows) as row:
        with b.loop(0, size, carried=[b.integer(INT32_MIN)]) as loop:
            loop.next(b.int_max(loop.carried[0], load_level(b, src, [row.index, loop.index])))
        (largest,) = loop.results

        def exp_at(column: Index) -> tuple[SSAValue | None, SSAValue]:
            return exp_of(b.int_sub(load_level(b, src, [row.index, column]), largest))

        with b.loop(0, size, carried=[b.integer(0)]) as loop:
            counts, value = exp_at(loop.index)
            if exps is not None:
                b.store(value, exps, [loop.index])
            term = divide_by_power_of_two(b, value, ACCUMULATION_BITS)
            loop.next(b.int_add(loop.carried[0], term if counts is None else b.select(counts, term, 0)))
        (total,) = loop.results
        scale, bits_over_unit = softmax_reciprocal(b, total, fraction_bits)
        # a sum of 2^28 or more shifts by 32 or more (undefined in C): a quotient under one half, 0
        fits = b.int_compare("slt", bits_over_unit, 32)
        exponent = b.int_min(bits_over_unit, 31)
        with b.loop(0, size) as column:
            counts, value = exp_at(column.index)  # with stored exps, the exp computed here is dead code
            if exps is not None:
                value = b.load(exps, [column.index])
            quotient = b.select(fits, divide_by_power_of_two(b, doubling_high_mult(b, scale, value), exponent), 0)
            level = b.int_add(quotient, out_type.offset)
            store_level(b, level if counts is None else b.select(counts, level, out_type.offset), low, high, dest,
                        [row.index, column.index])


def emit_int_lookup_table(b: KernelBuilder, op: glowll.IntLookupTableOp, view: ViewOf) -> None:
    """int8 input: dest[i] = table[input[i] + 128], one load from the 256-entry table per
    element (with a `microkernel`, its module's vectors). int16 input: the 513-entry table of
    TFLite's and CMSIS-NN's int16 LUT ops, interpolated (`interpolated_lookup`)."""
    if op.microkernel is not None:
        emitters(op).emit_int_lookup_table(b, op, view)
        return
    dest, source, table = view(op.dest), view(op.input), view(op.table)
    size = int(np.prod(dest.shape))
    flat_dest, flat_source = dest.reshaped((size,), (1,)), source.reshaped((size,), (1,))
    interpolated = _type(op.input).bitwidth == 16
    with b.loop(0, size) as i:
        if interpolated:
            b.store(interpolated_lookup(b, table, b.sign_extend(b.load(flat_source, [i.index]))), flat_dest, [i.index])
        else:
            level = b.as_index(b.load(flat_source, [i.index]))
            b.store(b.load(table, [b.add(level, 128)]), flat_dest, [i.index])


def interpolated_lookup(b: KernelBuilder, table: View, level: SSAValue) -> SSAValue:
    """An int16 level x (as i32) looked up in a 513-entry int16 table (TFLite's `lut_lookup`):
    entry j = 256 + (x >> 7) and the next one bracket x; the result is entry j plus
    ((next - entry) x (x & 127) + 64) >> 7, narrowed to int16."""
    index = b.as_index(b.int_add(b.shift_right(level, LOOKUP_STEP_BITS), LOOKUP_STEPS // 2))
    base = b.sign_extend(b.load(table, [index]))
    slope = b.int_sub(b.sign_extend(b.load(table, [b.add(index, 1)])), base)
    fraction = b.int_and(level, (1 << LOOKUP_STEP_BITS) - 1)
    delta = b.shift_right(b.int_add(b.int_mul(slope, fraction), 1 << (LOOKUP_STEP_BITS - 1)), LOOKUP_STEP_BITS)
    return b.truncate(b.int_add(base, delta), table.element_type)


def emit_quantized_resample(b: KernelBuilder, op: glowll.ResampleOp, view: ViewOf) -> None:
    """`kernels.emit_resample` on integers: `sum_t w_t (x_t - x_offset)` with Q1.14 weights,
    requantized by `input x weight / output` scale (as a Mul), plus the output offset, clamped."""
    source, weights, out_type = _type(op.input), _type(op.weights), _type(op.dest)
    multiplier, shift = mul_multiplier(source, weights, out_type)
    low, high = out_type.value_range

    def weighted_sum(terms: list[tuple[SSAValue, SSAValue]]) -> SSAValue:
        total = None
        for factor, value in terms:
            term = b.int_mul(b.sign_extend(factor), b.int_sub(b.sign_extend(value), source.offset))
            total = term if total is None else b.int_add(total, term)
        level = b.int_add(requantize(b, total, multiplier, shift), out_type.offset)
        return b.truncate(b.clamp(level, low, high), storage_type(out_type))

    kernels.emit_resample(b, op, view, weighted_sum)


QUANTIZED_KERNELS: dict[type, Callable[[KernelBuilder, object, ViewOf], None]] = {
    glowll.ConvolutionOp: emit_quantized_convolution,
    glowll.FullyConnectedOp: emit_quantized_fully_connected,
    glowll.MaxPoolOp: emit_quantized_pool,
    glowll.AvgPoolOp: emit_quantized_pool,
    glowll.ElementwiseOp: emit_quantized_elementwise,
    glowll.SoftMaxOp: emit_quantized_softmax,
    glowll.IntLookupTableOp: emit_int_lookup_table,
    glowll.ResampleOp: emit_quantized_resample,
}
"""The emitters of instructions on quantized buffers; data movement (copy, transpose,
insert/extract tensor) is type-generic and uses the float kernels' emitters."""
