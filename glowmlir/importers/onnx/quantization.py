"""QuantizeLinear and DequantizeLinear: a quantized ONNX model in the QDQ form (as
onnxruntime's `quantize_static` and PyTorch's exporter write it) keeps its own scales and
zero points.

* A DequantizeLinear of integer weights (a constant) is folded to float at import; the
  quantized type the file gives the weights is remembered on the `glow.constant` they become
  (`glow.MODEL_QUANTIZATION`).
* A QuantizeLinear of a computed value becomes a `glow.quantize` to the file's type, and the
  DequantizeLinear after it a `glow.dequantize`.

The float ops between such pairs are then quantized with those types by
`glow-quantize-from-model`, without a profile. UINT8 data is held as INT8 with the zero point
moved by -128 (the same real values), as the TFLite importer does.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import i8, i32
from xdsl.ir import Attribute, SSAValue

from glowmlir.dialects import glow
from glowmlir.dialects.quant import UniformQuantizedType, is_quantized
from glowmlir.importers.onnx.importer import OnnxImporter, imports

_STORAGE = {np.dtype(np.int8): (i8, 0), np.dtype(np.uint8): (i8, -128), np.dtype(np.int32): (i32, 0)}
"""The integer types a QDQ model's tensors may have: glow storage type and zero-point shift."""


def _parameters(importer: OnnxImporter, node, attrs, rank: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(scale, zero point, axis) of a QuantizeLinear or DequantizeLinear, per tensor or per
    channel; the zero point is zeros of type uint8 when omitted, as ONNX defines."""
    if attrs.get("block_size", 0):
        raise importer.error("blocked quantization (block_size) is not supported")
    scale = importer.required_known(node.input[1], "the scale").astype(np.float32)
    has_zero_point = len(node.input) > 2 and node.input[2]
    zero_point = importer.required_known(node.input[2], "the zero point") if has_zero_point else \
        np.zeros(scale.shape, np.uint8)
    axis = int(attrs.get("axis", 1))
    if scale.size > 1 and not -rank <= axis < rank:
        raise importer.error(f"axis {axis} is outside the rank-{rank} input")
    return scale, zero_point, axis % max(rank, 1)


def quantized_type(importer: OnnxImporter, scale: np.ndarray, zero_point: np.ndarray, axis: int,
                   shape) -> Attribute:
    """The glow quantized type of a QDQ tensor: per tensor, or per channel along `axis`."""
    if zero_point.dtype not in _STORAGE:
        raise importer.error(f"quantized type {zero_point.dtype} is not supported (int8, uint8 and int32)")
    storage, shift = _STORAGE[zero_point.dtype]
    offsets = zero_point.astype(np.int64).reshape(-1) + shift
    scales = scale.reshape(-1).astype(np.float64)
    if scale.size == 1:
        return UniformQuantizedType(storage, float(scales[0]), int(offsets[0]))
    if scale.ndim != 1 or scale.size != shape[axis]:
        raise importer.error(f"{scale.size} scales do not match axis {axis} of {list(shape)}")
    return UniformQuantizedType(storage, scales.tolist(), offsets.tolist(), axis)


@imports("QuantizeLinear")
def _quantize_linear(importer: OnnxImporter, node, attrs):
    x = importer.tensor(node.input[0])
    shape = glow.shape_of(x)
    scale, zero_point, axis = _parameters(importer, node, attrs, len(shape))
    if scale.size > 1:
        raise importer.error("per-channel quantization of a computed value is not supported")
    element = quantized_type(importer, scale, zero_point, axis, shape)
    return [importer.add(glow.QuantizeOp(x, element))]


@imports("DequantizeLinear")
def _dequantize_linear(importer: OnnxImporter, node, attrs):
    levels = importer.known(node.input[0])
    if levels is None:  # after a QuantizeLinear: the value is quantized already
        value: SSAValue = importer.values[node.input[0]]
        shape = glow.shape_of(value)
        scale, zero_point, axis = _parameters(importer, node, attrs, len(shape))
        element = quantized_type(importer, scale, zero_point, axis, shape)
        if not is_quantized(value.type):
            raise importer.error(f"\"{node.input[0]}\" is not a quantized tensor")
        if value.type.element_type != element:
            value = importer.add(glow.RescaleQuantizedOp(value, element))
        return [importer.add(glow.DequantizeOp(value))]
    scale, zero_point, axis = _parameters(importer, node, attrs, levels.ndim)
    element = quantized_type(importer, scale, zero_point, axis, levels.shape)
    along = [-1 if d == axis else 1 for d in range(levels.ndim)] if scale.size > 1 else []
    real = (levels.astype(np.int64) - zero_point.astype(np.int64).reshape(along or ())) * \
        scale.reshape(along or ())  # as onnxruntime computes it, in float32
    importer.model_quantization[node.output[0]] = element
    return [real.astype(np.float32)]
