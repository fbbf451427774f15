"""Independent numpy references of the int8 kernels: TFLite's int8 reference kernels, the
arithmetic CMSIS-NN's s8 functions reproduce bit for bit.

Written from TFLite's kernels (`reference_integer_ops/*.h`, `reference/softmax.h`,
`kernel_util.cc`, `add.cc`/`mul.cc` Prepare) and CMSIS-NN's `arm_nnsupportfunctions.h` /
`arm_nn_softmax_common_s8.c`, not from glowmlir's kernel emitters, so that the two can
check each other. Nothing is imported from glowmlir: the multiplier every kernel goes
through is TFLite's `QuantizeMultiplier` (`quantization_util.cc`) and its application
CMSIS-NN's `arm_nn_requantize` (`arm_nnsupportfunctions.h`), both written out below.

Conventions: level arrays are int8 numpy arrays (results are returned as int8), all
intermediate arithmetic is int64 (C int32 wrap-around is written out where the C code
relies on it); layouts are Glow's: NCHW activations, OIHW filters, FullyConnected
weights [in, out]. A quantized level `q` of a type (scale, offset) stands for
`scale * (q - offset)`; scales are float32 values.

Multiplier derivation follows TFLite's Prepare functions: the real multiplier of a
Convolution / FullyConnected / Mul is `double(s_a) * double(s_b) / double(s_out)`
(`product="double"`); `product="float32"` instead rounds `s_a * s_b` to float32 first
(Glow's and the bias type's product), for comparing the two rules.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

INT8_MIN, INT8_MAX = -128, 127
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1

# ----------------------------------------------------------------------------- small helpers


def f32(value: float) -> float:
    """`value` rounded to float32, as a Python float."""
    return float(np.float32(value))


def wrap_int32(values):
    """Two's-complement truncation to int32 (what C's int32 arithmetic does on overflow)."""
    values = np.asarray(values, dtype=np.int64)
    return ((values + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def c_div(dividend, divisor):
    """C integer division: truncates toward zero."""
    dividend = np.asarray(dividend, dtype=np.int64)
    divisor = np.asarray(divisor, dtype=np.int64)
    quotient = np.abs(dividend) // np.abs(divisor)
    return np.where((dividend < 0) != (divisor < 0), -quotient, quotient)


def to_int8(levels) -> np.ndarray:
    return to_levels(levels, 8)


def level_range(bits: int = 8) -> tuple[int, int]:
    """The signed levels of `bits`-bit storage."""
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def to_levels(levels, bits: int = 8) -> np.ndarray:
    """Levels as int8 (int16 with `bits=16`: the int16 reference reuses these kernels)."""
    levels = np.asarray(levels, dtype=np.int64)
    low, high = level_range(bits)
    assert levels.min(initial=0) >= low and levels.max(initial=0) <= high, f"level outside int{bits}"
    return levels.astype(np.int8 if bits == 8 else np.int16)


def real_multiplier(scale_a: float, scale_b: float, scale_out: float, product: str = "double") -> float:
    """`s_a * s_b / s_out` as TFLite computes it (double), or with a float32 product first."""
    if product == "double":
        return float(np.float64(np.float32(scale_a)) * np.float64(np.float32(scale_b))) / float(np.float32(scale_out))
    if product == "float32":
        return float(np.float32(scale_a) * np.float32(scale_b)) / float(np.float32(scale_out))
    raise ValueError(product)


def round_half_away(value: float) -> float:
    """`TfLiteRound` (`std::round`): half away from zero."""
    return math.copysign(math.floor(abs(value) + 0.5), value)


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite's `QuantizeMultiplier` (`kernels/internal/quantization_util.cc`), non-emulated
    float branch: `(q, shift) = frexp(real)`, `q_fixed = TfLiteRound(q * 2^31)`; a q_fixed of
    2^31 is halved with `shift + 1`; a shift below -31 flushes to (0, 0); 0 gives (0, 0).
    `real ~ multiplier * 2^(shift - 31)`, shift > 0 meaning a left shift."""
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(float(real))
    q_fixed = int(round_half_away(q * (1 << 31)))
    assert q_fixed <= 1 << 31
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    assert q_fixed <= INT32_MAX
    if shift < -31:
        return 0, 0
    return q_fixed, shift


def multipliers(reals) -> tuple[np.ndarray, np.ndarray]:
    """(multiplier, shift) int64 arrays of TFLite's QuantizeMultiplier over `reals`."""
    pairs = [quantize_multiplier(float(r)) for r in np.ravel(reals)]
    shape = np.shape(reals)
    return (np.array([m for m, _ in pairs], np.int64).reshape(shape),
            np.array([s for _, s in pairs], np.int64).reshape(shape))


def requant(acc, multiplier, shift) -> np.ndarray:
    """CMSIS-NN's `arm_nn_requantize` (the default, double-rounding branch; TFLite's
    `MultiplyByQuantizedMultiplier(int32_t, ...)` computes the same) on int64 arrays holding
    int32 values, multiplier/shift broadcast: `divide_by_power_of_two(
    doubling_high_mult_no_sat(acc * (1 << LEFT_SHIFT(shift)), multiplier), RIGHT_SHIFT(shift))`,
    where `doubling_high_mult_no_sat(a, b)` is `(a * b + 2^30) >> 31` in int64."""
    acc, multiplier, shift = np.broadcast_arrays(np.asarray(acc, np.int64), np.asarray(multiplier, np.int64),
                                                 np.asarray(shift, np.int64))
    assert acc.min(initial=0) >= INT32_MIN and acc.max(initial=0) <= INT32_MAX, "accumulator outside int32"
    scaled = wrap_int32(acc << np.maximum(shift, 0))
    high = wrap_int32((scaled * multiplier + (1 << 30)) >> 31)
    return divide_by_power_of_two(high, np.maximum(-shift, 0))


# ----------------------------------------------------------------------------- quantize / activation bounds


def quantize(values, scale: float, offset: int) -> np.ndarray:
    """Glow's quantize: `clip(nearbyint(x / scale + offset))` computed in float32, half to even."""
    x = np.asarray(values, dtype=np.float32)
    with np.errstate(over="ignore"):
        levels = np.rint(x / np.float32(scale) + np.float32(offset))
    return np.clip(levels.astype(np.float64), INT8_MIN, INT8_MAX).astype(np.int8)


def dequantize(levels, scale: float, offset: int) -> np.ndarray:
    """`scale * (q - offset)` in float32."""
    return (np.asarray(levels, dtype=np.int64) - offset).astype(np.float32) * np.float32(scale)


def quantize_level(real: float, scale: float, offset: int) -> int:
    return int(quantize(np.float32(real), scale, offset))


def activation_range(out_scale: float, out_offset: int, activation: str | None = None,
                     clip_min: float | None = None, clip_max: float | None = None, bits: int = 8) -> tuple[int, int]:
    """The clamp bounds of a result in its own quantized domain: the int8 (`bits`) range; relu:
    [max(-128, q(0)), 127]; clip: the real bounds quantized with the output's parameters."""
    low, high = level_range(bits)

    def level(real: float) -> int:
        return int(np.clip(np.rint(np.float32(real) / np.float32(out_scale) + np.float32(out_offset)), low, high))

    if activation is None:
        return low, high
    if activation == "relu":
        return max(low, level(0.0)), high
    if activation == "clip":
        return max(low, level(clip_min)), min(high, level(clip_max))
    raise ValueError(activation)


# ----------------------------------------------------------------------------- convolution


def conv2d_accumulators(x, w, bias, x_offset: int, w_offsets, strides=(1, 1), pads=(0, 0, 0, 0),
                        dilations=(1, 1), group: int = 1, int32: bool = True) -> np.ndarray:
    """int64 accumulators `bias[o] + sum (x - x_offset) * (w - w_offset[o])`, NCHW / OIHW,
    pads = (top, left, bottom, right); padded taps contribute nothing (real zero). `int32`:
    they must fit int32 (the int8 kernels' sums)."""
    x = np.asarray(x, np.int64) - int(x_offset)
    w = np.asarray(w, np.int64) - np.broadcast_to(np.asarray(w_offsets, np.int64), (w.shape[0],))[:, None, None, None]
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    assert c == cg * group and o % group == 0
    sy, sx = strides
    dy, dx = dilations
    pt, pl, pb, pr = pads
    xp = np.zeros((n, c, h + pt + pb, wd + pl + pr), np.int64)
    xp[:, :, pt:pt + h, pl:pl + wd] = x
    out_h = (h + pt + pb - dy * (kh - 1) - 1) // sy + 1
    out_w = (wd + pl + pr - dx * (kw - 1) - 1) // sx + 1
    acc = np.zeros((n, o, out_h, out_w), np.int64)
    og = o // group
    for g in range(group):
        xg = xp[:, g * cg:(g + 1) * cg]
        wg = w[g * og:(g + 1) * og]
        for ky in range(kh):
            for kx in range(kw):
                y0, x0 = ky * dy, kx * dx
                taps = xg[:, :, y0:y0 + sy * (out_h - 1) + 1:sy, x0:x0 + sx * (out_w - 1) + 1:sx]
                acc[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", taps, wg[:, :, ky, kx])
    acc += np.asarray(bias, np.int64)[None, :, None, None]
    assert not int32 or (acc.min() >= INT32_MIN and acc.max() <= INT32_MAX), "accumulator overflows int32"
    return acc


def conv2d(x, w, bias, x_type: tuple[float, int], w_scales, w_offsets, out_type: tuple[float, int],
           strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), group: int = 1,
           activation: str | None = None, clip_min: float | None = None, clip_max: float | None = None,
           pool: dict | None = None, product: str = "double") -> np.ndarray:
    """Quantized convolution (TFLite `reference_integer_ops::ConvPerChannel`): per-tensor
    weights pass one scale/offset, per-channel symmetric weights one scale per output
    channel. `pool` (a fused pooling window: dict(kind, kernel, strides, pads,
    count_include_pad)) pools the requantized, clamped int8 outputs."""
    x_scale, x_offset = x_type
    out_scale, out_offset = out_type
    o = np.shape(w)[0]
    w_scales = np.broadcast_to(np.asarray(w_scales, np.float32), (o,))
    acc = conv2d_accumulators(x, w, bias, x_offset, w_offsets, strides, pads, dilations, group)
    mult, shift = multipliers([real_multiplier(x_scale, s, out_scale, product) for s in w_scales])
    levels = requant(acc, mult[None, :, None, None], shift[None, :, None, None]) + out_offset
    low, high = activation_range(out_scale, out_offset, activation, clip_min, clip_max)
    out = to_int8(np.clip(levels, low, high))
    if pool is not None:
        pooling = max_pool if pool["kind"] == "max" else avg_pool
        extra = {} if pool["kind"] == "max" else {"count_include_pad": pool.get("count_include_pad", False),
                                                  "offset": out_offset}
        out = pooling(out, pool["kernel"], pool["strides"], pool["pads"], **extra)
    return out


# ----------------------------------------------------------------------------- pooling


def _windows(x, kernel, strides, pads, fill):
    """(taps [kh*kw, N, C, OH, OW], valid mask of the same shape) of a pooling window."""
    x = np.asarray(x, np.int64)
    n, c, h, w = x.shape
    kh, kw = kernel
    sy, sx = strides
    pt, pl, pb, pr = pads
    xp = np.full((n, c, h + pt + pb, w + pl + pr), fill, np.int64)
    xp[:, :, pt:pt + h, pl:pl + w] = x
    valid = np.zeros_like(xp, dtype=bool)
    valid[:, :, pt:pt + h, pl:pl + w] = True
    out_h = (h + pt + pb - kh) // sy + 1
    out_w = (w + pl + pr - kw) // sx + 1
    taps, masks = [], []
    for ky in range(kh):
        for kx in range(kw):
            window = (slice(None), slice(None), slice(ky, ky + sy * (out_h - 1) + 1, sy),
                      slice(kx, kx + sx * (out_w - 1) + 1, sx))
            taps.append(xp[window])
            masks.append(valid[window])
    return np.stack(taps), np.stack(masks)


def max_pool(x, kernel, strides, pads, bits: int = 8) -> np.ndarray:
    """TFLite int8 (`bits`) MaxPool on the raw levels; padded taps are ignored."""
    low = level_range(bits)[0]
    taps, valid = _windows(x, kernel, strides, pads, low)
    return to_levels(np.where(valid, taps, low - 1).max(axis=0), bits)


def avg_pool(x, kernel, strides, pads, count_include_pad: bool = False, offset: int = 0, bits: int = 8) -> np.ndarray:
    """TFLite int8 AveragePool on the raw levels (input and output share their parameters):
    the sum of the taps divided by their number, rounded half away from zero
    (`(sum +- count / 2) / count` in C). Padded taps are skipped, or, with
    `count_include_pad`, count as real zeros: level `offset`, divided by the whole window."""
    taps, valid = _windows(x, kernel, strides, pads, offset)
    if count_include_pad:
        total = taps.sum(axis=0)
        count = np.full(total.shape, kernel[0] * kernel[1], np.int64)
    else:
        total = np.where(valid, taps, 0).sum(axis=0)
        count = valid.sum(axis=0).astype(np.int64)
    average = np.where(total > 0, c_div(total + count // 2, count), c_div(total - count // 2, count))
    return to_levels(np.clip(average, *level_range(bits)), bits)


# ----------------------------------------------------------------------------- fully connected


def fully_connected(x, w, bias, x_type: tuple[float, int], w_type: tuple[float, int], out_type: tuple[float, int],
                    activation: str | None = None, clip_min: float | None = None, clip_max: float | None = None,
                    product: str = "double") -> np.ndarray:
    """TFLite int8 FullyConnected: x [M, K], Glow weights [K, N] (per tensor, any offset), bias [N]."""
    (x_scale, x_offset), (w_scale, w_offset), (out_scale, out_offset) = x_type, w_type, out_type
    acc = (np.asarray(x, np.int64) - x_offset) @ (np.asarray(w, np.int64) - w_offset) + np.asarray(bias, np.int64)
    assert acc.min() >= INT32_MIN and acc.max() <= INT32_MAX
    mult, shift = quantize_multiplier(real_multiplier(x_scale, w_scale, out_scale, product))
    low, high = activation_range(out_scale, out_offset, activation, clip_min, clip_max)
    return to_int8(np.clip(requant(acc, mult, shift) + out_offset, low, high))


# ----------------------------------------------------------------------------- elementwise


def rescale(x, in_type: tuple[float, int], out_type: tuple[float, int], activation: str | None = None,
            clip_min: float | None = None, clip_max: float | None = None, bits: int = 8) -> np.ndarray:
    """Relu / Clip / RescaleQuantized (TFLite Requantize): `requantize(x - in_offset,
    in_scale / out_scale) + out_offset`, clamped to the activation's range."""
    (in_scale, in_offset), (out_scale, out_offset) = in_type, out_type
    mult, shift = quantize_multiplier(float(np.float32(in_scale)) / float(np.float32(out_scale)))
    levels = requant(np.asarray(x, np.int64) - in_offset, mult, shift) + out_offset
    low, high = activation_range(out_scale, out_offset, activation, clip_min, clip_max, bits)
    return to_levels(np.clip(levels, low, high), bits)


ADD_LEFT_SHIFT = 20


def add(a, b, a_type: tuple[float, int], b_type: tuple[float, int], out_type: tuple[float, int],
        activation: str | None = None, clip_min: float | None = None, clip_max: float | None = None,
        subtract: bool = False, left_shift: int = ADD_LEFT_SHIFT, bits: int = 8) -> np.ndarray:
    """TFLite int8 Add (numpy broadcasting): inputs shifted left by 20, each rescaled by
    `s_i / (2 max(s_a, s_b))`, summed, rescaled by `2 max(s_a, s_b) / (2^20 s_out)`. With
    `subtract`, TFLite's int8 Sub: the same with the second scaled input subtracted. (Its
    int16 Add: `left_shift` 15, `bits` 16.)"""
    (sa, oa), (sb, ob), (so, oo) = a_type, b_type, out_type
    sa, sb, so = f32(sa), f32(sb), f32(so)
    twice_max = 2.0 * max(sa, sb)
    ma, sha = quantize_multiplier(sa / twice_max)
    mb, shb = quantize_multiplier(sb / twice_max)
    mo, sho = quantize_multiplier(twice_max / ((1 << left_shift) * so))
    a_, b_ = np.broadcast_arrays(np.asarray(a, np.int64), np.asarray(b, np.int64))
    scaled_a = requant((a_ - oa) * (1 << left_shift), ma, sha)
    scaled_b = requant((b_ - ob) * (1 << left_shift), mb, shb)
    levels = requant(scaled_a - scaled_b if subtract else scaled_a + scaled_b, mo, sho) + oo
    low, high = activation_range(so, oo, activation, clip_min, clip_max, bits)
    return to_levels(np.clip(levels, low, high), bits)


def mul(a, b, a_type: tuple[float, int], b_type: tuple[float, int], out_type: tuple[float, int],
        product: str = "double", bits: int = 8) -> np.ndarray:
    """TFLite int8 Mul: `requantize((a - a_offset) * (b - b_offset), s_a s_b / s_out) + out_offset`."""
    (sa, oa), (sb, ob), (so, oo) = a_type, b_type, out_type
    mult, shift = quantize_multiplier(real_multiplier(sa, sb, so, product))
    a_, b_ = np.broadcast_arrays(np.asarray(a, np.int64), np.asarray(b, np.int64))
    return to_levels(np.clip(requant((a_ - oa) * (b_ - ob), mult, shift) + oo, *level_range(bits)), bits)


def leaky_relu(x, in_type: tuple[float, int], out_type: tuple[float, int], alpha: float) -> np.ndarray:
    """TFLite int8 LeakyRelu (`reference_ops::QuantizeLeakyRelu`): `x - in_offset` requantized
    by `s_in / s_out` where it is >= 0, by `s_in * alpha / s_out` where it is negative, plus
    the output offset (multipliers from double products of the float32 scales)."""
    (si, oi), (so, oo) = in_type, out_type
    identity = quantize_multiplier(f32(si) / f32(so))
    negative = quantize_multiplier(f32(si) * f32(alpha) / f32(so))
    centred = np.asarray(x, np.int64) - oi
    levels = np.where(centred >= 0, requant(centred, *identity), requant(centred, *negative)) + oo
    return to_int8(np.clip(levels, INT8_MIN, INT8_MAX))


def prelu(x, slope, x_type: tuple[float, int], slope_type: tuple[float, int],
          out_type: tuple[float, int]) -> np.ndarray:
    """TFLite int8 PRelu (`reference_ops::BroadcastPrelu4DSlow`, numpy broadcasting): `x -
    x_offset` requantized by `s_x / s_out` where it is >= 0; where negative, its product with
    `slope - slope_offset` requantized by `s_x * s_slope / s_out`."""
    (sx, ox), (ss, os_), (so, oo) = x_type, slope_type, out_type
    identity = quantize_multiplier(f32(sx) / f32(so))
    negative = quantize_multiplier(real_multiplier(sx, ss, so))
    centred, slope_ = np.broadcast_arrays(np.asarray(x, np.int64) - ox, np.asarray(slope, np.int64) - os_)
    levels = np.where(centred >= 0, requant(centred, *identity), requant(centred * slope_, *negative)) + oo
    return to_int8(np.clip(levels, INT8_MIN, INT8_MAX))


RESAMPLE_WEIGHT_BITS = 14


def resample(x, taps, weights, axis: int, in_type: tuple[float, int], out_type: tuple[float, int],
             out_bits: int = 8) -> np.ndarray:
    """One axis of an int8 Resize: output j along `axis` is `sum_t W[j, t] (x[taps[j, t]] -
    in_offset)` with the real weights as Q1.14 integers `W = round(w * 2^14)` (half to even),
    requantized by `s_in * 2^-14 / s_out`, plus the output offset, clamped to `out_bits`
    signed levels (16: a bilinear Resize's axes before its last)."""
    (si, oi), (so, oo) = in_type, out_type
    fixed = np.rint(np.asarray(weights, np.float64) * (1 << RESAMPLE_WEIGHT_BITS)).astype(np.int64)
    centred = np.moveaxis(np.asarray(x, np.int64) - oi, axis, -1)
    acc = sum(centred[..., np.asarray(taps)[:, t]] * fixed[:, t] for t in range(fixed.shape[1]))
    assert np.abs(acc).max() <= INT32_MAX
    mult, shift = quantize_multiplier(real_multiplier(si, 2.0 ** -RESAMPLE_WEIGHT_BITS, so))
    low, high = -(1 << (out_bits - 1)), (1 << (out_bits - 1)) - 1
    levels = np.clip(requant(acc, mult, shift) + oo, low, high)
    return np.moveaxis(levels, -1, axis).astype(np.int8 if out_bits == 8 else np.int16)


def concat(inputs: Sequence[np.ndarray], axis: int) -> np.ndarray:
    """Concat of inputs that all have the result's type: the levels, unchanged."""
    return np.concatenate([np.asarray(x, np.int8) for x in inputs], axis=axis)


# ----------------------------------------------------------------------------- softmax (arm_softmax_s8)

SOFTMAX_OUTPUT = (1.0 / 256.0, -128)
"""The output type TFLite requires of an int8 softmax."""

ACCUM_BITS = 12
SCALED_DIFF_INTEGER_BITS = 5


def doubling_high_mult(a, b):
    """`arm_nn_doubling_high_mult` (gemmlowp SaturatingRoundingDoublingHighMul): the
    rounding term is 2^30 or 1 - 2^30 by the product's sign, the division by 2^31 is C's
    truncating one; INT32_MIN * INT32_MIN saturates."""
    a, b = np.broadcast_arrays(np.asarray(a, np.int64), np.asarray(b, np.int64))
    nudge = np.where((a < 0) ^ (b < 0), 1 - (1 << 30), 1 << 30)
    result = wrap_int32(c_div(a * b + nudge, 1 << 31))
    return np.where((a == b) & (a == INT32_MIN), INT32_MAX, result)


def divide_by_power_of_two(dividend, exponent):
    """`arm_nn_divide_by_power_of_two`: round half away from zero. Exact for any exponent
    in [0, 62] (C only defines it up to 31; see `softmax_s8`)."""
    dividend, exponent = np.broadcast_arrays(np.asarray(dividend, np.int64), np.asarray(exponent, np.int64))
    mask = (np.int64(1) << exponent) - 1
    remainder = dividend & mask
    result = dividend >> exponent
    threshold = (mask >> 1) + (result < 0)
    return result + (remainder > threshold)


def mult_by_power_of_two(value, exponent: int):
    """`arm_nn_mult_by_power_of_two`: value * 2^exponent saturated to int32."""
    value = np.asarray(value, np.int64)
    threshold = (1 << (31 - exponent)) - 1
    result = wrap_int32(value << exponent)
    result = np.where(value > threshold, INT32_MAX, result)
    return np.where(value < -threshold, INT32_MIN, result)


_EXP_BARREL = (1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242)
"""exp(-2^k / 4) in Q0.31 for k = 0..6, applied for bits 24..30 of the remainder."""


def exp_on_negative_values(value):
    """`arm_nn_exp_on_negative_values`: exp of a Q5.26 value <= 0, in Q0.31."""
    value = np.asarray(value, np.int64)
    mod_minus_quarter = (value & ((1 << 24) - 1)) - (1 << 24)
    remainder = mod_minus_quarter - value
    x = wrap_int32((mod_minus_quarter << 5) + (1 << 28))
    x2 = doubling_high_mult(x, x)
    x3 = doubling_high_mult(x2, x)
    x4_over_4 = divide_by_power_of_two(doubling_high_mult(x2, x2), 2)
    poly = divide_by_power_of_two(wrap_int32(doubling_high_mult(wrap_int32(x4_over_4 + x3), 715827883) + x2), 1)
    result = wrap_int32(1895147668 + doubling_high_mult(1895147668, wrap_int32(x + poly)))
    for bit, constant in enumerate(_EXP_BARREL):
        result = np.where(remainder & (1 << (24 + bit)), doubling_high_mult(result, constant), result)
    return np.where(value == 0, INT32_MAX, result)


def one_over_one_plus_x_for_x_in_0_1(value: int) -> int:
    """`arm_nn_one_over_one_plus_x_for_x_in_0_1`: 1 / (1 + x) for x in [0, 1) in Q0.31
    (three Newton-Raphson steps)."""
    total = int(value) + INT32_MAX
    half_denominator = int(wrap_int32(c_div(total + (1 if total >= 0 else -1), 2)))
    x = int(wrap_int32(1515870810 + doubling_high_mult(half_denominator, -1010580540)))
    one_quarter = 1 << 29
    for _ in range(3):
        error = wrap_int32(one_quarter - doubling_high_mult(half_denominator, x))
        x = int(wrap_int32(x + mult_by_power_of_two(doubling_high_mult(x, error), 2)))
    return int(mult_by_power_of_two(x, 1))


def count_leading_zeros(value: int) -> int:
    """`__CLZ` of a uint32."""
    value = int(value) & 0xFFFFFFFF
    return 32 - value.bit_length()


def softmax_parameters(input_scale: float, beta: float = 1.0) -> tuple[int, int, int]:
    """TFLite's `PreprocessSoftmaxScaling` and `CalculateInputRadius`: (mult, shift, diff_min)."""
    total_bits = 31 - SCALED_DIFF_INTEGER_BITS
    real = min(beta * f32(input_scale) * (1 << total_bits), (1 << 31) - 1.0)
    mult, shift = quantize_multiplier(real)
    radius = ((1 << SCALED_DIFF_INTEGER_BITS) - 1) * (1 << total_bits) / (1 << shift)
    return mult, shift, -int(np.floor(radius))


def softmax_s8(x, input_scale: float, bits: int = 8) -> np.ndarray:
    """`arm_softmax_s8` over the last axis, with TFLite's parameters; output scale 1/256,
    offset -128. (`bits=16`: an int16 result of scale 1/32768 and offset 0, 15 fractional
    bits of the same quotient kept.)

    The final rounding shift is `bits_over_unit = 12 - headroom + 23`, which exceeds 31
    (undefined in C) when the row's sum of exps reaches 2^28 (over ~512 elements tied at
    the maximum); this reference then divides exactly (the true rounded quotient)."""
    fraction_bits, zero_level = (8, INT8_MIN) if bits == 8 else (bits - 1, 0)
    mult, shift, diff_min = softmax_parameters(input_scale)
    x = np.asarray(x, np.int64)
    rows = x.reshape(-1, x.shape[-1])
    out = np.empty(rows.shape, np.int64)
    for r, row in enumerate(rows):
        diff = row - row.max()
        valid = diff >= diff_min
        scaled = doubling_high_mult(wrap_int32(diff * (1 << shift)), mult)
        exps = exp_on_negative_values(np.where(valid, scaled, 0))
        total = int(wrap_int32(np.where(valid, divide_by_power_of_two(exps, ACCUM_BITS), 0).sum()))
        headroom = count_leading_zeros(total)
        normalized = int(wrap_int32((total << headroom) if total > 0 else 0))
        shifted_scale = one_over_one_plus_x_for_x_in_0_1(int(wrap_int32(normalized - INT32_MIN)))
        bits_over_unit = ACCUM_BITS - headroom + 31 - fraction_bits
        levels = divide_by_power_of_two(doubling_high_mult(shifted_scale, exps), bits_over_unit) + zero_level
        out[r] = np.where(valid, np.clip(levels, *level_range(bits)), zero_level)
    return to_levels(out.reshape(x.shape), bits)
