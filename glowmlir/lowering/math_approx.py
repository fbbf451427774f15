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
