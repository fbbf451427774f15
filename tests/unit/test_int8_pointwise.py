"""The int8 1x1 convolution on a host's vector unit, two input channels a `vpmaddwd`
(`vector-pointwise-int8`: `glowll-select-vector-columns`, `backends/host_vector/int8_pointwise.py`),
and the other ungrouped ones on the column tiles, two kernel columns a `vpmaddwd`
(`vector-columns-int8`, `backends/host_vector/int8_columns.py`: 3 to 96 channels, kernels 1,
3, 5 and 3x2 dilated, strides 1 and 2, padding, uneven too).

1x1 convolutions of random levels, weights with and without a zero point, per tensor and per
channel, even and odd input channels (8, 16, 24, 40, 96, 3, 13), output channels that a block
of 4 divides and that it does not, planes wider than a tile and narrower than a vector (the
squeeze-excitation block's 1x1 on 1x1 spatial; PP-OCR-cls's 32 -> 200 and 104 -> 32 on 2x96),
tiles of one vector of pixels and, from 16 pairs of input channels, of two (`pointwise_tile`),
the input of a layer of several blocks of channels widened once a run (`int8_pointwise.widened_pairs`:
odd channels, an odd whole vector, partial vectors, two images, runs of pixels), fused relu and clip (a tile's
channels narrowed four at a time, `HostInt8Columns.outputs`; its
filter words broadcast once into a stack array, `int8_pointwise.broadcast_words`, or where
that array would be too large, 200 -> 32, where used), the input zero point folded into the
bias and the levels doubled (narrow requantization) or not
(`test_folded_and_doubled_forms_match_the_int8_reference`): each must take the kernel on the
host's AVX2 (`-mattr=-avx512f`; and without VNNI, `-avx512vnni`, which on an AVX-512 host
is AVX-512BW) and give, bit for bit, the independent int8 reference's outputs
(tests/support/int8_reference.py) and the generic int8 kernel's (SSE only).
"""

from __future__ import annotations

import numpy as np
import pytest

from glowmlir.backends.host_vector.int8_im2col import takes_im2col
from glowmlir.backends.host_vector.int8_pointwise import pair_words
from glowmlir.backends.host_vector.select_int8_pointwise import pointwise_tile
from glowmlir.target import HOST
from glowmlir.targets import resolve_target
from tests.unit.test_quantized_kernels import build, convolution_case
from tests.unit.test_x86_vnni import all_match_the_reference

needs_avx2 = pytest.mark.skipif(HOST.vector_tile is None or not HOST.vector_tile.masked_loads,
                                reason="the host has no AVX2")

ONE_BY_ONE = ((1, 1), (0, 0, 0, 0), (1, 1), 1)  # strides, pads, dilations, group
GEOMETRIES = {
    # name: (input shape, output channels)
    "8_to_24_on_24x96": ((1, 8, 24, 96), 24),
    "24_to_8_on_12x96": ((1, 24, 12, 96), 8),
    "40_to_96_on_6x48": ((1, 40, 6, 48), 96),
    "96_to_40_odd_plane": ((2, 96, 5, 7), 40),
    "16_to_6_narrow": ((1, 16, 3, 3), 6),
    "odd_13_to_10": ((1, 13, 6, 11), 10),
    "rgb_3_to_16": ((1, 3, 16, 16), 16),
    "se_reduce_96_to_24_on_1x1": ((1, 96, 1, 1), 24),
    "se_expand_8_to_96_on_1x1": ((2, 8, 1, 1), 96),
    "32_to_200_on_2x96": ((1, 32, 2, 96), 200),  # tiles of 2 vectors x 5 channels (pointwise_tile)
    "104_to_32_on_2x96": ((1, 104, 2, 96), 32),
    "200_to_32_on_2x96": ((1, 200, 2, 96), 32),  # words beyond BROADCAST_WORDS_BYTES: broadcast where used
    "16_to_88_on_3x17": ((1, 16, 3, 17), 88),  # tiles of 11 channels: output groups of 4, 4, 2, 1; a partial vector
    "odd_13_to_24_on_5x13": ((2, 13, 5, 13), 24),  # widened once for 2 blocks: an odd last pair, a partial vector
    "64_to_24_on_24x96_in_runs": ((1, 64, 24, 96), 24),  # 590 KB of input: runs of pixels, each widened once
    "odd_33_to_20_on_3x13": ((2, 33, 3, 13), 20),  # tiles of 2 vectors x 5 channels: an odd last pair, a partial vector
    "odd_27_to_24_on_5x9": ((2, 27, 5, 9), 24),  # widened 16 pixels a step: an odd whole vector, a partial one
    "odd_35_to_20_on_5x9": ((2, 35, 5, 9), 20),  # the same on tiles of 2 vectors x 5 channels
}
TARGETS = ("-avx512f", "-avx512vnni")
GENERIC = "-avx512f,-avx"  # SSE only: no masked loads, the generic int8 kernel


def case_of(seed: int, name: str, per_channel: bool = False, activation: str | None = None):
    x_shape, out_c = GEOMETRIES[name]
    return convolution_case(seed, (x_shape, (out_c, x_shape[1], 1, 1), *ONE_BY_ONE), per_channel, activation)


def check(case, mattr: str, kernel: str = "vector-pointwise-int8") -> None:
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=mattr))
    assert f'microkernel = #glowll.microkernel<"{kernel}">' in fast.ir["glowll"]
    generic = build(case.body, dict(case.constants), target=resolve_target(mattr=GENERIC))
    assert "-int8" not in generic.ir["glowll"]
    all_match_the_reference([bundle.run(case.inputs)[case.output] for bundle in (fast, generic)], case)


def test_pair_words_hold_two_channels_in_int16_halves():
    centred = np.array([[1, -2, 255, -255, 7], [-1, 0, 3, 4, -5]])
    words = pair_words(centred, 2)
    assert words.shape == (1, 3, 1, 1, 2) and words.dtype == np.int32
    halves = words[0, :, 0, 0, :].astype(np.uint32)
    low, high = (halves & 0xFFFF).astype(np.uint16).view(np.int16), (halves >> 16).astype(np.uint16).view(np.int16)
    np.testing.assert_array_equal(low.T, centred[:, 0::2])
    np.testing.assert_array_equal(high.T[:, :2], centred[:, 1::2])
    np.testing.assert_array_equal(high.T[:, 2], [0, 0])


@pytest.mark.parametrize("out_c,in_c,vectors,tile", [
    (200, 32, 24, (5, 10)),  # 16 pairs: two vectors x the most channels in half the accumulators
    (32, 200, 24, (4, 8)),  # 3 x 4 would spill
    (24, 8, 144, (12, 12)),  # few pairs: one vector x the most channels in all the accumulators
    (88, 16, 36, (11, 12)),
    (24, 96, 1, (12, 12)),  # a squeeze-excitation 1x1 on one pixel: one vector
])
def test_pointwise_tile_takes_two_vectors_where_the_pairs_are_many(out_c, in_c, vectors, tile):
    assert pointwise_tile(out_c, in_c, vectors, 12) == tile


@needs_avx2
@pytest.mark.parametrize("name", list(GEOMETRIES))
@pytest.mark.parametrize("per_channel", [False, True])
def test_pointwise_matches_the_int8_reference(name, per_channel):
    check(case_of(900 + list(GEOMETRIES).index(name) + 50 * per_channel, name, per_channel), TARGETS[0])


@needs_avx2
@pytest.mark.parametrize("name,activation,mattr", [
    ("8_to_24_on_24x96", "relu", TARGETS[1]), ("96_to_40_odd_plane", "clip", TARGETS[1]),
    ("odd_13_to_10", "relu", TARGETS[0]), ("se_expand_8_to_96_on_1x1", "clip", TARGETS[0]),
    ("16_to_88_on_3x17", "relu", TARGETS[0]),
])
def test_fused_activations_match_the_int8_reference(name, activation, mattr):
    check(case_of(1000 + list(GEOMETRIES).index(name), name, activation=activation), mattr)


FORMS = ("narrow_requantization", "folded_input_offset", "doubled_accumulators")


@needs_avx2
@pytest.mark.parametrize("bias_kind,forms", [
    ("int32", FORMS),
    ("large", ("folded_input_offset",)),  # a bias of 2^30: the general requantization of the sums as they are
    ("lowest", ()),  # a bias of -(2^31 - 1): no folded bias fits int32 (the zero point subtracted), nor narrow
])
def test_folded_and_doubled_forms_match_the_int8_reference(bias_kind, forms):
    """The selection folds the input zero point into the bias where the folded bias fits int32
    and doubles the packed levels where the requantization is narrow: each form, and the
    kernel without it (the zero point subtracted from the widened levels; the sums as they are,
    `requantize_in_halves`), bit for bit."""
    case = convolution_case(1200, (GEOMETRIES["24_to_8_on_12x96"][0], (8, 24, 1, 1), *ONE_BY_ONE),
                            bias_kind=bias_kind)
    ir = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS[0])).ir["glowll"]
    assert [form for form in FORMS if form in ir] == list(forms)
    check(case, TARGETS[0])


COLUMNS = {
    # name: (input shape, filter shape, strides, pads (t, l, b, r), dilations, group): vector-columns-int8
    "stem_3_to_8_3x3_stride2": ((1, 3, 24, 40), (8, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
    "stem_3_to_16_3x3_stride2_odd": ((1, 3, 10, 66), (16, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
    "8_to_16_5x5_pad2": ((1, 8, 9, 21), (16, 8, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 1),
    "16_to_24_3x3_stride_2_1": ((2, 16, 12, 13), (24, 16, 3, 3), (2, 1), (1, 1, 1, 1), (1, 1), 1),
    "24_to_40_3x3_unpadded": ((1, 24, 7, 30), (40, 24, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "40_to_96_1x1_stride2": ((1, 40, 6, 14), (96, 40, 1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1),
    "uneven_pads_dilated": ((1, 5, 12, 19), (6, 5, 3, 2), (1, 2), (2, 0, 1, 3), (2, 1), 1),
}


@needs_avx2
@pytest.mark.parametrize("name", list(COLUMNS))
@pytest.mark.parametrize("per_channel", [False, True])
def test_columns_match_the_int8_reference(name, per_channel):
    """Layers of few taps (the stems, `uneven_pads_dilated`: 30) take `vector-im2col-int8`."""
    case = convolution_case(1100 + list(COLUMNS).index(name) + 50 * per_channel, COLUMNS[name], per_channel,
                            "relu" if name.startswith("stem_3_to_8") else None)
    filter_shape, group = COLUMNS[name][1], COLUMNS[name][5]
    check(case, TARGETS[0], "vector-im2col-int8" if takes_im2col(filter_shape, group) else "vector-columns-int8")



@needs_avx2
def test_doubled_sums_read_from_records_match_the_int8_reference():
    """At -Os the host's int8 layers read their numbers from records (`glowll-quantization-records`:
    a run-time shift and offset, per-channel tables): the pointwise and depthwise kernels'
    doubled sums (`doubled_accumulators`) through that output step, relu or not, per tensor and
    per channel, bit for bit (`run_cases` checks every layer's outputs)."""
    from tests.unit.test_code_size import run_cases

    pointwise = ((1, 24, 12, 96), (8, 24, 1, 1), *ONE_BY_ONE)
    depthwise = ((1, 32, 6, 96), (32, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 32)
    cases = [convolution_case(1400, pointwise, activation="relu", suffix="_a"),
             convolution_case(1401, pointwise, per_channel=True, suffix="_b"),
             convolution_case(1402, depthwise, activation="relu", suffix="_c"),
             convolution_case(1403, depthwise, per_channel=True, suffix="_d")]
    ir = run_cases(cases, None, "Os", mattr="-avx512vnni").ir["glowll"]  # a VNNI host's own kernels: x86-vnni
    assert ir.count("doubled_accumulators") == 4 and ir.count('_parameters"') == 4
