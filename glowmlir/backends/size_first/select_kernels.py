"""`glowll-shape-parameterised-kernels`: int8 kernels whose shapes are read as data, for layers of many shapes.

In a size-first build every int8 layer reads its quantization numbers from a record
(`glowll-quantization-records`), so layers of equal shapes share a kernel; but shapes stay
compiled in, and MobileNetV2's 34 pointwise convolutions, of 17 shapes, get a kernel per
shape at least (its 17 depthwise ones, of 9 shapes, too). This pass gives the int8 1x1
convolutions (stride 1, unpadded, ungrouped, unpooled, batch 1) and FullyConnected
`microkernel = "shape-parameterised"`, and the int8 depthwise convolutions
`"shape-parameterised-depthwise"`, and a record that holds their shapes after their numbers
(`backends.size_first.record`), so that one kernel (`backends.size_first.kernels`) serves all
the matrix products, and one each kernel size of depthwise convolution. Layers take it only
where that makes the code smaller: among the layers whose kernels would come out alike
(`kernel_variant`: the same numbers zero, the same shift signs, the same kind of
requantization, the input zero point folded into the bias or not, ...) it is chosen when they have at least
`minimum_shapes` distinct shapes, i.e. when it replaces that many per-layer kernels by one.

Where the bias is in accumulator units (and, less the input zero point x the weight sum,
fits int32), the input zero point goes into it (`folded_input_offset`, as the DSP-kernel
selection does). With `dsp` (a core with the DSP extension) or `vnni` (a host with
AVX-512 VNNI) the layers get that backend's forms of the kernels, which the pass asks the
registry for (`Backend.shape_parameterised`: `backends.arm_dsp.shape_parameterised`,
`backends.x86.shape_parameterised`): which layers each takes (`matrix_product_form`) and how
it lays out their weights. The DSP extension's `SMLAD` forms (`shape-parameterised-dsp`,
which only pointwise convolutions take: a FullyConnected keeps the DSP kernel of its own;
`shape-parameterised-depthwise-dsp`) take their weights re-laid as int16 pairs less the zero
point (`pack_matrix_product`, `pack_depthwise`). The depthwise kernel's weights are int16
less the zero point in either form; where the sums allow, the requantization of both is
narrow (`narrow_requantization`, weights doubled), as the DSP kernels' is.

The VNNI form (`x86-vnni-shape-parameterised`, `backends.x86.vnni_shape_parameterised`; the
depthwise convolutions keep the host's own kernels) takes layers of a multiple of 4 input
channels whose bias is in accumulator units, a convolution of one pixel or of at least 16,
and packs the filter and folds the bias itself (`select_matrix_product`, as the per-layer
x86-vnni kernel). Its layers are alike when they also take the same code (its
`matrix_product_form`: the FullyConnected steps, or pixel tiles with the same last block of
channels; the same output step, narrow or not, and in the narrow one the same relu), and
the output zero point is read even when it is 0 (its microkernel's `loaded_numbers`).

Run before the DSP- and VNNI-kernel selections (which leave a layer with a microkernel as
it is) and before `glowll-quantization-records` (which gives the other layers their
records); `glow-compile` runs it at -Oz, and at -Os on a core without the DSP extension
or VNNI, and in its VNNI form on a VNNI host at -O3 and -Os (`pipeline.glowll_passes`,
`docs/code-size.md`).
"""

from __future__ import annotations

import dataclasses
import importlib
from collections import defaultdict
from dataclasses import dataclass, field
from types import ModuleType

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from glowmlir.backends import microkernel, named
from glowmlir.backends.size_first.quantization_records import attach_record, takes_record
from glowmlir.backends.size_first.record import DEPTHWISE_MICROKERNEL, MICROKERNEL, OUTPUT_BLOCK
from glowmlir.dialects import glow, glowll
from glowmlir.dialects.glowll import MicrokernelAttr
from glowmlir.dialects.weights import array_from_dense
from glowmlir.errors import GlowError
from glowmlir.lowering.shape_parameterised_depthwise import DEPTHWISE_PIXELS, DEPTHWISE_PLANE_BYTES, PLANE_SLACK
from glowmlir.lowering.shape_records import DepthwiseShape, MatrixShape, layer_record
from glowmlir.quantization.rescaling import KernelParameters, centred_rows
from glowmlir.transforms.int8_kernel_selection import (
    accumulator_bias,
    centred_type,
    fits_narrow_requantization,
    fold_input_offset,
    folded_bias,
    int8_buffers,
)
from glowmlir.transforms.select_kernels import erase_if_unused, insert_weight

MatrixProduct = glowll.ConvolutionOp | glowll.FullyConnectedOp


def is_matrix_product(op: MatrixProduct) -> bool:
    """An int8 FullyConnected, or an int8 1x1 convolution that is one: stride 1, no pads,
    one group, no fused pool or residual, batch 1; of constant weights, without a record or
    microkernel yet, of two output channels at least. (A backend's form takes those of them
    its `matrix_product_form` admits.)"""
    weights = op.operands[2].owner
    if (not takes_record(op) or op.microkernel is not None or not int8_buffers(op.dest, op.input, op.operands[2])
            or op.wide_accumulators is not None or not isinstance(weights, glowll.WeightOp) or weights.value is None):
        return False
    if MatrixShape.of(op).output_channels < OUTPUT_BLOCK:
        return False
    return isinstance(op, glowll.FullyConnectedOp) or (
        glow.shape_of(op.filter)[2:] == (1, 1) and set(op.strides.get_values()) == {1}
        and not any(op.pads.get_values()) and op.group.value.data == 1 and op.pool is None
        and op.residual is None and glow.shape_of(op.input)[0] == 1)


def form_of(backend: str) -> ModuleType:
    """A backend's forms of the kernels (`Backend.shape_parameterised`)."""
    found = named(backend)
    if found is None or found.shape_parameterised is None:
        raise GlowError(f"glowll-shape-parameterised-kernels: no registered backend {backend} has forms of the kernels")
    return importlib.import_module(found.shape_parameterised)


def lays_out_itself(form: ModuleType | None) -> bool:
    """Whether a form packs a layer's weights and folds its bias itself (`select_matrix_product`:
    every bias in accumulator units), rather than taking them as int16 less their zero point."""
    return form is not None and hasattr(form, "select_matrix_product")


def is_depthwise(op: MatrixProduct) -> bool:
    """An int8 depthwise convolution (one input and one output channel per group) of constant
    weights, without a record or microkernel yet: undilated, unpooled, without a residual,
    batch 1, whose padded input plane fits `DEPTHWISE_PLANE_BYTES` (`PLANE_SLACK` bytes
    spare) and whose output rows are `DEPTHWISE_PIXELS` wide at least."""
    if not isinstance(op, glowll.ConvolutionOp):
        return False
    weights = op.filter.owner
    if (not takes_record(op) or op.microkernel is not None or not int8_buffers(op.dest, op.input, op.filter)
            or op.wide_accumulators is not None or not isinstance(weights, glowll.WeightOp) or weights.value is None
            or op.pool is not None or op.residual is not None or set(op.dilations.get_values()) != {1}):
        return False
    batch, channels, _, _ = glow.shape_of(op.input)
    shape = DepthwiseShape.of(op)
    return (batch == 1 and op.group.value.data == channels == glow.shape_of(op.dest)[1]
            and glow.shape_of(op.filter)[1] == 1 and shape.out_width >= DEPTHWISE_PIXELS
            and shape.padded_height * shape.padded_width + PLANE_SLACK <= DEPTHWISE_PLANE_BYTES)


def centred_weights(op: MatrixProduct) -> np.ndarray:
    """The layer's weights less their zero point, [O, C] int64."""
    weights = op.operands[2]
    return centred_rows(array_from_dense(weights.owner.value), weights.type.element_type)


def arithmetic_variant(op: MatrixProduct, centred: bool, form: ModuleType | None = None) -> tuple:
    """What a shape-parameterised kernel's code depends on besides its shape: which numbers
    it reads are zero (they stay constants; a form's kernel loads its microkernel's
    `loaded_numbers` anyway) and the signs of its shifts (`KernelParameters.code_pattern`),
    whether each output channel has its own requantization and whether the input zero point
    goes into the bias (then the kernel does not read it); for `centred` weights (stored less
    their zero point: the DSP-extension matrix product's, the depthwise kernel's) not the
    weight zero point but whether the requantization is narrow (`narrow_requantization`; the
    VNNI form's narrow step is in its `matrix_product_form`). A `form` that lays the layer out
    itself (`lays_out_itself`) folds every bias in accumulator units, the others where the
    folded bias fits int32 (`folded_bias`)."""
    itself = lays_out_itself(form)
    weights = None if itself else centred_weights(op)
    folds = accumulator_bias(op) is not None if itself else folded_bias(op, weights.sum(axis=1)) is not None
    numbers = KernelParameters.of(op)
    if folds:
        numbers = dataclasses.replace(numbers, input_offset=0)
    if itself:
        numbers = dataclasses.replace(numbers, **dict.fromkeys(microkernel(form.MATRIX_PRODUCT).loaded_numbers, 1))
    narrow = None
    if centred:
        numbers = dataclasses.replace(numbers, weight_offset=0)
        narrow = fits_narrow_requantization(op, weights)
    return op.requantization is not None, folds, narrow, numbers.code_pattern()


def kernel_variant(op: MatrixProduct, form: ModuleType | None = None) -> tuple | None:
    """Which shape-parameterised kernel would serve `op` (None: none): layers of one variant
    share it. A depthwise convolution's kernel keeps its kernel size in its code (none with a
    `form` that has no depthwise one: a VNNI host keeps its own depthwise kernels); the
    matrix product of a `form` what its `matrix_product_form` says."""
    if (form is None or form.DEPTHWISE is not None) and is_depthwise(op):
        return ("depthwise", glow.shape_of(op.filter)[2:], *arithmetic_variant(op, True))
    if not is_matrix_product(op):
        return None
    extra = () if form is None else form.matrix_product_form(op, MatrixShape.of(op))
    if extra is None:
        return None
    centred = form is not None and not lays_out_itself(form)
    return ("matrix product", *arithmetic_variant(op, centred, form if lays_out_itself(form) else None), extra)


def is_depthwise_variant(variant: tuple) -> bool:
    """Whether a `kernel_variant` is the depthwise kernel's (its layers' shapes `DepthwiseShape`s)."""
    return variant[0] == "depthwise"


def replace_by_centred(op: MatrixProduct, packed: np.ndarray, narrow: bool, rewriter: PatternRewriter) -> None:
    """The layer's weights replaced by `packed` (int16, less the zero point; doubled when
    `narrow`: then the layer is marked `narrow_requantization` and `doubled_accumulators`, its
    requantization one rounding high multiply of the doubled sums)."""
    weights = op.operands[2].owner
    op.properties["filter_shape"] = glow.ints(glow.shape_of(op.filter))
    op.operands[2] = insert_weight(f"{weights.name_.data}_shape_parameterised", packed * np.int16(2 if narrow else 1),
                                   op, rewriter, centred_type(op.operands[2].type.element_type))
    erase_if_unused(weights, rewriter)
    if narrow:
        op.properties["narrow_requantization"] = op.properties["doubled_accumulators"] = UnitAttr()


@dataclass
class SelectShapeParameterisedKernel(RewritePattern):
    form: ModuleType | None
    """A backend's forms of the kernels (`Backend.shape_parameterised`), None: the portable ones."""
    chosen: dict[MatrixProduct, bool] = field(default_factory=dict)
    """The layers that take a shape-parameterised kernel, each with whether it is depthwise."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MatrixProduct, rewriter: PatternRewriter) -> None:
        if op not in self.chosen:
            return
        form = self.form
        if lays_out_itself(form):
            form.select_matrix_product(op, rewriter)
            attach_record(op, layer_record(op), rewriter, microkernel=MicrokernelAttr(form.MATRIX_PRODUCT))
            return
        centred, depthwise = centred_weights(op), self.chosen[op]
        if depthwise:  # in a form, its weight layout (on the DSP extension int16 words along the window rows)
            kernel = DEPTHWISE_MICROKERNEL if form is None else form.DEPTHWISE
            filter_levels = centred.reshape(glow.shape_of(op.filter))
            packed = filter_levels.astype(np.int16) if form is None else form.pack_depthwise(filter_levels)
            replace_by_centred(op, packed, fits_narrow_requantization(op, centred), rewriter)
        elif form is not None:
            kernel = form.MATRIX_PRODUCT
            replace_by_centred(op, form.pack_matrix_product(centred), fits_narrow_requantization(op, centred),
                               rewriter)
        else:
            kernel = MICROKERNEL
        fold_input_offset(op, centred.sum(axis=1), rewriter)
        attach_record(op, layer_record(op, depthwise), rewriter, microkernel=MicrokernelAttr(kernel))


@dataclass(frozen=True)
class ShapeParameterisedKernels(ModulePass):
    """Gives the int8 pointwise convolutions and FullyConnected the shape-parameterised
    matrix product, and the int8 depthwise convolutions the shape-parameterised depthwise
    kernel, where, among alike layers, at least `minimum_shapes` shapes would otherwise each
    get a kernel; `dsp`: their forms for the DSP extension, `vnni`: the matrix product's
    form for AVX-512 VNNI (no depthwise kernel; see the module docstring)."""

    name = "glowll-shape-parameterised-kernels"
    minimum_shapes: int = 2
    dsp: bool = False
    vnni: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.minimum_shapes < 1:
            raise GlowError(f"{self.name}{{minimum-shapes={self.minimum_shapes}}}: expected 1 or more")
        if self.dsp and self.vnni:
            raise GlowError(f"{self.name}: dsp and vnni are two targets' forms: expected one")
        form = form_of("arm_dsp") if self.dsp else form_of("x86") if self.vnni else None
        alike: dict[tuple, list[MatrixProduct]] = defaultdict(list)
        for instruction in op.walk():
            variant = kernel_variant(instruction, form) if isinstance(instruction, MatrixProduct) else None
            if variant is not None:
                alike[variant].append(instruction)
        chosen = {}
        for variant, layers in alike.items():
            shape = DepthwiseShape.of if is_depthwise_variant(variant) else MatrixShape.of
            if len({shape(layer) for layer in layers}) >= self.minimum_shapes:
                chosen.update(dict.fromkeys(layers, is_depthwise_variant(variant)))
        selection = SelectShapeParameterisedKernel(form, chosen)
        PatternRewriteWalker(selection, apply_recursively=False).rewrite_module(op)
