"""Kernel selection on `glowll`: quantized instructions a library implements become calls.

* `glowll-select-cmsis-nn` (`glow-compile -use-cmsis`) — Arm CMSIS-NN's s8 functions;
* `glowll-select-hifi4` (`glow-compile -use-hifi4`) — Cadence's HiFi 4 NN library.

Each instruction the library's mapping accepts is replaced by a `glowll.library_call`
whose constant arguments (parameter structs, per-channel multipliers and shifts, a
re-laid-out filter) are new weights in the constant region, and whose scratch buffer (the
size the library's `*_get_buffer_size` asks for) is a `glowll.alloc` marked
`library_scratch`, planned in the activations region like any buffer (it lives for the
call only, so calls share it). Every other quantized instruction keeps our generated
kernel and gets a `library` attribute saying why, which `-dump-ir` shows and
`glow-compile` lists. A convolution `glow-choose-conv-pool-kernels` decided for carries its
`kernel_choice` (who runs it and why), which becomes that reason, or stays on its call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import MemRefType, ModuleOp, StringAttr, UnitAttr, i8
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from glowmlir.dialects import glow, glowll
from glowmlir.dialects.memory import SCRATCH_ATTRIBUTE
from glowmlir.dialects.quant import is_quantized_instruction
from glowmlir.dialects.weights import array_from_dense, dense_from_array, element_type_of, release_weights

LIBRARY_ATTRIBUTE = "library"
"""On an instruction a library did not take: why."""

CONTINUES_ATTRIBUTE = "continues"
"""On the second and later calls that one instruction became (e.g. a fused activation)."""


def insert_weight(name: str, data: np.ndarray, before: Operation, rewriter: PatternRewriter,
                  element_type=None) -> SSAValue:
    """A new `glowll.weight` holding `data` (of `element_type`, default its dtype's), before `before`."""
    op = glowll.WeightOp(name, MemRefType(element_type or element_type_of(data.dtype), data.shape),
                         dense_from_array(data))
    return rewriter.insert(op, InsertPoint.before(before)).buffer


def erase_if_unused(weight: glowll.WeightOp, rewriter: PatternRewriter) -> None:
    """Erases a weight no instruction reads any more (one a selection pass replaced), its
    values let go at once (`release_weights`)."""
    if not weight.buffer.uses:
        rewriter.erase(weight)
        release_weights(weight)


def _allocate_intermediates(op: glowll.InstructionOp, calls: list, rewriter: PatternRewriter) -> None:
    """Replaces each `Intermediate` in the calls' buffers by a new `glowll.alloc` (one per
    intermediate, however many calls name it)."""
    from glowmlir.libraries.common import Intermediate

    allocated: dict[Intermediate, SSAValue] = {}
    for call in calls:
        for index, buffer in enumerate(call.buffers):
            if isinstance(buffer, Intermediate):
                if buffer not in allocated:
                    alloc = rewriter.insert(glowll.AllocOp(buffer.type), InsertPoint.before(op))
                    allocated[buffer] = alloc.buffer
                call.buffers[index] = allocated[buffer]


def _library_call(op: glowll.InstructionOp, call, prefix: str, rewriter: PatternRewriter) -> glowll.LibraryCallOp:
    """Builds the `glowll.library_call` for a mapping's `call`, with its weights and scratch."""
    buffers = list(call.buffers)
    if call.filter_permutation is not None:
        filter_op = buffers[2].owner
        data = np.ascontiguousarray(np.transpose(array_from_dense(filter_op.value), call.filter_permutation))
        buffers[2] = insert_weight(f"{filter_op.name_.data}_{prefix}", data, op, rewriter, buffers[2].type.element_type)
    constants = [insert_weight(f"{prefix}_{suffix}", data, op, rewriter) for suffix, data in call.constants]
    operands = buffers + constants
    scratch = None
    if call.scratch:
        alloc = glowll.AllocOp(MemRefType(i8, [call.scratch]), attributes={SCRATCH_ATTRIBUTE: UnitAttr()})
        rewriter.insert(alloc, InsertPoint.before(op))
        scratch = len(operands)
        operands.append(alloc.buffer)

    def operand(token: str) -> int:
        index = int(token[2:])
        return index if token.startswith("%b") else len(buffers) + index

    def argument(text: str) -> glowll.LibraryArgument:
        if text == "%scratch":  # a cmsis_nn_context
            return glowll.ContextArgument(scratch)
        if text == "%scratch_pointer":  # a plain pointer
            return glowll.NullArgument() if scratch is None else glowll.BufferArgument(scratch)
        if text.startswith("%"):
            return glowll.BufferArgument(operand(text))
        kind, *words = text.split()
        if kind == "context":  # a cmsis_nn_context of a constant (e.g. kernel sums)
            return glowll.ContextArgument(operand(words[0]))
        if kind == "pointers":
            return glowll.PointersArgument(*map(operand, words))
        assert kind == "int" and len(words) == 1, text
        return glowll.IntArgument(int(words[0]))

    return glowll.LibraryCallOp(call.callee, operands[0], operands[1:], [argument(a) for a in call.arguments],
                                replaces=op.name, returns_void=call.returns_void)


class CallLibrary(RewritePattern):
    """A quantized instruction the library's mapping accepts -> the `glowll.library_call`s it
    maps to; one it declines keeps our kernel and a `library` attribute saying why."""

    def __init__(self, mappings: dict[type, Callable], declined: type[Exception], library: str):
        self.mappings, self.declined, self.library = mappings, declined, library
        self.calls = 0  # numbers the calls' weights

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.InstructionOp, rewriter: PatternRewriter) -> None:
        if isinstance(op, glowll.LibraryCallOp) or not is_quantized_instruction(op):
            return
        mapping = self.mappings.get(type(op))
        try:
            if mapping is None:
                raise self.declined(f"no {self.library} function for {op.name}")
            mapped = mapping(op)
        except self.declined as reason:
            choice = op.attributes.get(glow.KERNEL_CHOICE)
            op.attributes[LIBRARY_ATTRIBUTE] = choice or StringAttr(f"not {self.library}: {reason}")
            rewriter.notify_op_modified(op)
            return
        mapped = mapped if isinstance(mapped, list) else [mapped]
        _allocate_intermediates(op, mapped, rewriter)
        replacements = []
        for call in mapped:
            replacements.append(_library_call(op, call, f"{call.callee}_{self.calls}", rewriter))
            if len(replacements) > 1:
                replacements[-1].attributes[CONTINUES_ATTRIBUTE] = UnitAttr()
            elif glow.KERNEL_CHOICE in op.attributes:
                replacements[-1].attributes[glow.KERNEL_CHOICE] = op.attributes[glow.KERNEL_CHOICE]
            self.calls += 1
        rewriter.replace(op, replacements, [])


class EraseUnusedWeight(RewritePattern):
    """A weight nothing reads (what only the replaced instructions read) is not stored."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.WeightOp, rewriter: PatternRewriter) -> None:
        if not op.buffer.uses:
            rewriter.erase(op)


def select_library(function: glowll.FunctionOp, mappings: dict[type, Callable], declined: type[Exception],
                   library: str) -> None:
    """Replaces the instructions `mappings` accept; annotates the other quantized ones."""
    for pattern in (CallLibrary(mappings, declined, library), EraseUnusedWeight()):
        PatternRewriteWalker(pattern, apply_recursively=False).rewrite_region(function.body)


def library_report(function: glowll.FunctionOp) -> list[tuple[str, str, str]]:
    """(instruction, "library" or "generated", callee or reason) for every quantized instruction;
    a generated one with a microkernel (`glowll-select-arm-dsp-kernels`) says which, as
    "generated: arm-dsp"; a call the kernel choice made says why after its callee."""
    rows = []
    for op in function.body.block.ops:
        if isinstance(op, glowll.LibraryCallOp):
            if CONTINUES_ATTRIBUTE in op.attributes:  # the second call of one instruction
                rows[-1] = (rows[-1][0], "library", f"{rows[-1][2]} + {op.callee.data}")
            else:
                choice = op.attributes.get(glow.KERNEL_CHOICE)
                rows.append((op.replaces.data, "library", op.callee.data + (f"; {choice.data}" if choice else "")))
        elif LIBRARY_ATTRIBUTE in op.attributes:
            microkernel = op.properties.get("microkernel")
            kind = "generated" if microkernel is None else f"generated: {microkernel.data}"
            rows.append((op.name, kind, op.attributes[LIBRARY_ATTRIBUTE].data))
    return rows


class SelectLibrary(ModulePass):
    """Quantized instructions the library implements become calls into it (see module doc)."""

    LIBRARY: ClassVar[str]  # key of glowmlir.libraries.LIBRARIES
    TITLE: ClassVar[str]  # how reasons name it

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from glowmlir.libraries import LIBRARIES

        library = LIBRARIES[self.LIBRARY]
        for function in [f for f in op.body.block.ops if isinstance(f, glowll.FunctionOp)]:
            select_library(function, library.MAPPINGS, library.Declined, self.TITLE)
