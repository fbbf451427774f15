"""Softmax, BatchNormalization, LRN, LayerNormalization, RMSNormalization and
InstanceNormalization."""

from __future__ import annotations

import numpy as np

from glowmlir.dialects import glow
from glowmlir.importers.onnx.builders import binary, reshape_to, unary_value
from glowmlir.importers.onnx.importer import OnnxImporter, imports
from glowmlir.importers.onnx.reduction import reduce_axes


@imports("Softmax", "LogSoftmax")
def _softmax(importer: OnnxImporter, node, attrs):
    x = importer.tensor(node.input[0])
    shape = glow.shape_of(x)
    log = node.op_type == "LogSoftmax"
    axis = importer.axis(attrs.get("axis", 1 if importer.opset < 13 else -1), len(shape))
    if importer.opset < 13:
        # Before opset 13 the input is coerced to 2-D at `axis`.
        rows, columns = int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))
        flat = reshape_to(importer, x, (rows, columns))
        return [reshape_to(importer, importer.add(glow.SoftMaxOp(flat, 1, log=log)), shape)]
    return [importer.add(glow.SoftMaxOp(x, axis, log=log))]


@imports("LRN")
def _lrn(importer: OnnxImporter, node, attrs):
    x = importer.tensor(node.input[0])
    if len(glow.shape_of(x)) != 4:
        raise importer.error("only 4-D LRN is supported")
    return [importer.add(glow.LocalResponseNormalizationOp(x, attrs["size"], attrs.get("alpha", 1e-4),
                                                           attrs.get("beta", 0.75), attrs.get("bias", 1.0)))]


@imports("BatchNormalization")
def _batch_norm(importer: OnnxImporter, node, attrs):
    if len([o for o in node.output if o]) > 1:
        raise importer.error("training-mode BatchNormalization is not supported")
    for name, what in zip(node.input[1:5], ("scale", "bias", "mean", "var")):
        importer.required_known(name, what)
    operands = [importer.tensor(name) for name in node.input[:5]]
    return [importer.add(glow.BatchNormalizationOp(*operands, attrs.get("epsilon", 1e-5)))]


@imports("LayerNormalization", "RMSNormalization", "InstanceNormalization")
def _normalization(importer: OnnxImporter, node, attrs):
    """(x - mean) / sqrt(variance + epsilon) * scale + bias over the axes from `axis` on
    (RMSNormalization: x / sqrt(mean(x^2) + epsilon) * scale; InstanceNormalization: over the
    spatial axes, with one scale and bias per channel), from reductions, Sqrt and
    elementwise arithmetic."""
    x = importer.tensor(node.input[0])
    rank = len(glow.shape_of(x))
    scale, bias = (importer.tensor(name) if name else None for name in (list(node.input[1:3]) + [""])[:2])
    if node.op_type == "InstanceNormalization":
        axes = list(range(2, rank))
        per_channel = (glow.shape_of(x)[1],) + (1,) * (rank - 2)
        scale, bias = reshape_to(importer, scale, per_channel), reshape_to(importer, bias, per_channel)
    else:
        axes = list(range(attrs.get("axis", -1) % rank, rank))
    centered = mean = x
    if node.op_type != "RMSNormalization":
        mean = reduce_axes(importer, x, "mean", axes)
        centered = binary(importer, glow.SubOp, x, mean)
    variance = reduce_axes(importer, binary(importer, glow.MulOp, centered, centered), "mean", axes)
    epsilon = importer.constant(f"{node.output[0]}_epsilon", np.float32(attrs.get("epsilon", 1e-5)))
    deviation = unary_value(importer, glow.SqrtOp, binary(importer, glow.AddOp, variance, epsilon))
    y = binary(importer, glow.MulOp, binary(importer, glow.DivOp, centered, deviation), scale)
    if bias is not None:
        y = binary(importer, glow.AddOp, y, bias)
    if len(node.output) == 1:
        return [y]
    inverse = unary_value(importer, glow.ReciprocalOp, deviation)
    return [y, mean, inverse]  # LayerNormalization's optional Mean and InvStdDev
