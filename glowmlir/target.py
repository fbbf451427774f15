"""The target description every stage reads: an LLVM machine (4-part triple, CPU, features,
relocation and code model, optimization level), its vector unit (`VectorTile`) and the cache of
one core the kernels block their loops for.

`targets.py` builds a `Target` from Glow's command-line options; the pipeline reads what the
target has, and `lowering.llvm_to_object` builds the machine that emits its object code.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import llvmlite.binding as llvm

from glowmlir import backends
from glowmlir.errors import GlowError


@dataclass(frozen=True)
class VectorTile:
    """`lanes` per vector register, `accumulators` vector registers a tile keeps;
    `masked_loads`: loads and stores whose lanes are chosen at run time are single
    instructions (AVX `vmaskmov`, AVX-512 `k` masks), as the vector-planes kernel needs
    (elsewhere LLVM splits them into a branch per lane); `registers`: the target's vector
    registers, which a vector-channels tile (taken where masked loads are single
    instructions: AVX, AVX-512) and a vector-depthwise tile share
    between accumulators and weights (0: neither kernel); `fused_multiply_add`: single-precision
    fused multiply-adds of its vectors (x86 FMA3), which the int8 kernels' float output
    step takes where proved (`quantization.float_steps.FloatStep.fused`)."""

    lanes: int
    accumulators: int
    masked_loads: bool = False
    registers: int = 0
    fused_multiply_add: bool = False

    @staticmethod
    def of_features(triple: str, features: Sequence[str]) -> VectorTile | None:
        """The f32 tile of a CPU's vector unit, as the backend serving it describes it
        (`Backend.vector_tile`); None without one."""
        return backends.vector_tile(triple, features)


def enabled_features(features: Sequence[str]) -> dict[str, bool]:
    """Whether each `+feature`/`-feature` named is on, a later one overriding an earlier one
    (as `-mattr` after the host's features), with the implications among them that the
    backends know (`Backend.feature_bases`) as LLVM applies them, in order: `+f` turns its
    bases on, `-f` every feature built on it off."""
    bases_of = backends.feature_bases()
    enabled: dict[str, bool] = {}

    def turn_on(name: str) -> None:
        enabled[name] = True
        for base in bases_of.get(name, ()):
            turn_on(base)

    def turn_off(name: str) -> None:
        enabled[name] = False
        for feature, bases in bases_of.items():
            if name in bases and enabled.get(feature) is not False:
                turn_off(feature)

    for feature in features:
        if feature[:1] == "+":
            turn_on(feature[1:])
        elif feature[:1] == "-":
            turn_off(feature[1:])
    return enabled


_initialized = False


def _initialize() -> None:
    global _initialized
    if not _initialized:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        _initialized = True


@dataclass(frozen=True)
class Target:
    """An LLVM target machine: 4-part triple, CPU, features and relocation model."""

    triple: str = ""
    cpu: str = ""
    features: str = ""
    relocation: str = "pic"
    code_model: str = "small"
    opt_level: int = 3
    size_attribute: str | None = None  # "optsize" or "minsize" on every function
    abi: str | None = None  # the "target-abi" module flag (RISC-V hard-float: ilp32f)

    @cached_property
    def feature_list(self) -> list[str]:
        """The +/- features, the host's first when no triple or CPU is given (-mattr adds to them)."""
        features = self.features.split(",")
        if not self.triple and not self.cpu:
            _initialize()
            features = llvm.get_host_cpu_features().flatten().split(",") + features
        return features

    @cached_property
    def resolved_triple(self) -> str:
        """The triple, the host's when none is given."""
        return self.triple or llvm.get_process_triple()

    @cached_property
    def resolved_cpu(self) -> str:
        """The CPU, the host's (LLVM's name for it) when neither a triple nor a CPU is given;
        "" for a triple without a CPU (LLVM's generic one)."""
        if self.cpu or self.triple:
            return self.cpu
        _initialize()
        return llvm.get_host_cpu_name()

    @property
    def vector_tile(self) -> VectorTile | None:
        """The f32 tile of the column-vector convolution on this target's vector unit (the
        host's features when no triple or CPU is given), None without one."""
        return VectorTile.of_features(self.resolved_triple, self.feature_list)

    @property
    def cache_bytes(self) -> int:
        """The cache of one core the kernels block their loops for: its L2, the host's as the
        OS reports it, else the default of the backend serving the architecture
        (`Backend.cache_bytes`; 0: unknown)."""
        default = backends.default_cache_bytes(self.resolved_triple)
        host = not self.triple and not self.cpu
        return (host and host_cache_bytes()) or default

    @property
    def emits_llvm_ir(self) -> bool:
        """Xtensa (HiFi4): llvmlite's LLVM has no back end for it; the bundle carries LLVM IR."""
        return self.triple.startswith("xtensa")

    @cached_property
    def pointer_width(self) -> int:
        """Bits in a pointer of address space 0, from the target's data layout."""
        return pointer_bits(XTENSA_DATA_LAYOUT if self.emits_llvm_ir else str(self.machine().target_data))

    def machine(self) -> llvm.TargetMachine:
        _initialize()
        triple = self.resolved_triple
        try:
            target = llvm.Target.from_triple(triple)
        except RuntimeError as error:
            raise GlowError(f"-target=\"{triple}\": {str(error).strip()}") from None
        cpu = self.resolved_cpu
        host_features = llvm.get_host_cpu_features().flatten() if not self.triple and not self.cpu else ""
        features = ",".join(f for f in (host_features, self.features) if f)  # -mattr adds to the host's
        return target.create_target_machine(cpu=cpu, features=features, opt=self.opt_level,
                                            reloc=self.relocation, codemodel=self.code_model)


HOST = Target()


def host_cache_bytes(level: int = 2) -> int:
    """One core's cache of `level` as Linux reports it (/sys/devices/system/cpu/cpu0/cache),
    0 where it does not."""
    for index in sorted(glob.glob("/sys/devices/system/cpu/cpu0/cache/index*")):
        try:
            with open(os.path.join(index, "level")) as f, open(os.path.join(index, "type")) as kind:
                if int(f.read()) != level or kind.read().strip() == "Instruction":
                    continue
            with open(os.path.join(index, "size")) as f:
                size = f.read().strip()
        except (OSError, ValueError):
            continue
        units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
        return int(size[:-1]) * units[size[-1]] if size[-1:] in units else int(size)
    return 0


def pointer_bits(data_layout: str) -> int:
    """Bits in a pointer of address space 0, from an LLVM data layout string."""
    match = re.search(r"(?:^|-)p:(\d+)", data_layout)
    return int(match.group(1)) if match else 64  # LLVM's default pointer size


XTENSA_DATA_LAYOUT = "e-m:e-p:32:32-i8:8:32-i16:16:32-i64:64-n32"
"""LLVM's Xtensa data layout (32-bit pointers, little endian)."""
