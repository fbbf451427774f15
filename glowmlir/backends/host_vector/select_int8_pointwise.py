"""The selection of int8 1x1 convolutions for `vector-pointwise-int8` (a pattern of
`glowll-select-vector-columns`).

Where masked loads are single instructions (AVX, AVX-512: the x86 vector units, whose
`vpmaddwd` the kernel uses), an int8 NCHW ungrouped 1x1 convolution of stride 1, unpadded,
unpooled, without a residual and with a constant filter, that no instruction set's kernel
took (AVX-512 VNNI's `x86-vnni` runs first), gets `microkernel = "vector-pointwise-int8"`
(`backends.host_vector.int8_pointwise`): its filter the levels less their zero point packed
as int32 words of two input channels (`int8_pointwise.pair_words`) in blocks of
`pointwise_tile` output channels, `vector_tile = array<i64: lanes, accumulators>`
(the lanes that take the fewest vectors for the plane's pixels, `layout.row_lanes`; the
accumulators a tile keeps, `pointwise_tile`), and
`filter_shape` its OIHW shape. On NEON (`products = "neon"`) a layer whose levels keep the
int8 products exact (`takes_byte_products`) takes them instead: its filter the levels as they
are, a pair of bytes twice a word (`int8_byte_products.byte_pair_words`), on tiles of 8 pixels,
`{products = "neon-bytes"}`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import StringAttr, UnitAttr, i32
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from glowmlir.backends.host_vector.int8_byte_products import MOST_SUMMED_CHANNELS, byte_pair_words, byte_products_fit
from glowmlir.backends.host_vector.int8_columns import tap_pair_words
from glowmlir.backends.host_vector.int8_depthwise import NEON_BYTE_LANES, NEON_BYTES, PAIR_PRODUCTS, pair_lanes
from glowmlir.backends.host_vector.int8_im2col import IM2COL_TAPS, im2col_filter, takes_im2col
from glowmlir.backends.host_vector.int8_pointwise import pair_words
from glowmlir.dialects import glow, glowll
from glowmlir.dialects.glowll import MicrokernelAttr
from glowmlir.dialects.quant import is_quantized_instruction, stored_as
from glowmlir.dialects.weights import array_from_dense
from glowmlir.lowering import vector_layout as layout
from glowmlir.quantization.float_steps import FloatStep, fused_bias_offsets
from glowmlir.quantization.rescaling import KernelParameters, accumulator_bounds, activation_bounds, centred_rows
from glowmlir.transforms.int8_kernel_selection import (
    accumulator_bias,
    fold_input_offset,
    int8_buffers,
    mark_channel_float_steps,
    mark_float_step,
    mark_narrow_requantization,
)
from glowmlir.transforms.select_kernels import erase_if_unused, insert_weight


@dataclass
class PackInt8Pointwise(RewritePattern):
    tile: layout.VectorTile
    products: str = ""
    """The pair products' instructions where not `vpmaddwd` (`int8_depthwise.PAIR_PRODUCTS`):
    with them, a target without masked loads takes the kernel too (NEON: its edges' masked
    loads lane by lane)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.ConvolutionOp, rewriter: PatternRewriter) -> None:
        weight = op.filter.owner
        if (op.microkernel is not None or not (self.tile.masked_loads or self.products)
                or not is_quantized_instruction(op)
                or glow.is_nhwc(op) or op.group.value.data != 1 or op.residual is not None
                or not int8_buffers(op.dest, op.input, op.filter) or not isinstance(weight, glowll.WeightOp)
                or weight.value is None
                or not layout.channel_is_one_row(glow.shape_of(op.filter), op.strides.get_values(),
                                                 op.pads.get_values(), op.pool is not None)):
            return
        shape = glow.shape_of(op.filter)
        height, width = glow.shape_of(op.dest)[2:]
        lanes = layout.row_lanes(self.tile.lanes, height * width)
        if not takes_pair_lanes(self.products, lanes, height * width):
            return
        filter_type = op.filter.type.element_type
        levels = array_from_dense(weight.value).reshape(shape[:2])
        centred = centred_rows(levels, filter_type)
        mark_narrow_requantization(op, centred)
        mark_float_step(op, centred, self.tile.fused_multiply_add)
        mark_channel_float_steps(op, centred, self.tile.fused_multiply_add, rewriter)
        fold_input_offset(op, centred.sum(axis=1, dtype=np.int64), rewriter)
        if self.tile.fused_multiply_add:
            fuse_bias_into_step(op, centred, rewriter)
        if takes_byte_products(op, self.products, levels, height * width):
            lanes = NEON_BYTE_LANES[0]
            block, accumulators = pointwise_tile(shape[0], shape[1], -(-height * width // lanes),
                                                 byte_tile_accumulators(op, shape[1], self.tile.accumulators))
            repack(op, byte_pair_words(levels, block), "bytes", stored_as(filter_type, i32),
                   layout.INT8_POINTWISE, (lanes, accumulators), rewriter, NEON_BYTES)
            return
        block, accumulators = pointwise_tile(shape[0], shape[1], -(-height * width // lanes), self.tile.accumulators)
        repack(op, pair_words(doubled_if_narrow(op, centred), block), "pairs",
               stored_as(filter_type, i32, centred=True), layout.INT8_POINTWISE, (lanes, accumulators), rewriter,
               self.products)


def takes_byte_products(op: glowll.ConvolutionOp, products: str, levels: np.ndarray, pixels: int) -> bool:
    """Whether a 1x1 (or a convolution of few taps over its im2col bytes, `levels` [O, taps])
    that takes NEON's int16 pair products ("neon") takes its int8 ones
    (`int8_byte_products`) instead: its input zero point folded into the bias, its filter's
    levels as they are exact in the int16 lanes (`byte_products_fit`), per-channel weights
    symmetric or at most `MOST_SUMMED_CHANNELS` input channels (the column sums that take the
    weights' zero point), and a plane of at least one vector of 8 pixels."""
    filter_type = op.filter.type.element_type
    offset = 0 if filter_type.per_channel else filter_type.offset
    return (products == "neon" and op.folded_input_offset is not None and pixels >= NEON_BYTE_LANES[0]
            and (offset == 0 or levels.shape[1] <= MOST_SUMMED_CHANNELS)
            and not (filter_type.per_channel and any(filter_type.offset_array()))
            and byte_products_fit(levels))


BYTE_STEP_ACCUMULATORS = 4
"""The accumulators (vectors of 8 pixels' int32 sums) of a NEON int8-products 1x1 tile whose
output step is a float one, on few input channels (`byte_tile_accumulators`)."""
MOST_FEW_BYTE_PAIRS = 8
"""The most pairs of input channels such a tile takes."""


def byte_tile_accumulators(op: glowll.ConvolutionOp, in_channels: int, accumulators: int,
                           most_pairs: int = MOST_FEW_BYTE_PAIRS) -> int:
    """The accumulators a NEON 1x1 on int8 products keeps: `BYTE_STEP_ACCUMULATORS` where its
    output step is a float one (`float_step`, `float_step_table`) and it has at most `most_pairs` pairs of input
    channels, else the target's. A tile of 8 output channels on few input channels holds
    every channel's filter pairs (a vector each, hoisted out of the pixel loop) beside 16
    int32 sums, more than NEON's 32 registers: they spill and are reloaded every 8 pixels.
    On PaddleOCR's cls model (`bench/bench_lookup_table_folding.py --board aarch64 --layers`,
    instructions) the 1x1s of 8 and 16 input channels took 2-8% fewer with 4 channels a tile
    (conv2_expand 8 -> 8 81,632 -> 78,255, conv6_expand 16 -> 88 184,973 -> 172,597), but
    those of 24 or more took 4-7% more (conv6_linear 88 -> 16 109,854 -> 116,714, conv11_expand
    32 -> 200 with its HardSwish table 380,953 -> 405,590), though on the random layers of
    `bench/bench_host_int8_layers.py` some of them gained (88 -> 16, 32 -> 200). A stem over
    its im2col bytes (`int8_im2col.RowBytes`, at most `IM2COL_TAPS` taps) takes them whatever
    its taps (3 -> 8 3x3 s2 on 48x192: 257,912 -> 212,712; float 271,684)."""
    if (op.float_step is not None or op.float_step_table is not None) and -(-in_channels // 2) <= most_pairs:
        return min(BYTE_STEP_ACCUMULATORS, accumulators)
    return accumulators


def takes_pair_lanes(products: str, lanes: int, row: int) -> bool:
    """Whether a row of `row` outputs on vectors of `lanes` takes the pair products `products`:
    lanes they have, and on NEON a row of at least one vector (a squeeze-excitation 1x1 on one
    pixel is the generic kernel's there: 0.6 of float's instructions, not 2)."""
    return lanes in pair_lanes(products) and not (products and row < lanes)


def fuse_bias_into_step(op: glowll.ConvolutionOp, centred: np.ndarray, rewriter: PatternRewriter) -> None:
    """A layer with a `float_step` whose bias and output offset one single per channel can
    take (`float_steps.fused_bias_offsets`, proved on every accumulator the layer reaches):
    its bias replaced by those singles (their bits as int32, `bias_in_step`), so that the
    kernel's sums start at 0 and its output step is rint(fma(f32(sum), scale, c)): per
    vector of 8 outputs one `vfmadd` instead of the bias's `vpaddd`, a `vmulps` and a
    `vaddps`."""
    bias = accumulator_bias(op)
    if op.float_step is None or bias is None:
        return
    step, numbers = FloatStep.of(op.float_step), KernelParameters.of(op)
    biases = array_from_dense(bias.value).astype(np.int64)
    original = biases + op.input.type.element_type.offset * centred.sum(axis=1, dtype=np.int64) \
        if op.folded_input_offset is not None else biases
    bounds = accumulator_bounds(op.input.type.element_type, centred, original)
    clamp = activation_bounds(op, op.dest.type.element_type)
    offsets = fused_bias_offsets(step, numbers.multiplier, numbers.shift, numbers.output_offset, biases, bounds, clamp)
    if offsets is None:
        return
    op.operands[3] = insert_weight(bias.name_.data + "_step", offsets.view(np.int32), op, rewriter,
                                   op.bias.type.element_type)
    op.properties["bias_in_step"] = UnitAttr()
    erase_if_unused(bias, rewriter)


def doubled_if_narrow(op: glowll.ConvolutionOp, centred: np.ndarray) -> np.ndarray:
    """The centred levels to pack: doubled where the requantization is narrow (|w| <= 510
    fits the int16 halves), the layer marked `doubled_accumulators` (the kernel doubles the
    bias): every sum is then twice the accumulator, which the output step multiplies as it
    is (`requantize_narrow_in_halves(doubled=True)`: one shift a vector fewer)."""
    if op.narrow_requantization is None:
        return centred
    op.properties["doubled_accumulators"] = UnitAttr()
    return 2 * centred


TWO_VECTOR_PAIRS = 16
"""The fewest pairs of input channels for which a `vector-pointwise-int8` tile is two vectors
of pixels x half the channels (`pointwise_tile`)."""


def pointwise_tile(out_channels: int, in_channels: int, vectors: int, accumulators: int) -> tuple[int, int]:
    """The output channels a `vector-pointwise-int8` tile computes and the accumulators it
    keeps (`vector_tile`'s; its vectors of pixels `layout.tile_vectors` of both), for a plane
    of `vectors` vectors of pixels: the most channels that divide the layer's and fit the
    accumulators, on one vector of pixels (24 channels: 12), so that each pair of input
    vectors, loaded once, serves as many channels as it can; but where the layer has at least
    `TWO_VECTOR_PAIRS` pairs of input channels (its products outweigh its output step) and the
    plane two vectors, on two vectors of pixels, the most that divide the layer's and fit half
    the accumulators (32 -> 200: 2 x 5, not 1 x 10; 200 -> 32: 2 x 4, not 1 x 8), so that each
    filter word, broadcast once into a register, serves two products: on Zen 3 (AVX2),
    32 -> 200 on 2x96 22.2 µs, not 23.9 (float 27.0), 200 -> 32 23.5, not 25.9 (float 31.3),
    88 -> 16 12.1, not 13.0 (float 11.7); 3 x 4 tiles spill, and layers of fewer pairs
    (8 -> 24, 16 -> 88, 24 -> 8) gain nothing or lose."""
    def most_channels(most: int) -> int:
        return max(size for size in range(1, most + 1) if out_channels % size == 0)

    if -(-in_channels // 2) >= TWO_VECTOR_PAIRS and vectors >= 2:
        block = most_channels(accumulators // 2)
        return block, 2 * block
    return most_channels(accumulators), accumulators


@dataclass
class PackInt8Columns(RewritePattern):
    """An int8 NCHW ungrouped convolution that is no 1x1 of `PackInt8Pointwise` (stride 1 or 2
    along its rows, unpooled, no residual, a constant filter), where masked loads are single
    instructions: `microkernel = "vector-columns-int8"` (`backends.host_vector.int8_columns`),
    its filter packed as the float column kernel's (`layout.pack_filter`, blocks of
    `layout.row_block` output channels) as int32 words of two kernel columns' levels less
    their zero point (`int8_columns.tap_pair_words`); one of few taps (`int8_im2col.takes_im2col`:
    a stem) `microkernel = "vector-im2col-int8"`, its filter `int8_pointwise.pair_words` of its
    taps in `int8_im2col.im2col_taps`' order, in blocks of `pointwise_tile` output channels."""

    tile: layout.VectorTile
    products: str = ""
    """As `PackInt8Pointwise.products`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.ConvolutionOp, rewriter: PatternRewriter) -> None:
        weight = op.filter.owner
        if (op.microkernel is not None or not (self.tile.masked_loads or self.products)
                or not is_quantized_instruction(op)
                or glow.is_nhwc(op) or op.group.value.data != 1 or op.residual is not None or op.pool is not None
                or not int8_buffers(op.dest, op.input, op.filter) or not isinstance(weight, glowll.WeightOp)
                or weight.value is None or not layout.takes_columns(op.strides.get_values(), 2)):
            return
        shape = glow.shape_of(op.filter)
        width = glow.shape_of(op.dest)[3]
        lanes = layout.row_lanes(self.tile.lanes, width)
        if not takes_pair_lanes(self.products, lanes, width):
            return
        filter_type = op.filter.type.element_type
        centred = centred_rows(array_from_dense(weight.value), filter_type)
        mark_narrow_requantization(op, centred)
        mark_float_step(op, centred, self.tile.fused_multiply_add)
        mark_channel_float_steps(op, centred, self.tile.fused_multiply_add, rewriter)
        if takes_im2col(shape, op.group.value.data):
            taps = im2col_filter(centred.reshape(shape))
            fold_input_offset(op, taps.sum(axis=1, dtype=np.int64), rewriter)
            levels = im2col_filter(array_from_dense(weight.value).reshape(shape))
            if takes_byte_products(op, self.products, levels, width):  # NEON: a row's im2col bytes
                lanes = NEON_BYTE_LANES[0]
                block, accumulators = pointwise_tile(shape[0], levels.shape[1], -(-width // lanes),
                                                     byte_tile_accumulators(op, levels.shape[1],
                                                                            self.tile.accumulators,
                                                                            -(-IM2COL_TAPS // 2)))
                repack(op, byte_pair_words(levels, block), "im2col_bytes", stored_as(filter_type, i32),
                       layout.INT8_IM2COL, (lanes, accumulators), rewriter, NEON_BYTES)
                return
            block, accumulators = pointwise_tile(shape[0], taps.shape[1], -(-width // lanes), self.tile.accumulators)
            repack(op, pair_words(doubled_if_narrow(op, taps), block), "im2col",
                   stored_as(filter_type, i32, centred=True), layout.INT8_IM2COL, (lanes, accumulators), rewriter,
                   self.products)
            return
        block = layout.row_block(shape[0], 1, width, lanes, self.tile.accumulators)
        repack(op, tap_pair_words(centred.reshape(shape), block), "columns", stored_as(filter_type, i32, centred=True),
               layout.INT8_COLUMNS, (lanes, self.tile.accumulators), rewriter, self.products)


def repack(op: glowll.ConvolutionOp, packed: np.ndarray, suffix: str, element, microkernel: str,
           vector_tile: tuple[int, int], rewriter: PatternRewriter, products: str = "") -> None:
    """`op` reading `packed` (a new weight `<filter>_<suffix>` of `element`) with `microkernel`
    on `vector_tile` (lanes, accumulators), its pair products `products` (`mark_pair_products`);
    its filter's shape kept in `filter_shape`."""
    weight = op.filter.owner
    shape = glow.shape_of(op.filter)
    op.operands[2] = insert_weight(f"{weight.name_.data}_{suffix}", packed, op, rewriter, element)
    op.properties["microkernel"] = MicrokernelAttr(microkernel)
    mark_pair_products(op, products)
    op.properties["filter_shape"] = glow.ints(shape)
    op.properties["vector_tile"] = glow.ints(vector_tile)
    erase_if_unused(weight, rewriter)
    rewriter.notify_op_modified(op)


def mark_pair_products(op: glowll.ConvolutionOp, products: str) -> None:
    """`op`'s int8 microkernel with its pair products' instructions (`int8_depthwise.PAIR_PRODUCTS`)
    where they are not `vpmaddwd` (`products` not "")."""
    if products:
        op.properties["microkernel"] = MicrokernelAttr(op.microkernel.data, {PAIR_PRODUCTS: StringAttr(products)})
