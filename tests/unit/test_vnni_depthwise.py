"""The int8 depthwise convolution of small planes on AVX-512 VNNI and VBMI
(`microkernel = "x86-vnni-depthwise"`: `glowll-select-x86-vnni-kernels`,
`backends/x86/vnni_depthwise.py`) and the int8 Add, Sub and Mul on AVX-512 (`"x86-avx512"`).

Depthwise convolutions of random levels, weights with a zero point (levels less it beyond
int8: the second part words) and without, per tensor and per channel, 3x3 and 5x5, strides
1 and 2, padding (uneven too), dilation, several images, fused relu and clip: each must take
the kernel on the host and give, bit for bit, the independent int8 reference's outputs
(tests/support/int8_reference.py) and the generic int8 kernel's (the same build without
AVX-512 VNNI). Planes of more than 16 vectors, and filters with a level 255 from their zero
point, keep the other kernels. The Add, Sub and Mul likewise, broadcasting either operand.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from glowmlir.backends.x86 import layout as vnni_layout
from glowmlir.backends.x86 import select_kernels as x86_selection
from glowmlir.backends.x86.target import has_avx512_vbmi, has_avx512_vnni
from glowmlir.elf import function_ranges
from glowmlir.target import HOST
from glowmlir.targets import resolve_target
from tests.unit.test_int8_depthwise import GEOMETRIES
from tests.unit.test_quantized_kernels import Case, binary_case, build, convolution_case
from tests.unit.test_x86_vnni import all_match_the_reference

needs_vbmi = pytest.mark.skipif(not (has_avx512_vnni(HOST) and has_avx512_vbmi(HOST)),
                                reason="the host has no AVX-512 VNNI and VBMI")

KERNEL = 'microkernel = #glowll.microkernel<"x86-vnni-depthwise">'
SMALL_PLANES = [name for name in GEOMETRIES if name != "3x3_wide_rows"]
"""The depthwise geometries of at most 16 vectors of outputs a plane (13 x 37 has 31)."""


def fast_and_generic(case: Case) -> tuple[object, list[np.ndarray]]:
    """The host build (its glowll) and the outputs of it and of the generic int8 kernel's build."""
    fast = build(case.body, dict(case.constants))
    generic = build(case.body, dict(case.constants), target=resolve_target(mattr="-avx512vnni"))
    assert "x86-" not in generic.ir["glowll"]
    return fast.ir["glowll"], [bundle.run(case.inputs)[case.output] for bundle in (fast, generic)]


@needs_vbmi
@pytest.mark.parametrize("name", SMALL_PLANES)
@pytest.mark.parametrize("per_channel", [False, True])
def test_depthwise_of_small_planes_matches_the_int8_reference(name, per_channel):
    case = convolution_case(900 + list(GEOMETRIES).index(name) + 50 * per_channel, GEOMETRIES[name], per_channel)
    glowll, outputs = fast_and_generic(case)
    assert KERNEL in glowll
    all_match_the_reference(outputs, case)


@needs_vbmi
@pytest.mark.parametrize("name,activation", [("3x3_pad1_ds_cnn", "relu"), ("5x5_stride2_odd", "clip"),
                                             ("same_5x5_of_8x8", "relu"), ("uneven_pads_dilated", "clip")])
def test_fused_activations_match_the_int8_reference(name, activation):
    case = convolution_case(950 + list(GEOMETRIES).index(name), GEOMETRIES[name], activation=activation)
    glowll, outputs = fast_and_generic(case)
    assert KERNEL in glowll
    all_match_the_reference(outputs, case)


@needs_vbmi
def test_levels_beyond_int8_take_a_second_word_and_a_level_of_255_keeps_the_other_kernel():
    """Per tensor with a zero point, some levels less it leave int8: the filter has two parts
    (and the outputs are still the reference's). A filter holding 127 with zero point -128
    (255 from it: no two int8 halves) is left to vector-planes-int8."""
    case = convolution_case(903, GEOMETRIES["3x3_pad1_ds_cnn"])
    glowll, outputs = fast_and_generic(case)
    assert KERNEL in glowll and "64x2x3x4x!quant" in glowll
    all_match_the_reference(outputs, case)
    centred = np.zeros((2, 1, 3, 3), np.int64)
    centred[1, 0, 2, 1] = 255
    assert vnni_layout.depthwise_filter(centred) is None
    centred[1, 0, 2, 1] = -255
    packed = vnni_layout.depthwise_filter(centred)
    assert packed.shape == (2, 2, 3, 4) and packed[1, :, 2, 1].tolist() == [-128, -127] and packed.sum() == -255


def test_windows_of_a_plane_hold_every_tap_once():
    """Each output's taps, read back through the windows' starts and permutes, are the input
    pixels its window covers (the padding's bytes marked), for strides, dilation and uneven pads."""
    rng = np.random.default_rng(8)
    for in_hw, kernel, strides, pads, dilations in [((25, 5), (3, 3), (1, 1), (1, 1), (1, 1)),
                                                    ((9, 11), (5, 5), (2, 2), (2, 2), (1, 1)),
                                                    ((12, 19), (3, 2), (1, 2), (2, 0), (2, 1))]:
        out_hw = tuple((size + 2 * pad - dilation * (k - 1) - 1) // stride + 1
                       for size, k, stride, pad, dilation in zip(in_hw, kernel, strides, pads, dilations))
        geometry = vnni_layout.DepthwiseGeometry(in_hw, out_hw, kernel, strides, pads, dilations)
        plane = rng.integers(0, 256, in_hw)
        flat = plane.reshape(-1)
        for first in range(0, out_hw[0] * out_hw[1], 16):
            count = min(16, out_hw[0] * out_hw[1] - first)
            windows, padded = geometry.windows(first, count)
            read = {}
            for window in windows:
                for taps in window.taps:
                    read[taps.ky, taps.quad] = [None if at == vnni_layout.WINDOW else flat[window.start + at]
                                                for at in taps.order]
            read.update({key: [None] * 64 for key in padded})
            for lane in range(count):
                y, x = divmod(first + lane, out_hw[1])
                for ky in range(kernel[0]):
                    for kx in range(kernel[1]):
                        iy = y * strides[0] + ky * dilations[0] - pads[0]
                        ix = x * strides[1] + kx * dilations[1] - pads[1]
                        inside = 0 <= iy < in_hw[0] and 0 <= ix < in_hw[1]
                        assert read[ky, kx // 4][4 * lane + kx % 4] == (plane[iy, ix] if inside else None)


BINARY_CASES = [
    ("add", (2, 3, 5, 5), (2, 3, 5, 5), None, 820),
    ("add", (1, 4, 1, 1), (2, 4, 3, 3), None, 821),
    ("add", (2, 6, 3, 17), (1, 6, 1, 1), "relu", 826),
    ("sub", (2, 6, 3, 17), (1, 6, 1, 1), None, 822),
    ("mul", (1, 16, 16, 16), (1, 16, 1, 1), None, 823),
    ("mul", (1, 1, 1, 37), (2, 3, 5, 1), None, 824),
    ("add", (3, 40), (3, 40), "clip", 825),
    ("mul", (1, 20, 2, 35), (1, 20, 1, 1), None, 827),
]
"""Int8 Add, Sub and Mul (op, shapes, fused activation, seed): either operand broadcast, rows
shorter and longer than a vector, a squeeze-and-excitation block's channel scale."""


@needs_vbmi
@pytest.mark.parametrize("op,a_shape,b_shape,activation,seed", BINARY_CASES)
def test_add_sub_and_mul_on_avx512_match_the_int8_reference(op, a_shape, b_shape, activation, seed, monkeypatch):
    """Every case on x86-avx512: the ops with a float form are not left to the vector unit here."""
    monkeypatch.setattr(x86_selection, "has_float_form", lambda op, fused: False)
    case = binary_case(op, a_shape, b_shape, seed, activation)
    glowll, outputs = fast_and_generic(case)
    assert 'microkernel = #glowll.microkernel<"x86-avx512">' in glowll
    for actual in outputs:
        np.testing.assert_array_equal(actual, case.expected)


@needs_vbmi
@pytest.mark.parametrize("op,a_shape,b_shape,activation,seed", BINARY_CASES)
def test_add_sub_and_mul_of_a_float_form_are_left_to_the_vector_unit(op, a_shape, b_shape, activation, seed):
    """On a VNNI host an op with a proved float form (`select_kernels.has_float_form`) takes
    vector-elementwise-int8 and its form (or AVX2's int16 gate products, proved first), the
    others x86-avx512: bit for bit either way."""
    case = binary_case(op, a_shape, b_shape, seed, activation)
    glowll, outputs = fast_and_generic(case)
    form = re.search(r"(float_step|float_add|float_gate|int16_gate) = ", glowll)
    kernel = "vector-elementwise-int8" if form else "x86-avx512"
    assert f'microkernel = #glowll.microkernel<"{kernel}"' in glowll
    for actual in outputs:
        np.testing.assert_array_equal(actual, case.expected)


@needs_vbmi
def test_equal_shaped_layers_take_two_parts_if_one_must_and_share_a_kernel():
    """Two depthwise layers of one shape, one whose levels less its zero point leave int8 (two
    parts) and one of zero point 0 (one part would do): both filters take two parts (the
    second all zeros where none is needed), so their shapes stay equal and, through their
    records, they share one kernel; both outputs are the reference's."""
    geometry = GEOMETRIES["3x3_pad1_ds_cnn"]
    cases = [convolution_case(903, geometry, suffix="_a"), convolution_case(1006, geometry, suffix="_b")]
    assert "i8:f32, " in cases[1].body and re.search(r"%w_b = [^\n]*:0>>", cases[1].body)  # zero point 0
    bundle = build("".join(case.body for case in cases), {k: v for case in cases for k, v in case.constants.items()})
    outputs = bundle.run({name: value for case in cases for name, value in case.inputs.items()})
    for case in cases:
        all_match_the_reference([outputs[case.output]], case)
    assert bundle.ir["glowll"].count(KERNEL) == 2
    assert len(re.findall(r'glowll.weight "w_\w_vnni"[^\n]*memref<64x2x3x4x', bundle.ir["glowll"])) == 2
    assert len([name for name in function_ranges(bundle.object_code) if name.endswith("_convolution")]) == 1
    one_part = vnni_layout.depthwise_filter(np.ones((2, 1, 3, 3), np.int64))
    two_parts = vnni_layout.depthwise_filter(np.ones((2, 1, 3, 3), np.int64), parts=2)
    assert one_part.shape == (2, 1, 3, 4) and two_parts.shape == (2, 2, 3, 4)
    assert (two_parts[:, 0] == one_part[:, 0]).all() and not two_parts[:, 1].any()
