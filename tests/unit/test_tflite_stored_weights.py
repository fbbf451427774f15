"""Weights as TensorFlow's converter stores them: float16 behind a DEQUANTIZE, int8 in a float
("hybrid", dynamic-range) model, and sparse behind a DENSIFY. Each is read wherever a
constant is read (filters, biases) and checked against ai-edge-litert's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest

import glowmlir
from glowmlir.errors import GlowError
from tests.support import tflite_models as tm
from tests.unit.test_tflite_importer import saved

CONV = {"CONV_2D": ("Conv2DOptions", (6, 3, 3, 4)),
        "DEPTHWISE_CONV_2D": ("DepthwiseConv2DOptions", (1, 3, 3, 8)),
        "FULLY_CONNECTED": ("FullyConnectedOptions", (6, 4 * 5 * 5))}


def _layer(builder: tm.ModelBuilder, opcode: str, x: int, weights: int, bias: int, dtype="float32", quant=None):
    """One CONV_2D, DEPTHWISE_CONV_2D (multiplier 2) or FULLY_CONNECTED of a [1, 5, 5, 4] input."""
    options, shape = CONV[opcode]
    fields = {"fused_activation_function": "RELU"}
    if opcode == "FULLY_CONNECTED":
        out = builder.tensor("y", [1, shape[0]], dtype, quant)
    else:
        fields.update(padding="SAME", stride_w=1, stride_h=1)
        if opcode == "DEPTHWISE_CONV_2D":
            fields["depth_multiplier"] = 2
        out = builder.tensor("y", [1, 5, 5, shape[0] if opcode == "CONV_2D" else shape[3]], dtype, quant)
    builder.op(opcode, [x, weights, bias], [out], options, **fields)
    builder.output(out)
    return out


def _random_weights(opcode: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    shape = CONV[opcode][1]
    channels = shape[0] if opcode != "DEPTHWISE_CONV_2D" else shape[3]
    return rng.normal(0, 0.3, shape).astype(np.float32), rng.normal(0, 0.2, channels).astype(np.float32)


def _assert_matches(data: bytes, tmp_path, name: str, seeds=range(3), atol=1e-5) -> None:
    bundle = glowmlir.compile(saved(tmp_path, name, data))
    for seed in seeds:
        inputs = tm.random_inputs(data, seed=seed)
        np.testing.assert_allclose(bundle.run(inputs)["y"], tm.run_reference(data, inputs)["y"], rtol=1e-4, atol=atol)


@pytest.mark.parametrize("opcode", CONV)
def test_float16_filter_and_bias_behind_dequantize(opcode, tmp_path):
    """The converter's float16 option: weights stored as float16, widened by a DEQUANTIZE."""
    weights, bias = _random_weights(opcode, seed=1)
    builder = tm.ModelBuilder()
    x = builder.input("x", [1, 5, 5, 4])
    stored_w = builder.constant("w16", weights.astype(np.float16))
    stored_b = builder.constant("b16", bias.astype(np.float16))
    w, b = builder.tensor("w", weights.shape), builder.tensor("b", bias.shape)
    builder.op("DEQUANTIZE", [stored_w], [w])
    builder.op("DEQUANTIZE", [stored_b], [b])
    _layer(builder, opcode, x, w, b)
    data = builder.finish()
    _assert_matches(data, tmp_path, opcode)
    ir = glowmlir.compile(saved(tmp_path, opcode, data)).ir["glow"]
    assert "glow.dequantize" not in ir  # folded at compile time


def _hybrid(opcode: str, dequantized_in_file: bool) -> bytes:
    """Int8 weights (symmetric; per channel for the convolutions) with float activations and a
    float bias, as the converter's dynamic-range quantization writes them; or the same weights
    behind a DEQUANTIZE, which the interpreter runs in float."""
    weights, bias = _random_weights(opcode, seed=2)
    axis = 3 if opcode == "DEPTHWISE_CONV_2D" else 0
    reduce_axes = tuple(a for a in range(weights.ndim) if a != axis)
    scales = (np.abs(weights).max(axis=reduce_axes) / 127).astype(np.float32)
    if opcode == "FULLY_CONNECTED":
        scales = np.float32(np.abs(weights).max() / 127)
        levels = np.round(weights / scales).astype(np.int8)
    else:
        levels = np.round(weights / np.expand_dims(scales, reduce_axes)).astype(np.int8)
    builder = tm.ModelBuilder()
    x = builder.input("x", [1, 5, 5, 4])
    quant = (scales, 0) if opcode == "FULLY_CONNECTED" else (scales, np.zeros(scales.size, np.int64), axis)
    w = builder.constant("w8", levels, quant=quant)
    if dequantized_in_file:
        stored, w = w, builder.tensor("w", weights.shape)
        builder.op("DEQUANTIZE", [stored], [w])
    _layer(builder, opcode, x, w, builder.constant("b", bias))
    return builder.finish()


@pytest.mark.parametrize("opcode", CONV)
def test_hybrid_model_runs_in_float_with_its_int8_weights_dequantized(opcode, tmp_path):
    """A hybrid operator runs in float with its weights dequantized: the interpreter's result
    for the same weights behind a DEQUANTIZE, and within the interpreter's own error on the
    hybrid model (its hybrid kernels quantize the float input to int8 on the fly)."""
    hybrid, dequantized = _hybrid(opcode, False), _hybrid(opcode, True)
    bundle = glowmlir.compile(saved(tmp_path, "hybrid", hybrid))
    assert "!quant.uniform" not in bundle.ir["glow"]  # the weights dequantized at compile time
    for seed in range(3):
        inputs = tm.random_inputs(hybrid, seed=seed)
        ours = bundle.run(inputs)["y"]
        np.testing.assert_allclose(ours, tm.run_reference(dequantized, inputs)["y"], rtol=1e-4, atol=1e-5)
        interpreter = tm.run_reference(hybrid, inputs)["y"]
        assert np.abs(ours - interpreter).max() <= 0.02 * np.abs(interpreter).max()


@pytest.mark.parametrize("dtype", [np.float32, np.int8])
def test_sparse_fully_connected_weights_are_densified(dtype, tmp_path):
    """CSR rows (DENSE then SPARSE_CSR), float or int8 levels; half the weights pruned."""
    rng = np.random.default_rng(4)
    weights = rng.normal(0, 0.3, (6, 16)).astype(np.float32) * (rng.uniform(size=(6, 16)) < 0.5)
    builder = tm.ModelBuilder()
    x = builder.input("x", [2, 16])
    if dtype == np.int8:
        scale = np.float32(np.abs(weights).max() / 127)
        sparse = builder.sparse_constant("w_sparse", np.round(weights / scale).astype(np.int8), ["dense", "csr"],
                                         quant=(scale, 0))
        w = builder.tensor("w", [6, 16], "int8", quant=(scale, 0))
        dense = builder.tensor("w_float", [6, 16])
        builder.op("DENSIFY", [sparse], [w])
        builder.op("DEQUANTIZE", [w], [dense])
    else:
        sparse = builder.sparse_constant("w_sparse", weights, ["dense", "csr"])
        dense = builder.tensor("w", [6, 16])
        builder.op("DENSIFY", [sparse], [dense])
    y = builder.tensor("y", [2, 6])
    builder.op("FULLY_CONNECTED", [x, dense, builder.constant("b", rng.normal(0, 0.1, 6).astype(np.float32))], [y],
               "FullyConnectedOptions", fused_activation_function="NONE")
    builder.output(y)
    _assert_matches(builder.finish(), tmp_path, "sparse_fc")


def test_block_sparse_filter_is_densified(tmp_path):
    """A [8, 1, 1, 32] filter pruned in blocks of 4 input channels (the converter's block
    sparsity): 77 stored values, not 256."""
    rng = np.random.default_rng(5)
    weights = rng.normal(0, 0.3, (8, 1, 1, 32)).astype(np.float32)
    weights *= np.repeat(rng.uniform(size=(8, 1, 1, 8)) < 0.4, 4, axis=3)
    builder = tm.ModelBuilder()
    x = builder.input("x", [1, 3, 3, 32])
    sparse = builder.sparse_constant("w_sparse", weights, ["dense", "dense", "dense", "csr", "dense"], block=(3, 4))
    w = builder.tensor("w", weights.shape)
    builder.op("DENSIFY", [sparse], [w])
    y = builder.tensor("y", [1, 3, 3, 8])
    builder.op("CONV_2D", [x, w, builder.constant("b", rng.normal(0, 0.1, 8).astype(np.float32))], [y],
               "Conv2DOptions", padding="SAME", stride_w=1, stride_h=1, fused_activation_function="NONE")
    builder.output(y)
    _assert_matches(builder.finish(), tmp_path, "block_sparse")


def test_damaged_sparsity_is_a_clean_error(tmp_path):
    builder = tm.ModelBuilder()
    x = builder.input("x", [2, 4])
    sparse = builder.sparse_constant("w_sparse", np.eye(4, dtype=np.float32), ["dense", "csr"])
    builder._tensors[sparse].sparsity[2][1][3][0] = 9  # a column index past the shape
    w = builder.tensor("w", [4, 4])
    builder.op("DENSIFY", [sparse], [w])
    y = builder.tensor("y", [2, 4])
    builder.op("FULLY_CONNECTED", [x, w, -1], [y], "FullyConnectedOptions", fused_activation_function="NONE")
    builder.output(y)
    with pytest.raises(GlowError, match=r'tensor "w_sparse": sparsity: a stored index lies outside the shape \[4, 4\]'):
        glowmlir.compile(saved(tmp_path, "bad_sparse", builder.finish()))
