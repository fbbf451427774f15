"""Glow's float to int8 quantize on a host's vector unit (`vector-quantize-int8`,
`backends.host_vector.quantize`: x clamped to +-RN(2^16 scale), divided, the offset added,
one conversion a vector, 32 levels a step, the rest one by one; on AVX2 with FMA3, with its
proved `reciprocal`, x clamped above only and half the vectors divided by the reciprocal and
two FMAs, `quantization.reciprocal_division`).

The compiled kernel against the int8 reference (`ref.quantize`: f32 division, f32 add,
rint, clip) on random bit patterns of every exponent (zeros, subnormals, huge values),
the infinities, halves of levels and their neighbours, near the clamp bound, for random
scales and zero points and the extreme scales, a length that is not a multiple of 32
included; with and without FMA3 (the reciprocal and the division alone). The numpy model
of the reciprocal's quotients (`reciprocal_division.quotients`) against numpy's f32 division
on every significand of a binade and on random floats of every exponent.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from glowmlir.backends.host_vector.target import byte_shuffles, fused_multiply_add
from glowmlir.quantization.reciprocal_division import SCALES, quotients, reciprocal_division
from glowmlir.target import HOST
from glowmlir.targets import resolve_target
from tests.support import int8_reference as ref
from tests.unit.test_quantized_kernels import _context, build, q8, quantize_inputs, tensor

needs_vectors = pytest.mark.skipif(HOST.vector_tile is None, reason="the host has no vector unit")
HOST_RECIPROCAL = (fused_multiply_add(HOST.resolved_triple, HOST.feature_list)
                   and byte_shuffles(HOST.resolved_triple, HOST.feature_list) in ("avx2", "avx512bw"))
"""The host takes the reciprocal (AVX2 with FMA3)."""
WITHOUT_FMA = {"mattr": "-fma,-avx512f"}


def random_floats(rng: np.random.Generator, count: int) -> np.ndarray:
    """Finite f32 of every exponent, either sign (random bit patterns)."""
    x = rng.integers(0, 2**32, count, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return x[np.isfinite(x)]


def near_bound(scale: float) -> np.ndarray:
    """x around +-RN(2^16 scale), where the kernel clamps, and the floats next to them."""
    bound = np.float32(2.0**16) * np.float32(scale)
    around = np.array([bound * np.float32(f) for f in (0.5, 0.999, 1, 1.001, 2)], np.float32)
    around = np.concatenate([around, np.nextafter(around, np.float32(np.inf)), np.nextafter(around, np.float32(0))])
    return np.concatenate([around, -around])


def quantized(x: np.ndarray, scale: float, offset: int, fma: bool = True):
    x_t, y_t = tensor(x.shape, "f32"), tensor(x.shape, q8(scale, offset))
    bundle = build(f"""
  %x = glow.placeholder "x" : {x_t}
  %y = glow.quantize %x : ({x_t}) -> {y_t}
  glow.save %y as "y" : {y_t}""", target=None if fma else resolve_target(**WITHOUT_FMA))
    return bundle, bundle.run({"x": x})["y"]


@needs_vectors
@pytest.mark.parametrize("fma", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_vector_quantize_equals_the_reference(seed, fma):
    rng = np.random.default_rng(60 + seed)
    scale = [float(np.float32(rng.uniform(0.002, 0.1))), float(np.float32(1 / 255)), 2.0**-6, 0.0123,
             float(np.float32(rng.uniform(1, 2) * 2.0**-40)), float(np.float32(rng.uniform(1, 2) * 2.0**40))][seed]
    offset = int(rng.integers(-128, 128))
    x = np.concatenate([quantize_inputs(seed, scale, offset), near_bound(scale), random_floats(rng, 400_000),
                        (rng.uniform(-300, 300, 100_000) * scale).astype(np.float32)])
    x = x[: len(x) - len(x) % 32 + 7]  # a tail after the blocks of 32
    bundle, levels = quantized(x, scale, offset, fma)
    assert 'microkernel<"vector-quantize-int8"' in bundle.ir["glowll"]
    assert ("reciprocal =" in bundle.ir["glowll"]) == (fma and HOST_RECIPROCAL)
    np.testing.assert_array_equal(levels, ref.quantize(x, scale, offset))


@needs_vectors
@pytest.mark.parametrize("fma", [True, False])
def test_nan_and_the_far_negative_side_give_the_lowest_level(fma):
    """NaN (which the reciprocal's kernel does not clamp), -infinity and x far below -bound, in
    the divided vectors and in the reciprocal's, give -128 (as the division alone gives it)."""
    scale, offset = 0.0123, 40
    far = np.array([np.nan, -np.inf, -3e38, -1e30, -2.0**31 * 0.0123, -2.0**17 * 0.0123, np.inf, 3e38], np.float32)
    x = np.tile(far, 8)  # each value in each of a block's four vectors
    bundle, levels = quantized(x, scale, offset, fma)
    expected = np.tile(np.array([-128] * 6 + [127, 127], np.int8), 8)
    np.testing.assert_array_equal(levels, expected)


EDGE_SCALES = [1.0, 2.0**-7, float(np.float32(2 - 2**-23)), float(np.float32(1 + 2**-23)),
               float(np.float32(2 - 2**-23)) * 2**-8, float(np.float32(1 / 255)), float(np.float32(0.0123))]
"""Powers of two, significands of all ones and of one low bit, 1 / 255 (an image's scale)."""


@pytest.mark.parametrize("scale", [float(np.float32(s)) for s in np.random.default_rng(2).uniform(1, 2, 3)
                                   * 2.0 ** np.array([-20, -5, 6])] + EDGE_SCALES)
def test_reciprocal_quotients_equal_the_division(scale):
    division = reciprocal_division(scale)
    assert division is not None and division.reciprocal == float(np.float32(1) / np.float32(scale))
    rng = np.random.default_rng(int(np.float32(scale).view(np.uint32)))
    # a binade of x whose quotients are near 1, inside the clamp
    binade = np.ldexp((np.arange(1 << 23, dtype=np.uint32) | np.uint32(0x3F800000)).view(np.float32),
                      int(np.floor(np.log2(scale)))).astype(np.float32)
    np.testing.assert_array_equal(quotients(binade, division), binade / np.float32(scale))
    x = random_floats(rng, 1_000_000)
    bound = np.float32(2.0**16) * np.float32(scale)
    with np.errstate(over="ignore", under="ignore"):
        exact = x / np.float32(scale)
    proved = (np.abs(exact) >= 2.0**-28) & (np.abs(x) <= bound)
    assert proved.sum() > 10_000
    np.testing.assert_array_equal(quotients(x[proved], division), exact[proved])
    inside = np.abs(x) <= bound  # the quotients too small for the theorem: the levels agree
    for offset in (0, -128, 77):
        levels = np.clip(np.rint(quotients(x[inside], division) + np.float32(offset)).astype(np.float64), -128, 127)
        np.testing.assert_array_equal(levels.astype(np.int8), ref.quantize(x[inside], scale, offset))


def test_scales_outside_the_proved_range_keep_the_division():
    assert reciprocal_division(SCALES[0] / 2) is None and reciprocal_division(SCALES[1] * 2) is None
    assert reciprocal_division(SCALES[0]) is not None and reciprocal_division(SCALES[1]) is not None


@pytest.mark.skipif(not HOST_RECIPROCAL, reason="the host takes no reciprocal")
def test_a_reciprocal_not_the_proved_one_is_refused():
    glowll_text = quantized(np.zeros(64, np.float32), 0.0123, 3)[0].ir["glowll"]
    wrong = glowll_text.replace("reciprocal = 81.3008194 : f32", "reciprocal = 81.3008118 : f32")
    assert wrong != glowll_text
    with pytest.raises(VerifyException, match="reciprocal"):
        Parser(_context(), wrong).parse_module().verify()


@needs_vectors
def test_a_scale_of_infinite_bound_keeps_the_generic_kernel():
    scale = float(np.float32(2.0**112))
    x = np.array([0, 1e38, -1e38, 3e38, np.inf, -np.inf, 2.0**112 * 127.5], np.float32)
    bundle, levels = quantized(x, scale, 0)
    assert "vector-quantize-int8" not in bundle.ir["glowll"]
    np.testing.assert_array_equal(levels, ref.quantize(x, scale, 0))
