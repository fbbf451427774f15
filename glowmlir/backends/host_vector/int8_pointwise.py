"""The int8 1x1 convolution on a host's vector unit, two input channels a product
(`microkernel = "vector-pointwise-int8"`).

An unpooled, unpadded 1x1 convolution of stride 1 sees each channel's pixels as one row
(`vector_columns.one_row_per_channel`): a tile is `vectors` x `lanes` adjacent pixels of a
block of output channels, every accumulator a vector of int32 lanes. Over the input channels
*in pairs*, a tile loads each channel's vector of int8 levels once, interleaves the two and
sign-extends them to int16 (the selection pass folded the input zero point into the bias,
`folded_input_offset`; where that bias would leave int32, the zero point is subtracted
here): each int32 lane holds the pair (x[c], x[c + 1]) of its pixel as two int16 halves.
A layer of several blocks of channels has these pairs made once a run of pixels for all its
blocks (`widened_pairs`: a stack array of words the tiles load as they are).
The filter is packed as int32 words (`pair_words`), each the pair (w[o, c], w[o, c + 1])
of levels less their zero point, so one `vpmaddwd` (`int8_depthwise.PMADDWD`, AVX2 /
AVX-512BW / SSE2) of the pixels and the broadcast word is both products of the pair summed,
per lane, and its add the accumulation: twice the products of `vector-depthwise-int8`'s
`vpmaddwd`, whose weight's high half is 0. An odd last channel is a pair whose second
weight is 0 (its input's second half is the input zero point). Both factors lie in [-255,
255], so the pair sum fits int32 exactly; the sums are the generic kernel's modulo 2^32, and
the output step is `HostInt8Columns`'s (the channel's multiplier and shift in every lane,
the fused relu/clip in its clamp).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, VectorType, i8, i16, i32
from xdsl.ir import SSAValue

from glowmlir.backends.host_vector.int8_byte_products import BytePairColumns, PreparedBytes, prepared_bytes
from glowmlir.backends.host_vector.int8_depthwise import NEON_BYTES, PairColumns, products_of
from glowmlir.backends.host_vector.table_lookup import neon_tables_in_registers
from glowmlir.dialects import glowll
from glowmlir.lowering import vector_columns
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import ArithmeticDomain, Row
from glowmlir.lowering.vector_layout import tile_vectors

BROADCAST_WORDS_BYTES = 8192
"""The most stack a block of channels' broadcast filter words take (`broadcast_words`): a
quarter of a host core's 32 KB L1 data cache."""
BROADCAST_WORDS_PIXELS = 4
"""The fewest vectors of pixels a block's words are broadcast once for (`broadcast_words`): a
squeeze-excitation 1x1 on one pixel reads each word once (filling the array made them
slower: 9 -> 14 µs on the PP-OCR-cls-style net)."""


WIDENED_BLOCKS = 2
"""The fewest blocks of output channels whose input is widened once a run (`widened_pairs`)
rather than by each block's tiles."""
MOST_WIDENED_BYTES = 131072
"""The most stack a run's widened input takes (`widened_pairs`): runs of pixels keep it within
half of `vector_columns.run_bytes` (64 KB on a 512 KB L2); a target of unknown cache has no
runs, and a larger plane's tiles widen their own pairs."""

STEP_LOOP_PAIRS = 16
"""The fewest pairs of input channels whose widening (`widened_pairs`) is a loop of pairs around
a loop of steps, which LLVM unrolls (no address arithmetic a step, ~0.2-0.7 KB of code a
layer), rather than one loop over the steps of all pairs (a division of its index a step)."""


@dataclass(frozen=True)
class WidenedPairs:
    """A run's input as the tiles multiply it (`widened_pairs`): int32 words [ceil(C / 2),
    whole vectors of pixels], word (p, x) the pair (x[2p, x], x[2p + 1, x]) as int16 halves
    less the input zero point where it is not folded (0 past the last channel)."""
    words: View


def widened_pairs(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, n: Index, src: View,
                  width: int) -> View | WidenedPairs:
    """The run `src` of `width` pixels interleaved and widened once for all the blocks of
    output channels (their tiles then load one vector of words a pair of channels, not two
    vectors of levels, a shuffle and a sign extension: 2 of a 10-channel block's 22 vector
    operations a pair), into a stack array of 2 x C x `width` bytes; `src` as it is for
    runs shorter than `BROADCAST_WORDS_PIXELS` vectors (a squeeze-excitation 1x1) or whose
    words would exceed `MOST_WIDENED_BYTES`. Two whole vectors a step (`two_vectors`: per
    16 pixels of a pair on AVX2 two 16-byte loads, `vpunpcklbw`, `vpunpckhbw`, two
    `vpmovsxbw`, two stores); from `STEP_LOOP_PAIRS` pairs in a loop of pairs around one of
    steps (LLVM unrolls the inner one: no address arithmetic a step), fewer in one loop over
    the steps of all pairs (each step's pair and column divided out of its index: less code).
    On Zen 3 (perf samples) 200 -> 32 on 2x96's widening took 12% of its time, now 7% (one
    vector a step in one loop: 5 vector and ~7 scalar instructions a vector; 16 pixels a
    step in one loop: 10%)."""
    columns = PairColumns(b, domain, op)
    lanes, in_c = columns.lanes, src.shape[1]
    pairs, padded = -(-in_c // 2), -(-width // lanes) * lanes
    if width < BROADCAST_WORDS_PIXELS * lanes or pairs * padded * 4 > MOST_WIDENED_BYTES:
        return src
    words = View.contiguous(b.alloca(pairs * padded, i32, alignment=32), (pairs, padded), element_type=i32)

    def vector(pair: Index, first: Index, count: int, second: bool) -> None:
        loaded = None if count == lanes else [lane < count for lane in range(lanes)]
        pixels = columns.pair(src, n, b.mul(pair, 2), first, loaded, second)
        vector_columns.store_vector(b, b.bitcast(pixels, columns.vector), words, [pair, first])

    def two_vectors(pair: Index, first: Index) -> None:
        """Two whole vectors of the pair from one load of 2 x lanes levels of each channel:
        their low and high halves interleaved (`vpunpcklbw`, `vpunpckhbw`), each widened."""
        levels = [vector_columns.load_vector(b, src, [n, b.add(b.mul(pair, 2), c), 0, first], 2 * lanes)
                  for c in (0, 1)]
        for half in (0, 1):
            order = [half * lanes + k // 2 + (k % 2) * 2 * lanes for k in range(2 * lanes)]  # (a[i], b[i]) of the half
            order = DenseArrayBase.from_list(i32, order)
            halves = b.emit(llvm.ShuffleVectorOp(*levels, order, VectorType(i8, [2 * lanes])))
            vector_columns.store_vector(b, b.bitcast(columns.centred_pairs(halves), columns.vector), words,
                                        [pair, b.add(first, half * lanes)])

    whole, rest = divmod(width, lanes)
    doubled = whole // 2
    if in_c // 2 >= STEP_LOOP_PAIRS:
        with b.loops([in_c // 2, doubled]) as (pair, at):
            two_vectors(pair, b.mul(at, 2 * lanes))
    else:
        with b.loop(0, in_c // 2 * doubled) as at:  # one loop over the steps of all pairs: LLVM unrolls it less
            two_vectors(b.div(at.index, doubled), b.mul(b.remainder(at.index, doubled), 2 * lanes))
    if whole % 2:
        with b.loop(0, in_c // 2) as pair:
            vector(pair.index, (whole - 1) * lanes, lanes, True)
    if rest:
        with b.loop(0, in_c // 2) as pair:
            vector(pair.index, whole * lanes, rest, True)
    if in_c % 2:
        vector_columns.in_runs(b, width, lanes, lambda first, count: vector(in_c // 2, first, count, False))
    return WidenedPairs(words)


def halves_as_words(levels: np.ndarray) -> np.ndarray:
    """Levels (|w| < 2^15) as int32 words of two adjacent ones along the last axis, whose
    length is halved (rounded up): word k holds levels[..., 2k] in its low half and
    levels[..., 2k + 1] (0 past the last) in its high half, as `vpmaddwd` reads a pair."""
    padded = np.zeros((*levels.shape[:-1], levels.shape[-1] + levels.shape[-1] % 2), np.int64)
    padded[..., :levels.shape[-1]] = levels
    low, high = padded[..., 0::2] & 0xFFFF, padded[..., 1::2] & 0xFFFF
    return ((high << 16) | low).astype(np.uint32).view(np.int32)


def pair_words(centred: np.ndarray, block: int) -> np.ndarray:
    """A 1x1 filter's levels less their zero point, [O, C] (|w| < 2^15), as int32 words
    [O / block, ceil(C / 2), 1, 1, block]: word (o, c) holds w[o, 2c] in its low half and
    w[o, 2c + 1] (0 past the last channel) in its high half (`halves_as_words`)."""
    out_c = centred.shape[0]
    words = halves_as_words(centred)
    return np.ascontiguousarray(words.reshape(out_c // block, block, -1).transpose(0, 2, 1))[:, :, None, None, :]


def pair_words_shape(filter_shape, block: int) -> tuple[int, ...]:
    out_c, in_c = filter_shape[:2]
    return out_c // block, -(-in_c // 2), 1, 1, block


def pointwise_rows(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, src: View | WidenedPairs,
                   packed: View,
                   bias: View, n: Index, channels: list[Index], y: Index, outputs: list[Row], width: int,
                   accumulators: None = None, residual: View | None = None, in_channels: int | None = None,
                   broadcast: View | None = None) -> None:
    """The pixels [0, width) of the output channels `channels` (one block) into `outputs`
    (`loop_skeletons.convolution_rows`' contract, each channel's pixels one row), in tiles
    of vectors of pixels, the input channels two at a time (their pairs loaded as words where
    `src` is the run's `WidenedPairs`); `in_channels` (default the filter's) the channels of
    `src` (`int8_im2col`: an output row's taps); `broadcast` the block's words already
    broadcast (`broadcast_words`, filled once for all the rows of a layer of one block)."""
    columns = PairColumns(b, domain, op)
    lanes, block = columns.lanes, len(channels)
    in_c = op.filter_shape.get_values()[1] if in_channels is None else in_channels
    o_block = b.div(channels[0], block) if block > 1 else channels[0]
    vectors = tile_vectors(block, columns.accumulators)
    fused = op.bias_in_step is not None  # the sums start at 0, the bias in the output step's single
    if fused:
        columns.step_offsets = bias
    words = broadcast if broadcast is not None else broadcast_words(b, columns, packed, o_block, block) \
        if (vectors == 1 or columns.split) and width >= BROADCAST_WORDS_PIXELS * lanes else None

    def tile(x0: Index, vectors: int, edge: bool = False) -> None:
        counts = [min(lanes, width - x0 - v * lanes) if edge else lanes for v in range(vectors)]
        stored = [None if count == lanes else [lane < count for lane in range(lanes)] for count in counts]

        def pair_vector(pair: Index, v: int, second: bool) -> SSAValue:
            if isinstance(src, WidenedPairs):
                return b.bitcast(vector_columns.load_vector(b, src.words, [pair, b.add(x0, v * lanes)], lanes),
                                 VectorType(i16, [2 * lanes]))
            return columns.pair(src, n, b.mul(pair, 2), b.add(x0, v * lanes), stored[v], second)

        def step(sums: list[SSAValue], pair: Index, second: bool) -> list[SSAValue]:
            inputs = [pair_vector(pair, v, second) for v in range(vectors)]
            for j in range(block):
                word = columns.word(packed, [o_block, pair, 0, 0, j]) if words is None else b.bitcast(
                    vector_columns.load_vector(b, words, [pair, j, 0], lanes), VectorType(i16, [2 * lanes]))
                for v, pixels in enumerate(inputs):
                    sums[v * block + j] = columns.pair_multiply_accumulate(sums[v * block + j], pixels, word)
            return sums

        starts = [columns.zero_sums()] * (vectors * block) if fused \
            else vector_columns.tile_starts(columns, bias, channels, vectors, None)
        with b.loop(0, in_c // 2, carried=starts) as c:
            c.next(*step(list(c.carried), c.index, True))
        sums = step(list(c.results), in_c // 2, False) if in_c % 2 else list(c.results)
        vector_columns.store_tile(b, columns, channels, sums,
                                  lambda v, j: (outputs[j].view, outputs[j].at(b.add(x0, v * lanes))), stored)

    vector_columns.row_vectors(b, width, lanes, vectors, (0, width), tile)


def broadcast_words(b: KernelBuilder, columns: PairColumns, packed: View, o_block: Index, block: int,
                    lanes: int | None = None) -> View | None:
    """The block's filter words (`pair_words`) each broadcast over a vector, in a stack array
    [pairs, block, lanes] filled once a block of channels, so that every tile's `vpmaddwd`
    reads its word's vector as its memory operand (a load, not a broadcast: on AVX2 a
    broadcast from memory takes a shuffle unit, as many as the products' adds); None where
    the array would exceed `BROADCAST_WORDS_BYTES` (the words broadcast where used). On x86
    only for tiles of one vector of pixels: a tile of two broadcasts each word once into a
    register for both (a vector load of the array for each of its products made 32 -> 200
    slower: 22.2 -> 23.0 µs on Zen 3). On NEON (split sums) for every tile: a broadcast
    load (`ld1r`) has no offset and took an address computation each, and it filled half a
    register, the high products an `ext` more (32 -> 200 on 2x96: 655,599 -> 512,918
    instructions under qemu-aarch64, code 2,232 -> 2,328 B). `lanes`: the vector's int32 lanes
    (default the tile's)."""
    pairs, lanes = packed.shape[1], lanes or columns.lanes
    if pairs * block * lanes * 4 > BROADCAST_WORDS_BYTES:
        return None
    base = b.alloca(pairs * block * lanes, i32, alignment=32)
    blocks = packed.reshaped((packed.shape[0], pairs * block), (packed.strides[0], packed.strides[4]))
    assert packed.strides[1] == block * packed.strides[4], "a block's words lie one after the other"
    with b.loop(0, pairs * block) as word:  # one loop over the block's words: no copy of it per channel
        vector_columns.store_vector(b, b.splat(b.load(blocks, [o_block, word.index]), VectorType(i32, [lanes])),
                                    View.contiguous(base, (pairs * block, lanes), element_type=i32), [word.index, 0])
    return View.contiguous(base, (pairs, block, lanes), element_type=i32)


def byte_pointwise_rows(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp,
                        src: View | PreparedBytes, packed: View, bias: View, n: Index, channels: list[Index], y: Index,
                        outputs: list[Row], width: int, accumulators: None = None,
                        residual: View | None = None, in_channels: int | None = None) -> None:
    """`pointwise_rows` on int8 products (`int8_byte_products`): the pixels [0, width) of the
    output channels `channels` (one block) into `outputs`, in tiles of vectors of
    `int8_depthwise.NEON_BYTE_LANES` pixels, the input channels four at a time (a last two or
    one after them), their pairs loaded as they lie where `src` is the run's `PreparedBytes`,
    interleaved here otherwise; `in_channels`: their count where not the filter's (a row's
    im2col taps, `int8_im2col.RowBytes`)."""
    columns = BytePairColumns(b, domain, op)
    lanes, block = columns.lanes, len(channels)
    in_c = in_channels or op.filter_shape.get_values()[1]
    o_block = b.div(channels[0], block) if block > 1 else channels[0]
    vectors = tile_vectors(block, columns.accumulators)
    fused = op.bias_in_step is not None
    if fused:
        columns.step_offsets = bias
    words = broadcast_words(b, columns, packed, o_block, block, columns.word_lanes)
    prepared = isinstance(src, PreparedBytes)
    summed = columns.weight_offset != 0 and not prepared  # the column sums made here
    column_vector = VectorType(i16, [lanes])

    def tile(x0: Index, vectors: int, edge: bool = False) -> None:
        counts = [min(lanes, width - x0 - v * lanes) if edge else lanes for v in range(vectors)]
        stored = [None if count == lanes else [lane < count for lane in range(lanes)] for count in counts]

        def word(pair: Index, j: int) -> SSAValue:
            if words is None:
                return columns.word(packed, [o_block, pair, 0, 0, j])
            return b.bitcast(vector_columns.load_vector(b, words, [pair, j, 0], columns.word_lanes),
                             VectorType(i8, [4 * columns.word_lanes]))

        def pairs_of(pair: Index, channel: Index, v: int, second: bool) -> SSAValue:
            if prepared:
                return vector_columns.load_vector(b, src.pairs, [pair, b.mul(b.add(x0, v * lanes), 2)], 2 * lanes)
            return columns.pair(src, n, channel, b.add(x0, v * lanes), stored[v], second)

        def step(carried: list[SSAValue], first_channel: Index, channels_here: int) -> list[SSAValue]:
            """The products of `channels_here` (1 to 4) input channels from `first_channel`."""
            sums, column = carried[:vectors * block], carried[vectors * block:]
            pairs = [(b.add(b.div(first_channel, 2), p), channels_here - 2 * p > 1)
                     for p in range(-(-channels_here // 2))]
            inputs = [[pairs_of(pair, b.add(first_channel, 2 * p), v, second)
                       for p, (pair, second) in enumerate(pairs)] for v in range(vectors)]
            if summed:
                for v in range(vectors):
                    for pixels in inputs[v]:
                        column[v] = columns.column_sums(column[v], pixels)
            for j in range(block):
                pair_words = [word(pair, j) for pair, _ in pairs]
                for v in range(vectors):
                    sums[v * block + j] = columns.byte_products(sums[v * block + j], list(zip(inputs[v], pair_words)),
                                                                prepared)
            return [*sums, *column]

        starts = [columns.zero_sums()] * (vectors * block) if fused \
            else vector_columns.tile_starts(columns, bias, channels, vectors, None)
        starts += [b.int_value(0, column_vector)] * (vectors if summed else 0)
        with b.loop(0, in_c // 4, carried=starts) as c:
            c.next(*step(list(c.carried), b.mul(c.index, 4), 4))
        carried = step(list(c.results), in_c // 4 * 4, in_c % 4) if in_c % 4 else list(c.results)
        sums = carried[:vectors * block]
        for v in range(vectors):  # less z_w x each pixel's column sum
            if prepared and src.less is not None:
                less = vector_columns.load_vector(b, src.less, [b.add(x0, v * lanes)], lanes)
            elif summed:
                less = columns.less_of(carried[vectors * block + v])
            else:
                continue
            for j in range(block):
                sums[v * block + j] = b.int_add(sums[v * block + j], less)
        vector_columns.store_tile(b, columns, channels, sums,
                                  lambda v, j: (outputs[j].view, outputs[j].at(b.add(x0, v * lanes))), stored)

    vector_columns.row_vectors(b, width, lanes, vectors, (0, width), tile)


def emit_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view) -> None:
    """Each block of output channels over runs of pixels (`vector_columns.one_row_per_channel`)."""
    neon_tables_in_registers(b, domain, op)
    packed = view(op.filter)
    block = packed.shape[4]
    lanes, accumulators = op.vector_tile.get_values()[:2]
    if products_of(op) == NEON_BYTES:
        prepared = functools.partial(prepared_bytes, b, domain, op) if packed.shape[0] >= WIDENED_BLOCKS else None
        vector_columns.one_row_per_channel(b, domain, op, view, byte_pointwise_rows, block,
                                           tile_vectors(block, accumulators) * lanes, prepared_input=prepared)
        return
    widened = functools.partial(widened_pairs, b, domain, op) if packed.shape[0] >= WIDENED_BLOCKS else None
    vector_columns.one_row_per_channel(b, domain, op, view, pointwise_rows, block,
                                       tile_vectors(block, accumulators) * lanes, prepared_input=widened)
