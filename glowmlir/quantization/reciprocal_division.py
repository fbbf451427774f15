"""An f32 division by a compile-time constant without a division: the correctly rounded
quotient from the reciprocal and two fused multiply-adds (Markstein's theorem), proved at
compile time for each divisor; the host's input quantize (`backends.host_vector.quantize`)
takes it for half of its vectors, the divider the other half.

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

* x > `bound` = RN(2^16 s) (and +infinity): the kernel clamps x to bound first; both
  quotients are then beyond 2^16 - 1, past every int8 level, and saturate alike.
* x < -bound (and -infinity, and NaN, which the clamp passes): not clamped. The quotient,
  where nothing overflows, is within an ulp of x / s < -(2^16 - 1); where x r overflows, y
  is -infinity and e and q NaN; the kernel's conversion (`vcvtps2dq`) gives that integer
  or, for NaN and -infinity, INT_MIN: every one saturates to -128, Glow's level there (and
  the level `quantize_levels` gives NaN, whose clamp takes it to -bound).
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

(First written in commit ae62d05 for every vector of the quantize, where it was not faster
than `vdivps` alone: here the two run side by side.)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from glowmlir.quantization.float_steps import fma_singles

SCALES = (2.0**-60, 2.0**60)
"""The divisors `reciprocal_division` takes (see the module doc's last corner)."""


@dataclass(frozen=True)
class ReciprocalDivision:
    """The constants of x / scale by a multiply and two FMAs (see the module doc)."""

    scale: float
    reciprocal: float
    """RN(1 / scale) in f32."""


@lru_cache(maxsize=64)
def reciprocal_division(scale: float) -> ReciprocalDivision | None:
    """The division by `scale` (an f32) as `ReciprocalDivision`, where q = RN(x / s) for
    every significand of x (the module doc); None where not, or outside `SCALES`.

    In f64: y s is exact (48 bits) and so is x - y s (y s is within a factor 2 of x: 49
    bits), so e is that difference rounded once to f32; e r + y is rounded in f64 before
    f32, twice, which differs from the FMA's one rounding only where the f64 sum is exactly
    halfway between two f32s (its low 29 bits 2^28): those few are recomputed exactly
    (`float_steps.fma_singles`)."""
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
    q[halfway] = fma_singles(e[halfway], r, y[halfway])
    if not np.array_equal(q, x / s):
        return None
    return ReciprocalDivision(float(s), float(r))


def quotients(x, division: ReciprocalDivision) -> np.ndarray:
    """The kernel's quotients y, e, q of f32 `x` in [-RN(2^16 s), RN(2^16 s)], in numpy."""
    x = np.asarray(x, np.float32)
    r, s = np.float32(division.reciprocal), np.float32(division.scale)
    y = x * r
    return fma_singles(fma_singles(-y, s, x), r, y)
