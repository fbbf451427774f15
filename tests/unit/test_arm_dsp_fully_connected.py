"""The DSP extension's FullyConnected (`backends.arm_dsp.fully_connected`) on the Cortex-M4 and
M7 boards, bit for bit against the numpy int8 reference (`int8_reference.fully_connected`):
random weights (per tensor, zero point 0, as TFLite's) and inputs (with a zero point); rows of
inputs gathered as pairs once (each step's weight words and gathered pairs loaded together,
`fully_connected.in_order`) and not; odd depths (a tail of one to three products); blocks of
four and of two outputs; with and without a fused ReLU; an anomaly-detection-sized 640 -> 128.
The weight layouts of gathered rows (output pair words, int16 weight pairs and the fallbacks
between them) the same way, and which one each layer takes within the default budget and
within a `-flash-size`."""

from __future__ import annotations

import re

import numpy as np
import pytest

from glowmlir.backends.arm_dsp.flash_budget import CODE_BUDGET, DEFAULT_CONSTANT_RATIO
from glowmlir.runtime.boards import run_on_board, target_for
from tests.support import int8_reference as ref
from tests.unit.test_arm_dsp_kernels import check_on_board
from tests.unit.test_quantized_kernels import (
    Case,
    build,
    fully_connected_body,
    levels,
    offset,
    q8,
    q32,
    scale,
    spread_scale,
    tensor,
)

# (rows, depth, columns, fused activation): gathered rows (more than `FC_GATHER_BLOCKS` blocks) of
# depth 640 (the anomaly detector's first layer), 130 and 23 (tails of two and three), 68 (none);
# 22 outputs are blocks of two; 12 outputs (three blocks of four) and 9 (blocks of one) are not gathered;
# 68 and 163 inputs (17 and 40 runs of four) leave runs after the last loop step (`FC_STEPS`).
LAYERS = [(1, 640, 128, "relu"), (1, 130, 68, "relu"), (1, 68, 36, None), (2, 23, 22, "relu"), (3, 37, 12, None),
          (1, 129, 9, "relu"), (1, 163, 20, "relu")]


def dense_case(seed: int, rows: int, depth: int, columns: int, activation: str | None, suffix: str,
               weights=None) -> Case:
    """A random int8 FullyConnected x [rows, depth] x w [depth, columns] + bias, `activation` fused
    (`weights(rng, depth, columns)`: the weights, default any levels)."""
    rng = np.random.default_rng(seed)
    x, w = levels(rng, rows, depth), (weights or (lambda r, *shape: levels(r, *shape)))(rng, depth, columns)
    bias = rng.integers(-5000, 5001, columns).astype(np.int32)
    x_type, w_type = (scale(rng), offset(rng, 60)), (scale(rng), 0)
    bias_scale = ref.f32(np.float32(x_type[0]) * np.float32(w_type[0]))
    acc = (x.astype(np.int64) - x_type[1]) @ w.astype(np.int64) + bias
    out_type = (spread_scale(acc * np.float64(bias_scale)), offset(rng))
    expected = ref.fully_connected(x, w, bias, x_type, w_type, out_type, activation)
    x_t, w_t = tensor(x.shape, q8(*x_type)), tensor(w.shape, q8(*w_type))
    b_t, y_t = tensor((columns,), q32(bias_scale)), tensor((rows, columns), q8(*out_type))
    body = fully_connected_body(x_t, w_t, b_t, y_t, activation)
    body = re.sub(r'(%|")([xwby])\b', rf"\1\2{suffix}", body)
    return Case(body, {f"x{suffix}": x}, {f"w{suffix}": w, f"b{suffix}": bias}, f"y{suffix}", expected)


def test_cases_are_not_trivial():
    """The ReLU cases clamp some outputs and pass others (the fused activation is exercised)."""
    for index, layer in enumerate(LAYERS):
        case = dense_case(3700 + index, *layer, f"_{index}")
        assert len(np.unique(case.expected)) >= min(10, case.expected.size // 2), case.output
        if layer[3] == "relu":
            plain = dense_case(3700 + index, *layer[:3], None, f"_{index}")
            assert (plain.expected < case.expected).any() and (plain.expected == case.expected).any()


@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an500"])
def test_fully_connected_matches_the_int8_reference_on_boards(board):
    check_on_board([dense_case(3700 + index, *layer, f"_{index}") for index, layer in enumerate(LAYERS)], board)


# Output pairs and int16 weight pairs (`fully_connected.OUTPUT_PAIRS`, `WEIGHT_PAIRS`): symmetric weights
# ([-127, 127], as TFLite's) lay out as output pair words (blocks of four and of two, tails of one to three
# inputs); weights of -128 after a negative level (a borrowed byte leaving int8), nine outputs (blocks of one,
# gathered) and sums too large for a pair (1500 inputs of 127) do not, and take int16 weight pairs where the
# constants' budget leaves room (1.25x).
PAIRED_LAYERS = {"output_pairs_640": ((1, 640, 128, "relu"), "symmetric"),
                 "output_pairs_tail3": ((2, 23, 22, None), "symmetric"),
                 "output_pairs_tail1": ((1, 129, 20, "relu"), "symmetric"),
                 "weight_pairs_borrow_leaves_int8": ((1, 68, 36, None), "borrow"),
                 "weight_pairs_odd_outputs": ((1, 37, 9, "relu"), "symmetric"),
                 "weight_pairs_large_sums": ((1, 1500, 16, None), "large")}


def paired_weights(kind):
    """Weights [depth, columns] for `dense_case`: symmetric, with a borrowed byte leaving int8, or large."""
    def weights(rng, depth, columns):
        if kind == "large":
            return rng.choice(np.array([-127, 127], np.int8), (depth, columns))
        w = rng.integers(-127, 128, (depth, columns)).astype(np.int8)
        if kind == "borrow":
            w[::3, 0::2], w[::3, 1::2] = -1, -128  # output 2p+1's -128 after output 2p's negative level
        return w
    return weights


def test_pair_layouts_match_the_int8_reference_on_boards():
    """Each layout on the M4 and the M7, bit for bit; the layers take the variant the table says,
    the constants within the default budget (1.25x the int8 ones, the M3 build's)."""
    cases = [dense_case(3800 + index, *layer, f"_{name}", paired_weights(kind))
             for index, (name, (layer, kind)) in enumerate(PAIRED_LAYERS.items())]
    int8_bytes = build("".join(case.body for case in cases),
                       {name: value for case in cases for name, value in case.constants.items()},
                       target=target_for("mps2-an385")).layout.constant_size
    for board in ("mps2-an386", "mps2-an500"):
        bundle = check_on_board(cases, board)
        assert int8_bytes < bundle.layout.constant_size <= DEFAULT_CONSTANT_RATIO * int8_bytes
        glowll_ir = bundle.ir["glowll"]
        for name, ((_, depth, columns, _), _) in PAIRED_LAYERS.items():
            line = next(line for line in glowll_ir.splitlines()  # by its weights' shape [columns, depth]
                        if "glowll.fully_connected" in line and f"memref<{columns}x{depth}x" in line)
            expected = "output_pairs" if name.startswith("output_pairs") else "weight_pairs" \
                if name.startswith("weight_pairs") else None
            for parameter in ("output_pairs", "weight_pairs"):
                assert (parameter in line) == (parameter == expected), (name, line)


def test_flash_size_chooses_the_weight_pairs_that_fit():
    """With -flash-size leaving room for the small layers' int16 pairs but not the 1500-input one's
    (24,000 B more), the small ones take them, the large one its int8 words, and the constants
    stay within the flash less the code's budget; outputs bit for bit on the M4."""
    cases = [dense_case(3800 + index, *layer, f"_{name}", paired_weights(kind))
             for index, (name, (layer, kind)) in enumerate(PAIRED_LAYERS.items()) if name.startswith("weight_pairs")]
    body = "".join(case.body for case in cases)
    constants = {name: value for case in cases for name, value in case.constants.items()}
    int8_bytes = build(body, constants, target=target_for("mps2-an385")).layout.constant_size  # generic: as stored
    flash = CODE_BUDGET + int8_bytes + 8192
    bundle = build(body, constants, target=target_for("mps2-an386"), flash_size=flash)
    assert int8_bytes < bundle.layout.constant_size <= flash - CODE_BUDGET
    lines = [line for line in bundle.ir["glowll"].splitlines() if "glowll.fully_connected" in line]
    assert [("weight_pairs" in line, "memref<16x1500x" in line) for line in lines].count((True, False)) == 2
    assert not any("weight_pairs" in line for line in lines if "memref<16x1500x" in line)
    outputs = run_on_board(bundle, "mps2-an386", {n: v for case in cases for n, v in case.inputs.items()}).outputs
    for case in cases:
        np.testing.assert_array_equal(outputs[case.output].reshape(case.expected.shape), case.expected)


def test_size_first_build_takes_output_pairs():
    """A size-first build (-Os on the M4: one run of four a loop step) takes output pair words too, bit
    for bit, and no int16 weight pairs."""
    cases = [dense_case(3900 + index, *layer, f"_{name}", paired_weights(kind))
             for index, (name, (layer, kind)) in enumerate(PAIRED_LAYERS.items()) if kind == "symmetric"]
    body = "".join(case.body for case in cases)
    bundle = build(body, {name: value for case in cases for name, value in case.constants.items()},
                   target=target_for("mps2-an386", "Os"))
    lines = [line for line in bundle.ir["glowll"].splitlines() if "glowll.fully_connected" in line]
    assert sum("output_pairs" in line for line in lines) == 3 and not any("weight_pairs" in line for line in lines)
    outputs = run_on_board(bundle, "mps2-an386", {n: v for case in cases for n, v in case.inputs.items()}).outputs
    for case in cases:
        np.testing.assert_array_equal(outputs[case.output].reshape(case.expected.shape), case.expected)
