"""Int8 filter words on the Arm DSP kernels (`arm_dsp.layout.int8_filter_words`).

A gathered product's (or a strided pointwise convolution's) filter may be kept as int8
words, 1x the model's int8 weights, each word widened into two channels' weight pairs by
`SXTB16` and `SXTB16 ror #8` (`arm_dsp.instructions.weight_pairs`), instead of int16 pairs,
2x. Random-weight layers of each kernel that reads them (straight and looped pointwise
products, windows of few and of many taps, rows of four taps, a strided pointwise row
kernel; of odd channel counts: of even ones the band windows take a strided 1x1 and a
large window, test_arm_dsp_band_windows.py) are built both ways (the pass's `filter_words` hook through
`test_arm_dsp_kernel_choices.build`) and run on the Cortex-M4 and M7
boards: both equal the int8 reference (tests/support/int8_reference.py) bit for bit, the
int8 build holds its filters as int8 words, and its constants are smaller. Each layer's
estimated cycles both ways are printed (-s): the flash budget's
`INT8_WORDS_EXTRA_CYCLES_PER_MAC` comes from them.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from glowmlir.backends.arm_dsp.select_kernels import SelectArmDspKernels
from glowmlir.errors import GlowError
from glowmlir.lowering.glowll_to_llvm import layer_kernel_name
from glowmlir.runtime.boards import run_on_board
from tests.unit.test_arm_dsp_kernel_choices import build
from tests.unit.test_quantized_kernels import convolution_case

# Geometry: input, filter, strides, pads, dilations, group.
LAYERS = [
    ("pointwise", ((1, 24, 5, 6), (16, 24, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1)),
    ("pointwise_looped", ((1, 72, 3, 3), (8, 72, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1)),
    ("pointwise_strided", ((1, 15, 7, 7), (12, 15, 1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1)),
    ("window", ((1, 3, 9, 9), (8, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1)),
    ("window_looped", ((1, 33, 4, 4), (4, 33, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1)),
    ("window_rows_of_four", ((1, 1, 12, 8), (6, 1, 3, 4), (2, 2), (1, 1, 1, 2), (1, 1), 1)),
]


def filter_storage(bundle) -> list[str]:
    """The storage type of each convolution's filter, in order."""
    text = bundle.ir["glowll"]
    return re.findall(r"glowll\.convolution %\d+, %\d+, %\d+ : [^,]*, memref<[^>]*x!quant\.uniform<(\w+)", text)


POOLED_LAYERS = [
    ("window_pooled_pixelwise", ((1, 8, 10, 10), (6, 8, 5, 5), (1, 1), (0, 0, 0, 0), (1, 1), 1)),
    ("window_average_pooled_pixelwise", ((1, 20, 7, 7), (4, 20, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1)),
]
"""Pooled windows of more than `layout.WINDOW_TAPS` taps (200 with a 2x2 max pool, 180 with a
2x2 average pool): row pairs as int16 pairs, window pairs as int8 words, their pool windows'
pixels gathered one at a time (`gathered_product.POOLED_GATHER_BYTES`)."""
ASYMMETRIC_LAYERS = [layer for layer in LAYERS if layer[0] != "pointwise_strided"] + [
    ("window_pooled", ((1, 1, 14, 14), (8, 1, 5, 5), (1, 1), (0, 0, 0, 0), (1, 1), 1)),
] + POOLED_LAYERS
"""Per-tensor filters of zero points up to +-20 over all 256 levels: less the zero point they
leave int8, so the gathered products (not the strided pointwise rows) read the model's levels
as int8 words and take the zero point times each gathered pixel's sum off its totals
(`gathered_product.GatheredProduct.window_corrections`); "window_pooled" has LeNet's first
convolution's 5x5 window of one channel and 2x2 max pool."""
POOLS = {"max": {"kind": "max", "kernel": [2, 2], "strides": [2, 2], "pads": [0, 0, 0, 0]},
         "average": {"kind": "avg", "kernel": [2, 2], "strides": [2, 2], "pads": [0, 0, 0, 0]}}


def pool_of(name: str) -> dict | None:
    return POOLS["average"] if "average_pooled" in name else POOLS["max"] if "pooled" in name else None


@pytest.mark.parametrize("symmetric", [True, False], ids=["symmetric", "asymmetric"])
@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an500"])
def test_int8_filter_words_equal_the_reference(board, symmetric):
    layers = LAYERS + POOLED_LAYERS if symmetric else ASYMMETRIC_LAYERS
    cases = [convolution_case(3700 + k, geometry, per_channel=symmetric, suffix=f"_{name}", pool=pool_of(name))
             for k, (name, geometry) in enumerate(layers)]
    inputs = {name: value for case in cases for name, value in case.inputs.items()}
    cycles, constants = {}, {}
    for words in ("", "int8"):
        bundle = build(cases, board, "", words)
        text = bundle.ir["glowll"]
        kernels = re.findall(r"glowll\.convolution (%\d+),.*microkernel = #glowll.microkernel<\"arm-dsp\"", text)
        assert len(kernels) == len(cases), text
        storage = re.findall(r'glowll\.weight "w_\w+_arm_dsp" .*!quant\.uniform<(\w+):', text)
        assert not words or storage == ["i8"] * len(cases), text  # else as the default budget packs them
        if words and not symmetric:  # the model's levels, their zero point kept
            zeros = re.findall(r'glowll\.weight "w_\w+_arm_dsp" .*!quant\.uniform<i8:f32, [^:>]*:(-?\d+)>', text)
            assert len(zeros) == len(cases) and any(zero != "0" for zero in zeros), text
        functions = [layer_kernel_name(bundle.layout.entry_point, index, "convolution") for index in range(len(cases))]
        run = run_on_board(bundle, board, inputs, count_functions=[*functions, bundle.layout.entry_point, "main"],
                           count_cycles=True)
        for case in cases:
            actual = run.outputs[case.output].reshape(case.expected.shape).astype(case.expected.dtype)
            np.testing.assert_array_equal(actual, case.expected, err_msg=f"{words or 'int16'}: {case.output}")
        cycles[words] = [run.function_cycles[function].estimate for function in functions]
        constants[words] = bundle.layout.constant_size
        print(bundle.ir["glowll"])
    for (name, _), int16, int8 in zip(layers, cycles[""], cycles["int8"]):
        print(f"{board} {name}: int16 pairs {int16:,.0f} cycles, int8 words {int8:,.0f} ({int8 / int16 - 1:+.1%})")
    assert constants["int8"] < constants[""], constants


def test_an_unknown_filter_words_value_is_one_line():
    with pytest.raises(GlowError, match=r"^glowll-select-arm-dsp-kernels\{filter-words=int4\}: expected int8 \(int8 "
                                        r"filter words wherever a kernel reads them\), output-pairs \(output pair "
                                        r"words where they can be, else int8 words\) or nothing$"):
        SelectArmDspKernels(filter_words="int4").apply(Context(), ModuleOp([]))
