"""Elementwise ops: activations, arithmetic, comparisons, logic, casts."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import f32, i1

from glowmlir.dialects import glow
from glowmlir.importers.onnx.builders import binary, compare_values, reshape_to, unary_value
from glowmlir.importers.onnx.importer import OnnxImporter, compute_element, element_of_dtype, imports, onnx_element_type


def _unary(op_type, **properties):
    def build(importer: OnnxImporter, node, attrs):
        return [unary_value(importer, op_type, importer.tensor(node.input[0]), **properties)]

    return build


imports("Relu")(_unary(glow.ReluOp))
imports("HardSwish")(_unary(glow.HardSwishOp))
imports("Exp")(_unary(glow.ExpOp))
imports("Neg")(_unary(glow.NegOp))
imports("Abs")(_unary(glow.AbsOp))
imports("Sqrt")(_unary(glow.SqrtOp))
imports("Reciprocal")(_unary(glow.ReciprocalOp))
imports("Log")(_unary(glow.LogOp))
imports("Softplus")(_unary(glow.SoftplusOp))
imports("Softsign")(_unary(glow.SoftsignOp))
imports("Mish")(_unary(glow.MishOp))
imports("Floor")(_unary(glow.FloorOp))
imports("Ceil")(_unary(glow.CeilOp))
imports("Sign")(_unary(glow.SignOp))
imports("Sin")(_unary(glow.SinOp))
imports("Cos")(_unary(glow.CosOp))
imports("Atan")(_unary(glow.AtanOp))
imports("Asin")(_unary(glow.AsinOp))
imports("Acos")(_unary(glow.AcosOp))
imports("Erf")(_unary(glow.ErfOp))


def _parametric(op_type, **defaults):
    """An elementwise op whose ONNX attributes (with ONNX's defaults) become alpha/beta."""

    def build(importer: OnnxImporter, node, attrs):
        properties = {ours: glow.f32_attr(attrs.get(onnx_name, default))
                      for ours, (onnx_name, default) in defaults.items()}
        return _unary(op_type, **properties)(importer, node, attrs)

    return build


imports("LeakyRelu")(_parametric(glow.LeakyReluOp, alpha=("alpha", 0.01)))
imports("Elu")(_parametric(glow.EluOp, alpha=("alpha", 1.0)))
imports("Selu")(_parametric(glow.SeluOp, alpha=("alpha", 1.67326319217681884765625),
                            beta=("gamma", 1.05070102214813232421875)))
imports("HardSigmoid")(_parametric(glow.HardSigmoidOp, alpha=("alpha", 0.2), beta=("beta", 0.5)))
imports("Celu")(_parametric(glow.CeluOp, alpha=("alpha", 1.0)))
imports("Sigmoid")(_unary(glow.SigmoidOp))
imports("Tanh")(_unary(glow.TanhOp))


@imports("Clip")
def _clip(importer: OnnxImporter, node, attrs):
    if importer.opset < 11:
        low, high = attrs.get("min", -np.inf), attrs.get("max", np.inf)
    else:
        low = importer.required_known(node.input[1], "min") if len(node.input) > 1 and node.input[1] else -np.inf
        high = importer.required_known(node.input[2], "max") if len(node.input) > 2 and node.input[2] else np.inf
    low, high = float(low), float(high)
    if low == 0.0 and high == np.inf:
        return _unary(glow.ReluOp)(importer, node, attrs)
    return _unary(glow.ClipOp, min=glow.f32_attr(low), max=glow.f32_attr(high))(importer, node, attrs)


_BINARY = {"Add": glow.AddOp, "Sub": glow.SubOp, "Mul": glow.MulOp, "Div": glow.DivOp,
           "Max": glow.MaxOp, "Min": glow.MinOp, "Sum": glow.AddOp, "Mean": glow.AddOp, "PRelu": glow.PReluOp}


@imports(*_BINARY)
def _elementwise(importer: OnnxImporter, node, attrs):
    if importer.opset < 7 and attrs.get("broadcast"):
        raise importer.error("legacy broadcast (opset < 7) is not supported")
    values = [importer.tensor(name) for name in node.input]
    if node.op_type == "PRelu":
        # a 1-D slope of one value per channel applies along axis 1 (PyTorch's exports)
        x_shape, slope_shape = glow.shape_of(values[0]), glow.shape_of(values[1])
        if len(slope_shape) == 1 and len(x_shape) > 2 and slope_shape[0] == x_shape[1] != x_shape[-1]:
            values[1] = reshape_to(importer, values[1], (slope_shape[0],) + (1,) * (len(x_shape) - 2))
    result = values[0]
    for value in values[1:]:
        result = binary(importer, _BINARY[node.op_type], result, value)
    if node.op_type == "Mean" and len(values) > 1:
        count = importer.add(glow.SplatOp(1.0 / len(values), glow.tensor([1])))
        result = binary(importer, glow.MulOp, result, count)
    return [result]


@imports("Cast", "CastLike")
def _cast(importer: OnnxImporter, node, attrs):
    """A `glow.convert` between float32, integer and boolean tensors (none if the type stays)."""
    x = importer.tensor(node.input[0])
    if node.op_type == "CastLike":
        target = importer.values[node.input[1]]
        element = element_of_dtype(importer, target.dtype) if isinstance(target, np.ndarray) else \
            target.type.element_type
    else:
        element = onnx_element_type(attrs["to"], importer.where())
    return [importer.converted(x, compute_element(element))]


_PREDICATES = {"Equal": "eq", "Less": "lt", "LessOrEqual": "le", "Greater": "gt", "GreaterOrEqual": "ge"}


@imports(*_PREDICATES)
def _compare(importer: OnnxImporter, node, attrs):
    lhs, rhs = importer.tensor(node.input[0]), importer.tensor(node.input[1])
    return [compare_values(importer, _PREDICATES[node.op_type], lhs, rhs)]


_LOGICAL = {"And": glow.AndOp, "Or": glow.OrOp, "Xor": glow.XorOp,
            "BitwiseAnd": glow.AndOp, "BitwiseOr": glow.OrOp, "BitwiseXor": glow.XorOp}


@imports(*_LOGICAL)
def _logical(importer: OnnxImporter, node, attrs):
    return [binary(importer, _LOGICAL[node.op_type], importer.tensor(node.input[0]), importer.tensor(node.input[1]))]


imports("Not", "BitwiseNot")(_unary(glow.NotOp))


@imports("Pow")
def _pow(importer: OnnxImporter, node, attrs):
    """Float bases; an integer exponent is converted to float."""
    base, exponent = importer.tensor(node.input[0]), importer.tensor(node.input[1])
    return [binary(importer, glow.PowOp, base, importer.converted(exponent, f32))]


@imports("BitShift")
def _bit_shift(importer: OnnxImporter, node, attrs):
    op_type = glow.ShiftLeftOp if attrs["direction"] == "LEFT" else glow.ShiftRightOp
    return [binary(importer, op_type, importer.tensor(node.input[0]), importer.tensor(node.input[1]))]


@imports("Mod")
def _mod(importer: OnnxImporter, node, attrs):
    lhs, rhs = importer.tensor(node.input[0]), importer.tensor(node.input[1])
    fmod = attrs.get("fmod", 0)
    if not fmod and lhs.type.element_type == f32:
        raise importer.error("Mod of floats needs fmod=1")
    return [importer.add(glow.ModOp(lhs, rhs, fmod=bool(fmod)))]


@imports("Where")
def _where(importer: OnnxImporter, node, attrs):
    condition, lhs, rhs = (importer.tensor(name) for name in node.input)
    return [importer.add(glow.SelectOp(condition, lhs, rhs))]


@imports("IsNaN", "IsInf")
def _is_nan_or_inf(importer: OnnxImporter, node, attrs):
    """IsNaN: x != x; IsInf: x == +inf or x == -inf (as `detect_positive/negative` ask)."""
    x = importer.tensor(node.input[0])
    if node.op_type == "IsNaN":
        return [compare_values(importer, "ne", x, x)]
    tests = [compare_values(importer, "eq", x, importer.add(glow.SplatOp(sign * np.inf, glow.tensor([1]))))
             for sign, attribute in ((1, "detect_positive"), (-1, "detect_negative")) if attrs.get(attribute, 1)]
    if not tests:  # detects neither infinity: all false
        return [importer.add(glow.SplatOp(0.0, glow.tensor(glow.shape_of(x), i1)))]
    return [tests[0] if len(tests) == 1 else binary(importer, glow.OrOp, *tests)]
