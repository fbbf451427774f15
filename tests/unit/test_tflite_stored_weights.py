"""Weights as TensorFlow's converter stores them: float16 behind a DEQUANTIZE and sparse behind
a DENSIFY (int8 in a float, "hybrid", model: test_hybrid_weights.py). Each is read wherever a
constant is read (filters, biases) and checked against ai-edge-litert's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest

import glowmlir
from glowmlir.errors import GlowError
from tests.support import tflite_models as tm
from tests.support.tflite_hybrid import LAYERS, layer, random_weights
from tests.unit.test_tflite_importer import saved


def _assert_matches(data: bytes, tmp_path, name: str, seeds=range(3), atol=1e-5) -> None:
    bundle = glowmlir.compile(saved(tmp_path, name, data))
    for seed in seeds:
        inputs = tm.random_inputs(data, seed=seed)
        np.testing.assert_allclose(bundle.run(inputs)["y"], tm.run_reference(data, inputs)["y"], rtol=1e-4, atol=atol)


@pytest.mark.parametrize("opcode", LAYERS)
def test_float16_filter_and_bias_behind_dequantize(opcode, tmp_path):
    """The converter's float16 option: weights stored as float16, widened by a DEQUANTIZE."""
    weights, bias = random_weights(opcode, seed=1)
    builder = tm.ModelBuilder()
    x = builder.input("x", [1, 5, 5, 4])
    stored_w = builder.constant("w16", weights.astype(np.float16))
    stored_b = builder.constant("b16", bias.astype(np.float16))
    w, b = builder.tensor("w", weights.shape), builder.tensor("b", bias.shape)
    builder.op("DEQUANTIZE", [stored_w], [w])
    builder.op("DEQUANTIZE", [stored_b], [b])
    layer(builder, opcode, x, w, b)
    data = builder.finish()
    _assert_matches(data, tmp_path, opcode)
    ir = glowmlir.compile(saved(tmp_path, opcode, data)).ir["glow"]
    assert "glow.dequantize" not in ir  # folded at compile time


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
