"""`quantization.float_steps`: TFLite's int8 output step in single-precision floats, found and
proved at compile time, against `params.requantize` on values it did not check; the float
form of a whole int8 Add against the independent int8 reference on every pair of levels."""

from fractions import Fraction

import numpy as np
import pytest
from xdsl.dialects.builtin import i8

from glowmlir.dialects.quant import UniformQuantizedType
from glowmlir.quantization.float_steps import (
    FloatStep,
    Int16Gate,
    float_add,
    float_step,
    fma_singles,
    int16_gate,
    step_points,
    tflite_add_levels,
    tflite_levels,
)
from glowmlir.quantization.rescaling import add_multipliers, multiplier_and_shift
from tests.support import int8_reference as ref

INT32 = (-(2**31), 2**31 - 1)


def random_layers(count: int, seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        real = float(np.exp(rng.uniform(np.log(1e-4), np.log(0.3))))
        yield (*multiplier_and_shift(real), int(rng.integers(-128, 40)))


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_found_steps_equal_tflite_on_every_value_tried(seed, fused):
    rng = np.random.default_rng(100 + seed)
    found = 0
    for multiplier, shift, offset in random_layers(40, seed):
        step = float_step(multiplier, shift, offset, *INT32, fused=fused)
        if step is None:
            continue
        assert step.fused == fused
        found += 1
        points = step_points(multiplier, shift, offset, *INT32)
        near = (points[:, None] + np.arange(-3, 4)).ravel()
        values = np.concatenate([rng.integers(*INT32, 20000), rng.integers(-(1 << 20), 1 << 20, 20000),
                                 np.clip(near, *INT32), np.arange(-2000, 2000)])
        np.testing.assert_array_equal(step.levels(values), tflite_levels(values, multiplier, shift, offset))
    assert found >= 15, f"the float step was found for {found} of 40 layers"


def exact_single(value: Fraction) -> np.float32:
    """The single nearest a rational, ties to the even one."""
    near = np.float32(float(value))
    candidates = [np.nextafter(near, np.float32(-np.inf)), near, np.nextafter(near, np.float32(np.inf))]
    return min(candidates, key=lambda c: (abs(Fraction(float(c)) - value), int(np.float32(c).view(np.uint32)) & 1))


def test_fma_singles_rounds_the_exact_sum_once():
    """`fma_singles` (the proofs' model of `llvm.fma` / `vfmadd`: the fused float steps, the
    1x1s' bias in the step, the gate's form) against the exact rational x * a + b rounded to
    the nearest single: random integers and scales; a third of the addends chosen to put the
    exact sum near a half (the ties rint then decides); gate-like operands (levels by slopes
    of many magnitudes) whose double sum is a tie of two singles moved off it by the
    product's last bits; exact ties (to even) and a tie the double rounding hides."""
    rng = np.random.default_rng(5)
    x, a, b = [], [], []
    for k in range(3000):
        xk, ak = np.float32(rng.integers(-(1 << 24), 1 << 24)), np.float32(rng.uniform(1e-5, 0.4))
        bk = np.float32(rng.uniform(-130, 130))
        if k % 3 == 0 and abs(float(xk) * float(ak)) < 1e5:
            bk = np.float32(np.round(float(xk) * float(ak)) + 0.5 - float(xk) * float(ak))
        x.append(xk), a.append(ak), b.append(bk)
    levels = rng.integers(-128, 128, 2000).astype(np.float32)
    slopes = (rng.normal(size=2000) * 10.0 ** rng.integers(-6, 1, 2000)).astype(np.float32)
    rounded = (levels.astype(np.float64) * slopes).astype(np.float32)  # b: half a unit of that rounding less it
    addends = (np.float64(rounded) + np.spacing(rounded).astype(np.float64) / 2 * rng.choice([-1, 1], 2000)
               - rounded).astype(np.float32)
    x += list(levels) + [1, 3, 5, -1, -3, 1, 3, 2**16 + 1]  # v 2^-24 + 1: 1 + 2^-24 a tie; v = 3: 1.5 units
    a += list(slopes) + [2.0 ** -24] * 7 + [2.0 ** -40]
    b += list(addends) + [1, 1, 1, 1, 1, 1 + 2.0 ** -22, 1 + 2.0 ** -22, 1]
    x, a, b = (np.array(values, np.float32) for values in (x, a, b))
    got = fma_singles(x, a, b)
    for xk, ak, bk, gk in zip(x, a, b, got):
        assert gk == exact_single(Fraction(float(xk)) * Fraction(float(ak)) + Fraction(float(bk))), (xk, ak, bk)


def test_a_shifted_offset_is_caught():
    """A step one threshold off differs from TFLite somewhere near a threshold: the check sees it."""
    multiplier, shift = multiplier_and_shift(0.0024)
    step = float_step(multiplier, shift, -17, *INT32)
    assert step is not None
    wrong = FloatStep(step.scale, step.offset + 0.01, step.negative_offset)
    points = step_points(multiplier, shift, -17, *INT32)
    assert not np.array_equal(wrong.levels(points), tflite_levels(points, multiplier, shift, -17))



@pytest.mark.parametrize("subtract", [False, True])
def test_found_add_forms_equal_the_int8_reference_on_every_pair_of_levels(subtract):
    """Random int8 Adds and Subs (scales 1e-3 to 0.3, some of equal input scales: ties):
    `tflite_add_levels` is the independent int8 reference's Add on every pair, and the
    `FloatAdd` found for it gives the reference's levels on all 65,536 pairs."""
    rng = np.random.default_rng(200 + subtract)
    first, second = (pair.ravel() for pair in np.meshgrid(np.arange(-128, 128), np.arange(-128, 128), indexing="ij"))
    found = 0
    for index in range(12):
        scales = [ref.f32(np.exp(rng.uniform(np.log(1e-3), np.log(0.3)))) for _ in range(3)]
        if index % 4 == 0:
            scales[1], scales[2] = scales[0], 2 * scales[0]
        points = [int(z) for z in rng.integers(-128, 128, 3)]
        types = [UniformQuantizedType(i8, scale, point) for scale, point in zip(scales, points)]
        expected = ref.add(first, second, *zip(scales, points), subtract=subtract).astype(np.int64)
        multipliers = add_multipliers(*types)
        levels = tflite_add_levels(first - points[0], second - points[1], multipliers, 20, points[2], subtract)
        np.testing.assert_array_equal(levels, expected)
        output_ratio = multipliers[2][0] * 2.0 ** (multipliers[2][1] - 31 + 20)
        ratios = [m * 2.0 ** (s - 31) * output_ratio for m, s in multipliers[:2]]
        form = float_add(first, second, levels, (ratios[0], -ratios[1] if subtract else ratios[1]), points[:2])
        if form is not None:
            found += 1
            np.testing.assert_array_equal(form.levels(first, second), expected)
    assert found >= 11, f"a float form was found for {found} of 12 Adds"


def gate_pairs(types, bounds):
    """Every pair of an x level and a gate level (x major), TFLite's Mul of them by the
    independent int8 reference clamped to `bounds`, and (M, shift) of the Mul's types."""
    x, gates = (pair.ravel() for pair in np.meshgrid(np.arange(-128, 128), np.arange(-128, 128), indexing="ij"))
    (x_scale, _), (gate_scale, _), (out_scale, _) = types
    expected = np.clip(ref.mul(x.astype(np.int8), gates.astype(np.int8), *types).astype(np.int64), *bounds)
    return x, gates, expected, multiplier_and_shift(x_scale * gate_scale / out_scale)


@pytest.mark.parametrize("seed", range(8))
def test_found_int16_gates_equal_the_int8_reference_on_every_pair_of_levels(seed):
    """Where `int16_gate` gives a form, its kernel's arithmetic (`Int16Gate.levels`: vpmulhrsw,
    a side's offset, the shift) is the int8 reference's Mul on all 65,536 pairs, clamped to
    the int8 range, a relu's or a clip's; the random types (a multiplier below 1/2, zero
    points anywhere, hard sigmoid's gate scale in half of them) are proved or refused, never
    wrong. The form's property reads back as written."""
    rng = np.random.default_rng(1000 + seed)
    while True:
        types = [(ref.f32(rng.uniform(0.002, 0.1)), int(rng.integers(-128, 128))) for _ in range(3)]
        if seed % 2:
            types[1] = (ref.f32(1 / 256), -128)
        if types[0][0] * types[1][0] / types[2][0] < 0.45:
            break
    for bounds in ((-128, 127), (types[2][1], 127), tuple(sorted(rng.integers(-128, 128, 2)))):
        x, gates, expected, (multiplier, shift) = gate_pairs(types, bounds)
        form = int16_gate(multiplier, shift, (-128, 127), (types[0][1], types[1][1], types[2][1]), bounds)
        if form is not None:
            np.testing.assert_array_equal(np.clip(form.levels(x, gates, types[0][1]), *bounds), expected)
            np.testing.assert_array_equal(Int16Gate.of(form.attribute()).table, form.table)
            assert form.table.shape == (256, 4) and np.all(np.abs(form.table) < 2**15)


def test_int16_gates_of_the_net_types_are_proved_and_others_refused():
    """The net's squeeze-and-excitation types (hard sigmoid's gate, 1/256) have an int16 form;
    types where some gate level has no k, offsets and shift (a real multiplier of 0.0122 x
    gate levels up to 255 away from zg = 40: 16 bits of a level's fraction too few) have
    none; and a table with one offset moved by a level is caught by the kernel's levels."""
    types = [(ref.f32(0.0431), -11), (ref.f32(1 / 256), -128), (ref.f32(0.0279), -7)]
    x, gates, expected, (multiplier, shift) = gate_pairs(types, (-128, 127))
    form = int16_gate(multiplier, shift, (-128, 127), (-11, -128, -7), (-128, 127))
    assert form is not None
    moved = form.table.copy()
    moved[200, 1] += 1 << int(moved[200, 3])
    assert not np.array_equal(np.clip(Int16Gate(moved).levels(x, gates, -11), -128, 127), expected)
    refused = [(ref.f32(0.0912), 127), (ref.f32(0.0061), 40), (ref.f32(0.0455), -100)]
    _, _, _, (multiplier, shift) = gate_pairs(refused, (-128, 127))
    assert int16_gate(multiplier, shift, (-128, 127), (127, 40, -100), (-128, 127)) is None
