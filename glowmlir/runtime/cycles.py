"""Estimated core cycles of a program run on an emulated Cortex-M board.

QEMU executes instructions and has no timing. The block counter (`embedded/blockcount.c`)
records every translation block that ran: its instructions (address and bytes), how often
it ran and how often it was left by a taken branch. The program's disassembly
(`arm-none-eabi-objdump`, as `glowmlir.runtime.multiplies` reads it) names each
instruction, and a per-core timing model prices the blocks:

- Cortex-M0+, M3, M4, M33: each instruction's cycles from its core's Technical Reference
  Manual table at zero wait states (`TableTiming`), plus P cycles of pipeline refill for each
  taken branch. The M33's manual gives no table: the M4's is used (both are 3-stage,
  in-order, single-issue Armv7E-M/Armv8-M Mainline cores with the DSP extension; the M33's
  limited dual issue of 16-bit pairs is not modelled, so its figure leans high).
- Cortex-M7, M55: no public table. LLVM's scheduling model of the core through `llvm-mca`
  (LLVM 19) gives each block's steady-state cycles per run, the block's final branch
  left out and priced here (`McaTiming`): one cycle, and a mispredict penalty each time a
  conditional branch goes against its usual direction. A "model estimate".

All figures are cycles of the core at zero wait states (memory answering in one cycle):
a lower bound for a real board running from flash behind caches or accelerators. A
program's figure is the sum over the blocks; one inference's is the 2-inference minus
the 1-inference program's, as for the instruction count.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field

from glowmlir.errors import GlowError

ZERO_WAIT_STATES = "estimated core cycles at zero wait states"


@dataclass(frozen=True)
class Instruction:
    address: int
    encoding: bytes  # in memory order

    mnemonic: str  # objdump's, lower case, width suffix kept (`ldr.w`, `vmla.f32`, `bne.n`)
    operands: str  # without objdump's comment


@dataclass(frozen=True)
class Block:
    """One translation block as it ran in one bucket (see `embedded/blockcount.c`)."""

    start: int
    bucket: int
    count: int
    taken: int  # times the next block run did not start where this one ends
    code: tuple[tuple[int, bytes], ...]  # each instruction's address and bytes


@dataclass(frozen=True)
class BlockCounts:
    """What the block counter wrote for one program run."""

    instructions: int
    blocks: list[Block]
    flash_reads: dict[int, int] = field(default_factory=dict)  # per bucket, when counted


def read_block_counts(path: str) -> BlockCounts:
    with open(path) as f:
        header = f.readline()
        blocks, flash_reads = [], {}
        for line in f:
            if line.startswith("flash reads: "):
                bucket, reads = line.split()[2:]
                flash_reads[int(bucket)] = int(reads)
                continue
            start, bucket, count, taken, *code = line.split()
            blocks.append(Block(int(start, 16), int(bucket), int(count), int(taken),
                                tuple((int(address, 16), bytes.fromhex(data)) for address, data in
                                      (item.split(":") for item in code))))
    return BlockCounts(int(re.match(r"insns: (\d+)", header).group(1)), blocks, flash_reads)


_LINE = re.compile(r"^\s*([0-9a-f]+):\t([0-9a-f ]+?)\s*\t([^\t\n]+)(?:\t([^\n]*))?$", re.MULTILINE)


def read_disassembly(text: str) -> dict[int, Instruction]:
    """address -> instruction of `objdump -d` output."""
    found = {}
    for address, words, mnemonic, operands in _LINE.findall(text):
        encoding = b"".join(int(word, 16).to_bytes(len(word) // 2, "little") for word in words.split())
        operands = re.split(r"\s*[@;]", operands or "", maxsplit=1)[0].strip()
        found[int(address, 16)] = Instruction(int(address, 16), encoding, mnemonic.strip().lower(), operands.lower())
    return found


# --- instruction names ---------------------------------------------------------------------

CONDITIONS = frozenset({"eq", "ne", "cs", "hs", "cc", "lo", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt",
                        "le", "al"})
SINGLE_LOADS = frozenset({"ldr", "ldrb", "ldrh", "ldrsb", "ldrsh", "ldrt", "ldrbt", "ldrht", "ldrsbt", "ldrsht",
                          "ldrex", "ldrexb", "ldrexh", "lda", "ldab", "ldah", "ldaex", "ldaexb", "ldaexh"})
SINGLE_STORES = frozenset({"str", "strb", "strh", "strt", "strbt", "strht", "strex", "strexb", "strexh", "stl",
                           "stlb", "stlh", "stlex", "stlexb", "stlexh"})
DOUBLE = frozenset({"ldrd", "strd"})
MULTIPLE = frozenset({"ldm", "ldmia", "ldmfd", "ldmdb", "ldmea", "stm", "stmia", "stmea", "stmdb", "stmfd", "push",
                      "pop"})
FP_MULTIPLE = frozenset({"vldm", "vldmia", "vldmdb", "vstm", "vstmia", "vstmdb", "vpush", "vpop"})
BRANCHES = frozenset({"b", "bl", "blx", "bx", "cbz", "cbnz", "bxns", "blxns"})
TABLE_BRANCHES = frozenset({"tbb", "tbh"})
KNOWN = (SINGLE_LOADS | SINGLE_STORES | DOUBLE | MULTIPLE | FP_MULTIPLE | BRANCHES | TABLE_BRANCHES
         | {"it", "mul", "mla", "mls", "umull", "smull", "umlal", "smlal", "sdiv", "udiv", "vldr", "vstr", "vmla",
            "vmls", "vnmla", "vnmls", "vfma", "vfms", "vfnma", "vfnms", "vdiv", "vsqrt", "vmov", "dmb", "dsb", "isb",
            "mrs", "msr", "le", "wls", "dls", "letp", "wlstp", "dlstp"})


def base_name(mnemonic: str) -> str:
    """An objdump mnemonic without width/type suffix, condition code (in an IT block) or flag
    setting `s`: `ldrne.w` -> ldr, `adds` -> add, `bne.n` -> b, `vmla.f32` -> vmla."""
    name = mnemonic.split(".")[0]
    if name in KNOWN:
        return name
    candidates = [name]
    if name[-2:] in CONDITIONS:
        candidates.append(name[:-2])
    candidates += [candidate[:-1] for candidate in candidates if candidate.endswith("s")]
    return next((candidate for candidate in candidates if candidate in KNOWN), name)


def register_count(operands: str) -> int:
    """Registers in a `{r4, r5, lr}` / `{d8-d15}` list; a d register counts as two words."""
    listed = re.search(r"\{([^}]*)\}", operands)
    if not listed:
        return 1
    words = 0
    for item in listed.group(1).split(","):
        item = item.strip()
        low, _, high = item.partition("-")
        number = int(high[1:]) - int(low[1:]) + 1 if high else 1
        words += number * (2 if low.startswith("d") else 1)
    return words


def address_registers(operands: str) -> set[str]:
    bracket = re.search(r"\[([^\]]*)\]", operands)
    return set(re.findall(r"\b(r\d+|ip|sp|lr|fp|sl|sb)\b", bracket.group(1))) if bracket else set()


def destination(operands: str) -> str:
    return operands.split(",")[0].strip()


def writes_pc(base: str, operands: str) -> bool:
    if base in ("pop", "ldm", "ldmia", "ldmfd", "ldmdb"):
        return "pc" in operands
    return base in SINGLE_LOADS and destination(operands) == "pc"


# --- timing models -------------------------------------------------------------------------

@dataclass(frozen=True)
class Cycles:
    """An estimate with the range it lies in (branch refill and data-dependent timings at
    their two ends)."""

    estimate: float
    low: float
    high: float

    def __add__(self, other: Cycles) -> Cycles:
        return Cycles(self.estimate + other.estimate, self.low + other.low, self.high + other.high)

    def __sub__(self, other: Cycles) -> Cycles:
        return Cycles(self.estimate - other.estimate, self.low - other.low, self.high - other.high)

    def scaled(self, factor: float) -> Cycles:
        return Cycles(self.estimate * factor, self.low * factor, self.high * factor)


NO_CYCLES = Cycles(0, 0, 0)


@dataclass(frozen=True)
class TableTiming:
    """Cycles per instruction from a Technical Reference Manual's table (zero wait states);
    `refill` the cycles P a taken branch adds (estimate, low, high)."""

    core: str
    refill: tuple[int, int, int]
    source: str
    multiply_accumulate: int = 1  # MLA, MLS
    long_multiply: tuple[int, int, int] = (1, 1, 1)  # UMULL, SMULL (estimate, low, high)
    long_multiply_accumulate: tuple[int, int, int] = (1, 1, 1)  # UMLAL, SMLAL
    divide: tuple[int, int, int] = (12, 2, 12)  # SDIV, UDIV: 2-12, data dependent
    pipelined_loads: bool = True  # neighbouring single loads and stores pipeline (Armv7-M cores)
    load: int = 2
    load_store_multiple: int = 1  # + N registers
    call_extra: int = 0  # BL beyond 1 + P (the M0+'s BL is 3)
    pop_pc_extra: int = 0  # POP {..., pc} beyond 1 + N + P (the M0+'s is 3 + N)
    barrier: int = 1  # DMB, DSB, ISB
    special_register: int = 1  # MRS, MSR
    is_model_estimate = False

    def instruction_cycles(self, instructions: Sequence[Instruction]) -> list[Cycles]:
        """Each instruction's cycles in a block, a taken branch's refill not included."""
        found = []
        previous = None
        for instruction in instructions:
            found.append(self._cycles(instruction, previous))
            previous = instruction
        return found

    def _cycles(self, instruction: Instruction, previous: Instruction | None) -> Cycles:
        name, operands = base_name(instruction.mnemonic), instruction.operands

        def fixed(cycles: int) -> Cycles:
            return Cycles(cycles, cycles, cycles)

        if name in SINGLE_LOADS or name in SINGLE_STORES:
            after_load = (self.pipelined_loads and previous is not None
                          and base_name(previous.mnemonic) in SINGLE_LOADS
                          and destination(previous.operands) not in address_registers(operands))
            if after_load:
                return fixed(1)  # its address phase overlaps the load before
            if name in SINGLE_STORES and self.pipelined_loads and not re.search(r"\[\w+, (r\d+|ip|lr)", operands):
                return fixed(1)  # STR with an immediate offset: the write buffer takes it
            return fixed(self.load)
        if name in DOUBLE:
            return fixed(self.load_store_multiple + 2)
        if name in MULTIPLE:
            extra = self.pop_pc_extra if "pc" in operands else 0
            return fixed(self.load_store_multiple + register_count(operands) + extra)
        if name in FP_MULTIPLE:
            return fixed(1 + register_count(operands))
        if name in ("vldr", "vstr"):
            return fixed(3 if destination(operands).startswith("d") else 2)
        if name in ("vmla", "vmls", "vnmla", "vnmls", "vfma", "vfms", "vfnma", "vfnms"):
            return fixed(3)
        if name in ("vdiv", "vsqrt"):
            return fixed(14)
        if name == "vmov" and operands.count(",") >= 2:  # two core registers to or from a d or two s
            return fixed(2)
        if name in ("mla", "mls"):
            return fixed(self.multiply_accumulate)
        if name in ("umull", "smull"):
            return Cycles(*self.long_multiply)
        if name in ("umlal", "smlal"):
            return Cycles(*self.long_multiply_accumulate)
        if name in ("sdiv", "udiv"):
            return Cycles(*self.divide)
        if name in TABLE_BRANCHES:
            return fixed(2)
        if name == "bl":
            return fixed(1 + self.call_extra)
        if name == "it":
            return fixed(0 if previous is not None and len(previous.encoding) == 2 else 1)  # folded
        if name in ("dmb", "dsb", "isb"):
            return fixed(self.barrier)
        if name in ("mrs", "msr"):
            return fixed(self.special_register)
        return fixed(1)

    def taken_branch(self) -> Cycles:
        return Cycles(*self.refill)

    def describe(self) -> str:
        low, high = self.refill[1], self.refill[2]
        refill = f"P={self.refill[0]} (range {low}-{high})" if low != high else f"P={self.refill[0]}"
        return f"{self.core}: {self.source}; taken branch 1+{refill}"


CORTEX_M4 = TableTiming("Cortex-M4", (1, 1, 3), "Cortex-M4 TRM r0p1 instruction timings")
CORTEX_M3 = TableTiming("Cortex-M3", (1, 1, 3), "Cortex-M3 TRM r2p1 instruction timings", multiply_accumulate=2,
                        long_multiply=(5, 3, 5), long_multiply_accumulate=(7, 4, 7))
CORTEX_M33 = TableTiming("Cortex-M33", (1, 1, 3), "the Cortex-M4 TRM's table (the M33 TRM has none)")
CORTEX_M0PLUS = TableTiming("Cortex-M0+", (1, 1, 1), "Cortex-M0+ TRM r0p1 (single-cycle multiplier)",
                            pipelined_loads=False, call_extra=1, pop_pc_extra=1, barrier=3, special_register=3)


@dataclass(frozen=True)
class McaTiming:
    """A block's steady-state cycles per run from llvm-mca's model of the core, its final
    branch left out; a branch then costs `branch` cycles and `mispredict` more each time a
    conditional branch goes against its usual direction (a loop's exit)."""

    core: str
    cpu: str  # llvm-mca -mcpu
    triple: str
    branch: int
    mispredict: int
    is_model_estimate = True

    def describe(self) -> str:
        return (f"{self.core}: model estimate, llvm-mca -mcpu={self.cpu} steady state per block, branches "
                f"{self.branch} cycle, a conditional branch against its usual direction +{self.mispredict}")


CORTEX_M7 = McaTiming("Cortex-M7", "cortex-m7", "thumbv7em-none-eabihf", branch=0, mispredict=6)
CORTEX_M55 = McaTiming("Cortex-M55", "cortex-m55", "thumbv8.1m.main-none-eabihf", branch=1, mispredict=3)

TIMINGS = {"cortex-m0plus": CORTEX_M0PLUS, "cortex-m3": CORTEX_M3, "cortex-m4": CORTEX_M4, "cortex-m33": CORTEX_M33,
           "cortex-m7": CORTEX_M7, "cortex-m55": CORTEX_M55}
LLVM_MCA = "llvm-mca-19"


def cycles_label(timing: TableTiming | McaTiming, flash_wait_states: int = 0) -> str:
    """What the figures of a timing model are called where they are printed."""
    label = (f"estimated core cycles at {flash_wait_states} flash wait state{'s' if flash_wait_states > 1 else ''}"
             if flash_wait_states else ZERO_WAIT_STATES)
    return f"{label} (model estimate)" if timing.is_model_estimate else label


def timing_of(cpu: str) -> TableTiming | McaTiming | None:
    return TIMINGS.get(cpu)


# --- llvm-mca ------------------------------------------------------------------------------

def _mca_line(instruction: Instruction) -> str:
    """The instruction as LLVM's assembler takes it: no width suffix (llvm-mca 19 crashes on
    some `.w` forms; the timing does not depend on the encoding)."""
    mnemonic = re.sub(r"\.[wn]$", "", instruction.mnemonic)
    return f"{mnemonic} {instruction.operands}".strip()


def _cache_directory() -> str:
    return os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "glowmlir", "llvm-mca")


class McaCache:
    """llvm-mca cycles per block text, kept on disk per core (runs of the same kernels reuse them)."""

    def __init__(self, timing: McaTiming):
        self.timing = timing
        self.path = os.path.join(_cache_directory(), f"{timing.cpu}.json")
        try:
            with open(self.path) as f:
                self.cycles: dict[str, float] = json.load(f)
        except (OSError, ValueError):
            self.cycles = {}

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha1(text.encode()).hexdigest()

    def lookup(self, texts: Sequence[str]) -> list[float]:
        missing = sorted({text for text in texts if text and self.key(text) not in self.cycles})
        if missing:
            self._measure(missing)
            self._save()
        return [self.cycles[self.key(text)] if text else 0.0 for text in texts]

    def _measure(self, texts: list[str]) -> None:
        if shutil.which(LLVM_MCA) is None:
            raise GlowError(f"\"{LLVM_MCA}\" is not installed (scripts/setup.sh installs llvm-19): the "
                            f"{self.timing.core} cycle estimate needs it")
        results = self._run(texts)
        if results is None:  # one block llvm-mca cannot take: each alone, the failures priced 1 per instruction
            for text in texts:
                single = self._run([text])
                self.cycles[self.key(text)] = single[0] if single else float(text.count("\n") + 1)
            return
        for text, cycles in zip(texts, results):
            self.cycles[self.key(text)] = cycles

    def _run(self, texts: list[str]) -> list[float] | None:
        iterations = 100
        source = "".join(f"# LLVM-MCA-BEGIN b{index}\n{text}\n# LLVM-MCA-END\n" for index, text in enumerate(texts))
        with tempfile.NamedTemporaryFile("w", suffix=".s", delete=False) as f:
            f.write(source)
        try:
            result = subprocess.run([LLVM_MCA, f"-mtriple={self.timing.triple}", f"-mcpu={self.timing.cpu}",
                                     f"-iterations={iterations}", "-summary-view", "-instruction-info=false",
                                     "-resource-pressure=false", f.name], capture_output=True, text=True)
        finally:
            os.unlink(f.name)
        totals = [int(cycles) for cycles in re.findall(r"^Total Cycles:\s+(\d+)", result.stdout, re.MULTILINE)]
        if result.returncode or len(totals) != len(texts):
            return None
        return [total / iterations for total in totals]

    def _save(self) -> None:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(self.path), delete=False) as f:
            json.dump(self.cycles, f)
        os.replace(f.name, self.path)


# --- pricing a run -------------------------------------------------------------------------

@dataclass
class CycleCounts:
    """A program run's estimated cycles, in total and per bucket (range of the block counter)."""

    total: Cycles = NO_CYCLES
    buckets: dict[int, Cycles] = field(default_factory=dict)

    def __sub__(self, other: CycleCounts) -> CycleCounts:
        keys = self.buckets.keys() | other.buckets.keys()
        return CycleCounts(self.total - other.total,
                           {k: self.buckets.get(k, NO_CYCLES) - other.buckets.get(k, NO_CYCLES) for k in keys})


def bucket_of_instructions(block: Block, ranges: Sequence[tuple[int, int]]) -> list[int]:
    """Which bucket each of a block's instructions counts for (blockcount.c's rule)."""
    buckets, last = [], block.bucket
    for address, _ in block.code:
        for index, (start, end) in enumerate(ranges):
            if start <= address < end:
                last = index + 1
                break
        buckets.append(last)
    return buckets


def decode(block: Block, disassembly: dict[int, Instruction], program: str) -> list[Instruction]:
    found = []
    for address, data in block.code:
        instruction = disassembly.get(address)
        if instruction is None or not data.startswith(instruction.encoding):
            raise GlowError(f"{os.path.basename(program)}: the instruction QEMU ran at 0x{address:x} "
                            f"({data.hex()}) is not in its disassembly")
        found.append(instruction)
    return found


def price(counts: BlockCounts, disassembly: dict[int, Instruction], timing: TableTiming | McaTiming,
          program: str, ranges: Sequence[tuple[int, int]] = (), flash: tuple[int, int] | None = None,
          flash_wait_states: int = 0) -> CycleCounts:
    """Estimated cycles of a program run (and per bucket); with `flash_wait_states`, each
    access to `flash` [low, high) costs that many more: every 32-bit word of code a block
    fetches from there each time it runs, and every data read counted there
    (`counts.flash_reads`). No cache, no prefetch buffer, no flash accelerator is modelled."""
    decoded = [decode(block, disassembly, program) for block in counts.blocks]
    if isinstance(timing, McaTiming):
        per_instruction = _mca_instruction_cycles(counts.blocks, decoded, timing)
    else:
        per_instruction = [timing.instruction_cycles(instructions) for instructions in decoded]
    result = CycleCounts()
    for block, instructions, cycles in zip(counts.blocks, decoded, per_instruction):
        buckets = bucket_of_instructions(block, ranges)
        for bucket, instruction_cycles in zip(buckets, cycles):
            amount = instruction_cycles.scaled(block.count)
            result.buckets[bucket] = result.buckets.get(bucket, NO_CYCLES) + amount
            result.total += amount
        if isinstance(timing, TableTiming):
            branch = timing.taken_branch().scaled(block.taken)
        else:
            branch = _mca_branch(block, instructions[-1], timing)
        if flash_wait_states and flash[0] <= block.start < flash[1]:
            words = {end // 4 for instruction in instructions
                     for end in (instruction.address, instruction.address + len(instruction.encoding) - 1)}
            branch += Cycles(*(3 * [flash_wait_states * len(words) * block.count]))
        result.buckets[buckets[-1]] = result.buckets.get(buckets[-1], NO_CYCLES) + branch
        result.total += branch
    for bucket, reads in counts.flash_reads.items():
        waits = Cycles(*(3 * [flash_wait_states * reads]))
        result.buckets[bucket] = result.buckets.get(bucket, NO_CYCLES) + waits
        result.total += waits
    return result


def _ends_in_branch(instruction: Instruction) -> bool:
    name = base_name(instruction.mnemonic)
    return name in BRANCHES or name in TABLE_BRANCHES or writes_pc(name, instruction.operands)


def _mca_instruction_cycles(blocks: Sequence[Block], decoded: Sequence[list[Instruction]],
                            timing: McaTiming) -> list[list[Cycles]]:
    """Each block's llvm-mca cycles spread evenly over its instructions but a final branch
    (priced by `_mca_branch`)."""
    bodies = [instructions[:-1] if _ends_in_branch(instructions[-1]) else instructions for instructions in decoded]
    texts = ["\n".join(_mca_line(instruction) for instruction in body) for body in bodies]
    cycles = McaCache(timing).lookup(texts)
    found = []
    for instructions, body, block_cycles in zip(decoded, bodies, cycles):
        each = block_cycles / len(body) if body else 0.0
        found.append([Cycles(each, each, each)] * len(body) + [NO_CYCLES] * (len(instructions) - len(body)))
    return found


def _mca_branch(block: Block, last: Instruction, timing: McaTiming) -> Cycles:
    if not _ends_in_branch(last):
        return NO_CYCLES
    cycles = timing.branch * block.count
    name = base_name(last.mnemonic)
    conditional = name in ("cbz", "cbnz") or (name == "b" and last.mnemonic.split(".")[0] != "b")
    if conditional:
        cycles += timing.mispredict * min(block.taken, block.count - block.taken)
    return Cycles(cycles, cycles, cycles)


@functools.cache
def _disassembly_of(program: str, mtime: float, objdump: str, options: tuple[str, ...]) -> dict[int, Instruction]:
    from glowmlir.runtime.multiplies import disassemble

    return read_disassembly(disassemble(program, objdump, options))


def disassembly_of(program: str, objdump: str, options: tuple[str, ...] = ()) -> dict[int, Instruction]:
    return _disassembly_of(program, os.path.getmtime(program), objdump, options)


def instructions_per_bucket(counts: BlockCounts, ranges: Sequence[tuple[int, int]]) -> dict[int, int]:
    """Executed instructions per bucket (blockcount.c's rule); they sum to `counts.instructions`."""
    found: dict[int, int] = {}
    for block in counts.blocks:
        for bucket in bucket_of_instructions(block, ranges):
            found[bucket] = found.get(bucket, 0) + block.count
    return found
