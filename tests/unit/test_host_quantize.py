"""Glow's float to int8 quantize on a host's vector unit (`vector-quantize-int8`,
`backends.host_vector.quantize`: x clamped to +-RN(2^16 scale), divided, the offset added,
one conversion a vector, 32 levels a step, the rest one by one).

The compiled kernel against the int8 reference (`ref.quantize`: f32 division, f32 add,
rint, clip) on random bit patterns of every exponent (zeros, subnormals, huge values),
the infinities, halves of levels and their neighbours, near the clamp bound, for random
scales and zero points and the extreme scales, a length that is not a multiple of 32
included.
"""

from __future__ import annotations

import numpy as np
import pytest

from glowmlir.target import HOST
from tests.support import int8_reference as ref
from tests.unit.test_quantized_kernels import build, q8, quantize_inputs, tensor

needs_vectors = pytest.mark.skipif(HOST.vector_tile is None, reason="the host has no vector unit")


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


def quantized(x: np.ndarray, scale: float, offset: int):
    x_t, y_t = tensor(x.shape, "f32"), tensor(x.shape, q8(scale, offset))
    bundle = build(f"""
  %x = glow.placeholder "x" : {x_t}
  %y = glow.quantize %x : ({x_t}) -> {y_t}
  glow.save %y as "y" : {y_t}""")
    return bundle, bundle.run({"x": x})["y"]


@needs_vectors
@pytest.mark.parametrize("seed", range(6))
def test_vector_quantize_equals_the_reference(seed):
    rng = np.random.default_rng(60 + seed)
    scale = [float(np.float32(rng.uniform(0.002, 0.1))), float(np.float32(1 / 255)), 2.0**-6, 0.0123,
             float(np.float32(rng.uniform(1, 2) * 2.0**-40)), float(np.float32(rng.uniform(1, 2) * 2.0**40))][seed]
    offset = int(rng.integers(-128, 128))
    x = np.concatenate([quantize_inputs(seed, scale, offset), near_bound(scale), random_floats(rng, 400_000),
                        (rng.uniform(-300, 300, 100_000) * scale).astype(np.float32)])
    x = x[: len(x) - len(x) % 32 + 7]  # a tail after the blocks of 32
    bundle, levels = quantized(x, scale, offset)
    assert 'microkernel<"vector-quantize-int8">' in bundle.ir["glowll"]
    np.testing.assert_array_equal(levels, ref.quantize(x, scale, offset))


@needs_vectors
def test_a_scale_of_infinite_bound_keeps_the_generic_kernel():
    scale = float(np.float32(2.0**112))
    x = np.array([0, 1e38, -1e38, 3e38, np.inf, -np.inf, 2.0**112 * 127.5], np.float32)
    bundle, levels = quantized(x, scale, 0)
    assert "vector-quantize-int8" not in bundle.ir["glowll"]
    np.testing.assert_array_equal(levels, ref.quantize(x, scale, 0))
