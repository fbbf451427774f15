"""Layout passes on the `glow` dialect: NHWC where a kernel library runs, NCHW elsewhere.

* `glow-convert-to-nhwc{library=NAME}` — every Convolution/MaxPool/AvgPool the library
  will take becomes its NHWC form (`layout NHWC`, OHWI filter permuted at compile
  time) between a transpose to NHWC and one back;
* `glow-sink-transposes` — moves those transposes out of the way until they cancel:
  two inverse transposes vanish, elementwise ops and Concat move below a transpose of
  their operands, a Flatten+FullyConnected absorbs one into its weights, and a transpose
  that only moves unit dimensions becomes a reshape. What remains sits where the graph
  meets float code or the graph's inputs and outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from glowmlir.dialects import glow
from glowmlir.dialects.weights import array_from_dense
from glowmlir.transforms.constants import typed_constant


def _permuted_constant(value: SSAValue, perm: tuple[int, ...], before: Operation,
                       rewriter: PatternRewriter) -> SSAValue:
    """A new constant holding `value`'s data transposed by `perm`, same element type."""
    source = value.owner
    data = np.ascontiguousarray(np.transpose(array_from_dense(source.value), perm))
    return rewriter.insert(typed_constant(source.name_.data, data, value.type.element_type),
                           InsertPoint.before(before)).result


# ----------------------------------------------------------------------------- to NHWC


class ConvertToLibraryLayout(RewritePattern):
    """An NCHW convolution or pool the library accepts -> transpose to NHWC, its NHWC form
    (`layout = "NHWC"`, OHWI filter) and a transpose back."""

    def __init__(self, accepts: Callable[[Operation], str | None]):
        self.accepts = accepts

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glow.ConvolutionOp | glow.MaxPoolOp | glow.AvgPoolOp,
                          rewriter: PatternRewriter) -> None:
        if glow.is_nhwc(op) or len(glow.shape_of(op.operands[0])) != 4 or self.accepts(op) is not None:
            return
        to_nhwc = rewriter.insert(glow.transpose(op.operands[0], glow.NCHW_TO_NHWC), InsertPoint.before(op))
        operands = [to_nhwc.result, *op.operands[1:]]
        if isinstance(op, glow.ConvolutionOp):
            operands[1] = _permuted_constant(op.filter, glow.NCHW_TO_NHWC, op, rewriter)  # OIHW -> OHWI
        result_type = glow.tensor(glow.to_nhwc(glow.shape_of(op.results[0])), op.results[0].type.element_type)
        # A clone of a convolution or pool with all its properties, NHWC: `.create`.
        converted = type(op).create(operands=operands, result_types=[result_type], attributes=dict(op.attributes),
                                    properties=dict(op.properties) | {"layout": glow.LayoutAttr(glow.Layout.NHWC)})
        back = glow.transpose(converted.results[0], glow.NHWC_TO_NCHW)
        rewriter.replace(op, [converted, back], [back.result])


@dataclass(frozen=True)
class ConvertToNHWC(ModulePass):
    """The convolutions and pools a kernel library takes run NHWC (see module doc)."""

    name = "glow-convert-to-nhwc"

    library: str
    """The kernel library's name (`glowmlir.backends.kernel_libraries`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from glowmlir.libraries import LIBRARIES

        pattern = ConvertToLibraryLayout(LIBRARIES[self.library].accepts)
        PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(op)


# ----------------------------------------------------------------------------- sinking


def _perm(op: glow.TransposeOp) -> tuple[int, ...]:
    return tuple(op.perm.get_values())


class CancelTransposes(RewritePattern):
    """transpose(transpose(x, p), q) -> x, or one transpose by the composition."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glow.TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, glow.TransposeOp):
            return
        composed = tuple(_perm(inner)[p] for p in _perm(op))
        if composed == tuple(range(len(composed))):
            rewriter.replace(op, [], [inner.input])
        else:
            rewriter.replace(op, glow.transpose(inner.input, composed))


class SinkThroughElementwise(RewritePattern):
    """op(transpose(a, p), transpose(b, p)) -> transpose(op(a, b), p), for elementwise ops
    whose operands all come from the same transpose (no broadcasting)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glow.GlowOp, rewriter: PatternRewriter) -> None:
        if type(op) not in glow.layout_agnostic_ops():  # the ops' facts say which
            return
        sources = [v.owner for v in op.operands]
        if not all(isinstance(s, glow.TransposeOp) and v.has_one_use() for s, v in zip(sources, op.operands)):
            return
        perm = _perm(sources[0])
        if any(_perm(s) != perm or glow.shape_of(s.result) != glow.shape_of(op.results[0]) for s in sources):
            return
        inner_shape = glow.shape_of(sources[0].input)
        # A clone of any elementwise op with all its properties: `.create`.
        moved = type(op).create(operands=[s.input for s in sources], attributes=dict(op.attributes),
                                properties=dict(op.properties),
                                result_types=[glow.tensor(inner_shape, op.results[0].type.element_type)])
        rewriter.replace(op, [moved, back := glow.transpose(moved.results[0], perm)], [back.result])


class SinkThroughConcat(RewritePattern):
    """concat(transpose(a, p), transpose(b, p), axis) -> transpose(concat(a, b, p[axis]), p)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glow.ConcatOp, rewriter: PatternRewriter) -> None:
        sources = [v.owner for v in op.inputs]
        if not all(isinstance(s, glow.TransposeOp) and v.has_one_use() for s, v in zip(sources, op.inputs)):
            return
        perm = _perm(sources[0])
        if any(_perm(s) != perm for s in sources):
            return
        axis = perm[op.axis.value.data]
        moved = glow.with_attributes_of(glow.ConcatOp([s.input for s in sources], axis), op)
        rewriter.replace(op, [moved, back := glow.transpose(moved.result, perm)], [back.result])


class AbsorbIntoFullyConnected(RewritePattern):
    """FullyConnected(Flatten(transpose(x, p))) with constant weights -> FullyConnected(
    Flatten(x)) with the weight rows permuted the same way."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glow.FullyConnectedOp, rewriter: PatternRewriter) -> None:
        flatten = op.input.owner
        if not isinstance(flatten, glow.ReshapeOp) or not op.input.has_one_use():
            return
        source = flatten.input.owner
        weights = op.weights.owner
        if not isinstance(source, glow.TransposeOp) or not flatten.input.has_one_use() \
                or not isinstance(weights, glow.ConstantOp) or weights.value is None:
            return
        shape, perm = glow.shape_of(source.input), _perm(source)
        if perm[0] != 0 or glow.shape_of(op.input)[0] != shape[0]:
            return  # only a transpose within each batch row
        # Element k of flatten(x) is element order[k] of flatten(transpose(x)).
        size = int(np.prod(shape[1:]))
        positions = np.transpose(np.arange(size).reshape(shape[1:]), [p - 1 for p in perm[1:]]).reshape(-1)
        order = np.empty(size, np.int64)
        order[positions] = np.arange(size)
        data = array_from_dense(weights.value)[order]
        new_weights = typed_constant(weights.name_.data, np.ascontiguousarray(data), op.weights.type.element_type)
        new_flatten = glow.with_attributes_of(glow.ReshapeOp(source.input, glow.shape_of(op.input)), flatten)
        rewriter.insert([new_weights, new_flatten], InsertPoint.before(op))
        op.operands[0], op.operands[1] = new_flatten.result, new_weights.result
        rewriter.notify_op_modified(op)


class TrivialTransposeToReshape(RewritePattern):
    """A transpose that keeps the order of the non-unit dimensions moves no data: a reshape."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glow.TransposeOp, rewriter: PatternRewriter) -> None:
        shape = glow.shape_of(op.input)
        moved = [p for p in _perm(op) if shape[p] != 1]
        if moved == sorted(moved):
            rewriter.replace(op, glow.with_attributes_of(glow.ReshapeOp(op.input, glow.shape_of(op.result)), op))


@dataclass(frozen=True)
class SinkTransposes(ModulePass):
    """Cancels the layout transposes `glow-convert-to-nhwc` left (see module doc)."""

    name = "glow-sink-transposes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = [CancelTransposes(), SinkThroughElementwise(), SinkThroughConcat(), AbsorbIntoFullyConnected(),
                    TrivialTransposeToReshape()]
        PatternRewriteWalker(GreedyRewritePatternApplier(patterns)).rewrite_module(op)
        from xdsl.transforms.dead_code_elimination import dce

        dce(op)
