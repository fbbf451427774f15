"""`glow-choose-hybrid-weights`: how a hybrid layer keeps its int8 weights.

A hybrid ("dynamic range") TFLite model keeps int8 weights for float layers; the importer
gives each such convolution filter or FullyConnected weight matrix as a `glow.dequantize` of
its int8 constant. This pass chooses, layer by layer, one of two forms:

    float   the dequantize is computed here: an f32 constant, four times the int8 bytes, read
            by the float kernels as any float model's weights are;
    int8    the dequantize is marked `glow.DEQUANTIZE_ON_USE`: the layer keeps its int8
            levels in the weights and its kernel dequantizes each weight as it reads it
            (level x scale of its output channel, `glowll` `weight_scales`).

`form=float` or `form=int8` forces one form on every such layer. `form=auto` chooses:

* with `flash-size` (the target's flash, e.g. from a board preset): the float form as long as
  every constant of the graph fits in the flash less `CODE_RESERVE`; otherwise layers go int8,
  the largest first, until they fit (all of them if nothing fits);
* without: by estimated cost. The int8 form adds a conversion and a multiply each time the
  kernel reads a weight: a convolution reads each weight once per output row (it is a
  loop-invariant of the row), so it costs 1 / (output width) of its multiply-accumulates; a
  FullyConnected reads each weight once per product. A layer goes int8 where that is at most
  `DEQUANTIZATION_OVERHEAD` (convolutions of output rows `1 / DEQUANTIZATION_OVERHEAD` wide or
  wider), float otherwise.

Only symmetric int8 levels (TFLite's weights: zero points 0), per tensor or per output
channel, whose every use is a float convolution's filter or FullyConnected's weights are
candidates; a dequantize of any other constant is left as it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr, f32, i8
from xdsl.passes import ModulePass

from glowmlir.dialects import glow
from glowmlir.dialects.quant import UniformQuantizedType
from glowmlir.dialects.weights import array_from_dense, dense_from_array
from glowmlir.errors import GlowError
from glowmlir.quantization.params import dequantize_as

FORMS = ("auto", "float", "int8")

CODE_RESERVE = 64 * 1024
"""Flash bytes `form=auto` leaves for code (the bundle's and the application's) beside the
constants when it decides by `flash-size`."""

DEQUANTIZATION_OVERHEAD = 1 / 8
"""The most dequantizations per multiply-accumulate `form=auto` accepts for the int8 form
without a flash size."""


def hybrid_weights(function: glow.FunctionOp) -> list[glow.DequantizeOp]:
    """The dequantizes of symmetric int8 constants read only as float convolution filters or
    FullyConnected weights."""
    found = []
    for op in function.body.block.ops:
        if not isinstance(op, glow.DequantizeOp) or not isinstance(op.input.owner, glow.ConstantOp):
            continue
        element = op.input.type.element_type
        if (not isinstance(element, UniformQuantizedType) or element.storage_type != i8
                or element.offset_array().any() or not op.input.has_one_use()):
            continue
        if op.result.uses and all(_reads_as_weights(use.operation, use.index) for use in op.result.uses):
            found.append(op)
    return found


def _reads_as_weights(op, index: int) -> bool:
    """Whether operand `index` of `op` is a float layer's weights whose per-channel scales (if
    any) are along its output channels (OIHW filter: 0; [in, out] matrix: 1)."""
    if not (isinstance(op, glow.ConvolutionOp | glow.FullyConnectedOp) and index == 1
            and op.input.type.element_type == f32 and op.results[0].type.element_type == f32):
        return False
    levels = op.operands[1].owner.input.type.element_type
    return not levels.per_channel or levels.axis.data == (0 if isinstance(op, glow.ConvolutionOp) else 1)


def _bytes(value) -> int:
    element = value.type.element_type
    width = element.storage_type.bitwidth if isinstance(element, UniformQuantizedType) else element.bitwidth
    return math.prod(glow.shape_of(value)) * max(width // 8, 1)


def dequantizations_per_product(op: glow.DequantizeOp) -> float:
    """How often its layers' kernels dequantize a weight, per multiply-accumulate (at most)."""
    worst = 0.0
    for use in op.result.uses:
        layer = use.operation
        if isinstance(layer, glow.ConvolutionOp):
            width = glow.convolution_shape(layer)[-1]  # NCHW, before a fused pool
            worst = max(worst, 1 / max(width, 1))
        else:
            worst = max(worst, 1.0)
    return worst


def choose_int8(candidates: list[glow.DequantizeOp], constant_bytes: int, flash_size: int) -> set[glow.DequantizeOp]:
    """The layers `form=auto` keeps int8 (see the module doc); `constant_bytes`: every
    constant of the graph in the float form."""
    if not flash_size:
        return {op for op in candidates if dequantizations_per_product(op) <= DEQUANTIZATION_OVERHEAD}
    budget, chosen = flash_size - CODE_RESERVE, set()
    for op in sorted(candidates, key=lambda op: -_bytes(op.result)):
        if constant_bytes <= budget:
            break
        chosen.add(op)
        constant_bytes -= _bytes(op.result) - _bytes(op.input)
    return chosen


@dataclass(frozen=True)
class ChooseHybridWeights(ModulePass):
    """Each hybrid layer's int8 weights: dequantized here (float) or as the kernel reads them
    (int8), by `form` (auto, float, int8) and `flash_size` (bytes, 0: unknown)."""

    name = "glow-choose-hybrid-weights"

    form: str = "auto"
    flash_size: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.form not in FORMS:
            raise GlowError(f"glow-choose-hybrid-weights: form=\"{self.form}\" (expected {', '.join(FORMS)})")
        for function in op.body.block.ops:
            if not isinstance(function, glow.FunctionOp):
                continue
            candidates = hybrid_weights(function)
            if not candidates:
                continue
            if self.form == "auto":
                constants = sum(_bytes(c.result) for c in function.body.block.ops if isinstance(c, glow.ConstantOp))
                in_float = constants + sum(_bytes(d.result) - _bytes(d.input) for d in candidates)
                int8 = choose_int8(candidates, in_float, self.flash_size)
            else:
                int8 = set(candidates) if self.form == "int8" else set()
            for dequantize in candidates:
                if dequantize in int8:
                    dequantize.attributes[glow.DEQUANTIZE_ON_USE] = UnitAttr()
                else:
                    _fold(dequantize)


def _fold(dequantize: glow.DequantizeOp) -> None:
    """The dequantize becomes the f32 constant of its real values."""
    constant = dequantize.input.owner
    values = dequantize_as(array_from_dense(constant.value), dequantize.input.type.element_type)
    folded = glow.ConstantOp(constant.name_.data, dense_from_array(values))
    block = dequantize.parent_block()
    block.insert_op_before(folded, dequantize)
    dequantize.result.replace_all_uses_with(folded.result)
    block.erase_op(dequantize)
    block.erase_op(constant)
