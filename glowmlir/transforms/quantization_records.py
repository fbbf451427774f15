"""`glowll-quantization-records`: the numbers of each int8 layer as data, so that equal-shaped layers share code.

A kernel compiled for one int8 Convolution or FullyConnected holds that layer's input,
weight and output offsets, clamp bounds and per-tensor requantization multiplier and shift
as constants, so no two layers of a network share a kernel even when their shapes are
equal. This pass gives each generated int8 `glowll.convolution` and
`glowll.fully_connected` a `parameters` operand: a new i32 `glowll.weight` (the constant
region, next to the layer's weights) holding those numbers in the order of
`quantization.rescaling.KernelParameters`. The kernel then loads them where it starts
(`quantized_kernels.kernel_parameters`; a number that is 0 stays a constant), and
`lower-glowll-to-llvm`, which emits equal kernels once, gives such layers one kernel.

Size-first builds (`-opt-level=Os` or `Oz`) run it (`docs/code-size.md`); at -O3 the numbers
stay compiled in, where they fold into the arithmetic. Outputs are bit-identical either way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, i32
from xdsl.ir import Attribute
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from glowmlir.dialects import glow, glowll
from glowmlir.dialects.quant import is_quantized
from glowmlir.quantization.rescaling import KernelParameters
from glowmlir.transforms.select_kernels import insert_weight


def takes_record(op: glowll.ConvolutionOp | glowll.FullyConnectedOp) -> bool:
    """A generated (NCHW) int8 Convolution or FullyConnected without a record yet."""
    weights = op.operands[2]
    return (op.parameters is None and not glow.is_nhwc(op)
            and all(is_quantized(v.type) for v in (op.dest, op.input, weights, op.bias)))


def attach_record(op: glowll.ConvolutionOp | glowll.FullyConnectedOp, record: np.ndarray,
                  rewriter: PatternRewriter, **properties: Attribute) -> None:
    """Replaces `op` by itself reading `record` (a new i32 weight beside its weights) as its
    `parameters`, with `properties` added."""
    weights, bias = op.operands[2], op.bias
    owner = weights.owner if isinstance(weights.owner, glowll.WeightOp) else bias.owner
    name = f"{owner.name_.data}_parameters" if isinstance(owner, glowll.WeightOp) else "layer_parameters"
    buffer = insert_weight(name, record, op, rewriter, i32)
    segments = [*op.properties["operandSegmentSizes"].get_values()[:-1], 1]  # `parameters` is the last
    properties = op.properties | properties | {"operandSegmentSizes": DenseArrayBase.from_list(i32, segments)}
    rewriter.replace(op, type(op).create(operands=[*op.operands, buffer], properties=properties,
                                            attributes=dict(op.attributes)))


class AddQuantizationRecord(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.ConvolutionOp | glowll.FullyConnectedOp, rewriter: PatternRewriter) -> None:
        if takes_record(op):
            attach_record(op, KernelParameters.of(op).record(), rewriter)


@dataclass(frozen=True)
class QuantizationRecords(ModulePass):
    """Gives every generated int8 Convolution and FullyConnected a record of its
    quantization numbers (see the module docstring)."""

    name = "glowll-quantization-records"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(AddQuantizationRecord(), apply_recursively=False).rewrite_module(op)
