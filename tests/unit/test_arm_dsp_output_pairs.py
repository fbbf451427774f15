"""Pointwise products on output pair words (`arm_dsp.layout.output_pair_filter_words`,
`GatheredProduct.block_weights`): a speed-first build's blocked pointwise layer (and a straight
one of 16 input channel pairs or more left on int8 words by the flash budget) holds its int8
filter as words of two output channels whose halves read 256 w1 + w0, one `SXTB16` for two
`SMLAD`s, the second channel's sums split off by a shift.

Random-weight pointwise layers of visual wake words' channel counts on smaller planes (128 -> 128,
256 -> 16 pooled globally, 130 -> 12 with a relu: pixel tails of 1-3 and pair tails after the
loop's steps), per-channel symmetric filters (levels -127..127, as TFLite's), run on the M4 and
the M7: each equals the int8 reference (tests/support/int8_reference.py) bit for bit. A filter
with a level -128 in a second channel after a negative first one cannot borrow: it falls back to
int8 words, still exact. Straight layers (64 -> 64, 32 -> 14 with a relu, 8 -> 16: fewer pairs
than `OUTPUT_PAIRS_FROM`, int8 words) are built with the pass's `filter_words=output-pairs` hook.
Each layer's estimated cycles a MAC are printed (-s).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tests.unit.test_quantized_kernels as quantized_kernels
from glowmlir.backends.arm_dsp.layout import output_pair_filter_words
from glowmlir.lowering.glowll_to_llvm import layer_kernel_name
from glowmlir.runtime.boards import run_on_board
from tests.unit.test_arm_dsp_kernel_choices import build

# Geometry: input, filter, strides, pads, dilations, group; the fused activation and pool.
LAYERS = [
    ("pointwise_128", ((1, 128, 3, 5), (128, 128, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), None, None),
    ("pointwise_256_pooled", ((1, 256, 3, 3), (16, 256, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), None,
     {"kind": "avg", "kernel": (3, 3), "strides": (1, 1), "pads": (0, 0, 0, 0)}),
    ("pointwise_130_relu", ((1, 130, 2, 3), (12, 130, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), "relu", None),
]


STRAIGHT = [
    ("pointwise_64", ((1, 64, 3, 5), (64, 64, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), None, None),
    ("pointwise_32_relu", ((1, 32, 2, 3), (14, 32, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), "relu", None),
    ("pointwise_8", ((1, 8, 3, 3), (16, 8, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), None, None),
]


def symmetric_levels(rng: np.random.Generator, *shape) -> np.ndarray:
    return rng.integers(-127, 128, shape, dtype=np.int8)


def microkernels(bundle) -> list[str]:
    return re.findall(r'glowll\.convolution .*microkernel = #glowll.microkernel<"arm-dsp"(?:, \{([^}]*)\})?>',
                      bundle.ir["glowll"])


def check_layers(board: str, layers, filter_words: str, chosen: list[bool], monkeypatch) -> None:
    """`layers` (and, with the default rules, a fallback layer of int8 levels -128) built for
    `board`, their `output_pairs` markers as `chosen` says, run: the int8 reference's outputs."""
    with monkeypatch.context() as patch:
        patch.setattr(quantized_kernels, "levels", symmetric_levels)
        cases = [quantized_kernels.convolution_case(4100 + k, geometry, per_channel=True, activation=activation,
                                                    pool=pool, suffix=f"_{name}")
                 for k, (name, geometry, activation, pool) in enumerate(layers)]
    names = [name for name, *_ in layers]
    if not filter_words:  # the int8 levels as drawn: some second channel's -128 after a negative first one
        cases.append(quantized_kernels.convolution_case(4199, layers[0][1], per_channel=True, suffix="_fallback"))
        names.append("fallback")
        chosen = [*chosen, False]
    inputs = {name: value for case in cases for name, value in case.inputs.items()}
    bundle = build(cases, board, "", filter_words)
    kernels = microkernels(bundle)
    assert len(kernels) == len(cases), bundle.ir["glowll"]
    assert ["output_pairs" in k for k in kernels] == chosen, kernels
    functions = [layer_kernel_name(bundle.layout.entry_point, index, "convolution") for index in range(len(cases))]
    run = run_on_board(bundle, board, inputs, count_functions=[*functions, bundle.layout.entry_point, "main"],
                       count_cycles=True)
    for name, case, function in zip(names, cases, functions, strict=True):
        actual = run.outputs[case.output].reshape(case.expected.shape).astype(case.expected.dtype)
        np.testing.assert_array_equal(actual, case.expected, err_msg=case.output)
        macs = int(np.prod(case.inputs[next(iter(case.inputs))].shape[2:])) * int(np.prod(
            case.constants[next(iter(case.constants))].shape))
        print(f"{board} {name}: {run.function_cycles[function].estimate / macs:.3f} cycles a MAC")


@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an500"])
def test_blocked_output_pair_products_equal_the_reference(board, monkeypatch):
    check_layers(board, LAYERS, "", [True] * len(LAYERS), monkeypatch)


@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an500"])
def test_straight_output_pair_products_equal_the_reference(board, monkeypatch):
    check_layers(board, STRAIGHT, "output-pairs", [True, True, False], monkeypatch)


def test_output_pair_words_split_exactly_or_fall_back():
    rng = np.random.default_rng(4200)
    words = rng.integers(-127, 128, (3, 40, 2, 2, 2)).astype(np.int8)  # [groups, pairs, interleaved, half, channel]
    paired = output_pair_filter_words(words, 128)
    assert paired is not None and paired.dtype == np.int8
    x = rng.integers(-128, 128, (40, 2)).astype(np.int64)  # one pixel's gathered pairs
    halves = paired.view(np.uint8).astype(np.int64)
    raw = (halves[..., 0] + 256 * paired[..., 1].astype(np.int64))  # each halfword as int16: 256 w1 + w0
    first = np.einsum("ph,gpih->gi", x, words[..., 0].astype(np.int64))
    second = np.einsum("ph,gpih->gi", x, words[..., 1].astype(np.int64))
    both = np.einsum("ph,gpih->gi", x, raw)
    np.testing.assert_array_equal(both, first + 256 * second)
    np.testing.assert_array_equal(paired[..., 0], words[..., 0])
    borrowing = words.copy()
    borrowing[0, 0, 0, 0] = (-1, -128)  # 256 x -128 - 1 is not an int16
    assert output_pair_filter_words(borrowing, 128) is None
    assert output_pair_filter_words(np.full((1, 300, 2, 2, 2), 127, np.int8), 128) is None  # 600 x 127 x 128 >= 2^23
