"""`glow-compile -g`: DWARF debug information in the bundle, as Glow's `-g` gives.

The source a debugger shows is the allocated low-level IR, written beside the bundle as
`<name>.glowll.mlir`: each glowll instruction is one line, and every machine instruction of the
bundle maps to the line of the glowll instruction it computes — the call in the entry point and
the kernel's loop nest alike (a kernel shared by identical instructions maps to the first one's
line; inlined into the entry point, LLVM keeps each copy's line through `inlinedAt`). The entry
point's three parameters, `constantWeight`, `mutableWeight` and `activations`, are described as
`uint8_t *` variables, so `print activations[64]` works in gdb; the kernels are subprograms
named as in the object's symbol table (`<net>_<k>_<kind>`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from llvmlite import ir

DEBUG_SOURCE_SUFFIX = ".glowll.mlir"
"""`<name>.glowll.mlir`: the low-level IR a `-g` bundle's line table points at."""

INSTRUCTION_LINE = re.compile(r"^\s*glowll\.(?!function\b)\w+ ")
"""A glowll instruction's line in the printed IR (buffers are `%x = glowll...`, instructions have no result)."""


@dataclass(frozen=True)
class DebugSource:
    """The file a debugger shows, the line of each glowll instruction (in schedule order) and the
    entry point whose calls compute them."""

    path: str
    instruction_lines: tuple[int, ...]
    entry: str

    @staticmethod
    def of_glowll(text: str, path: str, entry: str) -> DebugSource:
        lines = tuple(number for number, line in enumerate(text.splitlines(), 1) if INSTRUCTION_LINE.match(line))
        return DebugSource(path, lines, entry)


class _DebugInfoBuilder:
    def __init__(self, module: ir.Module, source: DebugSource, pointer_bits: int):
        self.module = module
        self.file = module.add_debug_info("DIFile", {"filename": os.path.basename(source.path),
                                                     "directory": os.path.dirname(source.path) or "."})
        self.unit = module.add_debug_info("DICompileUnit", {
            "language": ir.DIToken("DW_LANG_C99"), "file": self.file, "producer": "glowmlir", "isOptimized": True,
            "runtimeVersion": 0, "emissionKind": ir.DIToken("FullDebug")}, is_distinct=True)
        module.add_named_metadata("llvm.dbg.cu", self.unit)
        for behaviour, flag, value in ((7, "Dwarf Version", 4), (2, "Debug Info Version", 3)):
            module.add_named_metadata("llvm.module.flags", module.add_metadata(
                [ir.Constant(ir.IntType(32), behaviour), ir.MetaDataString(module, flag),
                 ir.Constant(ir.IntType(32), value)]))
        byte = module.add_debug_info("DIBasicType", {"name": "uint8_t", "size": 8,
                                                     "encoding": ir.DIToken("DW_ATE_unsigned_char")})
        self.pointer = module.add_debug_info("DIDerivedType", {"tag": ir.DIToken("DW_TAG_pointer_type"),
                                                               "baseType": byte, "size": pointer_bits})
        self.int = module.add_debug_info("DIBasicType", {"name": "int", "size": 32,
                                                         "encoding": ir.DIToken("DW_ATE_signed")})

    def subprogram(self, function: ir.Function, line: int, entry_point: bool) -> ir.DIValue:
        types = ([self.int, self.pointer, self.pointer, self.pointer] if entry_point
                 else [None, *([self.pointer] * len(function.args))])
        subroutine = self.module.add_debug_info("DISubroutineType", {"types": self.module.add_metadata(types)})
        subprogram = self.module.add_debug_info("DISubprogram", {
            "name": function.name, "linkageName": function.name, "scope": self.file, "file": self.file,
            "line": line, "type": subroutine, "scopeLine": line, "unit": self.unit,
            "spFlags": ir.DIToken("DISPFlagDefinition | DISPFlagOptimized")}, is_distinct=True)
        function.set_metadata("dbg", subprogram)
        return subprogram

    def location(self, line: int, scope: ir.DIValue) -> ir.DIValue:
        return self.module.add_debug_info("DILocation", {"line": line, "column": 1, "scope": scope})

    def describe_parameters(self, entry: ir.Function, subprogram: ir.DIValue, line: int) -> None:
        """`llvm.dbg.value` for each region pointer, at the entry point's start."""
        metadata = ir.MetaDataType()
        intrinsic = self.module.globals.get("llvm.dbg.value") or ir.Function(
            self.module, ir.FunctionType(ir.VoidType(), [metadata] * 3), "llvm.dbg.value")
        builder = ir.IRBuilder(entry.entry_basic_block)
        builder.position_at_start(entry.entry_basic_block)
        expression = self.module.add_debug_info("DIExpression", {})
        for number, (argument, name) in enumerate(zip(entry.args, ("constantWeight", "mutableWeight",
                                                                    "activations")), 1):
            variable = self.module.add_debug_info("DILocalVariable", {
                "name": name, "arg": number, "scope": subprogram, "file": self.file, "line": line,
                "type": self.pointer})
            call = builder.call(intrinsic, [argument, variable, expression])
            call.set_metadata("dbg", self.location(line, subprogram))


def add_debug_info(module: ir.Module, source: DebugSource, pointer_bits: int) -> None:
    """Subprograms for the entry point and its kernels, a line for every instruction, the region
    parameters as variables; the entry point's i-th call computes the i-th glowll instruction."""
    entry = module.globals[source.entry]
    lines = source.instruction_lines or (1,)
    info = _DebugInfoBuilder(module, source, pointer_bits)
    entry_program = info.subprogram(entry, lines[0], entry_point=True)
    kernel_lines: dict[str, int] = {}
    index = 0
    for block in entry.blocks:  # the calls in order: instruction index -> line
        for instruction in block.instructions:
            if isinstance(instruction, ir.CallInstr) and not instruction.callee.name.startswith("llvm."):
                kernel_lines.setdefault(instruction.callee.name, lines[min(index, len(lines) - 1)])
                index += 1
    index = 0
    for block in entry.blocks:  # each instruction takes the line of the call it leads to
        pending = []
        for instruction in block.instructions:
            pending.append(instruction)
            if isinstance(instruction, ir.CallInstr) and not instruction.callee.name.startswith("llvm."):
                location = info.location(lines[min(index, len(lines) - 1)], entry_program)
                for waiting in pending:
                    waiting.set_metadata("dbg", location)
                pending, index = [], index + 1
        for waiting in pending:  # after the last call: the return
            waiting.set_metadata("dbg", info.location(lines[min(index, len(lines) - 1)], entry_program))
    for function in module.functions:
        if function.is_declaration or function is entry:
            continue
        line = kernel_lines.get(function.name, lines[0])
        program = info.subprogram(function, line, entry_point=False)
        location = info.location(line, program)
        for block in function.blocks:
            for instruction in block.instructions:
                instruction.set_metadata("dbg", location)
    info.describe_parameters(entry, entry_program, lines[0])
