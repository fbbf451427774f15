"""`glowll-fold-input-quantize`: a float input's quantize folded into the stem that reads it.

A net's input quantize (f32 to per-tensor int8, `vector-quantize-int8`) is a pass over memory
of its own: each float read, its level stored into an int8 buffer, which the stem (an int8
convolution of few taps, `vector-im2col-int8`) then reads back. Where that buffer's only
reader is such a convolution (of undilated rows), the convolution reads the float input
instead and quantizes it as it goes (`int8_im2col.QuantizedRows`: a ring of the last kernel
rows' levels on the stack, each input row quantized once by the quantize kernel's own
arithmetic, `quantize.quantize_run`, with its `reciprocal` where it had one): its microkernel
gets the levels' type as its `quantized_input` parameter (`glowll.QUANTIZED_INPUT`), the
quantize and its int8 buffer go.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from glowmlir.dialects import glowll
from glowmlir.lowering import vector_layout as layout


def folding_convolution(quantize: glowll.ElementwiseOp) -> glowll.ConvolutionOp | None:
    """The convolution a `vector-quantize-int8` quantize folds into: the only reader of its
    scratch buffer, a `vector-im2col-int8` one of undilated rows, not in place, with no
    instruction between them on the float input's memory (a view of it included)."""
    if quantize.microkernel is None or quantize.microkernel.data != layout.INT8_QUANTIZE:
        return None
    levels, source = quantize.dest, quantize.inputs[0]
    if not isinstance(levels.owner, glowll.AllocOp):
        return None
    uses = list(levels.uses)
    readers = [use.operation for use in uses if use.operation is not quantize]
    if len(readers) != 1 or len(uses) != 2:
        return None
    conv = readers[0]
    if (not isinstance(conv, glowll.ConvolutionOp) or conv.input is not levels or conv.microkernel is None
            or conv.microkernel.data != layout.INT8_IM2COL or conv.in_place is not None
            or conv.microkernel.parameter(glowll.QUANTIZED_INPUT) is not None
            or conv.dilations.get_values()[0] != 1 or conv.parent_block() is not quantize.parent_block()):
        return None
    memory = glowll.root_buffer(source)[0]
    between = quantize.next_op
    while between is not None and between is not conv:
        if any(isinstance(value.type, MemRefType) and isinstance(value.owner, glowll.BufferOp | glowll.TensorViewOp)
               and glowll.root_buffer(value)[0] is memory for value in between.operands):
            return None
        between = between.next_op
    return conv if between is conv else None


@dataclass
class FoldQuantizeIntoConvolution(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.ElementwiseOp, rewriter: PatternRewriter) -> None:
        conv = folding_convolution(op)
        if conv is None:
            return
        microkernel = conv.microkernel.with_parameter(glowll.QUANTIZED_INPUT, op.dest.type.element_type)
        reciprocal = op.microkernel.parameter("reciprocal")
        if reciprocal is not None:
            microkernel = microkernel.with_parameter("reciprocal", reciprocal)
        levels = op.dest
        conv.operands[1] = op.inputs[0]
        conv.properties["microkernel"] = microkernel
        rewriter.notify_op_modified(conv)
        rewriter.erase(op)
        if not levels.uses:
            rewriter.erase(levels.owner)


@dataclass(frozen=True)
class FoldInputQuantize(ModulePass):
    """Folds each f32 to int8 quantize whose int8 buffer only a host int8 im2col convolution
    reads into that convolution (see the module doc)."""

    name = "glowll-fold-input-quantize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FoldQuantizeIntoConvolution(), apply_recursively=False).rewrite_module(op)
