"""The Arm DSP-extension int8 kernels (`glowll-select-arm-dsp-kernels`, `backends/arm_dsp/`).

The pair tiling is checked on its own (every output of a tile sums exactly its taps, no
load leaves the tile's span), and both filter packings; the kernels run on the emulated Cortex-M4, M7, M33 and M55,
bit-identical to the independent int8 reference (tests/support/int8_reference.py), for
convolutions of every shape the generic kernel is tested with, ones whose input zero point
is folded into the bias (no vertical padding), fused pools, and FullyConnected of any depth
and output count, per-tensor and per-channel, with and without zero points.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest

from glowmlir.backends.arm_dsp.depthwise import unrolls_plane
from glowmlir.backends.arm_dsp.layout import (
    BIAS_PAIRS,
    DEPTHWISE_PIXELS,
    WINDOW_PAIRS,
    channel_block,
    convolution_depthwise_plan,
    convolution_row_plan,
    depthwise_plan,
    halfword_tiling,
    pack_filter,
    packing,
    pair_tiling,
    slot_word,
    widens_planes,
    window_row_order,
    window_tap_order,
    with_biases,
)
from glowmlir.dialects import glow
from glowmlir.lowering import vector_layout as column_layout
from glowmlir.runtime.boards import run_on_board, target_for
from tests.support import int8_reference as ref
from tests.unit.test_quantized_kernels import (
    CONVOLUTIONS,
    Case,
    all_level_pairs_case,
    binary_case,
    consecutive_accumulators_case,
    convolution_case,
    ints,
    levels,
    lower_to_glowll,
    offset,
    q8,
    q8_channels,
    q32,
    q32_channels,
    scale,
    spread_scale,
    tensor,
)
from tests.unit.test_quantized_kernels import build as build_net

EVERY_FILTER_PACKED = 4 << 20
"""The flash these tests state (-flash-size): the kernels' tests put many layers in one net,
whose packed filters the default budget on the constants would not all take
(backends/arm_dsp/flash_budget.py, tests/unit/test_flash_budget.py)."""


def build(body: str, constants: dict[str, np.ndarray] | None = None, **options):
    """`test_quantized_kernels.build` with a flash every packed filter fits."""
    return build_net(body, constants, flash_size=EVERY_FILTER_PACKED, **options)


# ----------------------------------------------------------------------------- the tiling


@pytest.mark.parametrize("width,stride,dilation", [(w, s, d) for w in (1, 2, 3, 4, 5, 7) for s in (1, 2, 3)
                                                   for d in (1, 2)])
def test_pair_tiling_sums_every_tap_once(width, stride, dilation):
    rng = np.random.default_rng(width * 100 + stride * 10 + dilation)
    tiling = pair_tiling(width, stride, dilation)
    row = rng.integers(-128, 128, tiling.bytes_read)
    weights = rng.integers(-255, 256, width)
    assert max(pair for products in tiling.products for pair, _ in products) + 2 < tiling.bytes_read
    for p, products in enumerate(tiling.products):
        total = 0
        for pair, word in products:
            for half, column in enumerate((pair, pair + 2)):
                tap = tiling.weight_words[word][half]
                total += 0 if tap is None else int(row[column]) * int(weights[tap])
        direct = sum(int(row[p * stride + k * dilation]) * int(weights[k]) for k in range(width))
        assert total == direct


def test_five_wide_rows_take_three_pairs_per_output():
    """LeNet's 5x5 kernels: 10 products of a two-output tile in 6 SMLADs, 3 weight words."""
    tiling = pair_tiling(5, 1, 1)
    assert tiling.words == 2 and len(tiling.weight_words) == 3
    assert [len(products) for products in tiling.products] == [3, 3]


def test_packed_filter_holds_each_weight_minus_its_zero_point():
    """Row pairs: a fused pool keeps a convolution off window pairs."""
    rng = np.random.default_rng(1)
    filt = rng.integers(-128, 128, (6, 2, 3, 5)).astype(np.int8)
    tiling = pair_tiling(5, 1, 1)
    block = channel_block(6, 1)
    packed = pack_filter(filt, -7, (1, 2, 9, 9), (1, 1), (1, 1), (0, 0, 0, 0), 1, pooled=True)
    assert packed.shape == (3, 2, 3, block, 3, 2) and packed.dtype == np.int16
    for o, c, ky, kx in np.ndindex(filt.shape):
        word, half = tiling.tap_position(kx)
        assert packed[o // block, c, ky, o % block, word, half] == int(filt[o, c, ky, kx]) + 7
    for word, taps in enumerate(tiling.weight_words):
        for half, tap in enumerate(taps):
            if tap is None:
                assert not packed[..., word, half].any()


def test_window_filter_pairs_the_taps_of_a_window():
    """Window pairs: taps (c, ky, kx) in that order, two a word, an odd last tap paired with 0,
    two blocks of two output channels side by side."""
    rng = np.random.default_rng(2)
    filt = rng.integers(-128, 128, (8, 3, 3, 3)).astype(np.int8)
    assert packing(filt.shape, (1, 1, 1, 1), 1) == WINDOW_PAIRS
    packed = pack_filter(filt, 5, (1, 3, 16, 16), (2, 2), (1, 1), (1, 1, 1, 1), 1)
    assert packed.shape == (2, 14, 2, 2, 2) and packed.dtype == np.int16
    taps = filt.reshape(8, 27).astype(np.int64) - 5
    for o, t in np.ndindex(taps.shape):
        assert packed[o // 4, t // 2, (o // 2) % 2, o % 2, t % 2] == taps[o, t]
    assert not packed[:, 13, :, :, 1].any()
    # rows of four taps: the pairs (0, 2) and (1, 3), as a word of four input columns gives them
    assert window_row_order(8, 1) == (0, 2, 1, 3, 4, 6, 5, 7) and window_row_order(4, 2) == (0, 1, 2, 3)
    # one channel, rows of 9 (a 3x3x3 stem read in place): each row's two words, then the ninth taps
    assert window_tap_order(1, 3, 9, 1) == (0, 2, 1, 3, 4, 6, 5, 7, 9, 11, 10, 12, 13, 15, 14, 16,
                                            18, 20, 19, 21, 22, 24, 23, 25, 8, 17, 26)
    assert window_tap_order(3, 3, 3, 1) == tuple(range(27)) and window_tap_order(1, 2, 9, 2) == tuple(range(18))
    filt = rng.integers(-128, 128, (2, 1, 3, 9)).astype(np.int8)
    packed = pack_filter(filt, 3, (1, 1, 96, 288), (2, 6), (1, 1), (0, 0, 1, 3), 1)
    taps = filt.reshape(2, 27).astype(np.int64)[:, list(window_tap_order(1, 3, 9, 1))] - 3
    assert packed.shape == (1, 14, 1, 2, 2)
    assert packed.reshape(14, 2, 2).transpose(1, 0, 2).reshape(2, 28)[:, :27].tolist() == taps.tolist()
    filt = rng.integers(-128, 128, (4, 1, 2, 4)).astype(np.int8)
    packed = pack_filter(filt, 0, (1, 1, 6, 9), (1, 1), (1, 1), (0, 0, 0, 0), 1)
    rows = filt[:, 0].astype(np.int64)
    for o, ky in np.ndindex(4, 2):
        pairs = packed[o // 4, 2 * ky:2 * ky + 2, (o // 2) % 2, o % 2]
        assert pairs.tolist() == [[rows[o, ky, 0], rows[o, ky, 2]], [rows[o, ky, 1], rows[o, ky, 3]]]
    # up to WINDOW_TAPS taps, unpooled or with a pool whose windows tile the output
    assert packing((8, 16, 3, 3), (1, 1, 1, 1), 1) == WINDOW_PAIRS
    assert packing((8, 3, 3, 3), (1, 1, 1, 1), 1, pooled=True, tiled=True) == WINDOW_PAIRS
    # unpooled up to GATHERED_WINDOW_TAPS (1,024) taps too (ResNet-8's 64-channel 3x3: 576)
    assert packing((8, 64, 3, 3), (1, 1, 1, 1), 1) == WINDOW_PAIRS
    # pooled over WINDOW_TAPS taps, unpooled over 1,024, grouped, pooled otherwise or 1x1: others
    assert packing((8, 17, 3, 3), (1, 1, 1, 1), 1, pooled=True, tiled=True) == "row pairs"
    assert packing((8, 114, 3, 3), (1, 1, 1, 1), 1) == "row pairs"
    assert packing((8, 1, 3, 3), (1, 1, 1, 1), 8) == "depthwise"
    assert packing((8, 3, 3, 3), (1, 1, 1, 1), 1, pooled=True) == "row pairs"
    assert packing((8, 3, 1, 1), (0, 0, 0, 0), 1) == "channel pairs"


@pytest.mark.parametrize("geometry", [((1, 4, 25, 5), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
                                      ((1, 4, 9, 11), (3, 3), (2, 2), (0, 1, 1, 0), (1, 1)),
                                      ((1, 4, 9, 13), (5, 5), (1, 1), (4, 4, 4, 4), (2, 2)),
                                      ((1, 4, 6, 8), (3, 2), (1, 3), (0, 0, 0, 0), (1, 1)),
                                      ((1, 4, 2, 4), (1, 3), (1, 1), (0, 0, 0, 0), (1, 1)),
                                      ((1, 4, 3, 9), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1))])
def test_depthwise_plan_reads_inside_its_padded_rows(geometry):
    """Every output of a row is in one tile; the last tile's words end inside the padded row,
    which holds the input's columns from `pad_left`."""
    input_shape, kernel, strides, pads, dilations = geometry
    channels = input_shape[1]
    plan = convolution_depthwise_plan(input_shape, (channels, 1, *kernel), strides, pads, dilations)
    width = (input_shape[3] + pads[1] + pads[3] - dilations[1] * (kernel[1] - 1) - 1) // strides[1] + 1
    rest = width - plan.tiles * DEPTHWISE_PIXELS
    pixels = [len(tiling.products) for tiling in plan.tilings]
    assert pixels == [DEPTHWISE_PIXELS] * (plan.tiles > 0) + [rest] * (rest > 0)
    firsts = [(t * DEPTHWISE_PIXELS * strides[1], plan.tilings[0]) for t in range(plan.tiles)]
    if rest:
        firsts.append((plan.tiles * DEPTHWISE_PIXELS * strides[1], plan.tilings[-1]))
    assert max(first + tiling.bytes_read for first, tiling in firsts) <= plan.padded_width
    assert plan.pad_left == pads[1] and plan.pad_left + input_shape[3] <= plan.padded_width


@pytest.mark.parametrize("in_width, kernel, pad_left", [(12, 3, 1), (14, 3, 0), (12, 5, 2), (13, 3, 0)])
def test_halved_widened_row_reads_inside_its_padded_row(in_width, kernel, pad_left):
    """A widened stride-1 row of 12 outputs is two tiles of six, the second's words from 2
    columns past a multiple of 4 (`shifted`, the same weight words); both end inside the
    padded row. Other widths keep the tiles of eight."""
    width = in_width + 2 * pad_left - kernel + 1
    plan = depthwise_plan(in_width, width, kernel, 1, 1, pad_left, widened=True)
    if width != 12:
        assert plan.pixels == 8 and plan.shifted is None
        return
    assert (plan.pixels, plan.tiles, len(plan.tilings)) == (6, 2, 1)
    assert plan.shifted.weight_words == plan.tilings[0].weight_words and plan.shifted.first_word == 1
    for x0, tiling in ((0, plan.tilings[0]), (6, plan.shifted)):
        base = x0 // 4 * 4  # the padded row's column of the tile's word 0
        assert base + 2 * tiling.words <= plan.padded_width
        for p, products in enumerate(tiling.products):  # output x0 + p reads input columns x0 + p - pad_left + k
            columns = sorted(base + 2 * word + half for word, _, halves in products
                             for half in ((0, 1) if halves is None else (halves[0],)))
            assert columns == [plan.pad_left - pad_left + x0 + p + k for k in range(kernel)]


def test_depthwise_filter_holds_each_tilings_weight_words():
    """[O, KH, weight words, 2]: the tile of four's words, then those of the row's last outputs
    (a last output alone joins the tile before it: a row of five is one tile)."""
    rng = np.random.default_rng(4)
    filt = rng.integers(-128, 128, (5, 1, 3, 3)).astype(np.int8)
    packed = pack_filter(filt, 3, (1, 5, 25, 6), (1, 1), (1, 1), (1, 1, 1, 1), 5)
    plan = convolution_depthwise_plan((1, 5, 25, 6), (5, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1))
    assert [len(tiling.products) for tiling in plan.tilings] == [4, 2]
    five = convolution_depthwise_plan((1, 5, 25, 5), (5, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1))
    assert [len(tiling.products) for tiling in five.tilings] == [5] and five.tiles == 0
    assert packed.shape == (5, 3, plan.words, 2) and packed.dtype == np.int16
    for tiling, first_word in zip(plan.tilings, plan.word_offsets):
        for o, ky, kx in np.ndindex(5, 3, 3):
            word, half = tiling.tap_position(kx)
            assert packed[o, ky, first_word + word, half] == int(filt[o, 0, ky, kx]) - 3
    # pooled, a depthwise convolution keeps the row kernel's packing
    pooled = pack_filter(filt, 3, (1, 5, 25, 5), (1, 1), (1, 1), (1, 1, 1, 1), 5, pooled=True)
    row_plan = convolution_row_plan((1, 5, 25, 5), (5, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 5)
    assert pooled.shape == (5, 1, 3, 1, row_plan.words, 2)


@pytest.mark.parametrize("width,stride,pixels", [(w, s, p) for w in (1, 2, 3, 5) for s in (1, 2, 3)
                                                  for p in (1, 2, 4, 5)])
def test_halfword_tiling_sums_every_tap_once(width, stride, pixels):
    """Widened planes: every tap of every output is one half of one product (a word's two
    taps by one SMLAD, a tap alone by SMLA<x><y>), or one of the taps in the left padding
    that it leaves out; the words it reads lie in [first_word, words)."""
    rng = np.random.default_rng(width * 100 + stride * 10 + pixels)
    for shift, inside in [(0, 0), (1, 0), (1, 2), (3, 4), (1, 4)]:
        tiling = halfword_tiling(width, stride, 1, pixels, shift, inside)
        row = rng.integers(-128, 128, 2 * tiling.words + 2)
        weights = rng.integers(-255, 256, width)
        dropped = tiling.dropped or ((),) * pixels
        for p, (products, left_out) in enumerate(zip(tiling.products, dropped)):
            total = 0
            for word, weight, halves in products:
                assert tiling.first_word <= word < tiling.words
                pairs = [(0, 0), (1, 1)] if halves is None else [halves]
                for input_half, weight_half in pairs:
                    tap = tiling.weight_words[weight][weight_half]
                    total += int(row[2 * word + input_half]) * int(weights[tap])
            columns = [shift + p * stride + k for k in range(width)]
            assert sorted(left_out) == [k for k in range(width) if columns[k] < inside]
            for k in left_out:  # the kernel reads the weights of the taps it leaves out
                assert tiling.tap_position(k)
            direct = sum(int(row[c]) * int(weights[k]) for k, c in enumerate(columns) if c >= inside)
            assert total == direct


def test_dscnn_rows_take_nine_products_a_kernel_row():
    """DS-CNN's 3x3 stride-1 rows of five (pad 1): one tile whose left-padding tap is left
    out, 9 products of three words (an LDRD and an LDR) and two weight words a kernel row;
    the packed filter holds each kernel row's two words and an unused one (`slot_word`)."""
    plan = convolution_depthwise_plan((1, 64, 25, 5), (64, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), widened=True)
    (tiling,) = plan.tilings
    assert plan.widened and plan.tiles == 0 and plan.pad_left == 4 and plan.padded_width == 12
    assert sum(len(products) for products in tiling.products) == 9 and len(tiling.weight_words) == 2
    assert (tiling.first_word, tiling.words) == (2, 5) and tiling.dropped == ((0,), (), (), (), ())
    assert [slot_word(word) for word in range(6)] == [0, 1, 3, 4, 6, 7] and plan.row_words == 9
    rng = np.random.default_rng(6)
    filt = rng.integers(-128, 128, (4, 1, 3, 3)).astype(np.int8)
    packed = pack_filter(filt, 3, (1, 4, 25, 5), (1, 1), (1, 1), (1, 1, 1, 1), 4, widened=True)
    assert packed.shape == (4, 3, 3, 2) and not packed[:, :, 2].any()
    for o, ky, kx in np.ndindex(4, 3, 3):
        word, half = tiling.tap_position(kx)
        assert packed[o, ky, slot_word(word), half] == int(filt[o, 0, ky, kx]) - 3
    # int16 data and dilated rows keep the byte planes
    assert not widens_planes((1, 1), False) and not widens_planes((1, 2), True) and widens_planes((2, 1), True)


# ----------------------------------------------------------------------------- the kernels on boards

MORE_CONVOLUTIONS = {
    # unpadded: the input zero point goes into the bias; padded left or right: edge tiles
    "lenet_5x5": ((1, 3, 12, 12), (4, 3, 5, 5), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "pad_left_right": ((1, 2, 6, 11), (4, 2, 3, 4), (1, 1), (0, 2, 0, 1), (1, 1), 1),
    "stride2_wide": ((2, 3, 7, 13), (2, 3, 2, 3), (2, 2), (0, 1, 0, 0), (1, 1), 1),
    "one_row_output": ((1, 5, 3, 16), (6, 5, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "depthwise_5": ((1, 4, 9, 9), (4, 1, 3, 5), (1, 1), (0, 2, 0, 2), (1, 1), 4),
    # depthwise on padded planes: a DS-CNN row (one tile of five), a row of nine (a tile of four,
    # then one of five), a row of six (a tile of four and one of two), stride 2 and an
    # odd channel count, asymmetric padding over two images, dilation, a plane copied in two bands
    "depthwise_dscnn": ((1, 6, 25, 5), (6, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 6),
    "depthwise_row_of_nine": ((1, 3, 6, 9), (3, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 3),
    "depthwise_row_of_six": ((1, 3, 5, 6), (3, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 3),
    "depthwise_stride2_odd": ((1, 5, 9, 11), (5, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 5),
    "depthwise_asymmetric": ((2, 3, 10, 7), (3, 1, 3, 3), (2, 2), (0, 1, 1, 0), (1, 1), 3),
    "depthwise_dilated_5x5": ((1, 2, 9, 13), (2, 1, 5, 5), (1, 1), (4, 4, 4, 4), (2, 2), 2),
    "depthwise_bands": ((1, 2, 40, 60), (2, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2),
    # one input channel per group, several output channels each: DS-CNN's first convolution,
    # a channel multiplier of 3
    "one_channel_10x4_stride2": ((1, 1, 49, 10), (6, 1, 10, 4), (2, 2), (4, 1, 5, 1), (1, 1), 1),
    "depthwise_multiplier3": ((1, 2, 7, 9), (6, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2),
    # stride 2 onto rows of two vectors or more: Helium gathers every other column (edge lanes
    # in the padding on the left, past the row on the right; dilated; depthwise)
    "stride2_rows_of_ten": ((1, 3, 9, 20), (4, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
    "stride2_dilated_wide": ((1, 2, 9, 27), (4, 2, 3, 3), (2, 2), (2, 2, 2, 2), (2, 2), 1),
    "depthwise_stride2_wide": ((1, 6, 7, 33), (6, 1, 3, 3), (2, 2), (1, 1, 1, 0), (1, 1), 6),
    # window pairs: a window wider than the padded input's rows (no window inside it), an odd tap count;
    # rows of four taps (a word, two pairs) of an input too large for a padded copy (border windows tap
    # by tap), unpadded and over two images, and copied padded per image (stride 2 along the rows)
    "window_wider_than_input": ((1, 2, 3, 4), (4, 2, 3, 5), (1, 1), (1, 2, 1, 2), (1, 1), 1),
    "window_rows_of_four_clamped": ((1, 2, 30, 40), (4, 2, 3, 4), (1, 1), (1, 1, 1, 2), (1, 1), 1),
    "window_rows_of_four_unpadded": ((2, 1, 6, 11), (6, 1, 2, 8), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "window_padded_copy_two_images": ((2, 1, 9, 8), (4, 1, 3, 4), (1, 2), (1, 1, 1, 2), (1, 1), 1),
    # 1x1: pairs along the input channels (odd count, strided, rows not a multiple of four)
    "pointwise_odd": ((1, 5, 3, 7), (4, 5, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "pointwise_stride2": ((2, 6, 6, 9), (6, 6, 1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1),
    "pointwise_wide": ((1, 16, 2, 12), (10, 16, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    # more than 16 input channels: two-pixel tiles
    "pointwise_deep": ((1, 24, 3, 5), (8, 24, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "pointwise_deep_six": ((1, 21, 2, 3), (6, 21, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
}

GENERIC_CONVOLUTIONS = {
    # nothing to pair: a 1-wide column filter, a padded 1x1
    "column_3x1": ((1, 3, 6, 5), (4, 3, 3, 1), (1, 1), (1, 0, 1, 0), (1, 1), 1),
    "pointwise_padded": ((1, 4, 4, 4), (2, 4, 1, 1), (1, 1), (1, 1, 1, 1), (1, 1), 1),
}

FUSED_POOLS = {
    "max": dict(kind="max", kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0)),
    "max_padded": dict(kind="max", kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1)),
    "avg": dict(kind="avg", kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0)),
}


# The register-blocked pointwise kernel: odd channel and pixel counts (blocks of one output
# channel, runs of four pixels with a pair and a single left), channel counts whose gathered
# pixels fit the stack only two or one at a time, global pools folded in it, and a pool that
# is not global (the row kernel's).
BLOCKED_POINTWISE = {
    "pointwise_odd_out": (((1, 7, 2, 7), (5, 7, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), None),
    "pointwise_two_pixel_runs": (((1, 300, 3, 3), (4, 300, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), None),
    "pointwise_one_pixel_runs": (((1, 1100, 1, 3), (6, 1100, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), None),
    "pointwise_global_avg": (((1, 9, 5, 5), (8, 9, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
                             dict(kind="avg", kernel=(5, 5), strides=(1, 1), pads=(0, 0, 0, 0))),
    "pointwise_global_avg_odd": (((2, 11, 5, 3), (5, 11, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
                                 dict(kind="avg", kernel=(5, 3), strides=(1, 1), pads=(0, 0, 0, 0))),
    "pointwise_global_max": (((1, 20, 3, 7), (12, 20, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
                             dict(kind="max", kernel=(3, 7), strides=(1, 1), pads=(0, 0, 0, 0))),
    "pointwise_avg_2x2": (((1, 6, 4, 6), (4, 6, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
                          dict(kind="avg", kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0))),
    # 21 to 32 channel pairs: straight-line products (`arm_dsp.UNROLLED_PAIRS`) over interleaved
    # blocks (runs of four and a single pixel left), over blocks of one output channel with an odd
    # last input channel (a run and a pair of pixels left)
    "pointwise_straight": (((1, 64, 5, 5), (12, 64, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), None),
    "pointwise_straight_odd": (((1, 45, 2, 3), (7, 45, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), None),
    # eight blocks: four a step over the runs (`arm_dsp.STEP_BLOCKS`), two over the last pixels
    "pointwise_straight_four_blocks": (((1, 50, 3, 5), (16, 50, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), None),
    # global pools on enough taps for Helium's dot products (a 1x1, and a padded 3x3)
    "pointwise_global_avg_deep": (((1, 56, 3, 3), (12, 56, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
                                  dict(kind="avg", kernel=(3, 3), strides=(1, 1), pads=(0, 0, 0, 0))),
    "padded_3x3_global_max_deep": (((1, 8, 4, 5), (6, 8, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
                                   dict(kind="max", kernel=(4, 5), strides=(1, 1), pads=(0, 0, 0, 0))),
}


# Window pairs with a fused pool whose windows tile the output: a pool window's pixels gathered
# together, pooled in registers. The CIFAR-sized net's stem (3 channels, 27 taps: an odd last
# pair) with its 2x2 max pool, also on 16 channels (four blocks a step, `arm_dsp.STEP_BLOCKS`),
# and its second convolution (16 channels, 144 taps) with its 2x2 average pool; an odd output
# plane (its last row and column under no window) over two images; odd output channels (blocks
# of one) on 23 pairs (straight-line products); a strided, asymmetrically padded convolution
# under a 1x2 pool; a dilated unpadded one; a 2x1 average pool; rows of four taps (loaded as
# words) from a padded copy of the input, and from an input too large to copy (its border
# windows clamped).
POOLED_WINDOWS = {
    "stem_3x3_max": (((1, 3, 8, 10), (8, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
                     dict(kind="max", kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0))),
    "stem_four_blocks_max": (((1, 3, 6, 8), (16, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
                             dict(kind="max", kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0))),
    "deep_3x3_avg": (((1, 16, 6, 6), (12, 16, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
                     dict(kind="avg", kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0))),
    "stem_odd_plane_avg": (((2, 3, 7, 9), (6, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
                           dict(kind="avg", kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0))),
    "odd_channels_max": (((1, 5, 6, 7), (5, 5, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
                         dict(kind="max", kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0))),
    "stride2_asymmetric_1x2_max": (((1, 4, 9, 11), (4, 4, 3, 3), (2, 2), (1, 0, 0, 1), (1, 1), 1),
                                   dict(kind="max", kernel=(1, 2), strides=(1, 2), pads=(0, 0, 0, 0))),
    "dilated_unpadded_max": (((1, 3, 9, 9), (4, 3, 3, 3), (1, 1), (0, 0, 0, 0), (2, 2), 1),
                             dict(kind="max", kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0))),
    "columns_2x1_avg": (((1, 2, 8, 5), (4, 2, 2, 3), (1, 1), (1, 1, 0, 1), (1, 1), 1),
                        dict(kind="avg", kernel=(2, 1), strides=(2, 1), pads=(0, 0, 0, 0))),
    "rows_of_four_copied_max": (((1, 4, 7, 10), (6, 4, 2, 4), (1, 1), (1, 2, 0, 1), (1, 1), 1),
                                dict(kind="max", kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0))),
    "rows_of_four_clamped_avg": (((1, 3, 20, 40), (4, 3, 3, 4), (1, 1), (1, 2, 1, 1), (1, 1), 1),
                                 dict(kind="avg", kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0))),
}


# Int8 only (their int16 code would not fit the M55's 512 KB beside the other cases'): a
# pointwise convolution gathered from the last pair down, eight a loop step
# (`arm_dsp.GATHER_STEP_PAIRS`: 11 pairs and an odd last channel), and windows gathered two
# pixels at a time from a padded copy, tap by tap (rows of three); both on odd planes (runs of
# four, then a pair and a single pixel, the single one on both blocks of a step together).
GATHERED_INT8 = {
    "pointwise_straight_gather_steps": ((1, 23, 3, 7), (8, 23, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "window_pixel_pairs_odd_plane": ((1, 2, 7, 9), (8, 2, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
}


def fully_connected_case(seed: int, rows: int, depth: int, columns: int, per_channel: bool, zero_points: bool,
                         suffix: str) -> Case:
    rng = np.random.default_rng(seed)
    x, w = levels(rng, rows, depth), levels(rng, depth, columns)
    x_type = (scale(rng), offset(rng, 60) if zero_points else 0)
    if per_channel:
        w_scales = np.array([scale(rng) for _ in range(columns)], np.float32)
        w_element, w_offset = q8_channels(w_scales).replace("i8:f32:0", "i8:f32:1"), 0
        bias_scales = (np.float32(x_type[0]) * w_scales).astype(np.float32)
        b_element = q32_channels(bias_scales)
    else:
        w_scales = np.full(columns, scale(rng), np.float32)
        w_offset = offset(rng, 20) if zero_points else 0
        w_element, b_element = q8(w_scales[0], w_offset), q32(ref.f32(np.float32(x_type[0]) * w_scales[0]))
        bias_scales = np.full(columns, np.float32(x_type[0]) * w_scales[0], np.float32)
    bias = rng.integers(-5000, 5001, columns).astype(np.int32)
    acc = (x.astype(np.int64) - x_type[1]) @ (w.astype(np.int64) - w_offset) + bias
    out_type = (spread_scale(acc * bias_scales.astype(np.float64)), offset(rng))
    multipliers, shifts = ref.multipliers([ref.real_multiplier(x_type[0], s, out_type[0]) for s in w_scales])
    expected = ref.to_int8(np.clip(ref.requant(acc, multipliers, shifts) + out_type[1], -128, 127))
    names = [name + suffix for name in "xwby"]
    x_t, w_t, b_t = tensor(x.shape, q8(*x_type)), tensor(w.shape, w_element), tensor((columns,), b_element)
    y_t = tensor((rows, columns), q8(*out_type))
    body = f"""
  %{names[0]} = glow.placeholder "{names[0]}" : {x_t}
  %{names[1]} = glow.constant "{names[1]}" elided : {w_t}
  %{names[2]} = glow.constant "{names[2]}" elided : {b_t}
  %{names[3]} = glow.fully_connected %{names[0]}, %{names[1]}, %{names[2]} : ({x_t}, {w_t}, {b_t}) -> {y_t}
  glow.save %{names[3]} as "{names[3]}" : {y_t}"""
    return Case(body, {names[0]: x}, {names[1]: w, names[2]: bias}, names[3], expected)


def convolution_cases() -> list[tuple[str, tuple, dict | None]]:
    """(output name, geometry, fused pool) of every convolution case, in `all_cases`' order."""
    found = []
    for name, geometry in {**CONVOLUTIONS, **MORE_CONVOLUTIONS, **GENERIC_CONVOLUTIONS}.items():
        found.append((f"y_{name}", geometry, None))
        if geometry[1][0] % 2 == 0:  # per-channel filters are symmetric
            found.append((f"y_{name}_per_channel", geometry, None))
    for name, pool in FUSED_POOLS.items():
        for geometry_name in ("3x3_pad1", "lenet_5x5", "stride2_rows_of_ten"):
            found.append((f"y_{geometry_name}_{name}", {**CONVOLUTIONS, **MORE_CONVOLUTIONS}[geometry_name], pool))
    found += [(f"y_{name}", geometry, pool) for name, (geometry, pool) in {**BLOCKED_POINTWISE,
                                                                            **POOLED_WINDOWS}.items()]
    return found


def int8_convolution_cases() -> list[tuple[str, tuple, dict | None]]:
    """`convolution_cases`, then the int8-only ones (`GATHERED_INT8`)."""
    return convolution_cases() + [(f"y_{name}", geometry, None) for name, geometry in GATHERED_INT8.items()]


def all_cases() -> list[Case]:
    cases = []
    for index, (output, geometry, pool) in enumerate(int8_convolution_cases()):
        per_channel = output.endswith("_per_channel")
        cases.append(convolution_case(500 + index, geometry, per_channel=per_channel,
                                      activation="relu" if per_channel or pool else None, pool=pool,
                                      suffix=output.removeprefix("y")))
    # rows of inputs gathered as pairs once (`arm_dsp.FC_GATHER_BYTES`), but the last two
    for index, (rows, depth, columns) in enumerate([(1, 800, 20), (2, 37, 10), (3, 6, 7), (1, 3, 4), (2, 2050, 6)]):
        for per_channel in (False, True):
            for zero_points in (False, True):
                cases.append(fully_connected_case(800 + index * 4 + 2 * per_channel + zero_points, rows, depth,
                                                  columns, per_channel, zero_points,
                                                  f"_fc{index}_{int(per_channel)}{int(zero_points)}"))
    return cases


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return all_cases()


def build_cases(cases: list[Case], target=None, **options):
    """Every case in one bundle, for `target` (the host if None)."""
    body = "".join(case.body for case in cases)
    constants = {name: value for case in cases for name, value in case.constants.items()}
    return build(body, constants, target=target, **options)


def choose_kernels(cases: list[Case], target) -> str:
    """The glowll IR `build_cases(cases, target)` compiles to (`lower_to_glowll`: the kernel
    each instruction takes, without the LLVM stage)."""
    body = "".join(case.body for case in cases)
    constants = {name: value for case in cases for name, value in case.constants.items()}
    return lower_to_glowll(body, constants, target, flash_size=EVERY_FILTER_PACKED)


@pytest.fixture(scope="module")
def cases_chosen(cases):
    """target -> `choose_kernels(cases, target)`, once per module: the checks of each kernel's
    choice read it; the board runs check it is their bundles' glowll IR."""
    return functools.cache(lambda target: choose_kernels(cases, target))


@pytest.fixture(scope="module")
def cases16_chosen(cases16):
    """`cases_chosen` of the int16 cases."""
    return functools.cache(lambda target: choose_kernels(cases16, target))


DSP_BOARDS = ("mps2-an386", "mps2-an500", "mps2-an505", "mps3-an547")
"""The boards of the Cortex-M4, M7, M33 and M55."""
DSP_EXTENSION_BOARDS = DSP_BOARDS[:3]
"""Those without Helium: the Cortex-M4, M7 and M33."""


def board_share(cases: list, board: str, boards: tuple[str, ...], chosen) -> list[int]:
    """The indices of the cases `board` runs, of those the tests run on `boards` (`chosen`: a
    target -> the glowll IR of every case built for it, one instruction a case): of the boards
    whose builds give a case the same instruction (its glowll line, SSA names aside: the same
    kernel, the same LLVM IR; LLVM's code for each core apart), one runs it, in turn by case,
    so every kernel each case takes runs once (the M4 and the M33 take the same kernels,
    most int16 layers the same on every core)."""
    lines = {name: unnamed(chosen_lines(chosen(target_for(name)))) for name in boards}
    assert all(len(found) == len(cases) for found in lines.values()), "one instruction a case"
    share = []
    for index in range(len(cases)):
        alike = [name for name in boards if lines[name][index] == lines[board][index]]
        if alike[index % len(alike)] == board:
            share.append(index)
    return share


def unnamed(lines: list[str]) -> list[str]:
    """Instruction lines without their SSA names (which depend on the other layers of a bundle)."""
    return [re.sub(r"%\w+", "%", line) for line in lines]


def check_on_board(cases: list[Case], board: str, keep_assembly: bool = False, bundle=None):
    """Builds every case into one bundle for `board` (unless given its `bundle`), runs it there
    and checks each output against its reference, bit for bit; returns the bundle."""
    if bundle is None:
        bundle = build_cases(cases, target_for(board), keep_assembly=keep_assembly)
    outputs = run_on_board(bundle, board, {name: v for case in cases for name, v in case.inputs.items()}).outputs
    for case in cases:
        actual = outputs[case.output].reshape(case.expected.shape).astype(case.expected.dtype)
        np.testing.assert_array_equal(actual, case.expected, err_msg=case.output)
    return bundle


def check_share_on_board(cases: list[Case], board: str, boards: tuple[str, ...], keep_assembly: bool = False,
                         chosen=None, most: int | None = None):
    """`check_on_board` of `board`'s share of the cases (`board_share`; `chosen`: target ->
    `choose_kernels(cases, target)`, cached, if given), at `most` cases a bundle (in halves);
    the last bundle and the glowll IR of all the cases for `board`, whose instructions the
    bundles' take."""
    chosen = chosen or functools.cache(lambda target: choose_kernels(cases, target))
    share = board_share(cases, board, boards, chosen)
    size = len(share) if most is None or len(share) <= most else -(-len(share) // 2)
    built = []
    for first in range(0, len(share), size):
        bundle = check_on_board([cases[index] for index in share[first:first + size]], board,
                                keep_assembly=keep_assembly)
        built += instruction_lines(bundle)
    glowll = chosen(target_for(board))
    lines = unnamed(chosen_lines(glowll))
    assert unnamed(built) == [lines[index] for index in share]
    return bundle, glowll


@pytest.mark.parametrize("board", DSP_BOARDS)
def test_dsp_kernels_match_the_int8_reference_on_boards(board, cases, cases_chosen):
    """Each case's kernel on each core that takes it once (`board_share`: the M4 and the M33
    take the same ones); the bundle's instructions take the kernels the checks of the
    kernels' choices read (`choose_kernels`)."""
    check_share_on_board(cases, board, DSP_BOARDS, chosen=cases_chosen)


# Depthwise convolutions on widened planes (int8 copied as int16 pairs), each against the int8
# reference: rows of 1, 2, 3, 7 (one tile of seven), 9 (a 5x5 kernel, pad 2: one tile of nine) and
# 10 outputs (a tile of eight and one of two); of visual wake words' shapes, rows of 24 (three tiles of
# eight), stride 2 padded only below and right (12 outputs), and an odd 17 (a tile of eight and one of
# nine); rows of one tile leave out their taps in the left padding (pad 1 and 3, stride 2
# and 3; a 1x3 kernel whose first output has no tap inside the row); two images with a channel
# multiplier of 2; a plane in bands; dilated vertically only (kernel rows two apart); an input
# zero point that cannot fold (the copy subtracts it); rows of 12 in two tiles of six, the second
# shifted (`arm_dsp_layout.halved_row_pixels`): padded, unpadded, 5x5, and unrolled (10 rows).
WIDENED_DEPTHWISE = {
    "width1": (((1, 3, 6, 1), (3, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 3), "int32"),
    "width2_unpadded": (((1, 2, 5, 4), (2, 1, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 2), "int32"),
    "width3_stride2": (((1, 3, 7, 6), (3, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 3), "int32"),
    "width7": (((1, 4, 6, 7), (4, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 4), "int32"),
    "width9_5x5": (((1, 2, 8, 9), (2, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 2), "int32"),
    "width5_stride3": (((1, 2, 7, 13), (2, 1, 3, 3), (3, 3), (1, 1, 1, 1), (1, 1), 2), "int32"),
    "width10_pad3": (((1, 3, 4, 6), (3, 1, 1, 3), (1, 1), (0, 3, 0, 3), (1, 1), 3), "int32"),
    "first_output_all_padding": (((1, 2, 3, 2), (2, 1, 1, 3), (1, 1), (0, 3, 0, 0), (1, 1), 2), "int32"),
    "two_images_multiplier2": (((2, 2, 5, 6), (4, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2), "int32"),
    "bands": (((1, 2, 40, 40), (2, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2), "int32"),
    "dilated_columns": (((1, 2, 9, 7), (2, 1, 3, 3), (1, 1), (2, 1, 2, 1), (2, 1), 2), "int32"),
    "not_folded": (((1, 3, 6, 5), (3, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 3), "lowest"),
    "width24": (((1, 2, 9, 24), (2, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2), "int32"),
    "width12_stride2_same": (((1, 2, 8, 24), (2, 1, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 2), "int32"),
    "width17": (((1, 2, 5, 17), (2, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2), "int32"),
    "width12_halved": (((1, 2, 12, 12), (2, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2), "int32"),
    "width12_halved_unpadded": (((1, 2, 6, 14), (2, 1, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 2), "int32"),
    "width12_halved_5x5": (((1, 2, 5, 12), (2, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 2), "int32"),
    "width12_halved_unrolled": (((1, 4, 10, 12), (4, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 4), "int32"),
}


def depthwise_cases_on_board(geometries: dict, seed: int, board: str, level: str):
    """The depthwise layers of `geometries` (name: (geometry, bias kind)), per tensor and, for
    even channel counts with an int32 bias, per channel with a relu, of random weights and
    inputs, built for `board` at `level` and run there: each output equals the int8 reference
    bit for bit, every instruction takes the DSP kernel, and exactly one layer's input offset
    is not folded (the "lowest" bias's). The bundle, for the caller's checks of its code."""
    cases = []
    for index, (name, (geometry, bias_kind)) in enumerate(geometries.items()):
        for per_channel in (False, True) if geometry[1][0] % 2 == 0 and bias_kind == "int32" else (False,):
            cases.append(convolution_case(seed + 2 * index + per_channel, geometry, per_channel=per_channel,
                                          activation="relu" if per_channel else None, bias_kind=bias_kind,
                                          suffix=f"_{name}{'_per_channel' * per_channel}"))
    body = "".join(case.body for case in cases)
    bundle = build(body, {name: value for case in cases for name, value in case.constants.items()},
                   target=target_for(board, level), keep_assembly=True)
    outputs = run_on_board(bundle, board, {name: v for case in cases for name, v in case.inputs.items()}).outputs
    for case in cases:
        actual = outputs[case.output].reshape(case.expected.shape).astype(case.expected.dtype)
        np.testing.assert_array_equal(actual, case.expected, err_msg=case.output)
    assert all('microkernel = #glowll.microkernel<"arm-dsp"' in line for line in instruction_lines(bundle))
    folded = ["folded_input_offset" in line for line in instruction_lines(bundle)]
    assert folded.count(False) == 1
    return bundle


@pytest.mark.parametrize("board, level", [("mps2-an500", "O3"), ("mps2-an386", "O3"), ("mps2-an505", "Os")])
def test_widened_depthwise_matches_the_int8_reference(board, level):
    """On the M7 and the M4 at -O3 and the M33 at -Os (per tensor and, for even channel
    counts, per channel), bit for bit; the widened tiles' one-product multiplies are in the
    code; on the M7 alone the wide tiles start from an opaque bias, load their words alone ahead
    of their products (`arm_dsp.products_ahead`) and, looped, read the channel's filter from the
    stack (`stack_filter`: the 40 x 40 bands, the rows of 24)."""
    bundle = depthwise_cases_on_board(WIDENED_DEPTHWISE, 3000, board, level)
    assert re.search(r"\bsmla[bt][bt]\b", bundle.ir["assembly"])
    # the dual-issue M7's tiles of more than five outputs start from an opaque bias (`OPAQUE_STARTS`)
    assert any("opaque_starts" in line for line in instruction_lines(bundle)) == (board == "mps2-an500")


# Stride-2 depthwise layers on int8 planes read in order (`arm_dsp_layout.orders_planes`): rows
# of 24 outputs (tiles of four; visual wake words' 48 -> 24, in two bands of 12 rows), 12, 6
# (one tile), 3 and 7 (one tile, an odd input width); the left padding of 1; a channel
# multiplier of 2; an input zero point that cannot fold (the words less its pair).
ORDERED_DEPTHWISE = {
    "width24_bands": (((1, 2, 48, 48), (2, 1, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 2), "int32"),
    "width12": (((1, 4, 24, 24), (4, 1, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 4), "int32"),
    "width6": (((1, 4, 12, 12), (4, 1, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 4), "int32"),
    "width3": (((1, 2, 6, 6), (2, 1, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 2), "int32"),
    "width7_odd_input": (((1, 2, 9, 13), (2, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 2), "int32"),
    "width10_pad_left": (((1, 2, 10, 20), (2, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 2), "int32"),
    "multiplier2": (((1, 2, 8, 16), (4, 1, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 2), "int32"),
    "not_folded": (((1, 3, 10, 18), (3, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 3), "lowest"),
}


@pytest.mark.parametrize("board, level", [("mps2-an500", "O3"), ("mps2-an386", "O3"), ("mps2-an505", "Os")])
def test_ordered_int8_depthwise_matches_the_int8_reference(board, level):
    """Random weights and inputs on the M7 and the M4 at -O3 and the M33 at -Os (per tensor and,
    for even channel counts, per channel with a relu), bit for bit; on the single-issue M4 and
    M33 the derived pairs' `SMLADX` and the single products' `SMLATB` are in the code (the M7
    keeps widened planes)."""
    bundle = depthwise_cases_on_board(ORDERED_DEPTHWISE, 3100, board, level)
    ordered = ["ordered_planes" in line for line in instruction_lines(bundle)]
    assert all(ordered) == (board != "mps2-an500") and any(ordered) == all(ordered)
    if board != "mps2-an500":
        assert re.search(r"\bsmladx\b", bundle.ir["assembly"]) and re.search(r"\bsmlatb\b", bundle.ir["assembly"])


def test_ordered_plan_reads_whole_words_inside_its_rows():
    """A stride-2 int8 plan's rows are whole words, and every tile's aligned words
    (`ordered_pair_products`) lie inside its padded row."""
    for in_width in (6, 12, 13, 20, 24, 48):
        for pad_left in (0, 1):
            width = (in_width + pad_left + 1 - 3) // 2 + 1
            plan = depthwise_plan(in_width, width, 3, 2, 1, pad_left, ordered=True)
            assert plan.ordered and not plan.widened and plan.padded_width % 4 == 0
            firsts = [(t * plan.pixels, plan.tilings[0]) for t in range(plan.tiles)]
            if plan.tiles * plan.pixels < width:
                firsts.append((plan.tiles * plan.pixels, plan.tilings[-1]))
            for x0, tiling in firsts:
                assert (x0 * 2) % 4 == 0 and x0 * 2 + 4 * (tiling.words // 2 + 1) <= plan.padded_width


# A plane of at most `arm_dsp.UNROLLED_PLANE_OUTPUTS` outputs (a DS-CNN-like one of 10 rows of
# five, one tile a row; 3 rows of a tile of seven), unrolled whole at -O3; one of more (20 rows of
# one tile of nine: 180 outputs), looped.
UNROLLED_PLANES = {
    "unrolled_rows_of_five": (((1, 4, 10, 5), (4, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 4), True),
    "unrolled_rows_of_seven": (((1, 2, 3, 7), (2, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2), True),
    "looped_rows_of_nine": (((1, 2, 20, 9), (2, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2), False),
}


def assembly_functions(assembly: str) -> dict[str, str]:
    """The body of each function of an assembly listing, by name."""
    parts = re.split(r"^([A-Za-z_][\w.]*):\s*$", assembly, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


@pytest.mark.parametrize("board", ["mps2-an500", "mps2-an386"])
def test_small_widened_planes_are_unrolled_whole_at_o3(board):
    """A small plane's kernel requantizes each of its outputs in its own instructions (rows
    unrolled: an `SSAT` per output of the plane), a large one's in a loop (fewer); both bit
    for bit against the int8 reference on the M7 and the M4. In a size-first build no plane
    is unrolled."""
    cases = [convolution_case(3100 + index, geometry, suffix=f"_{name}")
             for index, (name, (geometry, _)) in enumerate(UNROLLED_PLANES.items())]
    bundle = check_on_board(cases, board, keep_assembly=True)
    kernels = [body for name, body in assembly_functions(bundle.ir["assembly"]).items()
               if name.endswith("_convolution")]
    assert len(kernels) == len(cases)  # in the order of the cases
    for body, (name, ((input_shape, *_), unrolled)) in zip(kernels, UNROLLED_PLANES.items()):
        outputs = input_shape[2] * input_shape[3]  # stride 1, padded: the plane's size
        assert (len(re.findall(r"\bssat\b", body)) >= outputs) == unrolled, name
    for name, (geometry, unrolled) in UNROLLED_PLANES.items():
        input_shape, filter_shape, strides, pads, dilations, _ = geometry
        plan = convolution_depthwise_plan(input_shape, filter_shape, strides, pads, dilations, widened=True)
        out_h, out_w = input_shape[2:]
        assert unrolls_plane(plan, out_h, out_w, 1, speed_first=True) == unrolled, name
        assert not unrolls_plane(plan, out_h, out_w, 1, speed_first=False)


# Unrolled planes whose first and last output rows leave out the kernel rows wholly in the top and
# bottom padding (their zero-point products start the sums): 5x5 kernels with top/bottom padding of
# 1 and 2 rows, of 1 and 2 (a row of a tile of four and one of five), a plane of two rows (each
# output row skipping rows at both ends), stride 2; and an input zero point that cannot fold (the
# padding is 0: nothing skipped starts the sums).
EDGE_ROW_PLANES = {
    "edge_rows_pad1_5x5": (((1, 3, 6, 5), (3, 1, 5, 5), (1, 1), (1, 2, 1, 2), (1, 1), 3), "int32"),
    "edge_rows_pad2_5x5": (((1, 2, 7, 6), (2, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 2), "int32"),
    "edge_rows_top1_bottom2": (((1, 2, 5, 9), (2, 1, 5, 5), (1, 1), (1, 2, 2, 2), (1, 1), 2), "int32"),
    "edge_rows_both_ends": (((1, 2, 2, 7), (2, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 2), "int32"),
    "edge_rows_stride2": (((1, 2, 9, 9), (2, 1, 5, 5), (2, 2), (2, 2, 2, 2), (1, 1), 2), "int32"),
    "edge_rows_dscnn_3x3": (((1, 4, 10, 5), (4, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 4), "int32"),
    "edge_rows_not_folded": (((1, 3, 6, 5), (3, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 3), "lowest"),
}


@pytest.mark.parametrize("board", ["mps2-an500", "mps2-an386"])
def test_unrolled_planes_leave_out_their_padding_rows(board):
    """The unrolled planes' first and last rows, their kernel rows in the top or bottom
    padding left out, bit for bit against the int8 reference on the M7 and the M4 (per
    tensor and per channel)."""
    cases = []
    for index, (name, (geometry, bias_kind)) in enumerate(EDGE_ROW_PLANES.items()):
        input_shape, filter_shape, strides, pads, dilations, _ = geometry
        plan = convolution_depthwise_plan(input_shape, filter_shape, strides, pads, dilations, widened=True)
        out_h = (input_shape[2] + pads[0] + pads[2] - filter_shape[2]) // strides[0] + 1
        out_w = (input_shape[3] + pads[1] + pads[3] - filter_shape[3]) // strides[1] + 1
        assert unrolls_plane(plan, out_h, out_w, 1, speed_first=True), name
        for per_channel in (False, True) if bias_kind == "int32" else (False,):
            cases.append(convolution_case(3200 + 2 * index + per_channel, geometry, per_channel=per_channel,
                                          bias_kind=bias_kind, suffix=f"_{name}{'_per_channel' * per_channel}"))
    check_on_board(cases, board)


WIDE_EVERY = 3
"""Every third convolution case also runs with an int64 bias (`_16w`): int64 sums."""


def int16_cases() -> list[Case]:
    """Every convolution case's geometry (and fused pool) and FullyConnected shapes of the
    int8 cases with int16 data (`-quantization-precision=Int16`: offset 0, int8 weights),
    against the int16 reference (tests/support/int16_reference.py), outputs named `*_16`; and
    int64 sums (`wide_accumulators`): every `WIDE_EVERY`th convolution case with an int64
    bias (`*_16w`), a FullyConnected of 700 weights +-127."""
    from tests.unit import test_int16_kernels as int16

    cases = []
    for index, (output, geometry, pool) in enumerate(convolution_cases()):
        per_channel = output.endswith("_per_channel")
        for bias_bits in (32, 64) if index % WIDE_EVERY == 0 else (32,):
            name = output + ("_16" if bias_bits == 32 else "_16w")
            body, inputs, constants, expected = int16.convolution_case(
                2500 + index, geometry, per_channel, "relu" if per_channel or pool else None, pool,
                bias_bits=bias_bits, suffix=name.removeprefix("y"))
            cases.append(Case(body, inputs, constants, name, expected))
    for index, (rows, depth, columns) in enumerate([(1, 800, 20), (2, 37, 10), (3, 6, 7), (1, 3, 4), (2, 64, 12),
                                                    (2, 700, 6)]):
        suffix = f"_fc{index}_16"
        body, inputs, constants, expected = int16.fully_connected_case(2700 + index, rows, depth, columns,
                                                                       extreme=depth == 700,
                                                                       activation="relu" if index % 2 else None,
                                                                       suffix=suffix)
        cases.append(Case(body, inputs, constants, "y" + suffix, expected))
    return cases


@pytest.fixture(scope="module")
def cases16() -> list[Case]:
    return int16_cases()


@pytest.mark.parametrize("board", DSP_BOARDS)
def test_dsp_kernels_match_the_int16_reference_on_boards(board, cases16, cases16_chosen):
    """Int16 layers take the DSP kernels (on the M55 too, whose Helium kernels take int8
    only), those whose sums need int64 (`wide_accumulators`) with `SMLALD`, bit-identical to
    the int16 reference; only the padded 1x1s keep the generic kernel, as int8's do. Each
    case's kernel on each core that takes it once (`board_share`: most take the same
    kernels on every core); the bundles' instructions take the kernels the checks read
    (`choose_kernels`): those of every case for each core."""
    assert all(case.expected.dtype == np.int16 for case in cases16)
    # at most half the cases a bundle: the speed-first code of all in one overflowed the M55's 512 KB
    _, glowll = check_share_on_board(cases16, board, DSP_BOARDS, chosen=cases16_chosen, most=len(cases16) // 2)
    lines = chosen_lines(glowll)
    wide = [line for line in lines if "wide_accumulators" in line]
    assert len(wide) >= sum(case.output.endswith("_16w") for case in cases16) + 1
    assert sum('microkernel = #glowll.microkernel<"arm-dsp"' in line for line in wide) >= len(wide) - 2
    generic = [case.output for case, line in zip(cases16, lines)
               if 'microkernel = #glowll.microkernel<"arm-dsp"' not in line]
    assert generic and all(output.startswith("y_pointwise_padded") for output in generic), generic


@pytest.mark.parametrize("ratio", [1 / 16, 0.73])
@pytest.mark.parametrize("activation", [None, "relu"])
def test_narrow_requantization_of_consecutive_accumulators_on_the_m7(ratio, activation):
    """The one-SMMLAR requantization (`requantization.requantize_narrow`, its multiplier
    doubled and wrapped to int32) on every accumulator of a range of consecutive ones, of
    both signs (`consecutive_accumulators_case`): a power-of-two ratio meets every rounding of
    a half (its multiplier 2^30, the least that wraps); with a fused relu, without the sign
    term (`clamped_below_offset`)."""
    case = consecutive_accumulators_case(ratio, activation)
    bundle = build(case.body, case.constants, target=target_for("mps2-an500"))
    assert all("narrow_requantization" in line for line in instruction_lines(bundle))
    actual = run_on_board(bundle, "mps2-an500", case.inputs).outputs[case.output]
    np.testing.assert_array_equal(actual.reshape(case.expected.shape).astype(np.int8), case.expected)


def consecutive_pointwise_case(ratio: float, output_offset: int) -> Case:
    """A 1x1 convolution of one input channel holding every level (16 x 16 pixels) into 32
    output channels of weight 1 and biases 256 apart, per tensor, with a fused relu: its
    accumulators are the 8,192 consecutive integers around 0, on the gathered products
    with doubled accumulators. At an output offset of -128 the relu is the whole int8 range
    (the rounding terms in a register, as DS-CNN's layers have them)."""
    x = np.arange(-128, 128, dtype=np.int8).reshape(1, 1, 16, 16)
    w = np.ones((32, 1, 1, 1), np.int8)
    x_type, w_scale = (0.05, 0), 0.01
    bias = (np.arange(32, dtype=np.int32) - 16) * 256
    bias_scale = ref.f32(np.float32(x_type[0]) * np.float32(w_scale))
    out_type = (float(np.float32(bias_scale / np.float32(ratio))), output_offset)
    w_scales = np.full(32, w_scale, np.float32)
    geometry = ((1, 1), (0, 0, 0, 0), (1, 1), 1)
    expected = ref.conv2d(x, w, bias, x_type, w_scales, np.zeros(32, np.int64), out_type, *geometry, "relu")
    x_t, w_t, b_t = tensor(x.shape, q8(*x_type)), tensor(w.shape, q8(w_scale, 0)), tensor((32,), q32(bias_scale))
    y_t = tensor(expected.shape, q8(*out_type))
    attributes = f"strides = {ints((1, 1))}, pads = {ints((0, 0, 0, 0))}, dilations = {ints((1, 1))}"
    body = f"""
  %x = glow.placeholder "x" : {x_t}
  %w = glow.constant "w" elided : {w_t}
  %b = glow.constant "b" elided : {b_t}
  %y = glow.convolution %x, %w, %b activation relu {{{attributes}}} : ({x_t}, {w_t}, {b_t}) -> {y_t}
  glow.save %y as "y" : {y_t}"""
    return Case(body, {"x": x}, {"w": w, "b": bias}, "y", expected)


@pytest.mark.parametrize("ratio", [1 / 16, 0.73])
@pytest.mark.parametrize("output_offset", [-128, 5])
def test_relu_requantization_of_consecutive_accumulators_on_the_m7(ratio, output_offset):
    """A convolution's requantization under a fused relu drops the sign term
    (`requantize_narrow`'s `clamped_below_offset`): on every accumulator of a range of
    consecutive ones of both signs (`consecutive_pointwise_case`), every rounding of a half
    met (a power-of-two ratio), as the int8 reference rounds them."""
    case = consecutive_pointwise_case(ratio, output_offset)
    bundle = build(case.body, case.constants, target=target_for("mps2-an500"))
    line, = instruction_lines(bundle)
    assert all(word in line for word in ('microkernel = #glowll.microkernel<"arm-dsp"', "narrow_requantization",
                                         "doubled_accumulators"))
    actual = run_on_board(bundle, "mps2-an500", case.inputs).outputs[case.output]
    np.testing.assert_array_equal(actual.reshape(case.expected.shape).astype(np.int8), case.expected)


def instruction_lines(bundle) -> list[str]:
    return chosen_lines(bundle.ir["glowll"])


def chosen_lines(glowll_ir: str) -> list[str]:
    """The convolution and FullyConnected lines of glowll IR, in order."""
    return [line for line in glowll_ir.splitlines() if "glowll.convolution" in line or "glowll.fully_connected" in line]


def tiles(geometry: tuple, pool: dict | None) -> bool:
    """Whether a case's fused pool is one window pairs take, by docs/arm-dsp-kernels.md ("A
    fused pool"): its windows cut the convolution's output in tiles (kernel = strides,
    unpadded, at most four pixels) or it is global (the whole plane, unpadded)."""
    if pool is None or any(pool["pads"]):
        return False
    convolution_hw = tuple(glow.ConvolutionOp.shape_rule(*geometry)[2:])
    kernel = tuple(pool["kernel"])
    return kernel == convolution_hw or (kernel == tuple(pool["strides"]) and kernel[0] * kernel[1] <= 4)


def documented_kind(geometry: tuple, pool: dict | None) -> str | None:
    """The packing docs/arm-dsp-kernels.md gives a convolution, written here from its text (not
    `arm_dsp_layout.packing`): window pairs for an ungrouped convolution wider than 1x1 of at
    most 144 taps, unpooled or with a tiling pool, or unpooled of at most 1,024; depthwise for an
    unpooled one of one input channel a group; row pairs along a kernel row at least two taps
    wide; channel pairs for an unpadded ungrouped 1x1; else the generic kernel. This checks the
    code against the docs; that the documented choices are the cheaper ones is measured on the
    boards (tests/unit/test_arm_dsp_kernel_choices.py)."""
    _, (_, group_c, k_h, k_w), _, pads, _, group = geometry
    taps = group_c * k_h * k_w
    if group == 1 and k_h * k_w > 1 and ((pool is None or tiles(geometry, pool)) and taps <= 144
                                         or pool is None and taps <= 1024):
        return WINDOW_PAIRS
    if group_c == 1 and pool is None:
        return "depthwise"
    if k_w >= 2:
        return "row pairs"
    if k_h == 1 and group == 1 and not any(pads):
        return "channel pairs"
    return None


def documented_straight(geometry: tuple, pool: dict | None, looped: bool, dual_issue: bool) -> bool:
    """Whether a convolution's products are straight-line code by docs/arm-dsp-kernels.md: a
    gathered product (window pairs; channel pairs of stride 1, unpooled or pooled globally) of
    at most 32 pairs (`UNROLLED_PAIRS`; channel pairs on a dual-issue core, the M7, at most 16:
    `DUAL_ISSUE_STRAIGHT_PAIRS`), in a speed-first build."""
    _, filter_shape, strides, _, _, _ = geometry
    kind = documented_kind(geometry, pool)
    height, width = glow.ConvolutionOp.shape_rule(*geometry)[2:]
    globally = pool is not None and tuple(pool["kernel"]) == (height, width) and not any(pool["pads"])
    gathered = kind == WINDOW_PAIRS or (kind == "channel pairs" and tuple(strides) == (1, 1)
                                        and (pool is None or globally))
    most = 16 if dual_issue and kind == "channel pairs" else 32
    return gathered and -(-int(np.prod(filter_shape[1:])) // 2) <= most and not looped


def test_every_eligible_instruction_gets_the_dsp_kernel(cases, cases_chosen):
    """Only filters with nothing to pair keep the generic kernel (a padded 1x1)."""
    lines = chosen_lines(cases_chosen(target_for("mps2-an500")))
    assert len(lines) == len(cases)
    generic = [line for line in lines if 'microkernel = #glowll.microkernel<"arm-dsp"' not in line]
    assert len(generic) == sum(case.output.startswith("y_pointwise_padded") for case in cases) == 2
    kinds = [documented_kind(geometry, pool) for _, geometry, pool in int8_convolution_cases()]
    assert {"window pairs", "depthwise", "row pairs", "channel pairs"} <= set(kinds)
    pooled_windows = [kind for (output, _, _), kind in zip(int8_convolution_cases(), kinds)
                      if output.removeprefix("y_") in POOLED_WINDOWS]
    assert pooled_windows == [WINDOW_PAIRS] * len(POOLED_WINDOWS)
    # every microkernel's bias takes the input offset, but a padded convolution's (not on
    # planes or gathered windows, whose padding holds the input zero point)
    for line, kind in zip(lines, kinds + ["fully connected"] * (len(lines) - len(kinds))):
        padded = "glowll.convolution" in line and not re.search(r"[{ ]pads = array<i64: 0, 0, 0, 0>", line)
        zero_point_padding = kind in ("depthwise", "window pairs")
        assert ("folded_input_offset" in line) == ('"arm-dsp"' in line and (zero_point_padding or not padded)), line


def test_straight_gathered_blocks_read_their_biases_in_the_filter(cases_chosen):
    """A speed-first build's gathered products whose blocks take their pairs in straight-line
    code (at most `UNROLLED_PAIRS`), with doubled sums, carry their doubled biases in the
    packed filter (`biases_in_filter`: one pair more); the others do not, nor does any of a
    size-first build (whose gathered products keep their loop). The outputs are checked on
    every board (`test_dsp_kernels_match_the_int8_reference_on_boards`)."""
    for level, looped in (("O3", False), ("Os", True)):
        lines = chosen_lines(cases_chosen(target_for("mps2-an500", level)))
        carried = 0
        for line, (output, geometry, pool) in zip(lines, int8_convolution_cases()):
            expected = documented_straight(geometry, pool, looped, dual_issue=True) and "doubled_accumulators" in line
            assert ("biases_in_filter" in line) == expected, (level, output)
            carried += expected
        assert carried > 10 if not looped else carried == 0


def test_biases_lie_before_each_blocks_weight_words():
    """`with_biases`: a first pair whose words, where a block's weight words of a pair lie, are
    its channels' biases as int32 (low half first); the weight pairs after it as they were."""
    rng = np.random.default_rng(5)
    filt = rng.integers(-128, 128, (8, 6, 1, 1)).astype(np.int8)
    packed = pack_filter(filt, 1, (1, 6, 2, 2), (1, 1), (1, 1), (0, 0, 0, 0), 1)
    biases = rng.integers(-2**31, 2**31, 8)
    carried = with_biases(packed, biases)
    assert carried.dtype == np.int16 and carried.shape == (2, BIAS_PAIRS + 3, 2, 2, 2)
    np.testing.assert_array_equal(carried[:, BIAS_PAIRS:], packed)
    words = carried[:, 0].astype("<i2").view("<i4")[..., 0]  # [group, interleaved block, channel]
    for o in range(8):
        assert words[o // 4, o // 2 % 2, o % 2] == biases[o]


def helium_microkernel(geometry: tuple, pool: dict | None) -> str:
    """What the M55 runs a convolution case on: dot products of gathered windows (unpooled
    or pooled globally, ungrouped, enough taps: every case's bias takes the input offset), else vectors of
    output columns (stride 1 along the row, a depthwise one onto rows of two or more whole
    vectors or of more than three; or stride 2 onto rows of 8 outputs or more; any padding:
    predicated edge lanes), else the DSP kernel (stride 2 onto narrower rows). The
    code against the docs; each rule's choice is measured cheapest in
    tests/unit/test_arm_dsp_kernel_choices.py."""
    input_shape, filter_shape, strides, pads, dilations, group = geometry
    width = (input_shape[3] + pads[1] + pads[3] - dilations[1] * (filter_shape[3] - 1) - 1) // strides[1] + 1
    columns = strides[1] == 1 or (strides[1] == 2 and width >= 8)
    if group > 1 and filter_shape[1] == 1 and strides[1] == 1:  # depthwise: rows of whole vectors (4 lanes), two
        columns = (width % 4 == 0 and width >= 8) or width > 12  # or more, or more than three vectors
    height = (input_shape[2] + pads[0] + pads[2] - dilations[0] * (filter_shape[2] - 1) - 1) // strides[0] + 1
    pooled_globally = pool is not None and pool["kernel"] == (height, width) and not any(pool["pads"])
    taps = int(np.prod(filter_shape[1:]))  # docs/arm-dsp-kernels.md: at least 48 taps, or 8 off the column kernel
    if (pool is None or pooled_globally) and group == 1 and (taps >= 48 or (taps >= 8 and not columns)):
        return "arm-mve-im2col"
    return "arm-mve" if columns else "arm-dsp"


def test_the_m55_takes_its_convolutions_and_fully_connected_on_helium(cases_chosen):
    lines = chosen_lines(cases_chosen(target_for("mps3-an547")))
    fully_connected = [line for line in lines if "glowll.fully_connected" in line]
    assert fully_connected and all('microkernel = #glowll.microkernel<"arm-mve">' in line for line in fully_connected)
    convolutions = [line for line in lines if "glowll.convolution" in line]
    expected = [helium_microkernel(geometry, pool) for _, geometry, pool in int8_convolution_cases()]
    assert len(convolutions) == len(expected)
    assert {"arm-mve-im2col", "arm-mve", "arm-dsp"} <= set(expected)  # each kind is tested on the board
    strided = [kind for (_, geometry, _), kind in zip(int8_convolution_cases(), expected) if geometry[2][1] == 2]
    assert "arm-mve" in strided
    for (output, _, _), kind, line in zip(int8_convolution_cases(), expected, convolutions):  # in the cases' order
        assert f'microkernel = #glowll.microkernel<"{kind}"' in line, (output, line)
        assert kind != "arm-mve-im2col" or "folded_input_offset" in line


HELIUM_ELEMENTWISE = [  # (kind, a's shape, b's shape, activation, on Helium)
    # operands of one shape: whole vectors, a predicated tail, fused activations
    ("add", (2, 3, 4, 4), (2, 3, 4, 4), None, True), ("add", (1, 5, 3, 7), (1, 5, 3, 7), "relu", True),
    ("sub", (3, 41), (3, 41), None, True), ("add", (3,), (3,), "clip", True),
    ("sub", (1, 8, 6, 6), (1, 8, 6, 6), None, True), ("mul", (2, 3, 4, 4), (2, 3, 4, 4), None, True),
    ("mul", (3, 41), (3, 41), None, True),
    # squeeze-excitation: a per-channel scale of 5 x 5 pixels (runs of 25: a tail of one), of
    # two images, of 3 x 3; a per-channel Add and Sub
    ("mul", (1, 16, 5, 5), (1, 16, 1, 1), None, True), ("mul", (2, 6, 3, 3), (1, 6, 1, 1), None, True),
    ("add", (1, 4, 5, 6), (1, 4, 1, 1), "relu", True), ("sub", (1, 4, 1, 1), (1, 4, 5, 6), None, True),
    # a scale along the last axis (channels last), a scalar either side, both operands broadcast
    ("mul", (1, 5, 5, 12), (1, 1, 1, 12), None, True), ("mul", (1,), (2, 3, 7), None, True),
    ("sub", (2, 3, 7), (1,), None, True), ("add", (1, 4, 1, 1), (2, 4, 3, 3), "clip", True),
    # runs of 3 pixels on the vectors; of one (a trailing unit dimension): the scalar kernel
    ("mul", (1, 4, 1, 3), (1, 4, 1, 1), None, True), ("mul", (1, 4, 3, 1), (1, 4, 1, 1), None, False),
]


def test_broadcast_loops_merge_the_dimensions_every_operand_steps_through_alike():
    """The loops the Helium elementwise kernel runs (the last in vectors) and the pass weighs."""
    assert glow.broadcast_loops((2, 3, 4, 4), [(2, 3, 4, 4)] * 2) == [96]
    assert glow.broadcast_loops((1, 16, 5, 5), [(1, 16, 5, 5), (1, 16, 1, 1)]) == [16, 25]
    assert glow.broadcast_loops((1, 5, 5, 12), [(1, 5, 5, 12), (1, 1, 1, 12)]) == [1, 25, 12]  # 1: no loop
    assert glow.broadcast_loops((2, 4, 3, 3), [(1, 4, 1, 1), (2, 4, 3, 3)]) == [2, 4, 9]
    assert glow.broadcast_loops((2, 3, 7), [(2, 3, 7), (1,)]) == [42]
    assert glow.broadcast_loops((2, 3, 7), [(2, 3, 1), (2, 3, 7)]) == [6, 7]
    assert glow.broadcast_loops((), [(), ()]) == [1]


def test_helium_adds_subtracts_and_multiplies_four_lanes_at_a_time():
    """An int8 Add, Sub or Mul, of operands of one shape or broadcast onto runs of a vector
    or more, takes the M55's vector kernel (`microkernel = "arm-mve"`), bit-identical to
    TFLite's int8 Add, Sub and Mul (every level pair, saturating, a Mul whose multiplier
    shifts left); a broadcast onto runs of one level and the M7's keep the scalar kernel."""
    cases = [binary_case(kind, a_shape, b_shape, 900 + i, activation, suffix=f"_{i}")
             for i, (kind, a_shape, b_shape, activation, _) in enumerate(HELIUM_ELEMENTWISE)]
    cases += [all_level_pairs_case("sub", (0.0123, 25), (0.1, -7), (0.051, 3), columns=range(-128, 128, 3)),
              all_level_pairs_case("mul", (0.0123, 25), (0.1, -7), (0.051, 3), columns=range(-128, 128, 3),
                                   suffix="_mul"),
              all_level_pairs_case("mul", (0.1, 5), (0.2, -3), (0.01, -4), columns=range(-128, 128, 5),
                                   suffix="_left")]
    body = "".join(case.body for case in cases)
    bundle = build(body, {}, target=target_for("mps3-an547"))
    lines = [line for line in bundle.ir["glowll"].splitlines() if "glowll.elementwise" in line]
    assert len(lines) == len(cases)
    on_helium = [helium for *_, helium in HELIUM_ELEMENTWISE] + [True] * 3
    assert [('microkernel = #glowll.microkernel<"arm-mve">' in line) for line in lines] == on_helium
    outputs = run_on_board(bundle, "mps3-an547", {name: v for case in cases for name, v in case.inputs.items()}).outputs
    for case in cases:
        np.testing.assert_array_equal(outputs[case.output], case.expected, err_msg=case.output)
    saturated = [np.isin(case.expected, (-128, 127)).mean() for case in cases[-2:]]
    assert 0.1 < saturated[0] < 0.9 and 0.1 < saturated[1] < 0.99, saturated
    m7 = build(body, {}, target=target_for("mps2-an500")).ir["glowll"]
    assert "glowll.elementwise" in m7 and 'microkernel = #glowll.microkernel<"arm-mve">' not in m7


def test_helium_filter_blocks_output_channels():
    rng = np.random.default_rng(3)
    filter_levels = rng.integers(-128, 128, (12, 3, 2, 5)).astype(np.int8)
    packed = column_layout.pack_filter(filter_levels.astype(np.int16) + 7, column_layout.channel_block(12, 1))
    assert packed.shape == column_layout.packed_filter_shape((12, 3, 2, 5), 4) == (3, 3, 2, 5, 4)
    for o, c, ky, kx in np.ndindex(12, 3, 2, 5):
        assert packed[o // 4, c, ky, kx, o % 4] == int(filter_levels[o, c, ky, kx]) + 7
    assert column_layout.channel_block(6, 1) == 2 and column_layout.channel_block(6, 6) == 1


def test_host_builds_take_no_arm_kernel(cases):
    """A host build keeps the generic kernels, or (an AVX-512 VNNI host) takes its own."""
    lines = instruction_lines(build(cases[0].body, cases[0].constants))
    assert lines and not any('microkernel = #glowll.microkernel<"arm' in line for line in lines)


def test_pointwise_filter_pairs_input_channels():
    """Two blocks of two output channels side by side for each channel pair."""
    filt = np.arange(4 * 5, dtype=np.int8).reshape(4, 5, 1, 1)
    packed = pack_filter(filt, 2, (1, 5, 3, 3), (1, 1), (1, 1), (0, 0, 0, 0), 1)
    assert packed.shape == (1, 3, 2, 2, 2)
    assert packed[0, 0, 1, 1].tolist() == [15 - 2, 16 - 2]  # output 3, channels 0 and 1
    assert packed[0, 2, 0, 0].tolist() == [4 - 2, 0]  # output 0, channel 4 and the zero beside it
    assert packed[0, 1, 1, 0].tolist() == [12 - 2, 13 - 2]  # output 2, channels 2 and 3


def test_pointwise_filter_blocks_side_by_side_when_they_pair():
    """Six outputs: three blocks of two, none side by side; five: five blocks of one."""
    rng = np.random.default_rng(4)
    for out_c, shape in ((6, (3, 2, 1, 2, 2)), (5, (5, 2, 1, 1, 2))):
        filt = rng.integers(-128, 128, (out_c, 3, 1, 1)).astype(np.int8)
        packed = pack_filter(filt, -3, (1, 3, 2, 2), (1, 1), (1, 1), (0, 0, 0, 0), 1)
        assert packed.shape == shape
        block = shape[3]
        for o, c in np.ndindex(out_c, 3):
            assert packed[o // block, c // 2, 0, o % block, c % 2] == int(filt[o, c, 0, 0]) + 3


def test_dequantize_with_power_of_two_scales_on_the_m55():
    """LLVM folds `sitofp(x) * 2^-n` into MVE's fixed-point VCVT and, with two of them in one
    function, once gave it a register operand: an assertion (a crash, no message) when the
    M55 object was written, for every int8 model ending in a dequantized softmax. The
    dequantize kernel converts exactly without `sitofp`."""
    x = np.arange(-128, 128, dtype=np.int8).reshape(16, 16)
    elements = [(1 / 256, -128), (0.0625, 3)]
    body = ""
    for index, element in enumerate(elements):
        x_t, y_t = tensor(x.shape, q8(*element)), tensor(x.shape, "f32")
        body += f"""
  %x{index} = glow.placeholder "x{index}" : {x_t}
  %y{index} = glow.dequantize %x{index} : ({x_t}) -> {y_t}
  glow.save %y{index} as "y{index}" : {y_t}"""
    bundle = build(body, target=target_for("mps3-an547"))
    outputs = run_on_board(bundle, "mps3-an547", {f"x{i}": x for i in range(len(elements))}).outputs
    for index, element in enumerate(elements):
        np.testing.assert_array_equal(outputs[f"y{index}"].reshape(x.shape), ref.dequantize(x, *element))


def softmax_case(x: np.ndarray, input_scale: float, input_offset: int, suffix: str) -> Case:
    """glow.softmax of int8 levels `x` over its last axis (names x, y + `suffix`) and its int8
    reference output (`arm_softmax_s8`)."""
    x_t, y_t = tensor(x.shape, q8(input_scale, input_offset)), tensor(x.shape, q8(*ref.SOFTMAX_OUTPUT))
    body = f"""
  %x{suffix} = glow.placeholder "x{suffix}" : {x_t}
  %y{suffix} = glow.softmax %x{suffix} {{axis = {x.ndim - 1} : i64}} : ({x_t}) -> {y_t}
  glow.save %y{suffix} as "y{suffix}" : {y_t}"""
    return Case(body, {f"x{suffix}": x}, {}, f"y{suffix}", ref.softmax_s8(x, input_scale))


def test_helium_softmax_takes_four_exps_at_a_time():
    """An int8 softmax takes the M55's vector kernel (`microkernel = "arm-mve"`), bit-identical
    to `arm_softmax_s8`: rows of whole vectors and of a predicated tail (of 1 to 3 levels, and
    of 16-level maxima), levels further below the maximum than diff_min, ties at the maximum
    (600 of them: a quotient divided by more than 2^31); the M7 keeps the scalar kernel."""
    rng = np.random.default_rng(960)
    below = levels(rng, 2, 10)
    below[0] = [127, -128, 3, 2, 65, 66, 64, 0, -1, 120]  # diff_min -62 at scale 0.25
    ties = levels(rng, 2, 1000)
    ties[1, :600] = 127
    cases = [softmax_case(levels(rng, *shape), scale, offset(rng), f"_{i}") for i, (shape, scale) in enumerate([
        ((4, 12), 0.05), ((2, 3, 10), 0.1), ((3, 17), 0.0123), ((2, 1000), 0.08), ((5, 1), 0.05), ((1, 35), 0.2)])]
    cases += [softmax_case(below, 0.25, -5, "_below"), softmax_case(ties, 0.08, 3, "_ties")]
    assert (cases[-1].expected[1, :600] == -128).all() and len(np.unique(cases[3].expected)) > 3
    body = "".join(case.body for case in cases)
    bundle = build(body, {}, target=target_for("mps3-an547"))
    lines = [line for line in bundle.ir["glowll"].splitlines() if "glowll.softmax" in line]
    assert len(lines) == len(cases) and all('microkernel = #glowll.microkernel<"arm-mve">' in line for line in lines)
    outputs = run_on_board(bundle, "mps3-an547", {name: v for case in cases for name, v in case.inputs.items()}).outputs
    for case in cases:
        np.testing.assert_array_equal(outputs[case.output], case.expected, err_msg=case.output)
    m7 = build(body, {}, target=target_for("mps2-an500")).ir["glowll"]
    assert "glowll.softmax" in m7 and 'microkernel = #glowll.microkernel<"arm-mve">' not in m7


LEVEL_TABLE_ELEMENTWISE = [  # (kind, a's shape, b's shape, activation, from tables)
    ("add", (1, 8, 12, 12), (1, 8, 12, 12), None, True), ("sub", (3, 257), (3, 257), None, True),
    ("add", (1, 24, 6, 6), (1, 24, 6, 6), "clip", True), ("add", (1, 4, 16, 16), (1, 4, 1, 1), "relu", True),
    ("sub", (2, 256), (1,), None, True), ("add", (2, 3, 4, 4), (2, 3, 4, 4), None, False),
    ("add", (1, 4, 6, 6), (1, 4, 6, 6), None, False),
    ("mul", (1, 8, 12, 12), (1, 8, 12, 12), None, False),
]


@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an500", "mps2-an505"])
def test_level_tables_take_large_adds_and_softmaxes_on_dsp_cores(board):
    """On the M4, M7 and M33 (DSP extension, no Helium) an int8 Add or Sub of 192 elements or
    more, and an int8 softmax of more than 128 levels, take their terms and exps from
    tables of levels (`microkernel = "level-tables"`), bit-identical to the int8 reference: every level pair of
    an Add and a Sub (tables of doubled terms) and of an Add whose sum is shifted right too far
    to fold its rounding terms (single terms), broadcasts, fused activations, softmax rows of
    1000 levels with ties at the maximum, levels below diff_min; smaller ones and Mul keep
    the generic kernel."""
    rng = np.random.default_rng(970)
    cases = [binary_case(kind, a_shape, b_shape, 970 + i, activation, suffix=f"_{i}")
             for i, (kind, a_shape, b_shape, activation, _) in enumerate(LEVEL_TABLE_ELEMENTWISE)]
    cases += [all_level_pairs_case("add", (0.0123, 25), (0.1, -7), (0.051, 3), columns=range(-128, 128, 3)),
              all_level_pairs_case("sub", (0.2, -4), (0.013, 11), (0.09, -2), columns=range(-128, 128, 5),
                                   suffix="_sub"),
              # an output scale 10x the inputs': the sum's right shift (22 > 21) keeps the tables' terms single
              all_level_pairs_case("add", (0.01, 3), (0.012, -5), (0.1, 7), columns=range(-128, 128, 7),
                                   suffix="_coarse")]
    below = levels(rng, 2, 200)
    below[0, :10] = [127, -128, 3, 2, 65, 66, 64, 0, -1, 120]  # diff_min -62 at scale 0.25
    ties = levels(rng, 2, 1000)
    ties[1, :600] = 127
    softmaxes = [softmax_case(levels(rng, 2, 1000), 0.08, offset(rng), "_wide"),
                 softmax_case(levels(rng, 3, 130), 0.0123, offset(rng), "_fine"),
                 softmax_case(below, 0.25, -5, "_below"), softmax_case(ties, 0.08, 3, "_ties"),
                 softmax_case(levels(rng, 1, 128), 0.05, offset(rng), "_small")]
    cases += softmaxes
    assert (softmaxes[3].expected[1, :600] == -128).all() and len(np.unique(softmaxes[0].expected)) > 3
    body = "".join(case.body for case in cases)
    bundle = build(body, {}, target=target_for(board))
    lines = [line for line in bundle.ir["glowll"].splitlines()
             if "glowll.elementwise" in line or "glowll.softmax" in line]
    assert len(lines) == len(cases)
    from_tables = [tables for *_, tables in LEVEL_TABLE_ELEMENTWISE] + [True] * 3 + [True] * 4 + [False]
    assert [('microkernel = #glowll.microkernel<"level-tables">' in line) for line in lines] == from_tables
    outputs = run_on_board(bundle, board, {name: v for case in cases for name, v in case.inputs.items()}).outputs
    for case in cases:
        np.testing.assert_array_equal(outputs[case.output], case.expected, err_msg=case.output)
    saturated = [np.isin(case.expected, (-128, 127)).mean() for case in cases[len(LEVEL_TABLE_ELEMENTWISE):][:2]]
    assert all(0.05 < share < 0.95 for share in saturated), saturated
