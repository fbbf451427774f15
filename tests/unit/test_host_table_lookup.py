"""Int8 lookup tables on a host's byte shuffles (`vector-lookup-int8`,
`backends/host_vector/table_lookup.py`).

On an x86-64 host with AVX2 (and no AVX-512 VBMI, whose `vpermi2b` kernel runs first), a
stand-alone int8 lookup table takes the byte-shuffle kernel (32 levels a step on AVX2, 64 on
AVX-512) and gives, bit for bit, `table[x + 128]` for random levels and a random table (every
level present where the tensor has 256 or more; sizes a multiple of the step, and not: the
last lanes masked), as the generic scalar kernel does (the build for a core without AVX).
"""

from __future__ import annotations

import numpy as np
import pytest

from glowmlir.backends.x86.target import has_avx512_vbmi
from glowmlir.runtime.boards import run_on_board, target_for
from glowmlir.target import HOST, enabled_features
from tests.unit.test_quantized_kernels import build, check_lookup_table_kernel, lookup_table_text, q8, tensor

AVX2 = HOST.resolved_triple.startswith("x86_64") and enabled_features(HOST.feature_list).get("avx2", False)
needs_avx2 = pytest.mark.skipif(not AVX2 or has_avx512_vbmi(HOST), reason="the host has no AVX2 (or has VBMI)")


@needs_avx2
@pytest.mark.parametrize("shape", [(4, 64), (1, 16, 9, 7), (3, 5), (2, 200)])
def test_lookup_table_on_byte_shuffles_reads_the_entry_of_each_level(shape):
    check_lookup_table_kernel(shape, sum(shape) + 42, '#glowll.microkernel<"vector-lookup-int8", {shuffles = ', "-avx")


def table_with_repeated_sub_tables(seed: int) -> np.ndarray:
    """A random table (by level + 128) whose runs of 16 entries repeat as a HardSwish's flat
    ends do and elsewhere: levels -128..-81 one value, -16..15 one random run of 16 twice,
    80..127 three times another run, the rest random."""
    rng = np.random.default_rng(seed)
    table = rng.integers(-128, 128, 256, dtype=np.int8)
    table[:48] = table[0]
    table[128 - 16:128 + 16] = np.tile(rng.integers(-128, 128, 16, dtype=np.int8), 2)
    table[128 + 80:] = np.tile(rng.integers(-128, 128, 16, dtype=np.int8), 3)
    return table


@needs_avx2
@pytest.mark.parametrize("seed", [0, 1])
def test_repeated_sub_tables_are_skipped_and_every_level_still_reads_its_entry(seed):
    """Sub-tables equal to the one before (their differences all zeros: skipped at compile
    time, the index's subtractions merged) do not change a single entry."""
    check_lookup_table_kernel((2, 256), seed, '#glowll.microkernel<"vector-lookup-int8", {shuffles = ', "-avx",
                              table_with_repeated_sub_tables(seed))


@pytest.mark.parametrize("shape", [(2, 200)])
def test_lookup_table_on_neon_reads_the_entry_of_each_level(shape):
    """On AArch64 (NEON's tbl/tbx, 16 levels a step, the last 8 masked), under qemu-aarch64."""
    rng = np.random.default_rng(7)
    x = rng.permutation(np.resize(np.arange(-128, 128), int(np.prod(shape)))).astype(np.int8).reshape(shape)
    table = rng.integers(-128, 128, 256, dtype=np.int8)
    x_t, table_t, y_t = tensor(shape, q8(0.05, 3)), tensor((256,), q8(0.02, -7)), tensor(shape, q8(0.02, -7))
    bundle = build(lookup_table_text(x_t, table_t, y_t), {"t": table}, target=target_for("aarch64"))
    assert '#glowll.microkernel<"vector-lookup-int8", {shuffles = "neon"}>' in bundle.ir["glowll"]
    y = run_on_board(bundle, "aarch64", {"x": x}).outputs["y"]
    np.testing.assert_array_equal(y.reshape(shape), table[x.astype(np.int64) + 128])
