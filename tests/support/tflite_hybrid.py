"""Hybrid ("dynamic range") TFLite layers as TensorFlow's converter writes them, and the input
quantization TFLite's hybrid kernels apply.

`hybrid_layer` builds one CONV_2D, DEPTHWISE_CONV_2D or FULLY_CONNECTED of a [1, size, size, 4]
input with random int8 weights (symmetric; per channel or per tensor), a float bias and float
activations, or the same weights behind a DEQUANTIZE (which the interpreter runs in float).
`as_hybrid_kernels_quantize` is what TFLite's hybrid kernels do to the float input before
their integer dot products (`tensor_utils::SymmetricQuantizeFloats` per batch, or
`AsymmetricQuantizeFloats` in the per-channel kernels): the float layer run on that input
gives the hybrid kernel's result up to float rounding.
"""

from __future__ import annotations

import numpy as np

from tests.support import tflite_models as tm

LAYERS = {"CONV_2D": ("Conv2DOptions", (6, 3, 3, 4)),
          "DEPTHWISE_CONV_2D": ("DepthwiseConv2DOptions", (1, 3, 3, 8)),
          "FULLY_CONNECTED": ("FullyConnectedOptions", (6, 4 * 5 * 5))}
"""Each layer's options table and weight shape (FULLY_CONNECTED's depth: a 5 x 5 input)."""


def weight_shape(opcode: str, size: int = 5) -> tuple[int, ...]:
    shape = LAYERS[opcode][1]
    return (shape[0], 4 * size * size) if opcode == "FULLY_CONNECTED" else shape


def layer(builder: tm.ModelBuilder, opcode: str, x: int, weights: int, bias: int, dtype="float32", quant=None,
          size: int = 5):
    """One CONV_2D, DEPTHWISE_CONV_2D (multiplier 2) or FULLY_CONNECTED of a [1, size, size, 4] input."""
    options, _ = LAYERS[opcode]
    shape = weight_shape(opcode, size)
    fields = {"fused_activation_function": "RELU"}
    if opcode == "FULLY_CONNECTED":
        out = builder.tensor("y", [1, shape[0]], dtype, quant)
    else:
        fields.update(padding="SAME", stride_w=1, stride_h=1)
        if opcode == "DEPTHWISE_CONV_2D":
            fields["depth_multiplier"] = 2
        out = builder.tensor("y", [1, size, size, shape[0] if opcode == "CONV_2D" else shape[3]], dtype, quant)
    builder.op(opcode, [x, weights, bias], [out], options, **fields)
    builder.output(out)
    return out


def random_weights(opcode: str, seed: int, size: int = 5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    shape = weight_shape(opcode, size)
    channels = shape[0] if opcode != "DEPTHWISE_CONV_2D" else shape[3]
    return rng.normal(0, 0.3, shape).astype(np.float32), rng.normal(0, 0.2, channels).astype(np.float32)


def per_channel_by_default(opcode: str) -> bool:
    """How the converter quantizes a hybrid layer's weights: per channel for the convolutions,
    per tensor for FULLY_CONNECTED."""
    return opcode != "FULLY_CONNECTED"


def hybrid_layer(opcode: str, dequantized_in_file: bool = False, per_channel: bool | None = None, size: int = 5,
                 seed: int = 2, bits: int = 8) -> bytes:
    """Int8 (or, `bits=4`, INT4) weights (symmetric; per channel or per tensor) with float
    activations and a float bias, as the converter's dynamic-range quantization writes them;
    or the same levels, stored int8, behind a DEQUANTIZE, which the interpreter runs in float."""
    per_channel = per_channel_by_default(opcode) if per_channel is None else per_channel
    weights, bias = random_weights(opcode, seed, size)
    axis = 3 if opcode == "DEPTHWISE_CONV_2D" else 0
    reduce_axes = tuple(a for a in range(weights.ndim) if a != axis)
    largest = 2 ** (bits - 1) - 1
    if per_channel:
        scales = (np.abs(weights).max(axis=reduce_axes) / largest).astype(np.float32)
        levels = np.round(weights / np.expand_dims(scales, reduce_axes)).astype(np.int8)
        quant = (scales, np.zeros(scales.size, np.int64), axis)
    else:
        scale = np.float32(np.abs(weights).max() / largest)
        levels, quant = np.round(weights / scale).astype(np.int8), (scale, 0)
    builder = tm.ModelBuilder()
    x = builder.input("x", [1, size, size, 4])
    if bits == 4 and not dequantized_in_file:
        w = builder.int4_constant("w4", levels, quant=quant)
    else:
        w = builder.constant("w8", levels, quant=quant)
    if dequantized_in_file:
        stored, w = w, builder.tensor("w", weights.shape)
        builder.op("DEQUANTIZE", [stored], [w])
    layer(builder, opcode, x, w, builder.constant("b", bias), size=size)
    return builder.finish()


def quantizes_asymmetrically(opcode: str, per_channel: bool) -> bool:
    """TFLite's per-channel hybrid kernels (CONV_2D's, DEPTHWISE_CONV_2D's) quantize their input
    with a zero point; its per-tensor CONV_2D and FULLY_CONNECTED (without
    `asymmetric_quantize_inputs`) symmetrically."""
    return per_channel and opcode != "FULLY_CONNECTED"


def as_hybrid_kernels_quantize(x: np.ndarray, asymmetric: bool) -> np.ndarray:
    """`x` (one batch) quantized to int8 and back as TFLite's hybrid kernels quantize a float
    input before their integer products (`tensor_utils` Symmetric/AsymmetricQuantizeFloats)."""
    x = np.asarray(x, np.float32)
    low, high = float(x.min()), float(x.max())
    if not asymmetric:
        extent = max(abs(low), abs(high))
        if extent == 0:
            return np.zeros_like(x)
        scale = np.float32(extent / 127)
        levels = np.clip(np.round(x * np.float32(127 / extent)), -127, 127)
        return (levels * scale).astype(np.float32)
    low, high = min(low, 0.0), max(high, 0.0)
    if low == high:
        return np.zeros_like(x)
    scale = (high - low) / 255
    from_min, from_max = -128 - low / scale, 127 - high / scale
    zero_point = from_min if -128 + abs(low / scale) < 127 + abs(high / scale) else from_max
    zero_point = int(np.round(np.clip(zero_point, -128, 127)))
    levels = np.clip(np.round(zero_point + x * np.float32(1 / scale)), -128, 127)
    return ((levels - zero_point) * np.float32(scale)).astype(np.float32)
