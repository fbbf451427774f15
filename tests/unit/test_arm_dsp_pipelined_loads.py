"""Straight gathered products on a single-issue core (`arm_dsp.gathered_product.PIPELINED_LOADS`):
on int16 pairs, each pair's two weight words and the first pixel pair's two words are four `LDR`s
in a row, which the Cortex-M4 and M33 pipeline; and blocked products there
(`GatheredProduct.blocked_pixels` without `weights_ahead`) take pixels 0 and 2 with the weight
word, then 1 and 3, and store their outputs one after the other.

Random-weight layers that take them (pointwise of 2, 16 and 32 input channel pairs, per tensor
and per channel with a relu, pixel counts not a multiple of four so that the run's tails take
the other orders; visual wake words' stem-like 3x3 window of stride 2 on 3 channels; a blocked
pointwise layer of 40 pairs) are built for the M4, the M33 and the M7 and run there: each equals
the int8 reference (tests/support/int8_reference.py) bit for bit, and each straight layer is
marked `pipelined_loads` on the single-issue cores only. Each layer's estimated cycles a MAC are
printed (-s).
"""

from __future__ import annotations

import re

import pytest

from tests.unit.test_arm_dsp_blocked_product import layers_equal_on_board
from tests.unit.test_arm_dsp_kernel_choices import build
from tests.unit.test_quantized_kernels import convolution_case

# Geometry: input, filter, strides, pads, dilations, group; per channel (with a relu).
STRAIGHT = [
    ("pointwise_4", ((1, 4, 3, 5), (6, 4, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), False),
    ("pointwise_32", ((1, 32, 3, 6), (10, 32, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), True),
    ("pointwise_64", ((1, 64, 2, 7), (8, 64, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), False),
    ("window_3_stride_2", ((1, 3, 9, 9), (8, 3, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 1), True),
]
BLOCKED = [("pointwise_80", ((1, 80, 3, 5), (6, 80, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), True)]

SINGLE_ISSUE_BOARDS = ("mps2-an386", "mps2-an505")


@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an505", "mps2-an500"])
def test_pipelined_loads_equal_the_reference(board):
    layers = STRAIGHT + BLOCKED
    cases = [convolution_case(4700 + k, geometry, per_channel=per_channel,
                              activation="relu" if per_channel else None, suffix=f"_{name}")
             for k, (name, geometry, per_channel) in enumerate(layers)]
    bundle = build(cases, board, "")
    parameters = re.findall(r'glowll\.convolution .*microkernel = #glowll.microkernel<"arm-dsp", \{([^}]*)\}',
                            bundle.ir["glowll"])
    assert len(parameters) == len(cases), bundle.ir["glowll"]
    straight, blocked = parameters[:len(STRAIGHT)], parameters[len(STRAIGHT):]
    assert all(("pipelined_loads" in marked) == (board in SINGLE_ISSUE_BOARDS) for marked in straight), straight
    assert all("blocked_pixels" in marked and "pipelined_loads" not in marked for marked in blocked), blocked
    layers_equal_on_board(bundle, board, {name: value for case in cases for name, value in case.inputs.items()},
                          cases, [(name, geometry) for name, geometry, _ in layers], "int16 pairs")
