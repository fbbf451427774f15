"""Row functions of the shared convolution skeleton (`loop_skeletons.emit_convolution`) on the
DSP extension: `convolution_rows` (a filter row at least two taps wide, tiles of `TILE_PIXELS`
outputs on pairs) and `pointwise_rows` (an unpadded, ungrouped 1x1 convolution on pairs of
input channels)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

from xdsl.dialects.builtin import i16
from xdsl.ir import SSAValue

from glowmlir.backends.arm_dsp.instructions import (
    input_pairs,
    intrinsic,
    load_word,
    load_words,
    offset_pair,
    pack_halves_of,
    pairs_of_four,
    pixel_channel_pairs,
    smlad,
    weight_pairs,
)
from glowmlir.backends.arm_dsp.layout import (
    QUAD_CHANNELS,
    TILE_PIXELS,
    PairTiling,
    convolution_row_plan,
)
from glowmlir.dialects import glowll
from glowmlir.lowering.int8_sums import level
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View, is_zero
from glowmlir.lowering.loop_skeletons import (
    ArithmeticDomain,
    Row,
    kernel_rows_inside,
)

HOISTED_WEIGHT_WORDS = 12
"""A convolution of one input channel per group has loop-invariant weight words across its
tiles; LLVM hoists them all out of the tile loop, and more than this many are spilled and
reloaded along with the input pairs they push out (LeNet's first convolution, 30 words: 662k
instructions on the M7 hoisted, 494k loaded per tile). Over this count the tile loop loads
them through an opaque pointer (`KernelBuilder.opaque`)."""


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
               totals: list[SSAValue], xs: list[Index], steps: list | None = None) -> None:
    """Each accumulator of a tile (`totals[p * block + j]`: output column xs[p], channel j)
    through the domain's output step (`steps[j]` where they are set up already) into its row."""
    for j, output in enumerate(outputs):
        stored = domain.output(channels[j], output.view.element_type) if steps is None else steps[j]
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
                totals[p * block + j] = intrinsic(b, "smladx", value, weights[word], total) if swapped else \
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
    CHANNEL_PAIRS filter (`arm_dsp_layout.pack_filter`), two at a time by one `LDRD`, or of
    its int8 words (`weight_pairs`)."""
    return weight_pairs(b, packed, block_weight_index(b, packed, o_block, pair), packed.shape[3])


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
