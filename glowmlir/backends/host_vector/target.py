"""The vector units the host-vector backend's kernels tile: x86-64 (SSE, AVX, AVX-512) and
AArch64 (NEON), and the cache of one such core they block their loops for."""

from __future__ import annotations

from collections.abc import Sequence

from glowmlir.target import VectorTile, enabled_features


def vector_tile(triple: str, features: Sequence[str]) -> VectorTile | None:
    """The f32 tile of a CPU: AVX-512 (32 registers of 16 lanes), AVX/AVX2 (16 of 8),
    SSE (16 of 4) on x86-64, NEON on AArch64 (32 of 4), with fused multiply-adds where
    `fused_multiply_add` says; None without a vector unit. A later `-feature` overrides an
    earlier `+feature` (as `-mattr` after the host's)."""
    enabled = enabled_features(features)
    if triple.startswith("x86_64"):
        fma = fused_multiply_add(triple, features)
        if enabled.get("avx512f"):
            return VectorTile(16, 16, masked_loads=True, registers=32, fused_multiply_add=fma)
        if enabled.get("avx"):
            return VectorTile(8, 12, masked_loads=True, registers=16, fused_multiply_add=fma)
        return VectorTile(4, 12, registers=16, fused_multiply_add=fma)
    if triple.startswith("aarch64"):
        return VectorTile(4, 16, registers=32, fused_multiply_add=fused_multiply_add(triple, features))
    return None


X86_FEATURE_BASES = {
    "sse2": ("sse",), "sse3": ("sse2",), "ssse3": ("sse3",), "sse4.1": ("ssse3",), "sse4.2": ("sse4.1",),
    "avx": ("sse4.2",), "avx2": ("avx",), "fma": ("avx",), "f16c": ("avx",), "avxvnni": ("avx2",),
    "avx512f": ("avx2", "fma", "f16c"), "avx512bw": ("avx512f",), "avx512dq": ("avx512f",),
    "avx512vl": ("avx512f",), "avx512cd": ("avx512f",), "avx512ifma": ("avx512f",), "avx512vnni": ("avx512f",),
    "avx512vpopcntdq": ("avx512f",), "avx512bf16": ("avx512bw",), "avx512fp16": ("avx512bw", "avx512dq", "avx512vl"),
    "avx512vbmi": ("avx512bw",), "avx512vbmi2": ("avx512bw",), "avx512bitalg": ("avx512bw",),
}
"""Each x86 feature's bases, as LLVM's X86.td implies them (`Backend.feature_bases`): `+f` turns
its bases on, `-f` every feature built on it off (`-mattr=-avx` on an AVX-512 host turns AVX-512
off too, `-fma` AVX-512F)."""


def byte_shuffles(triple: str, features: Sequence[str]) -> str:
    """The byte shuffles `table_lookup` looks an int8 table up by: "avx512bw" (zmm `vpshufb`),
    "avx2" (ymm), "neon" (`tbl`/`tbx` of four registers, AArch64); "" (none: SSE, AVX
    without AVX2, other targets)."""
    enabled = enabled_features(features)
    if triple.startswith("x86_64"):
        if enabled.get("avx512bw") and enabled.get("avx512f") is not False:
            return "avx512bw"
        return "avx2" if enabled.get("avx2") and enabled.get("avx") is not False else ""
    return "neon" if triple.startswith("aarch64") else ""


def fused_multiply_add(triple: str, features: Sequence[str]) -> bool:
    """Whether the vector unit has a fused multiply-add of singles that `llvm.fma` becomes in
    one instruction, which the proved fma forms take (`float_gate`, the 1x1s' fused bias
    step): x86-64 with FMA3 (and AVX, which it needs), AArch64 (NEON's `fmla`: the int8
    tiles' fused output steps); elsewhere LLVM's fma is a library call."""
    if triple.startswith("aarch64"):
        return True
    enabled = enabled_features(features)
    return triple.startswith("x86_64") and bool(enabled.get("fma")) and enabled.get("avx") is not False


def int16_high_products(triple: str, features: Sequence[str]) -> bool:
    """Whether the vector unit has rounded high products of int16 words, which the proved int16
    form of a squeeze-and-excitation Mul takes (`gate_products.HIGH_PRODUCTS`): x86-64 with
    AVX2 (`vpmulhrsw` on 16 lanes), AArch64 (NEON's `sqrdmulh` on 8, the kernel's `products`
    "neon": `pair_products`)."""
    if triple.startswith("aarch64"):
        return True
    enabled = enabled_features(features)
    return triple.startswith("x86_64") and bool(enabled.get("avx2")) and enabled.get("avx") is not False


def pair_products(triple: str) -> str:
    """The instructions of the int8 tiles' pair products (two int16 products summed into an
    int32 lane) where they are not x86's `vpmaddwd` (`int8_depthwise.pair_sums`): "neon" on
    AArch64 (`smlal`, `smlal2` into split sums, `int8_depthwise.split_products`), "" elsewhere."""
    return "neon" if triple.startswith("aarch64") else ""


DEFAULT_CACHE_BYTES = {"x86_64": 1 << 20, "aarch64": 512 << 10}
"""A core's L2 by architecture, where the target is not the host (x86-64: AMD Zen 4 and
Intel server cores; AArch64: Cortex-A53/A72 as commonly configured)."""


def cache_bytes(triple: str) -> int:
    """`DEFAULT_CACHE_BYTES` of the triple's architecture (0: not one of them)."""
    return next((size for arch, size in DEFAULT_CACHE_BYTES.items() if triple.startswith(arch)), 0)
