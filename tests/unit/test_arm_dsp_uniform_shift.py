"""One right shift for every channel (issue 37): a speed-first build's narrow int16-pair
gathered product or widened depthwise layer with a relu has each channel's filter and bias scaled
by 2^(k - r) at compile time (`arm_dsp.select_kernels.uniform_shift_table`) and its output step
`SMMLA`, `SSAT` with `ASR #k` (`requantization.requantize_floored`), the table's third row each
channel's terms. The arithmetic on edge values in numpy against TFLite's two roundings, then
random-weight pointwise layers of visual wake words' narrow channel counts (more channel pairs
than the unrolled ones), a 3x3 stem on window pairs and 3x3 depthwise layers of stride 1 and 2,
with a relu (at one shift), no activation and a clip (as before), on the emulated M4, M7 and
M33, bit for bit against the int8 reference."""

from __future__ import annotations

import re

import numpy as np
import pytest

from glowmlir.lowering.requantization import channel_rounding_terms
from tests.unit.test_arm_dsp_kernels import DSP_EXTENSION_BOARDS, check_share_on_board
from tests.unit.test_quantized_kernels import activation_cases


def tflite_level(accumulator: int, multiplier: int, right: int, offset: int) -> int:
    """TFLite's `MultiplyByQuantizedMultiplier` (the doubling high multiply rounded half away
    from zero, then `RoundingDivideByPOT`) plus the output offset, unclamped."""
    product = accumulator * multiplier
    nudge = (1 << 30) if product >= 0 else 1 - (1 << 30)
    high = (product + nudge) // (1 << 31) if product >= 0 else -((-product - nudge) // (1 << 31))
    if right == 0:
        return high + offset
    mask, remainder = (1 << right) - 1, high & ((1 << right) - 1)
    threshold = (mask >> 1) + (1 if high < 0 else 0)
    return (high >> right) + (1 if remainder > threshold else 0) + offset


def floored_level(accumulator: int, multiplier: int, right: int, shift: int, offset: int) -> int:
    """`requantize_floored` in Python integers: the accumulator scaled by f = 2^(shift - right),
    doubled, `floor(x M / 2^32)` plus the channel's terms f h + f / 2, then `>> shift`."""
    factor = 1 << (shift - right)
    terms = factor * int(channel_rounding_terms(np.array([-right]), offset)[0]) + factor // 2
    return ((2 * factor * accumulator * multiplier >> 32) + terms) >> shift


EDGE_ACCUMULATORS = [0, 1, -1, 2, -2, 3, 127, -128, 255, -256, 1 << 16, -(1 << 16), (1 << 20) - 1, -(1 << 20)]


@pytest.mark.parametrize("offset", [-128, -1, 0, 5, 127])
def test_one_right_shift_for_every_channel_gives_tflites_levels(offset):
    """At and above the offset (where a relu keeps them) the floored step gives TFLite's level
    for edge and random accumulators, multipliers of [2^30, 2^31) and right shifts 0 to 12 at a
    common shift one more than the largest; below the offset both are clamped to it."""
    rng = np.random.default_rng(3700 + offset + 128)
    accumulators = EDGE_ACCUMULATORS + [int(a) for a in rng.integers(-(1 << 20), 1 << 20, 200)]
    multipliers = [1 << 30, (1 << 31) - 1, 1518500250] + [int(m) for m in rng.integers(1 << 30, 1 << 31, 20)]
    for right in range(13):
        for multiplier in multipliers:
            for accumulator in accumulators:
                expected = max(tflite_level(accumulator, multiplier, right, offset), offset)
                assert max(floored_level(accumulator, multiplier, right, 13, offset), offset) == expected, \
                    (accumulator, multiplier, right)


def test_rounding_terms_are_the_kernels_int32_numbers():
    """`channel_rounding_terms`: 2^(r - 1) + offset 2^r for r > 0, the offset at r = 0 (the
    kernel's `((2 offset + 1) << r) >> 1` in int32 where the table folds, r up to 22 at -128)."""
    shifts = -np.arange(23)
    for offset in (-128, -1, 0, 1, 127):
        terms = channel_rounding_terms(shifts, offset)
        int32 = [np.int32(np.int32(2 * offset + 1) << np.int32(r)) >> np.int32(1) for r in range(23)]
        assert terms.tolist() == [int(t) for t in int32]
        assert terms[0] == offset and all(terms[r] == (1 << (r - 1)) + offset * (1 << r) for r in range(1, 23))


LAYERS = {
    # more output channels x input pairs than `UNROLLED_CHANNEL_PAIRS`: blocks looped, numbers loaded
    "pointwise_16_32": ((1, 16, 6, 6), (32, 16, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "pointwise_32_32_odd_plane": ((1, 32, 5, 7), (32, 32, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "pointwise_32_64": ((1, 32, 4, 4), (64, 32, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    # a window-pairs product (ResNet-8's 3 -> 16 stem: 14 tap pairs x 16 channels), padded
    "stem_3x3_3_16": ((1, 3, 12, 12), (16, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    # depthwise 3x3 onto `UNIFORM_SHIFT_PLANES` outputs a channel: stride 1 and 2, padded
    "depthwise_3x3": ((1, 16, 12, 12), (16, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 16),
    "depthwise_3x3_stride2": ((1, 8, 24, 24), (8, 1, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 8),
}


def layer_cases():
    return activation_cases(LAYERS, 3700)


@pytest.mark.parametrize("board", DSP_EXTENSION_BOARDS)
def test_layers_at_one_shift_match_the_int8_reference(board):
    """Each case's kernel on each core that takes it once (`test_arm_dsp_kernels.board_share`:
    the M4 and the M33 take the same kernels); the glowll IR of every case for the board read."""
    bundle, glowll = check_share_on_board(layer_cases(), board, DSP_EXTENSION_BOARDS, keep_assembly=True)
    # the relu layers at one shift (a table of three rows), the others as before
    assert glowll.count("uniform_shift") == len(LAYERS)
    assert len(re.findall(r"memref<3x(?:8|16|32|64)xi32>", glowll)) >= len(LAYERS)
    assert re.search(r"smmla\s", bundle.ir["assembly"])  # the floored step's (no rounding), not SMMLAR
