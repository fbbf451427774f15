"""`glow-fuse-conv-pool`: a MaxPool/AvgPool after a Convolution becomes the convolution's
fused `pool` window, so only the pooled output is stored."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from glowmlir.dialects import glow


class FusePoolIntoConvolution(RewritePattern):
    """pool(conv(x)) -> conv(x) {pool = "max" or "avg", pool_kernel, pool_strides, pool_pads}."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glow.MaxPoolOp | glow.AvgPoolOp, rewriter: PatternRewriter) -> None:
        conv = op.input.owner
        if not isinstance(conv, glow.ConvolutionOp) or conv.pool is not None or not op.input.has_one_use():
            return
        if op.result.type.element_type != conv.result.type.element_type:
            return  # quantized with different parameters: the pooled rows could not be reused as they are
        pool_kind = glow.PoolKind.MAX if isinstance(op, glow.MaxPoolOp) else glow.PoolKind.AVG
        count_include_pad = isinstance(op, glow.AvgPoolOp) and op.count_include_pad is not None
        pool = {"pool": pool_kind, "pool_kernel": op.kernel, "pool_strides": op.strides, "pool_pads": op.pads,
                "pool_count_include_pad": count_include_pad}
        fused = glow.with_attributes_of(glow.ConvolutionOp(conv.input, conv.filter, conv.bias,
                                                           **conv.builder_arguments() | pool,
                                                           result_element=op.result.type.element_type), conv)
        rewriter.replace(op, fused)
        rewriter.erase(conv)


@dataclass(frozen=True)
class FuseConvPool(ModulePass):
    """Merges a MaxPool/AvgPool into the Convolution feeding it: the convolution's
    full-resolution output is then never stored, only the pooled one."""

    name = "glow-fuse-conv-pool"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FusePoolIntoConvolution(), apply_recursively=False).rewrite_module(op)
