"""Int8 kernels on the Arm DSP extension (Armv7E-M, Armv8-M Mainline: Cortex-M4, M7, M33, M55).

The extension's `SMLAD acc, a, b` adds two 16x16-bit products to an accumulator in one
instruction: `acc + a.lo * b.lo + a.hi * b.hi`. `SXTB16 a` sign-extends bytes 0 and 2 of a
word into the two halves, `SXTB16 a, ror #8` bytes 1 and 3, `SADD16` adds two halves at once.
The kernels here reach them through LLVM's `llvm.arm.*` intrinsics; LLVM itself selects
`PKHBT`/`PKHTB` and `LDRD` from plain IR (an `LDRD` only from a run of two consecutive
words, `SLOT_WORDS`), and `SMMULR` for a narrow requantization whose multiplier it cannot
see as a constant (`quantized_kernels.ChannelRequantization`). The data layouts (the pair
tilings, the packed filters) are `backends.arm_dsp.layout`'s, shared with the pass that
packs them.

* `convolution_rows`: a filter row at least two taps wide. A tile of `TILE_PIXELS` outputs
  of a row and a block of output channels keeps its accumulators in registers over the
  input channels and kernel rows; per kernel row it loads the input words of its row plan's
  tiling and multiplies their pairs with the packed weight words. Tiles at the edges have
  tilings of their own; outputs left over are computed tap by tap.
* `pointwise_rows`: an unpadded, ungrouped 1x1 convolution, on pairs of input channels;
  of stride 1, unpooled or with a global pool, `gathered_product`: each run of pixels'
  channels gathered once as pairs, then multiplied by every block of output channels,
  two pixels x two channels at a time.
* `gathered_product` with `gather_windows`: an ungrouped convolution of few taps a window
  (`arm_dsp_layout.WINDOW_PAIRS`), unpooled or with a pool whose windows tile its output
  (`TiledPool`: a pool window's pixels gathered together and pooled in registers), each
  pixel's window gathered once as pairs of taps (the padding as the input zero point), then
  multiplied as gathered channels are.
* `depthwise_convolution`: one input channel per group, on copies of the input planes
  padded with the input zero point (of int8 data along undilated rows, widened to int16:
  `widen_row`, `halfword_products`; a small widened plane's rows unrolled whole at -O3,
  `UNROLLED_PLANE_TILES`).
* `emit_fully_connected`: int8 weight rows as they are, two pairs a word, the input row's
  pairs gathered once for many blocks of outputs (on Helium cores, `backends.arm_mve.kernels`'s
  instead).

The input zero point is either folded into the bias by the pass (`folded_input_offset`) or
subtracted from each input pair with one `SADD16`. Every output is exactly the int32 sum the
generic int8 kernel computes, so outputs are bit-identical to it.

Int16 data (`-quantization-precision=Int16`, offset 0, int8 weights) takes the same kernels,
as CMSIS-NN's s16 kernels multiply int16 inputs read in pairs with `SMLAD`: a word of int16
memory already holds a pair, so where the int8 kernels split a word of four levels into the
pairs (0, 2) and (1, 3) with two `SXTB16`s, the int16 ones load two words and repack their
halves into the same pairs (`PKHBT`, `PKHTB`: `pairs_of_four`); the packed filters, the
gathered buffers and the products are the int8 kernels' own. Stack copies of input planes
hold int16 elements. A layer whose sums could leave int32 (`wide_accumulators`) keeps them
in int64 registers, each product pair added by `SMLALD` (`smlad` on an i64 total).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import i8, i16, i32, i64
from xdsl.ir import SSAValue

from glowmlir.backends.arm_dsp.layout import (
    BIAS_PAIRS,
    CHANNEL_PAIRS,
    DEPTHWISE,
    DEPTHWISE_PIXELS,
    QUAD_CHANNELS,
    TILE_PIXELS,
    UNROLLED_PAIRS,
    DepthwisePlan,
    HalfwordTiling,
    PairTiling,
    convolution_depthwise_plan,
    convolution_row_plan,
    gathers,
    packing,
    slot_word,
    tiled_pool,
    widened_planes,
    window_row_order,
)
from glowmlir.dialects import glow, glowll
from glowmlir.lowering import loop_skeletons
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View, is_zero
from glowmlir.lowering.loop_skeletons import (
    ArithmeticDomain,
    GlobalPool,
    Row,
    StoredElement,
    Window,
    fill_row,
    kernel_rows_inside,
)

GATHERED_PIXELS = (4, 2, 1)
GATHER_BYTES = 4096
"""A pointwise convolution of stride 1 gathers the channels of the first count of pixels of
`GATHERED_PIXELS` whose buffer (`gathered_bytes`) fits in `GATHER_BYTES` of stack (one pixel
at least)."""

SLOT_WORDS = 4
"""The gathered words of a pair of pixels for one channel pair lie in a slot of this many
words, two of them used: LLVM's ARM backend pairs two loads into one `LDRD` only where their
run of consecutive words is two long (a longer run it leaves for an `LDM` it then rarely
forms; the weights are laid out for it too, `arm_dsp_layout.INTERLEAVED_BLOCKS`). DS-CNN's
64-channel pointwise layers: 668k instructions each on the M7 with the words side by side,
631k in slots."""


def gathered_bytes(pixels: int, pairs: int) -> int:
    """The stack bytes of `pixels` gathered pixels of `pairs` channel pairs."""
    return -(-pixels // 2) * pairs * SLOT_WORDS * 4 if pixels > 1 else pairs * 4

GATHER_STEP_PAIRS = 8
"""A straight gathered product (`UNROLLED_PAIRS`) gathers this many channel pairs a step of its
loop over them (LLVM unrolled four; DS-CNN's pointwise layers on the M7: 45 instructions for
four pairs, 85 for eight; the net's code at -O3 29,062 -> 29,734 B, MobileNetV2's 91,232 -> 96,272 B
for 11.6k instructions fewer), from the last pair down: counted up, LLVM's loop strength reduction
ran an induction variable up to zero and put the gathered words at the loop's whole range
more from its pointer, beyond the +-1020 bytes of `STRD`'s offset for the second pixel pair
(two `STR`s each). DS-CNN's pointwise layers on the M7: 401.5k -> 400.8k instructions each
counted down, 400.2k eight a step."""

REREAD_PAIRS = 20
"""A gathered product looped over at most this many input channel pairs (a size-first build,
`UNROLLED_PAIRS`) reads its buffer through an opaque pointer made in each block of output
channels: else LLVM unrolls the few pairs whole, hoists the buffer's loads out of the block
loop and spills and reloads the words one by one (MobileNetV3-style net on the M7: 4.30M
instructions hoisted, 4.14M reread). Over more pairs the loads stay in the loop anyway."""

STRAIGHT_PIXEL_PAIRS = 2
"""Pixel pairs of a run that the straight-line products (`UNROLLED_PAIRS`) multiply by a block
of output channels together, at most 8 accumulators (4 pixels x 2 channels, in the 14
registers a kernel without a frame pointer has, `STACK_ALIGNMENT`): per channel pair one
`LDRD` of weights serves both pixel pairs' `LDRD`s, three loads for eight `SMLAD`s instead of
four (DS-CNN's 64-channel pointwise layers on the M7: 468k -> 432k instructions each)."""

LOOP_PAIRS = {"dsp": 2, "helium": 1}
"""Channel pairs a step of the gathered product's loop over them in a size-first build
(-Os/-Oz, where LLVM unrolls no loop), by core class (`conv_pool_costs.core_class`): the
selection pass puts it on each convolution as `loop_pairs` (`pipeline.glowll_passes`). On the
M4, M7 and M33 two pairs a step halve the loop's overhead (MobileNetV2's 1x1 expansions at
-Os on the M7: a 16 x 24 x 24 to 96-channel layer alone 2.77M -> 2.52M instructions, a
336-channel one 609k -> 529k; DS-CNN -Os 5.86M -> 5.11M, -Oz 6.42M -> 5.87M). On the M55
(at -Oz, where it keeps the DSP kernels) one pair a step is faster and smaller (DS-CNN -Oz
5.75M -> 4.75M, MobileNetV2 29.8M -> 26.8M instructions). At -O3 LLVM unrolls the loop of one
pair a step itself (two a step: MobileNetV3-style's 88-channel projection 143k -> 155k)."""

HOISTED_WEIGHT_WORDS = 12
"""A convolution of one input channel per group has loop-invariant weight words across its
tiles; LLVM hoists them all out of the tile loop, and more than this many are spilled and
reloaded along with the input pairs they push out (LeNet's first convolution, 30 words: 662k
instructions on the M7 hoisted, 494k loaded per tile). Over this count the tile loop loads
them through an opaque pointer (`KernelBuilder.opaque`)."""

PLANE_BYTES = 2048
"""A depthwise convolution copies each input plane, padded, into this many bytes of stack:
the whole plane when it fits, else bands of it (one row of output at least)."""

UNROLLED_PLANE_TILES = 32
"""A widened depthwise plane (`arm_dsp_layout.widens_planes`) copied whole whose output
takes at most this many tiles (output rows x tiles a row) is multiplied in straight-line
code in a speed-first build (`unrolls_plane`): its rows unrolled, each tile's words, weight
words and outputs at constant offsets from two pointers, the channel's filter copied beside
the plane (`copy_filter`). About 200 bytes of code a tile: DS-CNN's 25-tile planes (3x3,
25 x 5 outputs) take 5.1 KB more a kernel, and its four depthwise layers' kernels differ in
their requantization numbers (four kernels); their depthwise layers on the M7 119,228 ->
105,752 instructions each. MobileNetV2's planes of 6 x 6 outputs or fewer are unrolled, its
larger ones (12 x 12 outputs: 36 tiles, up to 48 x 48) stay looped. A size-first build keeps
the loop (its convolutions carry `loop_pairs`)."""

STACK_ALIGNMENT = 8
"""The kernels' stack buffers are aligned as the Armv7-M stack is (8 bytes; `LDRD` needs 4):
aligned to 64, LLVM realigned the stack and kept a frame pointer, one register fewer for
accumulators."""

FC_BLOCKS = (4, 2, 1)
"""Outputs of a FullyConnected computed together: the first that divides the outputs."""

FC_GATHER_BYTES = 4096
"""A FullyConnected whose input pairs (two bytes an input) fit in this many bytes of stack
makes them once per input row, not once per block of outputs: MobileNetV2's classifier
(1280 inputs, 1000 outputs) on the M7: 2,211,514 -> 2,013,746 instructions."""

FC_GATHER_BLOCKS = 3
"""... and that has more blocks of outputs than this: a word's pairs cost a load, two `SXTB16`
and two stores to gather and one `LDRD` a block to read, against a load and two `SXTB16` a
block in place (DS-CNN's 64 x 12 classifier, three blocks of four, on the M7: 155
instructions more gathered)."""

# ----------------------------------------------------------------------------- the instructions


def _intrinsic(b: KernelBuilder, name: str, *args: SSAValue) -> SSAValue:
    return b.emit(llvm.CallIntrinsicOp(f"llvm.arm.{name}", list(args), [i32]))


def smlad(b: KernelBuilder, a: SSAValue, c: SSAValue, total: SSAValue) -> SSAValue:
    """total + a.lo * c.lo + a.hi * c.hi: `SMLAD` into an i32 total, `SMLALD` into an i64 one
    (the int64 sums of an int16 layer with `wide_accumulators`)."""
    if total.type == i64:
        return b.emit(llvm.CallIntrinsicOp("llvm.arm.smlald", [a, c, total], [i64]))
    return _intrinsic(b, "smlad", a, c, total)


def input_pairs(b: KernelBuilder, word: SSAValue, offset_pair: SSAValue | None) -> tuple[SSAValue, SSAValue]:
    """The pairs (byte 0, byte 2) and (byte 1, byte 3) of a word of four int8, sign-extended to
    int16, plus `offset_pair` (both halves) when given."""
    low = _intrinsic(b, "sxtb16", word)
    rotated = b.emit(llvm.CallIntrinsicOp("llvm.fshr.i32", [word, word, b.integer(8)], [i32]))
    high = _intrinsic(b, "sxtb16", rotated)
    if offset_pair is None:
        return low, high
    return _intrinsic(b, "sadd16", low, offset_pair), _intrinsic(b, "sadd16", high, offset_pair)


def pairs_of_four(b: KernelBuilder, view: View, indices: Sequence[Index],
                  offset_pair: SSAValue | None) -> tuple[SSAValue, SSAValue]:
    """The pairs (x0, x2) and (x1, x3) of the four elements of `view` from `indices` (along its
    last dimension), plus `offset_pair` when given: of int8 data one word split by `SXTB16`s
    (`input_pairs`), of int16 data two words whose low halves and whose high halves are
    packed together (`PKHBT`, `PKHTB`). Either way the same pairs meet the same weight words."""
    if view.element_type != i16:
        return input_pairs(b, load_word(b, view, indices), offset_pair)
    first = load_word(b, view, indices)
    second = load_word(b, view, [*indices[:-1], b.add(indices[-1], 2)])
    pairs = pack_halves(b, first, second), high_halves(b, first, second)
    if offset_pair is None:
        return pairs
    return tuple(_intrinsic(b, "sadd16", pair, offset_pair) for pair in pairs)


def offset_pair(b: KernelBuilder, zero_point: int | SSAValue) -> SSAValue | None:
    """The word whose two int16 halves are -zero_point (None for a zero point of 0; computed
    at run time for one the kernel reads from its layer's record)."""
    if isinstance(zero_point, SSAValue):
        return b.int_mul(b.int_and(b.int_sub(0, zero_point), 0xFFFF), 0x10001)
    if zero_point == 0:
        return None
    half = -zero_point & 0xFFFF
    return b.integer(np.int32(np.uint32(half * 0x10001)).item())


def load_words(b: KernelBuilder, view: View, indices: Sequence[Index], count: int) -> list[SSAValue]:
    """`count` consecutive i32 words from the 4-byte aligned address of `view[indices]`, two
    at a time as one i64 (one LDRD)."""
    address = b.element(view, indices)
    words = []
    for first in range(0, count, 2):
        at = b.offset_pointer(address, first, i32)
        if first + 1 == count:
            words.append(b.emit(llvm.LoadOp(at, i32, alignment=4)))
            break
        double = b.emit(llvm.LoadOp(at, i64, alignment=4))
        words += [b.truncate(double, i32), b.truncate(b.shift_right_logical(double, 32), i32)]
    return words


def load_word(b: KernelBuilder, view: View, indices: Sequence[Index], aligned: bool = False) -> SSAValue:
    """The i32 at the address of `view[indices]`: Armv7E-M and Armv8-M Mainline load words
    from any address; `aligned` says it is a multiple of 4 (a packed weight pair), which
    lets LLVM load two words with one LDRD."""
    return b.emit(llvm.LoadOp(b.element(view, indices), i32, alignment=4 if aligned else 1))


def after(b: KernelBuilder, values: Sequence[SSAValue]) -> None:
    """An empty inline asm that reads `values` and may touch memory (no instruction): the loads
    that follow stay after the instructions computing them. The straight gathered products
    take each pixel pair's words after the last one's products so: on the Cortex-M4 and M33,
    LLVM's scheduler loaded both pixel pairs' words first and spilled accumulators (DS-CNN's
    pointwise layers on the M4: 607k instructions each so, 430k in order; on the M7 432k -> 428k)."""
    b.emit(llvm.InlineAsmOp("", ",".join(["r"] * len(values) + ["~{memory}"]), list(values), [],
                            has_side_effects=True))


# ----------------------------------------------------------------------------- convolution


def convolution_rows(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, src: View, packed: View,
                     bias: View, n: Index, channels: list[Index], y: Index, outputs: list[Row], width: int,
                     accumulators: None = None, residual: None = None) -> None:
    """Convolution output row `y` of the output channels `channels` (one block) into
    `outputs` (`loop_skeletons.convolution_rows`' contract, accumulators in registers):
    interior tiles on pairs, the remaining columns one by one."""
    _, _, in_h, in_w = src.shape
    out_c, group_c, k_h, k_w = op.filter_shape.get_values()
    sy, sx = op.strides.get_values()
    pt, pl, pb, _ = op.pads.get_values()
    dy, dx = op.dilations.get_values()
    plan = convolution_row_plan(src.shape, (out_c, group_c, k_h, k_w), (sy, sx), op.pads.get_values(), (dy, dx),
                                op.group.value.data)
    block = len(channels)
    out_per_group = out_c // op.group.value.data
    first_channel = b.mul(b.div(channels[0], out_per_group), group_c) if op.group.value.data > 1 else 0
    o_block = b.div(channels[0], block) if block > 1 else channels[0]
    folded = op.folded_input_offset is not None
    x_offset = None if folded else offset_pair(b, domain.input_offset)

    top, ky_lo, ky_hi = kernel_rows_inside(b, op, y, in_h, k_h)

    def accumulate(totals: list[SSAValue], first: Index, tiling: int | None, packed: View = packed) -> list[SSAValue]:
        """Adds the taps of a tile of outputs (plan tiling `tiling`, loads from input column
        `first`), or of one output (None: window from `first`), to `totals` ([output][channel]),
        over input channels and kernel rows."""
        with b.loop(0, group_c, carried=totals) as c:
            with b.loop(ky_lo, ky_hi, carried=c.carried) as ky:
                channel = b.add(first_channel, c.index)
                in_y = b.add(top, b.mul(ky.index, dy))
                sums = list(ky.carried)
                if tiling is None:
                    sums = _single_taps(b, domain, src, packed, plan.tilings[0], n, channel, in_y, o_block, c.index,
                                        ky.index, block, first, sums, in_w, k_w, dx, folded)
                else:
                    sums = _tile_taps(b, src, packed, plan.tilings[tiling], plan.word_offsets[tiling], n, channel,
                                      in_y, o_block, c.index, ky.index, block, first, sums, x_offset)
                ky.next(*sums)
            c.next(*ky.results)
        return c.results

    store = functools.partial(store_tile, b, domain, channels, outputs)
    starts = [domain.bias(bias, o) for o in channels]
    first_tile, tiles = plan.interior
    if tiles:
        with b.loop(0, tiles) as tile:
            x0 = b.add(first_tile, b.mul(tile.index, TILE_PIXELS))
            weights = packed
            if group_c == 1 and block * k_h * len(plan.tilings[0].weight_words) > HOISTED_WEIGHT_WORDS:
                weights = dataclasses.replace(packed, base=b.opaque(packed.base))
            totals = accumulate(starts * TILE_PIXELS, b.sub(b.mul(x0, sx), pl), 0, weights)
            store(totals, [b.add(x0, p) for p in range(TILE_PIXELS)])
    for x0, tiling, first in plan.edges:
        store(accumulate(starts * TILE_PIXELS, first, tiling), list(range(x0, x0 + TILE_PIXELS)))
    for x in plan.singles:
        store(accumulate(list(starts), x * sx - pl, None), [x])


def store_tile(b: KernelBuilder, domain: ArithmeticDomain, channels: list[Index], outputs: list[Row],
               totals: list[SSAValue], xs: list[Index]) -> None:
    """Each accumulator of a tile (`totals[p * block + j]`: output column xs[p], channel j)
    through the domain's output step into its row."""
    for j, output in enumerate(outputs):
        stored = domain.output(channels[j], output.view.element_type)
        for p, x in enumerate(xs):
            total = totals[p * len(channels) + j]
            b.store(stored(total) if stored is not None else total, output.view, output.at(x))


def _tile_taps(b: KernelBuilder, src: View, packed: View, tiling: PairTiling, word_offset: int, n: Index,
               channel: Index, in_y: Index, o_block: Index, c: Index, ky: Index, block: int, first: Index,
               totals: list[SSAValue], x_offset: SSAValue | None) -> list[SSAValue]:
    """One kernel row of one input channel for a whole tile: pairs times weight words."""
    pairs = tile_pairs(b, Row(src, (n, channel, in_y)), first, tiling, x_offset)
    return tile_products(b, tiling, pairs, block, totals, lambda j: load_words(
        b, packed, [o_block, c, ky, j, word_offset, 0], len(tiling.weight_words)))


def tile_pairs(b: KernelBuilder, row: Row, first: Index, tiling: PairTiling,
               x_offset: SSAValue | None, derive: bool = False) -> list[tuple[SSAValue, bool]]:
    """The input pairs a tile reads from `row`: its `tiling.words` runs of four elements from
    column `first` (two elements apart), two pairs each (`pairs_of_four`), less `x_offset`
    when given; each with whether its halves are swapped (`tile_products` multiplies it by
    `SMLADX`).

    With `derive` (the depthwise kernel's tiles of int8 data, but in a size-first build), the
    words 4 bytes apart are loaded, all first; a word between two loaded ones is not: its
    pairs (2, 4) and (3, 5) are the high half of one neighbour's pair and the low half of the
    other's, one `PKHBT` each, swapped (2 instructions for the load and the 3 of
    `input_pairs`; DS-CNN's depthwise layers on the M7: 146k -> 138k instructions each, 141k
    with each word split as it is loaded). In minimum-size code the derived pairs cost more
    (DS-CNN at -Oz on the M7: 10.23M -> 10.25M), and the row kernel's tiles keep each word
    loaded and split in turn (loaded first, LeNet on the M7: 3.07M -> 3.11M)."""
    words = tiling.words
    if derive and row.view.element_type != i16:
        loaded = sorted(set(range(0, words, 2)) | {words - 1})
        direct = {word: load_word(b, row.view, row.at(b.add(first, 2 * word))) for word in loaded}
        split = {word: input_pairs(b, value, x_offset) for word, value in direct.items()}
    else:
        split = {word: pairs_of_four(b, row.view, row.at(b.add(first, 2 * word)), x_offset) for word in range(words)}
    pairs = []
    for word in range(words):
        if word in split:
            pairs += [(pair, False) for pair in split[word]]
        else:  # (low half of the next word's pair, high half of the last one's)
            neighbours = zip(split[word + 1], split[word - 1])
            pairs += [(pack_halves_of(b, after, before), True) for after, before in neighbours]
    return pairs


def pack_halves_of(b: KernelBuilder, low: SSAValue, high: SSAValue) -> SSAValue:
    """The low half of `low` and the high half of `high` (one `PKHBT`)."""
    return b.int_or(b.int_and(low, 0xFFFF), b.int_and(high, -0x10000))


def tile_products(b: KernelBuilder, tiling: PairTiling, pairs: list[tuple[SSAValue, bool]], block: int,
                  totals: list[SSAValue], weight_words: Callable[[int], list[SSAValue]]) -> list[SSAValue]:
    """`totals` ([output][channel] of the tile, `block` channels) plus the products of one
    kernel row: each output's input pairs (`tile_pairs`) times channel j's `weight_words(j)`."""
    totals = list(totals)
    for j in range(block):
        weights = weight_words(j)
        for p, products in enumerate(tiling.products):
            for pair, word in products:
                value, swapped = pairs[pair]
                total = totals[p * block + j]
                totals[p * block + j] = _intrinsic(b, "smladx", value, weights[word], total) if swapped else \
                    smlad(b, value, weights[word], total)
    return totals


def _single_taps(b: KernelBuilder, domain, src: View, packed: View, tiling: PairTiling, n: Index, channel: Index,
                 in_y: Index, o_block: Index, c: Index, ky: Index, block: int, first: int, totals: list,
                 in_w: int, k_w: int, dx: int, folded: bool) -> list[SSAValue]:
    """One kernel row of one input channel for one output column, tap by tap. Taps in the
    padding are skipped at compile time, or, with the input offset folded into the bias,
    count as the input offset (the level of a real 0)."""
    totals = list(totals)
    offset = domain.input_offset
    for kx in range(k_w):
        column = first + kx * dx
        if not 0 <= column < in_w:
            if not folded or is_zero(offset):
                continue
            pixel = b.int_value(offset)
        else:
            at = [n, channel, in_y, column]
            pixel = level(b, src, at) if folded else domain.input(src, at)
        word, half = tiling.tap_position(kx)
        for j in range(block):
            weight = domain.weight(packed, [o_block, c, ky, j, word, half])
            totals[j] = domain.multiply_accumulate(totals[j], pixel, weight)
    return totals


def pointwise_rows(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, src: View, packed: View,
                   bias: View, n: Index, channels: list[Index], y: Index, outputs: list[Row], width: int,
                   accumulators: None = None, residual: None = None) -> None:
    """A 1x1 convolution's output row `y` (`convolution_rows`' contract) on channel pairs:
    four adjacent pixels of two input channels become four (channel 2i, channel 2i + 1)
    pairs (`channel_pairs`), multiplied by each output channel's weight pair; two pixels left
    over from two halfwords; the rest (or all of them, strided) one at a time, their two
    levels packed into a pair."""
    in_c = src.shape[1]
    sy, sx = op.strides.get_values()
    block = len(channels)
    o_block = b.div(channels[0], block) if block > 1 else channels[0]
    folded = op.folded_input_offset is not None
    x_offset = None if folded else offset_pair(b, domain.input_offset)
    in_y = b.mul(y, sy)
    quad = 1 if sx != 1 else 4 if in_c <= QUAD_CHANNELS else 2
    starts = [domain.bias(bias, o) for o in channels]

    def accumulate(totals: list[SSAValue], x: Index, pixels: int) -> list[SSAValue]:
        def step(totals: list[SSAValue], pair_index: Index, first: Index, second: Index) -> list[SSAValue]:
            pairs = pixel_channel_pairs(b, src, [n, first, in_y, x], [n, second, in_y, x], pixels, x_offset)
            totals = list(totals)
            for j, weight in enumerate(pointwise_weight_words(b, packed, o_block, pair_index)):
                for p, pair in enumerate(pairs):
                    totals[p * block + j] = smlad(b, pair, weight, totals[p * block + j])
            return totals

        return over_channel_pairs(b, in_c, step, totals)

    store = functools.partial(store_tile, b, domain, channels, outputs)
    quads = width // quad
    with b.loop(0, quads) as tile:
        x0 = b.mul(tile.index, quad)
        store(accumulate(starts * quad, b.mul(x0, sx), quad), [b.add(x0, p) for p in range(quad)])
    x = quads * quad
    if sx == 1 and width - x >= 2:
        store(accumulate(starts * 2, x, 2), [x, x + 1])
        x += 2
    for x in range(x, width):
        store(accumulate(list(starts), x * sx, 1), [x])


def pointwise_weight_words(b: KernelBuilder, packed: View, o_block: Index, pair: Index) -> list[SSAValue]:
    """The weight words of block `o_block` of output channels for channel `pair` of a
    CHANNEL_PAIRS filter (`arm_dsp_layout.pack_filter`), two at a time by one `LDRD`."""
    return load_words(b, packed, block_weight_index(b, packed, o_block, pair), packed.shape[3])


def block_weight_index(b: KernelBuilder, packed: View, o_block: Index, pair: Index) -> list[Index]:
    """Where the weight words of block `o_block` of output channels for channel `pair` start
    in a CHANNEL_PAIRS filter, whose blocks may be interleaved in twos or fours."""
    interleaved = packed.shape[2]
    if interleaved == 1:
        return [o_block, pair, 0, 0, 0]
    return [b.div(o_block, interleaved), pair, b.remainder(o_block, interleaved), 0, 0]


def over_channel_pairs(b: KernelBuilder, in_c: int, step, carried: list[SSAValue], downward: bool = False,
                       per_step: int = 1) -> list[SSAValue]:
    """`carried` after `step(carried, pair index, first channel, second channel)` of every
    pair of input channels (2i, 2i + 1), `per_step` pairs a loop step; an odd last channel is
    paired with itself (its weight pair's high half is zero, so any level will do).
    `downward`: from the last pair (`GATHER_STEP_PAIRS`)."""
    def pair_step(carried: list[SSAValue], i: Index) -> list[SSAValue]:
        pair = b.sub(in_c // 2 - 1, i) if downward else i
        first = b.mul(pair, 2)
        return step(carried, pair, first, b.add(first, 1))

    with b.loop(0, in_c // 2 // per_step, carried=carried) as c:
        values = list(c.carried)
        for k in range(per_step):
            values = pair_step(values, b.add(b.mul(c.index, per_step), k))
        c.next(*values)
    carried = c.results
    for i in range(in_c // 2 // per_step * per_step, in_c // 2):
        carried = pair_step(carried, i)
    if in_c % 2:
        carried = step(carried, in_c // 2, in_c - 1, in_c - 1)
    return carried


def pixel_channel_pairs(b: KernelBuilder, src: View, at_first: list[Index], at_second: list[Index], pixels: int,
                        x_offset: SSAValue | None) -> list[SSAValue]:
    """The pairs (first channel, second channel) of `pixels` (4, 2 or 1) adjacent pixels from
    `src[at_first]` and `src[at_second]`, less `x_offset` (both halves) when given. Of int16
    data, each word of two pixels of both channels gives their two pairs (`PKHBT`, `PKHTB`)."""
    if src.element_type == i16 and pixels > 1:
        pairs = []
        for x in range(0, pixels, 2):
            first, second = (load_word(b, src, [*at[:-1], b.add(at[-1], x)]) for at in (at_first, at_second))
            pairs += [pack_halves(b, first, second), high_halves(b, first, second)]
    elif pixels == 4:
        pairs = channel_pairs(b, load_word(b, src, at_first), load_word(b, src, at_second))
    elif pixels == 2:  # two halfwords side by side: bytes p0 p1 q0 q1
        side_by_side = b.int_or(_halfword(b, src, at_first), b.shift_left(_halfword(b, src, at_second), 16))
        pairs = list(input_pairs(b, side_by_side, None))
    else:
        pairs = [pack_halves(b, level(b, src, at_first), level(b, src, at_second))]
    if x_offset is not None:
        pairs = [_intrinsic(b, "sadd16", pair, x_offset) for pair in pairs]
    return pairs


def channel_pairs(b: KernelBuilder, first: SSAValue, second: SSAValue) -> list[SSAValue]:
    """Four pixels of two channels (a word of each) as the pairs (first[p], second[p]), p = 0..3:
    the words' low halves side by side (PKHBT), their high halves (PKHTB), each split in two
    pairs by SXTB16."""
    low = pack_halves(b, first, second)  # bytes p0 p1 q0 q1
    high = high_halves(b, first, second)  # p2 p3 q2 q3
    (p0, p1), (p2, p3) = input_pairs(b, low, None), input_pairs(b, high, None)
    return [p0, p1, p2, p3]


def pack_halves(b: KernelBuilder, low: SSAValue, high: SSAValue) -> SSAValue:
    """The pair (low, high) of two int16 values held in i32s (`PKHBT`)."""
    return b.int_or(b.int_and(low, 0xFFFF), b.shift_left(high, 16))


def high_halves(b: KernelBuilder, low: SSAValue, high: SSAValue) -> SSAValue:
    """The pair of the high halves of two words: (low.hi, high.hi) (`PKHTB`)."""
    return b.int_or(b.int_and(high, -0x10000), b.shift_right_logical(low, 16))


def emit_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view) -> None:
    """A convolution packed for these kernels: the shared skeleton with `convolution_rows`
    or `pointwise_rows`; a 1x1 convolution of stride 1, unpooled or pooled globally, and a
    WINDOW_PAIRS one are matrix products over their pixels (`gathered_product`)."""
    packed_shape = glow.shape_of(op.filter)
    kind = packing(op.filter_shape.get_values(), op.pads.get_values(), op.group.value.data, op.pool is not None,
                   tiled_pool(op))
    if kind == DEPTHWISE:
        depthwise_convolution(b, domain, op, view)
        return
    if gathers(kind, op.strides.get_values(), op.pool is not None, glow.pools_globally(op)):
        gathered_product(b, domain, op, view, packed_shape[3])
    else:
        rows = pointwise_rows if kind == CHANNEL_PAIRS else convolution_rows
        loop_skeletons.emit_convolution(b, domain, op, view, rows, packed_shape[3])


STEP_BLOCKS = 4
"""A speed-first build's straight gathered products (`UNROLLED_PAIRS`) over a full run of pixels
take this many blocks of output channels a step of the loop over blocks where the blocks divide
by it: two groups of `INTERLEAVED_BLOCKS`, each group's weight words side by side for `LDRD`,
the loop's overhead (pointers, counter) paid once for four blocks. The last pixels of a plane
keep the interleaved blocks a step: their code would grow as much for almost nothing saved
(DS-CNN on the M7 -O3: 2,310,230 -> 2,297,960 instructions, code 49.1 KB -> 63.3 KB; with the
last pixels too 2,297,942 at 68.3 KB)."""


def straight_step_blocks(blocks: int, interleaved: int) -> int:
    """Blocks of output channels a step of a straight gathered product's loop over a full run
    takes: `STEP_BLOCKS` where `blocks` divide by it, else the `interleaved` ones."""
    return STEP_BLOCKS if blocks % STEP_BLOCKS == 0 and STEP_BLOCKS % interleaved == 0 else interleaved


def gathered_product(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view,
                     block: int) -> None:
    """A 1x1 convolution of stride 1, unpooled or with a global pool (`glow.pools_globally`), or
    a WINDOW_PAIRS convolution, as a matrix product over the output pixels, register-blocked
    as CMSIS-NN's `arm_nn_mat_mult_kernel_s8_s16`.

    Per run of (up to) four pixels (`GATHERED_PIXELS`), their input channels (or the taps of
    their windows, `gather_windows`) are gathered once, as int16 pairs less the input offset,
    into a stack buffer of `[pixel pairs, pairs, SLOT_WORDS]` words: for each pair, the words
    of a pair of pixels side by side, as the weight words of a block of output channels are.
    Every block of output channels then takes the pixels two at a time: per pair, one `LDRD`
    of the two pixels' words and one of the block's weight words, 2 x `block` `SMLAD`s into
    as many accumulators. The gathering is paid once for all output channels. A global pool
    folds each output level into a stack sum (or maximum) per channel, averaged once at the
    end; a pool whose windows tile the output (`TiledPool`) makes each run one pool window's
    pixels, pooled in registers."""
    def flat(buffer: SSAValue) -> View:
        whole = view(buffer)
        n_size, channels, height, width = whole.shape
        pixels = height * width
        return whole.reshaped((n_size, channels, pixels), (channels * pixels, pixels, 1))

    dest, packed, bias = flat(op.dest), view(op.filter), view(op.bias)
    windows = op.filter_shape.get_values()[2:] != (1, 1)
    src = view(op.input) if windows else flat(op.input)
    n_size, out_c, _ = dest.shape
    pixels = int(np.prod(glow.convolution_shape(op)[2:]))  # before a fused pool
    biases_in_filter = op.biases_in_filter is not None
    first_pair = BIAS_PAIRS if biases_in_filter else 0  # the weight words' first pair
    pairs = packed.shape[1] - first_pair
    run = next((count for count in GATHERED_PIXELS if gathered_bytes(count, pairs) <= GATHER_BYTES), 1)
    tiles = None if op.pool is None or glow.pools_globally(op) else TiledPool(b, domain, op, view(op.dest))
    if tiles is not None:  # one pool window's pixels a run
        pixels, run = tiles.windows, tiles.pixels
    slot = SLOT_WORDS if run > 1 else 1
    gathered = View.contiguous(b.alloca(gathered_bytes(run, pairs) // 4, i32, STACK_ALIGNMENT),
                               (-(-run // 2), pairs, slot), element_type=i32)
    x_offset = None if op.folded_input_offset is not None else offset_pair(b, domain.input_offset)
    pool = None if op.pool is None or tiles is not None else GlobalPool(b, domain, op, view(op.dest))
    loop_pairs = op.loop_pairs.value.data if op.loop_pairs is not None else None  # a size-first build's
    straight = pairs <= UNROLLED_PAIRS and loop_pairs is None
    step = loop_pairs or 1

    padded = padded_input(b, domain, op, src) if windows else None

    def gather(n: Index, x0: Index, count: int) -> None:
        """Pixels x0 .. x0 + count - 1 into the buffer's first `count` slots."""
        if windows:
            gather_windows(b, domain, op, src, gathered, n, x0, count, x_offset, padded,
                           None if tiles is None else tiles.convolution_pixel(x0), looped=loop_pairs is not None,
                           by_pixel_pairs=straight)
            return

        def channel_pair(carried: list[SSAValue], i: Index, first: Index, second: Index) -> list[SSAValue]:
            loaded = pixel_channel_pairs(b, src, [n, first, x0], [n, second, x0], count, x_offset)
            for p, pair in enumerate(loaded):
                b.store(pair, gathered, [p // 2, i, p % 2])
            return carried

        over_channel_pairs(b, src.shape[1], channel_pair, [], downward=straight,
                           per_step=GATHER_STEP_PAIRS if straight else 1)

    def products(totals: list[SSAValue], inputs: list[SSAValue], weights: list[SSAValue]) -> list[SSAValue]:
        """`totals` ([pixel][channel]) plus each pixel's input word times each channel's weight word."""
        totals = list(totals)
        for k, word in enumerate(inputs):
            for j, weight in enumerate(weights):
                totals[k * len(weights) + j] = smlad(b, word, weight, totals[k * len(weights) + j])
        return totals

    def constants_anew(after_value: SSAValue):
        """Straight, the requantization's constants made anew once `after_value` is computed
        (`constants_through`): the straight products fill the registers, and LLVM reloaded
        the rounding terms once an output (DS-CNN's pointwise layers on the M7: 414k -> 409k
        instructions each, two blocks a step). Looped (a size-first build), where they may
        stay in registers, their copies cost moves: DS-CNN on the M7 -Oz 5.48M -> 5.86M."""
        if not straight:
            return contextlib.nullcontext()
        return domain.constants_through(lambda value: opaque_after(b, value, after_value))

    def multiply(n: Index, x0: Index, count: int) -> None:
        """Every output channel of the `count` gathered pixels from x0. Straight, one loop step
        takes the blocks whose weight words are interleaved (over a full run, `STEP_BLOCKS` of
        them: two such groups), each reading them (and its
        biases, `biases_in_filter`) through a pointer of its own made opaque there (from one
        pointer, LLVM would see runs of four words and form no `LDRD`, `SLOT_WORDS`); the
        loop carries the step's pointer, advanced once the step's products are done (else
        LLVM advanced it among the last block's products and spilled). Carrying the output
        rows' pointer too took 0.1% fewer instructions on DS-CNN, 0.5% more on
        MobileNetV3-style on the M7. Unpooled, a block's products start after the stores of
        the block before (`after`): else LLVM began them among its requantization and spilled
        (DS-CNN's stem on the M7, its windows gathered by pixel pairs: 267.7k -> 264.3k
        instructions; with a tiled pool the CIFAR-sized net's stem took 3.4k fewer on the M7,
        3.1k more on the M4). A
        single pixel (a plane's last, 125 = 31 x 4 + 1) takes the step's blocks together, one
        input word for four weight words a channel pair (DS-CNN's pointwise layers on the M7:
        402.0k -> 401.5k instructions each, its last pixel 4.5k -> 4.0k)."""

        def block_products(o_blocks: list[Index], weights: list[View] | None) -> list[SSAValue]:
            """The blocks `o_blocks` of output channels together (one, or straight, the blocks of
            a step for a single pixel) (straight, their `weights` [pair (the bias pairs first,
            `biases_in_filter`), channel, 2]); their last totals."""
            reread = gathered
            if pairs <= REREAD_PAIRS:
                reread = dataclasses.replace(gathered, base=b.opaque(gathered.base))
            channels = [b.add(b.mul(o_block, block), j) for o_block in o_blocks for j in range(block)]
            width = len(channels)
            if biases_in_filter:
                starts = [word for words in weights for word in load_words(b, words, [0, 0, 0], block)]
            else:
                starts = [domain.bias(bias, o) for o in channels]

            def pixel_pairs(group: list[tuple[int, int]], after_totals: SSAValue | None) -> list[SSAValue]:
                """Pixels 2q (and 2q + 1 when `in_pair` is 2) of the run for each (q, in_pair) of
                `group` (one pair, or straight, `STRAIGHT_PIXEL_PAIRS`), every channel pair: their
                totals ([pixel][channel]); read after `after_totals` is computed when given."""
                if straight:  # both streams at constant offsets from pointers made here
                    words = View(opaque_after(b, b.element(gathered, [group[0][0], 0, 0]), after_totals),
                                 gathered.shape, gathered.strides, 0, gathered.element_type)
                    results = starts * sum(in_pair for _, in_pair in group)
                    for i in range(pairs):
                        weight_words = [word for words in weights
                                        for word in load_words(b, words, [first_pair + i, 0, 0], block)]
                        first = 0  # the group's first pixel of this pixel pair
                        for q, in_pair in group:
                            inputs = load_words(b, words, [q - group[0][0], i, 0], in_pair)
                            taken = slice(first * width, (first + in_pair) * width)
                            results[taken] = products(results[taken], inputs, weight_words)
                            after(b, results[taken])
                            first += in_pair
                else:
                    (q, in_pair), = group
                    words, filter_words = reread, packed
                    if tiles is not None:  # nor the weight words shared with the pair before
                        words = dataclasses.replace(gathered, base=opaque_after(b, gathered.base, after_totals))
                        filter_words = dataclasses.replace(packed, base=opaque_after(b, packed.base, after_totals))

                    def pair_products(totals: list[SSAValue], i: Index) -> list[SSAValue]:
                        return products(totals, load_words(b, words, [q, i, 0], in_pair),
                                        pointwise_weight_words(b, filter_words, o_blocks[0], i))

                    with b.loop(0, pairs // step, carried=starts * in_pair) as i:
                        totals = list(i.carried)
                        for k in range(step):
                            totals = pair_products(totals, b.add(b.mul(i.index, step), k))
                        i.next(*totals)
                    results = i.results
                    for i in range(pairs // step * step, pairs):
                        results = pair_products(results, i)
                return results

            pooled = tiles is not None or pool is not None
            levels_of = [domain.output(o, dest.element_type) for o in channels] if pooled else []
            folded = [None] * width  # a tiled pool's, per channel: the window's pixels so far
            groups = [(q, min(2, count - 2 * q)) for q in range(-(-count // 2))]
            together = STRAIGHT_PIXEL_PAIRS if straight and width * sum(p for _, p in groups) <= 8 else 1
            for first in range(0, len(groups), together):
                group = groups[first:first + together]
                results = pixel_pairs(group, folded[0])
                xs = [2 * q + k for q, in_pair in group for k in range(in_pair)]
                if tiles is not None:
                    folded = [tiles.fold(folded[j], results[j::width], levels_of[j]) for j in range(width)]
                elif pool is None:
                    outputs = [Row(dest, (n, o)) for o in channels]
                    with constants_anew(results[0]):
                        store_tile(b, domain, channels, outputs, results, [b.add(x0, x) for x in xs])
                else:  # the requantization's constants made anew, as for stored outputs
                    with constants_anew(results[0]):
                        def levels(j: int) -> list[SSAValue]:
                            level = domain.output(channels[j], dest.element_type)
                            return [level(results[k * width + j]) for k in range(len(xs))]

                        if loop_pairs is None:  # the sums read together (a size-first build's: 0.01% more)
                            pool.fold_channels(channels[0], [levels(j) for j in range(width)])
                        else:
                            for j, o in enumerate(channels):
                                pool.fold(o, levels(j))
            if tiles is not None:
                for j, o in enumerate(channels):
                    tiles.store(n, o, x0, folded[j], levels_of[j])
            return results

        if not straight:
            with b.loop(0, out_c // block) as o_block:
                block_products([o_block.index], None)
            return
        interleaved = packed.shape[2]
        together = straight_step_blocks(out_c // block, interleaved) if count == run else interleaved
        groups = together // interleaved  # of interleaved blocks, a step
        with b.loop(0, out_c // (block * together), carried=[b.element(packed, [0] * 5)]) as blocks:
            step_words, = blocks.carried

            def step_block(h: int) -> tuple[Index, View]:
                """Block h of the step and its weights, through a pointer made opaque here."""
                if h and tiles is None:  # after the block before's stores
                    after(b, [])
                offset = h // interleaved * packed.strides[0] + h % interleaved * packed.strides[2]
                block_words = b.opaque(b.offset_pointer(step_words, offset, packed.element_type))
                return b.add(b.mul(blocks.index, together), h), View(
                    block_words, (packed.shape[1], block, 2), (packed.strides[1], packed.strides[3], 1), 0,
                    packed.element_type)

            if count == 1 and tiles is None:  # one pixel: the step's blocks together
                o_blocks, weights = zip(*(step_block(h) for h in range(together)), strict=True)
                results = block_products(list(o_blocks), list(weights))
            else:
                for h in range(together):
                    o_block, words = step_block(h)
                    results = block_products([o_block], [words])
            blocks.next(b.offset_pointer(opaque_after(b, step_words, results[-1]), groups * packed.strides[0],
                                         packed.element_type))

    with b.loop(0, n_size) as n:
        if pool is not None:
            pool.start()
        if padded is not None:
            padded.copy(n.index)
        with b.loop(0, pixels // run if tiles is None else pixels) as t:
            x0 = b.mul(t.index, run) if tiles is None else t.index  # a tiled pool's: its window
            gather(n.index, x0, run)
            multiply(n.index, x0, run)
        tail = pixels % run if tiles is None else 0
        for count in (2, 1):
            if tail >= count:
                gather(n.index, pixels - tail, count)
                multiply(n.index, pixels - tail, count)
                tail -= count
        if pool is not None:
            pool.finish(n.index)


class TiledPool:
    """A fused pool whose windows tile the convolution's output (`arm_dsp_layout.tiled_pool`)
    in the gathered product: each run of gathered pixels is one window's, and its totals are
    pooled in registers. A max pool takes the maximum of the accumulators and requantizes
    it once (`output_is_monotonic`); else each pixel's level is folded (`pool_combine`) and
    the window finished as the generic kernel's pooled rows are (`finish_pool_row`)."""

    def __init__(self, b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, dest: View):
        self.b, self.domain = b, domain
        self.window = Window.of_fused_pool(op)
        self.kernel = self.window.kernel
        self.pixels = self.kernel[0] * self.kernel[1]
        n_size, channels, out_h, self.out_w = dest.shape
        self.windows = out_h * self.out_w
        self.in_hw = tuple(glow.convolution_shape(op)[2:])
        self.dest = dest.reshaped((n_size, channels, self.windows, 1), (*dest.strides[:2], 1, 1))
        self.after_maximum = self.window.is_max and domain.output_is_monotonic
        self.folded = None if self.after_maximum else View.contiguous(b.alloca(1, i32, STACK_ALIGNMENT), (1, 1),
                                                                       element_type=i32)

    def convolution_pixel(self, window: Index) -> Callable[[Index], tuple[Index, Index]]:
        """Pixel k of pool window `window` (row-major over the pooled plane): its row and
        column of the convolution's output."""
        b, (k_h, k_w) = self.b, self.kernel

        def pixel(k: Index) -> tuple[Index, Index]:
            y, x = b.div(window, self.out_w), b.remainder(window, self.out_w)
            return b.add(b.mul(y, k_h), b.div(k, k_w)), b.add(b.mul(x, k_w), b.remainder(k, k_w))

        return pixel

    def fold(self, folded: SSAValue | None, totals: list[SSAValue], stored: StoredElement) -> SSAValue:
        """`folded` (None: no pixel yet) with the accumulators `totals` of one channel at some
        pixels of its window: their maximum, or the pool's fold of their output levels."""
        if self.after_maximum:
            for total in totals:
                folded = total if folded is None else self.b.int_max(folded, total)
            return folded
        combine = self.domain.pool_combine(self.window)
        folded = self.domain.pool_start(self.window) if folded is None else folded
        for total in totals:
            folded = combine(folded, stored(total))
        return folded

    def store(self, n: Index, channel: Index, window: Index, folded: SSAValue, stored: StoredElement) -> None:
        """The pooled output of `channel` at `window` from its window's `fold`."""
        if self.after_maximum:
            self.b.store(stored(folded), self.dest, [n, channel, window, 0])
            return
        self.b.store(folded, self.folded, [0, 0])
        self.domain.finish_pool_row(self.window, Row(self.folded, (0,)), Row(self.dest, (n, channel, window)), 0,
                                    self.in_hw)


def opaque_after(b: KernelBuilder, pointer: SSAValue, after: SSAValue | None) -> SSAValue:
    """`pointer` made opaque (`KernelBuilder.opaque`); given `after`, also only once `after`
    is computed (an input of the empty inline asm): loads through it wait for it. A tiled
    pool's window whose pixel pairs are multiplied apart (looped, or more pixels than one
    straight group takes, `STRAIGHT_PIXEL_PAIRS`) reads the gathered words and the weight
    words so, each pair after the previous one's totals: else LLVM interleaves the pairs'
    products, or keeps the weight words of the first for the second, and spills (the
    CIFAR-sized net's stem and 2x2 max pool on the M7, a pixel pair at a time: 819k
    instructions with neither, 637k read through opaque pointers, 621k each pair after the
    one before)."""
    if after is None:
        return b.opaque(pointer)
    return b.emit(llvm.InlineAsmOp("", "=r,0,r", [pointer, after], [pointer.type]))


def gather_windows(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, src: View, gathered: View,
                   n: Index, x0: Index, count: int, x_offset: SSAValue | None,
                   padded: PaddedInput | None = None, pixel_at: Callable[[Index], tuple[Index, Index]] | None = None,
                   looped: bool = False, by_pixel_pairs: bool = False) -> None:
    """The windows of output pixels x0 .. x0 + count - 1 (row-major over the output plane; or
    the pixels `pixel_at(k)` = (row, column), k < count) into `gathered` ([pixel pair, tap
    pair, slot]) as pairs of taps (c, ky, kx) in the packed filter's order, an odd last tap
    paired with 0: a tap in the padding is the input zero point (the folded bias takes off
    its product; not folded, the pair less `x_offset` is 0). A window wholly inside the
    input, or any window of the `padded` copy of image n, loads its taps at constant offsets
    from its origin. `looped` (a size-first build): the taps of one input channel at a time
    (two when a channel's are odd) in a loop. `by_pixel_pairs` (straight products,
    `UNROLLED_PAIRS`), when every window is inside: two pixels' windows a loop step, each tap
    pair of the two side by side stored with one `STRD` (DS-CNN's stem on the M7: 66
    instructions a pixel, 108 a pixel pair). Over more pairs the code doubled for little: the
    int16 windows of `test_arm_dsp_kernels` on the M55 took 12 KB more."""
    _, in_c, in_h, in_w = src.shape
    _, _, k_h, k_w = op.filter_shape.get_values()
    sy, sx = op.strides.get_values()
    dy, dx = op.dilations.get_values()
    pt, pl, _, _ = op.pads.get_values()
    out_w = glow.convolution_shape(op)[3]
    zero_point = b.int_value(domain.input_offset)
    rows_inside, columns_inside = in_h - (k_h - 1) * dy, in_w - (k_w - 1) * dx  # window origins inside

    def row_major(k: Index) -> tuple[Index, Index]:
        pixel = b.add(x0, k)
        return b.div(pixel, out_w), b.remainder(pixel, out_w)

    def origin(k: Index) -> tuple[Index, Index]:
        """The row and column of pixel k's window's first tap (in the padded copy, if any)."""
        out_y, out_x = (pixel_at or row_major)(k)
        top, left = b.mul(out_y, sy), b.mul(out_x, sx)
        return (top, left) if padded is not None else (b.sub(top, pt), b.sub(left, pl))

    def window_pairs(k: Index, clamped: bool, first: Index, channels: int) -> list[SSAValue]:
        """The pairs of taps of pixel k's window in input channels first .. first + channels - 1;
        `clamped`: some taps may be outside the input (clamped loads, the zero point where
        outside), else all are inside (it or its padded copy)."""
        top, left = origin(k)

        def coordinates(start: Index, step: int, taps: int, size: int) -> list[tuple[Index, SSAValue | None]]:
            """(coordinate, clamped into the input when padded, whether it is inside) per tap."""
            found = []
            for t in range(taps):
                at = b.add(start, t * step)
                found.append((b.min(b.max(at, 0), size - 1), b.in_range(at, size)) if clamped else (at, None))
            return found

        rows, columns = coordinates(top, dy, k_h, in_h), coordinates(left, dx, k_w, in_w)
        view, prefix = (src, [n]) if padded is None else (padded.view, [])
        if not clamped and k_w % 4 == 0 and dx == 1:  # a word of four taps: two pairs as they are
            return [pair for c, ky in np.ndindex(channels, k_h) for x, _ in columns[::4]
                    for pair in pairs_of_four(b, view, [*prefix, b.add(first, c), rows[ky][0], x], x_offset)]
        levels = []
        for c, ky in np.ndindex(channels, k_h):
            y, row_inside = rows[ky]
            for kx in window_row_order(k_w, dx):
                x, column_inside = columns[kx]
                loaded = level(b, view, [*prefix, b.add(first, c), y, x])
                levels.append(b.select(b.int_and(row_inside, column_inside), loaded, zero_point)
                              if clamped else loaded)
        if len(levels) % 2:
            levels.append(b.integer(0))
        pairs = [pack_halves(b, levels[2 * i], levels[2 * i + 1]) for i in range(len(levels) // 2)]
        if x_offset is not None:
            pairs = [_intrinsic(b, "sadd16", pair, x_offset) for pair in pairs]
        return pairs

    def window(k: Index, clamped: bool) -> None:
        """Pixel k's taps into its slots."""
        def channel_pairs(first: Index, channels: int, first_pair: Index) -> None:
            for i, pair in enumerate(window_pairs(k, clamped, first, channels)):
                b.store(pair, gathered, [b.div(k, 2), b.add(first_pair, i), b.remainder(k, 2)])

        step = 1 if k_h * k_w % 2 == 0 else 2  # channels of whole pairs
        if not looped or in_c < 2 * step:
            channel_pairs(0, in_c, 0)
            return
        with b.loop(0, in_c // step) as c:
            channel_pairs(b.mul(c.index, step), step, b.mul(c.index, step * k_h * k_w // 2))
        if in_c % step:
            channel_pairs(in_c - in_c % step, in_c % step, (in_c - in_c % step) * k_h * k_w // 2)

    inside = padded is not None or not any(op.pads.get_values())
    paired = inside and by_pixel_pairs and count > 1
    if paired:  # each tap pair of two pixels side by side: one STRD
        with b.loop(0, count // 2) as q:
            both = [window_pairs(b.add(b.mul(q.index, 2), p), False, 0, in_c) for p in range(2)]
            for i, pixel_pairs in enumerate(zip(*both, strict=True)):
                for p, pair in enumerate(pixel_pairs):
                    b.store(pair, gathered, [q.index, i, p])
    with b.loop(count // 2 * 2 if paired else 0, count) as k:
        if inside:
            window(k.index, False)
        elif rows_inside <= 0 or columns_inside <= 0:
            window(k.index, True)
        else:  # most windows of a large input lie inside it: their taps need no clamping
            top, left = origin(k.index)
            interior = b.int_and(b.in_range(top, rows_inside), b.in_range(left, columns_inside))
            with b.when(interior):
                window(k.index, False)
            with b.when(b.int_xor(interior, b.constant(1, interior.type))):
                window(k.index, True)


# ----------------------------------------------------------------------------- padded copies


def zero_point_plane(b: KernelBuilder, zero_point: int | SSAValue, words: int, element=i8) -> tuple[View, SSAValue]:
    """A stack buffer of `words` words, every `element` (int8 or int16) `zero_point` (stored
    once here: copies into it write only the input's columns), and the word of them."""
    mask, copies = (0xFF, 0x01010101) if element == i8 else (0xFFFF, 0x10001)
    padding = b.int_mul(b.int_and(b.int_value(zero_point), mask), copies)
    plane = View.contiguous(b.alloca(words, i32, STACK_ALIGNMENT), (words,), element_type=i32)
    with b.loop(0, words) as i:
        b.store(padding, plane, [i.index])
    return plane, padding


def copy_row(b: KernelBuilder, source: Row, into: Row, width: int) -> None:
    """`width` elements of `source` into `into`, a word at a time (any addresses)."""
    per_word = 4 // element_bytes(source.view)
    with b.loop(0, width // per_word) as i:
        x = b.mul(i.index, per_word)
        store_word(b, load_word(b, source.view, source.at(x)), into, x)
    for x in range(width // per_word * per_word, width):
        b.store(b.load(source.view, source.at(x)), into.view, into.at(x))


PADDED_INPUT_BYTES = 2048
"""A WINDOW_PAIRS convolution whose padded input takes at most this many bytes copies it per
image onto the stack, its padding the input zero point: then every window lies inside it and
loads its taps at constant offsets, none clamped or selected (DS-CNN's 10x4 stride-2 stem,
whose borders take 65 of its 125 windows, on the M7: 332k -> 310k instructions; 296k with its
rows of four taps gathered as words, `window_row_order`)."""


@dataclasses.dataclass
class PaddedInput:
    """A copy of an input image, [C, pad top + H + pad bottom, pad left + W + pad right] of its
    elements, whose padding holds the input zero point (`copy(n)` writes image n's levels)."""

    b: KernelBuilder
    src: View
    view: View
    pads: tuple[int, int]

    def copy(self, n: Index) -> None:
        _, channels, height, width = self.src.shape
        pt, pl = self.pads
        columns = self.view.reshaped(self.view.shape, self.view.strides, pl)  # the input's columns
        with self.b.loops([channels, height]) as (c, y):
            copy_row(self.b, Row(self.src, (n, c, y)), Row(columns, (c, self.b.add(y, pt))), width)


def padded_input(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp,
                 src: View) -> PaddedInput | None:
    """The `PaddedInput` of a padded convolution whose copy fits `PADDED_INPUT_BYTES`, else None."""
    pt, pl, pb, pr = op.pads.get_values()
    _, channels, height, width = src.shape
    shape = (channels, pt + height + pb, pl + width + pr)
    if not any((pt, pl, pb, pr)) or int(np.prod(shape)) * element_bytes(src) > PADDED_INPUT_BYTES:
        return None
    words = -(-int(np.prod(shape)) * element_bytes(src) // 4)
    plane, _ = zero_point_plane(b, domain.input_offset, words, src.element_type)
    view = View.contiguous(plane.base, shape, element_type=src.element_type)
    return PaddedInput(b, src, view, (pt, pl))


# ----------------------------------------------------------------------------- depthwise


def depthwise_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view) -> None:
    """An unpooled convolution of one input channel per group (depthwise, of any channel
    multiplier, or of a one-channel input), plane by plane (`arm_dsp_layout.DepthwisePlan`).

    Each input plane (or band of its rows, `PLANE_BYTES`) is copied a word at a time into a
    stack plane whose padding holds the input zero point: a padded tap then adds the
    product the folded bias takes off (or, not folded, its pair less the offset is 0), so
    every tile is an interior one. Per output row, tiles of `DEPTHWISE_PIXELS` outputs keep
    their accumulators in registers over the kernel rows (input words to pairs, weight words
    by `LDRD`, `SMLAD`s), then one tile of the outputs left; every output channel of the
    input channel reads the same copy.

    A widened plan (int8 data, undilated rows: `arm_dsp_layout.widens_planes`) copies the
    planes as int16 (`widen_row`): the tiles load their words two at a time and multiply
    them as they are (`halfword_products`), with the weight words of each tile read through
    an opaque pointer, by `LDRD` too. A small widened plane's rows are unrolled whole in a
    speed-first build (`UNROLLED_PLANE_TILES`)."""
    dest, src, packed, bias = view(op.dest), view(op.input), view(op.filter), view(op.bias)
    n_size, channels, out_h, out_w = dest.shape
    _, in_c, in_h, in_w = src.shape
    filter_shape = op.filter_shape.get_values()
    k_h = filter_shape[2]
    (sy, sx), (dy, _), pads = op.strides.get_values(), op.dilations.get_values(), op.pads.get_values()
    widened = widened_planes(op)
    plan = convolution_depthwise_plan(src.shape, filter_shape, (sy, sx), pads, op.dilations.get_values(), widened)

    def rows_read(outputs: int) -> int:
        return (outputs - 1) * sy + (k_h - 1) * dy + 1

    row_bytes = 4 * plan.row_words if widened else plan.padded_width * element_bytes(src)
    band = next((rows for rows in range(out_h, 0, -1) if rows_read(rows) * row_bytes <= PLANE_BYTES), 1)
    bands = -(-out_h // band)
    words = -(-rows_read(band) * row_bytes // 4)
    x_offset = None if op.folded_input_offset is not None else offset_pair(b, domain.input_offset)
    unrolled = unrolls_plane(plan, out_h, out_w, bands, op.loop_pairs is None)
    filter_words = k_h * packed.shape[2]  # a channel's packed weight words
    if widened:  # the offset not folded, the copy subtracts it: the padding is 0 (unrolled: the filter after it)
        plane, padding = zero_point_plane(b, 0 if x_offset is not None else domain.input_offset,
                                          words + (filter_words if unrolled else 0), i16)
        plane = View.contiguous(plane.base, (rows_read(band), plan.row_words), element_type=i32)
        columns = plane
    else:
        plane, padding = zero_point_plane(b, domain.input_offset, words, src.element_type)
        plane = View.contiguous(plane.base, (words * 4 // element_bytes(src) // plan.padded_width, plan.padded_width),
                                element_type=src.element_type)
        columns = plane.reshaped(plane.shape, plane.strides, plan.pad_left)  # the input's columns of the plane

    def copy(source: Row, r: Index) -> None:
        if widened:
            widen_row(b, domain, source, plane, r, plan.pad_left, in_w, x_offset)
        else:
            copy_row(b, source, Row(columns, (r,)), in_w)

    def copy_band(n: Index, c: Index, top: Index) -> None:
        """Input rows top .. top + rows_read(band) - 1 of plane (n, c) into the stack plane
        (a row outside the input: padding, when bands of the plane take turns in it)."""
        if bands == 1 and widened:  # rows pads[0] .. pads[0] + in_h - 1 of the plane, the padding never written
            with b.loop(0, min(in_h, rows_read(band) - pads[0])) as in_y:
                copy(Row(src, (n, c, in_y.index)), b.add(in_y.index, pads[0]))
            return
        with b.loop(0, rows_read(band)) as r:
            in_y = b.add(top, r.index)
            with b.when(b.in_range(in_y, in_h)):
                copy(Row(src, (n, c, in_y)), r.index)
            if bands > 1:
                with b.when(b.compare("uge", in_y, in_h)):
                    if widened:
                        fill_row(b, Row(plane, (r.index,)), plan.row_words, lambda x: padding)
                    else:
                        fill_row(b, Row(columns, (r.index,)), in_w, lambda x: b.truncate(padding, src.element_type))

    def padding_rows(y: int) -> tuple[int, ...]:
        """The kernel rows of (unrolled) output row y wholly in the plane's top or bottom padding."""
        return tuple(ky for ky in range(k_h) if not 0 <= y * sy + ky * dy - pads[0] < in_h)

    def tile(n: Index, c: Index, y: Index, plane_y: Index, start: SSAValue | list[SSAValue], index: int, x0: Index,
             filter_rows: View | None = None, skipped: Sequence[int] = ()) -> None:
        """The tile of tiling `index` from output column x0 of output row y (stack plane row
        `plane_y` under its kernel row 0), its sums from `start` (or each output's), the
        kernel rows `skipped` left out (their products in `start`)."""
        tiling = plan.tilings[index]
        totals = list(start) if isinstance(start, list) else [start] * len(tiling.products)
        if widened:
            group = b.div(b.mul(x0, sx), 4)  # of four columns, three words
            if unrolled:  # at constant offsets from the channel's copy of the plane's address
                under = channel_plane.reshaped(plane.shape, plane.strides, plane_y * plan.row_words + 3 * group)
            else:
                under = View.contiguous(b.opaque(b.element(plane, [plane_y, b.mul(group, 3)])), plane.shape,
                                        element_type=i32)  # the tile's words from its kernel row 0
        kept = [ky for ky in range(k_h) if ky not in skipped]
        for ky in kept:
            if widened:
                weights = slotted_words(b, filter_rows, [0, ky], plan.word_offsets[index], len(tiling.weight_words))
                words = slotted_words(b, under, [ky * dy], tiling.first_word, tiling.words - tiling.first_word)
                words = [None] * tiling.first_word + words
                totals = halfword_products(b, tiling, words, weights, totals)
                if ky == kept[0]:  # the next kernel rows' loads wait for the first's products
                    after(b, totals)
                continue
            pairs = tile_pairs(b, Row(plane, (b.add(plane_y, ky * dy),)), b.mul(x0, sx), tiling, x_offset,
                               derive=op.loop_pairs is None)
            weights = load_words(b, packed, [c, ky, plan.word_offsets[index], 0], len(tiling.weight_words))
            totals = tile_products(b, tiling, pairs, 1, totals, lambda j: weights)
        store_tile(b, domain, [c], [Row(dest, (n, c, y))], totals, [b.add(x0, p) for p in range(len(totals))])

    multiplier = channels // in_c  # output channels of each input channel
    last = len(plan.tilings) - 1
    with b.loops([n_size, in_c, bands]) as (n, g, band_index):
        y0 = b.mul(band_index, band)
        copy_band(n, g, b.sub(b.mul(y0, sy), pads[0]))
        with b.loops([multiplier]) as (j,):
            c = b.add(b.mul(g, multiplier), j)
            start = domain.bias(bias, c)
            filter_rows, last_start = None, start
            if widened:  # channel c's weight words, read in each tile
                filter_rows = View.contiguous(b.opaque(b.element(packed, [c, 0, 0, 0])), packed.shape,
                                              element_type=packed.element_type)
                if plan.tilings[-1].dropped and x_offset is None:
                    last_start = padding_products(b, domain, filter_rows, plan.tilings[-1], plan.word_offsets[-1],
                                                  k_h, start)
            edge_starts: dict[tuple[tuple[int, ...], int], list[SSAValue]] = {}

            def make_edge_starts(y: int, filter_rows: View) -> None:
                """Unrolled output row y's tiles leave out its kernel rows in the top or bottom
                padding: the starts of each tiling's outputs, those rows' products in
                (`edge_starts`). Not where the offset is not folded (the padding is 0: nothing to
                leave out) nor in rows of fewer than four outputs (MobileNetV2's 3 x 3 planes:
                the starts cost more than the products they save)."""
                skipped = padding_rows(y)
                if unrolled and x_offset is None and skipped and out_w >= DEPTHWISE_PIXELS:
                    for index in {0 if plan.tiles else last, last}:
                        if (skipped, index) not in edge_starts:
                            edge_starts[skipped, index] = padding_products(
                                b, domain, filter_rows, plan.tilings[index], plan.word_offsets[index], k_h, start,
                                skipped, (plan.tilings[-1], plan.word_offsets[-1]))

            for y in range(out_h // 2 if unrolled else 0):  # the top rows' starts from the filter, before its copy
                make_edge_starts(y, filter_rows)
            if unrolled:  # the plane and a copy of the channel's filter after it, from one opaque pointer
                channel_plane = View.contiguous(b.opaque(plane.base), plane.shape, element_type=i32)
                filter_rows = copy_filter(b, filter_rows, channel_plane.base, words)

            def starts_of(y: Index, index: int, otherwise: SSAValue) -> tuple[tuple[int, ...], SSAValue]:
                """The kernel rows tiling `index` of output row y leaves out, and its outputs'
                starts (`edge_starts`; else none and `otherwise`)."""
                key = (padding_rows(y), index) if unrolled else None
                return (key[0], edge_starts[key]) if key in edge_starts else ((), otherwise)

            def row(y: Index) -> None:
                """Output row y of the band: its tiles of four, then the last tile."""
                plane_y = b.mul(y, sy)
                if unrolled:  # the bottom rows' from the copy, right before them (made first: held in registers)
                    make_edge_starts(y, filter_rows)
                if plan.tiles and unrolled:
                    skipped, tile_start = starts_of(y, 0, start)
                    for t in range(plan.tiles):
                        tile(n, c, b.add(y0, y), plane_y, tile_start, 0, t * DEPTHWISE_PIXELS, filter_rows, skipped)
                elif plan.tiles:
                    with b.loop(0, plan.tiles) as t:
                        tile(n, c, b.add(y0, y), plane_y, start, 0, b.mul(t.index, DEPTHWISE_PIXELS), filter_rows)
                if plan.tiles * DEPTHWISE_PIXELS < out_w:
                    skipped, tile_start = starts_of(y, last, last_start)
                    tile(n, c, b.add(y0, y), plane_y, tile_start, last, plan.tiles * DEPTHWISE_PIXELS, filter_rows,
                         skipped)

            if unrolled:
                for y in range(out_h):
                    row(y)
            else:
                with b.loop(0, b.min(band, b.sub(out_h, y0))) as y:
                    row(y.index)


def copy_filter(b: KernelBuilder, filter_rows: View, base: SSAValue, at: int) -> View:
    """A channel's widened filter (`filter_rows`, [O, KH, slotted words, 2] from the channel's)
    copied to word `at` of the buffer at `base`, the two used words of each slot (`slot_word`)
    by one `LDRD` and one `STRD`; the view of the copy, shaped as `filter_rows`."""
    k_h, words = filter_rows.shape[1:3]
    source = View.contiguous(filter_rows.base, (k_h, words), element_type=i32)
    into = View.contiguous(base, (k_h, words), at, element_type=i32)
    for ky, first in itertools.product(range(k_h), range(0, 2 * words // 3, 2)):  # a slot's first word
        pair = b.emit(llvm.LoadOp(b.element(source, [ky, slot_word(first)]), i64, alignment=4))
        b.emit(llvm.StoreOp(pair, b.element(into, [ky, slot_word(first)]), alignment=4))
    return View.contiguous(base, filter_rows.shape, at * 4 // element_bytes(filter_rows), filter_rows.element_type)


def unrolls_plane(plan: DepthwisePlan, out_h: int, out_w: int, bands: int, speed_first: bool) -> bool:
    """Whether a depthwise plane's rows are unrolled whole (`UNROLLED_PLANE_TILES`): a
    widened plane copied whole, of at most that many tiles, in a speed-first build."""
    tiles_a_row = plan.tiles + (plan.tiles * DEPTHWISE_PIXELS < out_w)
    return plan.widened and speed_first and bands == 1 and out_h * tiles_a_row <= UNROLLED_PLANE_TILES


def widen_row(b: KernelBuilder, domain: ArithmeticDomain, source: Row, plane: View, r: Index, first_column: int,
              width: int, x_offset: SSAValue | None) -> None:
    """`width` int8 elements of `source` as int16 into row r of a widened plane ([rows, row
    words] of i32: word i of a row at `slot_word(i)`) from its even column `first_column`,
    less the input offset when `x_offset` (its pair) is given: each run of four from one
    word as the pairs (x0, x1) and (x2, x3) (`SXTB16` twice, `PKHBT`, `PKHTB`), stored as a
    word each; the rest one by one."""
    halves = View.contiguous(plane.base, (plane.shape[0], 2 * plane.shape[1]), element_type=i16)
    with b.loop(0, width // 4) as i:
        levels = load_word(b, source.view, source.at(b.mul(i.index, 4)))
        even, odd = input_pairs(b, levels, x_offset)  # (x0, x2), (x1, x3)
        for half, pair in enumerate((pack_halves(b, even, odd), high_halves(b, even, odd))):
            word = b.add(b.mul(i.index, 2), first_column // 2 + half)  # of the row, at slot_word(word)
            b.store(pair, plane, [r, b.add(word, b.div(word, 2))])
    for x in range(width // 4 * 4, width):
        value = level(b, source.view, source.at(x))
        if x_offset is not None:
            value = b.int_sub(value, b.int_value(domain.input_offset))
        column = first_column + x
        b.store(b.truncate(value, i16), halves, [r, 2 * slot_word(column // 2) + column % 2])


def padding_products(b: KernelBuilder, domain: ArithmeticDomain, filter_rows: View, tiling: HalfwordTiling,
                     word_offset: int, k_h: int, start: SSAValue, skipped: Sequence[int] = (),
                     whole_rows: tuple[HalfwordTiling, int] | None = None) -> list[SSAValue]:
    """Where each output of `tiling` starts its sum: `start` plus the products its left-out
    taps would add, all of them in the padding (the input zero point): its dropped taps
    (`HalfwordTiling.dropped`, in the left padding) in each kernel row, and every tap of the
    kernel rows `skipped` (wholly in the top or bottom padding of an unrolled plane); the
    zero point times their weights in the channel's `filter_rows` (the skipped rows' read
    where `whole_rows`, a tiling and its word offset, holds them: the same for every tiling)."""
    def weight(ky: int, tap: int, tiling: HalfwordTiling = tiling, word_offset: int = word_offset) -> SSAValue:
        word, half = tiling.tap_position(tap)
        return level(b, filter_rows, [0, ky, slot_word(word_offset + word), half])

    whole_tiling, whole_offset = whole_rows or (tiling, word_offset)
    row_weights = [weight(ky, tap, whole_tiling, whole_offset) for ky in skipped for tap in tiling_taps(whole_tiling)]
    rows_total = [functools.reduce(b.int_add, row_weights)] if row_weights else []  # shared by every output
    starts = []
    for p in range(len(tiling.products)):
        weights = rows_total + [weight(ky, tap) for ky in range(k_h) if ky not in skipped
                                for tap in (tiling.dropped[p] if tiling.dropped else ())]
        if not weights or is_zero(domain.input_offset):
            starts.append(start)
            continue
        total = functools.reduce(b.int_add, weights)
        starts.append(b.int_add(start, b.int_mul(total, b.int_value(domain.input_offset))))
    return starts


def tiling_taps(tiling: HalfwordTiling) -> list[int]:
    """The taps of a kernel row of `tiling` (each in one of its weight words)."""
    return sorted({tap for word in tiling.weight_words for tap in word if tap is not None})


def slotted_words(b: KernelBuilder, view: View, prefix: Sequence[Index], first: int, count: int) -> list[SSAValue]:
    """Words first .. first + count - 1 of `view[*prefix]` (i32 words, or int16 pairs) laid out
    by `slot_word`: two at a time (one `LDRD`) where they lie side by side."""
    pairs = view.element_type != i32
    words, word = [], first
    while word < first + count:
        run = 2 if word + 1 < first + count and slot_word(word + 1) == slot_word(word) + 1 else 1
        words += load_words(b, view, [*prefix, slot_word(word), 0] if pairs else [*prefix, slot_word(word)], run)
        word += run
    return words


HALF_PRODUCTS = {(0, 0): "smlabb", (0, 1): "smlabt", (1, 0): "smlatb", (1, 1): "smlatt"}
"""The DSP extension's one-product multiply-accumulates by (input half, weight half): 0 the
low (bottom) half, 1 the high (top)."""


def halfword_products(b: KernelBuilder, tiling: HalfwordTiling, words: list[SSAValue], weights: list[SSAValue],
                      totals: list[SSAValue]) -> list[SSAValue]:
    """`totals` (one per output of the tile) plus the products of one kernel row of int16
    `words` (`HalfwordTiling`): a word's two taps by `SMLAD`, a tap alone by `SMLA<x><y>`."""
    totals = list(totals)
    for p, products in enumerate(tiling.products):
        for word, weight, halves in products:
            totals[p] = smlad(b, words[word], weights[weight], totals[p]) if halves is None else \
                _intrinsic(b, HALF_PRODUCTS[halves], words[word], weights[weight], totals[p])
    return totals


def store_word(b: KernelBuilder, word: SSAValue, into: Row, x: Index) -> None:
    """The i32 `word` as the four bytes of `into` from column x (any address)."""
    address = b.emit(llvm.GEPOp(b.element(into.view, into.at(x)), [0], i32, inbounds=True))  # an i32 pointer
    b.emit(llvm.StoreOp(word, address, alignment=1))


# ----------------------------------------------------------------------------- fully connected


def emit_fully_connected(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.FullyConnectedOp, view) -> None:
    """Per input row, `FC_BLOCKS` outputs at a time: each run of four inputs becomes two
    pairs shared by the block (`pairs_of_four`), each weight word two pairs; a tail of fewer
    than four products is added one by one. A row of at most `FC_GATHER_BYTES` / 2 inputs,
    for more than `FC_GATHER_BLOCKS` blocks, has its pairs made once, into a stack buffer
    (`gathered_row_pairs`), and read back two words at a time (one `LDRD`) by every block."""
    dest, src, weights, bias = view(op.dest), view(op.input), view(op.weights), view(op.bias)
    rows, columns = dest.shape
    depth = src.shape[1]
    weight_offset = domain.weight_offset
    folded = op.folded_input_offset is not None
    # Folded: sum x * (w - w_offset) = sum x * w - w_offset * sum x, the input sum once per row.
    x_offset = None if folded else offset_pair(b, domain.input_offset)
    w_offset = None if folded else offset_pair(b, weight_offset)
    words, tail = depth // 4, range(depth // 4 * 4, depth)
    block = next(size for size in FC_BLOCKS if columns % size == 0)
    gathered = View.contiguous(b.alloca(2 * words, i32, STACK_ALIGNMENT), (words, 2), element_type=i32) \
        if words and 2 * depth <= FC_GATHER_BYTES and columns // block > FC_GATHER_BLOCKS else None
    with b.loop(0, rows) as m:
        correction = weight_offset_correction(b, domain, op, src, m.index)
        if gathered is not None:
            gathered_row_pairs(b, src, m.index, x_offset, gathered)
        with b.loop(0, columns // block) as n_block:
            outputs = [b.add(b.mul(n_block.index, block), j) for j in range(block)]
            starts = [start(b, domain, bias, n, correction) for n in outputs]

            def words_at(totals: list[SSAValue], word: Index) -> list[SSAValue]:
                """The products of the run of four inputs `word` at each output."""
                column = b.mul(word, 4)
                if gathered is None:
                    inputs = pairs_of_four(b, src, [m.index, column], x_offset)
                else:
                    inputs = load_words(b, gathered, [word, 0], 2)
                for j, n in enumerate(outputs):
                    for pair, weight in zip(inputs, input_pairs(b, load_word(b, weights, [n, column]), w_offset)):
                        totals[j] = smlad(b, pair, weight, totals[j])
                return totals

            with b.loop(0, words, carried=starts) as k:
                k.next(*words_at(list(k.carried), k.index))
            totals = k.results
            for n, total in zip(outputs, totals):
                for column in tail:
                    if folded:
                        product = b.int_mul(level(b, src, [m.index, column]), level(b, weights, [n, column]))
                        total = b.int_add(total, product)
                    else:
                        total = domain.multiply_accumulate(total, domain.input(src, [m.index, column]),
                                                           domain.weight(weights, [n, column]))
                b.store(domain.output(n, dest.element_type)(total), dest, [m.index, n])


def gathered_row_pairs(b: KernelBuilder, src: View, m: Index, x_offset: SSAValue | None, gathered: View) -> None:
    """The pairs of each run of four inputs of row m (`pairs_of_four`) into `gathered` [words, 2]."""
    with b.loop(0, gathered.shape[0]) as word:
        pairs = pairs_of_four(b, src, [m, b.mul(word.index, 4)], x_offset)
        for half, pair in enumerate(pairs):
            b.store(pair, gathered, [word.index, half])


def weight_offset_correction(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.FullyConnectedOp, src: View,
                              m: Index) -> SSAValue | None:
    """With the input offset folded, sum x * (w - w_offset) = sum x * w - w_offset * sum x:
    `w_offset * sum x` of input row m, once per row (None when there is nothing to subtract)."""
    if op.folded_input_offset is None or is_zero(domain.weight_offset):
        return None
    with b.loop(0, src.shape[1], carried=[b.integer(0)]) as k:
        k.next(b.int_add(k.carried[0], level(b, src, [m, k.index])))
    return b.int_mul(k.results[0], domain.weight_offset)


def start(b: KernelBuilder, domain: ArithmeticDomain, bias: View, n: Index, correction: SSAValue | None) -> SSAValue:
    """Where output n's sum starts: its bias, less the row's weight-offset correction."""
    start = domain.bias(bias, n)
    return start if correction is None else b.int_sub(start, correction)


def _halfword(b: KernelBuilder, view: View, indices: Sequence[Index]) -> SSAValue:
    """The two bytes at `view[indices]` as the low half of an i32 (high half zero)."""
    return b.emit(llvm.ZExtOp(b.emit(llvm.LoadOp(b.element(view, indices), i16, alignment=1)), i32))


def element_bytes(view: View) -> int:
    """The bytes of one element of an int8 or int16 view."""
    return view.element_type.width.data // 8


def level(b: KernelBuilder, view: View, indices: Sequence[Index]) -> SSAValue:
    """An int8 (int16) level as it is, widened to i32."""
    return b.sign_extend(b.load(view, indices))
