"""Memory allocation on `glowll`: liveness, then byte offsets in the three regions.

* `glowll-liveness` records on every `glowll.alloc` its `live_range`: the first and last
  instruction (in schedule order) that touches its memory, through any view.
* `glowll-allocate-memory` places every buffer on a 64-byte boundary (Glow's
  TensorAlignment). Weights go back to back, identical weights stored once; placeholders
  likewise, inputs before outputs (Glow's order), state last (the ready word first: the
  state is one span of the mutable region, which the header gives; the activations'
  planner never sees it). Activations are placed by several strategies — Glow's three
  orderings, greedy by size (TFLite Micro, TVM) and greedy by conflicts — and the smallest
  result is kept. The function records the region sizes, the strategy chosen and
  `activations_lower_bound`: the most bytes live at any one instruction, which no placement
  can beat. `reuse=false` gives every activation its own slot
  (`-reuse-activation-memory-allocations=false`).

Every buffer must end within what the target can address: a region is one object to
LLVM, whose offsets are signed integers of the pointer's width, so no byte may lie past
PTRDIFF_MAX (2^31 - 1 on a 32-bit target, 2^63 - 1 on a 64-bit one). A bundle past that
is refused (`pointer_width`, 64 unless the pass is told the target's).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.passes import ModulePass

from glowmlir.dialects import glow, glowll
from glowmlir.dialects.memory import align
from glowmlir.dialects.weights import array_from_dense
from glowmlir.errors import GlowError

# ----------------------------------------------------------------------------- liveness


def live_ranges(function: glowll.FunctionOp) -> dict[glowll.AllocOp, tuple[int, int]]:
    """For each activation buffer, the first and last instruction index touching its memory."""
    ranges: dict[glowll.AllocOp, tuple[int, int]] = {}
    instructions = [op for op in function.body.block.ops if isinstance(op, glowll.InstructionOp)]
    for index, op in enumerate(instructions):
        for operand in op.operands:
            root, _ = glowll.root_buffer(operand)
            if isinstance(root, glowll.AllocOp):
                first, _ = ranges.get(root, (index, index))
                ranges[root] = (first, index)
    return ranges


@dataclass(frozen=True)
class Liveness(ModulePass):
    """Annotates every activation buffer with its live range (instruction indices)."""

    name = "glowll-liveness"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in op.walk():
            if isinstance(function, glowll.FunctionOp):
                for alloc, (first, last) in live_ranges(function).items():
                    alloc.properties["live_range"] = glow.ints([first, last])


# ----------------------------------------------------------------------------- placement


@dataclass(frozen=True)
class Interval:
    """A buffer to place: `size` bytes live from instruction `start` to `stop` inclusive.

    Buffers start at `ALIGNMENT`-aligned offsets, so each takes `extent` bytes, except that
    the region may end right after the last byte of its topmost buffer."""

    key: object
    size: int
    start: int
    stop: int

    @property
    def extent(self) -> int:
        return align(self.size)

    def overlaps(self, other: Interval) -> bool:
        return self.start <= other.stop and other.start <= self.stop


def lower_bound(intervals: Sequence[Interval]) -> int:
    """The most bytes live at any one instruction (all aligned but the topmost buffer)."""
    if not intervals:
        return 0
    steps = sorted({i.start for i in intervals})  # the live set only grows at a start
    return max(sum(i.extent for i in live) - max(i.extent - i.size for i in live)
               for live in ([i for i in intervals if i.start <= t <= i.stop] for t in steps))


def place(order: Sequence[Interval]) -> tuple[dict[object, int], int]:
    """Places buffers in the given order, each at the lowest offset free over its lifetime."""
    placed: list[tuple[Interval, int]] = []
    offsets: dict[object, int] = {}
    for interval in order:
        busy = sorted((offset, offset + other.extent) for other, offset in placed if other.overlaps(interval))
        offset = 0
        for begin, end in busy:
            if begin - offset >= interval.extent:
                break
            offset = max(offset, end)
        placed.append((interval, offset))
        offsets[interval.key] = offset
    return offsets, max((offset + i.size for i, offset in placed), default=0)


def _by_live_size(intervals: Sequence[Interval], prefer: Callable[[Interval], tuple]) -> list[Interval]:
    """Glow's MaxLiveSize orderings: at the instruction with the most unplaced bytes live,
    take the buffer that `prefer` ranks highest; repeat."""
    remaining = list(intervals)
    order = []
    # live[t]: the bytes of the unplaced buffers live at instruction t (updated, not recomputed).
    live = [0] * (max((i.stop for i in remaining), default=-1) + 1)
    for interval in remaining:
        for t in range(interval.start, interval.stop + 1):
            live[t] += interval.extent
    while remaining:
        first, last = min(i.start for i in remaining), max(i.stop for i in remaining)
        busiest = max(range(first, last + 1), key=live.__getitem__)  # the first of the busiest
        choice = max((i for i in remaining if i.start <= busiest <= i.stop), key=prefer)
        order.append(choice)
        remaining.remove(choice)
        for t in range(choice.start, choice.stop + 1):
            live[t] -= choice.extent
    return order


def _by_conflicts(intervals: Sequence[Interval]) -> list[Interval]:
    """Most-constrained first: the buffers overlapping the most others, then the biggest."""
    conflicts = {i.key: sum(1 for j in intervals if j is not i and i.overlaps(j)) for i in intervals}
    return sorted(intervals, key=lambda i: (-conflicts[i.key], -i.size))


STRATEGIES: dict[str, Callable[[Sequence[Interval]], list[Interval]]] = {
    "glow-max-live-size-max-buffer-size": lambda iv: _by_live_size(iv, lambda i: (i.size, i.stop - i.start)),
    "glow-max-live-size-max-buffer-time": lambda iv: _by_live_size(iv, lambda i: (i.stop - i.start, i.size)),
    "glow-same-order": lambda iv: list(iv),
    "greedy-by-size": lambda iv: sorted(iv, key=lambda i: (-i.size, i.start - i.stop)),
    "greedy-by-conflicts": _by_conflicts,
}
"""Orderings tried by the allocator (see the module docstring)."""


@dataclass(frozen=True)
class Allocation:
    offsets: dict[object, int]
    size: int
    strategy: str
    lower_bound: int


def allocate_intervals(intervals: Sequence[Interval], strategies: Sequence[str] = tuple(STRATEGIES)) -> Allocation:
    """Tries each strategy; keeps the smallest (the first that reaches the lower bound wins)."""
    bound = lower_bound(intervals)
    best: Allocation | None = None
    for name in strategies:
        offsets, size = place(STRATEGIES[name](intervals))
        if best is None or size < best.size:
            best = Allocation(offsets, size, name, bound)
        if size == bound:
            break
    return best or Allocation({}, 0, strategies[0], 0)


# ----------------------------------------------------------------------------- address space


def max_object_size(pointer_width: int) -> int:
    """The most bytes one region may span on a target with `pointer_width`-bit pointers:
    PTRDIFF_MAX, as LLVM's (signed) GEP offsets and C's pointer differences allow."""
    return 2 ** (pointer_width - 1) - 1


def describe_buffer(buffer: glowll.BufferOp) -> str:
    if isinstance(buffer, glowll.WeightOp):
        return f"weight \"{buffer.name_.data}\""
    if isinstance(buffer, glowll.PlaceholderOp):
        return f"{buffer.kind.data} \"{buffer.name_.data}\""
    return f"an activation buffer {buffer.buffer.type}"


def check_address_space(placed: Iterable[tuple[glowll.BufferOp, int]], pointer_width: int) -> None:
    """Refuses the first buffer (at its byte offset) that ends past what a
    `pointer_width`-bit target can address in one region."""
    limit = max_object_size(pointer_width)
    for buffer, offset in placed:
        if offset + buffer.byte_size > limit:
            raise GlowError(f"{describe_buffer(buffer)} ({buffer.byte_size:,} bytes at offset {offset:,} of the "
                            f"{buffer.REGION} region) ends past the {limit:,} bytes one region can span with "
                            f"{pointer_width}-bit pointers")


# ----------------------------------------------------------------------------- the pass


def _allocate_weights(weights: Sequence[glowll.WeightOp], offsets: dict[glowll.BufferOp, int]) -> int:
    """Back to back in order; a weight whose bytes equal an earlier one shares its offset.

    Only weights of the same type and shape are compared, byte for byte (distinct ones differ
    in their first bytes): no copy or hash of every weight (VGG-19's 548 MB took 0.7 s)."""
    end = 0
    seen: dict[tuple, list[tuple[bytes, int]]] = {}
    for weight in weights:
        if weight.value is not None:
            data = weight.value.data.data  # the attribute's bytes, uncopied
            same_kind = seen.setdefault((array_from_dense(weight.value).dtype.str, weight.value.get_shape()), [])
            shared = next((offset for other, offset in same_kind if other == data), None)
            if shared is not None:
                offsets[weight] = shared
                continue
            same_kind.append((data, end))
        offsets[weight] = end
        end += align(weight.byte_size)
    return end


def allocate_function(function: glowll.FunctionOp, reuse: bool = True, pointer_width: int = 64) -> Allocation:
    buffers = [op for op in function.body.block.ops if isinstance(op, glowll.BufferOp)]
    offsets: dict[glowll.BufferOp, int] = {}
    constant_size = _allocate_weights([b for b in buffers if isinstance(b, glowll.WeightOp)], offsets)
    mutable_end = 0
    placeholders = [b for b in buffers if isinstance(b, glowll.PlaceholderOp)]
    for placeholder in sorted(placeholders, key=lambda p: list(glowll.PlaceholderKind).index(p.kind.data)):
        offsets[placeholder] = mutable_end
        mutable_end += align(placeholder.byte_size)
    ranges = live_ranges(function)
    everything = (0, max((stop for _, stop in ranges.values()), default=0))
    intervals = [Interval(alloc, alloc.byte_size, *(first_last if reuse else everything))
                 for alloc, first_last in ranges.items()]
    allocation = allocate_intervals(intervals, tuple(STRATEGIES) if reuse else ("glow-same-order",))
    for alloc in (b for b in buffers if isinstance(b, glowll.AllocOp)):
        offsets[alloc] = allocation.offsets.get(alloc, 0)
    check_address_space(offsets.items(), pointer_width)
    for buffer, offset in offsets.items():
        buffer.properties["offset"] = IntegerAttr(offset, i64)
    function.properties["constant_size"] = IntegerAttr(constant_size, i64)
    function.properties["mutable_size"] = IntegerAttr(mutable_end, i64)
    function.properties["activations_size"] = IntegerAttr(allocation.size, i64)
    function.properties["activations_lower_bound"] = IntegerAttr(allocation.lower_bound, i64)
    function.properties["allocation_strategy"] = StringAttr(allocation.strategy)
    return allocation


@dataclass(frozen=True)
class AllocateMemory(ModulePass):
    """Places every buffer of every `glowll.function` in its region."""

    name = "glowll-allocate-memory"
    reuse: bool = True
    pointer_width: int = 64

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in op.body.block.ops:
            if isinstance(function, glowll.FunctionOp):
                allocate_function(function, self.reuse, self.pointer_width)
