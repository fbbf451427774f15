"""Int8 convolution and FullyConnected on AVX-512 VNNI (`microkernel = "x86-vnni"`).

`vpdpbusd` (`llvm.x86.avx512.vpdpbusd.512`) adds to each of 16 int32 lanes the four
products of four unsigned bytes of one operand and four signed bytes of the other: 64
multiply-accumulates an instruction. The kernels put 16 output channels in the lanes and
take the input channels four at a time (`backends.x86.layout`):

* the input is copied once a call into a stack buffer of i32 words (`pack_input`), each the
  four unsigned bytes x + 128 (x ^ 0x80) of a group of four channels at one pixel, the
  padding written out as the input zero point (x_offset + 128): every tap then reads one word
  inside the buffer, and the bias (folded at compile time) already holds
  `-(x_offset + 128) * sum w`;
* a row of at least 16 outputs takes tiles of 16 adjacent pixels in the lanes
  (`pixel_tile`), an accumulator for each output channel of the block: per kernel row,
  group of input channels and kernel column, one load of the pixels' words into every
  channel's accumulator by its weight word broadcast; each accumulator, a vector of its
  channel's pixels, is requantized and stored as it is: by a proved float output step in
  registers, a copy a channel (`in_registers`: a conversion, a `vfmadd`, a conversion back;
  a per-channel layer's `float_step_table` singles loaded a channel; a fused table looked up
  four channels' 64 levels at once), else by the integer step in a loop over the block's
  channels through a stack tile (one copy of that longer step, not 16: MobileNetV3-style's
  int8 code 75 KB -> 56 KB);
* a narrower row takes tiles of up to 16 adjacent output pixels times one vector of 16
  output channels (`tile`), each pixel's accumulator a zmm register: per kernel row and
  group of input channels it loads the kernel row's weight vectors once, then broadcasts
  each input word the tile reads into every tap that reads it (a stride only moves the
  addresses); the accumulators are requantized lane by lane pixel by pixel in a loop through
  a stack tile, narrowed, and transposed in registers (`vector_channels.transpose`) into
  vectors of each channel's pixels, stored into its output row;
* with a weight zero point, each output's sum of its window's unsigned input, times the
  zero point, is taken off its accumulator (`window_sums` for narrow rows; the pixel tile
  sums its windows itself), so the sums are exactly the generic kernel's.

A kernel vectorized and unrolled here needs no more unrolling from LLVM: the lookup tables,
FullyConnected and the convolutions are `optsize` (`KernelBuilder.optimize_for_size`), so
LLVM keeps their loops over groups of input channels and over 64 levels as loops
(MobileNetV3-style: 104 KB of int8 code -> 75 KB, as fast or faster). A fused pool's window
rows are a loop over one copy of the convolution row. A pooled convolution of
one input channel (LeNet's first) keeps O3: at optsize LLVM builds its vectors of stack
addresses from 62 64-byte constants, 3.8 KB of `.rodata` more than it saves.

Rows and fused pools are `loop_skeletons.emit_convolution`'s, with blocks of 16 channels
(the last one the last 16 channels when 16 does not divide the channels, or, in a 1x1
convolution and under 16 channels, shorter: its vectors padded); an
unpadded 1x1 convolution of stride 1 sees each channel's pixels as one row
(`vector_columns.one_row_per_channel`). FullyConnected is the same product over one pixel,
several independent accumulators a block of outputs, stored as vectors.

An int8 Add, Sub or Mul (`microkernel = "x86-avx512"`) runs on 16 int32 lanes
(`lowering.vector_elementwise`, whose kernel serves every host's vector unit).

With AVX-512 VBMI too, an int8 lookup table (`microkernel = "x86-vbmi"`) looks 64 levels up
at once: `vpermi2b` picks bytes of two registers (128 table entries) by each index byte's low
seven bits, so the 256 entries are two such halves and each level's sign picks the half
(`permuted_entries`). A table fused into an x86-vnni layer of such a host (its microkernel's
`byte_permutes`) or into an x86-vnni-depthwise one is looked up the same way, 16 outputs at
once, the table loaded into four registers once a kernel (`PermutedTable`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, VectorType, i8, i32
from xdsl.ir import SSAValue

from glowmlir.backends.x86.layout import (
    BYTE_PERMUTES,
    DEPTHWISE_MICROKERNEL,
    GROUP,
    LANES,
    UNSIGNED_SHIFT,
    columns_in_bytes,
    groups,
    last_block_overlaps,
)
from glowmlir.dialects import glow, glowll
from glowmlir.lowering import loop_skeletons
from glowmlir.lowering.fused_tables import looked_up_by_vectors
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import ArithmeticDomain, Row, overlapping_tiles
from glowmlir.lowering.requantization import LaneRequantization, channel_step
from glowmlir.lowering.saturating_packs import ordered_bytes
from glowmlir.lowering.vector_channels import transpose
from glowmlir.lowering.vector_columns import (
    in_runs,
    inputs_read,
    lane_positions,
    load_vector,
    one_row_per_channel,
    store_first_lanes,
    store_vector,
)
from glowmlir.lowering.vector_layout import channel_is_one_row, channel_pixels

VECTOR = VectorType(i32, [LANES])
"""A zmm register as int32 lanes."""
REGISTERS = 32
"""zmm registers: a tile's accumulators, a kernel row's weights and one broadcast word."""
FULLY_CONNECTED_CHAINS = 4
"""Independent accumulators of a block of FullyConnected outputs (vpdpbusd's latency)."""


AVX512_PACKS = ("llvm.x86.avx512.packssdw.512", "llvm.x86.avx512.packsswb.512")
"""AVX-512's saturating packs (`saturating_packs.Packs`)."""


def dot_accumulate(b: KernelBuilder, total: SSAValue, unsigned: SSAValue, signed: SSAValue) -> SSAValue:
    """total + the four products of each lane's unsigned and signed bytes (`vpdpbusd`)."""
    return b.emit(llvm.CallIntrinsicOp("llvm.x86.avx512.vpdpbusd.512", [total, unsigned, signed], [VECTOR]))


def word_constant(b: KernelBuilder, byte_values: dict[int, int]) -> SSAValue:
    """The i32 word holding `byte_values[j]` in its byte j (the low byte first), 0 elsewhere."""
    word = sum(value << (8 * j) for j, value in byte_values.items())
    return b.integer(word - (1 << 32) if word >= 1 << 31 else word)


def unsigned_word(b: KernelBuilder, levels: list[SSAValue], pad_byte: int) -> SSAValue:
    """The i32 word of up to four int8 levels as unsigned bytes x ^ 0x80, the first in the low
    byte; the bytes past the levels hold `pad_byte`."""
    word = word_constant(b, {j: pad_byte for j in range(len(levels), GROUP)})
    for j, level in enumerate(levels):
        byte = b.emit(llvm.ZExtOp(level, i32))
        word = b.int_or(word, b.shift_left(byte, 8 * j) if j else byte)
    return b.int_xor(word, word_constant(b, dict.fromkeys(range(len(levels)), 0x80)))


PACKED_PIXELS = 16
"""Pixels `pack_input` packs at once: 16 levels of each of four channels, one 64-byte store."""


def interleave(b: KernelBuilder, first: SSAValue, second: SSAValue, size: int) -> SSAValue:
    """The elements of two vectors taken `size` at a time in turn: (a0 b0 a1 b1 ...) for size 1."""
    count = first.type.get_shape()[0]
    order = [half * count + start + k for start in range(0, count, size) for half in (0, 1) for k in range(size)]
    result = VectorType(first.type.element_type, [2 * count])
    return b.emit(llvm.ShuffleVectorOp(first, second, DenseArrayBase.from_list(i32, order), result))


def pack_input(b: KernelBuilder, op: glowll.ConvolutionOp, src: View, slack: int = 0) -> View:
    """The convolution's input as i32 words [N, C / 4, H + pads, W + pads] on the stack: each
    word the unsigned bytes of four channels at one pixel (x ^ 0x80), the padding and the
    channels past the input's holding x_offset + 128. `PACKED_PIXELS` pixels at a time: a
    vector of each of the group's four channels, interleaved byte by byte into one store
    (the row's last pixels masked); an unpadded input's planes are one row each. `slack`
    more words after the buffer hold the padding's word too."""
    n_size, channels, height, width = src.shape
    top, left, bottom, right = op.pads.get_values()
    shape = (n_size, groups(channels), height + top + bottom, width + left + right)
    input_offset = op.input.type.element_type.offset
    pad_byte = input_offset + UNSIGNED_SHIFT
    size = shape[0] * shape[1] * shape[2] * shape[3]
    words = View.contiguous(b.alloca(size + slack, i32), shape, element_type=i32)
    padded = any((top, left, bottom, right))
    flat = View(words.base, (size + slack,), (1,), 0, i32)
    with b.loop(0 if padded else size, size + slack) as i:
        b.store(word_constant(b, dict.fromkeys(range(GROUP), pad_byte)), flat, [i.index])
    if not padded:  # each plane one row
        assert src.strides[2:] == (width, 1), "an input plane is contiguous"
        src = src.reshaped((n_size, channels, 1, height * width), (src.strides[0], src.strides[1], 0, 1))
        words = words.reshaped((n_size, shape[1], 1, height * width), (words.strides[0], words.strides[1], 0, 1))
    rows, row = src.shape[2:]
    missing = b.int_value(input_offset - 256 if input_offset >= 128 else input_offset,
                          VectorType(i8, [PACKED_PIXELS]))
    full, rest = divmod(channels, GROUP)
    for first, count, size in ((0, GROUP, full), (full, rest, 1 if rest else 0)):
        if not size:
            continue
        with b.loops([n_size, size, rows]) as (n, g, y):
            in_runs(b, row, PACKED_PIXELS, lambda x0, pixels, n=n, g=g, y=y, first=first, count=count: pack_pixels(
                b, src, words, [n, b.add(first, g), y, x0], count, pixels, missing, (top, left)))
    return words if padded else words.reshaped(shape, tuple(words.strides[:2]) + (shape[3], 1))


def pack_pixels(b: KernelBuilder, src: View, words: View, at: list[Index], count: int = GROUP,
                pixels: int = PACKED_PIXELS, missing: SSAValue | None = None, pads: tuple[int, int] = (0, 0)) -> None:
    """`pack_input`'s step: the words of up to `PACKED_PIXELS` pixels of a group of four
    channels, `at` = [n, group, y, x0] of the NCHW input `src` (the first `count` channels
    read, the others `missing`, the input zero point), into `words` [N, C / 4, rows, row]
    at the same place moved by the `pads` (top, left): a vector of each channel's levels,
    interleaved byte by byte into one store (of the first `pixels` words only:
    `store_first_lanes`)."""
    n, group, y, x0 = at
    loaded = None if pixels == PACKED_PIXELS else [lane < pixels for lane in range(PACKED_PIXELS)]
    four = [load_vector(b, src, [n, b.add(b.mul(group, GROUP), j), y, x0], PACKED_PIXELS, loaded)
            if j < count else missing for j in range(GROUP)]
    unsigned = b.int_xor(interleave(b, interleave(b, four[0], four[1], 1), interleave(b, four[2], four[3], 1), 2),
                         b.int_value(-UNSIGNED_SHIFT, VectorType(i8, [GROUP * PACKED_PIXELS])))
    store_first_lanes(b, unsigned, words, [n, group, b.add(y, pads[0]), b.add(x0, pads[1])], GROUP * pixels)


def kernel_columns(b: KernelBuilder, words: View, quads: int) -> View:
    """For a filter of `vnni_layout.columns_in_bytes`: from the packed input of one channel
    (`pack_input`, its bytes past the first the input zero point, `LANES + 4 * quads` words of
    slack after it), words [N, KW / 4, H + pads, W + pads] whose byte j of word q at pixel x
    is the first byte of the word 4q + j pixels on. Past a row's end those are the next
    row's (or the slack's): they meet only the filter's zero bytes and no window sum.
    16 words at a time, four loads shifted into one vector."""
    n_size, _, rows, row = words.shape
    plane = rows * row
    source = View(words.base, (n_size * plane + LANES + GROUP * quads,), (1,), 0, i32)
    shape = (n_size, quads, rows, row)
    columns = View.contiguous(b.alloca(n_size * quads * plane, i32), shape, element_type=i32)
    flat = columns.reshaped((n_size, quads, plane), (quads * plane, plane, 1))

    def sixteen(n: Index, q: Index, p0: Index, count: int) -> None:
        start = b.add(b.add(b.mul(n, plane), p0), b.mul(q, GROUP))
        word = None
        for j in range(GROUP):
            byte = b.int_and(load_vector(b, source, [b.add(start, j)], LANES), 0xFF)
            word = byte if word is None else b.int_or(word, b.shift_left(byte, 8 * j))
        store_vector(b, word, flat, [n, q, p0], None if count == LANES else [lane < count for lane in range(LANES)])

    with b.loops([n_size, quads]) as (n, q):
        in_runs(b, plane, LANES, functools.partial(sixteen, n, q))
    return columns


def channel_ones(b: KernelBuilder, group: Index, channels: Index) -> SSAValue:
    """The word of a byte of 1 for each input channel of a group of four (the last group
    may have fewer: its bytes past them hold the input zero point, not summed; a run-time
    count, a shape-parameterised kernel's, is a multiple of 4)."""
    whole = word_constant(b, dict.fromkeys(range(GROUP), 1))
    if not isinstance(channels, int) or not channels % GROUP:
        return whole
    full, rest = divmod(channels, GROUP)
    return b.select(b.compare("eq", group, full), word_constant(b, dict.fromkeys(range(rest), 1)), whole)


def window_sums(b: KernelBuilder, op: glowll.ConvolutionOp, words: View, channels: int, k_w: int,
                weight_offset: int | SSAValue) -> View:
    """w_offset times the sum of the unsigned input (x + 128, the padding x_offset + 128) over
    each output's window, all `channels` (the bytes summed of each word), `k_w` words a
    kernel row: i32 [N, conv H, conv W] on the stack, which the kernel subtracts from the
    accumulators when the weights have a zero point. 16 outputs of a row at a time, from the
    packed input `words`: each tap's words of a group by bytes of 1 (`vpdpbusd`; the row's
    last outputs masked)."""
    k_h = op.filter_shape.get_values()[2]
    (sy, sx), (dy, dx) = op.strides.get_values(), op.dilations.get_values()
    n_size = words.shape[0]
    conv_h, conv_w = glow.convolution_shape(op)[2:]
    sums = View.contiguous(b.alloca(n_size * conv_h * conv_w, i32), (n_size, conv_h, conv_w), element_type=i32)

    def outputs(n: Index, y: Index, x0: Index, count: int) -> None:
        loaded = [lane < count for lane in range(LANES)] if count < LANES or sx > 1 else None
        with b.loop(0, k_h, carried=[b.constant(0, VECTOR)]) as ky:
            in_y = b.add(b.mul(y, sy), b.mul(ky.index, dy))
            with b.loop(0, words.shape[1], carried=ky.carried) as g:
                ones = b.splat(channel_ones(b, g.index, channels), VECTOR)
                total = g.carried[0]
                for kx in range(k_w):
                    column = b.add(b.mul(x0, sx), kx * dx)
                    total = dot_accumulate(b, total, load_vector(b, words, [n, g.index, in_y, column], LANES, loaded,
                                                                 stride=sx), ones)
                g.next(total)
            ky.next(*g.results)
        store_vector(b, b.int_mul(ky.results[0], b.lanewise(weight_offset, VECTOR)), sums, [n, y, x0],
                     None if count == LANES else loaded)

    with b.loops([n_size, conv_h]) as (n, y):
        in_runs(b, conv_w, LANES, functools.partial(outputs, n, y))
    return sums


def packed_words(b: KernelBuilder, packed: View) -> View:
    """The packed filter [O / 16, C / 4, KH, KW, 16, 4] int8 seen as i32 words [O / 16, C / 4, KH, KW, 16]."""
    base = b.offset_pointer(packed.base, packed.offset, packed.element_type)
    shape = packed.shape[:5]
    return View(base, shape, tuple(stride // GROUP for stride in packed.strides[:5]), 0, i32)


def output_step(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp,
                channel: Index) -> LaneRequantization:
    """The output step of `channel`'s vectors: a `float_step_table` layer's channel singles
    loaded (`requantization.channel_step`), else the layer's numbers (its proved float step
    where it has one, `LaneRequantization.float_step`)."""
    if op.float_step_table is None:
        return LaneRequantization(b, domain, VECTOR, *domain.requantization.of(channel))
    requantization = domain.requantization
    return LaneRequantization(b, domain, VECTOR, 0, 0, channel=channel_step(
        b, requantization.table, channel, requantization.numbers, op.float_step_table.value.data == 1))


def block_requantization(b: KernelBuilder, domain: ArithmeticDomain, bias: View, first: Index,
             count: Index) -> tuple[SSAValue, LaneRequantization]:
    """The bias vector of a block of `count` output channels from `first` (lanes past them
    masked; a run-time count's at run time) and its output step (`LaneRequantization`), the multipliers and
    shifts loaded once a block."""
    loaded = lanes_below(b, count)
    table = domain.requantization.table
    if table is None:
        multiplier, shift = domain.requantization.constant
    else:
        multiplier, shift = (load_vector(b, table, [row, first], LANES, loaded) for row in (0, 1))
    return load_vector(b, bias, [first], LANES, loaded), LaneRequantization(b, domain, VECTOR, multiplier, shift)


def channel_rows(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, src: View, packed: View,
                 bias: View, n: Index, channels: list[Index], y: Index, outputs: list[Row], width: int,
                 accumulators: None = None, residual: None = None, *, words: View, sums: View | None,
                 weight_offset: int | SSAValue, k_w: int, summed: Index, filter_words: View | None = None,
                 output_row: Callable[[Index], Row] | None = None) -> None:
    """Convolution output row `y` of the block `channels` (up to 16) into `outputs`
    (`loop_skeletons.convolution_rows`' contract), reading the packed input `words` (`src`,
    the input as it is, is not read) and, with a weight zero point, the `window_sums` (rows
    of channels in the lanes; rows of pixels in the lanes sum their windows themselves, over
    `summed` bytes of each word), `k_w` words a kernel row. A shape-parameterised kernel
    gives a run-time `width` (tiles of pixels in the lanes), its `filter_words`, the packed
    filter as words through run-time strides, and `output_row(j)`, the row of output channel
    channels[0] + j for a run-time j: the requantization loop stores there (16 output rows
    through run-time strides are 16 addresses LLVM would keep on the stack)."""
    k_h = op.filter_shape.get_values()[2]
    dy, dx = op.dilations.get_values()
    sy, sx = op.strides.get_values()
    filter_words = filter_words or packed_words(b, packed)
    o_block = b.div(b.add(channels[0], LANES - 1), LANES)  # an overlapping last block's too
    storage = outputs[0].view.element_type
    keep_accumulators = domain.output(channels[0], storage) is None  # a fused max pool requantizes after it
    bias_vector, step = block_requantization(b, domain, bias, channels[0], len(channels))
    sums_tile = View(b.alloca(LANES * LANES, i32), (LANES, LANES), (LANES, 1), 0, i32)
    stored_tile = View(b.alloca(LANES * LANES, storage), (LANES, LANES), (LANES, 1), 0, storage)

    def tile(x0: Index, count: int) -> None:
        """`count` pixels from x0: the taps, then the output step pixel by pixel (a proved float
        step in registers; the integer one through the stack, a loop, not `count` copies of
        its code), then the transposition."""
        left = b.mul(x0, sx)
        starts = [bias_vector if sums is None else
                  b.int_sub(bias_vector, b.splat(b.load(sums, [n, y, b.add(x0, p)]), VECTOR)) for p in range(count)]
        with b.loop(0, k_h, carried=starts) as ky:
            in_y = b.add(b.mul(y, sy), b.mul(ky.index, dy))
            with b.loop(0, words.shape[1], carried=ky.carried) as g:
                totals = list(g.carried)
                weights = [load_vector(b, filter_words, [o_block, g.index, ky.index, kx, 0], LANES)
                           for kx in range(k_w)]
                for offset, taps in inputs_read(count, k_w, sx, dx):
                    word = b.splat(b.load(words, [n, g.index, in_y, b.add(left, offset)]), VECTOR)
                    for p, kx in taps:
                        totals[p] = dot_accumulate(b, totals[p], word, weights[kx])
                g.next(*totals)
            ky.next(*g.results)
        stored = None if count == LANES else [lane < count for lane in range(LANES)]
        if op.float_step is not None and not keep_accumulators:  # a few instructions a pixel: in registers
            pixel_rows = [step.output(total, storage) for total in ky.results]
        else:
            for p, total in enumerate(ky.results):
                store_vector(b, total, sums_tile, [p, 0])
            if not keep_accumulators:
                with b.loop(0, count) as p:
                    total = load_vector(b, sums_tile, [p.index, 0], LANES)
                    store_vector(b, step.output(total, storage), stored_tile, [p.index, 0])
            pixel_rows = [load_vector(b, sums_tile if keep_accumulators else stored_tile, [p, 0], LANES)
                          for p in range(count)]
        for into, pixels_of_channel in zip(outputs, transpose(b, pixel_rows)):
            store_vector(b, pixels_of_channel, into.view, into.at(x0), stored)

    def in_registers(totals: list[SSAValue], x0: Index) -> None:
        """A float step's outputs (a conversion, a `vfmadd`, a conversion back: the step is one
        copy a channel, not a loop through the stack tiles; a `float_step_table` layer's
        channel's three singles loaded, `channel_step`), each stored into its channel's row; a
        table in registers looks four channels' levels up at once."""
        steps = [output_step(b, domain, op, b.add(channels[0], j)) for j in range(len(totals))]
        if not isinstance(domain.lookup_table, PermutedTable):
            for into, step, total in zip(outputs, steps, totals):
                store_vector(b, step.output(total, storage), into.view, into.at(x0))
            return
        for first in range(0, len(totals), 4):
            quad = slice(first, first + 4)
            entries = domain.lookup_table.look_up(joined_levels(b, steps[quad], totals[quad], storage))
            for k, into in enumerate(outputs[quad]):
                order = DenseArrayBase.from_list(i32, list(range(k * LANES, (k + 1) * LANES)))
                row = b.emit(llvm.ShuffleVectorOp(entries, entries, order, VectorType(storage, [LANES])))
                store_vector(b, row, into.view, into.at(x0))

    def pixel_tile(x0: Index) -> None:
        """16 adjacent pixels from x0 in the lanes, an accumulator a channel of the block: per
        kernel row, group of four input channels and kernel column, one load of the pixels'
        words (of a stride over 1, every sx-th word: `load_vector`'s shuffle) into every
        channel's accumulator by that channel's weight word broadcast (`vpdpbusd` from memory);
        then each accumulator, a vector of its channel's pixels, requantized (in a loop over
        the channels through the stack tiles) and stored."""
        left = b.mul(x0, sx)
        starts = [b.splat(b.load(bias, [channel]), VECTOR) for channel in channels]
        if weight_offset:  # and the sum of each pixel's window: its words by bytes of 1
            starts.append(b.constant(0, VECTOR))
        every = None if sx == 1 else [True] * LANES  # the words between the strided ones not read
        with b.loop(0, k_h, carried=starts) as ky:
            in_y = b.add(b.mul(y, sy), b.mul(ky.index, dy))
            with b.loop(0, words.shape[1], carried=ky.carried) as g:
                totals = list(g.carried)
                ones = weight_offset and b.splat(channel_ones(b, g.index, summed), VECTOR)
                for kx in range(k_w):
                    words_read = load_vector(b, words, [n, g.index, in_y, b.add(left, kx * dx)], LANES, every,
                                             stride=sx)
                    for j in range(len(channels)):
                        weight = b.splat(b.load(filter_words, [o_block, g.index, ky.index, kx, j]), VECTOR)
                        totals[j] = dot_accumulate(b, totals[j], words_read, weight)
                    if weight_offset:
                        totals[-1] = dot_accumulate(b, totals[-1], words_read, ones)
                g.next(*totals)
            ky.next(*g.results)
        totals = list(ky.results)
        if weight_offset:
            correction = b.int_mul(totals.pop(), b.lanewise(weight_offset, VECTOR))
            totals = [b.int_sub(total, correction) for total in totals]
        if keep_accumulators:
            for into, total in zip(outputs, totals):
                store_vector(b, total, into.view, into.at(x0))
            return
        if output_row is None and (op.float_step is not None or op.float_step_table is not None):
            in_registers(totals, x0)
            return
        for j, total in enumerate(totals):
            store_vector(b, total, sums_tile, [j, 0])
        if isinstance(domain.lookup_table, PermutedTable) and output_row is None and len(channels) % 4 == 0:
            # a table in registers looks four channels' levels up at once: 64 bytes, not 16
            with b.loop(0, len(channels) // 4) as quad:
                rows = [b.add(b.mul(quad.index, 4), k) for k in range(4)]
                steps = [output_step(b, domain, op, b.add(channels[0], j)) for j in rows]
                totals = [load_vector(b, sums_tile, [j, 0], LANES) for j in rows]
                store_vector(b, domain.lookup_table.look_up(joined_levels(b, steps, totals, storage)),
                             stored_tile.reshaped((LANES * LANES,), (1,)), [b.mul(quad.index, 4 * LANES)])
        else:
            with b.loop(0, len(channels)) as j:
                step = LaneRequantization(b, domain, VECTOR, *domain.requantization.of(b.add(channels[0], j.index)))
                levels = step.output(load_vector(b, sums_tile, [j.index, 0], LANES), storage)
                into = Row(stored_tile, (j.index,)) if output_row is None else output_row(j.index)
                store_vector(b, levels, into.view, into.at(0 if output_row is None else x0))
        if output_row is None:
            for j, into in enumerate(outputs):
                store_vector(b, load_vector(b, stored_tile, [j, 0], LANES), into.view, into.at(x0))

    if pixels_in_lanes(width):
        with overlapping_tiles(b, width, LANES) as (x0, _):
            pixel_tile(x0)
        return
    size = channel_pixels(width, k_w, REGISTERS)
    if width < size:
        tile(0, width)
        return
    with overlapping_tiles(b, width, size) as (x0, _):
        tile(x0, size)


def joined_levels(b: KernelBuilder, steps: list[LaneRequantization], totals: list[SSAValue],
                  storage) -> SSAValue:
    """Up to four vectors of totals, each requantized by its step, as one vector of int8 levels,
    the first vector's first: four by three saturating packs and a permute
    (`saturating_packs.ordered_bytes`: where four narrows and three joins take seven shuffles),
    fewer each narrowed and joined (`joined_vectors`). The activation's bounds are the
    domain's, every step's."""
    levels = [step.level(total) for step, total in zip(steps, totals)]
    if len(levels) == 4:
        return steps[0].bounded(ordered_bytes(b, levels, AVX512_PACKS))
    return joined_vectors(b, [step.narrowed(level, storage) for step, level in zip(steps, levels)])


def joined_vectors(b: KernelBuilder, vectors: list[SSAValue]) -> SSAValue:
    """Vectors of one type one after the other in one vector: halves joined into vectors twice
    as wide, an odd one with zeros."""
    while len(vectors) > 1:
        if len(vectors) % 2:
            vectors = [*vectors, b.int_value(0, vectors[-1].type)]
        width = 2 * vectors[0].type.get_shape()[0]
        both = VectorType(vectors[0].type.element_type, [width])
        order = DenseArrayBase.from_list(i32, list(range(width)))
        vectors = [b.emit(llvm.ShuffleVectorOp(low, high, order, both))
                   for low, high in zip(vectors[::2], vectors[1::2])]
    return vectors[0]


def pixels_in_lanes(width: Index) -> bool:
    """Whether `channel_rows` puts rows of `width` outputs in tiles of pixels in the lanes (a
    run-time width, a shape-parameterised kernel's, is at least 16)."""
    return not isinstance(width, int) or width >= LANES


def emit_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view) -> None:
    """The input packed once (`pack_input`), then the shared skeleton with `channel_rows` over
    blocks of 16 output channels; an unpadded 1x1 of stride 1, each channel's pixels as one row."""
    tables_in_registers(b, domain, op)
    src = view(op.input)
    filter_shape = op.filter_shape.get_values()
    stem = columns_in_bytes(filter_shape, op.dilations.get_values())
    if stem:  # four kernel columns a word
        quads = groups(filter_shape[3])
        words = kernel_columns(b, pack_input(b, op, src, LANES + GROUP * quads), quads)
        k_w, summed = 1, filter_shape[3]
    else:
        words, k_w, summed = pack_input(b, op, src), filter_shape[3], src.shape[1]
    weight_offset = domain.weight_offset  # a record's, read at run time, or the filter's
    one_row = channel_is_one_row(filter_shape, op.strides.get_values(), op.pads.get_values(), op.pool is not None)
    height, width = glow.convolution_shape(op)[2:]
    sums = None
    if weight_offset and not pixels_in_lanes(height * width if one_row else width):
        sums = window_sums(b, op, words, summed, k_w, weight_offset)
    if one_row:
        n_size, group_count, height, width = words.shape
        words = words.reshaped((n_size, group_count, 1, height * width), (words.strides[0], height * width, 0, 1))
        sums = sums and sums.reshaped((n_size, 1, height * width), (sums.strides[0], 0, 1))
    # optsize keeps LLVM from unrolling the kernel rows again; but a pooled stem (LeNet's first
    # layer) at optsize gets its pool vectorized with gathers, 62 vectors of stack addresses
    # as 64-byte constants (+3.8 KB), and LeNet 1.25x slower
    b.optimize_for_size = not (stem and op.pool is not None)
    rows = functools.partial(channel_rows, words=words, sums=sums, weight_offset=weight_offset, k_w=k_w,
                             summed=summed)
    if one_row:
        one_row_per_channel(b, domain, op, view, rows, LANES, None, last_block_overlaps(filter_shape))
    else:
        loop_skeletons.emit_convolution(b, domain, op, view, rows, LANES, unrolled_window_rows=0,
                                        last_block_overlaps=last_block_overlaps(filter_shape))


def emit_fully_connected(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.FullyConnectedOp, view) -> None:
    """`fully_connected_rows` over the layer's [rows, depth] input and packed weights."""
    tables_in_registers(b, domain, op)
    dest, src = view(op.dest), view(op.input)
    fully_connected_rows(b, domain, op, src, dest, packed_words(b, view(op.weights)), view(op.bias), dest.shape[0],
                         src.shape[1], dest.shape[1])


def lanes_below(b: KernelBuilder, count: Index) -> list[bool] | SSAValue | None:
    """The lanes of a vector of `count` elements (None: all 16), a run-time count's chosen
    at run time."""
    if isinstance(count, int):
        return None if count == LANES else [lane < count for lane in range(LANES)]
    return b.int_compare("slt", lane_positions(b, 0, LANES), b.splat(b.truncate(b.index(count), i32), VECTOR))


def fully_connected_rows(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.FullyConnectedOp | glowll.ConvolutionOp,
                         src: View, dest: View, filter_words: View, bias: View, rows: Index, depth: Index,
                         outputs: Index) -> None:
    """Per input row: its levels as unsigned words on the stack, then per block of 16
    outputs `FULLY_CONNECTED_CHAINS` accumulators over the words, summed, requantized and
    stored as one vector (the last block's lanes past the outputs masked). The shapes may be
    run-time numbers (a shape-parameterised kernel's; its depth a multiple of 4; its output
    step the same for relu and other layers: they share it)."""
    b.optimize_for_size = True
    known = isinstance(depth, int)
    count = groups(depth) if known else b.div(depth, GROUP)
    words = View(b.alloca(count, i32), (count,), (1,), 0, i32)
    pad_byte = op.input.type.element_type.offset + UNSIGNED_SHIFT
    full, rest = divmod(depth, GROUP) if known else (count, 0)
    chained = count // FULLY_CONNECTED_CHAINS * FULLY_CONNECTED_CHAINS if known else \
        b.mul(b.div(count, FULLY_CONNECTED_CHAINS), FULLY_CONNECTED_CHAINS)

    weight_offset = domain.weight_offset  # a record's, read at run time, or the filter's

    def block(m: Index, o_block: Index, lanes: Index, input_sum: SSAValue) -> None:
        bias_vector, step = block_requantization(b, domain, bias, b.mul(o_block, LANES), lanes)

        def accumulate(total: SSAValue, q: Index) -> SSAValue:
            word = b.splat(b.load(words, [q]), VECTOR)
            return dot_accumulate(b, total, word, load_vector(b, filter_words, [o_block, q, 0, 0, 0], LANES))

        zero = b.constant(0, VECTOR)
        start = bias_vector if not weight_offset else b.int_sub(bias_vector, b.splat(input_sum, VECTOR))
        with b.loop(0, b.div(chained, FULLY_CONNECTED_CHAINS),
                    carried=[start] + [zero] * (FULLY_CONNECTED_CHAINS - 1)) as k:
            k.next(*(accumulate(total, b.add(b.mul(k.index, FULLY_CONNECTED_CHAINS), chain))
                     for chain, total in enumerate(k.carried)))
        chains = list(k.results)
        if known:
            for chain, q in enumerate(range(chained, count)):
                chains[chain] = accumulate(chains[chain], q)
        else:
            with b.loop(chained, count, carried=chains[:1]) as q:
                q.next(accumulate(q.carried[0], q.index))
            chains[0] = q.results[0]
        total = functools.reduce(b.int_add, chains)
        store_vector(b, step.output(total, dest.element_type, not known), dest, [m, b.mul(o_block, LANES)],
                     lanes_below(b, lanes))

    with b.loop(0, rows) as m:
        with b.loop(0, full) as q:
            levels = [b.load(src, [m.index, b.add(b.mul(q.index, GROUP), j)]) for j in range(GROUP)]
            b.store(unsigned_word(b, levels, pad_byte), words, [q.index])
        if rest:
            levels = [b.load(src, [m.index, full * GROUP + j]) for j in range(rest)]
            b.store(unsigned_word(b, levels, pad_byte), words, [full])
        input_sum = None
        if weight_offset:  # w_offset x the sum of the unsigned levels
            with b.loop(0, depth, carried=[b.integer(0)]) as k:
                unsigned = b.int_add(b.sign_extend(b.load(src, [m.index, k.index])), UNSIGNED_SHIFT)
                k.next(b.int_add(k.carried[0], unsigned))
            input_sum = b.int_mul(k.results[0], weight_offset)
        whole, last = b.div(outputs, LANES), b.remainder(outputs, LANES)
        with b.loop(0, whole) as o_block:
            block(m.index, o_block.index, LANES, input_sum)
        if not isinstance(last, int):
            with b.when(b.compare("sgt", last, 0)):
                block(m.index, whole, last, input_sum)
        elif last:
            block(m.index, whole, last, input_sum)


TABLE_LEVELS = 64
"""Levels a lookup looks up at once: a zmm register of bytes."""
TABLE_BYTES = VectorType(i8, [TABLE_LEVELS])


def table_quarters(b: KernelBuilder, table: View, first: int = 0) -> list[SSAValue]:
    """A 256-entry table in four zmm registers of 64 entries, its entry for level -128 at index
    `first` of `table` (0 for the table as stored, -128 for a view indexed by level)."""
    return [load_vector(b, table, [first + quarter * TABLE_LEVELS], TABLE_LEVELS) for quarter in range(4)]


def permuted_entries(b: KernelBuilder, quarters: list[SSAValue], levels: SSAValue) -> SSAValue:
    """The entries of 64 int8 levels: each level's low seven bits index the table's first two
    quarters (entries 0-127, the negative levels) and its last two by `vpermi2b`, and the
    level's sign picks which."""
    negative, other = (b.emit(llvm.CallIntrinsicOp("llvm.x86.avx512.vpermi2var.qi.512", [low, levels, high],
                                                    [TABLE_BYTES]))
                       for low, high in (quarters[:2], quarters[2:]))
    return b.select(b.int_compare("slt", levels, b.int_value(0, TABLE_BYTES)), negative, other)


class PermutedTable:
    """A convolution's or FullyConnected's fused lookup table in four zmm registers, loaded once
    a kernel (`fused_tables.TableInRegisters`, with `byte_permutes`: AVX-512 VBMI): a vector of
    up to 64 int8 levels is looked up by `permuted_entries` (its lanes widened to 64 and
    back: two `vpermi2b` and a blend for the 16 outputs of a VNNI vector, where a lookup lane by
    lane takes 16 loads and a stack round trip); a lone level is read from memory."""

    def __init__(self, b: KernelBuilder, by_level: View):
        self.b = b
        self.by_level = by_level  # the domain's view (`fused_tables.lookup_table_by_level`)
        self.quarters = table_quarters(b, by_level, -128)

    def look_up(self, levels: SSAValue) -> SSAValue:
        return looked_up_by_vectors(self.b, levels, self.by_level, TABLE_LEVELS,
                                    lambda part: permuted_entries(self.b, self.quarters, part))


def tables_in_registers(b: KernelBuilder, domain: ArithmeticDomain,
                        op: glowll.ConvolutionOp | glowll.FullyConnectedOp) -> None:
    """Where the op's kernel has byte permutes (its microkernel's `byte_permutes`, or
    x86-vnni-depthwise, which needs VBMI anyway), its fused table goes into registers once
    (`PermutedTable`) in place of the domain's view of it."""
    if domain.lookup_table is not None and (op.microkernel.data == DEPTHWISE_MICROKERNEL
                                            or op.microkernel.parameter(BYTE_PERMUTES) is not None):
        domain.lookup_table = PermutedTable(b, domain.lookup_table)


def emit_int_lookup_table(b: KernelBuilder, op: glowll.IntLookupTableOp, view) -> None:
    """dest[i] = table[input[i] + 128], 64 levels a step by `permuted_entries` (the table in
    four registers; the last step's lanes masked)."""
    b.optimize_for_size = True
    dest, source, table = view(op.dest), view(op.input), view(op.table)
    size = math.prod(dest.shape)
    flat_dest, flat_source = dest.reshaped((size,), (1,)), source.reshaped((size,), (1,))
    quarters = table_quarters(b, table)

    def look_up(at: Index, count: int) -> None:
        loaded = None if count == TABLE_LEVELS else [lane < count for lane in range(TABLE_LEVELS)]
        levels = load_vector(b, flat_source, [at], TABLE_LEVELS, loaded)
        store_vector(b, permuted_entries(b, quarters, levels), flat_dest, [at], loaded)

    in_runs(b, size, TABLE_LEVELS, look_up)
