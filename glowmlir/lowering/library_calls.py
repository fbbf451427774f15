"""`glowll.library_call` in the `llvm` dialect: a call to an external C function.

Buffers are passed as pointers into their regions. The small structs that hold pointers
(CMSIS-NN's `cmsis_nn_context` and per-channel quantization parameters) are built on the
stack right before the call, since region addresses are only known at run time; every
pointer-free argument struct lives in the constant region as a weight. The callee returns
an `int32_t` status, 0 for success, which the entry point passes on.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import llvm
from xdsl.dialects.builtin import IntegerAttr, i32, i64
from xdsl.ir import Region, SSAValue

from glowmlir.dialects import glowll
from glowmlir.lowering.kernel_builder import KernelBuilder, View

POINTER = llvm.LLVMPointerType()


def argument_types(op: glowll.LibraryCallOp) -> list:
    """The C parameter types: a pointer, or int32 for `#glowll.int<V>`."""
    return [POINTER if argument.POINTER else i32 for argument in op.arguments]


def declaration(op: glowll.LibraryCallOp) -> llvm.FuncOp:
    """`declare i32 @callee(...)` (`void` for a callee without a status)."""
    result = llvm.LLVMVoidType() if op.returns_void is not None else i32
    return llvm.FuncOp(op.callee.data, llvm.LLVMFunctionType(argument_types(op), result),
                       linkage=llvm.LinkageAttr("external"), body=Region())


def _stack_struct(b: KernelBuilder, fields: list[SSAValue]) -> SSAValue:
    """A struct of pointer-sized slots on the stack (allocated in the entry block) holding
    `fields` (pointers, or an int32 in the last slot: C's layout of `{void *; int32_t}` and
    `{T *; T *}`), its address. Each field is addressed with a GEP of its own type, so
    llvmlite's typed pointers agree."""
    entry = b.region.blocks[0]
    count = llvm.ConstantOp(IntegerAttr(len(fields), i64), i64)
    slot = llvm.AllocaOp(count.results[0], POINTER, alignment=8)
    entry.insert_ops_before([count, slot], entry.first_op) if entry.first_op else entry.add_ops([count, slot])
    for index, value in enumerate(fields):
        address = b.emit(llvm.GEPOp(slot.results[0], [index], POINTER, inbounds=True))
        b.emit(llvm.StoreOp(value, b.emit(llvm.GEPOp(address, [0], value.type, inbounds=True))))
    return slot.results[0]


def emit_library_call(b: KernelBuilder, op: glowll.LibraryCallOp, view: Callable[[SSAValue], View]) -> SSAValue:
    """Emits the call; returns its int32 status."""

    def pointer(index: int | None) -> SSAValue:
        return b.emit(llvm.ZeroOp(result_types=[POINTER])) if index is None else view(op.operands[index]).base

    def emit(argument: glowll.LibraryArgument) -> SSAValue:
        match argument:
            case glowll.BufferArgument():
                return pointer(argument.operand.data)
            case glowll.IntArgument():
                return b.integer(argument.value.data)
            case glowll.NullArgument():
                return pointer(None)
            case glowll.ContextArgument():
                scratch = argument.operands[0] if argument.operands else None
                size = 0 if scratch is None else glowll.byte_size(op.operands[scratch].type)
                return _stack_struct(b, [pointer(scratch), b.integer(size)])
            case glowll.PointersArgument():
                return _stack_struct(b, [pointer(index) for index in argument.operands])
        raise AssertionError(argument)  # the verifier admits only the forms above

    arguments = [emit(argument) for argument in op.arguments]
    if op.returns_void is not None:
        b.emit(llvm.CallOp(op.callee.data, *arguments))
        return b.integer(0)
    return b.emit(llvm.CallOp(op.callee.data, *arguments, return_type=i32))
