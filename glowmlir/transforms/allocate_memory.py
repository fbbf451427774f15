"""`glowll-allocate-memory`: byte offsets for every buffer, and the three region sizes.

As in Glow (lib/CodeGen/MemoryAllocator.cpp, lib/Backend/BackendUtils.cpp), every buffer
starts on a 64-byte boundary. Weights and placeholders are laid out back to back in
order (placeholders: inputs first, then outputs). Activations are placed first fit
over their live ranges in schedule order, so buffers whose lifetimes do not overlap
share memory; `reuse=false` gives each its own slot
(`-reuse-activation-memory-allocations=false`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.passes import ModulePass

from glowmlir.dialects import glowll

ALIGNMENT = 64


def align(size: int, alignment: int = ALIGNMENT) -> int:
    return -(-max(size, 1) // alignment) * alignment


class FirstFitAllocator:
    """Glow's MemoryAllocator: first gap from address 0 that fits, sizes rounded to 64."""

    def __init__(self) -> None:
        self.live: dict[object, tuple[int, int]] = {}
        self.peak = 0

    def allocate(self, key: object, size: int) -> int:
        size = align(size)
        start = 0
        for begin, end in sorted(self.live.values()):
            if begin - start >= size:
                break
            start = max(start, end)
        self.live[key] = (start, start + size)
        self.peak = max(self.peak, start + size)
        return start

    def free(self, key: object) -> None:
        del self.live[key]


def live_ranges(function: glowll.FunctionOp) -> dict[glowll.AllocOp, tuple[int, int]]:
    """For each activation buffer, the first and last instruction index that touch it."""
    ranges: dict[glowll.AllocOp, tuple[int, int]] = {}
    instructions = [op for op in function.body.block.ops if isinstance(op, glowll.InstructionOp)]
    for index, op in enumerate(instructions):
        for operand in op.operands:
            alloc = operand.owner
            if isinstance(alloc, glowll.AllocOp):
                first, _ = ranges.get(alloc, (index, index))
                ranges[alloc] = (first, index)
    return ranges


def allocate_function(function: glowll.FunctionOp, reuse: bool = True) -> None:
    def set_offset(buffer: glowll.BufferOp, offset: int) -> None:
        buffer.properties["offset"] = IntegerAttr(offset, i64)

    buffers = [op for op in function.body.block.ops if isinstance(op, glowll.BufferOp)]
    # Constant and mutable regions: back to back, never freed.
    constant_end = 0
    for weight in (b for b in buffers if isinstance(b, glowll.WeightOp)):
        set_offset(weight, constant_end)
        constant_end += align(weight.byte_size)
    placeholders = [b for b in buffers if isinstance(b, glowll.PlaceholderOp)]
    mutable_end = 0
    for placeholder in sorted(placeholders, key=lambda p: p.kind.data != "input"):
        set_offset(placeholder, mutable_end)
        mutable_end += align(placeholder.byte_size)
    # Activations: first fit over live ranges.
    ranges = live_ranges(function)
    allocator = FirstFitAllocator()
    starts: dict[int, list[glowll.AllocOp]] = {}
    ends: dict[int, list[glowll.AllocOp]] = {}
    for alloc, (first, last) in ranges.items():
        starts.setdefault(first, []).append(alloc)
        ends.setdefault(last, []).append(alloc)
    for index in range(max((last for _, last in ranges.values()), default=-1) + 1):
        for alloc in starts.get(index, []):
            set_offset(alloc, allocator.allocate(alloc, alloc.byte_size))
        if reuse:
            for alloc in ends.get(index, []):
                allocator.free(alloc)
    for unused in (b for b in buffers if isinstance(b, glowll.AllocOp) and b not in ranges):
        set_offset(unused, 0)
    function.properties["constant_size"] = IntegerAttr(constant_end, i64)
    function.properties["mutable_size"] = IntegerAttr(mutable_end, i64)
    function.properties["activations_size"] = IntegerAttr(allocator.peak, i64)


@dataclass(frozen=True)
class AllocateMemory(ModulePass):
    """Places every buffer of every `glowll.function` in its region."""

    name = "glowll-allocate-memory"
    reuse: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in op.body.block.ops:
            if isinstance(function, glowll.FunctionOp):
                allocate_function(function, self.reuse)
