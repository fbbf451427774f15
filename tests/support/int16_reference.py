"""Independent numpy references of the int16 kernels: TFLite's 16x8 scheme as TFLite Micro's
reference kernels compute it (checked against TFLite Micro's own interpreter in
tests/unit/test_tflite_micro.py).

Written from TFLite's `reference_integer_ops/conv.h` / `depthwise_conv.h` /
`fully_connected.h` (the int16 `ConvPerChannel<AccumScalar>` and friends), `common.h`'s two
`MultiplyByQuantizedMultiplier` overloads and `lut_lookup`, not from glowmlir's emitters:
activations are int16 with offset 0, weights int8, biases int32 or int64 in accumulator
units. TFLite's kernels take the accumulator type from the bias tensor's type:

* an int32 bias (`AccumScalar = int32_t`): the sums are int32 and requantize with the Q31
  multiplier as the int8 kernels do (`MultiplyByQuantizedMultiplier(int32_t, ...)`,
  gemmlowp's double rounding, `arm_nn_requantize`); a sum that leaves int32 is undefined
  behaviour in TFLite, and this reference refuses it;
* an int64 bias (`AccumScalar = int64_t`): the sums are int64 and requantize with the
  multiplier reduced to Q15 (`MultiplyByQuantizedMultiplier(int64_t, ...)`, which CMSIS-NN
  calls `arm_nn_requantize_s64`).

The int8 reference's kernels that only change their storage (pools, Add with a left shift
of 15, Mul, rescaling, softmax) are called with `bits=16`. `quantize_multiplier` is the
int8 reference's copy of TFLite's `QuantizeMultiplier`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tests.support import int8_reference as ref8
from tests.support.int8_reference import quantize_multiplier

INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1
ADD_LEFT_SHIFT = 15
SOFTMAX_OUTPUT = (1.0 / 32768.0, 0)


def requantize_s64(acc, multiplier, shift) -> np.ndarray:
    """TFLite's `MultiplyByQuantizedMultiplier(int64_t x, ...)` (CMSIS-NN's
    `arm_nn_requantize_s64`): the Q31 multiplier reduced to Q15 (rounded; 0x7FFF from
    0x7FFF0000 on), `(x * reduced + 2^(14 - shift)) >> (15 - shift)`. TFLite assumes
    |x| < 2^47 and a result within int32; beyond int32 this reference saturates (to
    [-2^31, 2^31 - 1], where TFLite's and CMSIS-NN's int32 truncation would wrap)."""
    acc, multiplier, shift = np.broadcast_arrays(np.asarray(acc, np.int64), np.asarray(multiplier, np.int64),
                                                 np.asarray(shift, np.int64))
    reduced = np.where(multiplier < 0x7FFF0000, (multiplier + (1 << 15)) >> 16, 0x7FFF)
    assert np.abs(acc).max(initial=0) < 1 << 47
    total_shift = 15 - shift
    result = (acc * reduced + (np.int64(1) << (total_shift - 1))) >> total_shift
    return np.clip(result, ref8.INT32_MIN, ref8.INT32_MAX)


def accumulates_in_int64(bias) -> bool:
    """Whether TFLite's 16x8 kernel of this bias sums in int64: its bias tensor is int64."""
    return np.asarray(bias).dtype == np.int64


def _requantized(acc: np.ndarray, bias, multiplier, shift) -> np.ndarray:
    if accumulates_in_int64(bias):
        return requantize_s64(acc, multiplier, shift)
    if acc.min(initial=0) < ref8.INT32_MIN or acc.max(initial=0) > ref8.INT32_MAX:
        raise ValueError("int32 sums overflow: TFLite's 16x8 kernel with an int32 bias is undefined here")
    return ref8.requant(acc, multiplier, shift)


def conv2d(x, w, bias, x_scale: float, w_scales, w_offsets, out_scale: float, strides=(1, 1), pads=(0, 0, 0, 0),
           dilations=(1, 1), group: int = 1, activation: str | None = None, pool: dict | None = None) -> np.ndarray:
    """16x8 convolution: int16 x (offset 0), int8 OIHW w, an int32 or int64 bias array (its
    dtype is the bias tensor's type); per-channel or per-tensor weight scales; `pool`
    (dict(kind, kernel, strides, pads)) pools the int16 outputs."""
    o = np.shape(w)[0]
    w_scales = np.broadcast_to(np.asarray(w_scales, np.float32), (o,))
    w_offsets = np.broadcast_to(np.asarray(w_offsets, np.int64), (o,))
    acc = ref8.conv2d_accumulators(x, w, bias, 0, w_offsets, strides, pads, dilations, group, int32=False)
    mult, shift = ref8.multipliers([ref8.real_multiplier(x_scale, s, out_scale) for s in w_scales])
    levels = _requantized(acc, bias, mult[None, :, None, None], shift[None, :, None, None])
    out = ref8.to_levels(np.clip(levels, *ref8.activation_range(out_scale, 0, activation, bits=16)), 16)
    if pool is not None:
        if pool["kind"] == "max":
            return ref8.max_pool(out, pool["kernel"], pool["strides"], pool["pads"], bits=16)
        return ref8.avg_pool(out, pool["kernel"], pool["strides"], pool["pads"], bits=16)
    return out


def fully_connected(x, w, bias, x_scale: float, w_type: tuple[float, int], out_scale: float,
                    activation: str | None = None) -> np.ndarray:
    """16x8 FullyConnected: int16 x [M, K], Glow's int8 weights [K, N] (per tensor), an int32
    or int64 bias array (its dtype is the bias tensor's type)."""
    w_scale, w_offset = w_type
    centred = np.asarray(w, np.int64) - w_offset
    acc = np.asarray(x, np.int64) @ centred + np.asarray(bias, np.int64)
    mult, shift = quantize_multiplier(ref8.real_multiplier(x_scale, w_scale, out_scale))
    levels = _requantized(acc, bias, mult, shift)
    return ref8.to_levels(np.clip(levels, *ref8.activation_range(out_scale, 0, activation, bits=16)), 16)


def add(a, b, a_scale: float, b_scale: float, out_scale: float, activation: str | None = None) -> np.ndarray:
    """TFLite's int16 Add: the int8 rule with a left shift of 15."""
    return ref8.add(a, b, (a_scale, 0), (b_scale, 0), (out_scale, 0), activation, left_shift=ADD_LEFT_SHIFT, bits=16)


def lookup_table(function: Callable[[np.ndarray], np.ndarray], in_scale: float, out_scale: float) -> np.ndarray:
    """TFLite's `gen_lut` for int16 in and out: 513 samples of `function` at input levels
    -32768 + 128 i, in output levels, each of the first 512 lowered by half (rounded) the
    error of linear interpolation at its step's middle; rounding half away from zero."""
    def round_away(v):
        return np.sign(v) * np.floor(np.abs(v) + 0.5)

    def out_levels(levels):
        return np.asarray(function((levels * np.float64(in_scale)).astype(np.float32)), np.float64) / out_scale

    table = np.empty(513, np.float64)
    for i in range(512):
        start = -32768 + 128 * i
        value, middle, following = out_levels(np.array([start, start + 64, start + 128], np.float64))
        sample = round_away(value)
        error = round_away((following + sample) / 2) - round_away(middle)
        table[i] = sample - round_away(error / 2)
    table[512] = round_away(out_levels(np.array([32768.0]))[0])
    return np.clip(table, INT16_MIN, INT16_MAX).astype(np.int16)


def lut_lookup(x, table: np.ndarray) -> np.ndarray:
    """TFLite's `lut_lookup` of int16 levels: base entry 256 + (x >> 7), plus the slope to
    the next entry times (x & 127), + 64, >> 7."""
    x = np.asarray(x, np.int64)
    index = 256 + (x >> 7)
    base = table.astype(np.int64)[index]
    slope = table.astype(np.int64)[index + 1] - base
    return ref8.to_levels(base + ((slope * (x & 0x7F) + 64) >> 7), 16)
