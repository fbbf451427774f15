"""`glow-fold-batchnorm`: an inference BatchNormalization after a Convolution is folded into
its filter and bias; any other BatchNormalization becomes a per-channel Mul and Add."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from glowmlir.dialects import glow
from glowmlir.dialects.weights import dense_from_array
from glowmlir.names import UniqueNames
from glowmlir.transforms.constants import constant_name, constant_value, names_in


class FoldBatchNormalization(RewritePattern):
    """BN(conv(x, w, b)) -> conv(x, w * factor, b * factor + shift); else x * factor + shift."""

    def __init__(self, names: UniqueNames):
        self.names = names

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glow.BatchNormalizationOp, rewriter: PatternRewriter) -> None:
        parameters = [constant_value(v) for v in (op.scale, op.bias, op.mean, op.var)]
        if any(p is None for p in parameters):
            return
        scale, bias, mean, var = parameters
        factor = (scale / np.sqrt(var + np.float32(op.epsilon.value.data))).astype(np.float32)
        shift = (bias - mean * factor).astype(np.float32)
        conv = op.input.owner
        if isinstance(conv, glow.ConvolutionOp) and op.input.has_one_use() and conv.activation is None:
            filter_, conv_bias = constant_value(conv.filter), constant_value(conv.bias)
            if filter_ is not None and conv_bias is not None:
                new_filter = glow.ConstantOp(self.names(constant_name(conv.filter, "bn")),
                                             dense_from_array(filter_ * factor.reshape(-1, 1, 1, 1)))
                new_bias = glow.ConstantOp(self.names(constant_name(conv.bias, "bn")),
                                           dense_from_array(conv_bias * factor + shift))
                rewriter.insert([new_filter, new_bias], InsertPoint.before(conv))
                conv.operands[1], conv.operands[2] = new_filter.result, new_bias.result
                rewriter.notify_op_modified(conv)
                rewriter.replace(op, [], [conv.result])
                return
        # Not after a convolution: y = x * factor + shift, per channel (axis 1).
        rank = len(glow.shape_of(op.input))
        channel_shape = (factor.size,) + (1,) * (rank - 2)
        factor_op = glow.ConstantOp(self.names(constant_name(op.scale, "bn_scale")),
                                    dense_from_array(factor.reshape(channel_shape)))
        shift_op = glow.ConstantOp(self.names(constant_name(op.bias, "bn_shift")),
                                   dense_from_array(shift.reshape(channel_shape)))
        mul = glow.MulOp(op.input, factor_op.result)
        add = glow.AddOp(mul.results[0], shift_op.result)
        rewriter.replace(op, [factor_op, shift_op, mul, add])


@dataclass(frozen=True)
class FoldBatchNorm(ModulePass):
    """Folds inference BatchNormalization into the preceding Convolution (or into Mul+Add)."""

    name = "glow-fold-batchnorm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FoldBatchNormalization(names_in(op)), apply_recursively=False).rewrite_module(op)
