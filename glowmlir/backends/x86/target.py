"""The targets the AVX-512 backend serves."""

from __future__ import annotations

from glowmlir.target import Target, enabled_features


def has_avx512_vnni(target: Target) -> bool:
    """An x86-64 target with AVX-512 VNNI and BW (`vpdpbusd` on zmm registers: the int8
    kernels of `vnni_kernels`); a later `-feature` overrides an earlier `+feature`."""
    return _x86_64_with(target, "avx512vnni", "avx512bw")


def has_avx512_vbmi(target: Target) -> bool:
    """An x86-64 target with AVX-512 VBMI (`vpermi2b`: a 128-byte table looked up by 64 byte
    indices at once, the int8 lookup tables of `vnni_kernels`)."""
    return _x86_64_with(target, "avx512vbmi", "avx512bw")


def has_fma(target: Target) -> bool:
    """FMA3 (`vfmadd`: the fused float forms `SelectVnniKernels` proves with `fused_multiply_add`)."""
    return bool(enabled_features(target.feature_list).get("fma"))


def _x86_64_with(target: Target, *names: str) -> bool:
    """An x86-64 target with each of these AVX-512 features (a later `-feature` overrides an
    earlier `+feature`), none of the features they build on turned off (`-mattr=-avx512f` or
    `-avx` turns every AVX-512 feature off in LLVM, though the host's list still names them)."""
    enabled = enabled_features(target.feature_list)
    return (target.resolved_triple.startswith("x86_64") and all(enabled.get(name) for name in names)
            and not any(enabled.get(base) is False for base in ("avx512f", "avx2", "avx")))
