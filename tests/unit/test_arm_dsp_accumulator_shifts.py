"""One right shift for every channel, the accumulators scaled at run time (issue 37): a
speed-first build's pointwise layer on output pair words (`layout.output_pair_filter_words`, whose
int8 bytes cannot be scaled as `uniform_shift_table` scales a filter) with a relu is requantized at
one right shift k (`select_kernels.accumulator_shift_table`, `ACCUMULATOR_RIGHT`): each channel's
accumulator shifted left by 1 + k - r at run time, then `requantization.requantize_floored`. A dead
channel (weights at their zero point) takes multiplier 0, left shift 0 and its level times 2^k as its
terms, and a blocked product skips the products of a block of two such channels
(`GatheredProduct.live_blocked_pixels`). The arithmetic on edge values against TFLite's two
roundings, then random-weight layers with dead channels (a dead block, a block of one dead
channel; unpooled and pooled globally) on the emulated M4 and M7, bit for bit against the int8 reference."""

from __future__ import annotations

import numpy as np
import pytest

import tests.unit.test_quantized_kernels as quantized_kernels
from glowmlir.backends.arm_dsp.select_kernels import ACCUMULATOR_RIGHT
from glowmlir.lowering.glowll_to_llvm import layer_kernel_name
from glowmlir.runtime.boards import run_on_board
from tests.unit.test_arm_dsp_kernel_choices import build
from tests.unit.test_arm_dsp_output_pairs import microkernels, symmetric_levels
from tests.unit.test_arm_dsp_uniform_shift import EDGE_ACCUMULATORS, floored_level, tflite_level


@pytest.mark.parametrize("offset", [-128, -1, 0, 5, 127])
def test_accumulators_scaled_at_the_layers_shift_give_tflites_levels(offset):
    """At `ACCUMULATOR_RIGHT` every right shift below it, on accumulators whose scaled double
    stays in int32 (what the selection checks), gives TFLite's level at and above the offset;
    a dead channel's numbers (multiplier 0, no left shift, terms L 2^k) give its level L."""
    rng = np.random.default_rng(3800 + offset + 128)
    shift = ACCUMULATOR_RIGHT
    multipliers = [1 << 30, (1 << 31) - 1, 1518500250] + [int(m) for m in rng.integers(1 << 30, 1 << 31, 20)]
    for right in range(shift):
        limit = (1 << 30) >> (shift - right)  # 2 f |a| < 2^31
        accumulators = [a for a in EDGE_ACCUMULATORS if abs(a) < limit] + [limit - 1, 1 - limit] + \
            [int(a) for a in rng.integers(1 - limit, limit, 100)]
        for multiplier in multipliers:
            for accumulator in accumulators:
                expected = max(tflite_level(accumulator, multiplier, right, offset), offset)
                assert max(floored_level(accumulator, multiplier, right, shift, offset), offset) == expected, \
                    (accumulator, multiplier, right)
    for level in (-128, offset, 127):
        for accumulator in (0, -(1 << 30), (1 << 30) - 1):
            assert ((((accumulator << 0) * 0) >> 32) + (level << shift)) >> shift == level


# Geometry: input, filter, strides, pads, dilations, group; the fused activation; dead channels; pool.
LAYERS = [
    # blocked (64 pairs), a pixel tail of 3: channels 2 and 3 a dead block, 5 and 15 dead beside live ones
    ("pointwise_128_relu", ((1, 128, 3, 5), (16, 128, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), "relu",
     (2, 3, 5, 15), None),
    # 32 pairs (blocked on the M7, straight int16 pairs on the M4), its first two blocks dead
    ("pointwise_64_relu", ((1, 64, 4, 4), (12, 64, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), "relu", (0, 1, 2, 3),
     None),
    # blocked in a loop over its 128 pairs, pooled globally (a pixel tail of 1): a dead block, a dead channel
    ("pointwise_256_pooled_relu", ((1, 256, 3, 3), (16, 256, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), "relu",
     (8, 9, 12), {"kind": "avg", "kernel": (3, 3), "strides": (1, 1), "pads": (0, 0, 0, 0)}),
    # no relu: the sign's rounding taken, its loaded right shifts as before
    ("pointwise_128", ((1, 128, 2, 4), (8, 128, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), None, (0, 1), None),
]


@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an500"])
def test_layers_with_scaled_accumulators_match_the_int8_reference(board, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(quantized_kernels, "levels", symmetric_levels)
        cases = [quantized_kernels.convolution_case(3810 + k, geometry, per_channel=True, activation=activation,
                                                    pool=pool, suffix=f"_{name}", dead_channels=dead)
                 for k, (name, geometry, activation, dead, pool) in enumerate(LAYERS)]
    bundle = build(cases, board, "")
    kernels = microkernels(bundle)
    paired = [True, board == "mps2-an500", True, True]  # the M4's 32-pair layer straight on int16 pairs
    assert ["output_pairs" in k for k in kernels] == paired, kernels
    assert ["accumulator_shifts" in k for k in kernels] == [p and activation == "relu" for p, (_, _, activation, *_)
                                                           in zip(paired, LAYERS, strict=True)], kernels
    run_and_compare(bundle, board, cases, [name for name, *_ in LAYERS])


# Blocked (64 or 128 pairs) on the single-issue cores too; dead channels by each fused activation:
# relu (scaled accumulators: dead blocks skip their products), clip and none (their own roundings).
DEAD_CHANNEL_LAYERS = [
    # blocks 0 and 7 dead, three dead channels beside live ones (in `dead_channel_order` three dead
    # blocks, the channels stored to their rows from the table); four full runs
    ("pointwise_128_relu_dead_blocks", ((1, 128, 4, 4), (16, 128, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), "relu",
     (0, 1, 6, 8, 11, 14, 15)),
    ("pointwise_128_clip_dead_blocks", ((1, 128, 4, 4), (16, 128, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), "clip",
     (2, 3, 9, 12, 13)),
    # a pixel tail of 3
    ("pointwise_128_dead_blocks", ((1, 128, 3, 5), (12, 128, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), None,
     (4, 5, 10, 11)),
    # every block but the last dead, a pixel tail of 1 (two blocks a step)
    ("pointwise_256_relu_one_live_block", ((1, 256, 3, 3), (8, 256, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), "relu",
     (0, 1, 2, 3, 4, 5)),
]


@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an505"])
def test_single_issue_blocked_layers_with_dead_channels_match_the_int8_reference(board, monkeypatch):
    """The M4 and M33 (single-issue: `GatheredProduct.single_issue_blocks`, outputs stored in
    turn) take the blocked products on output pair words as the M7 does, and with a relu skip a
    dead block's products (`live_blocked_pixels`): its totals the starts, which the dead
    channels' numbers (multiplier 0, left shift 0, terms L 2^k) ignore. With a clip or no
    activation the dead channels keep their neutral requantization (`neutral_requantization`)
    and their products. Random weights and inputs, bit for bit against the int8 reference."""
    with monkeypatch.context() as patch:
        patch.setattr(quantized_kernels, "levels", symmetric_levels)
        cases = [quantized_kernels.convolution_case(3830 + k, geometry, per_channel=True, activation=activation,
                                                    suffix=f"_{name}", dead_channels=dead)
                 for k, (name, geometry, activation, dead) in enumerate(DEAD_CHANNEL_LAYERS)]
    bundle = build(cases, board, "")
    kernels = microkernels(bundle)
    assert all("blocked_pixels" in k and "output_pairs" in k for k in kernels), kernels
    assert ["accumulator_shifts" in k for k in kernels] == [activation == "relu" for _, _, activation, _
                                                            in DEAD_CHANNEL_LAYERS], kernels
    # the first layer's channels reordered (`dead_channel_order`); the last's dead blocks paired already
    assert ["stored_channels" in k for k in kernels] == [True, False, False, False], kernels
    run_and_compare(bundle, board, cases, [name for name, *_ in DEAD_CHANNEL_LAYERS])


def run_and_compare(bundle, board: str, cases: list, names: list[str]) -> None:
    """Runs the bundle's layers on the board: each case's outputs equal the int8 reference's bit
    for bit; prints each layer kernel's estimated cycles."""
    functions = [layer_kernel_name(bundle.layout.entry_point, index, "convolution") for index in range(len(cases))]
    run = run_on_board(bundle, board, {name: v for case in cases for name, v in case.inputs.items()},
                       count_functions=[*functions, bundle.layout.entry_point, "main"], count_cycles=True)
    for name, case, function in zip(names, cases, functions, strict=True):
        actual = run.outputs[case.output].reshape(case.expected.shape).astype(case.expected.dtype)
        np.testing.assert_array_equal(actual, case.expected, err_msg=case.output)
        print(f"{board} {name}: {run.function_cycles[function].estimate:,} cycles")
