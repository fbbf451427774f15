"""`lower-glowll-to-llvm`: each allocated `glowll.function` becomes the bundle entry point.

The entry is `i32 @<name>(ptr noalias %constantWeight, ptr noalias %mutableWeight,
ptr noalias %activations)`, Glow's signature. Every buffer is addressed as its region's
base pointer plus its byte offset, so weights never pass through LLVM IR: they stay in
the constant region the caller supplies.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, ModuleOp, UnitAttr, i32
from xdsl.ir import Block, Region, SSAValue
from xdsl.passes import ModulePass

from glowmlir.dialects import glowll
from glowmlir.errors import GlowError
from glowmlir.lowering.kernel_builder import KernelBuilder, View
from glowmlir.lowering.kernels import KERNELS

REGION_ARGUMENTS = ("constantWeight", "mutableWeight", "activations")


def lower_function(function: glowll.FunctionOp) -> llvm.FuncOp:
    pointer = llvm.LLVMPointerType()
    region = Region()
    entry = Block(arg_types=[pointer] * 3)
    region.add_block(entry)
    builder = KernelBuilder(region, entry)
    region_base = dict(zip(glowll.REGIONS, entry.args))

    def view(buffer: SSAValue) -> View:
        definition = buffer.owner
        assert isinstance(definition, glowll.BufferOp)
        if definition.offset is None:
            raise GlowError(f"{function.sym_name.data}: buffers must be allocated before lowering to llvm "
                            f"(run glowll-allocate-memory)")
        base = region_base[definition.REGION]
        element_size = buffer.type.element_type.compile_time_size
        offset = definition.offset.value.data
        if offset % element_size:
            return View.contiguous(builder.byte_address(base, offset), buffer.type.get_shape())
        return View.contiguous(base, buffer.type.get_shape(), offset // element_size)

    for op in function.body.block.ops:
        if isinstance(op, glowll.BufferOp):
            continue
        KERNELS[type(op)](builder, op, view)
    builder.emit(llvm.ReturnOp(builder.emit(llvm.ConstantOp(IntegerAttr(0, i32), i32))))

    noalias = DictionaryAttr({"llvm.noalias": UnitAttr(), "llvm.align": IntegerAttr(64, 64)})
    return llvm.FuncOp(function.sym_name.data, llvm.LLVMFunctionType([pointer] * 3, i32),
                       linkage=llvm.LinkageAttr("external"), body=region,
                       other_props={"arg_attrs": ArrayAttr([noalias] * 3)})


@dataclass(frozen=True)
class LowerGlowLLToLLVM(ModulePass):
    """Replaces every `glowll.function` by an `llvm.func` of loop nests."""

    name = "lower-glowll-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in list(op.body.block.ops):
            if isinstance(function, glowll.FunctionOp):
                lowered = lower_function(function)
                op.body.block.insert_op_before(lowered, function)
                function.detach()
                function.erase()
