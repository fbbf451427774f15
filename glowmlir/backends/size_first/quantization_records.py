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

Size-first builds (`-opt-level=Os` or `Oz`) run it (`docs/code-size.md`). At -O3 on an
x86-64 host with AVX-512 VNNI it runs `partnered`: only layers with an equal-shaped partner
(`shape_key`) get a record, since only they can share a kernel (MobileNetV3-style has none;
DS-CNN-style's four depthwise layers then share one), and the host's vector kernels run as
fast on numbers loaded once as on constants (a shift's sign stays in the code). On other
-O3 targets the numbers stay compiled in, where they fold into the arithmetic. Outputs are
bit-identical either way.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, i32
from xdsl.ir import Attribute
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from glowmlir.dialects import glow, glowll
from glowmlir.dialects.quant import is_quantized, storage_type
from glowmlir.quantization.rescaling import KernelParameters
from glowmlir.transforms.select_kernels import insert_weight


def takes_record(op: glowll.ConvolutionOp | glowll.FullyConnectedOp) -> bool:
    """A generated (NCHW) int8 Convolution or FullyConnected without a record yet, and without
    a per-channel float step table (`float_step_table`: its steps, proved at compile time, bound
    the kernel's code, which a record's data would not)."""
    weights = op.operands[2]
    return (op.parameters is None and not glow.is_nhwc(op) and getattr(op, "float_step_table", None) is None
            and all(is_quantized(v.type) for v in (op.dest, op.input, weights, op.bias)))


def attach_record(op: glowll.ConvolutionOp | glowll.FullyConnectedOp, record: np.ndarray,
                  rewriter: PatternRewriter, **properties: Attribute) -> None:
    """Replaces `op` by itself reading `record` (a new i32 weight beside its weights) as its
    `parameters`, with `properties` added."""
    weights, bias = op.operands[2], op.bias
    owner = weights.owner if isinstance(weights.owner, glowll.WeightOp) else bias.owner
    name = f"{owner.name_.data}_parameters" if isinstance(owner, glowll.WeightOp) else "layer_parameters"
    buffer = insert_weight(name, record, op, rewriter, i32)
    recorded = glowll.with_operands(op, parameters=buffer)
    recorded.properties.update(properties)
    rewriter.replace(op, recorded)


def shape_key(op: glowll.ConvolutionOp | glowll.FullyConnectedOp) -> tuple:
    """What two layers whose host kernels may come out equal have in common: kind,
    properties (the node name aside), each operand's shape and storage type (not its
    scale), and, for an ungrouped convolution or a FullyConnected, the input zero point
    (the VNNI kernels compile it into their padding words)."""
    properties = tuple((key, str(value)) for key, value in op.properties.items() if key != glow.NODE_NAME)
    operands = tuple((tuple(v.type.get_shape()), str(storage_type(v.type.element_type))) for v in op.operands)
    ungrouped = isinstance(op, glowll.FullyConnectedOp) or op.group.value.data == 1
    return op.name, properties, operands, op.input.type.element_type.offset if ungrouped else None


class AddQuantizationRecord(RewritePattern):
    def __init__(self, keys: set[tuple] | None = None):
        super().__init__()
        self.keys = keys  # only layers of these `shape_key`s (None: every layer)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.ConvolutionOp | glowll.FullyConnectedOp, rewriter: PatternRewriter) -> None:
        if takes_record(op) and (self.keys is None or shape_key(op) in self.keys):
            attach_record(op, KernelParameters.of(op).record(), rewriter)


@dataclass(frozen=True)
class QuantizationRecords(ModulePass):
    """Gives every generated int8 Convolution and FullyConnected a record of its
    quantization numbers (`partnered`: only those with an equal-shaped partner; see the
    module docstring)."""

    name = "glowll-quantization-records"
    partnered: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        keys = None
        if self.partnered:
            layers = Counter(shape_key(layer) for layer in op.walk()
                             if isinstance(layer, glowll.ConvolutionOp | glowll.FullyConnectedOp)
                             and takes_record(layer))
            keys = {key for key, count in layers.items() if count > 1}
        PatternRewriteWalker(AddQuantizationRecord(keys), apply_recursively=False).rewrite_module(op)
