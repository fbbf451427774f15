"""`glow-optimize-quantization` — removes conversion pairs that cancel and folds the rest
(Glow's OptimizeQuantization)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from glowmlir.dialects import glow
from glowmlir.transforms.quantized_conversion import is_model_quantize


class CancelConversions(RewritePattern):
    """Dequantize(Quantize(x)) -> x; Quantize(Dequantize(x)) -> x or Rescale(x);
    Rescale(Rescale(x)) -> Rescale(x); a Rescale to the same type -> its input. A Quantize the
    model itself states (a QDQ model's QuantizeLinear) is part of what the model computes: its
    rounding stays, so Dequantize(Quantize(x)) is kept there."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glow.ConversionOp, rewriter: PatternRewriter) -> None:
        source = op.input.owner
        if isinstance(op, glow.RescaleQuantizedOp) and op.input.type == op.result.type:
            rewriter.replace(op, [], [op.input])
        elif isinstance(op, glow.DequantizeOp) and isinstance(source, glow.QuantizeOp) \
                and not is_model_quantize(source):
            rewriter.replace(op, [], [source.input])
        elif isinstance(op, glow.QuantizeOp | glow.RescaleQuantizedOp) and \
                isinstance(source, glow.DequantizeOp | glow.RescaleQuantizedOp):
            rewriter.replace(op, glow.RescaleQuantizedOp(source.input, op.result.type))


class MergeRescaleIntoProducer(RewritePattern):
    """Rescale(op(...)) -> op(...) with the rescaled type, for ops that requantize their
    result anyway (Convolution, FullyConnected, Add, Mul, Relu, Clip) and have no other user,
    where the rescale keeps the storage width: a widening one (to an int16 average,
    `_averaged`) stays, so that the op keeps the int8 result its fast kernels take."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glow.RescaleQuantizedOp, rewriter: PatternRewriter) -> None:
        producer = op.input.owner
        if isinstance(producer, glow.ConvolutionOp | glow.FullyConnectedOp | glow.AddOp | glow.MulOp | glow.ReluOp
                      | glow.ClipOp) and op.input.has_one_use() and \
                op.input.type.element_type.bitwidth == op.result.type.element_type.bitwidth:
            rewriter.replace(op, [], [rewriter.replace_value_with_new_type(producer.results[0], op.result.type)])


@dataclass(frozen=True)
class OptimizeQuantization(ModulePass):
    """Removes and merges the conversions quantization left (Glow's OptimizeQuantization)."""

    name = "glow-optimize-quantization"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(GreedyRewritePatternApplier([CancelConversions(), MergeRescaleIntoProducer()])
                             ).rewrite_module(op)
        from xdsl.transforms.dead_code_elimination import dce

        dce(op)
