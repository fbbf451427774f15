"""Glow's float to int8 quantize without a division on a host with FMA (`fma-quantize`):
x / scale as RN(x r), one FMA for the remainder, one for the correction
(`quantization.reciprocal_division`, Markstein), checked at compile time for the scale.

The numpy model (`quotients`, its FMA `fused_multiply_add` checked against exact rationals)
against numpy's f32 division on every significand of a binade and on millions of random
floats of every exponent, for random scales, powers of two and significands of all ones;
then the compiled kernel against the int8 reference (`ref.quantize`: f32 division, f32 add,
rint) on random bit patterns (zeros, subnormals, huge values, infinities), halves of levels
and their neighbours, for random scales and zero points, a length that is not a multiple of
the kernel's block included.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from glowmlir.quantization.reciprocal_division import (
    BOUND_QUOTIENT,
    fused_multiply_add,
    quotients,
    reciprocal_division,
)
from glowmlir.target import HOST
from glowmlir.targets import resolve_target
from tests.support import int8_reference as ref
from tests.unit.test_quantized_kernels import build, q8, quantize_inputs, tensor

needs_avx2 = pytest.mark.skipif(HOST.vector_tile is None or not HOST.vector_tile.masked_loads,
                                reason="the host has no AVX2")


def random_scales(seed: int, count: int) -> list[float]:
    rng = np.random.default_rng(seed)
    return [float(np.float32(rng.uniform(1, 2) * 2.0 ** rng.integers(-24, 8))) for _ in range(count)]


EDGE_SCALES = [1.0, 2.0**-7, 0.5, float(np.float32(2 - 2**-23)), float(np.float32(1 + 2**-23)),
               float(np.float32(2 - 2**-23)) * 2**-8, float(np.float32(1 / 255)), float(np.float32(0.0123))]
"""Powers of two, significands of all ones and of one low bit, 1 / 255 (an image's scale)."""


def random_floats(rng: np.random.Generator, count: int) -> np.ndarray:
    """Finite f32 of every exponent, either sign (random bit patterns)."""
    x = rng.integers(0, 2**32, count, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return x[np.isfinite(x)]


def rounded_exactly(value: Fraction) -> np.float32:
    """The f32 nearest a rational, ties to even."""
    guess = np.float32(float(value))
    candidates = [np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf))]
    return min(candidates, key=lambda c: (abs(Fraction(float(c)) - value), int(c.view(np.uint32)) & 1))


def test_fused_multiply_add_rounds_once():
    rng = np.random.default_rng(1)
    a = rng.standard_normal(3000).astype(np.float32)
    b = rng.standard_normal(3000).astype(np.float32)
    c = (-(a.astype(np.float64) * b) * (1 + rng.standard_normal(3000) * 2.0**-20)).astype(np.float32)  # cancels
    c[:1000] = rng.standard_normal(1000).astype(np.float32) * 2.0**-30  # tiny addends: halfway f64 sums
    got = fused_multiply_add(a, b, c)
    for i in range(len(a)):
        exact = Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))
        assert got[i] == rounded_exactly(exact), (a[i], b[i], c[i])


@pytest.mark.parametrize("scale", random_scales(2, 6) + EDGE_SCALES)
def test_quotients_equal_division(scale):
    division = reciprocal_division(scale)
    assert division is not None
    rng = np.random.default_rng(int(np.float32(scale).view(np.uint32)))
    # a binade of x whose quotients are near 1, inside the clamp
    binade = np.ldexp((np.arange(1 << 23, dtype=np.uint32) | np.uint32(0x3F800000)).view(np.float32),
                      int(np.floor(np.log2(scale)))).astype(np.float32)
    np.testing.assert_array_equal(quotients(binade, division), binade / np.float32(scale))
    x = random_floats(rng, 2_000_000)
    with np.errstate(over="ignore", under="ignore"):
        exact = x / np.float32(scale)
    proved = (np.abs(exact) >= 2.0**-28) & (np.abs(x) <= division.bound)
    assert proved.sum() > 100_000
    np.testing.assert_array_equal(quotients(x[proved], division), exact[proved])
    # elsewhere the quotient is tiny or clamped beyond every level: the levels agree
    for offset in (0, -128, 77):
        levels = np.clip(np.rint(quotients(x, division) + np.float32(offset)).astype(np.float64), -128, 127)
        np.testing.assert_array_equal(levels.astype(np.int8), ref.quantize(x, scale, offset))


def test_scales_outside_the_proved_range_keep_the_division():
    assert reciprocal_division(2.0**-61) is None and reciprocal_division(2.0**61) is None
    assert reciprocal_division(2.0**-60) is not None
    assert reciprocal_division(1e-3).bound == float(np.float32(BOUND_QUOTIENT * float(np.float32(1e-3))))


@needs_avx2
@pytest.mark.parametrize("seed", range(4))
def test_fma_quantize_equals_the_reference(seed):
    rng = np.random.default_rng(60 + seed)
    scale = [float(np.float32(rng.uniform(0.002, 0.1))), float(np.float32(1 / 255)), 2.0**-6, 0.0123][seed]
    offset = int(rng.integers(-128, 128))
    x = np.concatenate([quantize_inputs(seed, scale, offset), random_floats(rng, 300_000),
                        (rng.uniform(-300, 300, 200_000) * scale).astype(np.float32)])
    x = x[: len(x) - len(x) % 32 + 7]  # a tail after the blocks of 32
    x_t, y_t = tensor(x.shape, "f32"), tensor(x.shape, q8(scale, offset))
    bundle = build(f"""
  %x = glow.placeholder "x" : {x_t}
  %y = glow.quantize %x : ({x_t}) -> {y_t}
  glow.save %y as "y" : {y_t}""")
    assert 'microkernel<"fma-quantize">' in bundle.ir["glowll"]
    np.testing.assert_array_equal(bundle.run({"x": x})["y"], ref.quantize(x, scale, offset))


@needs_avx2
def test_fma_quantize_not_taken_without_fma():
    x_t, y_t = tensor((64,), "f32"), tensor((64,), q8(0.0123, 3))
    bundle = build(f"""
  %x = glow.placeholder "x" : {x_t}
  %y = glow.quantize %x : ({x_t}) -> {y_t}
  glow.save %y as "y" : {y_t}""", target=resolve_target(mattr="-fma,-avx512f"))
    assert "fma-quantize" not in bundle.ir["glowll"]
    x = quantize_inputs(5, 0.0123, 3)[:64]
    np.testing.assert_array_equal(bundle.run({"x": x})["y"], ref.quantize(x, 0.0123, 3))
