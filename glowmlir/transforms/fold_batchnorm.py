"""`glow-fold-batchnorm`: an inference BatchNormalization after a Convolution is folded into
its filter and bias; any other BatchNormalization becomes a per-channel Mul and Add. A Mul or
Add by a per-channel constant after a Convolution (a BatchNormalization some exporters write
as Unsqueeze + Mul + Add, as the onnx package's Inception-v2 does) folds the same way, so the
convolution keeps its activation and pool fusions and the model two passes over memory. A
HardSigmoid after a Convolution, `clip(alpha y + beta, 0, 1)` (PP-OCR's exported squeeze-
excitation gates; an exporter that spells it out writes Mul, Add and Clip, which fold here
and in `glow-fuse-activations` already), folds the same way: the convolution computes
`alpha y + beta` and a Clip to [0, 1] is left, which fuses into it. Quantized, the gate is
then the convolution's requantization and clamp straight to the gate's type, not a
convolution to the pre-activation's type and a lookup table over its levels."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
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
from glowmlir.dialects.weights import dense_from_array
from glowmlir.names import UniqueNames
from glowmlir.transforms.constants import constant_name, constant_value, erase_unused_constants, names_in


def fold_into_convolution(value: SSAValue, factor: np.ndarray | None, shift: np.ndarray | None,
                          names: UniqueNames, rewriter: PatternRewriter, tag: str) -> bool:
    """If `value` is the only use of a plain convolution's result with constant filter and
    bias, makes the convolution compute `value * factor + shift` per output channel (either
    may be None) and returns True."""
    conv = value.owner
    if (not isinstance(conv, glow.ConvolutionOp) or not value.has_one_use() or conv.activation is not None
            or conv.pool is not None or conv.residual is not None or glow.is_nhwc(conv)):
        return False
    filter_, conv_bias = constant_value(conv.filter), constant_value(conv.bias)
    if filter_ is None or conv_bias is None:
        return False
    if factor is not None:
        new_filter = glow.ConstantOp(names(constant_name(conv.filter, tag)),
                                     dense_from_array((filter_ * factor.reshape(-1, 1, 1, 1)).astype(filter_.dtype)))
        rewriter.insert(new_filter, InsertPoint.before(conv))
        old_filter = conv.filter.owner
        conv.operands[1] = new_filter.result
        erase_unused_constants([old_filter], rewriter)
        conv_bias = conv_bias * factor
    new_bias = glow.ConstantOp(names(constant_name(conv.bias, tag)),
                               dense_from_array((conv_bias + (0 if shift is None else shift)).astype(np.float32)))
    rewriter.insert(new_bias, InsertPoint.before(conv))
    conv.operands[2] = new_bias.result
    rewriter.notify_op_modified(conv)
    return True


def per_channel(constant: SSAValue, output: SSAValue) -> np.ndarray | None:
    """A float constant operand of an elementwise op on a convolution's NCHW `output` as one
    value per channel, if it broadcasts as one: a single value, or a shape that is 1 on every
    axis but the channels' ([C, 1, 1], [1, C, 1, 1])."""
    value = constant_value(constant)
    if value is None or value.dtype != np.float32:
        return None
    rank, channels = len(glow.shape_of(output)), glow.shape_of(output)[1]
    if value.size == 1:
        return np.full(channels, value.reshape(()), np.float32)
    shape = (1,) * (rank - value.ndim) + value.shape
    if len(shape) == rank and shape[1] == channels and all(size == 1 for axis, size in enumerate(shape) if axis != 1):
        return value.reshape(channels)
    return None


class FoldChannelAffine(RewritePattern):
    """conv(x, w, b) * s -> conv(x, w * s, b * s); conv(x, w, b) + a -> conv(x, w, b + a),
    for constants with one value per output channel."""

    def __init__(self, names: UniqueNames):
        self.names = names

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glow.MulOp | glow.AddOp, rewriter: PatternRewriter) -> None:
        if not isinstance(op, (glow.MulOp, glow.AddOp)) or getattr(op, "activation", None) is not None:
            return
        for convolved, constant in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            if (not isinstance(convolved.owner, glow.ConvolutionOp)
                    or glow.shape_of(convolved) != glow.shape_of(op.result)):
                continue
            values = per_channel(constant, convolved)
            if values is None:
                continue
            factor, shift = (values, None) if isinstance(op, glow.MulOp) else (None, values)
            if fold_into_convolution(convolved, factor, shift, self.names, rewriter, "affine"):
                rewriter.replace(op, [], [convolved])
            return


class FoldHardSigmoid(RewritePattern):
    """hard_sigmoid(conv(x, w, b)) -> clip(conv(x, w * alpha, b * alpha + beta), 0, 1)."""

    def __init__(self, names: UniqueNames):
        self.names = names

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glow.HardSigmoidOp, rewriter: PatternRewriter) -> None:
        if op.alpha is None or op.beta is None or not isinstance(op.input.owner, glow.ConvolutionOp):
            return
        channels = glow.shape_of(op.input)[1]
        factor = np.full(channels, op.alpha.value.data, np.float32)
        shift = np.full(channels, op.beta.value.data, np.float32)
        if fold_into_convolution(op.input, factor, shift, self.names, rewriter, "hard_sigmoid"):
            rewriter.replace(op, glow.with_attributes_of(glow.ClipOp(op.input, 0.0, 1.0), op))


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
        if fold_into_convolution(op.input, factor, shift, self.names, rewriter, "bn"):
            rewriter.replace(op, [], [op.input])
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
    """Folds inference BatchNormalization, Mul/Add by per-channel constants and HardSigmoid
    into the preceding Convolution (a BatchNormalization elsewhere becomes a Mul and an Add;
    the HardSigmoid leaves a Clip to [0, 1])."""

    name = "glow-fold-batchnorm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        names = names_in(op)
        patterns = GreedyRewritePatternApplier([FoldBatchNormalization(names), FoldChannelAffine(names),
                                                FoldHardSigmoid(names)])
        PatternRewriteWalker(patterns).rewrite_module(op)
