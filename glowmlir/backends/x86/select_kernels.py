"""`glowll-select-x86-vnni-kernels`: int8 convolutions and FullyConnected onto AVX-512 VNNI.

On an x86-64 target with AVX-512 VNNI and BW (`glow-compile` adds the pass for such a host,
or `-mattr=+avx512vnni,+avx512bw`; see `target.has_avx512_vnni`), every int8 NCHW ungrouped
`glowll.convolution` with a constant filter and bias in accumulator units whose input copy
fits `vnni_layout.LARGEST_PACKED_INPUT` (but, on an AMD Zen core, a shallow 1x1,
`shallow_pointwise`: the host vector unit's vector-pointwise-int8 was faster there), and every
such `glowll.fully_connected`, gets
`microkernel = "x86-vnni"` (`backends.x86.vnni_kernels`: 16 output channels in the lanes of a zmm
register, input channels four at a time, one `vpdpbusd` for 64 products). The filter is
re-laid at compile time (`vnni_layout.pack_filter`; `filter_shape` keeps the OIHW shape) and
the bias replaced by `vnni_layout.folded_bias` (the kernel multiplies unsigned input bytes,
x + 128). Grouped convolutions keep the generic kernel (depthwise ones take
`glowll-select-vector-columns`' vector-depthwise-int8). With `lookup_tables` (a host with
AVX-512 VBMI too: `target.has_avx512_vbmi`), int8 `glowll.int_lookup_table`s get
`microkernel = "x86-vbmi"` (64 levels looked up at once by two `vpermi2b`) and the x86-vnni
layers `#glowll.microkernel<"x86-vnni", {byte_permutes}>` (a table glowll-fuse-lookup-tables
fuses into them is looked up the same way, not lane by lane). With `depthwise`
(VBMI too), an int8 depthwise convolution (unpooled, no residual, its plane in either of the
kernel's forms: `vnni_layout.DepthwiseGeometry.takes`) gets `microkernel = "x86-vnni-depthwise"`
(`backends.x86.vnni_depthwise`: four taps a `vpdpbusd`, their bytes gathered by a byte
permute), its filter as it is, its bias `vnni_layout.folded_bias`'s. Int8 Add, Sub
and Mul get `microkernel = "x86-avx512"` (`SelectInt8Elementwise`); with `float_forms`, only
those without a proved float form (`SelectElementwiseWithoutFloatForm`: the others take the
host vector unit's vector-elementwise-int8 and its float forms). Outputs stay bit-identical
to the generic int8 kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, UnitAttr, i32, i64
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from glowmlir.backends.x86 import layout as vnni_layout
from glowmlir.dialects import glow, glowll
from glowmlir.dialects.glowll import MicrokernelAttr
from glowmlir.dialects.memory import align
from glowmlir.dialects.quant import UniformQuantizedType, is_quantized_instruction, stored_as
from glowmlir.dialects.weights import array_from_dense
from glowmlir.errors import GlowError
from glowmlir.lowering.vector_elementwise import add_float_form, mul_float_gate, mul_float_step
from glowmlir.lowering.vector_layout import channel_is_one_row
from glowmlir.quantization.rescaling import centred_rows, weight_zero_point
from glowmlir.transforms.flash_budget import PackingCost, choose_packed, constants_budget, int8_constants
from glowmlir.transforms.int8_kernel_selection import (
    SelectInt8Elementwise,
    accumulator_bias,
    int8_buffers,
    int8_layer,
    mark_channel_float_steps,
    mark_float_step,
    mark_narrow_requantization,
)
from glowmlir.transforms.select_kernels import erase_if_unused, insert_weight


def select_vnni(op: glowll.ConvolutionOp | glowll.FullyConnectedOp, rewriter: PatternRewriter,
                byte_permutes: bool = False, fused_multiply_add: bool | None = None) -> None:
    """Packs the op's constant filter, seen as OIHW (a FullyConnected's [O, C] as [O, C, 1,
    1]; a convolution keeps the shape as `filter_shape`), and folds its bias for the VNNI
    kernel, if both are constants and the bias is in accumulator units; `byte_permutes` (a
    VBMI target) marks the kernel's `vnni_layout.BYTE_PERMUTES`. With `fused_multiply_add`
    given (the per-layer kernel's selection, not the size-first kernel's, whose numbers are
    data), a per-tensor convolution takes
    a float output step where one is proved (`mark_float_step`, fused on a target with
    `fused_multiply_add`): a conversion, a `vfmadd` and a conversion back a vector, not the
    integer step's 64-bit products of even and odd lanes."""
    weight, bias = op.operands[2].owner, accumulator_bias(op)
    if not isinstance(weight, glowll.WeightOp) or weight.value is None or bias is None:
        return
    convolution = isinstance(op, glowll.ConvolutionOp)
    filter_shape = glow.shape_of(op.filter) if convolution else (*glow.shape_of(op.weights), 1, 1)
    filter_type: UniformQuantizedType = op.operands[2].type.element_type
    levels = array_from_dense(weight.value).reshape(filter_shape)
    folded = vnni_layout.folded_bias(array_from_dense(bias.value), levels, op.input.type.element_type.offset,
                                     weight_zero_point(filter_type))
    centred = centred_rows(levels, filter_type)
    mark_narrow_requantization(op, centred)
    if convolution and fused_multiply_add is not None:
        mark_float_step(op, centred, fused_multiply_add)
        if pixel_tiles_only(op):
            mark_channel_float_steps(op, centred, fused_multiply_add, rewriter)
    dilations = op.dilations.get_values() if convolution else (1, 1)
    packed = vnni_layout.pack_filter(levels, dilations, convolution and vnni_layout.last_block_overlaps(filter_shape))
    op.operands[2] = insert_weight(f"{weight.name_.data}_vnni", packed, op, rewriter, filter_type)
    op.operands[3] = insert_weight(f"{bias.name_.data}_vnni", folded, op, rewriter,
                                   stored_as(op.bias.type.element_type, i32))
    op.properties["microkernel"] = MicrokernelAttr(
        vnni_layout.MICROKERNEL, {vnni_layout.BYTE_PERMUTES: UnitAttr()} if byte_permutes else None)
    if convolution:
        op.properties["filter_shape"] = glow.ints(filter_shape)
    erase_if_unused(weight, rewriter)
    erase_if_unused(bias, rewriter)
    rewriter.notify_op_modified(op)


def pixel_tiles_only(op: glowll.ConvolutionOp) -> bool:
    """Whether x86-vnni's every output row of the convolution is in tiles of 16 pixels in the
    lanes (`vnni_kernels.pixels_in_lanes`: an unpadded 1x1 of stride 1 over 16 pixels or more,
    one row a channel, or rows of 16 outputs or more), with no fused pool: the rows whose
    outputs a per-channel float step table requantizes (a channel a vector)."""
    if op.pool is not None:
        return False
    height, width = glow.convolution_shape(op)[2:]
    return (height * width if one_row_per_channel(op) else width) >= vnni_layout.LANES


def one_row_per_channel(op: glowll.ConvolutionOp) -> bool:
    """An unpooled, unpadded 1x1 of stride 1, each channel's pixels one row
    (`vector_layout.channel_is_one_row`): the host vector unit's vector-pointwise-int8 takes
    every such layer."""
    return channel_is_one_row(glow.shape_of(op.filter), op.strides.get_values(), op.pads.get_values(),
                              op.pool is not None)


def takes_vnni(op: glowll.ConvolutionOp | glowll.FullyConnectedOp,
               shallow_channels: int = vnni_layout.SHALLOW_POINTWISE_CHANNELS) -> bool:
    """Whether x86-vnni takes the layer (see the module docstring; `shallow_pointwise`'s
    `shallow_channels`)."""
    if op.microkernel is not None or not is_quantized_instruction(op):
        return False
    if isinstance(op, glowll.FullyConnectedOp):
        return int8_buffers(op.dest, op.input, op.weights)
    return (not glow.is_nhwc(op) and op.group.value.data == 1 and op.residual is None and int8_layer(op)
            and not shallow_pointwise(op, shallow_channels)
            and vnni_layout.packed_input_bytes(glow.shape_of(op.input), op.pads.get_values())
            <= vnni_layout.LARGEST_PACKED_INPUT)


def shallow_pointwise(op: glowll.ConvolutionOp, shallow_channels: int) -> bool:
    """An unpadded 1x1 convolution of stride 1 of at most `shallow_channels` input channels
    (`vnni_layout.shallow_pointwise_channels` of the target's CPU) over more than one pixel:
    the host vector unit's vector-pointwise-int8 is faster there."""
    _, channels, height, width = glow.shape_of(op.input)
    return channels <= shallow_channels and height * width > 1 and one_row_per_channel(op)


def vnni_packing_cost(op: glowll.ConvolutionOp | glowll.FullyConnectedOp) -> PackingCost:
    """The bytes x86-vnni's packed filter takes (output channels to whole blocks of 16, input
    channels to groups of 4; the folded bias is the bias's size) over what the layer takes
    without it: an unpooled, unpadded 1x1 of stride 1 (`one_row_per_channel`) its filter in
    vector-pointwise-int8's int16 words (`vnni_layout.
    VECTOR_UNIT_LEVEL_BYTES` a level, so the packed filter mostly takes fewer), any other
    layer its int8 filter (LeNet's pooled 5x5s keep the generic kernel); and its
    multiply-accumulates as the cycles it saves (one per MAC: the VNNI kernels' lead over the
    AVX2 ones is much alike per MAC)."""
    convolution = isinstance(op, glowll.ConvolutionOp)
    filter_shape = glow.shape_of(op.filter) if convolution else (*glow.shape_of(op.weights), 1, 1)
    packed = vnni_layout.packed_filter_shape(filter_shape, op.dilations.get_values() if convolution else (1, 1))
    words = convolution and one_row_per_channel(op)
    unpacked = op.operands[2].owner.byte_size * (vnni_layout.VECTOR_UNIT_LEVEL_BYTES if words else 1)
    extra = align(int(np.prod(packed))) - align(unpacked)
    pixels = int(np.prod(glow.convolution_shape(op)[2:])) if convolution else glow.shape_of(op.input)[0]
    return PackingCost(op, extra, pixels * int(np.prod(filter_shape)))


def packed_within_budget(module: ModuleOp, budget: int | None, shallow_channels: int) -> set[int] | None:
    """The layers (`id`s) whose VNNI filters fit the constants' `budget` (None: every one),
    most MACs per extra byte first (`flash_budget.choose_packed`); the others keep their int8
    filters and the next kernels (AVX2's on such a host)."""
    if budget is None:
        return None
    costs = []
    for layer in module.walk():
        if isinstance(layer, glowll.ConvolutionOp | glowll.FullyConnectedOp) and takes_vnni(layer, shallow_channels):
            costs.append(vnni_packing_cost(layer))
    return choose_packed(costs, int8_constants(module), budget)


@dataclass
class PackConvolution(RewritePattern):
    packed: set[int] | None = None
    """The layers (`id`s) the constants' budget lets take packed filters (None: every one)."""
    byte_permutes: bool = False
    """As `select_vnni`'s."""
    shallow_channels: int = vnni_layout.SHALLOW_POINTWISE_CHANNELS
    """As `shallow_pointwise`'s."""
    fused_multiply_add: bool = False
    """As `select_vnni`'s."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.ConvolutionOp, rewriter: PatternRewriter) -> None:
        if takes_vnni(op, self.shallow_channels) and (self.packed is None or id(op) in self.packed):
            select_vnni(op, rewriter, self.byte_permutes, self.fused_multiply_add)


@dataclass
class PackFullyConnected(RewritePattern):
    packed: set[int] | None = None
    """As `PackConvolution.packed`."""
    byte_permutes: bool = False
    """As `select_vnni`'s."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.FullyConnectedOp, rewriter: PatternRewriter) -> None:
        if takes_vnni(op) and (self.packed is None or id(op) in self.packed):
            select_vnni(op, rewriter, self.byte_permutes)


def centred_depthwise_filter(op: glowll.ConvolutionOp) -> np.ndarray | None:
    """The filter levels less their zero point of an int8 depthwise convolution that
    x86-vnni-depthwise takes (see the module docstring), else None."""
    weight, channels, shape = op.filter.owner, glow.shape_of(op.input)[1], glow.shape_of(op.filter)
    if (op.microkernel is not None or not is_quantized_instruction(op) or glow.is_nhwc(op)
            or op.group.value.data != channels or shape[:2] != (channels, 1) or op.pool is not None
            or op.residual is not None or not int8_buffers(op.dest, op.input, op.filter)
            or not isinstance(weight, glowll.WeightOp) or weight.value is None or accumulator_bias(op) is None
            or not vnni_layout.DepthwiseGeometry.of(op).takes()):
        return None
    centred = array_from_dense(weight.value).reshape(shape).astype(np.int64)
    centred -= weight_zero_point(op.filter.type.element_type)
    return centred if vnni_layout.depthwise_levels_fit(centred) else None


@dataclass
class PackDepthwise(RewritePattern):
    """An int8 depthwise convolution onto x86-vnni-depthwise (`centred_depthwise_filter`): its
    filter stays as it is (the kernel makes a channel's words from its levels; where some
    leave int8 less their zero point, `vnni_layout.REST_LEVELS`, its rest words too), its bias
    becomes the unsigned input's (`vnni_layout.folded_bias`, of the same bytes); no packing
    costs bytes, so no constants' budget stops it. Where the plane's output rows fall into
    classes by their kernel rows in the padding (`DepthwiseGeometry.start_classes`), the bias
    holds a row a class ([classes, C], `vnni_layout.padded_start_biases`): those rows'
    products with the zero point's bytes made at compile time, not by the kernel once a
    channel."""

    fused_multiply_add: bool = False
    """The target has FMA: the output step's fused float form first (`mark_float_step`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.ConvolutionOp, rewriter: PatternRewriter) -> None:
        centred = centred_depthwise_filter(op)
        if centred is None:
            return
        bias, channels = accumulator_bias(op), glow.shape_of(op.input)[1]
        channel_taps = centred.reshape(channels, -1)
        mark_narrow_requantization(op, channel_taps)
        mark_float_step(op, channel_taps, self.fused_multiply_add)
        mark_channel_float_steps(op, channel_taps, self.fused_multiply_add, rewriter)
        input_offset = op.input.type.element_type.offset
        folded = vnni_layout.folded_bias(array_from_dense(bias.value), centred, input_offset, 0)
        classes = vnni_layout.DepthwiseGeometry.of(op).start_classes()
        if classes:
            folded = vnni_layout.padded_start_biases(folded, centred, input_offset, classes)
        op.operands[3] = insert_weight(f"{bias.name_.data}_vnni", folded, op, rewriter,
                                       stored_as(op.bias.type.element_type, i32))
        parameters = {vnni_layout.REST_LEVELS: UnitAttr()} if vnni_layout.has_rest_levels(centred) else {}
        if classes:
            parameters[glowll.BIAS_ROWS] = IntegerAttr(len(classes), i64)
        op.properties["microkernel"] = MicrokernelAttr(vnni_layout.DEPTHWISE_MICROKERNEL, parameters or None)
        erase_if_unused(bias, rewriter)
        rewriter.notify_op_modified(op)


def has_float_form(op: glowll.ElementwiseOp, fused_multiply_add: bool) -> bool:
    """Whether an int8 Mul, Add or Sub has a proved float form (`vector_elementwise`'s
    `mul_float_gate` with fused multiply-adds, `mul_float_step`, `add_float_form`), which
    `glowll-select-vector-columns` marks on vector-elementwise-int8."""
    kind = op.kind.data
    if kind == "mul":
        return ((fused_multiply_add and mul_float_gate(op) is not None)
                or mul_float_step(op, fused_multiply_add) is not None)
    return kind in ("add", "sub") and add_float_form(op, fused_multiply_add) is not None


class SelectElementwiseWithoutFloatForm(SelectInt8Elementwise):
    """`SelectInt8Elementwise` onto x86-avx512 for the ops without a proved float form
    (`has_float_form`): those are left to the host vector unit's vector-elementwise-int8,
    whose float forms (and AVX2's int16 gate products) run a squeeze-and-excitation Mul or a
    residual Add in about half the instructions of the exact integer steps."""

    def __init__(self, fused_multiply_add: bool):
        super().__init__(vnni_layout.ELEMENTWISE_MICROKERNEL, vnni_layout.ELEMENTWISE_KINDS)
        self.fused_multiply_add = fused_multiply_add

    def takes(self, op: glowll.ElementwiseOp) -> bool:
        return super().takes(op) and not has_float_form(op, self.fused_multiply_add)


class SelectLookupTable(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.IntLookupTableOp, rewriter: PatternRewriter) -> None:
        if op.microkernel is None and int8_buffers(op.dest, op.input, op.table):
            op.properties["microkernel"] = MicrokernelAttr(vnni_layout.LOOKUP_TABLE_MICROKERNEL)
            rewriter.notify_op_modified(op)


@dataclass(frozen=True)
class SelectVnniKernels(ModulePass):
    """Marks int8 convolutions (ungrouped, NCHW) and FullyConnected for the AVX-512 VNNI
    kernels, packing their filters and folding the unsigned input's correction into their
    biases; with `lookup_tables` (AVX-512 VBMI), int8 lookup tables for theirs, and the
    x86-vnni layers' `byte_permutes` (a table fused into them later is applied by
    `vpermi2b`); with
    `depthwise` (VBMI), depthwise convolutions of small planes for x86-vnni-depthwise; int8
    Add, Sub and Mul for x86-avx512 (with `float_forms`, only those without a proved float
    form, `has_float_form`, with `fused_multiply_add`'s fused forms: the others are left to
    vector-elementwise-int8, which takes the forms). Within a constants' budget (`constant_ratio` to the
    int8 constants, or `flash_size`, as `glowll-select-arm-dsp-kernels` takes them:
    `transforms.flash_budget.constants_budget`; 0: none), only the layers whose packed filters fit
    (`packed_within_budget`). A 1x1 of at most `shallow_channels` input channels over more
    than one pixel is left to the host vector unit (`shallow_pointwise`; glow-compile passes
    `vnni_layout.shallow_pointwise_channels` of the target's CPU)."""

    name = "glowll-select-x86-vnni-kernels"
    lookup_tables: bool = False
    depthwise: bool = False
    float_forms: bool = False
    fused_multiply_add: bool = False
    constant_ratio: float = 0.0
    flash_size: int = 0
    shallow_channels: int = vnni_layout.SHALLOW_POINTWISE_CHANNELS

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.constant_ratio < 0 or self.flash_size < 0:
            raise GlowError(f"{self.name}{{constant-ratio={self.constant_ratio} flash-size={self.flash_size}}}: "
                            "expected 0 (no budget) or a positive ratio or size")
        budget = constants_budget(int8_constants(op), self.constant_ratio, self.flash_size)
        packed = packed_within_budget(op, budget, self.shallow_channels)
        convolutions = PackConvolution(packed, self.lookup_tables, self.shallow_channels, self.fused_multiply_add)
        PatternRewriteWalker(convolutions, apply_recursively=False).rewrite_module(op)
        PatternRewriteWalker(PackFullyConnected(packed, self.lookup_tables), apply_recursively=False).rewrite_module(op)
        elementwise = (SelectElementwiseWithoutFloatForm(self.fused_multiply_add) if self.float_forms
                       else SelectInt8Elementwise(vnni_layout.ELEMENTWISE_MICROKERNEL, vnni_layout.ELEMENTWISE_KINDS))
        PatternRewriteWalker(elementwise, apply_recursively=False).rewrite_module(op)
        if self.depthwise:
            PatternRewriteWalker(PackDepthwise(self.fused_multiply_add), apply_recursively=False).rewrite_module(op)
        if self.lookup_tables:
            PatternRewriteWalker(SelectLookupTable(), apply_recursively=False).rewrite_module(op)
