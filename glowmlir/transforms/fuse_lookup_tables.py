"""`glowll-fuse-lookup-tables`: an int8 lookup table that alone reads a convolution's or
FullyConnected's output is applied by that op's kernel as it stores each output.

`glowll.int_lookup_table %y, %c, %table` after `glowll.convolution %c, ...` (or
`glowll.fully_connected`), where `%c` is a buffer nothing else reads, becomes
`glowll.convolution %y, ... lookup %table {lookup_input = <%c's element type>}`: the kernel
requantizes each sum to `%c`'s type as before (`glow.convolved_element`), clamps it, then
stores `table[level + 128]` in `%y`. The outputs are the same bits; the pass over memory that
read `%c` back and the buffer `%c` are gone.

It runs after kernel selection, so it knows each op's kernel: an op left to the portable
kernels (`lowering.quantized_kernels`) or given a microkernel that applies tables
(`Microkernel.lookup_tables`) takes the table; a library call (CMSIS-NN, HiFi4) is not a
`glowll.convolution` any longer and keeps its separate table, as does an op with a fused pool
(the table applies to each output, the pool to a window of them) or a `residual`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, i8
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from glowmlir.backends import microkernel
from glowmlir.dialects import glowll
from glowmlir.dialects.quant import UniformQuantizedType, storage_type

TABLE_PRODUCERS = (glowll.ConvolutionOp, glowll.FullyConnectedOp)


def _applies_tables(op: glowll.ConvolutionOp | glowll.FullyConnectedOp) -> bool:
    """The op's kernel can apply a table as it stores: the portable one, or a microkernel that says so."""
    return op.microkernel is None or microkernel(op.microkernel.data).applies_tables(op)


def fusable_producer(lookup: glowll.IntLookupTableOp) -> glowll.ConvolutionOp | glowll.FullyConnectedOp | None:
    """The convolution or FullyConnected whose output only `lookup` reads, if it can take the table."""
    levels = lookup.input
    element = levels.type.element_type
    if not isinstance(element, UniformQuantizedType) or storage_type(element) != i8 or element.per_channel:
        return None
    if not isinstance(levels.owner, glowll.AllocOp) or levels.uses.get_length() != 2:
        return None
    producer = next((use.operation for use in levels.uses if use.operation is not lookup), None)
    if not isinstance(producer, TABLE_PRODUCERS) or producer.dest is not levels or producer.parent is not lookup.parent:
        return None
    if producer.lookup_table is not None or getattr(producer, "pool", None) is not None \
            or getattr(producer, "residual", None) is not None or not _applies_tables(producer):
        return None
    if lookup.dest in producer.operands:
        return None
    return producer


def _before(value: SSAValue, op: Operation) -> bool:
    """Moves the operand-free op defining `value` (a buffer: weight, placeholder, alloc) ahead of
    `op` if it comes after it; False if it cannot be moved."""
    owner = value.owner
    if not isinstance(owner, Operation) or owner.parent is not op.parent:
        return owner is not None
    block = op.parent
    if block.get_operation_index(owner) < block.get_operation_index(op):
        return True
    if owner.operands:
        return False
    owner.detach()
    Rewriter.insert_op(owner, InsertPoint.before(op))
    return True


def fuse(lookup: glowll.IntLookupTableOp, producer: glowll.ConvolutionOp | glowll.FullyConnectedOp) -> None:
    """Rebuilds `producer` writing `lookup`'s dest through its table; erases `lookup` and the
    buffer it read."""
    if not (_before(lookup.dest, producer) and _before(lookup.table, producer)):
        return
    levels = producer.dest
    fused = glowll.with_operands(producer, dest=lookup.dest, lookup_table=lookup.table)
    fused.properties["lookup_input"] = levels.type.element_type
    Rewriter.replace_op(producer, fused, new_results=[])
    Rewriter.erase_op(lookup)
    Rewriter.erase_op(levels.owner)


@dataclass(frozen=True)
class FuseLookupTables(ModulePass):
    """Applies each int8 lookup table that alone reads a convolution's or FullyConnected's output
    in that op's kernel (see the module doc)."""

    name = "glowll-fuse-lookup-tables"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for lookup in [o for o in op.walk() if isinstance(o, glowll.IntLookupTableOp)]:
            producer = fusable_producer(lookup)
            if producer is not None:
                fuse(lookup, producer)
