"""Glow's bundle instrumentation: `glow-compile -instrument-debug` and `-instrument-ir`.

Both work on the entry point's LLVM IR, around the call of each glowll instruction's kernel
(the i-th call computes the i-th instruction), as Glow's IR instrumentation does:

* `-instrument-debug` (`-instrument-debug-format=rawbin|bin`, `-instrument-debug-dir=DIR`): the
  bundle writes each instruction's operands with the C library's `fopen`/`fwrite` — its inputs
  before it runs, its output after — to `DIR/dataNNNN.bin`, numbered per instruction output first
  then inputs (Glow's order). `DIR/instrument-debug.info` (written at compile time) names the
  instruction, operand and type of each file. A bundle so built needs a file system: a host or
  Linux target, not a bare-metal board (there, `glow-run -instrument-debug` gives the same data).
* `-instrument-ir`: the bundle calls the user's `glow_instrument_before(id, kind, opInp, opOut,
  opAddr, opSize)` and `glow_instrument_after(...)` around each instruction (`opAddr`/`opSize`:
  the inputs' then the output's address and byte size), and `instrument-ir.info` (beside the
  bundle) lists each id's instruction kind and name.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from llvmlite import ir

from glowmlir.errors import GlowError


@dataclass(frozen=True)
class InstrumentedOperand:
    name: str  # "dest" or "src<k>"
    region: int  # index in glowll.REGIONS: the entry point's argument holding it
    offset: int
    size: int
    type_text: str


@dataclass(frozen=True)
class InstrumentedInstruction:
    kind: str  # glowll instruction, e.g. "convolution"
    kind_id: int
    node: str
    operands: tuple[InstrumentedOperand, ...]  # dest first, then the sources


@dataclass(frozen=True)
class BundleInstrumentation:
    """What `-instrument-debug` / `-instrument-ir` ask for; `instructions` in schedule order."""

    entry: str  # the entry point whose i-th kernel call computes the i-th instruction
    instructions: tuple[InstrumentedInstruction, ...]
    debug_directory: str | None = None  # -instrument-debug: where the bundle writes its dumps
    debug_format: str = "rawbin"
    ir_callbacks: bool = False  # -instrument-ir

    def debug_info(self) -> str:
        """`instrument-debug.info`: each dump file's instruction, operand and type, as Glow's."""
        lines, index = [f"Format: {self.debug_format}"], 0
        for instruction in self.instructions:
            lines += ["", f"Kind: {instruction.kind}", f"Name: {instruction.node}"]
            for number, operand in enumerate(instruction.operands):
                lines.append(f"[{number}] {operand.name + ':':<10} data{index:04d}.bin    {operand.type_text}")
                index += 1
        return "\n".join(lines) + "\n"

    def ir_info(self) -> str:
        """`instrument-ir.info`: each instruction id's kind and name."""
        return "".join(f"ID: {i}\nKind: {instruction.kind_id} ({instruction.kind})\nName: {instruction.node}\n\n"
                       for i, instruction in enumerate(self.instructions))


def _kernel_calls(entry: ir.Function) -> list[ir.CallInstr]:
    return [instruction for block in entry.blocks for instruction in block.instructions
            if isinstance(instruction, ir.CallInstr) and not instruction.callee.name.startswith("llvm.")]


def instrument(module: ir.Module, plan: BundleInstrumentation, pointer_bits: int) -> None:
    """Adds the dumps and callbacks of `plan` around each kernel call of the entry point."""
    entry = module.globals[plan.entry]
    calls = _kernel_calls(entry)
    if len(calls) != len(plan.instructions):
        raise GlowError(f"bundle instrumentation: {len(calls)} kernel calls for {len(plan.instructions)} "
                        f"instructions")
    byte_pointer, size_type, i32 = ir.IntType(8).as_pointer(), ir.IntType(pointer_bits), ir.IntType(32)

    def declare(name: str, result: ir.Type, arguments: Sequence[ir.Type]) -> ir.Function:
        return module.globals.get(name) or ir.Function(module, ir.FunctionType(result, arguments), name)

    fopen = declare("fopen", byte_pointer, [byte_pointer, byte_pointer])
    fwrite = declare("fwrite", size_type, [byte_pointer, size_type, size_type, byte_pointer])
    fclose = declare("fclose", i32, [byte_pointer])
    callbacks = [declare(f"glow_instrument_{when}", ir.VoidType(),
                         [i32, i32, i32, i32, byte_pointer.as_pointer(), i32.as_pointer()])
                 for when in ("before", "after")] if plan.ir_callbacks else []

    def text(builder: ir.IRBuilder, value: str) -> ir.Value:
        """A C string on the stack: no global, so no absolute relocation (static code links into PIEs)."""
        data = bytearray(value.encode() + b"\0")
        array = ir.ArrayType(ir.IntType(8), len(data))
        buffer = builder.alloca(array)
        builder.store(ir.Constant(array, data), buffer)
        return builder.bitcast(buffer, byte_pointer)

    def address(builder: ir.IRBuilder, operand: InstrumentedOperand) -> ir.Value:
        return builder.gep(entry.args[operand.region], [ir.Constant(size_type, operand.offset)],
                           source_etype=ir.IntType(8))

    def dump(builder: ir.IRBuilder, operand: InstrumentedOperand, index: int) -> None:
        path = os.path.join(plan.debug_directory, f"data{index:04d}.bin")
        file = builder.call(fopen, [text(builder, path), text(builder, "wb")])
        builder.call(fwrite, [address(builder, operand), ir.Constant(size_type, 1),
                              ir.Constant(size_type, operand.size), file])
        builder.call(fclose, [file])

    def callback(builder: ir.IRBuilder, function: ir.Function, id_: int, instruction: InstrumentedInstruction):
        ordered = [*instruction.operands[1:], instruction.operands[0]]  # inputs, then the output
        addresses = builder.alloca(byte_pointer, len(ordered))
        sizes = builder.alloca(i32, len(ordered))
        for k, operand in enumerate(ordered):
            builder.store(address(builder, operand), builder.gep(addresses, [ir.Constant(i32, k)],
                                                                 source_etype=byte_pointer))
            builder.store(ir.Constant(i32, operand.size), builder.gep(sizes, [ir.Constant(i32, k)], source_etype=i32))
        builder.call(function, [ir.Constant(i32, id_), ir.Constant(i32, instruction.kind_id),
                                ir.Constant(i32, len(ordered) - 1), ir.Constant(i32, 1), addresses, sizes])

    index = 0
    for id_, (call, instruction) in enumerate(zip(calls, plan.instructions)):
        builder = ir.IRBuilder(call.parent)
        builder.position_before(call)
        if callbacks:
            callback(builder, callbacks[0], id_, instruction)
        if plan.debug_directory is not None:
            for number, operand in enumerate(instruction.operands[1:], 1):
                dump(builder, operand, index + number)
        builder.position_after(call)
        if plan.debug_directory is not None:
            dump(builder, instruction.operands[0], index)
        if callbacks:
            callback(builder, callbacks[1], id_, instruction)
        index += len(instruction.operands)


def plan_of(function, debug_directory: str | None, ir_callbacks: bool) -> BundleInstrumentation:
    """The instrumentation of an allocated `glowll.function`'s instructions."""
    from glowmlir.bundle import Placeholder, _quantization
    from glowmlir.dialects import glow, glowll
    from glowmlir.dialects.weights import numpy_dtype
    from glowmlir.lowering.glowll_to_llvm import buffer_address

    kinds: dict[str, int] = {}
    instructions = []
    for op in function.body.block.ops:
        if not isinstance(op, glowll.InstructionOp):
            continue
        kind = op.name.removeprefix("glowll.")
        operands = []
        for number, operand in enumerate(op.operands):
            region, offset = buffer_address(operand, function.sym_name.data)
            memref = operand.type
            described = Placeholder("", "", tuple(memref.get_shape()), numpy_dtype(memref.element_type), offset,
                                    _quantization(memref.element_type))
            operands.append(InstrumentedOperand("dest" if number == 0 else f"src{number}",
                                                glowll.REGIONS.index(region), offset, described.byte_size,
                                                described.type_string()))
        name = op.attributes.get(glow.NODE_NAME)
        instructions.append(InstrumentedInstruction(kind, kinds.setdefault(kind, len(kinds)),
                                                    name.data if name is not None else kind, tuple(operands)))
    return BundleInstrumentation(function.sym_name.data, tuple(instructions), debug_directory, "rawbin",
                                 ir_callbacks)
