"""Reductions over axes, ArgMax/ArgMin and Hardmax."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from glowmlir.dialects import glow
from glowmlir.dialects.weights import dense_from_array
from glowmlir.importers.onnx.builders import binary, compare_values, reshape_to, unary_value
from glowmlir.importers.onnx.importer import OnnxImporter, imports

_COMPOSITE_REDUCTIONS = {
    # op: (applied to each element, reduction, applied to the result)
    "ReduceL1": (lambda importer, x: unary_value(importer, glow.AbsOp, x), "sum", None),
    "ReduceL2": (lambda importer, x: binary(importer, glow.MulOp, x, x), "sum",
                 lambda importer, x: unary_value(importer, glow.SqrtOp, x)),
    "ReduceSumSquare": (lambda importer, x: binary(importer, glow.MulOp, x, x), "sum", None),
    "ReduceLogSum": (None, "sum", lambda importer, x: unary_value(importer, glow.LogOp, x)),
}


@imports("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceLogSumExp", *_COMPOSITE_REDUCTIONS)
def _reduce(importer: OnnxImporter, node, attrs):
    """The reductions glow.reduce has, and those built around one: L1, L2, SumSquare,
    LogSum, and LogSumExp as max + log(sum(exp(x - max)))."""
    x = importer.tensor(node.input[0])
    shape = glow.shape_of(x)
    axes_from_input = node.op_type == "ReduceSum" and importer.opset >= 13 or importer.opset >= 18
    if axes_from_input:
        axes = importer.known(node.input[1]) if len(node.input) > 1 and node.input[1] else None
        if len(node.input) > 1 and node.input[1] and axes is None:
            raise importer.error("axes must be a constant")
    else:
        axes = attrs.get("axes")
    if axes is None or len(axes) == 0:
        if attrs.get("noop_with_empty_axes", 0):
            return [x]
        axes = range(len(shape))
    axes = sorted({int(a) % len(shape) for a in axes})
    keep = attrs.get("keepdims", 1)
    out = ([1 if d in axes else s for d, s in enumerate(shape)] if keep
           else [s for d, s in enumerate(shape) if d not in axes])
    if node.op_type == "ReduceLogSumExp":
        largest = reduce_axes(importer, x, "max", axes)
        exponentials = unary_value(importer, glow.ExpOp, binary(importer, glow.SubOp, x, largest))
        logarithm = unary_value(importer, glow.LogOp, reduce_axes(importer, exponentials, "sum", axes))
        return [reshape_to(importer, binary(importer, glow.AddOp, logarithm, largest), out)]
    before, kind, after = _COMPOSITE_REDUCTIONS.get(node.op_type, (None, node.op_type.removeprefix("Reduce").lower(),
                                                                   None))
    reduced = reduce_axes(importer, before(importer, x) if before else x, kind, axes, keep_dims=bool(keep))
    return [after(importer, reduced) if after else reduced]


def reduce_axes(importer: OnnxImporter, x: SSAValue, kind: str, axes: Sequence[int],
                keep_dims: bool = True) -> SSAValue:
    """glow.reduce of `axes`, kept as 1 or dropped."""
    return importer.add(glow.ReduceOp(x, kind, axes, keep_dims=keep_dims))


def arg_reduce_value(importer: OnnxImporter, x: SSAValue, kind: str, axis: int, keep: bool = True,
                      select_last_index: int = 0) -> SSAValue:
    """The i64 index of the max/min (`kind`) along `axis` of x, keeping that axis as 1 or not."""
    return importer.add(glow.ArgReduceOp(x, kind, axis, keep_dims=keep, select_last_index=bool(select_last_index)))


@imports("ArgMax", "ArgMin")
def _arg_reduce(importer: OnnxImporter, node, attrs):
    x = importer.tensor(node.input[0])
    return [arg_reduce_value(importer, x, "max" if node.op_type == "ArgMax" else "min",
                              attrs.get("axis", 0) % len(glow.shape_of(x)), bool(attrs.get("keepdims", 1)),
                              attrs.get("select_last_index", 0))]


@imports("Hardmax")
def _hardmax(importer: OnnxImporter, node, attrs):
    """1 at the first largest element along `axis`, 0 elsewhere: ArgMax compared with the
    positions along the axis."""
    x = importer.tensor(node.input[0])
    shape = glow.shape_of(x)
    axis = attrs.get("axis", -1 if importer.opset >= 13 else 1) % len(shape)
    if importer.opset < 13 and axis != len(shape) - 1:
        raise importer.error("Hardmax before opset 13 is supported on the last axis only")
    largest = arg_reduce_value(importer, x, "max", axis)
    positions = np.arange(shape[axis], dtype=np.int64).reshape([-1 if d == axis else 1 for d in range(len(shape))])
    position = importer.add(glow.ConstantOp(importer.names(f"{node.output[0]}_positions"), dense_from_array(positions)))
    return [importer.converted(compare_values(importer, "eq", largest, position), f32)]


@imports("TopK")
def _top_k(importer: OnnxImporter, node, attrs):
    """The k largest (or smallest) elements along `axis` and their i64 indices, best first
    (equal values: the lower index first, as ONNX orders them): k rounds of ArgMax (ArgMin)
    on the input with the elements already taken masked out, each value gathered back."""
    x = importer.tensor(node.input[0])
    shape = glow.shape_of(x)
    axis = attrs.get("axis", -1) % len(shape)
    k = int(attrs["k"] if importer.opset < 10 else importer.required_known(node.input[1], "k").reshape(-1)[0])
    if not 1 <= k <= shape[axis]:
        raise importer.error(f"k = {k} must be between 1 and the {shape[axis]} elements of axis {axis}")
    largest = attrs.get("largest", 1)
    positions = np.arange(shape[axis], dtype=np.int64).reshape([-1 if d == axis else 1 for d in range(len(shape))])
    position = importer.add(glow.ConstantOp(importer.names(f"{node.output[0]}_positions"), dense_from_array(positions)))
    taken = importer.add(glow.SplatOp(-np.inf if largest else np.inf, glow.tensor([1] * len(shape), f32)))
    remaining, values, indices = x, [], []
    for _ in range(k):
        index = arg_reduce_value(importer, remaining, "max" if largest else "min", axis)
        indices.append(index)
        values.append(importer.add(glow.GatherElementsOp(x, index, axis)))
        remaining = importer.add(glow.SelectOp(compare_values(importer, "eq", position, index), taken, remaining))
    if k == 1:
        return [values[0], indices[0]]
    return [importer.add(glow.ConcatOp(values, axis)), importer.add(glow.ConcatOp(indices, axis))]
