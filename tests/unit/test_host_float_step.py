"""The host int8 convolution kernels' float output step (`float_step`: issue 42).

Where `glowll-select-vector-columns` gives a per-tensor int8 layer to a host vector kernel
(vector-pointwise-int8, vector-columns-int8, vector-depthwise-int8, vector-planes-int8) and
`quantization.float_steps.float_step` proves a float form of TFLite's output step on the
layer's accumulator bounds, the layer is marked `float_step = array<f32: scale, offset,
negative_offset>` and `LaneRequantization.level` computes it (`float_step_levels`: a
conversion, a multiply, a sign's offset, `rint`, a conversion back), on the accumulator or on
twice it (`doubled_accumulators`: the scale halved). Random levels, random weights, per tensor,
relu, clip and no activation, on every kernel: each must take the float step and give, bit for
bit, the independent int8 reference's outputs (tests/support/int8_reference.py); a layer whose
float step is refused keeps the integer step. Per-channel layers take a step proved channel by
channel (`float_step_table`: the requantization table as singles) or, where some channel has
none, keep the integer table.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from glowmlir.target import HOST
from glowmlir.targets import resolve_target
from tests.unit.test_quantized_kernels import build, convolution_case, depthwise, pointwise

needs_avx2 = pytest.mark.skipif(HOST.vector_tile is None or not HOST.vector_tile.masked_loads,
                                reason="the host has no AVX2")

AVX2 = "-avx512f"


LAYERS = {
    # name: (the kernel it takes, whether its sums are doubled, geometry); the 3x3 of 8
    # channels an output scale of 400 accumulator units (its spread's, from 72 taps, would be a
    # real multiplier below 1e-3, where float steps are often refused)
    "pointwise_16_to_24": ("vector-pointwise-int8", True, pointwise(16, 24, 6, 20)),
    "pointwise_odd_13_to_10": ("vector-pointwise-int8", True, pointwise(13, 10, 5, 11)),
    "columns_3x3_8_to_12_stride2": ("vector-columns-int8", False,
                                    ((1, 8, 16, 24), (12, 8, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1)),
    "depthwise_3x3_24_stride_2_1": ("vector-depthwise-int8", True, depthwise(24, 3, 12, 40, 2)),
    "depthwise_5x5_32_two_rows": ("vector-depthwise-int8", True, depthwise(32, 5, 2, 40, 1)),
    "planes_3x3_6_on_12x3": ("vector-planes-int8", False, depthwise(6, 3, 12, 3, 1)),
}


def float_steps_of(ir: str) -> list[str]:
    return re.findall(r"float_step = array<f32: [^>]*>", ir)


@needs_avx2
@pytest.mark.parametrize("activation", ["relu", None, "clip"])
@pytest.mark.parametrize("name", list(LAYERS))
def test_float_step_matches_the_int8_reference(name, activation):
    kernel, doubled, geometry = LAYERS[name]
    for seed in range(3):
        case = convolution_case(300 + 7 * list(LAYERS).index(name) + seed, geometry, activation=activation,
                                output_scale=400.0 if kernel == "vector-columns-int8" else None)
        bundle = build(case.body, dict(case.constants), target=resolve_target(mattr=AVX2))
        ir = bundle.ir["glowll"]
        assert f'microkernel = #glowll.microkernel<"{kernel}">' in ir
        assert len(float_steps_of(ir)) == 1, "the layer takes the float step"
        assert ("doubled_accumulators" in ir) == doubled
        np.testing.assert_array_equal(bundle.run(case.inputs)[case.output], case.expected)


@needs_avx2
def test_refused_float_step_keeps_the_integer_step():
    """PP-OCR-cls's 1x1 200 -> 32 on 2x96 of the layer bench's numbers (real multiplier
    4.9e-4, accumulators up to 2.4e6): no candidate float step is exact there."""
    case = convolution_case(7, pointwise(200, 32, 2, 96), activation="relu")
    bundle = build(case.body, dict(case.constants), target=resolve_target(mattr=AVX2))
    ir = bundle.ir["glowll"]
    assert 'microkernel = #glowll.microkernel<"vector-pointwise-int8">' in ir and not float_steps_of(ir)
    np.testing.assert_array_equal(bundle.run(case.inputs)[case.output], case.expected)


@needs_avx2
@pytest.mark.parametrize("activation", ["relu", None])
@pytest.mark.parametrize("name", ["pointwise_16_to_24", "pointwise_odd_13_to_10", "depthwise_3x3_24_stride_2_1",
                                  "planes_3x3_6_on_12x3"])
def test_per_channel_layers_take_a_float_step_table(name, activation):
    """A per-channel layer's steps proved channel by channel (`mark_channel_float_steps`): its
    requantization table becomes the singles' bits [3, C] (scales, offsets, negative offsets),
    `float_step_table = 1` (fused on FMA3), no `float_step`; under a relu no `vblendvps` of
    the sign's offset (every channel's negatives clamped), without one the blend. Bit for bit
    the reference's outputs."""
    kernel, _, geometry = LAYERS[name]
    case = convolution_case(11 + list(LAYERS).index(name), geometry, per_channel=True, activation=activation,
                            output_scale=400.0 if kernel == "vector-columns-int8" else None)
    bundle = build(case.body, dict(case.constants), target=resolve_target(mattr=AVX2), keep_assembly=True)
    ir = bundle.ir["glowll"]
    assert f'microkernel = #glowll.microkernel<"{kernel}">' in ir
    assert not float_steps_of(ir) and "float_step_table = 1 : i64" in ir
    assert re.search(r"requantization memref<3x\d+xi32>", ir)
    assert ("vblendvps" in bundle.ir["assembly"]) == (activation is None)
    np.testing.assert_array_equal(bundle.run(case.inputs)[case.output], case.expected)


@needs_avx2
def test_a_per_channel_layer_with_an_unproved_channel_keeps_the_integer_table():
    """A 1x1 24 -> 8 whose random per-channel scales give one channel a real multiplier of
    3.6e-4 on accumulators up to 292,806, where no single step is exact: the whole layer keeps
    its [2, C] table of multipliers and shifts, and the reference's outputs."""
    case = convolution_case(7, pointwise(24, 8, 6, 96), per_channel=True)
    bundle = build(case.body, dict(case.constants), target=resolve_target(mattr=AVX2))
    ir = bundle.ir["glowll"]
    assert "float_step" not in ir and re.search(r"requantization memref<2x8xi32>", ir)
    np.testing.assert_array_equal(bundle.run(case.inputs)[case.output], case.expected)


@needs_avx2
@pytest.mark.parametrize("name", list(LAYERS))
def test_relu_float_step_blends_no_offset(name):
    """Under a relu clamping at the output zero point every negative total's level is the
    clamp's, by either offset (`LaneRequantization.negatives_clamped`): the step adds the
    positive one to every lane, no `vblendvps` of the sign's offset; without an activation
    it keeps the blend. Bit for bit the reference's outputs (random levels and weights: about
    half the totals negative)."""
    kernel, _, geometry = LAYERS[name]
    for seed in range(3):
        for activation in ("relu", None):
            case = convolution_case(300 + 7 * list(LAYERS).index(name) + seed, geometry, activation=activation,
                                    output_scale=400.0 if kernel == "vector-columns-int8" else None)
            bundle = build(case.body, dict(case.constants), target=resolve_target(mattr=AVX2), keep_assembly=True)
            assert len(float_steps_of(bundle.ir["glowll"])) == 1, "the layer takes the float step"
            assert ("vblendvps" in bundle.ir["assembly"]) == (activation is None)
            np.testing.assert_array_equal(bundle.run(case.inputs)[case.output], case.expected)


@needs_avx2
@pytest.mark.parametrize("name", ["pointwise_16_to_24", "depthwise_3x3_24_stride_2_1", "depthwise_5x5_32_two_rows",
                                  "columns_3x3_8_to_12_stride2"])
def test_fused_float_step_on_fma_targets(name):
    """On a target with FMA3 the float step is proved and marked in its fused form (a fourth
    number 1: `FloatStep.fused`) and computed by one `vfmadd` a vector, no `vmulps`; without
    FMA3 (`-fma`) the unfused one. Bit for bit the reference's outputs either way."""
    kernel, _, geometry = LAYERS[name]
    for activation in ("relu", None):
        case = convolution_case(400 + 7 * list(LAYERS).index(name), geometry, activation=activation,
                                output_scale=400.0 if kernel == "vector-columns-int8" else None)
        for mattr, fused in ((AVX2 + ",+fma", True), (AVX2 + ",-fma", False)):
            bundle = build(case.body, dict(case.constants), target=resolve_target(mattr=mattr), keep_assembly=True)
            steps = float_steps_of(bundle.ir["glowll"])
            assert len(steps) == 1, "the layer takes the float step"
            assert (steps[0].count(",") == 3) == fused, steps[0]
            assembly = bundle.ir["assembly"]
            assert ("vfmadd" in assembly) == fused and ("vmulps" in assembly) != fused
            np.testing.assert_array_equal(bundle.run(case.inputs)[case.output], case.expected)
