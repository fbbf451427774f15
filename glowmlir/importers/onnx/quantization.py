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
from glowmlir.importers.onnx.importer import OnnxImporter, imports, model_quantize

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
    return [importer.add(model_quantize(x, element))]


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


# ----------------------------------------------------------------------------- the QOperator form

_MICROSOFT = "com.microsoft"  # the domain of onnxruntime's contrib ops (QGemm, QLinearAdd, ...)
#
# A QLinear* node (onnxruntime's QOperator form: QLinearConv, QLinearMatMul, and the
# com.microsoft QGemm, QLinearAdd, ...) is the QDQ form in one node: it is imported as a
# DequantizeLinear of each quantized input, the float op, and a QuantizeLinear of its result.


def _expanded(importer: OnnxImporter, node, op_type: str, operands: list, attributes: dict,
              output: tuple[str, str] | None) -> list:
    """Imports `op_type` on `operands` (each a tensor name, or a (data, scale, zero point[,
    axis]) tuple to dequantize first) with `attributes`; its result is quantized with
    `output` (scale, zero point names), or stays float when `output` is None."""
    from onnx import helper

    nodes, names = [], []
    for position, operand in enumerate(operands):
        if isinstance(operand, tuple):
            data, scale, zero_point, *axis = operand
            name = f"{node.output[0]}__dequantized_{position}"
            nodes.append(helper.make_node("DequantizeLinear", [data, scale, zero_point], [name],
                                          name=f"{node.name}_dequantize_{position}",
                                          **({"axis": axis[0]} if axis else {})))
            names.append(name)
        else:
            names.append(operand)
    computed = f"{node.output[0]}__float" if output else node.output[0]
    nodes.append(helper.make_node(op_type, names, [computed], name=node.name, **attributes))
    if output:
        nodes.append(helper.make_node("QuantizeLinear", [computed, *output], [node.output[0]],
                                      name=f"{node.name}_quantize"))
    for expanded in nodes:
        importer.import_node(expanded)
    return [importer.values[node.output[0]]]


def _bias_scale(importer: OnnxImporter, node, name: str, *factors: np.ndarray) -> str:
    """An int32 bias's scale (the product of the input and weight scales, per output channel
    where the weights have one scale each), held under a new name."""
    scale = np.float32(1.0)
    for factor in factors:
        scale = scale * factor.astype(np.float32)
    importer.values[name] = np.asarray(scale, np.float32).reshape(-1 if np.size(scale) > 1 else ())
    importer.values[f"{name}_zero_point"] = np.zeros(np.shape(importer.values[name]), np.int32)
    return name


@imports("QLinearConv")
def _qlinear_conv(importer: OnnxImporter, node, attrs):
    x, x_scale, x_zero, w, w_scale, w_zero, y_scale, y_zero, *bias = node.input
    operands = [(x, x_scale, x_zero), (w, w_scale, w_zero, 0)]
    if bias and bias[0]:
        scale = _bias_scale(importer, node, f"{node.output[0]}__bias_scale",
                            importer.required_known(x_scale, "the input scale"),
                            importer.required_known(w_scale, "the weight scale"))
        operands.append((bias[0], scale, f"{scale}_zero_point", 0))
    return _expanded(importer, node, "Conv", operands, attrs, (y_scale, y_zero))


@imports("QLinearMatMul")
def _qlinear_matmul(importer: OnnxImporter, node, attrs):
    a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero = node.input
    return _expanded(importer, node, "MatMul", [(a, a_scale, a_zero), (b, b_scale, b_zero, -1)], {},
                     (y_scale, y_zero))


@imports("QGemm", domain=_MICROSOFT)
def _qgemm(importer: OnnxImporter, node, attrs):
    """com.microsoft QGemm: C is int32 with scale alpha x A's scale x B's scale; without a
    y_scale the result is float."""
    a, a_scale, a_zero, b, b_scale, b_zero, *rest = node.input
    c, y_scale, y_zero = (rest + ["", "", ""])[:3]
    axis = 0 if attrs.get("transB", 0) else 1
    operands = [(a, a_scale, a_zero), (b, b_scale, b_zero, axis)]
    if c:
        scale = _bias_scale(importer, node, f"{node.output[0]}__bias_scale", np.float32(attrs.get("alpha", 1.0)),
                            importer.required_known(a_scale, "A's scale"),
                            importer.required_known(b_scale, "B's scale"))
        operands.append((c, scale, f"{scale}_zero_point", -1))
    return _expanded(importer, node, "Gemm", operands, attrs, (y_scale, y_zero) if y_scale else None)


def _elementwise(op_type: str):
    def build(importer: OnnxImporter, node, attrs):
        a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero = node.input
        return _expanded(importer, node, op_type, [(a, a_scale, a_zero), (b, b_scale, b_zero)], {}, (y_scale, y_zero))

    return build


imports("QLinearAdd", domain=_MICROSOFT)(_elementwise("Add"))
imports("QLinearMul", domain=_MICROSOFT)(_elementwise("Mul"))


def _unary(op_type: str, dropped: tuple[str, ...] = ()):
    def build(importer: OnnxImporter, node, attrs):
        x, x_scale, x_zero, y_scale, y_zero = node.input
        if attrs.get("channels_last", 0):
            raise importer.error("channels_last is not supported")
        kept = {k: v for k, v in attrs.items() if k not in dropped}
        return _expanded(importer, node, op_type, [(x, x_scale, x_zero)], kept, (y_scale, y_zero))

    return build


imports("QLinearGlobalAveragePool", domain=_MICROSOFT)(_unary("GlobalAveragePool", ("channels_last",)))
imports("QLinearAveragePool", domain=_MICROSOFT)(_unary("AveragePool", ("channels_last",)))
imports("QLinearSigmoid", domain=_MICROSOFT)(_unary("Sigmoid"))
imports("QLinearLeakyRelu", domain=_MICROSOFT)(_unary("LeakyRelu"))
imports("QLinearSoftmax", domain=_MICROSOFT)(_unary("Softmax", ("opset",)))


@imports("QLinearConcat", domain=_MICROSOFT)
def _qlinear_concat(importer: OnnxImporter, node, attrs):
    y_scale, y_zero, *inputs = node.input
    operands = [tuple(inputs[i:i + 3]) for i in range(0, len(inputs), 3)]
    return _expanded(importer, node, "Concat", operands, attrs, (y_scale, y_zero))


