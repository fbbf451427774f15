"""`glow-constant-fold`: ops whose operands are all constants become one constant (their
value computed by the reference interpreter, float32 only)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, f32
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from glowmlir import reference
from glowmlir.dialects import glow
from glowmlir.dialects.weights import dense_from_array
from glowmlir.names import UniqueNames
from glowmlir.transforms.constants import constant_name, constant_value, erase_unused_constants, names_in

FOLD_LIMIT = 1 << 31
"""Results past this many bytes are computed at run time, not folded into the weights."""

EvaluatedOp = Union[tuple(reference.EVALUATORS)]  # noqa: UP007 - a union built from the registry
"""The ops the reference interpreter evaluates: the ones that can be folded."""


class FoldConstantOperands(RewritePattern):
    """op(constant, ...) -> constant, named after the first operand's constant."""

    def __init__(self, names: UniqueNames):
        self.names = names

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: EvaluatedOp, rewriter: PatternRewriter) -> None:
        if not op.operands or any(v.type.element_type != f32 for v in (*op.operands, *op.results)):
            return  # float32 semantics only
        if any(4 * math.prod(glow.shape_of(v)) > FOLD_LIMIT for v in op.results):
            return
        values = [constant_value(v) for v in op.operands]
        if any(v is None for v in values):
            return
        result = reference.evaluate(op, *values)
        name = self.names(constant_name(op.operands[0], "folded"))
        operands = [v.owner for v in op.operands]
        rewriter.replace(op, glow.ConstantOp(name, dense_from_array(result)))
        erase_unused_constants(operands, rewriter)


@dataclass(frozen=True)
class ConstantFold(ModulePass):
    """Evaluates ops whose operands are all constants at compile time."""

    name = "glow-constant-fold"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FoldConstantOperands(names_in(op))).rewrite_module(op)
