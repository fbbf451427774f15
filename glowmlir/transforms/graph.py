"""Graph optimizations on the `glow` dialect (Glow's GraphOptimizer, abridged).

* `glow-constant-fold`   — ops whose inputs are all constants become one constant;
* `glow-fold-batchnorm`  — BatchNormalization after a Convolution is folded into its
  filter and bias; any other BatchNormalization becomes a per-channel Mul and Add;
* `glow-fuse-activations` — Relu/Clip after Convolution, FullyConnected or Add becomes
  the producer's fused `activation`;
* `glow-fuse-conv-pool` — MaxPool/AvgPool after a Convolution becomes the convolution's
  fused `pool` window, so only the pooled output is stored;
* `glow-fuse-residual-add` — Add(Convolution, r) becomes a convolution that starts from r.

xDSL's own `dce` and `cse` complete the pipeline.
"""

from __future__ import annotations

import math

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr, f32
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from glowmlir import reference
from glowmlir.dialects import glow
from glowmlir.dialects.quant import is_quantized, retype
from glowmlir.dialects.weights import array_from_dense, dense_from_array
from glowmlir.names import UniqueNames


def _names_in(module: Operation) -> UniqueNames:
    """A name source that avoids every constant/placeholder/output name already present."""
    names = UniqueNames()
    for op in module.walk():
        if isinstance(op, glow.ConstantOp | glow.PlaceholderOp | glow.SaveOp):
            names.taken.add(op.name_.data)
    return names


def constant_value(value: SSAValue) -> np.ndarray | None:
    """The array of a `glow.constant` or `glow.splat` result, else None."""
    op = value.owner
    if isinstance(op, glow.ConstantOp) and op.value is not None:
        return array_from_dense(op.value)
    if isinstance(op, glow.SplatOp):
        return np.full(glow.shape_of(value), op.value.value.data, np.float32)
    return None


def _constant_name(value: SSAValue, suffix: str) -> str:
    """`<name of value's constant>_<suffix>`, without repeating a suffix it already has."""
    op = value.owner
    if not isinstance(op, glow.ConstantOp):
        return suffix
    name = op.name_.data.split("__")[0]
    return name if name.endswith(f"_{suffix}") else f"{name}_{suffix}"


# ----------------------------------------------------------------------------- constant folding


FOLD_LIMIT = 1 << 31
"""Results past this many bytes are computed at run time, not folded into the weights."""


class FoldConstantOperands(RewritePattern):
    def __init__(self, names: UniqueNames):
        self.names = names

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if type(op) not in reference.EVALUATORS or not op.operands or \
                any(v.type.element_type != f32 for v in (*op.operands, *op.results)):  # float32 semantics only
            return
        if any(4 * math.prod(glow.shape_of(v)) > FOLD_LIMIT for v in op.results):
            return
        values = [constant_value(v) for v in op.operands]
        if any(v is None for v in values):
            return
        result = reference.evaluate(op, *values)
        name = self.names(_constant_name(op.operands[0], "folded"))
        rewriter.replace(op, glow.ConstantOp(name, dense_from_array(result)))


@dataclass(frozen=True)
class ConstantFold(ModulePass):
    """Evaluates ops whose operands are all constants at compile time."""

    name = "glow-constant-fold"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FoldConstantOperands(_names_in(op))).rewrite_module(op)


# ----------------------------------------------------------------------------- batch normalization


class FoldBatchNormalization(RewritePattern):
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
                new_filter = glow.ConstantOp(self.names(_constant_name(conv.filter, "bn")),
                                             dense_from_array(filter_ * factor.reshape(-1, 1, 1, 1)))
                new_bias = glow.ConstantOp(self.names(_constant_name(conv.bias, "bn")),
                                           dense_from_array(conv_bias * factor + shift))
                rewriter.insert([new_filter, new_bias], InsertPoint.before(conv))
                conv.operands[1], conv.operands[2] = new_filter.result, new_bias.result
                rewriter.replace(op, [], [conv.result])
                return
        # Not after a convolution: y = x * factor + shift, per channel (axis 1).
        rank = len(glow.shape_of(op.input))
        channel_shape = (factor.size,) + (1,) * (rank - 2)
        factor_op = glow.ConstantOp(self.names(_constant_name(op.scale, "bn_scale")), dense_from_array(factor.reshape(channel_shape)))
        shift_op = glow.ConstantOp(self.names(_constant_name(op.bias, "bn_shift")), dense_from_array(shift.reshape(channel_shape)))
        mul = glow.MulOp.create(operands=[op.input, factor_op.result], result_types=[op.result.type])
        add = glow.AddOp.create(operands=[mul.results[0], shift_op.result], result_types=[op.result.type])
        rewriter.replace(op, [factor_op, shift_op, mul, add])


@dataclass(frozen=True)
class FoldBatchNorm(ModulePass):
    """Folds inference BatchNormalization into the preceding Convolution (or into Mul+Add)."""

    name = "glow-fold-batchnorm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FoldBatchNormalization(_names_in(op)), apply_recursively=False).rewrite_module(op)


# ----------------------------------------------------------------------------- activation fusion


class FuseActivationIntoProducer(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, glow.ReluOp | glow.ClipOp):
            return
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
        retype(producer.results[0], op.result.type)
        if isinstance(op, glow.ReluOp):
            producer.properties["activation"] = glow.ActivationAttr(glow.Activation.RELU)
        else:
            producer.properties["activation"] = glow.ActivationAttr(glow.Activation.CLIP)
            producer.properties["clip_min"], producer.properties["clip_max"] = op.min, op.max
        rewriter.replace(op, [], [producer.results[0]])


@dataclass(frozen=True)
class FuseActivations(ModulePass):
    """Merges a Relu or Clip into the Convolution, FullyConnected or Add that feeds it."""

    name = "glow-fuse-activations"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(GreedyRewritePatternApplier([FuseActivationIntoProducer()])).rewrite_module(op)


# ----------------------------------------------------------------------------- convolution + pooling

POOL_PROPERTIES = ("pool", "pool_kernel", "pool_strides", "pool_pads", "pool_count_include_pad")


class FuseConvolutionIntoPool(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glow.PoolOp, rewriter: PatternRewriter) -> None:
        conv = op.input.owner
        if not isinstance(conv, glow.ConvolutionOp) or conv.pool is not None or not op.input.has_one_use():
            return
        if op.result.type.element_type != conv.result.type.element_type:
            return  # quantized with different parameters: the pooled rows could not be reused as they are
        pool_kind = glow.PoolKind.MAX if isinstance(op, glow.MaxPoolOp) else glow.PoolKind.AVG
        fused = glow.ConvolutionOp.create(operands=list(conv.operands), result_types=[op.result.type],
                                          properties=dict(conv.properties) | {
                                              "pool": glow.PoolKindAttr(pool_kind),
                                              "pool_kernel": op.kernel, "pool_strides": op.strides,
                                              "pool_pads": op.pads})
        if isinstance(op, glow.AvgPoolOp) and op.count_include_pad is not None:
            fused.properties["pool_count_include_pad"] = op.count_include_pad
        rewriter.replace(op, fused)
        rewriter.erase(conv)


@dataclass(frozen=True)
class FuseConvPool(ModulePass):
    """Merges a MaxPool/AvgPool into the Convolution feeding it: the convolution's
    full-resolution output is then never stored, only the pooled one."""

    name = "glow-fuse-conv-pool"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FuseConvolutionIntoPool(), apply_recursively=False).rewrite_module(op)


# ----------------------------------------------------------------------------- residual add


class FuseAddIntoConvolution(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glow.AddOp, rewriter: PatternRewriter) -> None:
        for conv_value, residual in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            conv = conv_value.owner
            if (isinstance(conv, glow.ConvolutionOp) and conv_value.has_one_use() and conv.residual is None
                    and not is_quantized(op.result.type)
                    and conv.activation is None and conv.pool is None
                    and glow.shape_of(residual) == glow.shape_of(op.result) == glow.shape_of(conv_value)):
                properties = dict(conv.properties) | {k: v for k, v in op.properties.items()
                                                      if k in ("activation", "clip_min", "clip_max")}
                fused = glow.ConvolutionOp.create(operands=[*conv.operands, residual], result_types=[op.result.type],
                                                  properties=properties)
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
