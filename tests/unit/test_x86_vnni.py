"""The int8 kernels on AVX-512 VNNI (`glowll-select-x86-vnni-kernels`, `backends/x86/vnni_kernels.py`).

On a host with AVX-512 VNNI, int8 convolutions and FullyConnected of random levels, weights
with and without a zero point, per tensor and per channel, channel counts that are not
multiples of 4 or 16, padding, strides, dilations, fused activations and pools: each must
take the VNNI kernel and give, bit for bit, the independent int8 reference's outputs
(tests/support/int8_reference.py) and the generic int8 kernel's (the same build with
`-mattr=-avx512vnni`). The filter layout is checked on its own.
"""

from __future__ import annotations

import numpy as np
import pytest

from glowmlir.backends.x86 import layout as vnni_layout
from glowmlir.backends.x86.target import has_avx512_vbmi, has_avx512_vnni
from glowmlir.target import HOST
from glowmlir.targets import resolve_target
from tests.support import int8_reference as ref
from tests.unit.test_quantized_kernels import (
    Case,
    build,
    check_lookup_table_kernel,
    consecutive_accumulators_case,
    convolution_case,
    fully_connected_body,
    levels,
    offset,
    q8,
    q8_channels,
    q32,
    q32_channels,
    scale,
    spread_scale,
    tensor,
    with_lookup_table,
)

needs_vnni = pytest.mark.skipif(not has_avx512_vnni(HOST), reason="the host has no AVX-512 VNNI")

GEOMETRIES = {
    # name: (input shape, filter shape, strides, pads (t, l, b, r), dilations, group)
    # (a 1x1 of at most 16 input channels is vector-pointwise-int8's: x86.select_kernels.shallow_pointwise)
    "1x1_21_to_20": ((1, 21, 7, 9), (20, 21, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "1x1_64_to_64": ((1, 64, 25, 5), (64, 64, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "1x1_stride2": ((2, 6, 9, 9), (17, 6, 1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1),
    "3x3_pad1": ((1, 7, 12, 19), (33, 7, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "3x3_stride2": ((1, 16, 11, 11), (24, 16, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
    "5x5_lenet": ((1, 20, 12, 12), (50, 20, 5, 5), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "10x4_stride2": ((1, 1, 49, 10), (64, 1, 10, 4), (2, 2), (4, 1, 5, 1), (1, 1), 1),
    "dilated_uneven_pads": ((2, 3, 10, 13), (8, 3, 3, 2), (1, 2), (2, 0, 1, 3), (2, 1), 1),
    # one input channel: four kernel columns a word (vnni_layout.columns_in_bytes)
    "one_channel_3x3": ((2, 1, 13, 21), (20, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "one_channel_3x6_stride_1x2": ((1, 1, 12, 17), (24, 1, 3, 6), (1, 2), (1, 2, 1, 2), (1, 1), 1),
    # rows one pixel wide (a streaming model's time axis): each channel's one output a lane
    "one_pixel_rows": ((2, 8, 23, 1), (20, 8, 4, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    # rows of 16 outputs or more: the pixels in the lanes
    "3x3_stride2_wide": ((1, 3, 12, 39), (20, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
    "dilated_wide_uneven_pads": ((2, 5, 9, 37), (18, 5, 3, 2), (1, 1), (2, 0, 1, 3), (2, 3), 1),
}


def vnni_and_generic(case: Case) -> list[np.ndarray]:
    """The case's output from a host build with the VNNI kernel (checked to be taken) and
    from one without AVX-512 VNNI (the generic int8 kernel)."""
    vnni = build(case.body, dict(case.constants))
    assert 'microkernel = #glowll.microkernel<"x86-vnni"' in vnni.ir["glowll"]
    generic = build(case.body, dict(case.constants), target=resolve_target(mattr="-avx512vnni"))
    assert "x86-vnni" not in generic.ir["glowll"]
    return [bundle.run(case.inputs)[case.output] for bundle in (vnni, generic)]


def all_match_the_reference(outputs: list[np.ndarray], case: Case) -> None:
    """Each output is the case's int8 reference, bit for bit (and the reference is no near-constant)."""
    for actual in outputs:
        assert actual.dtype == np.int8 and actual.shape == case.expected.shape
        np.testing.assert_array_equal(actual, case.expected)
    assert len(np.unique(case.expected)) > 20


def check(case: Case) -> None:
    all_match_the_reference(vnni_and_generic(case), case)


@needs_vnni
@pytest.mark.parametrize("name", list(GEOMETRIES))
@pytest.mark.parametrize("per_channel", [False, True])
def test_convolution_matches_the_int8_reference(name, per_channel):
    check(convolution_case(500 + list(GEOMETRIES).index(name) + 50 * per_channel, GEOMETRIES[name], per_channel))


@needs_vnni
@pytest.mark.parametrize("name,activation,pool", [
    ("3x3_pad1", "relu", None),
    ("3x3_stride2", "clip", None),
    ("5x5_lenet", None, dict(kind="max", kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0))),
    ("3x3_pad1", None, dict(kind="max", kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))),
    ("dilated_uneven_pads", "relu", dict(kind="avg", kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))),
    ("3x3_stride2_wide", "relu", dict(kind="max", kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0))),
    ("dilated_wide_uneven_pads", "clip", dict(kind="avg", kernel=(3, 3), strides=(1, 1), pads=(1, 1, 1, 1))),
    # a pooled stem (LeNet's first layer: kept at O3, its window rows a loop)
    ("one_channel_3x3", "relu", dict(kind="max", kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0))),
])
def test_fused_activations_and_pools_match_the_int8_reference(name, activation, pool):
    check(convolution_case(600 + list(GEOMETRIES).index(name) + (pool is not None), GEOMETRIES[name],
                           activation=activation, pool=pool))


def fully_connected_case(seed: int, rows: int, depth: int, outputs: int, weight_offset: bool,
                         activation: str | None) -> Case:
    rng = np.random.default_rng(seed)
    x, w = levels(rng, rows, depth), levels(rng, depth, outputs)
    x_type, w_type = (scale(rng), offset(rng, 60)), (scale(rng), offset(rng, 20) if weight_offset else 0)
    bias = rng.integers(-5000, 5001, outputs).astype(np.int32)
    bias_scale = ref.f32(np.float32(x_type[0]) * np.float32(w_type[0]))
    accumulators = (x.astype(np.int64) - x_type[1]) @ (w.astype(np.int64) - w_type[1]) + bias
    out_type = (spread_scale(accumulators * float(bias_scale)), offset(rng))
    expected = ref.fully_connected(x, w, bias, x_type, w_type, out_type, activation)
    x_t, w_t = tensor(x.shape, q8(*x_type)), tensor(w.shape, q8(*w_type))
    b_t, y_t = tensor((outputs,), q32(bias_scale)), tensor((rows, outputs), q8(*out_type))
    return Case(fully_connected_body(x_t, w_t, b_t, y_t, activation), {"x": x}, {"w": w, "b": bias}, "y", expected)


@needs_vnni
@pytest.mark.parametrize("rows,depth,outputs,weight_offset,activation", [
    (1, 800, 500, True, "relu"), (3, 64, 12, False, None), (2, 13, 40, True, None), (40, 3, 1, True, None),
    (4, 97, 33, False, "relu"),
])
def test_fully_connected_matches_the_int8_reference(rows, depth, outputs, weight_offset, activation):
    check(fully_connected_case(rows * 1000 + depth + outputs, rows, depth, outputs, weight_offset, activation))


@needs_vnni
@pytest.mark.parametrize("ratio,activation", [(1 / 16, None), (1 / 2, None), (0.0371, None), (0.73, None),
                                              (1 / 16, "relu"), (0.73, "relu")])
def test_requantization_of_consecutive_accumulators_matches_the_int8_reference(ratio, activation):
    """The lanes' output step (`requantization.requantize_narrow_in_halves`: the accumulators
    are narrow) on every accumulator of a range of consecutive ones, of both signs
    (`consecutive_accumulators_case`); with a fused relu, the step without the sign term."""
    check(consecutive_accumulators_case(ratio, activation))


@needs_vnni
def test_per_channel_shifts_of_both_signs_and_zero_match_the_int8_reference():
    """The lanes' output step with a run-time shift a lane (`requantize_in_halves` on a
    per-channel table): a 1x1 convolution whose channels' input x weight / output scales are
    1/64, 0.3, 0.75, 1.5 and 3.2 (shifts -5, -1, 0, 1 and 2), each of 16 output channels one
    of them, its accumulators small enough that even a left shift leaves outputs inside the
    int8 range."""
    rng = np.random.default_rng(17)  # 20 input channels: VNNI's (x86.select_kernels.shallow_pointwise)
    x_levels = rng.integers(-12, 13, (1, 20, 4, 5)).astype(np.int8)
    w_levels = rng.integers(-12, 13, (16, 20, 1, 1)).astype(np.int8)
    bias = rng.integers(-100, 101, 16).astype(np.int32)
    x_type, out_type = (0.05, 0), (0.1, 3)
    ratios = np.array([1 / 64, 0.3, 0.75, 1.5, 3.2] * 4)[:16]
    w_scales = np.array([ref.f32(2 * r) for r in ratios], np.float32)
    bias_scales = (np.float32(x_type[0]) * w_scales).astype(np.float32)
    expected = ref.conv2d(x_levels, w_levels, bias, x_type, w_scales, np.zeros(16, np.int64), out_type,
                          (1, 1), (0, 0, 0, 0), (1, 1), 1, None)
    x_t, w_t = tensor(x_levels.shape, q8(*x_type)), tensor(w_levels.shape, q8_channels(w_scales))
    b_t, y_t = tensor((16,), q32_channels(bias_scales)), tensor(expected.shape, q8(*out_type))
    body = f"""
  %x = glow.placeholder "x" : {x_t}
  %w = glow.constant "w" elided : {w_t}
  %b = glow.constant "b" elided : {b_t}
  %y = glow.convolution %x, %w, %b {{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, \
dilations = array<i64: 1, 1>}} : ({x_t}, {w_t}, {b_t}) -> {y_t}
  glow.save %y as "y" : {y_t}"""
    case = Case(body, {"x": x_levels}, {"w": w_levels, "b": bias}, "y", expected)
    for actual in vnni_and_generic(case):
        np.testing.assert_array_equal(actual, expected)
    for shift in range(5):  # the channels of every shift have many outputs inside the range
        inside = expected[0, shift::5][(expected[0, shift::5] > -128) & (expected[0, shift::5] < 127)]
        assert len(np.unique(inside)) > 8


def test_packed_filter_holds_the_levels_in_blocks_of_sixteen_outputs_by_four_inputs():
    rng = np.random.default_rng(3)
    levels_ = rng.integers(-128, 128, (20, 6, 3, 2)).astype(np.int8)
    packed = vnni_layout.pack_filter(levels_)
    assert packed.shape == vnni_layout.packed_filter_shape(levels_.shape) == (2, 2, 3, 2, 16, 4)
    for o, c, ky, kx in np.ndindex(levels_.shape):
        assert packed[o // 16, c // 4, ky, kx, o % 16, c % 4] == levels_[o, c, ky, kx]
    for o, c in np.ndindex(32, 8):
        if o >= 20 or c >= 6:
            assert not packed[o // 16, c // 4, :, :, o % 16, c % 4].any()


def test_packed_filter_with_an_overlapping_last_block_holds_the_last_sixteen_outputs():
    rng = np.random.default_rng(6)
    levels_ = rng.integers(-128, 128, (20, 6, 3, 2)).astype(np.int8)
    packed = vnni_layout.pack_filter(levels_, last_block_overlaps=True)
    assert packed.shape == (2, 2, 3, 2, 16, 4)
    for block, first in ((0, 0), (1, 4)):  # the last block: outputs 4 to 19, not 16 to 19 padded
        for lane, c, ky, kx in np.ndindex(16, 6, 3, 2):
            assert packed[block, c // 4, ky, kx, lane, c % 4] == levels_[first + lane, c, ky, kx]
    assert not packed[:, 1, :, :, :, 2:].any()
    assert vnni_layout.last_block_overlaps(levels_.shape) and not vnni_layout.last_block_overlaps((20, 6, 1, 1))


def test_packed_filter_of_one_input_channel_holds_four_kernel_columns_a_word():
    rng = np.random.default_rng(5)
    levels_ = rng.integers(-128, 128, (18, 1, 3, 6)).astype(np.int8)
    assert vnni_layout.columns_in_bytes(levels_.shape, (1, 1)) and not vnni_layout.columns_in_bytes(levels_.shape,
                                                                                                     (1, 2))
    packed = vnni_layout.pack_filter(levels_)
    assert packed.shape == vnni_layout.packed_filter_shape(levels_.shape) == (2, 2, 3, 1, 16, 4)
    for o, _, ky, kx in np.ndindex(levels_.shape):
        assert packed[o // 16, kx // 4, ky, 0, o % 16, kx % 4] == levels_[o, 0, ky, kx]
    assert not packed[:, 1, :, 0, :, 2:].any() and not packed[1, :, :, :, 2:].any()


def test_folded_bias_is_the_generic_sum_less_the_unsigned_products():
    """sum (x - x_offset)(w - w_offset) + bias == sum u w - w_offset sum u + folded bias for
    u = x + 128, on random windows (modulo 2^32, as the kernels' int32 sums)."""
    rng = np.random.default_rng(4)
    w = rng.integers(-128, 128, (7, 5, 3, 3))
    x = rng.integers(-128, 128, (5, 3, 3))
    bias = rng.integers(-2**31, 2**31, 7)
    x_offset, w_offset = -37, 11
    folded = vnni_layout.folded_bias(bias, w, x_offset, w_offset).astype(np.int64)
    u = x + 128
    expected = ((x - x_offset)[None] * (w - w_offset)).reshape(7, -1).sum(axis=1) + bias
    actual = (u[None] * w).reshape(7, -1).sum(axis=1) - w_offset * u.sum() + folded
    np.testing.assert_array_equal((actual - expected) % 2**32, 0)


needs_vbmi = pytest.mark.skipif(not (has_avx512_vnni(HOST) and has_avx512_vbmi(HOST)),
                                reason="the host has no AVX-512 VNNI and VBMI")


@needs_vbmi
@pytest.mark.parametrize("shape", [(4, 64), (1, 16, 9, 7), (3, 5), (2, 200)])
def test_lookup_table_on_vbmi_reads_the_entry_of_each_level(shape):
    """dest = table[x + 128] by `vpermi2b` for random levels (every level present where the
    tensor has 256 or more; sizes a multiple of 64, and not: the last lanes masked) and a
    random table, as the generic scalar kernel reads it (the build with -mattr=-avx512vbmi)."""
    check_lookup_table_kernel(shape, sum(shape), 'microkernel = #glowll.microkernel<"x86-vbmi">', "-avx512vbmi")


@needs_vbmi
@pytest.mark.parametrize("geometry", [
    ((1, 16, 3, 20), (88, 16, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),  # blocks of 16, the last overlapping
    ((2, 21, 7, 9), (20, 21, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ((1, 17, 2, 24), (12, 17, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),  # one block of 12: three quads
    ((1, 18, 2, 24), (6, 18, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),  # one block of 6: channel by channel
], ids=["16_to_88", "21_to_20", "17_to_12", "18_to_6"])
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
def test_table_fused_into_pixel_tiles_looks_four_channels_up_at_once(geometry, per_channel):
    """A random table fused into x86-vnni 1x1s whose rows of pixels fill the lanes (`pixel_tile`):
    with VBMI a block of a multiple of 4 channels requantizes four channels' vectors, joins
    their 64 levels and looks them up by one `permuted_entries`; a block of 6 channels looks
    each channel's 16 levels up. Each matches the int8 reference of the layer then the table,
    and the generic kernel's, bit for bit."""
    seed = 700 + geometry[1][0] + per_channel
    case = with_lookup_table(convolution_case(seed, geometry, per_channel, activation=None), seed)
    vnni = build(case.body, dict(case.constants))
    assert " lookup %" in vnni.ir["glowll"]  # the table fused into the layer
    assert 'microkernel = #glowll.microkernel<"x86-vnni", {byte_permutes}>' in vnni.ir["glowll"]
    generic = build(case.body, dict(case.constants), target=resolve_target(mattr="-avx512vnni"))
    for bundle in (vnni, generic):
        np.testing.assert_array_equal(bundle.run(case.inputs)[case.output], case.expected)
    assert len(np.unique(case.expected)) > 20


@pytest.mark.parametrize("mcpu,channels", [("znver4", 16), ("znver5", 16), ("sapphirerapids", 0),
                                           ("icelake-server", 0)])
def test_shallow_pointwise_limit_is_the_cores(mcpu, channels):
    """glow-compile's x86-vnni selection leaves a 1x1 of at most 16 input channels to
    vector-pointwise-int8 on an AMD Zen core (it splits a 512-bit operation in two halves) and
    none on others, where x86-vnni was measured faster at 8 and 16 (`shallow_pointwise_channels`)."""
    from glowmlir.backends import PipelineOptions
    from glowmlir.backends.x86.backend import glowll_passes

    target = resolve_target("x86_64-unknown-linux-gnu", mcpu=mcpu, mattr="+avx512f,+avx512bw,+avx512vnni")
    [(_, selection)] = glowll_passes(PipelineOptions(target=target))
    assert target.resolved_cpu == mcpu and selection.shallow_channels == channels
    assert vnni_layout.shallow_pointwise_channels(mcpu) == channels


def test_vector_unit_level_bytes_are_the_host_vector_units_words():
    """x86-vnni's constants' cost for a 1x1 (`VECTOR_UNIT_LEVEL_BYTES`) is what vector-pointwise-
    int8, which takes a 1x1 x86-vnni does not, holds: its pair words, 2 B a level (an even
    number of input channels)."""
    from glowmlir.backends.host_vector.int8_pointwise import pair_words

    pointwise = np.random.default_rng(3).integers(-128, 128, (96, 24))
    assert pair_words(pointwise, 16).nbytes == vnni_layout.VECTOR_UNIT_LEVEL_BYTES * pointwise.size


@needs_vnni
@pytest.mark.parametrize("name,table", [("3x3_stride2_wide", True), ("one_channel_3x3", True),
                                        ("one_pixel_rows", False), ("3x3_pad1", False)])
def test_per_channel_float_step_tables_only_where_every_row_is_a_pixel_tile(name, table):
    """A per-channel x86-vnni convolution takes a float step table (`mark_channel_float_steps`)
    only where every output row is in tiles of 16 pixels (`pixel_tiles_only`: rows of 16
    outputs or more), which requantize a channel a vector; narrower rows keep the integer
    table (their lanes are 16 channels). Outputs are the reference's either way."""
    case = convolution_case(550 + list(GEOMETRIES).index(name), GEOMETRIES[name], True)
    bundle = build(case.body, dict(case.constants))
    assert ("float_step_table" in bundle.ir["glowll"]) == table
    all_match_the_reference([bundle.run(case.inputs)[case.output]], case)
