"""Int8 kernels that look up values of single levels in tables made where the kernel starts
(`microkernel = "level-tables"`: `glowll-select-arm-dsp-kernels` on cores with the DSP
extension and no Helium).

An int8 operand has 256 levels. Where a kernel computes the same function of one level for
many more elements than that, it computes the function once per level into a stack table,
then loads it per element: the same numbers as the generic kernels
(`quantized_kernels`), bit for bit.

* Add and Sub: each input's term (its level less its zero point, shifted left and
  requantized to the common scale, `quantized_kernels.add_terms`) in a table of 256 int32;
  per element two loads from the tables, the sum's requantization and the clamp (the tables
  hold twice the terms where that lets the sign join the rounding terms,
  `AddSteps.doubled_combined`). On the M7, MobileNetV2's residual adds went from about 23
  instructions an element to about 10.
* Softmax: the exp of each distance to the row maximum (0 to -255 levels;
  `quantized_kernels.exp_of_distance`, some 190 instructions on the M7) in a table of 256
  Q0.31 values, 0 where the distance is below diff_min (an exp of 0 adds nothing to the sum
  and gives the output zero point, as the generic kernel's `counts` does); the generic
  kernel computes it twice per element (MobileNetV2's 1000 classes on the M7: 399k
  instructions, with the table 72k).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects.builtin import i32
from xdsl.ir import SSAValue

from glowmlir.backends.arm_dsp.instructions import STACK_ALIGNMENT
from glowmlir.backends.arm_dsp.layout import LEVEL_TABLE_ENTRIES
from glowmlir.dialects import glowll
from glowmlir.lowering.kernel_builder import KernelBuilder, View
from glowmlir.lowering.loop_skeletons import ViewOf, elementwise_views, emit_strided_map
from glowmlir.quantization.rescaling import activation_bounds, softmax_parameters

LEVELS = LEVEL_TABLE_ENTRIES


def stack_table(b: KernelBuilder) -> View:
    return View.contiguous(b.alloca(LEVELS, i32, STACK_ALIGNMENT), (LEVELS,), element_type=i32)


def level_table(b: KernelBuilder, value_of: Callable[[SSAValue], SSAValue]) -> View:
    """`value_of(level)` (an i32 of an i32 level) of every int8 level, at index level + 128."""
    table = stack_table(b)
    with b.loop(0, LEVELS) as entry:
        level = b.int_sub(b.truncate(b.index(entry.index), i32), 128)
        b.store(value_of(level), table, [entry.index])
    return table


def by_level(b: KernelBuilder, table: View) -> View:
    """A `level_table` indexed by the level itself: its middle entry's address, made opaque
    (`KernelBuilder.opaque`) so that LLVM loads an entry in one `LDR r, [middle, level, LSL #2]`
    (else it adds the table's address and the level, then loads at an offset of 512)."""
    return View.contiguous(b.opaque(b.element(table, [128])), (LEVELS,), element_type=i32)


def emit_elementwise(b: KernelBuilder, op: glowll.ElementwiseOp, view: ViewOf) -> None:
    """An int8 Add or Sub: each input's terms from a table of its levels; where the sum's
    requantization allows (`AddSteps.doubled_combined`), the tables hold twice the terms."""
    from glowmlir.lowering.quantized_kernels import add_terms  # the module that picks this one

    steps = add_terms(b, op, opaque_multipliers=True)
    doubled = steps.doubled_combined is not None
    tables = [by_level(b, level_table(b, (lambda level, term=term: b.shift_left(term(level), 1)) if doubled else term))
              for term in (steps.first, steps.second)]
    combined = steps.doubled_combined if doubled else steps.combined
    low, high = activation_bounds(op, op.dest.type.element_type)
    dest, sources = elementwise_views(op, view)

    def compute(levels: list[SSAValue]) -> SSAValue:
        terms = [b.load(table, [b.as_index(level)]) for table, level in zip(tables, levels)]
        return b.truncate(b.clamp(combined(*terms), low, high), dest.element_type)

    emit_strided_map(b, dest, sources, compute)


def emit_softmax(b: KernelBuilder, op: glowll.SoftMaxOp, view: ViewOf) -> None:
    """An int8 softmax: the exp of each distance to the row maximum from a table of the 256
    distances (index: minus the distance), 0 below diff_min."""
    from glowmlir.lowering.quantized_kernels import exp_of_distance, softmax_rows

    multiplier, shift, diff_min = softmax_parameters(op.input.type.element_type)
    counted = min(LEVELS, 1 - diff_min)  # distances 0, -1, ..., -(counted - 1) count
    exps = stack_table(b)
    with b.loop(0, counted) as entry:
        distance = b.int_sub(0, b.truncate(b.index(entry.index), i32))
        b.store(exp_of_distance(b, distance, multiplier, shift), exps, [entry.index])
    if counted < LEVELS:
        with b.loop(counted, LEVELS) as entry:
            b.store(b.integer(0), exps, [entry.index])
    softmax_rows(b, op, view, lambda distance: (None, b.load(exps, [b.as_index(b.int_sub(0, distance))])))
