"""Running bundles on emulated boards: QEMU's MPS2 Cortex-M boards and AArch64 Linux.

A bundle compiled for the board's CPU is linked with the harness in `embedded/` (startup
code that turns the FPU on first, a linker script per board, a Glow-style main.c) by
Debian's cross compilers, run under QEMU with semihosting, and its outputs read back
bit-exact. With `count_instructions`, a QEMU TCG plugin counts the guest instructions of
two builds that run the inference once and twice; the difference is the exact cost of one
inference, soft-float library calls included. With `count_functions` or `count_cycles`,
another plugin (`embedded/blockcount.c`) records every block that ran, from which the host
counts the instructions per function of the program (address ranges from its symbol table;
an instruction outside those functions counts for the one that ran last) and, on the
Cortex-M boards, estimates the core cycles (`glowmlir.runtime.cycles`). On the Cortex-M
boards the counters also count the multiply instructions apart (their addresses from the
program's disassembly, see `glowmlir.runtime.multiplies`).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from glowmlir.errors import GlowError
from glowmlir.memory_report import parse_size
from glowmlir.runtime.cycles import NO_CYCLES, Cycles

EMBEDDED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "embedded")


@dataclass(frozen=True)
class Board:
    name: str
    cpu: str  # glowmlir CPU preset, see glowmlir.targets.CPU_PRESETS
    float_abi: str
    compiler: str
    compiler_flags: tuple[str, ...]
    qemu: tuple[str, ...]  # the emulator command before the program
    memory: dict[str, str] | None = None  # values for embedded/mps2.ld.in (Cortex-M boards)
    semihosting: bool = True  # a bare-metal program talking through semihosting (else Linux user mode)
    objdump_options: tuple[str, ...] = ()  # what arm-none-eabi-objdump needs to decode every instruction

    @property
    def counts_multiplies(self) -> bool:
        """Whether the instruction counter tells multiplies apart: Arm M-profile code."""
        return self.compiler == "arm-none-eabi-gcc"


_M_FLAGS = ("-mthumb", "-O2", "-ffunction-sections", "-fdata-sections", "--specs=rdimon.specs", "-nostartfiles",
            "-Wl,--gc-sections", "-Wl,--no-warn-execstack")
_RISCV_FLAGS = ("-O2", "--specs=picolibc.specs", "--oslib=semihost", "--crt0=semihost",
                "-Wl,--defsym=__flash=0x80000000", "-Wl,--defsym=__flash_size=0x800000",
                "-Wl,--defsym=__ram=0x80800000", "-Wl,--defsym=__ram_size=0x2000000",
                "-Wl,--defsym=__stack_size=0x10000")
# QEMU's memory maps (`info mtree`, QEMU 7.2): MPS2 AN385/AN386/AN500 ZBT SSRAM1 4 MB at 0
# (the code "flash"), SSRAM2/3 4 MB at 0x20000000, PSRAM 16 MB at 0x21000000 (AN385, AN386) or
# 0x60000000 (AN500); AN505 SSRAM 4 MB at 0x10000000 and 2 x 2 MB at 0x38000000, PSRAM 16 MB
# at 0x80000000 (secure aliases); MPS3 AN547 ITCM and DTCM 512 KB each, DDR (here 16 MB of
# weights at 0x70000000 and 16 MB of big buffers after them). The large buffers go to the
# big RAM (BIG), the weights where `memory_values` finds room for them.
_MPS2_MEMORY = {"CODE_ORIGIN": "0x00000000", "CODE_LEN": "4M", "RAM_ORIGIN": "0x20000000", "RAM_LEN": "4M",
                "BIG_LEN": "16M", "EXTRA_MEMORY": "", "WEIGHTS_REGION": "CODE"}

BOARDS = {
    "mps2-an385": Board("mps2-an385", "cortex-m3", "soft", "arm-none-eabi-gcc",
                        ("-mcpu=cortex-m3", "-mfloat-abi=soft", *_M_FLAGS),
                        ("qemu-system-arm", "-M", "mps2-an385"), _MPS2_MEMORY | {"BIG_ORIGIN": "0x21000000"}),
    # QEMU has no Armv6-M MPS2 board; Armv6-M code runs unchanged on the M3 (Armv7-M is a
    # superset), so instruction counts of Cortex-M0+ code are exact, timing is not.
    "mps2-an385-m0plus": Board("mps2-an385-m0plus", "cortex-m0plus", "soft", "arm-none-eabi-gcc",
                               ("-mcpu=cortex-m0plus", "-mfloat-abi=soft", *_M_FLAGS),
                               ("qemu-system-arm", "-M", "mps2-an385"), _MPS2_MEMORY | {"BIG_ORIGIN": "0x21000000"}),
    "mps2-an386": Board("mps2-an386", "cortex-m4", "hard", "arm-none-eabi-gcc",
                        ("-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard", *_M_FLAGS),
                        ("qemu-system-arm", "-M", "mps2-an386"), _MPS2_MEMORY | {"BIG_ORIGIN": "0x21000000"}),
    "mps2-an500": Board("mps2-an500", "cortex-m7", "hard", "arm-none-eabi-gcc",
                        ("-mcpu=cortex-m7", "-mfpu=fpv5-d16", "-mfloat-abi=hard", *_M_FLAGS),
                        ("qemu-system-arm", "-M", "mps2-an500"), _MPS2_MEMORY | {"BIG_ORIGIN": "0x60000000"}),
    "mps2-an505": Board("mps2-an505", "cortex-m33", "hard", "arm-none-eabi-gcc",
                        ("-mcpu=cortex-m33", "-mfpu=fpv5-sp-d16", "-mfloat-abi=hard", *_M_FLAGS),
                        ("qemu-system-arm", "-M", "mps2-an505"),
                        _MPS2_MEMORY | {"CODE_ORIGIN": "0x10000000", "RAM_ORIGIN": "0x38000000",
                                        "BIG_ORIGIN": "0x80000000"}),
    # SSE-300: code in the ITCM (512 KB), data in the DTCM (512 KB), weights and big
    # buffers in DDR; secure aliases, as the core boots secure.
    "mps3-an547": Board("mps3-an547", "cortex-m55", "hard", "arm-none-eabi-gcc",
                        ("-mcpu=cortex-m55", "-mfloat-abi=hard", *_M_FLAGS),
                        ("qemu-system-arm", "-M", "mps3-an547"),
                        {"CODE_ORIGIN": "0x10000000", "CODE_LEN": "512K", "RAM_ORIGIN": "0x30000000",
                         "RAM_LEN": "512K", "BIG_ORIGIN": "0x71000000", "BIG_LEN": "16M",
                         "EXTRA_MEMORY": "DDR (rx) : ORIGIN = 0x70000000, LENGTH = 16M", "WEIGHTS_REGION": "DDR"},
                         objdump_options=("-m", "armv8.1-m.main")),  # else Helium is not decoded
    "aarch64": Board("aarch64", "cortex-a53", "default", "aarch64-linux-gnu-gcc", ("-O2", "-static"),
                     ("qemu-aarch64",), semihosting=False),
    # This machine itself, through the same Glow-style C main (no emulator, no counting).
    "native": Board("native", "", "default", "cc", ("-O2",), (), semihosting=False),
    "i386": Board("i386", "i386", "default", "gcc", ("-m32", "-O2", "-static"), ("qemu-i386",), semihosting=False),
    # RISC-V: QEMU's virt machine, picolibc's start-up code and linker script over semihosting.
    "virt-rv32imc": Board("virt-rv32imc", "rv32imc", "soft", "riscv64-unknown-elf-gcc",
                          ("-march=rv32imac", "-mabi=ilp32", *_RISCV_FLAGS),
                          ("qemu-system-riscv32", "-M", "virt", "-bios", "none")),
    "virt-rv32imafc": Board("virt-rv32imafc", "rv32imafc", "hard", "riscv64-unknown-elf-gcc",
                            ("-march=rv32imafc", "-mabi=ilp32f", *_RISCV_FLAGS),
                            ("qemu-system-riscv32", "-M", "virt", "-bios", "none")),
}


HARNESS_CODE = 128 * 1024
"""Bytes of the code memory kept, when placing the weights, for what a program links besides
the bundle object and its inputs: the harness takes 31-35 KB (start-up code, main.c, newlib's
printf and semihosting, the M3's soft-float helpers), the rest is room for a kernel library
linked beside. The weights go elsewhere before the linker would find the code memory full."""
STACK_AND_HEAP = 0x10000
"""The top of RAM the linker script leaves to the stack and heap (`__heap_limit`)."""
MEMORY_NAMES = {"CODE": "code memory", "RAM": "RAM", "BIG": "big RAM", "DDR": "DDR"}


@dataclass(frozen=True)
class MemoryNeeds:
    """Bytes a program of a bundle needs of a board's memories."""

    code: int  # the bundle's code and read-only data and the inputs (the harness comes on top)
    ram: int  # mutable placeholders, stack and heap
    activations: int
    weights: int
    weights_copy: bool = False  # -weights-in=ram: a copy of the weights beside the activations

    @staticmethod
    def of(bundle, inputs: int, weights_in: str) -> MemoryNeeds:
        from glowmlir.elf import code_size

        layout = bundle.layout
        return MemoryNeeds(code_size(bundle.object_code) + inputs, layout.mutable_size + STACK_AND_HEAP,
                           layout.activations_size, layout.constant_size, weights_in == "ram")


def memory_sizes(spec: Board) -> dict[str, int]:
    """The bytes of each memory region of a Cortex-M board's linker script."""
    def size(text: str) -> int:
        return parse_size(f"{spec.name} memory", text)

    memory = spec.memory
    sizes = {"CODE": size(memory["CODE_LEN"]), "RAM": size(memory["RAM_LEN"]), "BIG": size(memory["BIG_LEN"])}
    for name, length in re.findall(r"(\w+) \(\w+\) : ORIGIN = \w+, LENGTH = (\w+)", memory["EXTRA_MEMORY"]):
        sizes[name] = size(length)
    return sizes


def memory_values(spec: Board, needs: MemoryNeeds) -> dict[str, str]:
    """The linker script's values for a program of `needs` on a Cortex-M board: the board's,
    with the weights in the big RAM when they do not fit the code memory beside the code
    (MobileNetV2's 6.6 MB of float weights on the MPS2 boards' 4 MB); a GlowError naming the
    board, the memory and the sizes when a memory cannot hold what it must (for the code
    memory, without the harness: the linker names an overflow the harness makes)."""
    sizes, weights_region = memory_sizes(spec), spec.memory["WEIGHTS_REGION"]
    if weights_region == "CODE" and needs.code + HARNESS_CODE + needs.weights > sizes["CODE"]:
        weights_region = "BIG"
    copy = [("weights copied to RAM", needs.weights)] if needs.weights_copy else []
    contents = {"CODE": [("bundle code and inputs", needs.code)], "RAM": [("mutable data, stack and heap", needs.ram)],
                "BIG": [("activations", needs.activations), *copy]}
    contents.setdefault(weights_region, []).append(("weights", needs.weights))
    for region, parts in contents.items():
        total = sum(amount for _, amount in parts)
        if total > sizes[region]:
            parts_text = " + ".join(f"{what} {amount:,} B" for what, amount in parts)
            raise GlowError(f"{spec.name}: the program does not fit the board's memory: {parts_text} > the "
                            f"{sizes[region]:,} B of its {MEMORY_NAMES[region]}")
    return spec.memory | {"WEIGHTS_REGION": weights_region}


@dataclass(frozen=True)
class BoardRun:
    outputs: dict[str, np.ndarray]
    instructions: int | None
    function_instructions: dict[str, int] | None = None
    """With `count_functions`: one inference's instructions per function named (together with
    what they call outside the functions named), and under "" those before any of them ran;
    they sum to `instructions`."""
    multiplies: int | None = None
    """With `count_instructions` on a Cortex-M board (not with `count_functions` alone): how
    many of one inference's instructions multiply (`glowmlir.runtime.multiplies.MULTIPLY_MNEMONICS`)."""
    cycles: Cycles | None = None
    """With `count_cycles`: one inference's estimated core cycles at zero wait states
    (`glowmlir.runtime.cycles`), with its range."""
    function_cycles: dict[str, Cycles] | None = None
    """With `count_cycles` and `count_functions`: the cycles per function named, as
    `function_instructions` counts the instructions."""
    timing: object | None = None
    """With `count_cycles`: the core's timing model (its `describe()` says what it is)."""


def board(name: str) -> Board:
    if name not in BOARDS:
        raise GlowError(f"-board=\"{name}\": unknown emulated board (known: host, {', '.join(BOARDS)})")
    return BOARDS[name]


def target_for(board_name: str, opt_level: str | None = None):
    """The compile target of a board's CPU."""
    from glowmlir.targets import resolve_target

    spec = board(board_name)
    return resolve_target(mcpu=spec.cpu or None, float_abi=spec.float_abi, opt_level=opt_level)


def _require(tool: str) -> None:
    if shutil.which(tool) is None:
        raise GlowError(f"\"{tool}\" is not installed (scripts/setup.sh installs the emulators and cross compilers)")


def _c_bytes(data: bytes) -> str:
    return ",".join(str(b) for b in data)


def _harness_header(bundle, frames: Sequence[dict[str, np.ndarray]], bare_metal: bool, directory: str) -> str:
    """harness.h: the bundle's names and sizes, and the inputs of each frame (one after the
    other in one array per input; main.c runs the frames in order, printing each one's outputs)."""
    layout = bundle.layout
    upper = layout.name.upper()
    weights = os.path.join(directory, f"{layout.name}.weights.bin")
    lines = ["#include <stdint.h>", f"#include \"{layout.name}.h\"", f"#define BUNDLE_ENTRY {layout.entry_point}",
             f"#define BUNDLE_WEIGHTS_BIN \"{weights}\""]
    for size in ("CONSTANT_MEM_SIZE", "MUTABLE_MEM_SIZE", "ACTIVATIONS_MEM_SIZE", "MEM_ALIGN"):
        lines.append(f"#define BUNDLE_{size} {upper}_{size}")
    lines.append("#define BIG_BSS " + ('__attribute__((section(".big_bss")))' if bare_metal else ""))
    lines.append("struct tensor_in { unsigned offset; unsigned size; const uint8_t *data; };")
    lines.append("struct tensor_out { const char *name; unsigned offset; unsigned size; };")
    entries = []
    for index, placeholder in enumerate(p for p in layout.placeholders if p.kind == "input"):
        data = b""
        for inputs in frames:
            if placeholder.name not in inputs:
                raise GlowError(f"no value given for input \"{placeholder.name}\"")
            frame = np.ascontiguousarray(inputs[placeholder.name], placeholder.dtype).tobytes()
            if len(frame) != placeholder.byte_size:
                raise GlowError(f"input \"{placeholder.name}\" has {len(frame)} bytes, "
                                f"the bundle expects {placeholder.byte_size}")
            data += frame
        lines.append(f"static const uint8_t input_{index}[] __attribute__((aligned(8))) = {{{_c_bytes(data)}}};")
        entries.append(f"{{{upper}_{placeholder.name}, {placeholder.byte_size}, input_{index}}}")
    lines.append(f"static const struct tensor_in inputs[] = {{{', '.join(entries)}}};")
    lines.append(f"#define NUM_INPUTS {len(entries)}")
    lines.append(f"#define NUM_FRAMES {len(frames)}")
    outputs = [p for p in layout.placeholders if p.kind == "output"]
    lines.append("static const struct tensor_out outputs[] = {" + ", ".join(
        f"{{\"{p.name}\", {upper}_{p.name}, {p.byte_size}}}" for p in outputs) + "};")
    lines.append(f"#define NUM_OUTPUTS {len(outputs)}")
    return "\n".join(lines) + "\n"


@functools.cache
def _plugin(source: str) -> str:
    """Builds a QEMU TCG plugin of `embedded/` once per process."""
    directory = tempfile.mkdtemp(prefix="glowmlir-plugin-")
    library = os.path.join(directory, f"lib{source.removesuffix('.c')}.so")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", library, os.path.join(EMBEDDED, source)],
                   check=True, capture_output=True)
    return library


def _instruction_counter(spec: Board, program: str) -> str:
    """The plugin argument counting instructions, and on a Cortex-M board multiplies apart."""
    arguments = _plugin("insncount.c")
    if spec.counts_multiplies:
        from glowmlir.runtime.multiplies import disassemble, multiply_addresses

        path = program + ".multiplies"
        disassembly = disassemble(program, spec.compiler.replace("gcc", "objdump"), spec.objdump_options)
        with open(path, "w") as f:
            f.writelines(f"{address:x}\n" for address in sorted(multiply_addresses(disassembly)))
        arguments += f",multiplies={path}"
    return arguments


def _function_ranges_file(program: str, functions: Sequence[str]) -> tuple[str, list[tuple[int, int]]]:
    """Writes the address range of each function named (in order) for blockcount.c; the file
    and the ranges."""
    from glowmlir.elf import function_ranges

    with open(program, "rb") as f:
        ranges = function_ranges(f.read())
    missing = [name for name in functions if name not in ranges]
    if missing:
        raise GlowError(f"{os.path.basename(program)}: no function \"{missing[0]}\" in its symbol table")
    path = program + ".ranges"
    with open(path, "w") as f:
        f.writelines(f"{ranges[name][0]:x} {ranges[name][1]:x}\n" for name in functions)
    return path, [ranges[name] for name in functions]


def _build(bundle, spec: Board, directory: str, frames: Sequence[dict[str, np.ndarray]], weights_in: str,
           inferences: int, link: Sequence[str] = ()) -> str:
    with open(os.path.join(directory, "harness.h"), "w") as f:
        f.write(_harness_header(bundle, frames, spec.memory is not None, directory))
    flags = ["-I", directory, f"-DINFERENCES={inferences}"]
    if weights_in == "ram":
        flags.append("-DWEIGHTS_IN_RAM")
    memory = None
    if spec.memory is not None:
        input_bytes = len(frames) * sum(p.byte_size for p in bundle.layout.placeholders if p.kind == "input")
        memory = memory_values(spec, MemoryNeeds.of(bundle, input_bytes, weights_in))
    sources = [os.path.join(EMBEDDED, "main.c"), *link, os.path.join(directory, f"{bundle.name}.o")]
    return _link(spec, directory, sources, flags, memory, os.path.join(directory, f"prog{inferences}.elf"))


def _link(spec: Board, directory: str, sources: Sequence[str], flags: Sequence[str], memory: dict[str, str] | None,
          program: str) -> str:
    """Compiles and links `sources` into `program` for the board (on a bare-metal board with
    the start-up code and the linker script of `memory`'s values)."""
    flags = [*spec.compiler_flags, *flags]
    sources = list(sources)
    if memory is not None:
        with open(os.path.join(EMBEDDED, "mps2.ld.in")) as f:
            script = f.read()
        for key, value in memory.items():
            script = script.replace(f"@{key}@", value)
        linker_script = os.path.join(directory, "board.ld")
        with open(linker_script, "w") as f:
            f.write(script)
        sources.append(os.path.join(EMBEDDED, "startup.c"))
        flags += ["-T", linker_script]
    result = subprocess.run([spec.compiler, *flags, *sources, "-lm", "-o", program], capture_output=True, text=True)
    if result.returncode:
        raise GlowError(f"linking for {spec.name} failed: {compiler_error(result.stderr)}")
    return program


def program_cycles(board_name: str, sources: Sequence[str], functions: Sequence[str], runs: Sequence[Sequence[str]],
                   timeout: float = 60.0, flash_wait_states: int = 0) -> list[dict[str, Cycles]]:
    """Estimated cycles per function named of a bare-metal program of `sources` (C or
    assembly; `main` returns its exit code) on a Cortex-M board, built and run once per
    entry of `runs` (its extra compiler flags, e.g. `-DITERATIONS=100`)."""
    spec = board(board_name)
    cycle_timing(spec)
    found = []
    with tempfile.TemporaryDirectory(prefix="glowmlir-program-") as directory:
        for index, flags in enumerate(runs):
            program = _link(spec, directory, sources, flags, spec.memory, os.path.join(directory, f"prog{index}.elf"))
            _, counts = _run(spec, program, True, timeout, functions, True, flash_wait_states)
            buckets = counts.cycles.buckets
            found.append({name: buckets.get(bucket + 1, NO_CYCLES) for bucket, name in enumerate(functions)})
    return found


def compiler_error(stderr: str) -> str:
    """The lines of a compiler's stderr that say what went wrong (its `error:` lines, which
    come before GCC's closing "compilation terminated.", and the linker's full regions), or
    its last line if none do."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower() or "cannot find" in line or "No such file" in line
              or "overflowed" in line or "will not fit" in line]
    return "; ".join(errors[:3]) if errors else (lines[-1] if lines else "no message")


@dataclass
class _Counts:
    """What the counter of one program run found."""

    instructions: int
    per_function: list[int] | None = None  # per bucket: before any function named ran, then each
    multiplies: int | None = None
    cycles: object | None = None  # glowmlir.runtime.cycles.CycleCounts


def flash_range(spec: Board) -> tuple[int, int]:
    """The [start, end) of a board's flash (the code memory of the MPS2 boards), or a GlowError."""
    if spec.memory is None or spec.memory["WEIGHTS_REGION"] != "CODE":
        raise GlowError(f"-flash-wait-states: {spec.name} has no flash (code and weights in its TCM and DDR)")
    start = int(spec.memory["CODE_ORIGIN"], 16)
    return start, start + memory_sizes(spec)["CODE"]


def _block_counts(spec: Board, program: str, counter_file: str, ranges: list[tuple[int, int]],
                  cycles: bool, flash_wait_states: int = 0) -> _Counts:
    """The counts of a run under blockcount.c: per bucket, and priced if `cycles`."""
    from glowmlir.runtime import cycles as timing_model

    counts = timing_model.read_block_counts(counter_file)
    found = _Counts(counts.instructions)
    if ranges:
        per_bucket = timing_model.instructions_per_bucket(counts, ranges)
        found.per_function = [per_bucket.get(bucket, 0) for bucket in range(len(ranges) + 1)]
    if cycles:
        from glowmlir.runtime.multiplies import is_multiply

        disassembly = timing_model.disassembly_of(program, spec.compiler.replace("gcc", "objdump"),
                                                  spec.objdump_options)
        found.cycles = timing_model.price(counts, disassembly, cycle_timing(spec), program, ranges,
                                          flash_range(spec) if flash_wait_states else None, flash_wait_states)
        found.multiplies = sum(block.count for block in counts.blocks for address, _ in block.code
                               if is_multiply(disassembly[address].mnemonic))
    return found


def cycle_timing(spec: Board):
    """The timing model of a board's core (glowmlir.runtime.cycles), or a GlowError."""
    from glowmlir.runtime.cycles import timing_of

    timing = timing_of(spec.cpu) if spec.counts_multiplies else None
    if timing is None:
        raise GlowError(f"{spec.name}: cycles are estimated on the Cortex-M boards only")
    return timing


def _run(spec: Board, program: str, count: bool, timeout: float, functions: Sequence[str] = (),
         cycles: bool = False, flash_wait_states: int = 0) -> tuple[str, _Counts | None]:
    """Runs a program: its output, and if counting, its counts: instructions, and per function
    named (after those before any of them ran), and its multiplies on a Cortex-M board, and
    its estimated cycles if `cycles`."""
    command = [*spec.qemu]
    counter_file = program + ".count"
    if count and not spec.qemu:
        raise GlowError(f"{spec.name}: instructions are counted on emulated boards only")
    ranges = []
    if functions or cycles:
        plugin = f"{_plugin('blockcount.c')},out={counter_file}"
        if functions:
            ranges_file, ranges = _function_ranges_file(program, functions)
            plugin += f",ranges={ranges_file}"
        if flash_wait_states:
            plugin += ",flash={:x}-{:x}".format(*flash_range(spec))
        command += ["-plugin", plugin]
    elif count:
        command += ["-plugin", f"{_instruction_counter(spec, program)},out={counter_file}"]
    if spec.semihosting:
        command += ["-nographic", "-semihosting-config", "enable=on,target=native", "-kernel", program]
    else:
        command += [program]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise GlowError(f"{spec.name}: the program did not finish within {timeout:.0f} s") from None
    if result.returncode:
        raise GlowError(f"{spec.name}: the program exited with status {result.returncode}: {result.stdout[-200:]}")
    found = None
    if functions or cycles:
        found = _block_counts(spec, program, counter_file, ranges, cycles, flash_wait_states)
    elif count:
        with open(counter_file) as f:
            counts = f.read()
        found = _Counts(int(re.search(r"insns: (\d+)", counts).group(1)))
        if spec.counts_multiplies:
            found.multiplies = int(re.search(r"multiplies: (\d+)", counts).group(1))
    return result.stdout + result.stderr, found  # RISC-V semihosting: stderr


def run_on_board(bundle, board_name: str, inputs: dict[str, np.ndarray], weights_in: str = "flash",
                 count_instructions: bool = False, timeout: float = 300.0, link: Sequence[str] = (),
                 count_functions: Sequence[str] = (), count_cycles: bool = False,
                 flash_wait_states: int = 0) -> BoardRun:
    """Links `bundle` (compiled for the board's CPU, static API) for the board, with the C
    sources in `link` (e.g. a kernel library) built for it too, runs it under QEMU and
    returns its outputs and, if asked, the instructions of one inference, also per
    function of the program if `count_functions` names some, and its estimated cycles
    with `count_cycles` (Cortex-M boards; see `BoardRun`), `flash_wait_states` more for each
    access to the board's flash (`glowmlir.runtime.cycles.price`)."""
    spec = board(board_name)
    if weights_in not in ("flash", "ram"):
        raise GlowError(f"-weights-in=\"{weights_in}\": expected flash or ram")
    _require(spec.compiler)
    if spec.qemu:
        _require(spec.qemu[0])
    if count_cycles:
        cycle_timing(spec)  # a board without a timing model fails before building
    if flash_wait_states:
        flash_range(spec)
    with tempfile.TemporaryDirectory(prefix="glowmlir-board-") as directory:
        bundle.save(directory, weights_text=False)  # the harness takes weights.bin
        count_instructions = count_instructions or bool(count_functions) or count_cycles
        program = _build(bundle, spec, directory, [inputs], weights_in, 1, link)
        stdout, once = _run(spec, program, count_instructions, timeout, count_functions, count_cycles,
                            flash_wait_states)
        run = BoardRun({}, None)
        if count_instructions:
            _, twice = _run(spec, _build(bundle, spec, directory, [inputs], weights_in, 2, link), True, timeout,
                            count_functions, count_cycles, flash_wait_states)
            run = _difference(once, twice, count_functions, spec if count_cycles else None)
    return dataclasses.replace(run, outputs=_printed_outputs(bundle, spec, stdout, 1)[0])


def run_frames_on_board(bundle, board_name: str, frames: Sequence[dict[str, np.ndarray]], weights_in: str = "flash",
                        timeout: float = 300.0, link: Sequence[str] = ()) -> list[dict[str, np.ndarray]]:
    """Runs `bundle` on the board once per frame, in order, in one program (one mutableWeight:
    a streaming model's state goes on from frame to frame, as on a device); each frame's outputs."""
    spec = board(board_name)
    if weights_in not in ("flash", "ram"):
        raise GlowError(f"-weights-in=\"{weights_in}\": expected flash or ram")
    if not frames:
        raise GlowError("no frames to run")
    _require(spec.compiler)
    if spec.qemu:
        _require(spec.qemu[0])
    with tempfile.TemporaryDirectory(prefix="glowmlir-board-") as directory:
        bundle.save(directory, weights_text=False)
        stdout, _ = _run(spec, _build(bundle, spec, directory, frames, weights_in, 1, link), False, timeout)
    return _printed_outputs(bundle, spec, stdout, len(frames))


def _printed_outputs(bundle, spec: Board, stdout: str, frames: int) -> list[dict[str, np.ndarray]]:
    """The outputs of each frame the harness printed (`output <name> <hex bytes>` lines, frame after frame)."""
    placeholders = {p.name: p for p in bundle.layout.placeholders}
    count = sum(1 for p in bundle.layout.placeholders if p.kind == "output")
    printed = []
    for line in stdout.splitlines():
        if line.startswith("output "):
            _, name, hex_bytes = line.split()
            placeholder = placeholders[name]
            printed.append((name, np.frombuffer(bytes.fromhex(hex_bytes), placeholder.dtype)
                            .reshape(placeholder.shape)))
    if len(printed) != frames * count:
        raise GlowError(f"{spec.name}: the program printed no outputs: {stdout[-200:]}")
    return [dict(printed[frame * count:(frame + 1) * count]) for frame in range(frames)]


def _difference(once: _Counts, twice: _Counts, functions: Sequence[str], timed: Board | None) -> BoardRun:
    """One inference's counts: the 2-inference program's minus the 1-inference program's."""
    names = ["", *functions]
    per_function = function_cycles = multiplies = cycles = timing = None
    if functions:
        per_function = {name: second - first for name, first, second
                        in zip(names, once.per_function, twice.per_function)}
    if once.multiplies is not None:
        multiplies = twice.multiplies - once.multiplies
    if timed is not None:
        difference = twice.cycles - once.cycles
        cycles, timing = difference.total, cycle_timing(timed)
        if functions:
            function_cycles = {name: difference.buckets.get(bucket, NO_CYCLES) for bucket, name in enumerate(names)}
    return BoardRun({}, twice.instructions - once.instructions, per_function, multiplies, cycles, function_cycles,
                    timing)
