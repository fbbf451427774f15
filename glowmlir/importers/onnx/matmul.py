"""Gemm and MatMul: `glow.fully_connected` with constant weights, `glow.matmul` otherwise."""

from __future__ import annotations

import numpy as np
from xdsl.ir import Attribute, SSAValue

from glowmlir.dialects import glow
from glowmlir.dialects.quant import UniformQuantizedType
from glowmlir.dialects.weights import transposed
from glowmlir.importers.onnx.builders import binary
from glowmlir.importers.onnx.importer import OnnxImporter, imports


@imports("Gemm")
def _gemm(importer: OnnxImporter, node, attrs):
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    a = importer.tensor(node.input[0])
    if attrs.get("transA", 0):
        a = importer.add(glow.transpose(a, [1, 0]))
    b = importer.known(node.input[1])
    has_c = len(node.input) > 2 and node.input[2]
    c = importer.known(node.input[2]) if has_c else None
    if b is None or (has_c and c is None):  # weights computed at run time
        return [_gemm_at_run_time(importer, node, attrs, a)]
    if attrs.get("transB", 0):
        b = transposed(b) if b.ndim == 2 else b.T
    if alpha != 1.0:
        b = b * np.float32(alpha)
    m, n = glow.shape_of(a)[0], b.shape[1]
    c = np.broadcast_to(np.asarray(np.zeros(n) if c is None else c, np.float32) * np.float32(beta), (m, n))
    if m > 1 and not (c == c[0]).all():  # FullyConnected's bias is one row
        return [_gemm_at_run_time(importer, node, attrs, a)]
    weights = importer.constant(node.input[1], b, _weight_quantization(importer, node.input[1], attrs.get("transB", 0),
                                                                        alpha))
    bias = importer.constant(node.input[2] if len(node.input) > 2 and node.input[2] else f"{node.output[0]}_bias", c[0])
    return [importer.add(glow.FullyConnectedOp(a, weights, bias))]


def _weight_quantization(importer: OnnxImporter, name: str, transposed: bool, alpha: float) -> Attribute | None:
    """The quantized type a QDQ model gives the weights `name`, for their (transposed) use
    as FullyConnected weights; None if they are float or scaled by alpha."""
    element = importer.model_quantization.get(name)
    if element is None or alpha != 1.0:
        return None
    if element.per_channel and transposed:
        return UniformQuantizedType(element.storage_type, element.scale_array().tolist(),
                                    element.offset_array().tolist(), 1 - element.axis.data)
    return element


def _gemm_at_run_time(importer: OnnxImporter, node, attrs, a: SSAValue) -> SSAValue:
    """alpha * A B + beta * C with B (or a per-row C) computed at run time: a MatMul, a
    transpose of B if asked, and broadcasting Mul/Add."""
    b = importer.tensor(node.input[1])
    if attrs.get("transB", 0):
        b = importer.add(glow.transpose(b, [1, 0]))
    product = importer.add(glow.MatMulOp(a, b))
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    if alpha != 1.0:
        product = binary(importer, glow.MulOp, product, importer.constant(f"{node.output[0]}_alpha", np.float32(alpha)))
    if len(node.input) > 2 and node.input[2]:
        c = importer.tensor(node.input[2])
        if beta != 1.0:
            c = binary(importer, glow.MulOp, c, importer.constant(f"{node.output[0]}_beta", np.float32(beta)))
        product = binary(importer, glow.AddOp, product, c)
    return product


@imports("MatMul")
def _matmul(importer: OnnxImporter, node, attrs):
    a = importer.tensor(node.input[0])
    b = importer.known(node.input[1])
    if b is not None and b.ndim == 2 and len(glow.shape_of(a)) == 2:
        weights = importer.constant(node.input[1], b, _weight_quantization(importer, node.input[1], False, 1.0))
        bias = importer.constant(f"{node.output[0]}_bias", np.zeros(b.shape[1], np.float32))
        return [importer.add(glow.FullyConnectedOp(a, weights, bias))]
    rhs = importer.tensor(node.input[1])
    a_shape, b_shape = glow.shape_of(a), glow.shape_of(rhs)
    if len(a_shape) < 2 or len(b_shape) < 2:
        raise importer.error("MatMul of 1-D tensors is not supported")
    return [importer.add(glow.MatMulOp(a, rhs))]
