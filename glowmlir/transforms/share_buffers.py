"""`glowll-share-buffers`: instructions write where their result is needed (Glow's shareBuffers).

* Concat in place: a buffer whose last use is being inserted into a Concat's output
  becomes a view of its slice of that output, so its producer writes there directly and
  the `insert_tensor` copy disappears. Only contiguous slices qualify (all dimensions
  before the concatenation axis are 1, as in batch-1 CNNs).
* In place: when an elementwise instruction's source buffer (or a convolution's residual)
  dies at it and has the destination's shape, source and destination become one buffer
  (the source's producer writes into the destination, or the instruction overwrites its
  source). Each element is read before it is written, at the same position.

Buffer definitions are first hoisted to the top of the function so that a new view can be
defined before every instruction that uses it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from glowmlir.dialects import glow, glowll


def _uses_by_instruction(instructions: list[glowll.InstructionOp]) -> dict[SSAValue, list[int]]:
    """For each buffer value (views included), the indices of the instructions using it directly."""
    uses: dict[SSAValue, list[int]] = {}
    for index, op in enumerate(instructions):
        for operand in dict.fromkeys(op.operands):
            uses.setdefault(operand, []).append(index)
    return uses


def _merge_uses(uses: dict[SSAValue, list[int]], old: SSAValue, new: SSAValue) -> None:
    """`old`'s uses become `new`'s (`old` is replaced by `new` everywhere)."""
    moved = uses.pop(old, [])
    if moved:
        uses[new] = sorted(set(uses.get(new, [])) | set(moved))


def _forget_instruction(uses: dict[SSAValue, list[int]], op: glowll.InstructionOp, index: int) -> None:
    """The instruction at `index` is gone: its operands no longer use it."""
    for operand in dict.fromkeys(op.operands):
        uses[operand].remove(index)


def _memory_uses(value: SSAValue, uses: dict[SSAValue, list[int]]) -> list[int]:
    """Instruction indices touching `value`'s memory through it or any view of it."""
    indices = list(uses.get(value, []))
    for use in value.uses:
        if isinstance(use.operation, glowll.TensorViewOp):
            indices += _memory_uses(use.operation.buffer, uses)
    return sorted(indices)


def _contiguous_offset(dest_shape, src_shape, offsets) -> int | None:
    """The flat element offset of a slice, or None when the slice is not contiguous."""
    axis = next((d for d, (a, b) in enumerate(zip(dest_shape, src_shape)) if a != b), len(dest_shape))
    if any(size != 1 for size in src_shape[:axis]) or tuple(src_shape[axis + 1:]) != tuple(dest_shape[axis + 1:]):
        return None
    strides = np.cumprod((list(dest_shape[1:]) + [1])[::-1])[::-1]
    return int(sum(o * s for o, s in zip(offsets, strides)))


def _written_region(op: glowll.InstructionOp) -> tuple[object, int, int]:
    """(root buffer, first element, end element) of the memory an instruction writes."""
    root, start = glowll.root_buffer(op.dest)
    if isinstance(op, glowll.InsertTensorOp):
        offset = _contiguous_offset(op.dest.type.get_shape(), op.input.type.get_shape(), op.offsets.get_values())
        if offset is not None:
            return root, start + offset, start + offset + op.input.type.element_count()
    return root, start, start + op.dest.type.element_count()


def _written_between(instructions: list[glowll.InstructionOp], dest: SSAValue, first: int, last: int,
                     region: tuple[int, int]) -> bool:
    """Whether an instruction in [first, last) writes `region` (elements) of dest's memory."""
    root, base = glowll.root_buffer(dest)
    for other in instructions[first:last]:
        other_root, begin, end = _written_region(other)
        if other_root is root and begin < base + region[1] and base + region[0] < end:
            return True
    return False


def _replace_buffer(old: Operation, new: SSAValue) -> None:
    old.results[0].replace_all_uses_with(new)
    old.detach()
    old.erase()


def _hoist_buffer_definitions(function: glowll.FunctionOp) -> None:
    """Moves buffers and views to the top, in order."""
    block = function.body.block
    definitions = [op for op in block.ops if isinstance(op, glowll.BufferOp | glowll.TensorViewOp)]
    for op in definitions:
        op.detach()
    first = block.first_op
    for op in definitions:
        if first is None:
            block.add_op(op)
        else:
            block.insert_op_before(op, first)


def share_buffers(function: glowll.FunctionOp) -> None:
    _hoist_buffer_definitions(function)
    block = function.body.block
    instructions = [op for op in block.ops if isinstance(op, glowll.InstructionOp)]
    uses = _uses_by_instruction(instructions)
    # Backwards, so that an instruction removed (always the one visited) is after every one
    # still to visit: indices keep their original numbering, `instructions[:index]` is never
    # changed, and the use lists are updated with each change (not recomputed: quadratic).
    for index in range(len(instructions) - 1, -1, -1):
        op = instructions[index]
        if isinstance(op, glowll.InsertTensorOp):
            source = op.input
            if not isinstance(source.owner, glowll.AllocOp) or source == op.dest \
                    or _memory_uses(source, uses)[-1] != index:
                continue
            offset = _contiguous_offset(op.dest.type.get_shape(), source.type.get_shape(), op.offsets.get_values())
            if offset is None or _written_between(instructions, op.dest, _memory_uses(source, uses)[0], index,
                                                  (offset, offset + source.type.element_count())):
                continue  # the source's producer would write where dest is still written afterwards
            view = glowll.TensorViewOp(op.dest, source.type, offset)
            # After the buffer definitions (any of which an in-place merge may have erased),
            # before the first instruction (still there: only the one visited is ever removed).
            block.insert_op_before(view, instructions[0])
            _forget_instruction(uses, op, index)
            _merge_uses(uses, source, view.buffer)
            _replace_buffer(source.owner, view.buffer)
            op.detach()
            op.erase()
        elif isinstance(op, glowll.ElementwiseOp) and op.kind.data in glow.in_place_kinds():
            broadcast = [i for i in op.inputs if i.type != op.dest.type]
            _merge_in_place(op, index, op.inputs, broadcast, uses)
        elif isinstance(op, glowll.ConvolutionOp) and op.residual is not None:
            _merge_in_place(op, index, [op.residual], [op.input, op.filter, op.bias], uses)


def _merge_in_place(op: glowll.InstructionOp, index: int, sources, other_reads, uses) -> bool:
    """Makes `op` write over one of `sources` (read at the position it writes) that dies at
    it: of the two buffers, whichever is a plain alloc is dropped. `other_reads` are the
    operands read elsewhere than where they are written: they must not share that memory."""
    dest = op.dest
    if _memory_uses(dest, uses)[0] != index:
        return False
    for source in sources:
        root, _ = glowll.root_buffer(source)
        if source.type != dest.type or not isinstance(root, glowll.AllocOp) \
                or _memory_uses(root.buffer, uses)[-1] != index:
            continue
        # Another read of that memory (a convolution's input, a broadcast operand) would
        # see it half overwritten.
        if any(glowll.root_buffer(o)[0] is root for o in other_reads):
            continue
        if isinstance(dest.owner, glowll.AllocOp):
            _merge_uses(uses, dest, source)
            _replace_buffer(dest.owner, source)
        elif isinstance(source.owner, glowll.AllocOp):
            _merge_uses(uses, source, dest)
            _replace_buffer(source.owner, dest)
        else:
            continue
        return True
    return False


@dataclass(frozen=True)
class ShareBuffers(ModulePass):
    """Concat producers write into their slices; elementwise ops overwrite dying sources."""

    name = "glowll-share-buffers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in op.body.block.ops:
            if isinstance(function, glowll.FunctionOp):
                share_buffers(function)
