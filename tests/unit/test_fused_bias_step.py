"""The host int8 1x1's bias in its fused float step (`bias_in_step`, issue 42).

Where the target has FMA and a per-tensor int8 1x1 (`vector-pointwise-int8`) has a proved
`float_step` whose relu clamps at or above the output zero point,
`select_int8_pointwise.fuse_bias_into_step` replaces its bias by one single per channel
(`float_steps.fused_bias_offsets`): the kernel's sums start at 0 and its level is
rint(fma(f32(sum), scale, c)) (`requantization.fused_step_levels`). The proof against every
accumulator of small layers; its refusals (no relu, a clip below the zero point, per-channel
layers, no FMA); and the kernel on random levels and weights (odd pixel counts, partial
vectors, two images, tiles of one and two vectors of pixels, a 1x1 plane), bit for bit the
independent int8 reference's outputs (tests/support/int8_reference.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from glowmlir.quantization.float_steps import (
    FloatStep,
    float_step,
    fused_bias_offsets,
    fused_levels,
    tflite_levels,
)
from glowmlir.target import HOST
from glowmlir.targets import resolve_target
from tests.unit.test_quantized_kernels import build, convolution_case, pointwise

needs_fma = pytest.mark.skipif(HOST.vector_tile is None or not HOST.vector_tile.masked_loads
                               or "+fma" not in HOST.feature_list, reason="the host has no AVX2 and FMA")

AVX2 = "-avx512f"


@pytest.mark.parametrize("seed", range(6))
def test_fused_bias_offsets_give_every_accumulator_its_level(seed):
    """Random multipliers, output zero points and biases: wherever offsets are found, every
    accumulator of the bounds gets TFLite's level clamped at the relu's low end (checked one
    by one, not by the proof's points)."""
    rng = np.random.default_rng(seed)
    found = 0
    for _ in range(8):
        multiplier, shift = int(rng.integers(2**30, 2**31 - 1)), int(rng.integers(-12, -5))
        offset = int(rng.integers(-128, 60))
        clamp = (max(offset, -128), 127)
        biases = rng.integers(-3000, 3000, 4)
        bounds = np.abs(biases) + rng.integers(1000, 20000, 4)
        step = float_step(multiplier, shift, offset, -int(bounds.max()), int(bounds.max()))
        if step is None:
            continue
        offsets = fused_bias_offsets(step, multiplier, shift, offset, biases, bounds, clamp)
        if offsets is None:
            continue
        found += 1
        for bias, bound, c in zip(biases, bounds, offsets):
            accumulators = np.arange(-bound, bound + 1)
            expected = np.clip(tflite_levels(accumulators, multiplier, shift, offset), *clamp)
            actual = np.clip(fused_levels(accumulators - bias, step.scale, np.full(accumulators.shape, c)), *clamp)
            np.testing.assert_array_equal(actual, expected)
    assert found >= 4


def test_fused_bias_offsets_refuse_a_clamp_below_the_zero_point():
    """Without a relu both signs' levels count, and TFLite's halves away from zero tilt them
    apart: no single offset, so no clamp below the output zero point is tried."""
    step = FloatStep(0.0026280980091542006, 29.001739501953125, 28.99803924560547)
    args = (step, 1444812177, -8, 29, np.array([2654, -2564]), np.array([75903, 74284]))
    assert fused_bias_offsets(*args, (-128, 127)) is None
    assert fused_bias_offsets(*args, (10, 127)) is None
    assert fused_bias_offsets(*args, (29, 127)) is not None


GEOMETRIES = {
    "8_to_24_on_12x96": pointwise(8, 24, 12, 96),
    "8_to_24_on_5x7": pointwise(8, 24, 5, 7),  # 35 pixels: a partial vector
    "odd_13_to_10_on_3x11": pointwise(13, 10, 3, 11),
    "16_to_88_on_3x17": pointwise(16, 88, 3, 17),
    "32_to_200_on_2x96": pointwise(32, 200, 2, 96),  # tiles of two vectors x 5 channels
    "odd_9_to_24_two_images": ((2, 9, 5, 9), (24, 9, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "se_expand_8_to_96_on_1x1": ((1, 8, 1, 1), (96, 8, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
}


@needs_fma
@pytest.mark.parametrize("name", list(GEOMETRIES))
def test_fused_step_matches_the_int8_reference(name):
    """A relu layer per tensor takes the fused bias step (its `vfmadd`s in the assembly); without
    an activation, with a clip below the zero point or per channel it keeps its bias; every
    one bit for bit the reference's outputs."""
    geometry = GEOMETRIES[name]
    for seed, (activation, per_channel) in enumerate([("relu", False), ("relu", False), (None, False),
                                                      ("clip", False), ("relu", True)]):
        case = convolution_case(500 + 11 * list(GEOMETRIES).index(name) + seed, geometry, per_channel, activation)
        bundle = build(case.body, dict(case.constants), target=resolve_target(mattr=AVX2), keep_assembly=True)
        ir = bundle.ir["glowll"]
        assert 'microkernel = #glowll.microkernel<"vector-pointwise-int8">' in ir
        fused = activation == "relu" and not per_channel
        assert ("bias_in_step" in ir) == fused, (seed, activation, per_channel)
        assert "vfmadd" in bundle.ir["assembly"] or not fused  # (the others' float steps may be fused too)
        np.testing.assert_array_equal(bundle.run(case.inputs)[case.output], case.expected)


@needs_fma
def test_no_fused_step_without_fma():
    case = convolution_case(3, GEOMETRIES["8_to_24_on_5x7"], activation="relu")
    bundle = build(case.body, dict(case.constants), target=resolve_target(mattr=AVX2 + ",-fma"), keep_assembly=True)
    assert "bias_in_step" not in bundle.ir["glowll"] and "vfmadd" not in bundle.ir["assembly"]
    np.testing.assert_array_equal(bundle.run(case.inputs)[case.output], case.expected)
