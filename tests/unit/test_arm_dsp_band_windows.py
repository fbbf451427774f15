"""The banded window product (`arm_dsp.banded_windows`): a speed-first build's 3x3 convolutions
of an even number of input channels, stride 1 or 2, and unpadded 1x1 convolutions of stride 2,
multiplied on a band of their input widened once per output row, on output pair words.

Random-weight layers of ResNet-8's shapes (16, 32 and 64 input channels; stride 1 and 2;
padded on every side and, as TFLite's SAME stride 2 pads, below and right only; smaller
planes, widths not a multiple of the run of three pixels) are built by the default pipeline
on the Cortex-M4 (loads side by side) and M7 boards: each equals the int8 reference
(tests/support/int8_reference.py) bit for bit, and each convolution is marked
`band_windows`. The weights are TFLite's symmetric int8 (no -128, which a borrow in an output
pair word would take out of int8). Each layer's estimated cycles a MAC are printed (-s).
On each board some layers loop over their output blocks outside a row's runs and some inside
(`BLOCKS_OUTSIDE_RUNS`: up to 8 channel pairs on the M4, 16 on the M7).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from glowmlir.backends.arm_dsp.banded_windows import BLOCKS_OUTSIDE_RUNS, band_window_words, pair_sums_fit
from tests.unit.test_arm_dsp_blocked_product import layers_equal_on_board
from tests.unit.test_arm_dsp_kernel_choices import build
from tests.unit.test_quantized_kernels import convolution_case

# Geometry: input, filter, strides, pads, dilations, group.
LAYERS = [
    ("window_16", ((1, 16, 7, 8), (8, 16, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1)),
    ("window_32_stride_2", ((1, 32, 8, 10), (6, 32, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 1)),
    ("window_16_stride_2", ((1, 16, 9, 9), (4, 16, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1)),
    ("window_64", ((1, 64, 4, 5), (4, 64, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1)),
    ("pointwise_32_stride_2", ((1, 32, 7, 9), (8, 32, 1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1)),
    # channel pairs that take two a step (3x3), and one step of eight with no loop back (1x1)
    ("window_12", ((1, 12, 5, 6), (4, 12, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1)),
    ("pointwise_16_stride_2", ((1, 16, 6, 8), (6, 16, 1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1)),
]


def symmetric_case(seed: int, name: str, geometry):
    """A random convolution whose weights are symmetric int8 (no level -128), as TFLite's."""
    while True:
        case = convolution_case(seed, geometry, per_channel=True, suffix=f"_{name}")
        if np.asarray(case.constants[f"w_{name}"]).min() > -128:
            return case
        seed += 1000


def test_output_pair_words_give_both_channels():
    """Each word's halfwords are 256 w[2j + 1] + w[2j] and its `SXTB16` gives w[2j]'s pair."""
    rng = np.random.default_rng(5)
    levels = rng.integers(-127, 128, (4, 6, 3, 3), dtype=np.int8)
    words = band_window_words(levels, 0, 1)  # [blocks, pairs, 1, 2, 2]
    assert words.shape == (2, 27, 1, 2, 2)
    as_bytes = words.reshape(2, 3, 3, 3, 4)  # [block, channel pair, ky, kx, bytes]
    halfwords = as_bytes.view(np.uint8).astype(np.int32)
    low = (halfwords[..., 0] | halfwords[..., 1] << 8).astype(np.int16)
    high = (halfwords[..., 2] | halfwords[..., 3] << 8).astype(np.int16)
    first, second = levels[0::2].astype(np.int32), levels[1::2].astype(np.int32)
    np.testing.assert_array_equal(low, first[:, 0::2] + 256 * second[:, 0::2])
    np.testing.assert_array_equal(high, first[:, 1::2] + 256 * second[:, 1::2])
    np.testing.assert_array_equal(as_bytes[..., 0], first[:, 0::2])
    np.testing.assert_array_equal(as_bytes[..., 2], first[:, 1::2])
    levels[1, 0, 0, 0], levels[0, 0, 0, 0] = -128, -1  # a borrow from -128 leaves int8
    assert band_window_words(levels, 0, 1) is None


def test_layers_take_both_loop_orders():
    """The layers below run both orders of a row's loops on each board (dual- and single-issue)."""
    pairs = [geometry[0][1] // 2 for _, geometry in LAYERS]
    for most in BLOCKS_OUTSIDE_RUNS:
        assert any(p <= most for p in pairs) and any(p > most for p in pairs)


@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an500"])
def test_band_windows_equal_the_reference(board):
    cases = [symmetric_case(4300 + k, name, geometry) for k, (name, geometry) in enumerate(LAYERS)]
    inputs = {name: value for case in cases for name, value in case.inputs.items()}
    bundle = build(cases, board, "")
    text = bundle.ir["glowll"]
    side_by_side = 1 if board == "mps2-an386" else 0  # the M4 issues one instruction a cycle
    banded = re.findall(r'glowll\.convolution .*microkernel = #glowll.microkernel<"arm-dsp", \{[^}]*'
                        rf'band_windows = {side_by_side}', text)
    assert len(banded) == len(cases), text
    layers_equal_on_board(bundle, board, inputs, cases, LAYERS, "band windows")


def test_sums_beyond_output_pairs_keep_the_gathered_product():
    """An odd output channel whose sums may reach 2^23 cannot share a word (the split of
    S0 + 256 S1 would lose S1): such a filter takes no band windows."""
    levels = np.zeros((2, 64, 3, 3), np.int16)
    levels[1] = 100
    assert pair_sums_fit(levels, 128)  # 576 x 100 x 128 < 2^23
    assert not pair_sums_fit(levels, 255)  # 576 x 100 x 255 > 2^23
    levels[0], levels[1] = 127, 1  # the even channel's sums do not bound it
    assert pair_sums_fit(levels, 255)
