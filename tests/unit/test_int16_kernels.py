"""The int16 kernels (`-quantization-precision=Int16`: TFLite's 16x8 scheme, CMSIS-NN's s16
arithmetic), compiled to host bundles, against the independent numpy reference
(tests/support/int16_reference.py), bit for bit: random int16 inputs over the whole range
(offset 0), random int8 weights, int32 biases, random scales.

Convolutions and FullyConnected sum in int32 where no output can overflow it, else in int64
(`wide_accumulators`); both are exercised, the second with weights at the ends of the int8
range over many taps.
"""

from __future__ import annotations

import numpy as np
import pytest

from glowmlir.quantization.params import quantize_multiplier
from tests.support import int8_reference as ref8
from tests.support import int16_reference as ref
from tests.unit.test_quantized_kernels import (
    CONVOLUTIONS,
    build,
    convolution_text,
    exact,
    ints,
    lookup_table_text,
    q8,
    q8_channels,
    q16,
    q32,
    q32_channels,
    run,
    scale,
    spread_scale,
    tensor,
)


def levels16(rng: np.random.Generator, *shape) -> np.ndarray:
    return rng.integers(-32768, 32768, shape, dtype=np.int16)


def s16(scale_: float) -> str:
    return q16(scale_, 0)


def spread16(reals: np.ndarray) -> float:
    """An output scale putting the standard deviation of `reals` at ~10,000 int16 levels."""
    return spread_scale(reals, 10000.0)


def assert_spread16(y: np.ndarray) -> None:
    assert len(np.unique(y)) > min(200, y.size // 4), np.unique(y)


# ----------------------------------------------------------------------------- convolution


def wide(element: str) -> str:
    """An i32 bias type as the i64 one of the same scales (an int16 layer's bias beyond int32)."""
    return element.replace("<i32:", "<i64:")


def convolution_case(seed: int, geometry, per_channel: bool, activation: str | None = None, pool: dict | None = None,
                     extreme_weights: bool = False, bias_bits: int = 32, suffix: str = ""):
    """(glow body, inputs, constants, expected) of a random 16x8 convolution (with `bias_bits`
    64, an int64 bias of levels 2^31 to 2^34 either way, the output range covering it all);
    its values are named x, w, b and y + `suffix`."""
    x_shape, w_shape, strides, pads, dilations, group = geometry
    rng = np.random.default_rng(seed)
    out_c = w_shape[0]
    x = levels16(rng, *x_shape)
    w = (rng.choice(np.array([-127, 127], np.int8), w_shape) if extreme_weights
         else rng.integers(-128, 128, w_shape, dtype=np.int8))
    x_scale = ref8.f32(scale(rng) / 256)
    if per_channel:
        w_scales = np.array([scale(rng) for _ in range(out_c)], np.float32)
        w_offsets = np.zeros(out_c, np.int64)
        w_element, b_element = q8_channels(w_scales), q32_channels((np.float32(x_scale) * w_scales).astype(np.float32))
    else:
        w_scales = np.full(out_c, scale(rng), np.float32)
        w_offsets = np.full(out_c, 0 if extreme_weights else int(rng.integers(-20, 21)), np.int64)
        w_element, b_element = q8(w_scales[0], w_offsets[0]), q32(np.float32(x_scale) * w_scales[0])
    bias = (rng.choice([-1, 1], out_c) * rng.integers(1 << 31, 1 << 34, out_c) if bias_bits == 64
            else rng.integers(-2_000_000, 2_000_001, out_c).astype(np.int32))
    acc = ref8.conv2d_accumulators(x, w, bias, 0, w_offsets, strides, pads, dilations, group, int32=False)
    reals = acc * (np.float64(x_scale) * w_scales[None, :, None, None])
    if bias_bits == 64:
        b_element = wide(b_element)
        out_scale = ref8.f32(np.abs(reals).max() / 30000)
    else:
        out_scale = spread16(reals)
    centred = w.astype(np.int64).reshape(out_c, -1) - w_offsets[:, None]
    expected = ref.conv2d(x, w, as_tflite_bias(bias, centred), x_scale, w_scales, w_offsets, out_scale,
                          strides, pads, dilations, group, activation, pool)
    types = (tensor(x_shape, s16(x_scale)), tensor(w_shape, w_element), tensor((out_c,), b_element),
             tensor(expected.shape, s16(out_scale)))
    body, (x_, w_, b_, _) = convolution_text(suffix, types, geometry, activation, pool)
    return body, {x_: x}, {w_: w, b_: bias}, expected


def as_tflite_bias(bias: np.ndarray, centred_weights: np.ndarray) -> np.ndarray:
    """The bias TFLite's 16x8 kernel must be given to compute what glowmlir computes. TFLite
    takes the accumulator from the bias tensor's type (int32 sums and the Q31 multiplier, or
    int64 sums and the Q15 one); glowmlir takes it from the layer's worst case, so a layer
    with an int32 bias whose sums could leave int32 for some input (|bias| + 32768 x sum
    |w - w_offset| over an output's taps, `centred_weights` [outputs, taps]) is computed as
    TFLite computes it with the bias widened to int64 (TFLite's int32 kernel could overflow
    there; the converter writes int64 biases for 16x8 layers)."""
    bias = np.asarray(bias)
    bound = np.abs(bias.astype(np.int64)) + 32768 * np.abs(centred_weights).sum(axis=1)
    return bias.astype(np.int64) if int(bound.max()) > ref8.INT32_MAX else bias


def check_sums(body: str, inputs: dict, constants: dict, expected: np.ndarray, wide: bool) -> None:
    """The layer sums in int64 (`wide_accumulators`) exactly when `wide`; its outputs are
    the reference's."""
    bundle = build(body, constants)
    assert ("wide_accumulators" in bundle.ir["glowll"]) == wide
    np.testing.assert_array_equal(bundle.run(inputs)["y"], expected)


@pytest.mark.parametrize("name,per_channel,activation", [
    ("3x3_pad1", False, None), ("stride2", True, "relu"), ("depthwise", False, "relu"), ("depthwise_x2", True, None),
    ("groups2", False, None), ("non_square", True, None), ("1x1", False, "relu")])
def test_convolution(name, per_channel, activation):
    body, inputs, constants, expected = convolution_case(1600 + list(CONVOLUTIONS).index(name), CONVOLUTIONS[name],
                                                         per_channel, activation)
    actual = run(body, inputs, constants)["y"]
    assert actual.dtype == np.int16
    assert_spread16(expected)
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("pool", [dict(kind="max", kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0)),
                                  dict(kind="avg", kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))])
def test_convolution_fused_pool(pool):
    body, inputs, constants, expected = convolution_case(1650 + len(pool["kind"]), CONVOLUTIONS["3x3_pad1"], False,
                                                         "relu", pool)
    np.testing.assert_array_equal(run(body, inputs, constants)["y"], expected)


WIDE = ((1, 64, 5, 5), (6, 64, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1)
"""576 taps of weights +-127: 32768 x 127 x 576 > 2^31, the sums must be int64."""


@pytest.mark.parametrize("per_channel,pool", [(False, None), (True, None),
                                              (False, dict(kind="max", kernel=(2, 2), strides=(1, 1),
                                                           pads=(0, 0, 0, 0)))])
def test_convolution_with_int64_sums(per_channel, pool):
    body, inputs, constants, expected = convolution_case(1660 + per_channel, WIDE, per_channel, pool=pool,
                                                         extreme_weights=True)
    assert_spread16(expected)
    check_sums(body, inputs, constants, expected, wide=True)


@pytest.mark.parametrize("name,per_channel", [("3x3_pad1", False), ("stride2", True), ("depthwise", False)])
def test_convolution_with_int64_bias(name, per_channel):
    """An int64 bias (levels up to 2^40: a bias of a few units over a narrow int16 input range)
    is added exactly and the layer sums in int64."""
    body, inputs, constants, expected = convolution_case(1670 + list(CONVOLUTIONS).index(name), CONVOLUTIONS[name],
                                                         per_channel, bias_bits=64)
    bias = constants["b"]
    assert np.abs(bias).min() > ref8.INT32_MAX
    for channel in range(len(bias)):  # each output channel is more than its bias
        assert len(np.unique(expected[:, channel])) > 10
    check_sums(body, inputs, constants, expected, wide=True)


def test_small_convolutions_sum_in_int32():
    check_sums(*convolution_case(1600, CONVOLUTIONS["3x3_pad1"], False), wide=False)


# ----------------------------------------------------------------------------- fully connected


def fully_connected_case(seed: int, rows: int, depth: int, columns: int, extreme: bool = False,
                         activation: str | None = None, suffix: str = ""):
    """(glow body, inputs, constants, expected) of a random 16x8 FullyConnected (weights +-127
    with `extreme`), its values named x, w, b, f and y + `suffix`."""
    rng = np.random.default_rng(seed)
    x = levels16(rng, rows, depth)
    w = rng.choice(np.array([-127, 127], np.int8), (depth, columns)) if extreme else \
        rng.integers(-128, 128, (depth, columns), dtype=np.int8)
    x_scale, w_type = ref8.f32(scale(rng) / 256), (scale(rng), 0 if extreme else int(rng.integers(-20, 21)))
    bias = rng.integers(-2_000_000, 2_000_001, columns).astype(np.int32)
    acc = x.astype(np.int64) @ (w.astype(np.int64) - w_type[1]) + bias
    out_scale = spread16(acc * np.float64(x_scale) * w_type[0])
    tflite_bias = as_tflite_bias(bias, (w.astype(np.int64) - w_type[1]).T)
    expected = ref.fully_connected(x, w, tflite_bias, x_scale, w_type, out_scale, activation)
    x_t, w_t = tensor(x.shape, s16(x_scale)), tensor(w.shape, q8(*w_type))
    b_t = tensor((columns,), q32(np.float32(x_scale) * np.float32(w_type[0])))
    y_t = tensor(expected.shape, s16(out_scale))
    x_, w_, b_, f_, y_ = (name + suffix for name in "xwbfy")
    body = f"""
  %{x_} = glow.placeholder "{x_}" : {x_t}
  %{w_} = glow.constant "{w_}" elided : {w_t}
  %{b_} = glow.constant "{b_}" elided : {b_t}
  %{f_} = glow.fully_connected %{x_}, %{w_}, %{b_} : ({x_t}, {w_t}, {b_t}) -> {y_t}
  %{y_} = {f"glow.relu %{f_}" if activation else f"glow.rescale_quantized %{f_}"} : ({y_t}) -> {y_t}
  glow.save %{y_} as "{y_}" : {y_t}"""
    return body, {x_: x}, {w_: w, b_: bias}, expected


@pytest.mark.parametrize("depth,extreme,activation", [(40, False, None), (300, False, "relu"), (700, True, None)])
def test_fully_connected(depth, extreme, activation):
    body, inputs, constants, expected = fully_connected_case(1700 + depth, 3, depth, 8, extreme, activation)
    assert_spread16(expected)
    check_sums(body, inputs, constants, expected, wide=extreme)


def test_fully_connected_int64_bias_beyond_the_output_range_saturates():
    """A ReLU'd FullyConnected whose int64 bias is far below its output range (a dead
    output, billions of output levels under 0) clamps to 0 and one far above to the top:
    the int64 requantization saturates where CMSIS-NN's `arm_nn_requantize_s64` truncates
    to int32 and would wrap."""
    rng = np.random.default_rng(1760)
    x = levels16(rng, 8, 64)
    w = rng.integers(-128, 128, (64, 6), dtype=np.int8)
    x_scale, w_type = ref8.f32(1e-7), (0.01, 0)
    sums = x.astype(np.int64) @ w.astype(np.int64)
    bias = rng.integers(-(1 << 20), 1 << 20, 6)
    bias[:2] = [-(1 << 45), 1 << 45]
    out_scale = spread16(sums * np.float64(x_scale) * w_type[0])
    expected = ref.fully_connected(x, w, bias, x_scale, w_type, out_scale, "relu")
    assert (expected[:, 0] == 0).all() and (expected[:, 1] == 32767).all() and len(np.unique(expected[:, 2:])) > 12
    multiplier, shift = quantize_multiplier(ref8.real_multiplier(x_scale, w_type[0], out_scale))
    reduced = (multiplier + (1 << 15)) >> 16
    truncated = (ref8.wrap_int32((bias[:2] * reduced) >> (14 - shift)) + 1) >> 1
    assert truncated[0] > 0 and truncated[1] < 0  # CMSIS-NN's truncation would flip both
    x_t, w_t = tensor(x.shape, s16(x_scale)), tensor(w.shape, q8(*w_type))
    b_t = tensor((6,), wide(q32(np.float32(x_scale) * np.float32(w_type[0]))))
    y_t = tensor(expected.shape, s16(out_scale))
    body = f"""
  %x = glow.placeholder "x" : {x_t}
  %w = glow.constant "w" elided : {w_t}
  %b = glow.constant "b" elided : {b_t}
  %f = glow.fully_connected %x, %w, %b : ({x_t}, {w_t}, {b_t}) -> {y_t}
  %y = glow.relu %f : ({y_t}) -> {y_t}
  glow.save %y as "y" : {y_t}"""
    check_sums(body, {"x": x}, {"w": w, "b": bias}, expected, wide=True)


# ----------------------------------------------------------------------------- elementwise, pools, softmax


def binary(op: str, a: np.ndarray, b: np.ndarray, types: tuple[float, float, float]) -> np.ndarray:
    a_t, b_t, y_t = (tensor(shape, s16(s)) for shape, s in zip((a.shape, b.shape, a.shape), types))
    body = f"""
  %a = glow.placeholder "a" : {a_t}
  %b = glow.placeholder "b" : {b_t}
  %y = glow.{op} %a, %b : ({a_t}, {b_t}) -> {y_t}
  glow.save %y as "y" : {y_t}"""
    return run(body, {"a": a, "b": b})["y"]


@pytest.mark.parametrize("op,seed,b_shape", [("add", 0, (2, 6, 5, 5)), ("add", 1, (1, 6, 1, 1)),
                                             ("mul", 10, (1, 6, 1, 1))])
def test_add_and_mul(op, seed, b_shape):
    """An Add of two maps and of a map and a per-channel one (broadcast), a Mul of the latter."""
    rng = np.random.default_rng(1800 + seed)
    a, b = levels16(rng, 2, 6, 5, 5), levels16(rng, *b_shape)
    a_scale, b_scale = scale(rng) / 256, scale(rng) / 256
    if op == "add":
        out_scale = ref8.f32((a_scale + b_scale) * 1.2)
        expected = ref.add(a, b, a_scale, b_scale, out_scale)
    else:
        out_scale = ref8.f32(a_scale * b_scale * 32768 * 0.5)
        expected = ref8.mul(a, b, (a_scale, 0), (b_scale, 0), (out_scale, 0), bits=16)
    assert_spread16(expected)
    np.testing.assert_array_equal(binary(op, a, b, (a_scale, b_scale, out_scale)), expected)


@pytest.mark.parametrize("op", ["relu", "clip", "rescale_quantized"])
def test_relu_clip_and_rescale(op):
    rng = np.random.default_rng(1820 + len(op))
    x = levels16(rng, 4, 300)
    in_scale = ref8.f32(scale(rng) / 256)
    out_scale = ref8.f32(in_scale * rng.uniform(0.6, 1.8))
    low, high = float(exact(-20000 * in_scale)), float(exact(25000 * in_scale))
    activation = {"relu": "relu", "clip": "clip", "rescale_quantized": None}[op]
    expected = ref8.rescale(x, (in_scale, 0), (out_scale, 0), activation, low, high, bits=16)
    text = f"glow.clip %x {{min = {exact(low)} : f32, max = {exact(high)} : f32}}" if op == "clip" else f"glow.{op} %x"
    x_t, y_t = tensor(x.shape, s16(in_scale)), tensor(x.shape, s16(out_scale))
    body = f"""
  %x = glow.placeholder "x" : {x_t}
  %y = {text} : ({x_t}) -> {y_t}
  glow.save %y as "y" : {y_t}"""
    assert_spread16(expected)
    np.testing.assert_array_equal(run(body, {"x": x})["y"], expected)


@pytest.mark.parametrize("kind,kernel,strides,pads", [("max", (3, 3), (2, 2), (1, 1, 1, 1)),
                                                      ("avg", (3, 3), (2, 2), (1, 1, 1, 1)),
                                                      ("avg", (7, 7), (1, 1), (0, 0, 0, 0))])
def test_pools(kind, kernel, strides, pads):
    rng = np.random.default_rng(1830 + kernel[0])
    x = levels16(rng, 1, 4, 7, 7)
    expected = (ref8.max_pool(x, kernel, strides, pads, bits=16) if kind == "max"
                else ref8.avg_pool(x, kernel, strides, pads, bits=16))
    x_t, y_t = tensor(x.shape, s16(1e-3)), tensor(expected.shape, s16(1e-3))
    body = f"""
  %x = glow.placeholder "x" : {x_t}
  %y = glow.{kind}_pool %x {{kernel = {ints(kernel)}, strides = {ints(strides)}, pads = {ints(pads)}}} : \
({x_t}) -> {y_t}
  glow.save %y as "y" : {y_t}"""
    np.testing.assert_array_equal(run(body, {"x": x})["y"], expected)


@pytest.mark.parametrize("input_scale", [2e-4, 2e-3])
def test_softmax(input_scale):
    """arm_softmax_s8's arithmetic on int16 levels, 15 fractional bits kept (scale 1/32768)."""
    rng = np.random.default_rng(1840)
    x = levels16(rng, 3, 10)
    expected = ref8.softmax_s8(x, input_scale, bits=16)
    x_t, y_t = tensor(x.shape, s16(input_scale)), tensor(x.shape, q16(*ref.SOFTMAX_OUTPUT))
    body = f"""
  %x = glow.placeholder "x" : {x_t}
  %y = glow.softmax %x {{axis = 1 : i64}} : ({x_t}) -> {y_t}
  glow.save %y as "y" : {y_t}"""
    np.testing.assert_array_equal(run(body, {"x": x})["y"], expected)
    x64 = x.astype(np.int64)
    real = np.exp((x64 - x64.max(axis=1, keepdims=True)) * np.float64(ref8.f32(input_scale)))
    assert np.abs(expected / 32768 - real / real.sum(axis=1, keepdims=True)).max() < 2e-4


# ----------------------------------------------------------------------------- lookup tables


@pytest.mark.parametrize("name,function", [("sigmoid", lambda v: 1 / (1 + np.exp(-v))), ("tanh", np.tanh)])
def test_interpolated_lookup_table(name, function):
    """Every int16 level through the 513-entry table, against TFLite's `lut_lookup`; the
    table is the compiler's (from the quantizer), checked against `gen_lut`'s rule."""
    from glowmlir.dialects.quant import UniformQuantizedType, i16
    from glowmlir.quantization.lookup_tables import interpolated_table

    in_scale, out_scale = 8.0 / 32768, 1.0 / 32768
    table = ref.lookup_table(function, in_scale, out_scale)
    compiled = interpolated_table(function, UniformQuantizedType(i16, in_scale, 0),
                                  UniformQuantizedType(i16, out_scale, 0))
    np.testing.assert_array_equal(compiled, table)
    x = np.random.default_rng(1850).permutation(np.arange(-32768, 32768, dtype=np.int16)).reshape(64, 1024)
    x_t, table_t, y_t = tensor(x.shape, s16(in_scale)), tensor((513,), s16(out_scale)), tensor(x.shape, s16(out_scale))
    body = lookup_table_text(x_t, table_t, y_t)
    actual = run(body, {"x": x}, {"t": table})["y"]
    np.testing.assert_array_equal(actual, ref.lut_lookup(x, table))
    exact_levels = function(x.astype(np.float64) * in_scale) / out_scale
    assert np.abs(actual - exact_levels).max() <= 4.0  # linear between entries 128 levels apart
