"""Small builders of glow ops on imported values, shared by the op families."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import i1
from xdsl.ir import SSAValue

from glowmlir.dialects import glow
from glowmlir.importers.onnx.importer import OnnxImporter


def like(value: SSAValue, shape: Sequence[int]) -> glow.TensorType:
    """A tensor type of `shape` with `value`'s element type."""
    return glow.tensor(shape, value.type.element_type)


def unary_value(importer: OnnxImporter, op_type, x: SSAValue, **properties) -> SSAValue:
    """An elementwise op of x (same type)."""
    return importer.add(op_type.create(operands=[x], result_types=[x.type], properties=properties))


def reshape_to(importer: OnnxImporter, x: SSAValue, shape: Sequence[int]) -> SSAValue:
    if glow.shape_of(x) == tuple(shape):
        return x
    return importer.add(glow.ReshapeOp.create(operands=[x], result_types=[like(x, shape)]))


def binary(importer: OnnxImporter, op_type, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
    shape = glow.broadcast_shapes(glow.shape_of(lhs), glow.shape_of(rhs))
    return importer.add(op_type.create(operands=[lhs, rhs], result_types=[like(lhs, shape)]))


def slice_axis(importer: OnnxImporter, x: SSAValue, axis: int, start: int, stop: int) -> SSAValue:
    """x[..., start:stop, ...] along `axis` (step 1)."""
    shape = list(glow.shape_of(x))
    starts = [0] * len(shape)
    starts[axis], shape[axis] = start, stop - start
    return importer.add(glow.SliceOp.create(operands=[x], result_types=[like(x, shape)],
                                            properties={"starts": glow.ints(starts),
                                                        "steps": glow.ints([1] * len(shape))}))


def concat_values(importer: OnnxImporter, pieces: list[SSAValue], axis: int) -> SSAValue:
    shape = list(glow.shape_of(pieces[0]))
    shape[axis] = sum(glow.shape_of(p)[axis] for p in pieces)
    return importer.add(glow.ConcatOp.create(operands=pieces, result_types=[like(pieces[0], shape)],
                                             properties={"axis": glow.IntegerAttr(axis, glow.i64)}))


def compare_values(importer: OnnxImporter, predicate: str, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
    shape = glow.broadcast_shapes(glow.shape_of(lhs), glow.shape_of(rhs))
    return importer.add(glow.CompareOp.create(operands=[lhs, rhs], result_types=[glow.tensor(shape, i1)],
                                              properties={"predicate": glow.ComparisonPredicateAttr(
                                                  glow.ComparisonPredicate(predicate))}))
