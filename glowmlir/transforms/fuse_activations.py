"""`glow-fuse-activations`: a Relu or Clip after a Convolution, FullyConnected or Add becomes
the producer's fused `activation`."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from glowmlir.dialects import glow
from glowmlir.dialects.quant import is_quantized


class FuseActivationIntoProducer(RewritePattern):
    """relu(producer(...)) -> producer(...) {activation = "relu"} (clip likewise, with its bounds)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glow.ReluOp | glow.ClipOp, rewriter: PatternRewriter) -> None:
        producer = op.input.owner
        if not isinstance(producer, glow.ConvolutionOp | glow.FullyConnectedOp | glow.AddOp):
            return
        if not op.input.has_one_use() or producer.activation is not None:
            return
        if isinstance(producer, glow.ConvolutionOp) and producer.pool is not None and producer.pool.data != "max":
            return  # an activation after average pooling does not commute with it
        if is_quantized(op.input.type) != is_quantized(op.result.type):
            return
        # Quantized, the producer now requantizes straight to the activation's parameters.
        fused = rewriter.replace_value_with_new_type(producer.results[0], op.result.type)
        if isinstance(op, glow.ReluOp):
            producer.properties["activation"] = glow.ActivationAttr(glow.Activation.RELU)
        else:
            producer.properties["activation"] = glow.ActivationAttr(glow.Activation.CLIP)
            producer.properties["clip_min"], producer.properties["clip_max"] = op.min, op.max
        rewriter.notify_op_modified(producer)
        rewriter.replace(op, [], [fused])


@dataclass(frozen=True)
class FuseActivations(ModulePass):
    """Merges a Relu or Clip into the Convolution, FullyConnected or Add that feeds it."""

    name = "glow-fuse-activations"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FuseActivationIntoProducer()).rewrite_module(op)
