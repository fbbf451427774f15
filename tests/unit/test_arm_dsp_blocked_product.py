"""The blocked gathered product (`arm_dsp.gathered_product.BLOCKED_PIXELS`): a speed-first build's
gathered product of more pairs than `UNROLLED_PAIRS` multiplies runs of four pixels by each block
of two output channels in one loop over the pairs (eight accumulators), on int8 filter words or
int16 pairs.

Random-weight layers that take it (3x3 windows of stride 1 and 2, padded, of odd input channel
counts (of even ones, the band windows take them: test_arm_dsp_band_windows.py), a pointwise
layer; pixel counts not a multiple of four and pair counts not a multiple of the loop's step,
so that the tails run too) are built with int8 filter words (the pass's
`filter_words` hook) and run on the Cortex-M4 and M7 boards, and with int16 pairs on both (output
pair words: test_arm_dsp_output_pairs.py, on both boards): each equals the int8 reference
(tests/support/int8_reference.py) bit for bit, and each convolution is marked `blocked_pixels`, on
the dual-issue M7 with `weights_ahead` too (each pair's weight words loaded during the pair before,
`gathered_product.WEIGHTS_AHEAD`), on the M4 without. Each layer's estimated cycles a MAC are
printed (-s).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from glowmlir.lowering.glowll_to_llvm import layer_kernel_name
from glowmlir.runtime.boards import run_on_board
from tests.unit.test_arm_dsp_kernel_choices import build
from tests.unit.test_quantized_kernels import convolution_case

# Geometry: input, filter, strides, pads, dilations, group.
LAYERS = [
    ("window_15", ((1, 15, 6, 7), (8, 15, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1)),
    ("window_17_stride_2", ((1, 17, 9, 9), (6, 17, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 1)),
    ("window_33", ((1, 33, 5, 5), (4, 33, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1)),
    ("pointwise_90", ((1, 90, 3, 5), (10, 90, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1)),
]


@pytest.mark.parametrize(("board", "words"), [("mps2-an386", "int8"), ("mps2-an500", "int8"), ("mps2-an386", ""),
                                              ("mps2-an500", "")])
def test_blocked_products_equal_the_reference(board, words):
    cases = [convolution_case(3900 + k, geometry, per_channel=True, suffix=f"_{name}")
             for k, (name, geometry) in enumerate(LAYERS)]
    inputs = {name: value for case in cases for name, value in case.inputs.items()}
    bundle = build(cases, board, "", words)
    text = bundle.ir["glowll"]
    blocked = re.findall(r'glowll\.convolution .*microkernel = #glowll.microkernel<"arm-dsp", '
                         r'\{([^}]*blocked_pixels[^}]*)', text)
    assert len(blocked) == len(cases), text
    assert all(("weights_ahead" in parameters) == (board == "mps2-an500") for parameters in blocked), blocked
    layers_equal_on_board(bundle, board, inputs, cases, LAYERS, words or "int16 pairs")


def layers_equal_on_board(bundle, board: str, inputs: dict, cases: list, layers: list, label: str) -> None:
    """Runs a bundle of one convolution a case on `board`: each output equals its int8
    reference bit for bit; prints each layer's estimated cycles a MAC."""
    functions = [layer_kernel_name(bundle.layout.entry_point, index, "convolution") for index in range(len(cases))]
    run = run_on_board(bundle, board, inputs, count_functions=[*functions, bundle.layout.entry_point, "main"],
                       count_cycles=True)
    for (name, geometry), case, function in zip(layers, cases, functions, strict=True):
        actual = run.outputs[case.output].reshape(case.expected.shape).astype(case.expected.dtype)
        np.testing.assert_array_equal(actual, case.expected, err_msg=case.output)
        macs = int(np.prod(case.expected.shape)) * int(np.prod(geometry[1][1:]))
        cycles = run.function_cycles[function].estimate
        print(f"{board} {label} {name}: {cycles / macs:.3f} cycles a MAC")
