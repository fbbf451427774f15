"""`glowll-shape-parameterised-kernels`: one int8 matrix product, its shapes read as data, for layers of many shapes.

In a size-first build every int8 layer reads its quantization numbers from a record
(`glowll-quantization-records`), so layers of equal shapes share a kernel; but shapes stay
compiled in, and MobileNetV2's 34 pointwise convolutions, of 17 shapes, get a kernel per
shape at least. This pass gives the int8 1x1 convolutions (stride 1, unpadded, ungrouped,
unpooled, batch 1) and FullyConnected `microkernel = "shape-parameterised"`
(`"shape-parameterised-dsp"` with `dsp`) and a record that holds their shapes after their
numbers (`libraries.shape_record`), so one kernel
(`lowering.shape_parameterised`) serves them all. Layers take it only where that makes the
code smaller: among the layers whose kernels would come out alike (the same numbers zero,
the same kind of requantization, the input zero point folded into the bias or not) it is
chosen when they have at least `minimum_shapes` distinct shapes, i.e. when it replaces that
many per-layer kernels by one.

Where the bias is in accumulator units, the input zero point goes into it
(`folded_input_offset`, as the DSP-kernel selection does). With `dsp` (a core with the DSP
extension) the layers get the kernel's `SMLAD` form (`shape-parameterised-dsp`), which only
layers of a multiple of 4 input channels take; weights stay int8 as they are.

With `vnni` (a host with AVX-512 VNNI) the layers get its VNNI form
(`x86-vnni-shape-parameterised`, `lowering.vnni_shape_parameterised`): layers of a multiple
of 4 input channels whose bias is in accumulator units, a convolution of one pixel or of at
least 16; the filter is packed and the bias folded as for the per-layer x86-vnni kernel
(`select_vnni_kernels.select_vnni`). Its layers are alike when they also take the same code
(`vnni_form`: the FullyConnected steps, or pixel tiles with the same last block of
channels and relu), and the output zero point is read even when it is 0
(`shape_record.VNNI_LOADED_NUMBERS`).

Run before the DSP- and VNNI-kernel selections (which leave a layer with a microkernel as
it is) and before `glowll-quantization-records` (which gives the other layers their
records); `glow-compile` runs it at -Oz, and in its VNNI form on a VNNI host at -O3 and -Os
(`pipeline.glowll_passes`, `docs/code-size.md`).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from glowmlir.dialects import glow, glowll
from glowmlir.dialects.weights import array_from_dense
from glowmlir.errors import GlowError
from glowmlir.libraries import vnni_layout
from glowmlir.libraries.shape_record import (
    DSP_CHANNELS,
    DSP_MICROKERNEL,
    MICROKERNEL,
    OUTPUT_BLOCK,
    VNNI_LOADED_NUMBERS,
    VNNI_MICROKERNEL,
    MatrixShape,
    layer_record,
)
from glowmlir.quantization.rescaling import KernelParameters, weight_zero_point
from glowmlir.transforms.quantization_records import attach_record, takes_record
from glowmlir.transforms.select_arm_dsp_kernels import accumulator_bias, fold_input_offset, int8_buffers
from glowmlir.transforms.select_vnni_kernels import select_vnni

MatrixProduct = glowll.ConvolutionOp | glowll.FullyConnectedOp


def is_matrix_product(op: MatrixProduct, dsp: bool, vnni: bool = False) -> bool:
    """An int8 FullyConnected, or an int8 1x1 convolution that is one: stride 1, no pads,
    one group, no fused pool or residual, batch 1; of constant weights, without a record or
    microkernel yet, of two output channels at least (and, with `dsp`, a multiple of 4 input
    channels; with `vnni`, see `vnni_form`)."""
    weights = op.operands[2].owner
    if (not takes_record(op) or op.microkernel is not None or not int8_buffers(op.dest, op.input, op.operands[2])
            or op.wide_accumulators is not None or not isinstance(weights, glowll.WeightOp) or weights.value is None):
        return False
    shape = MatrixShape.of(op)
    if shape.output_channels < OUTPUT_BLOCK or (dsp and shape.input_channels % DSP_CHANNELS):
        return False
    if isinstance(op, glowll.ConvolutionOp) and not (
            glow.shape_of(op.filter)[2:] == (1, 1) and set(op.strides.get_values()) == {1}
            and not any(op.pads.get_values()) and op.group.value.data == 1 and op.pool is None
            and op.residual is None and glow.shape_of(op.input)[0] == 1):
        return False
    return not vnni or vnni_form(op) is not None


def vnni_form(op: MatrixProduct) -> tuple | None:
    """Which code the VNNI kernel (`lowering.vnni_shape_parameterised`) gives the layer, if it
    takes it (a bias in accumulator units, a multiple of 4 input channels, a convolution of one
    pixel or of at least 16 whose input copy fits `vnni_layout.LARGEST_PACKED_INPUT`): the
    FullyConnected steps, or tiles of pixels with a last block of `O % 16` channels and
    whether a relu clamps at the output zero point (their rounding then ignores the sign:
    the expanding layers' requantization is most of their time)."""
    shape = MatrixShape.of(op)
    if accumulator_bias(op) is None or shape.input_channels % vnni_layout.GROUP:
        return None
    if isinstance(op, glowll.FullyConnectedOp) or shape.pixels == 1:
        return ("fully connected",)
    if (shape.pixels < vnni_layout.LANES or vnni_layout.packed_input_bytes(glow.shape_of(op.input), (0, 0, 0, 0))
            > vnni_layout.LARGEST_PACKED_INPUT):
        return None
    relu = KernelParameters.of(op).clamped_at_offset(op.dest.type.element_type.value_range[0])
    return "pixel tiles", shape.output_channels % vnni_layout.LANES, relu


def arithmetic_variant(op: MatrixProduct, vnni: bool = False) -> tuple:
    """What the matrix product's code depends on besides its shape: which numbers it reads
    are zero (they stay constants; the VNNI form loads `VNNI_LOADED_NUMBERS` anyway), whether
    each output channel has its own requantization and whether the input zero point goes into
    the bias (then the kernel does not read it)."""
    folds = accumulator_bias(op) is not None
    numbers = KernelParameters.of(op)
    if folds:
        numbers = dataclasses.replace(numbers, input_offset=0)
    if vnni:
        numbers = dataclasses.replace(numbers, **dict.fromkeys(VNNI_LOADED_NUMBERS, 1))
    return op.requantization is not None, folds, tuple(value == 0 for value in numbers.record())


@dataclass
class SelectMatrixProduct(RewritePattern):
    microkernel: str
    chosen: set[MatrixProduct] = field(default_factory=set)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MatrixProduct, rewriter: PatternRewriter) -> None:
        if op not in self.chosen:
            return
        if self.microkernel == VNNI_MICROKERNEL:  # the filter packed and the bias folded as x86-vnni's
            convolution = isinstance(op, glowll.ConvolutionOp)
            filter_shape = glow.shape_of(op.filter) if convolution else (*glow.shape_of(op.weights), 1, 1)
            select_vnni(op, filter_shape, rewriter)
            if convolution:
                op.properties["filter_shape"] = glow.ints(filter_shape)
            attach_record(op, layer_record(op), rewriter, microkernel=StringAttr(self.microkernel))
            return
        weights = op.operands[2]
        centred = array_from_dense(weights.owner.value).astype(np.int64) - weight_zero_point(weights.type.element_type)
        fold_input_offset(op, centred.reshape(centred.shape[0], -1).sum(axis=1), rewriter)
        attach_record(op, layer_record(op), rewriter, microkernel=StringAttr(self.microkernel))


@dataclass(frozen=True)
class ShapeParameterisedKernels(ModulePass):
    """Gives the int8 pointwise convolutions and FullyConnected the shape-parameterised
    matrix product where, among alike layers, at least `minimum_shapes` shapes would
    otherwise each get a kernel; `dsp`: its form for the DSP extension, `vnni`: for AVX-512
    VNNI (see the module docstring)."""

    name = "glowll-shape-parameterised-kernels"
    minimum_shapes: int = 2
    dsp: bool = False
    vnni: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.minimum_shapes < 1:
            raise GlowError(f"{self.name}{{minimum-shapes={self.minimum_shapes}}}: expected 1 or more")
        if self.dsp and self.vnni:
            raise GlowError(f"{self.name}: dsp and vnni are two targets' forms: expected one")
        alike: dict[tuple, list[MatrixProduct]] = defaultdict(list)
        for instruction in op.walk():
            if isinstance(instruction, MatrixProduct) and is_matrix_product(instruction, self.dsp, self.vnni):
                form = vnni_form(instruction) if self.vnni else ()
                alike[(*arithmetic_variant(instruction, self.vnni), form)].append(instruction)
        chosen = {instruction for layers in alike.values()
                  if len({MatrixShape.of(layer) for layer in layers}) >= self.minimum_shapes for instruction in layers}
        microkernel = VNNI_MICROKERNEL if self.vnni else DSP_MICROKERNEL if self.dsp else MICROKERNEL
        selection = SelectMatrixProduct(microkernel, chosen)
        PatternRewriteWalker(selection, apply_recursively=False).rewrite_module(op)
