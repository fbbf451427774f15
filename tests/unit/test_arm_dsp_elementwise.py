"""The Arm DSP backend's elementwise microkernels of issue 42: "channel-products" (an int8 Mul
of a tensor by one level per channel, the squeeze-excitation gate) and "reciprocal-quantize"
(float to int8 without a division an element), bit-identical to the int8 reference."""

from __future__ import annotations

import numpy as np
import pytest

from glowmlir.backends.arm_dsp.reciprocal_quantize import FRACTION_BITS, estimated_levels
from glowmlir.runtime.boards import run_on_board, target_for
from tests.support import int8_reference as ref
from tests.unit.test_quantized_kernels import binary_case, build, q8, quantize_inputs, tensor

CHANNEL_PRODUCTS = 'microkernel = #glowll.microkernel<"channel-products">'
RECIPROCAL_QUANTIZE = 'microkernel = #glowll.microkernel<"reciprocal-quantize">'

QUANTIZATIONS = [(0.0625, -3), (ref.f32(0.0123), 17), (ref.f32(0.0371), 0), (ref.f32(0.0365723), -2),
                 (ref.f32(3.1e-5), 127), (ref.f32(7.77), -128), (ref.f32(0.1), 0)]
"""(scale, offset) of the quantizes under test: powers of two (exact halves), a float input's
(PP-OCR-cls-style), extreme offsets, a tiny and a coarse scale, 0.1 (1 / 0.1 inexact in f32)."""


def many_floats(seed: int, scale: float, offset: int) -> np.ndarray:
    """`quantize_inputs` and, around every half level, the 64 floats either side of it; random
    bit patterns of every exponent (subnormals, huge, both signs); uniform floats over the
    int8 range and twice it."""
    rng = np.random.default_rng(seed)
    halves = ((np.arange(-300, 300) + 0.5 - offset) * np.float64(scale)).astype(np.float32)
    around = halves.view(np.int32)[:, None] + np.arange(-64, 65, dtype=np.int32)[None, :]
    patterns = rng.integers(-2**31, 2**31, 200_000, dtype=np.int64).astype(np.int32).view(np.float32)
    patterns = patterns[~np.isnan(patterns)]
    uniform = rng.uniform(-300 * scale, 300 * scale, 400_000).astype(np.float32)
    return np.concatenate([quantize_inputs(seed, scale, offset), around.ravel().view(np.float32), patterns, uniform])


@pytest.mark.parametrize("element", QUANTIZATIONS)
def test_reciprocal_quantize_levels_are_glows_wherever_not_divided_again(element):
    """The kernel's numbers (`estimated_levels`, as it computes them: f32 multiply, f32 add of
    the offset and the grid's magic, the bits less the magic's saturated): where it does not
    quantize again by dividing, its level clamped is Glow's `nearbyint(x / scale + offset)`
    for every float tried (the ties k + 0.5 and 64 floats either side of each, random bit
    patterns of every exponent, infinities); it divides again for few inputs, among them
    every tie whose quotient lands on a half."""
    scale, offset = element
    x = many_floats(1000 + offset, scale, offset)
    expected = ref.quantize(x, scale, offset)
    level, again = estimated_levels(x, scale, offset)
    fast = np.clip(level, -128, 127).astype(np.int8)
    wrong = ~again & (fast != expected)
    assert not wrong.any(), (x[wrong][:5], fast[wrong][:5], expected[wrong][:5])
    with np.errstate(over="ignore", invalid="ignore"):
        sums = x / np.float32(scale) + np.float32(offset)
        ties = np.isfinite(sums) & (np.abs(sums) < 200) & (sums - np.floor(sums) == 0.5)
    assert ties.sum() > 100 and again[ties].all()
    uniform = x[-400_000:]
    share = estimated_levels(uniform, scale, offset)[1].mean()
    assert share < 6 / 2**FRACTION_BITS, share
    assert len(np.unique(expected)) == 256


def se_case(shape: tuple[int, ...], seed: int, suffix: str):
    """An int8 Mul of a tensor [N, C, H, W] by a gate [N, C, 1, 1] (random levels and
    quantizations, the reference's numbers)."""
    return binary_case("mul", shape, (*shape[:2], *(1,) * (len(shape) - 2)), seed, suffix=suffix)


@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an500"])
def test_channel_products_and_reciprocal_quantize_on_dsp_cores(board):
    """On the M4 and the M7, squeeze-excitation products (a tensor by one level per channel,
    the gate either operand, planes of 1 to 288 elements... a Mul of two whole tensors keeps
    the generic kernel) take "channel-products", float inputs "reciprocal-quantize" (ties,
    their neighbours, saturation, infinities, random floats), all bit-identical to the int8
    reference."""
    cases = [se_case((1, 8, 12, 24), 1100, "_se"), se_case((2, 5, 3, 7), 1101, "_batches"),
             se_case((1, 16, 1, 3), 1102, "_short")]
    swapped = binary_case("mul", (1, 6, 1, 1), (1, 6, 4, 9), 1103, suffix="_swapped")
    whole = binary_case("mul", (1, 4, 3, 5), (1, 4, 3, 5), 1104, suffix="_whole")
    cases += [swapped, whole]
    body = "".join(case.body for case in cases)
    inputs = {name: value for case in cases for name, value in case.inputs.items()}
    for i, (scale, offset) in enumerate(QUANTIZATIONS[:4]):
        x = quantize_inputs(1200 + i, scale, offset)
        inputs[f"x{i}"] = x
        x_t, y_t = tensor(x.shape, "f32"), tensor(x.shape, q8(scale, offset))
        body += f"""
  %x{i} = glow.placeholder "x{i}" : {x_t}
  %q{i} = glow.quantize %x{i} : ({x_t}) -> {y_t}
  glow.save %q{i} as "q{i}" : {y_t}"""
    bundle = build(body, target=target_for(board))
    lines = [line for line in bundle.ir["glowll"].splitlines() if "glowll.elementwise" in line]
    products = [line for line in lines if '"mul"' in line]
    assert [CHANNEL_PRODUCTS in line for line in products] == [True] * 4 + [False]
    assert sum(RECIPROCAL_QUANTIZE in line for line in lines) == 4
    outputs = run_on_board(bundle, board, inputs).outputs
    for case in cases:
        np.testing.assert_array_equal(outputs[case.output].reshape(case.expected.shape), case.expected,
                                      err_msg=case.output)
    for i, (scale, offset) in enumerate(QUANTIZATIONS[:4]):
        expected = ref.quantize(inputs[f"x{i}"], scale, offset)
        np.testing.assert_array_equal(outputs[f"q{i}"].reshape(expected.shape).astype(np.int8), expected,
                                      err_msg=f"quantize {scale}, {offset}")
