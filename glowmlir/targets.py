"""Targets: Glow's `-target/-mcpu/-mattr/-float-abi/...` options resolved to an LLVM machine.

CPU presets carry the 4-part triple and the FPU features each core really has. Triples
are normalised to 4 parts: LLVM reads `thumbv7em-none-eabihf` as vendor `none` with an
unknown environment and silently falls back to soft-float calls, while
`thumbv7em-unknown-none-eabihf` gives hard float (see the spike notes).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from dataclasses import dataclass, replace

from glowmlir.errors import GlowError
from glowmlir.target import Target


@dataclass(frozen=True)
class CpuPreset:
    triple: str
    features: str
    note: str
    llvm_cpu: str = ""  # LLVM's name for the CPU, where it is not the preset's

    @property
    def emits_object(self) -> bool:
        """False for Xtensa (HiFi4): llvmlite's LLVM has no back end, the bundle is LLVM IR."""
        return not self.triple.startswith("xtensa")


CPU_PRESETS: dict[str, CpuPreset] = {
    "x86-64": CpuPreset("x86_64-unknown-linux-gnu", "", "generic x86-64 (SSE2)"),
    "i386": CpuPreset("i386-unknown-linux-gnu", "+sse2", "32-bit x86"),
    "cortex-a53": CpuPreset("aarch64-unknown-linux-gnu", "+neon", "Armv8-A, NEON"),
    "cortex-a72": CpuPreset("aarch64-unknown-linux-gnu", "+neon", "Armv8-A, NEON"),
    "cortex-m0": CpuPreset("thumbv6m-unknown-none-eabi", "", "Armv6-M, no FPU"),
    "cortex-m0plus": CpuPreset("thumbv6m-unknown-none-eabi", "", "Armv6-M, no FPU"),
    "cortex-m3": CpuPreset("thumbv7m-unknown-none-eabi", "", "Armv7-M, no FPU"),
    "cortex-m4": CpuPreset("thumbv7em-unknown-none-eabihf", "+vfp4d16sp,+dsp", "Armv7E-M, FPv4-SP"),
    "cortex-m7": CpuPreset("thumbv7em-unknown-none-eabihf", "+fp-armv8d16,+dsp", "Armv7E-M, FPv5-D16"),
    "cortex-m33": CpuPreset("thumbv8m.main-unknown-none-eabihf", "+fp-armv8d16sp,+dsp", "Armv8-M Mainline, FPv5-SP"),
    "cortex-m55": CpuPreset("thumbv8.1m.main-unknown-none-eabihf", "+fp-armv8d16,+mve.fp,+dsp",
                            "Armv8.1-M, FPv5 + Helium (MVE)"),
    "rv32imc": CpuPreset("riscv32-unknown-none-elf", "+m,+c", "RV32IMC, no FPU"),
    "rv32imafc": CpuPreset("riscv32-unknown-none-elf", "+m,+a,+f,+c", "RV32IMAFC, single-precision FPU"),
    "hifi4": CpuPreset("xtensa-unknown-none-elf", "", "Cadence HiFi 4 DSP (RT685): LLVM IR and bitcode for "
                                                     "Cadence's clang-based xt-clang, no object (no Xtensa back end)"),
}

OPT_LEVELS = {"O0": (0, None), "O1": (1, None), "O2": (2, None), "O3": (3, None),
              "Os": (2, "optsize"), "Oz": (2, "minsize")}
"""-opt-level: LLVM speed level, and the size attribute put on every function (llvmlite
has no -Os/-Oz pipeline; `optsize`/`minsize` steer the O2 pipeline and the backend)."""

OBJECT_CPUS = [name for name, preset in CPU_PRESETS.items() if preset.emits_object]
"""The presets glowmlir compiles object code for."""

_ARCH_ALIASES = {"arm": "thumbv7em", "thumb": "thumbv7em", "x86_64": "x86_64", "x86": "i386", "aarch64": "aarch64",
                 "arm64": "aarch64", "riscv32": "riscv32", "i386": "i386", "i686": "i686"}


def normalize_triple(triple: str, float_abi: str = "default") -> str:
    """A 4-part LLVM triple; `-float-abi=hard|soft` picks eabihf or eabi on Arm."""
    parts = triple.split("-")
    arch = _ARCH_ALIASES.get(parts[0], parts[0])
    if len(parts) == 1:
        if arch.startswith(("thumb", "arm")):
            parts = [arch, "unknown", "none", "eabihf" if float_abi == "hard" else "eabi"]
        elif arch.startswith("riscv"):
            parts = [arch, "unknown", "none", "elf"]
        else:
            parts = [arch, "unknown", "linux", "gnu"]
    elif len(parts) == 3:
        # arch-os-env (thumbv7em-none-eabihf) or arch-vendor-os (x86_64-pc-linux)
        if parts[1] in ("none", "linux", "elf") or parts[2].startswith(("eabi", "gnu", "elf")):
            parts = [arch, "unknown", parts[1], parts[2]]
        else:
            parts = [arch, parts[1], parts[2], "gnu" if parts[2] == "linux" else "elf"]
    elif len(parts) == 2:
        parts = [arch, "unknown", parts[1], "elf"]
    else:
        parts = [arch, *parts[1:4]]
    if parts[0].startswith(("thumb", "arm")) and float_abi in ("hard", "soft"):
        parts[3] = "eabihf" if float_abi == "hard" else "eabi"
    return "-".join(parts)


def resolve_target(target: str | None = None, mcpu: str | None = None, mattr: str | None = None,
                   float_abi: str = "default", relocation_model: str | None = None, code_model: str = "small",
                   opt_level: str | None = None) -> Target:
    """Glow's target options → the `Target` the backend builds a machine from, checked
    against LLVM's tables for the triple before any code is generated. As in Glow, code is
    `static` unless `-relocation-model=pic` asks otherwise; `code_model` is Glow's
    `-bundle-code-model` (its `-code-model` is the JIT's)."""
    for option, value in (("target", target), ("mcpu", mcpu), ("mattr", mattr), ("opt-level", opt_level)):
        if value is not None and not value.strip():
            raise GlowError(f"-{option}=\"{value}\": empty value")
    if mattr is not None:
        for feature in mattr.split(","):
            if not re.fullmatch(r"[+-][A-Za-z0-9][A-Za-z0-9._-]*", feature):
                raise GlowError(f"-mattr=\"{mattr}\": \"{feature}\" is not a feature (expected +name or -name, "
                                f"comma-separated)")
    if float_abi not in ("default", "soft", "hard"):
        raise GlowError(f"-float-abi=\"{float_abi}\": expected default, soft or hard")
    if relocation_model not in (None, "static", "pic"):
        raise GlowError(f"-relocation-model=\"{relocation_model}\": expected static or pic")
    if code_model not in ("small", "medium", "large", "default"):
        raise GlowError(f"-bundle-code-model=\"{code_model}\": expected small, medium or large")
    mcpu = {"x86_64": "x86-64", "cortex-m0+": "cortex-m0plus"}.get(mcpu, mcpu)
    preset = CPU_PRESETS.get(mcpu) if mcpu else None
    if mcpu and preset is None and not target:
        raise GlowError(f"-mcpu=\"{mcpu}\": unknown CPU without -target (presets: {', '.join(CPU_PRESETS)})")
    if target is None and preset is None:
        host = Target(features=mattr or "")
        if mattr:
            check_machine(host)
        if opt_level is not None:
            host = _with_opt_level(host, opt_level)
        return replace(host, relocation=relocation_model or "static", code_model=code_model)
    if target and len(target.split("-")) > 4:
        raise GlowError(f"-target=\"{target}\": a triple has at most four parts (arch-vendor-os-environment)")
    if target and preset and _arch_family(target) != _arch_family(preset.triple):
        raise GlowError(f"-mcpu=\"{mcpu}\" (a CPU of {_arch_family(preset.triple)} targets) does not fit "
                        f"-target=\"{target}\"")
    triple = normalize_triple(target or preset.triple, float_abi)
    if preset and float_abi == "soft" and triple.endswith("eabihf"):
        triple = triple[: -len("hf")]
    features = ",".join(f for f in ((preset.features if preset else ""), mattr or "") if f)
    if float_abi == "soft" and triple.endswith("-eabi") and preset and "fp" in preset.features:
        features = ",".join(f for f in features.split(",") if "fp" not in f and "mve" not in f)
    if float_abi == "hard" and preset and triple.startswith(("thumb", "arm")) and "fp" not in features:
        raise GlowError(f"-float-abi=hard: {mcpu} has no floating-point unit (use -float-abi=soft or default)")
    cpu = (preset.llvm_cpu if preset is not None and preset.llvm_cpu else
           {"rv32imc": "generic-rv32", "rv32imafc": "generic-rv32", "x86-64": "x86-64", "i386": "pentium4"}.get(
               mcpu or "", mcpu or ""))
    abi = "ilp32f" if triple.startswith("riscv32") and "+f" in features.split(",") and float_abi != "soft" else None
    result = Target(triple=triple, cpu=cpu, features=features,
                    relocation=relocation_model or "static", code_model=code_model, abi=abi)
    if not result.emits_llvm_ir:
        check_machine(result)
    return _with_opt_level(result, opt_level) if opt_level is not None else result


def _arch_family(triple: str) -> str:
    arch = _ARCH_ALIASES.get(triple.split("-")[0], triple.split("-")[0])
    for family, prefixes in (("Arm", ("thumb", "arm")), ("AArch64", ("aarch64",)), ("RISC-V", ("riscv",)),
                             ("x86", ("x86", "i386", "i486", "i586", "i686")), ("Xtensa", ("xtensa",))):
        if arch.startswith(prefixes):
            return family
    return arch


def check_machine(target: Target) -> None:
    """Refuses a CPU or feature LLVM does not know for the triple, and a big-endian target.
    LLVM only warns on stderr about the first two and ignores them (and then may abort the
    process in code generation, e.g. an Arm CPU on an x86-64 triple), so its warnings are
    caught while the machine is created."""
    with tempfile.TemporaryFile() as stderr:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(stderr.fileno(), 2)
        try:
            machine = target.machine()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        stderr.seek(0)
        warnings = stderr.read().decode(errors="replace")
    if match := re.search(r"'([^']*)' is not a recognized processor", warnings):
        raise GlowError(f"-mcpu=\"{match.group(1)}\": not a CPU of target {target.triple}")
    if match := re.search(r"'([^']*)' is not a recognized feature", warnings):
        raise GlowError(f"-mattr: \"{match.group(1)}\" is not a feature of "
                        f"{f'target {target.triple}' if target.triple else 'the host'}")
    if str(machine.target_data).startswith("E"):
        raise GlowError(f"-target=\"{target.triple}\": a big-endian target; bundles (weights.bin, the header's "
                        f"layout) are little-endian")


def _with_opt_level(target: Target, opt_level: str) -> Target:
    if opt_level not in OPT_LEVELS:
        raise GlowError(f"-opt-level=\"{opt_level}\": expected one of {', '.join(OPT_LEVELS)}")
    speed, size = OPT_LEVELS[opt_level]
    return replace(target, opt_level=speed, size_attribute=size)
