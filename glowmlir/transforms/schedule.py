"""`glow-schedule-for-memory`: an op order that lowers the peak of live activations.

Where the graph branches (Inception, DenseNet, SqueezeNet fire modules) the order of the
branches decides how many tensors are alive together. As Glow's ChildMemSizeBased
scheduler does, each op first computes the operand whose sub-graph needs the most memory,
so that its intermediates are freed before the smaller branches start (Sethi–Ullman
order). The new order is kept only if its peak, measured on the graph, is lower.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from glowmlir.dialects import glow

_STORAGE = (glow.PlaceholderOp, glow.StateOp, glow.ConstantOp, glow.SaveOp, glow.StateStoreOp)


def _result_bytes(op: Operation) -> int:
    if isinstance(op, _STORAGE) or not op.results:
        return 0
    return math.prod(glow.shape_of(op.results[0])) * 4  # Python ints: no int64 wrap-around on huge shapes


def peak_live_bytes(order: list[Operation]) -> int:
    """Most bytes of compute results alive at once when ops run in `order`."""
    position = {op: i for i, op in enumerate(order)}
    last_use = {op: max((position[u.operation] for u in op.results[0].uses), default=position[op])
                for op in order if op.results}
    live = peak = 0
    ends: dict[int, int] = {}
    for i, op in enumerate(order):
        live += _result_bytes(op)
        peak = max(peak, live)
        if op in last_use:
            ends[last_use[op]] = ends.get(last_use[op], 0) + _result_bytes(op)
        live -= ends.pop(i, 0)
    return peak


def _operand_ops(op: Operation) -> list[Operation]:
    """The ops computing `op`'s operands, each once, in operand order."""
    return list(dict.fromkeys(o.owner for o in op.operands if isinstance(o.owner, Operation)))


def memory_first_order(ops: list[Operation]) -> list[Operation]:
    """Depth-first from the outputs, the most memory-hungry operand sub-graph first.

    `ops` is a block's order, in which operands come before their users; both walks are
    iterative, so that graphs thousands of ops deep do not exhaust Python's stack."""
    need: dict[Operation, int] = {}  # bytes needed to compute an op with its operands in the chosen order
    children: dict[Operation, list[Operation]] = {}  # its operand ops, most needy first
    for op in ops:
        children[op] = sorted(_operand_ops(op), key=need.__getitem__, reverse=True)
        held = best = 0
        for child in children[op]:
            best = max(best, held + need[child])
            held += _result_bytes(child)
        need[op] = max(best, held + _result_bytes(op))

    order: list[Operation] = []
    placed: set[Operation] = set()

    def visit(root: Operation) -> None:
        """Appends `root` after its unplaced operand sub-graphs, each in `children` order."""
        stack = [(root, False)]
        while stack:
            op, operands_placed = stack.pop()
            if operands_placed:
                order.append(op)
            elif op not in placed:
                placed.add(op)
                stack.append((op, True))
                stack.extend((child, False) for child in reversed(children[op]))

    for op in ops:
        if isinstance(op, glow.PlaceholderOp | glow.StateOp):
            visit(op)
    for op in ops:
        if isinstance(op, glow.SaveOp | glow.StateStoreOp):
            visit(op)
    for op in ops:  # anything not feeding an output keeps its place at the end
        visit(op)
    return order


@dataclass(frozen=True)
class ScheduleForMemory(ModulePass):
    """Reorders each `glow.function` so that fewer activations are alive at once."""

    name = "glow-schedule-for-memory"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in op.walk():
            if not isinstance(function, glow.FunctionOp):
                continue
            block = function.body.block
            current = list(block.ops)
            proposed = memory_first_order(current)
            if peak_live_bytes(proposed) < peak_live_bytes(current):
                for item in proposed:
                    item.detach()
                block.add_ops(proposed)
