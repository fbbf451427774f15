"""`glowll-fold-constant-channels`: dead output channels (a filter scale of 1e-8, a bias near 2^30
in its units, as visual wake words' pointwise layers hold) have one level for every input; the
pass gives them weights 0 and their least bias, so that the layer's accumulators fit the
one-multiply requantization (`narrow_requantization`).

Random-weight per-channel pointwise layers of visual wake words' channel counts on small planes
(odd pixel counts; a relu, none), a quarter of their channels dead, run on the M4 and the M7:
the outputs equal the int8 reference (tests/support/int8_reference.py) bit for bit, and each
layer is narrow. The least bias is checked against every accumulator around it in numpy. On
the DSP kernels each dead channel's requantization is the neutral one (`neutral_requantization`,
shift 0), so that no right shift keeps the output offset out of the rounding terms; a relu layer
whose accumulators are scaled at run time gives them multiplier and left shift 0.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from glowmlir.lowering.requantization import ACCUMULATOR_SHIFTS
from glowmlir.runtime.boards import run_on_board
from glowmlir.transforms.fold_constant_channels import NEUTRAL_MULTIPLIER, channel_levels, least_biases
from tests.support import int8_reference as ref
from tests.unit.test_arm_dsp_kernel_choices import build
from tests.unit.test_quantized_kernels import (
    Case,
    convolution_text,
    offset,
    q8,
    q8_channels,
    q32_channels,
    scale,
    spread_scale,
    tensor,
)

LAYERS = [  # input shape, output channels, activation
    ("dead_128", (1, 128, 3, 5), 128, None),
    ("dead_64_relu", (1, 64, 3, 3), 64, "relu"),
]


def dead_channel_case(seed: int, name: str, x_shape, out_c: int, activation: str | None) -> Case:
    """A per-channel 1x1 convolution whose every fourth channel is dead: random levels, a bias
    of +-(2^30 .. 2^30 + 2^24) and the filter scale (about 1e-8) that puts it at a random
    level (-8 .. 8) and a quarter (its products move it by less than a tenth of a level): its
    least bias is below 2^30."""
    rng = np.random.default_rng(seed)
    geometry = (x_shape, (out_c, x_shape[1], 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1)
    x_levels = rng.integers(-128, 128, x_shape, dtype=np.int8)
    w_levels = rng.integers(-127, 128, geometry[1], dtype=np.int8)
    x_type = (scale(rng), offset(rng, 60))
    dead = np.arange(out_c) % 4 == 1
    w_scales = np.array([scale(rng) for _ in range(out_c)], np.float32)
    bias = rng.integers(-5000, 5001, out_c).astype(np.int64)
    bias[dead] = rng.integers(2**30, 2**30 + 2**24, dead.sum())
    w_offsets = np.zeros(out_c, np.int64)
    live = ref.conv2d_accumulators(x_levels, w_levels, bias.astype(np.int32), x_type[1], w_offsets, *geometry[2:])
    reals = (live * (np.float32(x_type[0]) * w_scales)[None, :, None, None].astype(np.float64))[:, ~dead]
    out_type = (spread_scale(reals), offset(rng))
    targets = rng.integers(-8, 9, dead.sum()) + 0.25  # levels from the offset
    w_scales[dead] = targets * out_type[0] / (x_type[0] * bias[dead])
    w_scales[dead] = np.abs(w_scales[dead])
    bias[dead] = np.abs(bias[dead]) * np.sign(targets)
    bias = bias.astype(np.int32)
    bias_scales = (np.float32(x_type[0]) * w_scales).astype(np.float32)
    expected = ref.conv2d(x_levels, w_levels, bias, x_type, w_scales, w_offsets, out_type, *geometry[2:],
                          activation)
    types = (tensor(x_shape, q8(*x_type)), tensor(geometry[1], q8_channels(w_scales)),
             tensor((out_c,), q32_channels(bias_scales)), tensor(expected.shape, q8(*out_type)))
    body, (x, w, b, y) = convolution_text(f"_{name}", types, geometry, activation, None)
    return Case(body, {x: x_levels}, {w: w_levels, b: bias}, y, expected)


@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an500"])
def test_dead_channels_fold_and_equal_the_reference(board):
    cases = [dead_channel_case(4300 + k, *layer) for k, layer in enumerate(LAYERS)]
    bundle = build(cases, board, "")
    convolutions = re.findall(r"glowll\.convolution .*", bundle.ir["glowll"])
    assert len(convolutions) == len(cases) and all("narrow_requantization" in c for c in convolutions), convolutions
    # the dead channels' requantization made neutral (`neutral_requantization`): every right shift then
    # small enough for the output offset to join the rounding terms (`table_rights_fold`)
    tables = [data for name, _, data in bundle.layout.weights if name.endswith("_requantization")]
    assert len(tables) == len(cases)
    for table, convolution, (_, _, out_c, _) in zip(tables, convolutions, LAYERS, strict=True):
        rows = np.asarray(table).reshape(-1, out_c)
        multipliers, shifts = rows[:2]
        dead = np.arange(out_c) % 4 == 1
        if ACCUMULATOR_SHIFTS in convolution:
            # a relu layer on output pair words scales its accumulators at run time
            # (`accumulator_shift_table`): a dead channel's multiplier and left shift are 0 (its
            # level is its rounding term), its channels perhaps reordered (dead ones paired)
            zeros = multipliers == 0
            assert zeros.sum() == dead.sum() and np.all(shifts[zeros] & 0xFF == 0)
            continue
        assert np.all(multipliers[dead] == NEUTRAL_MULTIPLIER)
        # on a single-issue core a relu layer's channels may share one right shift (a table of
        # three rows: `arm_dsp.select_kernels.uniform_shift_table`), else a dead channel's is 0
        assert (len(set(shifts.tolist())) == 1) if len(rows) == 3 else np.all(shifts[dead] == 0)
        assert -shifts.min() <= 22
    inputs = {name: value for case in cases for name, value in case.inputs.items()}
    run = run_on_board(bundle, board, inputs)
    for case in cases:
        actual = run.outputs[case.output].reshape(case.expected.shape).astype(case.expected.dtype)
        np.testing.assert_array_equal(actual, case.expected, err_msg=case.output)


def test_least_biases_are_the_nearest_to_zero():
    rng = np.random.default_rng(4399)
    multipliers = rng.integers(2**30, 2**31, 64)
    shifts = rng.integers(-12, -3, 64)
    reached = rng.integers(-(2**20), 2**20, 64)
    offset_, bounds = -3, (-128, 127)
    levels = channel_levels(reached, multipliers, shifts, offset_, bounds)
    least = least_biases(levels, reached, multipliers, shifts, offset_, bounds)
    np.testing.assert_array_equal(channel_levels(least, multipliers, shifts, offset_, bounds), levels)
    assert np.all(np.abs(least) <= np.abs(reached))
    nearer = least - np.sign(least)  # one step toward 0 leaves the level (or is 0, whose level differs)
    moved = least != 0
    assert np.all(channel_levels(nearer, multipliers, shifts, offset_, bounds)[moved] != levels[moved])
