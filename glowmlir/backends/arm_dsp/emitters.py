"""The "arm-dsp" microkernel's emitters: int8 kernels on the Arm DSP extension (Armv7E-M, Armv8-M
Mainline: Cortex-M4, M7, M33, M55), one module per kernel family.

The extension's `SMLAD acc, a, b` adds two 16x16-bit products to an accumulator in one
instruction: `acc + a.lo * b.lo + a.hi * b.hi`. `SXTB16 a` sign-extends bytes 0 and 2 of a
word into the two halves, `SXTB16 a, ror #8` bytes 1 and 3, `SADD16` adds two halves at once.
The kernels reach them (`instructions`) through LLVM's `llvm.arm.*` intrinsics; LLVM itself selects
`PKHBT`/`PKHTB` and `LDRD` from plain IR (an `LDRD` only from a run of two consecutive
words, `SLOT_WORDS`), and `SMMULR` for a narrow requantization whose multiplier it cannot
see as a constant (`quantized_kernels.ChannelRequantization`). The data layouts (the pair
tilings, the packed filters) are `backends.arm_dsp.layout`'s, shared with the pass that
packs them.

* `row_kernels.convolution_rows`: a filter row at least two taps wide. A tile of `TILE_PIXELS` outputs
  of a row and a block of output channels keeps its accumulators in registers over the
  input channels and kernel rows; per kernel row it loads the input words of its row plan's
  tiling and multiplies their pairs with the packed weight words. Tiles at the edges have
  tilings of their own; outputs left over are computed tap by tap.
* `row_kernels.pointwise_rows`: an unpadded, ungrouped 1x1 convolution, on pairs of input channels;
  of stride 1, unpooled or with a global pool, `gathered_product`: each run of pixels'
  channels gathered once as pairs, then multiplied by every block of output channels,
  two pixels x two channels at a time.
* `gathered_product` with `window_gathering.gather_windows`: an ungrouped convolution of few taps a window
  (`arm_dsp_layout.WINDOW_PAIRS`), unpooled or with a pool whose windows tile its output
  (`TiledPool`: a pool window's pixels gathered together and pooled in registers), each
  pixel's window gathered once as pairs of taps (the padding as the input zero point), then
  multiplied as gathered channels are.
* A speed-first build's gathered product of more pairs than `UNROLLED_PAIRS` (`blocked_pixels`):
  each run of four pixels by a block of two output channels in one loop over the pairs, eight
  accumulators (`gathered_product.BLOCKED_PIXELS`).
* A gathered product's filter (and a strided pointwise row kernel's) may be int8 words
  instead (`layout.int8_filter_words`, 1x the int8 weights, where the flash budget leaves
  no room for int16 pairs): each word widened into two output channels' weight pairs by
  `SXTB16` and `SXTB16 ror #8` (`instructions.weight_pairs`).
* `depthwise.depthwise_convolution`: one input channel per group, on copies of the input planes
  padded with the input zero point (of int8 data along undilated rows, widened to int16:
  `widen_row`, `halfword_products`; a small widened plane's rows unrolled whole at -O3,
  `UNROLLED_PLANE_OUTPUTS`).
* `fully_connected.emit_fully_connected`: int8 weight rows as they are, two pairs a word, the input row's
  pairs gathered once for many blocks of outputs; on gathered rows the weights laid out as output
  pair words (two outputs' weights a word, one `SXTB16` for two `SMLAD`s, 1x the bytes) or, where
  those do not fit and the flash budget allows, int16 weight pairs (on Helium cores,
  `backends.arm_mve.kernels`'s instead).

The input zero point is either folded into the bias by the pass (`folded_input_offset`) or
subtracted from each input pair with one `SADD16`. Every output is exactly the int32 sum the
generic int8 kernel computes, so outputs are bit-identical to it.

Int16 data (`-quantization-precision=Int16`, offset 0, int8 weights) takes the same kernels,
as CMSIS-NN's s16 kernels multiply int16 inputs read in pairs with `SMLAD`: a word of int16
memory already holds a pair, so where the int8 kernels split a word of four levels into the
pairs (0, 2) and (1, 3) with two `SXTB16`s, the int16 ones load two words and repack their
halves into the same pairs (`PKHBT`, `PKHTB`: `instructions.pairs_of_four`); the packed filters, the
gathered buffers and the products are the int8 kernels' own. Stack copies of input planes
hold int16 elements. A layer whose sums could leave int32 (`wide_accumulators`) keeps them
in int64 registers, each product pair added by `SMLALD` (`instructions.smlad` on an i64 total).
"""

from __future__ import annotations

from glowmlir.backends.arm_dsp.banded_windows import band_windows_of, banded_window_product
from glowmlir.backends.arm_dsp.depthwise import depthwise_convolution
from glowmlir.backends.arm_dsp.fully_connected import emit_fully_connected
from glowmlir.backends.arm_dsp.gathered_product import gathered_product
from glowmlir.backends.arm_dsp.layout import (
    CHANNEL_PAIRS,
    DEPTHWISE,
    gathers,
    packing_of,
)
from glowmlir.backends.arm_dsp.row_kernels import convolution_rows, pointwise_rows
from glowmlir.dialects import glow, glowll
from glowmlir.lowering import loop_skeletons
from glowmlir.lowering.kernel_builder import KernelBuilder
from glowmlir.lowering.loop_skeletons import (
    ArithmeticDomain,
)


def emit_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view) -> None:
    """A convolution packed for these kernels: the shared skeleton with `convolution_rows`
    or `pointwise_rows`; a 1x1 convolution of stride 1, unpooled or pooled globally, and a
    WINDOW_PAIRS one are matrix products over their pixels (`gathered_product`), or with
    `band_windows` over a widened band of their input (`banded_window_product`)."""
    packed_shape = glow.shape_of(op.filter)
    kind = packing_of(op)
    if kind == DEPTHWISE:
        depthwise_convolution(b, domain, op, view)
        return
    if band_windows_of(op):
        banded_window_product(b, domain, op, view)
    elif gathers(kind, op.strides.get_values(), op.pool is not None, glow.pools_globally(op)):
        gathered_product(b, domain, op, view, packed_shape[3])
    else:
        rows = pointwise_rows if kind == CHANNEL_PAIRS else convolution_rows
        loop_skeletons.emit_convolution(b, domain, op, view, rows, packed_shape[3])


def writes_over_input(op: glowll.ConvolutionOp) -> bool:
    """Whether the kernel may write its output over its input (`glowll-convolve-in-place`): an
    unpooled pointwise gathered product copies each run of pixels' channels to the stack
    (`GatheredProduct.gather`) before it stores that run's outputs, and later runs read later
    pixels only, so output (o, p) may lie on input (o, p) (NCHW, no more output channels)."""
    kind = packing_of(op)
    return kind == CHANNEL_PAIRS and op.pool is None and gathers(kind, op.strides.get_values(), False, False)


__all__ = ["emit_convolution", "emit_fully_connected", "writes_over_input"]
