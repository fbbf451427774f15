"""`glow-fuse-residual-add`: Add(Convolution, r) becomes a convolution that starts from r."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from glowmlir.dialects import glow
from glowmlir.dialects.quant import is_quantized


class FuseAddIntoConvolution(RewritePattern):
    """add(conv(x), r) -> conv(x) residual r, keeping the add's fused activation."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glow.AddOp, rewriter: PatternRewriter) -> None:
        for conv_value, residual in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            conv = conv_value.owner
            if (isinstance(conv, glow.ConvolutionOp) and conv_value.has_one_use() and conv.residual is None
                    and not is_quantized(op.result.type)
                    and conv.activation is None and conv.pool is None
                    and glow.shape_of(residual) == glow.shape_of(op.result) == glow.shape_of(conv_value)):
                changes = {"residual": residual, "activation": op.activation, "clip_min": op.clip_min,
                           "clip_max": op.clip_max}
                fused = glow.with_attributes_of(glow.ConvolutionOp(
                    conv.input, conv.filter, conv.bias, **conv.builder_arguments() | changes,
                    result_element=op.result.type.element_type), conv)
                rewriter.replace(op, fused)
                rewriter.erase(conv)
                return


@dataclass(frozen=True)
class FuseResidualAdd(ModulePass):
    """Merges Add(Convolution(x), r) into the convolution, which starts from r: the add's
    operand can then be overwritten in place instead of both being kept."""

    name = "glow-fuse-residual-add"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FuseAddIntoConvolution(), apply_recursively=False).rewrite_module(op)
