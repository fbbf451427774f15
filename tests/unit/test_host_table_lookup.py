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

from glowmlir.backends.host_vector.table_arithmetic import hard_swish_form, mulhrs
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
def test_repeated_sub_tables_are_loaded_once_and_every_level_still_reads_its_entry(seed):
    """Sub-tables of the same 16 entries (loaded once; their pairs, where equal, shuffled and
    blended once) do not change a single entry."""
    check_lookup_table_kernel((2, 256), seed, '#glowll.microkernel<"vector-lookup-int8", {shuffles = ', "-avx",
                              table_with_repeated_sub_tables(seed))


ACTIVATIONS = {
    "hard_swish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "hard_sigmoid": lambda x: np.clip(x / 6 + 0.5, 0, 1),
    "silu": lambda x: x / (1 + np.exp(-x)),
}


def activation_chain_table(seed: int) -> tuple[str, np.ndarray]:
    """The int8 table (by level + 128) of a random chain of one to three of `ACTIVATIONS`
    between random input and output scales and zero points, as `glow-fold-lookup-tables`
    makes one: flat runs at either end (a HardSigmoid's both), a quadratic or curved middle,
    a near-affine top."""
    rng = np.random.default_rng(seed)
    names = list(rng.choice(sorted(ACTIVATIONS), size=int(rng.integers(1, 4))))
    x = rng.uniform(0.01, 0.12) * (np.arange(-128, 128) - rng.integers(-100, 101))
    for name in names:
        x = ACTIVATIONS[name](x)
    levels = np.rint(x / (max(float(np.ptp(x)), 1e-3) / rng.uniform(150, 300)))
    span = int(np.ptp(levels))  # the zero point puts them within [-128, 127], give or take 20 levels
    levels += -128 - levels.min() + rng.integers(-20, max(256 - span, 0) + 21)
    return "/".join(names), np.clip(levels, -128, 127).astype(np.int8)


@needs_avx2
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("shape", [(3, 5), (7, 37), (1, 16, 9, 7)])
def test_blend_tree_reads_the_entry_of_each_level_of_activation_tables(seed, shape):
    """Tables of random HardSwish/HardSigmoid/SiLU chains (sub-tables and pairs of them equal
    where the chain is flat: shuffled and blended once), on odd sizes (one partial step; tails
    of 3 and 16 levels): every level gives its entry, bit for bit."""
    _, table = activation_chain_table(seed)
    check_lookup_table_kernel(shape, seed, '#glowll.microkernel<"vector-lookup-int8", {shuffles = ', "-avx", table)


def table_with_repeated_pairs(seed: int) -> np.ndarray:
    """A random table (by level + 128) whose pairs of sub-tables (levels 16k.. and 16k - 128..)
    repeat: pairs 0, 3 and 6 one pair, 4 and 5 another whose two sub-tables are also equal,
    the rest random."""
    rng = np.random.default_rng(seed)
    table = rng.integers(-128, 128, 256, dtype=np.int8)
    by_pair = table.reshape(2, 8, 16)[::-1]  # [half (0..127, -128..-1), k, entry]
    by_pair[:, 3] = by_pair[:, 6] = by_pair[:, 0]
    by_pair[1, 4] = by_pair[0, 5] = by_pair[1, 5] = by_pair[0, 4]
    return table


@needs_avx2
@pytest.mark.parametrize("seed", [0, 1])
def test_repeated_pairs_are_shuffled_once_and_every_level_still_reads_its_entry(seed):
    check_lookup_table_kernel((2, 256), seed, '#glowll.microkernel<"vector-lookup-int8", {shuffles = ', "-avx",
                              table_with_repeated_pairs(seed))


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


def hard_swish_table(seed: int) -> tuple[tuple[float, int], tuple[float, int], np.ndarray]:
    """A HardSwish table of random int8 types, as `glow-quantize` makes one for a value only
    tables read: the input over a span from about -3 to a random top (0.5..10), the output over
    HardSwish's values there; its entries rint(y / so) + zo clamped, by level (-128..127).
    Returns (input scale, zero point), (output scale, zero point) and the entries."""
    rng = np.random.default_rng(seed)
    low, high = rng.uniform(-3.6, -2.4), rng.uniform(0.5, 10)
    input_scale = float(np.float32((high - low) / 255))
    input_offset = int(np.clip(np.rint(-128 - low / input_scale), -128, 127))
    x = input_scale * (np.arange(-128, 128) - input_offset)
    y = x * np.clip(x + 3, 0, 6) / 6
    bottom = min(float(y.min()), 0.0) * rng.uniform(0.8, 1.0)  # at times the minimum clipped
    output_scale = float(np.float32((float(y.max()) - bottom) / 255 * rng.uniform(0.97, 1.0)))
    output_offset = int(np.clip(np.rint(-128 - bottom / output_scale), -128, 127))
    entries = np.clip(np.rint(y / output_scale) + output_offset, -128, 127).astype(np.int8)
    return (input_scale, input_offset), (output_scale, output_offset), entries


def test_an_int16_form_is_found_for_most_hard_swish_tables_and_gives_each_entry():
    """`hard_swish_form`, where it finds a form, gives every one of the 256 entries (the proof);
    it finds one for most random HardSwish tables, and none for a random table."""
    found = 0
    for seed in range(40):
        (input_scale, input_offset), (output_scale, output_offset), entries = hard_swish_table(seed)
        form = hard_swish_form(entries.astype(np.int64), input_scale, input_offset, output_scale, output_offset)
        if form is not None:
            found += 1
            np.testing.assert_array_equal(form.entries(), entries)
    assert found >= 30
    random_table = np.random.default_rng(0).integers(-128, 128, 256)
    assert hard_swish_form(random_table, 0.03, -20, 0.02, -100) is None


def test_mulhrs_is_vpmulhrsw():
    """The model's vpmulhrsw: rounding half up, and the one saturating product."""
    a, b = np.array([3, -3, 1 << 14, -(1 << 15)]), np.array([1 << 14, 1 << 14, 1, -(1 << 15)])
    np.testing.assert_array_equal(mulhrs(a, b), [2, -1, 1, (1 << 15) - 1])


@needs_avx2
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("shape", [(7, 37), (1, 16, 9, 7)])
def test_hard_swish_tables_computed_in_int16_give_each_entry(seed, shape):
    """Random HardSwish tables of their own int8 types (`hard_swish_table`) on odd sizes (a
    partial last step), every level present: where a form is proved the kernel computes it
    (`table_arithmetic`), else it looks the entries up; either way each level gives its
    entry bit for bit."""
    (input_scale, input_offset), (output_scale, output_offset), table = hard_swish_table(seed)
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    x = rng.permutation(np.resize(np.arange(-128, 128), size)).astype(np.int8).reshape(shape)
    y_type = q8(output_scale, output_offset)
    bundle = build(lookup_table_text(tensor(shape, q8(input_scale, input_offset)), tensor((256,), y_type),
                                     tensor(shape, y_type)), {"t": table})
    assert '#glowll.microkernel<"vector-lookup-int8", {shuffles = ' in bundle.ir["glowll"]
    np.testing.assert_array_equal(bundle.run({"x": x})["y"], table[x.astype(np.int64) + 128])
