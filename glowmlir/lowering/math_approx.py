"""exp, log and pow for kernels, in plain float and integer arithmetic.

The bundle calls nothing outside itself, so kernels do not use `expf`/`powf` from a C
library: these approximations are emitted inline. Only fadd/fmul, comparisons, bit casts
and integer shifts are used, so they run on any core (soft-float cores included).

Error bounds (checked against numpy in tests/unit/test_math_approx.py):
* `exp(x)`: relative error below 6e-7 for x in [-87, 88]; inputs are clamped to that
  range (exp(-87) ~ 1.6e-38, so the absolute error below it is < 2e-38); exp(NaN) is NaN.
* `log(x)`: absolute error below 3e-7 for normal positive x; ln 0 = -inf, ln +inf = +inf,
  NaN for negative x and NaN (as IEEE).
* `pow(x, y) = exp(y * log(x))` for x > 0; `general_pow` adds negative and zero bases.
* `floor`, `ceil`, `sign`: exact (|x| >= 2^23, infinities and NaN come back as they are).
* `sin`, `cos`: absolute error below 1e-7 for |x| <= 1e4 (Cody-Waite reduction by pi/2,
  Cephes' sinf/cosf polynomials on [-pi/4, pi/4]); it grows with |x| beyond.
* `atan`: absolute error below 2e-7 (Cephes' atanf); `asin`, `acos`: below 3e-7 on [-1, 1],
  NaN outside it (Cephes' asinf/acosf).
* `erf`: absolute error below 3e-7 (a series below |x| = 0.5, Abramowitz-Stegun 7.1.26
  beyond; erf(+-inf) = +-1).
"""

from __future__ import annotations

import math

from xdsl.dialects import llvm
from xdsl.dialects.builtin import IntegerAttr, f32, i32
from xdsl.ir import SSAValue

from glowmlir.lowering.kernel_builder import KernelBuilder

_ROUNDING_MAGIC = 12582912.0  # 1.5 * 2^23: adding it rounds a float to an integer in the low mantissa bits
_MAGIC_BITS = 0x4B400000  # the bit pattern of 1.5 * 2^23
_EXP_TAYLOR = [1 / math.factorial(k) for k in range(9)]  # e^r for |r| <= ln(2) / 2
_LN2_HIGH, _LN2_LOW = 0.693359375, -2.12194440e-4  # Cody-Waite split: n * _LN2_HIGH is exact


def _i32(b: KernelBuilder, value: int) -> SSAValue:
    return b.emit(llvm.ConstantOp(IntegerAttr(value, i32), i32))


def _bits(b: KernelBuilder, x: SSAValue) -> SSAValue:
    return b.emit(llvm.BitcastOp(x, i32))


def _float(b: KernelBuilder, bits: SSAValue) -> SSAValue:
    return b.emit(llvm.BitcastOp(bits, f32))


def nearest_integer(b: KernelBuilder, x: SSAValue) -> SSAValue:
    """The i32 nearest an f32 of magnitude below 2^22 (ties to even), without a float-to-int
    instruction: adding 1.5 * 2^23 leaves it in the low mantissa bits, and the sum's bits less
    those of 1.5 * 2^23 are the integer. Beyond, the result keeps x's side: a non-negative
    sum's bits grow with it, a negative sum's are negative as an i32 and the subtraction
    saturates (`QADD` of the negated bits on the DSP extension), so x >= 2^22 (+inf
    included) gives at least 2^22 and x <= -2^22 (-inf included) at most -2^22. Clamped to
    bounds within +-2^22, it is the clamped nearest integer of every x but NaN (whose sign
    picks a bound)."""
    bits = _bits(b, b.fadd(x, b.f32(_ROUNDING_MAGIC)))
    return b.emit(llvm.CallIntrinsicOp("llvm.ssub.sat.i32", [bits, _i32(b, _MAGIC_BITS)], [i32]))


def small_integer_as_float(b: KernelBuilder, n: SSAValue) -> SSAValue:
    """An i32 of magnitude below 2^22 as an f32, exactly, without an int-to-float instruction:
    the bits of 1.5 * 2^23 plus n are the float 1.5 * 2^23 + n."""
    return b.fsub(_float(b, b.emit(llvm.AddOp(n, _i32(b, _MAGIC_BITS)))), b.f32(_ROUNDING_MAGIC))


def _polynomial(b: KernelBuilder, x: SSAValue, coefficients: list[float]) -> SSAValue:
    """c0 + c1 x + c2 x^2 + ... by Horner's rule."""
    result = b.f32(coefficients[-1])
    for c in reversed(coefficients[:-1]):
        result = b.fadd(b.fmul(result, x), b.f32(c))
    return result


def exp(b: KernelBuilder, x: SSAValue) -> SSAValue:
    """e^x = 2^n e^r with n = round(x / ln 2) and r = x - n ln 2 (|r| <= ln(2) / 2)."""
    # Clamped by replacing what is out of range (a NaN compares false, so it stays NaN, as
    # in expf); olt/ogt are the comparisons soft-float cores already call.
    x = b.select(b.emit(llvm.FCmpOp(x, b.f32(-87.0), "olt")), b.f32(-87.0), x)
    x = b.select(b.emit(llvm.FCmpOp(x, b.f32(88.0), "ogt")), b.f32(88.0), x)
    shifted = b.fadd(b.fmul(x, b.f32(1 / math.log(2))), b.f32(_ROUNDING_MAGIC))
    n_float = b.fsub(shifted, b.f32(_ROUNDING_MAGIC))
    r = b.fsub(b.fsub(x, b.fmul(n_float, b.f32(_LN2_HIGH))), b.fmul(n_float, b.f32(_LN2_LOW)))
    n = b.emit(llvm.SubOp(_bits(b, shifted), _i32(b, _MAGIC_BITS)))
    scale = _float(b, b.emit(llvm.ShlOp(b.emit(llvm.AddOp(n, _i32(b, 127))), _i32(b, 23))))
    return b.fmul(_polynomial(b, r, _EXP_TAYLOR), scale)


def log(b: KernelBuilder, x: SSAValue) -> SSAValue:
    """ln x = e ln 2 + ln m, x = 2^e m with m in [1, 2); ln m by the atanh series of (m-1)/(m+1).
    Outside the positive numbers, as IEEE and C's logf: ln 0 = -inf, ln +inf = +inf, NaN for a
    negative x or a NaN."""
    approximation = _log_of_positive(b, x)
    result = b.select(b.emit(llvm.FCmpOp(x, b.f32(math.inf), "oeq")), b.f32(math.inf), approximation)
    result = b.select(b.emit(llvm.FCmpOp(x, b.f32(0.0), "oeq")), b.f32(-math.inf), result)
    return b.select(b.emit(llvm.FCmpOp(x, b.f32(0.0), "ult")), b.f32(math.nan), result)  # x < 0 or NaN


def _log_of_positive(b: KernelBuilder, x: SSAValue) -> SSAValue:
    """ln x for a normal positive x (absolute error below 3e-7)."""
    bits = _bits(b, x)
    exponent = b.emit(llvm.SubOp(b.emit(llvm.LShrOp(bits, _i32(b, 23))), _i32(b, 127)))
    mantissa = _float(b, b.emit(llvm.OrOp(b.emit(llvm.AndOp(bits, _i32(b, 0x7FFFFF))), _i32(b, 0x3F800000))))
    z = b.fdiv(b.fsub(mantissa, b.f32(1.0)), b.fadd(mantissa, b.f32(1.0)))
    series = _polynomial(b, b.fmul(z, z), [2.0, 2 / 3, 2 / 5, 2 / 7, 2 / 9, 2 / 11, 2 / 13])
    return b.fadd(b.fmul(b.emit(llvm.SIToFPOp(exponent, f32)), b.f32(math.log(2))), b.fmul(z, series))


def pow(b: KernelBuilder, x: SSAValue, y: SSAValue) -> SSAValue:  # noqa: A001 - the math name
    """x^y for x > 0."""
    return exp(b, b.fmul(y, _log_of_positive(b, x)))


def general_pow(b: KernelBuilder, x: SSAValue, y: SSAValue) -> SSAValue:
    """x^y for any x, as C's powf: |x|^y, negated for a negative x and an odd integral y, NaN
    for a negative x and a fractional y; 0^y is 0, 1 or +inf as y is positive, zero or negative."""
    from glowmlir.dialects.llvm_casts import FPToSIOp

    magnitude = pow(b, b.fmax(x, b.fsub(b.f32(0.0), x)), y)
    whole = b.emit(FPToSIOp(y, i32))  # |y| < 2^31 is enough to tell odd from even
    integral = b.emit(llvm.FCmpOp(b.emit(llvm.SIToFPOp(whole, f32)), y, "oeq"))
    odd = b.int_compare("ne", b.emit(llvm.AndOp(whole, _i32(b, 1))), 0)
    negative_base = b.select(odd, b.fsub(b.f32(0.0), magnitude), magnitude)
    negative = b.select(integral, negative_base, b.f32(math.nan))
    zero_base = b.select(b.emit(llvm.FCmpOp(y, b.f32(0.0), "ogt")), b.f32(0.0),
                         b.select(b.emit(llvm.FCmpOp(y, b.f32(0.0), "oeq")), b.f32(1.0), b.f32(math.inf)))
    result = b.select(b.emit(llvm.FCmpOp(x, b.f32(0.0), "olt")), negative, magnitude)
    return b.select(b.emit(llvm.FCmpOp(x, b.f32(0.0), "oeq")), zero_base, result)


def _is(b: KernelBuilder, x: SSAValue, predicate: str, value: float) -> SSAValue:
    return b.emit(llvm.FCmpOp(x, b.f32(value), predicate))


def _negate(b: KernelBuilder, x: SSAValue) -> SSAValue:
    return b.fsub(b.f32(0.0), x)


def _abs(b: KernelBuilder, x: SSAValue) -> SSAValue:
    return b.fmax(x, _negate(b, x))


def _with_sign_of(b: KernelBuilder, magnitude: SSAValue, x: SSAValue) -> SSAValue:
    """`magnitude` negated where x < 0."""
    return b.select(_is(b, x, "olt", 0.0), _negate(b, magnitude), magnitude)


def floor(b: KernelBuilder, x: SSAValue) -> SSAValue:
    """The largest integer <= x: truncation toward zero, one less where that rounded up."""
    from glowmlir.dialects.llvm_casts import FPToSIOp

    truncated = b.emit(llvm.SIToFPOp(b.emit(FPToSIOp(x, i32)), f32))
    result = b.select(b.emit(llvm.FCmpOp(truncated, x, "ogt")), b.fsub(truncated, b.f32(1.0)), truncated)
    return b.select(_is(b, _abs(b, x), "olt", 8388608.0), result, x)  # 2^23 and above (and NaN): integral


def ceil(b: KernelBuilder, x: SSAValue) -> SSAValue:
    """-floor(-x)."""
    return _negate(b, floor(b, _negate(b, x)))


def sign(b: KernelBuilder, x: SSAValue) -> SSAValue:
    """1, -1 or 0 (and NaN for NaN)."""
    return b.select(_is(b, x, "ogt", 0.0), b.f32(1.0), b.select(_is(b, x, "olt", 0.0), b.f32(-1.0), x))


_PI_2_PARTS = (1.5703125, 4.837512969970703125e-4, 7.54978995489188216e-8)  # Cody-Waite split of pi/2
_SIN_COEFFICIENTS = [1.0, -1.6666654611e-1, 8.3321608736e-3, -1.9515295891e-4]  # of r^(2k+1)
_COS_COEFFICIENTS = [1.0, -0.5, 4.166664568298827e-2, -1.388731625493765e-3, 2.443315711809948e-5]  # of r^(2k)


def _quadrant(b: KernelBuilder, x: SSAValue) -> tuple[SSAValue, SSAValue]:
    """(n, r): x = n pi/2 + r, n an integer (as i32) and |r| <= pi/4."""
    from glowmlir.dialects.llvm_casts import FPToSIOp

    n_float = floor(b, b.fadd(b.fmul(x, b.f32(2 / math.pi)), b.f32(0.5)))
    r = x
    for part in _PI_2_PARTS:
        r = b.fsub(r, b.fmul(n_float, b.f32(part)))
    return b.emit(FPToSIOp(n_float, i32)), r


def _sin_cos_of_reduced(b: KernelBuilder, r: SSAValue) -> tuple[SSAValue, SSAValue]:
    r2 = b.fmul(r, r)
    return b.fmul(r, _polynomial(b, r2, _SIN_COEFFICIENTS)), _polynomial(b, r2, _COS_COEFFICIENTS)


def _by_quadrant(b: KernelBuilder, n: SSAValue, sine: SSAValue, cosine: SSAValue) -> SSAValue:
    """sin(n pi/2 + r) from sin r and cos r: sin, cos, -sin, -cos as n mod 4 is 0, 1, 2, 3."""
    odd = b.int_compare("ne", b.emit(llvm.AndOp(n, _i32(b, 1))), 0)
    negated = b.int_compare("ne", b.emit(llvm.AndOp(n, _i32(b, 2))), 0)
    value = b.select(odd, cosine, sine)
    return b.select(negated, _negate(b, value), value)


def sin(b: KernelBuilder, x: SSAValue) -> SSAValue:
    n, r = _quadrant(b, x)
    return _by_quadrant(b, n, *_sin_cos_of_reduced(b, r))


def cos(b: KernelBuilder, x: SSAValue) -> SSAValue:
    """cos x = sin(x + pi/2): one quadrant further."""
    n, r = _quadrant(b, x)
    return _by_quadrant(b, b.emit(llvm.AddOp(n, _i32(b, 1))), *_sin_cos_of_reduced(b, r))


_ATAN_COEFFICIENTS = [-3.33329491539e-1, 1.99777106478e-1, -1.38776856032e-1, 8.05374449538e-2]


def atan(b: KernelBuilder, x: SSAValue) -> SSAValue:
    """As Cephes' atanf: |x| reduced to [0, tan(pi/8)] by atan t = pi/2 + atan(-1/t) (t > tan 3pi/8)
    or pi/4 + atan((t-1)/(t+1)) (t > tan pi/8); an odd polynomial there."""
    t = _abs(b, x)
    large, medium = _is(b, t, "ogt", 2.414213562373095), _is(b, t, "ogt", 0.4142135623730950)
    reduced = b.select(large, _negate(b, b.fdiv(b.f32(1.0), t)),
                       b.select(medium, b.fdiv(b.fsub(t, b.f32(1.0)), b.fadd(t, b.f32(1.0))), t))
    offset = b.select(large, b.f32(math.pi / 2), b.select(medium, b.f32(math.pi / 4), b.f32(0.0)))
    z = b.fmul(reduced, reduced)
    result = b.fadd(offset, b.fadd(b.fmul(b.fmul(_polynomial(b, z, _ATAN_COEFFICIENTS), z), reduced), reduced))
    return _with_sign_of(b, result, x)


_ASIN_COEFFICIENTS = [1.6666752422e-1, 7.4953002686e-2, 4.5470025998e-2, 2.4181311049e-2, 4.2163199048e-2]


def _asin_of_small(b: KernelBuilder, t: SSAValue) -> SSAValue:
    """asin t for 0 <= t <= 0.5."""
    z = b.fmul(t, t)
    return b.fadd(b.fmul(b.fmul(_polynomial(b, z, _ASIN_COEFFICIENTS), z), t), t)


def _half_complement_root(b: KernelBuilder, t: SSAValue) -> SSAValue:
    """sqrt((1 - t) / 2) for 0 <= t (t above 1 taken as 1)."""
    return b.emit(llvm.FSqrtOp(b.fmul(b.f32(0.5), b.fsub(b.f32(1.0), b.fmin(t, b.f32(1.0))))))


def asin(b: KernelBuilder, x: SSAValue) -> SSAValue:
    """As Cephes' asinf: for |x| > 0.5, asin t = pi/2 - 2 asin(sqrt((1 - t) / 2)); NaN for |x| > 1."""
    t = _abs(b, x)
    large = _is(b, t, "ogt", 0.5)
    small = _asin_of_small(b, b.select(large, _half_complement_root(b, t), t))
    result = b.select(large, b.fsub(b.f32(math.pi / 2), b.fadd(small, small)), small)
    return b.select(_is(b, t, "ugt", 1.0), b.f32(math.nan), _with_sign_of(b, result, x))


def acos(b: KernelBuilder, x: SSAValue) -> SSAValue:
    """As Cephes' acosf: pi/2 - asin x for |x| <= 0.5; beyond, 2 asin(sqrt((1 - |x|) / 2)), taken
    from pi for a negative x; NaN for |x| > 1."""
    t = _abs(b, x)
    twice = b.fmul(b.f32(2.0), _asin_of_small(b, _half_complement_root(b, t)))
    beyond = b.select(_is(b, x, "olt", 0.0), b.fsub(b.f32(math.pi), twice), twice)
    middle = b.fsub(b.f32(math.pi / 2), _with_sign_of(b, _asin_of_small(b, t), x))
    result = b.select(_is(b, t, "ogt", 0.5), beyond, middle)
    return b.select(_is(b, t, "ugt", 1.0), b.f32(math.nan), result)


_ERF_SERIES = [2 / math.sqrt(math.pi) * (-1) ** k / (math.factorial(k) * (2 * k + 1)) for k in range(8)]  # of x^(2k+1)
_ERFC_P = 0.3275911
_ERFC_COEFFICIENTS = [0.0, 0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429]


def erf(b: KernelBuilder, x: SSAValue) -> SSAValue:
    """erf x: its Taylor series for |x| < 0.5; beyond, 1 - u P(u) e^(-x^2) with u = 1 / (1 + p|x|)
    (Abramowitz and Stegun 7.1.26), saturating at 1 (from |x| = 4 the float is 1)."""
    t = _abs(b, x)
    series = b.fmul(x, _polynomial(b, b.fmul(x, x), _ERF_SERIES))
    clamped = b.fmin(t, b.f32(4.0))
    u = b.fdiv(b.f32(1.0), b.fadd(b.f32(1.0), b.fmul(b.f32(_ERFC_P), clamped)))
    tail = b.fsub(b.f32(1.0), b.fmul(_polynomial(b, u, _ERFC_COEFFICIENTS),
                                     exp(b, _negate(b, b.fmul(clamped, clamped)))))
    return b.select(_is(b, t, "ult", 0.5), series, _with_sign_of(b, tail, x))  # NaN: the series keeps it
