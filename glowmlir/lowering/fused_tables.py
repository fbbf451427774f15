"""A lookup table fused into a convolution's or FullyConnected's kernel
(`glowll-fuse-lookup-tables`): each int8 level the kernel stores is replaced by its table
entry, in the store's own loop. Every kernel family (the portable kernels, the Arm DSP,
Helium, x86 VNNI, host vector and size-first ones) applies its op's table here: lane by
lane from memory, or, where a backend holds the table in registers (`TableInRegisters`:
AVX-512 VBMI's `vpermi2b`, `backends.x86.vnni_kernels.PermutedTable`), a vector at once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, VectorType, i32
from xdsl.ir import SSAValue
from xdsl.irdl import IRDLOperation

from glowmlir.lowering.kernel_builder import KernelBuilder, View
from glowmlir.lowering.vector_columns import join


def lookup_table_by_level(op: IRDLOperation, view) -> View | None:
    """A convolution's or FullyConnected's fused `lookup_table` (glowll-fuse-lookup-tables) seen
    from its middle entry, so that an int8 level indexes it as it is; None without one."""
    table = getattr(op, "lookup_table", None)
    if table is None:
        return None
    entries = view(table)
    return entries.reshaped(entries.shape, entries.strides, entries.offset + 128)


class TableInRegisters(Protocol):
    """A fused table a backend's kernel loaded into vector registers once (in place of the
    domain's `lookup_table` view), which looks a whole vector of int8 levels up at once."""

    def look_up(self, levels: SSAValue) -> SSAValue:
        """Each int8 level (a vector of them, or one level) replaced by its entry."""
        ...


def looked_up_by_vectors(b: KernelBuilder, levels: SSAValue, by_level: View, width: int,
                         entries_of: Callable[[SSAValue], SSAValue]) -> SSAValue:
    """A `TableInRegisters`' lookup of int8 `levels` by `entries_of`, which takes `width` of
    them at once: a lone level read from memory (`by_level`, `lookup_table_by_level`); fewer
    lanes widened to `width` (repeated) and the extra entries dropped; more cut into vectors of
    `width`, their entries joined."""
    if not isinstance(levels.type, VectorType):
        return b.load(by_level, [b.as_index(levels)])
    lanes = levels.type.get_shape()[0]
    vector = VectorType(levels.type.element_type, [width])
    if lanes > width:
        parts = [b.emit(llvm.ShuffleVectorOp(levels, levels, DenseArrayBase.from_list(
            i32, list(range(first, first + width))), vector)) for first in range(0, lanes, width)]
        return join(b, [entries_of(part) for part in parts])
    if lanes == width:
        return entries_of(levels)
    widened = b.emit(llvm.ShuffleVectorOp(levels, levels, DenseArrayBase.from_list(
        i32, [lane % lanes for lane in range(width)]), vector))
    entries = entries_of(widened)
    return b.emit(llvm.ShuffleVectorOp(entries, entries, DenseArrayBase.from_list(i32, list(range(lanes))),
                                       levels.type))


def looked_up(b: KernelBuilder, table: View | TableInRegisters | None, levels: SSAValue) -> SSAValue:
    """Clamped int8 levels as stored, each replaced by its entry of a fused lookup table
    (`lookup_table_by_level`; none: as they are): an int8 or i32 level, or a vector of int8
    levels, one lane at a time (a table read per output, in the store's own loop: no gather
    takes 8-bit indices on Helium nor AVX-512), or by a table in registers
    (`TableInRegisters`). Every kernel family applies its op's table here, to the levels it
    would store."""
    if table is None:
        return levels
    if not isinstance(table, View):
        return table.look_up(levels)
    if not isinstance(levels.type, VectorType):
        return b.load(table, [b.as_index(levels)])
    # Through a stack slot, lane by lane (LLVM's SROA makes it lane extracts and inserts).
    lanes = levels.type.get_shape()[0]
    slot = View.contiguous(b.alloca(lanes, levels.type.element_type, alignment=min(lanes, 16)), (lanes,),
                           element_type=levels.type.element_type)
    # a GEP of the vector's type: llvmlite stores only through a pointer to the value's type
    b.emit(llvm.StoreOp(levels, b.emit(llvm.GEPOp(slot.base, [0], levels.type, inbounds=True)), alignment=1))
    for lane in range(lanes):
        b.store(b.load(table, [b.as_index(b.load(slot, [lane]))]), slot, [lane])
    return b.emit(llvm.LoadOp(slot.base, levels.type, alignment=1))
