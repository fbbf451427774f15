"""`glow-convert-placeholders` — graph inputs and outputs take the quantized types
themselves (`-convert-placeholders`), so no conversion runs in the bundle."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from glowmlir.dialects import glow


class QuantizeInput(RewritePattern):
    """An input placeholder used only by identical Quantize ops takes their quantized type."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glow.PlaceholderOp, rewriter: PatternRewriter) -> None:
        users = [use.operation for use in op.result.uses]
        types = {u.result.type for u in users if isinstance(u, glow.QuantizeOp)}
        if not users or len(types) != 1 or not all(isinstance(u, glow.QuantizeOp) for u in users):
            return
        quantized = rewriter.replace_value_with_new_type(op.result, types.pop())
        for user in users:
            rewriter.replace(user, [], [quantized])


class SaveQuantized(RewritePattern):
    """save(dequantize(x)) -> save(x): the output placeholder takes the quantized type."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glow.SaveOp, rewriter: PatternRewriter) -> None:
        dequantize = op.input.owner
        if not isinstance(dequantize, glow.DequantizeOp):
            return
        op.operands[0] = dequantize.input
        rewriter.notify_op_modified(op)
        if not dequantize.result.uses:
            rewriter.erase(dequantize)


@dataclass(frozen=True)
class ConvertPlaceholders(ModulePass):
    """`-convert-placeholders`: an input used only by identical Quantize ops becomes
    quantized itself; an output saved from a Dequantize is saved quantized."""

    name = "glow-convert-placeholders"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for pattern in (QuantizeInput(), SaveQuantized()):  # every input first, as Glow does
            PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(op)
