"""The output zero point inside each channel's rounding term (`requantize_narrow`'s `shift_folds`,
`quantized_kernels.table_rights_fold`): where every right shift r of a constant per-channel table
keeps |offset| * 2^r + 2^(r - 1) within 2^30 (the sum stays in int32), the offset joins the
rounding term made once a channel instead of being added to each output. Bit for bit against
the int8 reference on the Cortex-M4 and M7 for per-channel depthwise, pointwise and few-channel
stem convolutions, with a relu (no sign term) and without (the sign term), at random output
zero points, and tables of shifts too far to the right (not folded)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from xdsl.dialects.builtin import MemRefType, i32
from xdsl.ir import Block

from glowmlir.backends.arm_dsp import select_kernels
from glowmlir.dialects import glowll
from glowmlir.dialects.weights import dense_from_array
from glowmlir.lowering import quantized_kernels
from tests.unit.test_arm_dsp_kernels import check_on_board
from tests.unit.test_quantized_kernels import convolution_case

QEMU = shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")


def table(shifts: list[int]):
    """A [2, channels] requantization weight (multipliers, then `shifts`)."""
    values = np.array([[1 << 30] * len(shifts), shifts], np.int32)
    return glowll.WeightOp("requantization", MemRefType(i32, list(values.shape)), dense_from_array(values)).buffer


@pytest.mark.parametrize("shifts,offset,folds", [
    ([-3, 0, -7], -128, True), ([-22, -1], -128, True), ([-23, -2], -128, False), ([-21, 0], 256, True),
    ([-22, 0], 256, False), ([-31, -5], 0, True), ([2, 0, 5], 127, True), ([-3, -1], None, False)])
def test_the_rights_of_a_constant_table_fold_at_an_offset(shifts, offset, folds):
    """|offset| * 2^right + 2^(right - 1) at most 2^30 for every channel's right shift."""
    assert quantized_kernels.table_rights_fold(table(shifts), offset) is folds


def test_a_table_not_constant_does_not_fold():
    argument = Block(arg_types=[MemRefType(i32, [2, 3])]).args[0]
    assert quantized_kernels.table_rights_fold(argument, -128) is False


# (input NCHW, filter OIHW, strides, pads, dilations, group): depthwise of stride 1 and 2, a
# pointwise layer of 8 -> 16 channels (the straight gathered product) and a 3-channel stem.
GEOMETRIES = {
    "dw_s1": ((1, 5, 9, 11), (5, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 5),
    "dw_s2": ((1, 4, 12, 12), (4, 1, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 4),
    "pw_8_16": ((1, 8, 6, 10), (16, 8, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "stem_3_8": ((1, 3, 12, 12), (8, 3, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 1),
}
KINDS = {"relu_spread": ("relu", None), "none_spread": (None, None), "relu_far": ("relu", 2.0**28)}
"""The activation and the output scale in accumulator units: spread over the outputs (shifts of
a few bits, the table folds), or 2^28 (shifts of some 28 bits to the right: at an offset beyond
3 the term would leave int32, the offset is added to each output as before). At 2^28 these small
layers' channels are constant, so `glowll-fold-constant-channels` zeroes their weights and the
selection pass would give them the neutral requantization (shift 0, `neutral_requantization`):
the test keeps their far shifts, as a live channel of a layer whose sums reach 2^28 has them."""


@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an500"])
def test_per_channel_layers_with_the_offset_folded_match_the_int8_reference(board, monkeypatch):
    monkeypatch.setattr(select_kernels, "neutral_requantization", lambda op, rewriter: None)
    folds = []
    original = quantized_kernels.table_rights_fold
    monkeypatch.setattr(quantized_kernels, "table_rights_fold", lambda t, o: folds.append(original(t, o)) or folds[-1])
    cases = [convolution_case(4100 + 7 * index + kind_index, geometry, per_channel=True, activation=activation,
                              output_scale=scale, suffix=f"_{name}_{kind}")
             for index, (name, geometry) in enumerate(GEOMETRIES.items())
             for kind_index, (kind, (activation, scale)) in enumerate(KINDS.items())]
    check_on_board(cases, board)
    for case in cases:
        assert len(np.unique(case.expected)) > 2 or "far" in case.output, case.output  # outputs of many levels
    assert {True, False} <= set(folds)  # both forms were compiled (and checked above)
