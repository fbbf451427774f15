"""An f32 division by a compile-time constant without a division: the correctly rounded
quotient from the reciprocal and two fused multiply-adds (Markstein's theorem), proved at
compile time for each divisor; Glow's quantize `nearbyint(f32(f32(x / scale) + offset))`
takes it on targets with FMA (`backends.host_vector.quantize`).

For a divisor s > 0, with r = RN(1 / s) (a constant):

    y = RN(x * r),  e = fma(-y, s, x),  q = fma(e, r, y)

Markstein's theorem (Muller et al., Handbook of Floating-Point Arithmetic, the division
theorems with an FMA): if r is within half an ulp of 1 / s (it is RN(1 / s)) and y within
one ulp of x / s, then e = x - y s is exact and q = RN(x / s), barring underflow and
overflow. y = RN(x * r) is not always within one ulp (for s = 0.0123, 7% of significands
are not) and q was still RN(x / s) on every significand of 300 random scales; no theorem
given here covers that, so `reciprocal_division` checks q = RN(x / s) for every significand
of x (the 2^23 floats of [1, 2), in 0.2 s; every step scales with x's exponent, so that
binade stands for all), else gives None and the division stays.

The corners, where the theorem's conditions fail, and why the quantized level is Glow's:

* |x| > `bound` = RN(2^16 s) (and the infinities): x is clamped to +-bound first (y would
  overflow and q be NaN for an infinite x); both quotients are then beyond 2^16 - 1, far past
  the int8 range, and clamp to the same level. NaN passes the clamp (ordered compares) and
  gives what the division gives.
* |x / s| < 2^-28 (x = 0 and subnormal x included): e and q may be rounded in the subnormal
  range and differ from RN(x / s), but both stay below 2^-26 (|y| <= |x r| + 2^-149,
  |e| <= |x| + |y| s, |q| <= |e| r + |y| + 2^-149 with r <= 2^60), and so does RN(x / s):
  `nearbyint(f32(q + offset))` is then the offset for either (a sum within 2^-25 of an
  integer rounds to it).
* In between (2^-28 <= |x / s|, |x| <= bound) with 2^-60 <= s <= 2^60 (`SCALES`), nothing
  overflows (|y| <= 2^17) and nothing is rounded in the subnormal range: y and q are at
  least 2^-29, and e = x - y s is a multiple of ulp(y) ulp(s) >= 2^-29-23-60-23 = 2^-135,
  so rounded as in [1, 2) or, below 2^-126, exact (subnormals hold every multiple of 2^-149):
  the binade checked is every binade.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

SCALES = (2.0**-60, 2.0**60)
"""The divisors `reciprocal_division` takes (see the module doc's last corner)."""

BOUND_QUOTIENT = 2.0**16
"""x is clamped to +-RN(BOUND_QUOTIENT * s): quotients beyond it are past every int8 level."""


@dataclass(frozen=True)
class ReciprocalDivision:
    """The constants of x / scale by a multiply and two FMAs (see the module doc)."""

    scale: float
    reciprocal: float
    """RN(1 / scale) in f32."""
    bound: float
    """RN(BOUND_QUOTIENT * scale) in f32: |x| is clamped to it first."""


@lru_cache(maxsize=64)
def reciprocal_division(scale: float) -> ReciprocalDivision | None:
    """The division by `scale` (an f32) as `ReciprocalDivision`, where q = RN(x / s) for
    every significand of x (the module doc); None where not, or outside `SCALES`.

    In f64: y s is exact (48 bits) and so is x - y s (y s is within a factor 2 of x: 49
    bits), so e is that difference rounded once to f32; e r + y is rounded in f64 before
    f32, twice, which differs from the FMA's one rounding only where the f64 sum is exactly
    halfway between two f32s (its low 29 bits 2^28): those few are recomputed exactly."""
    s = np.float32(scale)
    if not (SCALES[0] <= float(s) <= SCALES[1]):
        return None
    r = np.float32(1) / s
    x = (np.arange(1 << 23, dtype=np.uint32) | np.uint32(0x3F800000)).view(np.float32)
    y = x * r
    e = (x.astype(np.float64) - y.astype(np.float64) * float(s)).astype(np.float32)
    total = e.astype(np.float64) * float(r) + y
    q = total.astype(np.float32)
    halfway = np.flatnonzero((total.view(np.uint64) & np.uint64((1 << 29) - 1)) == np.uint64(1 << 28))
    q[halfway] = fused_multiply_add(e[halfway], r, y[halfway])
    if not np.array_equal(q, x / s):
        return None
    return ReciprocalDivision(float(s), float(r), float(np.float32(BOUND_QUOTIENT * float(s))))


def fused_multiply_add(a, b, c) -> np.ndarray:
    """fma(a, b, c) on f32 arrays, rounded once to f32 as the instruction rounds (for the
    tests): a b is exact in f64, the f64 sum's rounding error is recovered (TwoSum), and where
    the f64 sum is exactly halfway between two f32s that error picks the side."""
    a, b, c = (np.asarray(v, np.float32).astype(np.float64) for v in (a, b, c))
    product = a * b
    total = product + c
    virtual = total - product
    error = (product - (total - virtual)) + (c - virtual)
    rounded = total.astype(np.float32)
    nearest = rounded.astype(np.float64)
    other = np.where(nearest < total, np.nextafter(rounded, np.float32(np.inf)),
                     np.nextafter(rounded, np.float32(-np.inf))).astype(np.float64)
    halfway = ((nearest + other) / 2 == total) & (error != 0)
    nudged = np.where(error > 0, np.nextafter(total, np.inf), np.nextafter(total, -np.inf)).astype(np.float32)
    return np.where(halfway, nudged, rounded)


def quotients(x, division: ReciprocalDivision) -> np.ndarray:
    """The kernel's quotients of f32 `x` in numpy: clamped to +-bound, then y, e, q."""
    bound = np.float32(division.bound)
    x = np.asarray(x, np.float32)
    clamped = np.where(x < -bound, -bound, np.where(x > bound, bound, x))
    r, s = np.float32(division.reciprocal), np.float32(division.scale)
    with np.errstate(invalid="ignore"):
        y = clamped * r
        e = fused_multiply_add(-y, s, clamped)
        return fused_multiply_add(e, r, y)
