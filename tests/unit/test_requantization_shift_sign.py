"""Per-channel requantization tables whose shifts share a sign (`quantized_kernels.table_shift_sign`):
the loaded shift is known to have that sign (`llvm.assume`), so that LLVM drops the shift no channel takes (per-channel
int8 layers: no left shift per output). Bit for bit against the int8 reference on the Cortex-M4 and
M7 for depthwise convolutions (stride 1 and 2, padded and not, odd channel counts, a channel
multiplier of 2, a plane in bands, a 24 x 24 plane whole) whose shifts are all right ones, all left ones, or mixed."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from xdsl.dialects.builtin import MemRefType, i32
from xdsl.ir import Block

from glowmlir.dialects import glowll
from glowmlir.dialects.weights import dense_from_array
from glowmlir.lowering import quantized_kernels
from glowmlir.runtime.boards import run_on_board, target_for
from tests.unit.test_arm_dsp_kernels import build
from tests.unit.test_quantized_kernels import convolution_case

QEMU = shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")


def table(shifts: list[int]):
    """A [2, channels] requantization weight (multipliers, then `shifts`)."""
    values = np.array([[1 << 30] * len(shifts), shifts], np.int32)
    return glowll.WeightOp("requantization", MemRefType(i32, list(values.shape)), dense_from_array(values)).buffer


@pytest.mark.parametrize("shifts,sign", [([-3, 0, -7], -1), ([0, 0], -1), ([2, 0, 5], 1), ([-1, 1], 0)])
def test_the_shift_sign_of_a_constant_table(shifts, sign):
    assert quantized_kernels.table_shift_sign(table(shifts)) == sign


def test_a_table_not_constant_has_no_sign():
    argument = Block(arg_types=[MemRefType(i32, [2, 3])]).args[0]
    assert quantized_kernels.table_shift_sign(argument) == 0


# (input NCHW, filter OIHW, strides, pads, dilations, group): stride 1 and 2, padded and unpadded,
# odd channel counts, a channel multiplier of 2, a plane copied in bands (more than
# `arm_dsp.PLANE_BYTES` widened) and a 24 x 24 one copied whole.
DEPTHWISE = {
    "s1_pad1_c3": ((1, 3, 9, 11), (3, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 3),
    "s2_pad1_c5": ((1, 5, 12, 12), (5, 1, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 5),
    "s2_unpadded_c4": ((1, 4, 9, 13), (4, 1, 3, 3), (2, 2), (0, 0, 0, 0), (1, 1), 4),
    "s1_multiplier2": ((1, 3, 6, 7), (6, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 3),
    "s1_bands_c2": ((1, 2, 40, 40), (2, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2),
    "s2_whole_24x24_c3": ((1, 3, 24, 24), (3, 1, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 3),
}
OUTPUT_SCALES = {"right": 64.0, "left": 1 / 4096, "mixed": None}
"""The output scale in accumulator units (channel 0's): large, every multiplier below 1 (right
shifts); small, every one above (left shifts); spread over the outputs, of either sign."""


@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an500"])
def test_depthwise_with_shifts_of_one_sign_matches_the_int8_reference(board, monkeypatch):
    signs = []
    original = quantized_kernels.table_shift_sign
    monkeypatch.setattr(quantized_kernels, "table_shift_sign", lambda t: signs.append(original(t)) or signs[-1])
    cases = [convolution_case(3700 + 5 * index + kind_index, geometry, per_channel=True, activation="relu",
                              output_scale=scale, suffix=f"_{name}_{kind}")
             for index, (name, geometry) in enumerate(DEPTHWISE.items())
             for kind_index, (kind, scale) in enumerate(OUTPUT_SCALES.items())]
    body = "".join(case.body for case in cases)
    bundle = build(body, {name: value for case in cases for name, value in case.constants.items()},
                   target=target_for(board))
    outputs = run_on_board(bundle, board, {name: v for case in cases for name, v in case.inputs.items()}).outputs
    for case in cases:
        actual = outputs[case.output].reshape(case.expected.shape).astype(case.expected.dtype)
        np.testing.assert_array_equal(actual, case.expected, err_msg=case.output)
    assert {-1, 1} <= set(signs)  # both one-sign forms were compiled (and checked above)
