"""The last step: a module of `llvm.func`s becomes target object code.

xDSL's `convert_module` translates the `llvm` dialect into an llvmlite module; llvmlite
then parses it into LLVM, runs the new pass manager at O3 (loop and SLP vectorization
on) and emits an ELF object for the target machine.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import llvmlite.binding as llvm
from llvmlite import ir
from xdsl.backend.llvm.convert import convert_module
from xdsl.dialects import llvm as xllvm
from xdsl.dialects.builtin import ModuleOp

from glowmlir.errors import GlowError
from glowmlir.instrumentation import collect_garbage, stage
from glowmlir.lowering.bundle_instrumentation import BundleInstrumentation, instrument
from glowmlir.lowering.debug_info import DebugSource, add_debug_info
from glowmlir.target import HOST, XTENSA_DATA_LAYOUT, Target, pointer_bits


def to_llvm_ir(module: ModuleOp, machine: llvm.TargetMachine, extend: Callable[[ir.Module], None] | None = None,
               size_attribute: str | None = None, abi: str | None = None,
               debug: DebugSource | None = None,
               instrumentation: BundleInstrumentation | None = None, consume: bool = False) -> llvm.ModuleRef:
    """Translate and verify; function attributes that xDSL's translator drops are added here.

    Every function is `nounwind` and `no-builtins` (LLVM must not turn loops into calls
    to memset/memcpy: the bundle calls nothing outside itself), and `optsize`/`minsize`
    when asked. `extend` may add globals (the dynamic bundle API's config); `debug` adds DWARF
    debug information (`-g`, see `debug_info`). `consume`: the module's ops are detached and
    freed once translated (the compiler's own module, which nothing reads after: ResNet-50's
    is 18 MB, held otherwise while LLVM optimizes).
    """
    ir_module = convert_module(module, fallback_target_triple=machine.triple, data_layout=str(machine.target_data))
    functions = [op for op in module.body.block.ops if isinstance(op, xllvm.FuncOp)]  # top-level: no walk
    linkage = {op.sym_name.data: op.linkage.linkage.data for op in functions}
    no_inline = {op.sym_name.data for op in functions if op.no_inline is not None}  # a layer-profiling build's
    passthrough = {op.sym_name.data: [a.data for a in op.passthrough] for op in functions if op.passthrough is not None}
    if consume:
        for op in list(module.body.block.ops):
            op.detach()
        functions = None
        collect_garbage()  # (cycles: ops and their results) before the text is made beside the llvmlite module
    for function in ir_module.functions:
        if not function.is_declaration:
            function.attributes.add("nounwind")
            if size_attribute:
                function.attributes.add(size_attribute)
            if linkage.get(function.name) == "internal":  # xDSL's translator drops linkage
                function.linkage = "internal"
            if function.name in no_inline:  # and no_inline
                function.attributes.add("noinline")
            for attribute in passthrough.get(function.name, ()):  # and passthrough
                function.attributes.add(attribute)
    if extend is not None:
        extend(ir_module)
    if instrumentation is not None:  # before the debug lines, which then cover its calls too
        instrument(ir_module, instrumentation, pointer_bits(str(machine.target_data)))
    if debug is not None:
        add_debug_info(ir_module, debug, pointer_bits(str(machine.target_data)))
    if abi:
        flag = ir_module.add_metadata([ir.Constant(ir.IntType(32), 1), ir.MetaDataString(ir_module, "target-abi"),
                                       ir.MetaDataString(ir_module, abi)])
        ir_module.add_named_metadata("llvm.module.flags", flag)
    text = str(ir_module)
    ir_module = functions = function = None  # (the loop's last function holds the module too)
    # llvmlite's module (its functions point back at it) and the glowll function lowered
    # before are cycles, which only the paused collector frees: freed before LLVM parses
    # (ResNet-50's peak: 35 MB less)
    collect_garbage()
    parsed = llvm.parse_assembly(text)
    del text  # (LLVM's module holds it all now)
    parsed.verify()
    return parsed


def optimize(module: llvm.ModuleRef, machine: llvm.TargetMachine, speed_level: int = 3) -> None:
    options = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    options.loop_vectorization = speed_level > 1
    options.slp_vectorization = speed_level > 1
    builder = llvm.create_pass_builder(machine, options)
    builder.getModulePassManager().run(module, builder)


def compile_to_object(module: ModuleOp, target: Target = HOST, extend: Callable[[ir.Module], None] | None = None,
                      keep: Sequence[str] = (), debug: DebugSource | None = None,
                      instrumentation: BundleInstrumentation | None = None,
                      consume: bool = False) -> tuple[bytes, dict[str, str]]:
    """Object code for the module's functions, and the texts named in `keep`: "llvm-ir" (the
    optimized LLVM IR) and "assembly" (the target's assembly, `-dump-llvm-asm`); `debug`: `-g`;
    `consume`: the module emptied once translated (`to_llvm_ir`)."""
    machine = target.machine()
    with stage("LLVM translation"):
        ir_module = to_llvm_ir(module, machine, extend, target.size_attribute, target.abi, debug, instrumentation,
                               consume)
    with stage("LLVM optimisation"):
        optimize(ir_module, machine, target.opt_level)
    texts = {}
    if "llvm-ir" in keep:
        texts["llvm-ir"] = str(ir_module)
    if "assembly" in keep:
        texts["assembly"] = machine.emit_assembly(ir_module)
    with stage("object emission"):
        return machine.emit_object(ir_module), texts


_XTENSA_STAND_IN = Target(triple="riscv32-unknown-none-elf", cpu="generic-rv32", features="+m", relocation="static")
"""A 32-bit little-endian machine without vector units, used to translate and optimize an
Xtensa module target-independently (no vectorization) before it is retargeted."""


def compile_to_llvm_ir(module: ModuleOp, target: Target, extend: Callable[[ir.Module], None] | None = None
                       ) -> tuple[str, bytes]:
    """For targets without a back end here (Xtensa): the optimized module as LLVM IR text and
    bitcode, with the target's triple and data layout, for the vendor's clang."""
    machine = _XTENSA_STAND_IN.machine()
    with stage("LLVM translation"):
        ir_module = to_llvm_ir(module, machine, extend, target.size_attribute)
    options = llvm.create_pipeline_tuning_options(speed_level=min(target.opt_level, 2))
    options.loop_vectorization = options.slp_vectorization = False
    builder = llvm.create_pass_builder(machine, options)
    with stage("LLVM optimisation"):
        builder.getModulePassManager().run(ir_module, builder)
    ir_module.triple = target.triple
    ir_module.data_layout = XTENSA_DATA_LAYOUT
    text = str(ir_module)
    return text, llvm.parse_assembly(text).as_bitcode()


@dataclass(frozen=True)
class ExternalCompiler:
    """Glow's `-llvm-compiler` (e.g. `llc`, `clang`, `xt-clang`), its `-llvm-compiler-opt`
    options and `-llvm-opt`: the optimized bitcode is handed to them as Glow does —
    `<compiler> <options> <name>.bc -o <name>.o`, or, with an `opt`, `<compiler> <options>
    <name>.bc -emit-llvm -o <name>.beforeopt.bc`, `<opt> <name>.beforeopt.bc -O3 -o <name>.opt.bc`,
    `<compiler> <options> <name>.opt.bc -o <name>.o`."""

    compiler: str
    options: tuple[str, ...] = ()
    opt: str | None = None

    def compile(self, bitcode: bytes, name: str) -> bytes:
        import shlex
        import shutil
        import subprocess
        import tempfile

        for option, tool in (("-llvm-compiler", self.compiler), ("-llvm-opt", self.opt)):
            if tool is not None and shutil.which(tool) is None:
                raise GlowError(f"{option}=\"{tool}\": no such program")
        options = [word for option in self.options for word in shlex.split(option)]
        with tempfile.TemporaryDirectory(prefix="glowmlir-llvm-") as directory:
            def path(suffix: str) -> str:
                return os.path.join(directory, f"{name}{suffix}")

            with open(path(".bc"), "wb") as f:
                f.write(bitcode)
            if self.opt is None:
                commands = [[self.compiler, *options, path(".bc"), "-o", path(".o")]]
            else:
                commands = [[self.compiler, *options, path(".bc"), "-emit-llvm", "-o", path(".beforeopt.bc")],
                            [self.opt, path(".beforeopt.bc"), "-O3", "-o", path(".opt.bc")],
                            [self.compiler, *options, path(".opt.bc"), "-o", path(".o")]]
            for command in commands:
                result = subprocess.run(command, capture_output=True, text=True)
                if result.returncode:
                    lines = [line for line in result.stderr.splitlines() if line.strip()]
                    raise GlowError(f"-llvm-compiler: \"{shlex.join(command)}\" failed: "
                                    f"{lines[0] if lines else f'exit status {result.returncode}'}")
            if not os.path.isfile(path(".o")):
                raise GlowError(f"-llvm-compiler=\"{self.compiler}\" wrote no object file")
            with open(path(".o"), "rb") as f:
                return f.read()


def compile_with(external: ExternalCompiler, module: ModuleOp, target: Target, name: str,
                 extend: Callable[[ir.Module], None] | None = None) -> bytes:
    """Object code for the module made by an external LLVM compiler from our optimized bitcode."""
    machine = target.machine()
    with stage("LLVM translation"):
        ir_module = to_llvm_ir(module, machine, extend, target.size_attribute, target.abi)
    with stage("LLVM optimisation"):
        optimize(ir_module, machine, target.opt_level)
    with stage("external LLVM compiler"):
        return external.compile(ir_module.as_bitcode(), name)
