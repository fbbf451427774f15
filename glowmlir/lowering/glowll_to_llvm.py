"""`lower-glowll-to-llvm`: each allocated `glowll.function` becomes the bundle entry point.

The entry is `i32 @<name>(ptr noalias %constantWeight, ptr noalias %mutableWeight,
ptr noalias %activations)`, Glow's signature. Every buffer is addressed as its region's
base pointer plus its byte offset, so weights never pass through LLVM IR: they stay in
the constant region the caller supplies. Offsets and indices are integers of the
target's `pointer_width` (64 unless told), and a buffer that target cannot address is
refused (`allocate_memory.check_address_space`).

Instructions identical but for their buffers' addresses call one kernel; so do int8
instructions that read their quantization numbers from a record (`glowll-quantization-records`,
size-first builds) whenever their kernels come out as the same code (docs/code-size.md).

A layer-profiling build (`layer_profile`, see `LAYER_PROFILES`) keeps every instruction's
code apart: each instruction gets a kernel of its own (none shared), `noinline` and
external, named `<name>_layer<index>_<kind>`, so the object's symbol table gives every
layer its address range (`glow-run -profile` counts instructions per range on a board).
`timed` also calls `void glow_layer_mark(i32 k)` at the start (k = 0) and after
instruction k - 1, for a host runner that records a clock there.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    i32,
    i64,
)
from xdsl.ir import Block, Region, SSAValue
from xdsl.passes import ModulePass

from glowmlir.dialects import glow, glowll
from glowmlir.dialects.memory import ALIGNMENT
from glowmlir.dialects.quant import UniformQuantizedType, is_quantized_instruction, storage_type
from glowmlir.errors import GlowError
from glowmlir.instrumentation import stage, step
from glowmlir.lowering import replace_functions
from glowmlir.lowering.integer_kernels import INTEGER_KERNELS, emit_integer_elementwise, is_integer_instruction
from glowmlir.lowering.kernel_builder import KernelBuilder, View
from glowmlir.lowering.kernels import KERNELS
from glowmlir.lowering.library_calls import declaration, emit_library_call
from glowmlir.lowering.quantized_kernels import QUANTIZED_KERNELS, table_numbers, table_rights_fold, table_shift_sign
from glowmlir.transforms.allocate_memory import check_address_space

REGION_ARGUMENTS = ("constantWeight", "mutableWeight", "activations")

_POINTER = llvm.LLVMPointerType()

LAYER_PROFILES = ("", "kernels", "timed")
"""`layer_profile` values: the normal build, separate kernels, separate kernels with clock marks."""
LAYER_MARK = "glow_layer_mark"
"""The function a `timed` build calls at the start (0) and after instruction k - 1 (k)."""


def layer_kernel_name(network: str, index: int, kind: str) -> str:
    """The symbol of instruction `index` (a `kind` such as `convolution`) in a layer-profiling build."""
    return f"{network}_layer{index}_{kind}"


def _pointer_attributes(alignment: int) -> DictionaryAttr:
    return DictionaryAttr({"llvm.noalias": UnitAttr(), "llvm.align": IntegerAttr(alignment, 64)})


def buffer_address(buffer: SSAValue, function_name: str) -> tuple[str, int]:
    """(region, byte offset) of a buffer or view; buffers must be allocated."""
    root, element_offset = glowll.root_buffer(buffer)
    if root.offset is None:
        raise GlowError(f"{function_name}: buffers must be allocated before lowering to llvm "
                        f"(run glowll-allocate-memory)")
    return root.REGION, root.offset.value.data + element_offset * buffer.type.element_type.compile_time_size


def lower_instruction(op: glowll.InstructionOp, name: str, addresses: list[tuple[str, int]],
                      index_type: IntegerType = i64, separate: bool = False, cache_bytes: int = 0) -> llvm.FuncOp:
    """One instruction as an internal kernel function taking one noalias pointer per buffer
    (`separate`: an external `noinline` one, for a layer-profiling build).

    The entry point calls it and LLVM inlines it; the `noalias` arguments become alias
    scopes, so LLVM knows that, say, a convolution's output row does not overlap its
    input and keeps the row in registers. Operands at the same address (an instruction
    working in place) share one argument.
    """
    distinct = list(dict.fromkeys(addresses))
    region = Region()
    entry = Block(arg_types=[_POINTER] * len(distinct))
    region.add_block(entry)
    builder = KernelBuilder(region, entry, index_type, cache_bytes)
    pointer_of = dict(zip(distinct, entry.args))
    arguments = {operand: pointer_of[address] for operand, address in zip(op.operands, addresses)}

    def view(buffer: SSAValue) -> View:
        return View.contiguous(arguments[buffer], buffer.type.get_shape(),
                               element_type=storage_type(buffer.type.element_type))

    if isinstance(op, glowll.LibraryCallOp):  # returns the library's status
        builder.emit(llvm.ReturnOp(emit_library_call(builder, op, view)))
        result_type = i32
    else:
        if glow.is_nhwc(op):
            raise GlowError(f"{op.name}: the NHWC layout has no generated kernel (only library calls)")
        if is_quantized_instruction(op):
            emitter = QUANTIZED_KERNELS.get(type(op)) or KERNELS[type(op)]
        elif is_integer_instruction(op):
            emitter = emit_integer_elementwise
        else:
            emitter = KERNELS.get(type(op)) or INTEGER_KERNELS[type(op)]
        emitter(builder, op, view)
        builder.emit(llvm.ReturnOp())
        result_type = llvm.LLVMVoidType()
    properties = {"arg_attrs": ArrayAttr([_pointer_attributes(_alignment(offset)) for _, offset in distinct])}
    chosen = op.attributes.get(glowll.CODE_SIZE)  # a size-first variant the selection chose for this layer
    minimize = builder.minimize_size or (chosen is not None and chosen.data == "minsize")
    sized = ["optsize"] * (builder.optimize_for_size or minimize or chosen is not None) + ["minsize"] * minimize
    if separate or op.properties.get("microkernel") is not None or sized:
        # a microkernel is register-allocated on its own: inlined into the entry point, LLVM
        # schedules across its tiles and spills (LeNet on the M7: 3.84M instructions, 3.49M);
        # a kernel optimized for size keeps its attributes only as a function of its own
        properties["no_inline"] = UnitAttr()
    if sized:
        properties["passthrough"] = ArrayAttr([StringAttr(attribute) for attribute in sized])
    return llvm.FuncOp(name, llvm.LLVMFunctionType([_POINTER] * len(distinct), result_type),
                       linkage=llvm.LinkageAttr("external" if separate else "internal"), body=region,
                       other_props=properties)



def _alignment(offset: int) -> int:
    """The alignment a buffer at this offset of an `ALIGNMENT`-aligned region has."""
    return min(ALIGNMENT, offset & -offset) if offset else ALIGNMENT


SEGMENT_SIZE = 16
"""Instructions per segment of a segmented entry point (`lower_function`)."""


def segment_name(network: str, index: int) -> str:
    """The symbol of segment `index` of a segmented entry point."""
    return f"{network}_segment{index}"


def lower_function(function: glowll.FunctionOp, pointer_width: int = 64, layer_profile: str = "",
                   segment_size: int = SEGMENT_SIZE, cache_bytes: int = 0) -> list[llvm.FuncOp]:
    """The entry point `i32 @<name>(constantWeight, mutableWeight, activations)` and its kernels
    (one per instruction, clock marks between them, as `layer_profile` asks).

    LLVM inlines the kernels into their caller. With more than `segment_size` instructions
    (0: no limit), the caller is not the entry point but a `noinline` segment function per run
    of `segment_size` consecutive instructions, which the entry point calls in order (same
    signature; a segment holding library calls returns their first error): O3's cost grows
    faster than linearly in the size of a function (DenseNet-121's 319 kernels inlined into one
    entry point took it 17 s, 11 s in the loop vectorizer; in segments of 16, 6 s), while the
    code inlined kernels get is kept (optimised each on its own, not inlined, LeNet's second
    convolution ran 15% slower). `cache_bytes`: as `KernelBuilder` takes it."""
    name = function.sym_name.data
    buffers = [op for op in function.body.block.ops if isinstance(op, glowll.BufferOp) and op.offset is not None]
    check_address_space(((buffer, buffer.offset.value.data) for buffer in buffers), pointer_width)
    index_type = IntegerType(pointer_width)
    region = Region()
    entry = Block(arg_types=[_POINTER] * 3)
    region.add_block(entry)
    builder = KernelBuilder(region, entry, index_type, cache_bytes)
    kernels: dict[tuple | str, llvm.FuncOp] = {}
    declarations: dict[str, llvm.FuncOp] = {}
    timed = layer_profile == "timed"
    if timed:
        declarations[LAYER_MARK] = llvm.FuncOp(LAYER_MARK, llvm.LLVMFunctionType([i32], llvm.LLVMVoidType()),
                                               linkage=llvm.LinkageAttr("external"), body=Region())
        _mark_layer(builder, 0)
    instructions = [op for op in function.body.block.ops if isinstance(op, glowll.InstructionOp)]
    size = segment_size if segment_size and not layer_profile and len(instructions) > segment_size else 0
    segments: list[llvm.FuncOp] = []
    runs = [range(start, min(start + size, len(instructions))) for start in range(0, len(instructions), size)] \
        if size else [range(len(instructions))]
    for run in runs:
        if size:
            calls_library = any(isinstance(instructions[index], glowll.LibraryCallOp) for index in run)
            segment = _segment(segment_name(name, len(segments)), calls_library)
            segments.append(segment)
            segment_builder = KernelBuilder(segment.body, segment.body.block, index_type, cache_bytes)
            _emit_calls(segment_builder, instructions, run, name, index_type, layer_profile, kernels, declarations)
            segment_builder.emit(llvm.ReturnOp(segment_builder.emit(llvm.ConstantOp(IntegerAttr(0, i32), i32)))
                                 if calls_library else llvm.ReturnOp())
            _emit_call(builder, segment.sym_name.data, entry.args, calls_library)
        else:
            _emit_calls(builder, instructions, run, name, index_type, layer_profile, kernels, declarations)
    builder.emit(llvm.ReturnOp(builder.emit(llvm.ConstantOp(IntegerAttr(0, i32), i32))))
    entry_point = llvm.FuncOp(name, llvm.LLVMFunctionType([_POINTER] * 3, i32), linkage=llvm.LinkageAttr("external"),
                              body=region, other_props={"arg_attrs": ArrayAttr([_pointer_attributes(ALIGNMENT)] * 3)})
    return [entry_point, *segments, *dict.fromkeys(kernels.values()), *declarations.values()]


def _segment(name: str, returns_status: bool) -> llvm.FuncOp:
    """An empty segment function: the entry point's signature, `noinline`, internal."""
    region = Region()
    region.add_block(Block(arg_types=[_POINTER] * 3))
    result_type = i32 if returns_status else llvm.LLVMVoidType()
    return llvm.FuncOp(name, llvm.LLVMFunctionType([_POINTER] * 3, result_type), linkage=llvm.LinkageAttr("internal"),
                       body=region, other_props={"arg_attrs": ArrayAttr([_pointer_attributes(ALIGNMENT)] * 3),
                                                 "no_inline": UnitAttr()})


def _emit_call(builder: KernelBuilder, callee: str, arguments, returns_status: bool, mark: int | None = None) -> None:
    """Calls `callee` (then clock mark `mark` in a `timed` build); one that returns a status
    (a library's) ends the inference on an error."""
    if not returns_status:
        builder.emit(llvm.CallOp(callee, *arguments))
        if mark is not None:
            _mark_layer(builder, mark)
        return
    status = builder.emit(llvm.CallOp(callee, *arguments, return_type=i32))
    if mark is not None:
        _mark_layer(builder, mark)
    with builder.when(builder.int_compare("ne", status, 0)):
        builder.emit(llvm.ReturnOp(status))
        builder.block = builder.new_block()  # unreachable: `when` closes it with a branch


def _emit_calls(builder: KernelBuilder, instructions: list[glowll.InstructionOp], run: range, name: str,
                index_type: IntegerType, layer_profile: str, kernels: dict[tuple | str, llvm.FuncOp],
                declarations: dict[str, llvm.FuncOp]) -> None:
    """The kernel calls of `instructions[run]` (lowering each kernel not lowered yet) at the end
    of the builder's function, whose arguments are the three regions."""
    region_base = dict(zip(glowll.REGIONS, builder.region.blocks[0].args))
    timed = layer_profile == "timed"
    for index in run:
        op = instructions[index]
        addresses = [buffer_address(buffer, name) for buffer in op.operands]
        kind = op.name.removeprefix("glowll.")
        if layer_profile:
            signature = (index,)
            kernels[signature] = lower_instruction(op, layer_kernel_name(name, index, kind), addresses, index_type,
                                                   separate=True, cache_bytes=builder.cache_bytes)
        else:  # Instructions identical but for their buffers' addresses share one kernel.
            signature = _kernel_signature(op, addresses)
            if signature not in kernels:
                kernels[signature] = _new_kernel(op, f"{name}_{len(set(kernels.values()))}_{kind}", addresses,
                                                 index_type, kernels, builder.cache_bytes)
        kernel = kernels[signature]
        pointers = [builder.byte_address(region_base[region], offset) for region, offset in dict.fromkeys(addresses)]
        library = isinstance(op, glowll.LibraryCallOp)
        if library:
            declarations.setdefault(op.callee.data, declaration(op))
        _emit_call(builder, kernel.sym_name.data, pointers, library, index + 1 if timed else None)
        step()


def _new_kernel(op: glowll.InstructionOp, name: str, addresses: list[tuple[str, int]], index_type: IntegerType,
                kernels: dict[tuple | str, llvm.FuncOp], cache_bytes: int) -> llvm.FuncOp:
    """The kernel of an instruction of a signature not seen yet, or, for one that reads its
    layer's numbers from a record (`glowll-quantization-records`: equal-shaped int8 layers
    differ only in those) or whose operand types hold per-channel scales (the signature tells
    slices of a layer apart by them), the kernel of an earlier instruction whose code came out
    the same (`kernels` keeps such kernels under their code too)."""
    kernel = lower_instruction(op, name, addresses, index_type, cache_bytes=cache_bytes)
    if getattr(op, "parameters", None) is None and not _per_channel_operands(op):
        return kernel
    code = str(kernel).replace(f"@{name}(", "@kernel(", 1)
    return kernels.setdefault(code, kernel)


def _per_channel_operands(op: glowll.InstructionOp) -> bool:
    """Whether an operand's type holds per-channel scales: instructions differing only in those
    (channel slices of one layer, `glowll-convolve-in-place`) may still come out as one code."""
    return any(isinstance(t.element_type, UniformQuantizedType) and t.element_type.per_channel
               for t in op.operand_types if hasattr(t, "element_type"))


def _mark_layer(builder: KernelBuilder, mark: int) -> None:
    builder.emit(llvm.CallOp(LAYER_MARK, builder.emit(llvm.ConstantOp(IntegerAttr(mark, i32), i32))))


def _kernel_signature(op: glowll.InstructionOp, addresses: list[tuple[str, int]]) -> tuple:
    distinct = list(dict.fromkeys(addresses))
    # its shifts' sign and range are in the code (`table_shift_sign`), and its numbers in a kernel
    # that unrolls its channels (`table_numbers`)
    table = getattr(op, "requantization", None)
    return (op.name, str(op.properties), str(op.attributes.get(glowll.CODE_SIZE)),
            tuple(str(t) for t in op.operand_types),
            tuple(distinct.index(a) for a in addresses), tuple(_alignment(offset) for _, offset in distinct),
            table_shift_sign(table) if table is not None else 0,
            table is not None and table_rights_fold(table, getattr(glow.convolved_element(op), "offset", None)),
            None if (numbers := table_numbers(op)) is None else numbers.tobytes())


@dataclass(frozen=True)
class LowerGlowLLToLLVM(ModulePass):
    """Replaces every `glowll.function` by an `llvm.func` of loop nests; `layer_profile`
    ("kernels" or "timed") makes a layer-profiling build (see the module docstring);
    `segment_size`: instructions per segment of the entry point (see `lower_function`; 0: one
    entry point calls every kernel, as `-g` and the bundle instrumentation need);
    `cache_bytes`: one core's cache (its L2) the float vector kernels block their loops for
    (0: none; `glow-compile` gives the target's, `Target.vector_tile`)."""

    name = "lower-glowll-to-llvm"
    pointer_width: int = 64
    layer_profile: str = ""
    segment_size: int = SEGMENT_SIZE
    cache_bytes: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.pointer_width not in (32, 64):
            raise GlowError(f"lower-glowll-to-llvm{{pointer_width={self.pointer_width}}}: expected 32 or 64")
        if self.layer_profile not in LAYER_PROFILES:
            raise GlowError(f"lower-glowll-to-llvm{{layer_profile={self.layer_profile}}}: expected kernels or timed")
        if self.segment_size < 0:
            raise GlowError(f"lower-glowll-to-llvm{{segment_size={self.segment_size}}}: expected 0 or more")
        instructions = sum(1 for instruction in op.walk() if isinstance(instruction, glowll.InstructionOp))
        with stage("kernels lowered", steps=instructions):
            replace_functions(op, glowll.FunctionOp, functools.partial(
                lower_function, pointer_width=self.pointer_width, layer_profile=self.layer_profile,
                segment_size=self.segment_size, cache_bytes=self.cache_bytes))
