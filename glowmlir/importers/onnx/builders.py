"""Small builders of glow ops on imported values, shared by the op families."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from glowmlir.dialects import glow
from glowmlir.importers.onnx.importer import OnnxImporter


def like(value: SSAValue, shape: Sequence[int]) -> glow.TensorType:
    """A tensor type of `shape` with `value`'s element type."""
    return glow.tensor(shape, value.type.element_type)


def unary_value(importer: OnnxImporter, op_type, x: SSAValue, *args, **properties) -> SSAValue:
    """An elementwise op of x (same type), built by `op_type(x, *args, **properties)`."""
    return importer.add(op_type(x, *args, **properties))


def reshape_to(importer: OnnxImporter, x: SSAValue, shape: Sequence[int]) -> SSAValue:
    if glow.shape_of(x) == tuple(shape):
        return x
    return importer.add(glow.ReshapeOp(x, shape))


def binary(importer: OnnxImporter, op_type, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
    return importer.add(op_type(lhs, rhs))


def slice_axis(importer: OnnxImporter, x: SSAValue, axis: int, start: int, stop: int) -> SSAValue:
    """x[..., start:stop, ...] along `axis` (step 1)."""
    shape = list(glow.shape_of(x))
    starts = [0] * len(shape)
    starts[axis], shape[axis] = start, stop - start
    return importer.add(glow.SliceOp(x, starts, shape))


def concat_values(importer: OnnxImporter, pieces: list[SSAValue], axis: int) -> SSAValue:
    return importer.add(glow.ConcatOp(pieces, axis))


def compare_values(importer: OnnxImporter, predicate: str, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
    return importer.add(glow.CompareOp(lhs, rhs, predicate))
