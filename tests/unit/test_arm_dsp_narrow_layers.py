"""Narrow layers on the Arm DSP kernels: straight gathered products of few output channels times
input channel (or tap) pairs (`arm_dsp.gathered_product.UNROLLED_CHANNEL_PAIRS`) take their
blocks of output channels unrolled, each channel's requantization numbers compile-time constants
(`QuantizedArithmetic.channels_inlined`). Random weights and inputs, per-channel filters, every
fused activation form (relu: no sign in the rounding; none: the sign and the output offset in the
rounding terms; clip: a clamp narrower than int8), on the emulated boards, bit for bit against
the int8 reference."""

from __future__ import annotations

import re

import pytest

from glowmlir.backends.arm_dsp.gathered_product import UNROLLED_CHANNEL_PAIRS
from tests.unit.test_arm_dsp_kernels import DSP_EXTENSION_BOARDS, check_share_on_board
from tests.unit.test_quantized_kernels import activation_cases

NARROW_LAYERS = {
    # visual wake words' 8 -> 16 pointwise layer (runs of four pixels only), and on an odd plane
    # (a run, then a pair and a single pixel, looped over the blocks as before)
    "pointwise_8_16": ((1, 8, 12, 12), (16, 8, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "pointwise_8_16_odd_plane": ((1, 8, 5, 7), (16, 8, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    # an odd input channel count (a last pair of one channel), fewer outputs than inputs
    "pointwise_13_6": ((2, 13, 4, 6), (6, 13, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    # visual wake words' 3 -> 8 stem: 3x3 of stride 2, padded (14 tap pairs)
    "stem_3x3_stride2": ((1, 3, 24, 24), (8, 3, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 1),
    # inputs too large for a padded copy (`arm_dsp.stack_copies.PADDED_INPUT_BYTES`): runs of four
    # pixels tested once (`window_gathering.straight_run`), rows of 14 and 19 pixels (runs that
    # wrap to the next row, a last pair and a single pixel); the 3 -> 8 stem padded on every side,
    # and as visual wake words reads its NHWC image in place, one channel of rows of 9 taps
    # (3 columns x 3 channels: stride 6, the right padding a column's 3 taps)
    "stem_3x3_stride2_unpadded_copy": ((1, 3, 30, 27), (8, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
    "stem_rows_of_9_stride2x6": ((1, 1, 26, 114), (8, 1, 3, 9), (2, 6), (0, 0, 1, 3), (1, 1), 1),
}


def narrow_cases():
    return activation_cases(NARROW_LAYERS, 900)


def test_the_cases_are_narrow():
    for geometry in NARROW_LAYERS.values():
        out_c, in_c, k_h, k_w = geometry[1]
        assert out_c * -(-(in_c * k_h * k_w) // 2) <= UNROLLED_CHANNEL_PAIRS


@pytest.mark.parametrize("board", DSP_EXTENSION_BOARDS)
def test_narrow_layers_match_the_int8_reference(board):
    """Each case's kernel on each core that takes it once (`test_arm_dsp_kernels.board_share`:
    the M4 and the M33 take the same kernels)."""
    bundle, _ = check_share_on_board(narrow_cases(), board, DSP_EXTENSION_BOARDS, keep_assembly=True)
    # the division's shift an immediate of the clamp: SSAT with ASR #n
    assert re.search(r"ssat\s+r\d+, #8, r\d+, asr #\d+", bundle.ir["assembly"])
