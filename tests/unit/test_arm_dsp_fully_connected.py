"""The DSP extension's FullyConnected (`backends.arm_dsp.fully_connected`) on the Cortex-M4 and
M7 boards, bit for bit against the numpy int8 reference (`int8_reference.fully_connected`):
random weights (per tensor, zero point 0, as TFLite's) and inputs (with a zero point); rows of
inputs gathered as pairs once (each step's weight words and gathered pairs loaded together,
`fully_connected.in_order`) and not; odd depths (a tail of one to three products); blocks of
four and of two outputs; with and without a fused ReLU; an anomaly-detection-sized 640 -> 128."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.support import int8_reference as ref
from tests.unit.test_arm_dsp_kernels import check_on_board
from tests.unit.test_quantized_kernels import (
    Case,
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


def dense_case(seed: int, rows: int, depth: int, columns: int, activation: str | None, suffix: str) -> Case:
    """A random int8 FullyConnected x [rows, depth] x w [depth, columns] + bias, `activation` fused."""
    rng = np.random.default_rng(seed)
    x, w = levels(rng, rows, depth), levels(rng, depth, columns)
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
