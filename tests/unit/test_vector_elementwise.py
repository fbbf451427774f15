"""The int8 Add, Sub and Mul on a host's vector unit without AVX-512 VNNI (`microkernel =
"vector-elementwise-int8"`: `glowll-select-vector-columns`, `lowering/vector_elementwise.py`).

Random levels and scales, either operand broadcast (a squeeze-and-excitation block's channel
scale: [1, C, 1, 1] against [1, C, H, W]), rows shorter and longer than a vector, fused relu
and clip: on AVX2 (and AVX-512 without VNNI) each must take the kernel and give, bit for
bit, the independent int8 reference's outputs and the generic int8 kernel's (the same build
for a target without AVX: SSE only, no masked loads)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from glowmlir.backends.host_vector import select_kernels
from glowmlir.quantization.float_steps import float_add
from glowmlir.targets import resolve_target
from tests.support import int8_reference as ref
from tests.unit.test_int8_depthwise import GENERIC, TARGETS, needs_avx
from tests.unit.test_quantized_kernels import (
    Case,
    all_level_pairs_case,
    binary_case,
    binary_text,
    build,
    levels,
    q8,
    tensor,
)
from tests.unit.test_vnni_depthwise import BINARY_CASES


@needs_avx
@pytest.mark.parametrize("op,a_shape,b_shape,activation,seed", BINARY_CASES)
def test_add_sub_and_mul_on_avx2_match_the_int8_reference(op, a_shape, b_shape, activation, seed):
    case = binary_case(op, a_shape, b_shape, seed, activation)
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]))
    assert 'microkernel = #glowll.microkernel<"vector-elementwise-int8">' in fast.ir["glowll"]
    generic = build(case.body, dict(case.constants), target=resolve_target(mattr=GENERIC))
    assert "microkernel" not in generic.ir["glowll"]
    for bundle in (fast, generic):
        np.testing.assert_array_equal(bundle.run(case.inputs)[case.output], case.expected)


def gate_product_case(x_shape, gate_shape, seed: int, x_type, gate_type, out_type):
    """A squeeze-and-excitation block's channel Mul (`glow.mul` of x by a gate a channel, named
    x, s, y) of random levels, the gate's first channels at the ends of its range (-128, 127,
    its zero point), and its int8 reference output."""
    rng = np.random.default_rng(seed)
    x_type, gate_type, out_type = ((ref.f32(scale), offset) for scale, offset in (x_type, gate_type, out_type))
    x, gate = levels(rng, *x_shape), levels(rng, *gate_shape)
    gate.reshape(-1)[:3] = [-128, 127, gate_type[1]]
    expected = ref.mul(x, gate, x_type, gate_type, out_type)
    x_t, s_t, y_t = tensor(x_shape, q8(*x_type)), tensor(gate_shape, q8(*gate_type)), tensor(x_shape, q8(*out_type))
    return Case(binary_text("mul", x_t, s_t, y_t), {"x": x, "s": gate}, {}, "y", expected)


@needs_avx
@pytest.mark.parametrize("x_shape,gate_shape,x_type,gate_type,out_type,seed", [
    ((1, 24, 2, 96), (1, 24, 1, 1), (0.0431, -11), (1 / 256, -128), (0.0279, -7), 900),
    ((2, 9, 3, 7), (2, 9, 1, 1), (0.0173, 40), (0.0078, 3), (0.0119, 12), 901),
    ((1, 7, 1, 33), (1, 7, 1, 1), (0.0912, -128), (1 / 256, -128), (0.0455, -128), 902),
    ((1, 5, 11, 13), (1, 5, 1, 1), (0.0301, 127), (0.0061, -60), (0.0009, 5), 903),
    ((37, 3), (37, 3), (0.0222, 9), (0.0571, -33), (0.0817, 2), 904),
])
def test_channel_products_take_the_float_step_and_match_the_int8_reference(
        x_shape, gate_shape, x_type, gate_type, out_type, seed):
    """A channel Mul (odd planes, a tail, planes shorter than a vector, gates at the ends of
    their range, zero points at both ends) and a Mul of one shape take the proved float step (`float_step`
    printed on the op) and give the reference's levels bit for bit."""
    case = gate_product_case(x_shape, gate_shape, seed, x_type, gate_type, out_type)
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]))
    assert "float_step = array<f32:" in fast.ir["glowll"]
    np.testing.assert_array_equal(fast.run(case.inputs)[case.output], case.expected)


@needs_avx
def test_a_mul_whose_float_step_is_refused_keeps_the_exact_step():
    """A Mul of a real multiplier above 1/2 (0.05 x 0.04 / 0.003: a level a product or more, no
    float step) takes vector-elementwise-int8 without `float_step`, on `requantize_bounded`, as before."""
    case = gate_product_case((1, 6, 3, 21), (1, 6, 1, 1), 905, (0.05, 3), (0.04, -20), (0.003, 1))
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]))
    assert 'microkernel<"vector-elementwise-int8">' in fast.ir["glowll"] and "float_step" not in fast.ir["glowll"]
    np.testing.assert_array_equal(fast.run(case.inputs)[case.output], case.expected)



@needs_avx
@pytest.mark.parametrize("a_type,b_type,out_type", [
    ((0.0123, 25), (0.1, -7), (0.051, 3)),
    ((0.0431, -128), (1 / 256, -128), (0.0279, 127)),
    ((0.0912, 127), (0.0061, 40), (0.0455, -100)),
])
@pytest.mark.parametrize("fma", ["+fma", "-fma"])
def test_mul_of_every_pair_of_levels_on_the_float_step(a_type, b_type, out_type, fma):
    """TFLite's int8 Mul on every pair of levels (256 x 256, one shape) on the float step: its
    fused form (`FloatStep.fused`, a fourth number, one `vfmadd`) on a target with FMA3, else
    the multiply and the add."""
    a_type, b_type, out_type = ((ref.f32(scale), offset) for scale, offset in (a_type, b_type, out_type))
    case = all_level_pairs_case("mul", a_type, b_type, out_type)
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=f"{TARGETS['avx2']},{fma}"),
                 keep_assembly=True)
    steps = re.findall(r"float_step = array<f32: [^>]*>", fast.ir["glowll"])
    assert len(steps) == 1 and (steps[0].count(",") == 3) == (fma == "+fma"), steps
    assert ("vfmadd" in fast.ir["assembly"]) == (fma == "+fma")
    np.testing.assert_array_equal(fast.run(case.inputs)[case.output], case.expected)


@needs_avx
@pytest.mark.parametrize("kind", ["add", "sub"])
@pytest.mark.parametrize("a_type,b_type,out_type", [
    ((0.0123, 25), (0.1, -7), (0.051, 3)),
    ((0.05, 3), (0.05, 3), (0.1, -2)),  # (d1 + d2) / 2: ties, halves away from zero
    ((0.0431, -128), (0.0179, 127), (0.0279, 127)),
    ((0.0912, 127), (0.0061, 40), (0.0455, -100)),
])
def test_add_and_sub_of_every_pair_of_levels_on_the_float_form(kind, a_type, b_type, out_type):
    """TFLite's int8 Add and Sub on every pair of levels (256 x 256) on the proved float form
    (`float_add` printed on the op), bit for bit the int8 reference's."""
    a_type, b_type, out_type = ((ref.f32(scale), offset) for scale, offset in (a_type, b_type, out_type))
    case = all_level_pairs_case(kind, a_type, b_type, out_type)
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]))
    assert "float_add = array<f32:" in fast.ir["glowll"]
    np.testing.assert_array_equal(fast.run(case.inputs)[case.output], case.expected)


@needs_avx
@pytest.mark.parametrize("op,a_shape,b_shape,activation,seed", [
    ("add", (1, 32, 2, 96), (1, 32, 2, 96), None, 910),
    ("add", (1, 16, 3, 96), (1, 16, 3, 96), "relu", 911),
    ("add", (2, 6, 3, 17), (1, 6, 1, 1), "clip", 912),
    ("sub", (1, 4, 1, 1), (2, 4, 3, 3), None, 913),
    ("add", (3, 7), (3, 7), None, 914),
])
def test_residual_adds_take_the_float_form_and_match_the_int8_reference(op, a_shape, b_shape, activation, seed):
    """Random Adds and Subs (a residual block's of one shape, either operand broadcast, rows
    shorter than a vector, fused relu and clip) take `float_add` and give the reference's levels."""
    case = binary_case(op, a_shape, b_shape, seed, activation)
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]))
    assert "float_add = array<f32:" in fast.ir["glowll"]
    np.testing.assert_array_equal(fast.run(case.inputs)[case.output], case.expected)


def test_float_add_refuses_levels_no_float_form_gives():
    """(q1 + q2) / 2 rounded half to even (0.5 -> 0, 1.5 -> 2): no offset of a side puts both
    ties on their side, so `float_add` proves nothing; TFLite's (halves away from zero) it proves."""
    first, second = (pair.ravel() for pair in np.meshgrid(np.arange(-128, 128), np.arange(-128, 128)))
    halves_to_even = np.clip(np.rint((first + second) / 2), -128, 127).astype(np.int32)
    assert float_add(first, second, halves_to_even, (0.5, 0.5), (0, 0)) is None
    away_from_zero = np.clip(np.trunc((first + second) / 2 + np.sign(first + second) * 0.5), -128, 127)
    assert float_add(first, second, away_from_zero.astype(np.int32), (0.5, 0.5), (0, 0)) is not None


@needs_avx
def test_an_add_without_a_float_form_keeps_the_exact_steps(monkeypatch):
    """An Add no float form is proved for (none found: `add_float_form` gives None) takes
    vector-elementwise-int8 without `float_add`, on TFLite's integer steps (`add_terms`), as before."""
    monkeypatch.setattr(select_kernels, "add_float_form", lambda op: None)
    case = binary_case("add", (1, 8, 3, 21), (1, 8, 3, 21), 915, "relu")
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]))
    assert 'microkernel<"vector-elementwise-int8">' in fast.ir["glowll"] and "float_add" not in fast.ir["glowll"]
    np.testing.assert_array_equal(fast.run(case.inputs)[case.output], case.expected)
