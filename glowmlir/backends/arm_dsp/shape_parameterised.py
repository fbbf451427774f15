"""The size-first shape-parameterised kernels' forms on the Arm DSP extension.

The size-first backend's int8 kernels whose shapes are data (`backends.size_first.kernels`,
`glowll-shape-parameterised-kernels`) have a form here each, which that pass gives the
layers with `dsp` (`Backend.shape_parameterised` names this module):

* the matrix product `shape-parameterised-dsp`, for pointwise convolutions only (a
  FullyConnected keeps the DSP kernel of its own): `matrix_product` gathers two pixels'
  input channels as int16 pairs and multiplies them by int16 weight pairs laid out at
  compile time (`pack_matrix_product`), two pixels x two output channels a step, with `SMLAD`s;
* the depthwise convolution `shape-parameterised-depthwise-dsp` (the skeleton
  `lowering.shape_parameterised_depthwise`): a window row as words of four input bytes from
  its first column (`window_row`), each split into the pairs (0, 2) and (1, 3) by `SXTB16`,
  times the weight words (`pack_depthwise`) by `SMLAD`.

The pass admits a layer by `matrix_product_form` and packs its weights by `pack_*`.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import i32
from xdsl.ir import SSAValue

from glowmlir.backends.arm_dsp import instructions as arm_dsp
from glowmlir.backends.arm_dsp import row_kernels
from glowmlir.backends.arm_dsp.layout import PairTiling, pair_tiling, tiling_weight_words
from glowmlir.dialects import glowll
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import ArithmeticDomain, Row, ViewOf, overlapping_tiles
from glowmlir.lowering.shape_parameterised_depthwise import WindowRowTaps, depthwise_convolution
from glowmlir.lowering.shape_records import MatrixShape, read_table_by_record, runtime_views

__all__ = ["emit_convolution"]

MATRIX_PRODUCT = "shape-parameterised-dsp"
"""The matrix product's form for the DSP extension (a pointwise convolution's: pixels x
output channels a step on int16 pairs)."""
DEPTHWISE = "shape-parameterised-depthwise-dsp"
"""The depthwise convolution's form (a word of four input bytes a step along a window row, `SMLAD`s)."""
DSP_PIXELS = 2
"""Adjacent pixels the matrix product computes together (a layer needs at least this many)."""
DSP_BLOCK = 2
"""Output channels the matrix product computes together (a layer needs at least this many)."""
DSP_GATHER_BYTES = 4096
"""The matrix product gathers the input channels of `DSP_PIXELS` pixels as int16 pairs
into this many bytes of stack: a layer has at most `DSP_MAX_CHANNELS` input channels."""
DSP_MAX_CHANNELS = DSP_GATHER_BYTES // (2 * DSP_PIXELS)


def matrix_product_form(op: glowll.ConvolutionOp | glowll.FullyConnectedOp, shape: MatrixShape) -> tuple | None:
    """() if the matrix product takes the layer (one the portable form takes): a pointwise
    convolution of an even count of input channels up to `DSP_MAX_CHANNELS`, `DSP_BLOCK`
    output channels and `DSP_PIXELS` pixels at least (a FullyConnected keeps the DSP kernel of
    its own, which reads its int8 weights as they are: its weights are most of a net's, read
    once each); None if not."""
    if (isinstance(op, glowll.FullyConnectedOp) or shape.input_channels % 2 or shape.input_channels > DSP_MAX_CHANNELS
            or shape.output_channels < DSP_BLOCK or shape.pixels < DSP_PIXELS):
        return None
    return ()


def dsp_blocks(out_channels: int) -> int:
    """Blocks of `DSP_BLOCK` output channels of the matrix product: block k holds channels
    min(k * DSP_BLOCK, out_channels - DSP_BLOCK) on, so the last overlaps the one before
    when the block does not divide the channels (those are computed twice, the same numbers)."""
    return -(-out_channels // DSP_BLOCK)


def pack_matrix_product(centred: np.ndarray) -> np.ndarray:
    """An [O, C] int8 filter less its zero point (C even) as the int16 weight pairs the
    matrix product reads: [blocks, C / 2, DSP_BLOCK, 2], for each block and input channel
    pair (2i, 2i + 1) the pairs of its `DSP_BLOCK` channels side by side (`dsp_blocks`)."""
    out_channels, channels = centred.shape
    firsts = [min(k * DSP_BLOCK, out_channels - DSP_BLOCK) for k in range(dsp_blocks(out_channels))]
    rows = np.stack([centred[first:first + DSP_BLOCK] for first in firsts])  # [blocks, DSP_BLOCK, C]
    return rows.reshape(len(firsts), DSP_BLOCK, channels // 2, 2).transpose(0, 2, 1, 3).astype(np.int16).copy()


def window_row(kernel_width: int) -> PairTiling:
    """How the depthwise form reads a window row of `kernel_width` taps: words of four input
    bytes from the window's first column (two bytes apart), each as the pairs (0, 2) and
    (1, 3), multiplied by weight words (`layout.pair_tiling` of one output)."""
    return pair_tiling(kernel_width, 1, 1, pixels=1)


def pack_depthwise(centred: np.ndarray) -> np.ndarray:
    """A [C, 1, KH, KW] depthwise filter less its zero point as the int16 weight words of
    `window_row`, [C, KH, words, 2] (a half with no tap: 0)."""
    tiling = window_row(centred.shape[3])
    return tiling_weight_words(centred[:, 0], [tiling], [0], len(tiling.weight_words))


def matrix_product(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view: ViewOf) -> None:
    """The matrix product, for a pointwise convolution (pixels adjacent, `DSP_PIXELS` of
    them at least; an even count of input channels), register-blocked as the per-layer
    `gathered_product.gathered_product`: per run of `DSP_PIXELS` adjacent pixels (the last run ends at
    the last pixel, overlapping the one before when the count is odd), their input channels
    are gathered once onto the stack as int16 pairs (channels 2i, 2i + 1; less the input
    offset unless the bias holds it), a word per pixel side by side; then each block of
    `DSP_BLOCK` output channels (`dsp_blocks`, the last overlapping) sums them
    in 2 x `DSP_BLOCK` accumulators, per channel pair one `LDRD` of the pixels' pairs, two of
    the block's weight pairs (`pack_matrix_product`) and eight `SMLAD`s."""
    shape, src, dest = runtime_views(b, op, view)
    read_table_by_record(domain, shape.output_channels)
    bias = view(op.bias)
    pairs = b.div(shape.input_channels, 2)
    x_offset = None if op.folded_input_offset is not None else arm_dsp.offset_pair(b, domain.input_offset)
    packed = view(op.operands[2])  # [blocks, pairs, DSP_BLOCK, 2] int16: a word per weight pair
    weights = View(packed.base, (0, 0, DSP_BLOCK), (b.mul(pairs, DSP_BLOCK), DSP_BLOCK, 1), 0, i32)
    gathered = View.contiguous(b.alloca(DSP_GATHER_BYTES // 4, i32, arm_dsp.STACK_ALIGNMENT),
                               (DSP_MAX_CHANNELS // 2, DSP_PIXELS), element_type=i32)
    with overlapping_tiles(b, shape.pixels, DSP_PIXELS) as (first_pixel, _):
        with b.loop(0, pairs) as i:
            channel = b.mul(i.index, 2)
            words = arm_dsp.pixel_channel_pairs(b, src, [channel, first_pixel], [b.add(channel, 1), first_pixel],
                                                DSP_PIXELS, x_offset)
            for q, word in enumerate(words):
                b.store(word, gathered, [i.index, q])
        with overlapping_tiles(b, shape.output_channels, DSP_BLOCK) as (first, block):
            channels = [b.add(first, j) for j in range(DSP_BLOCK)]
            starts = [domain.bias(bias, o) for o in channels]

            def pair_products(totals: list[SSAValue], i: Index) -> list[SSAValue]:
                """`totals` ([pixel][channel]) plus the products of input channel pair i."""
                inputs = arm_dsp.load_words(b, gathered, [i, 0], DSP_PIXELS)
                weight_words = arm_dsp.load_words(b, weights, [block, i, 0], DSP_BLOCK)
                totals = list(totals)
                for q, word in enumerate(inputs):
                    for j, weight in enumerate(weight_words):
                        totals[q * DSP_BLOCK + j] = arm_dsp.smlad(b, word, weight, totals[q * DSP_BLOCK + j])
                return totals

            with b.loop(0, pairs, carried=starts * DSP_PIXELS) as i:
                i.next(*pair_products(i.carried, i.index))
            outputs = [Row(dest, (o,)) for o in channels]
            row_kernels.store_tile(b, domain, channels, outputs, i.results,
                                   [b.add(first_pixel, q) for q in range(DSP_PIXELS)])


def window_row_taps(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, weights: View,
                    levels: View) -> WindowRowTaps:
    """The depthwise form's window rows (`shape_parameterised_depthwise.TapsOf`): per output,
    the row's words of input pairs (`row_kernels.tile_pairs`, less the input offset unless the
    bias holds it) times the weight words [C, KH, words, 2] (`pack_depthwise`) by `SMLAD`."""
    tiling = window_row(op.filter_shape.get_values()[3])
    x_offset = None if op.folded_input_offset is not None else arm_dsp.offset_pair(b, domain.input_offset)

    def taps(totals: list[SSAValue], c: Index, ky: int, y: Index, lefts: list[Index]) -> list[SSAValue]:
        words = arm_dsp.load_words(b, weights, [c, ky, 0, 0], len(tiling.weight_words))
        totals = list(totals)
        for p, left in enumerate(lefts):
            pairs = row_kernels.tile_pairs(b, Row(levels, (y,)), left, tiling, x_offset)
            totals[p], = row_kernels.tile_products(b, tiling, pairs, 1, [totals[p]], lambda j: words)
        return totals

    return taps


def emit_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view: ViewOf) -> None:
    if op.microkernel.data == DEPTHWISE:
        depthwise_convolution(b, domain, op, view, window_row_taps)
    else:
        matrix_product(b, domain, op, view)
