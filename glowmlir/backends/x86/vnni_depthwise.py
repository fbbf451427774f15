"""An int8 depthwise convolution on AVX-512 VNNI and VBMI (`microkernel = "x86-vnni-depthwise"`).

`vpdpbusd` adds four products of unsigned and signed bytes into each int32 lane. Here a lane
is one output pixel and its four bytes four taps of one kernel row: the input bytes those
taps read, gathered by one byte permute (`vpermb` / `vpermt2b`, an LLVM shufflevector of
compile-time indices), times the word of the channel's four weights of that row broadcast.
A 3x3 kernel is three `vpdpbusd` for 16 outputs (the int16 kernel's nine `vpdpwssd`, nine
sign extensions and nine loads), a 5x5 ten (eight in the short form, below).

The input is made unsigned (x ^ 0x80 = x + 128) and the bytes of a tap in the padding are the
input zero point, unsigned: U = x_offset + 128. So

    sum (w - w_offset)(x - x_offset) = sum s u - U sum s,    s = w - w_offset, u = x + 128,

and the bias holds `bias - U sum s` (`vnni_layout.folded_bias`), exactly, at the borders too.
The filter is the model's int8 levels as they are: a channel's words are made in the stack
once a channel (`channel_words`). A level s in [-255, 254] that is no int8 is split into
two, part 0 saturated to int8 and part 1 the rest: in a layer that has such levels
(`vnni_layout.REST_LEVELS`), a channel with some takes a second `vpdpbusd` per word (in
its own version of the channel's code where the form is straight-line). Sums wrap modulo
2^32 as the generic kernel's do; the output step is
`lowering.requantization.LaneRequantization`'s (its proved float form where the layer has
one), so the outputs are the int8 reference's, bit for bit.

Three forms, by the plane (`form_of`): the per-vector form (planes of at most
`vnni_layout.MOST_DEPTHWISE_VECTORS` vectors of 16 outputs, row-major, each code of its own,
its taps' bytes in windows of 64 bytes of the input plane at compile-time offsets:
MobileNetV3's 8 x 8 and 4 x 4, DS-CNN's 25 x 5); the short form (at most 4 output rows, each
a vector wide or more: every input row's permutes made once for all the output rows that read
it); the rows form (any other plane: a loop over output rows). The rows form reads a copy of
the channel's plane in the stack with its padding written out (`copy_padded_plane`), the short
form the same padded rows held in registers (`PaddedRows`). In both, the products of the kernel
rows wholly in the padding (above or below the input) with the zero point's bytes are made at
compile time where the selection pass can (`vnni_layout.padded_start_biases`: the bias a row
for each class of output rows, `{bias_rows = k}`), else by the kernel once a channel
(`ChannelSums.padded_starts`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, VectorType, i8, i32, i64
from xdsl.ir import SSAValue

from glowmlir.backends.x86.layout import GROUP, LANES, REST_LEVELS, UNSIGNED_SHIFT, WINDOW, DepthwiseGeometry, groups
from glowmlir.backends.x86.vnni_kernels import (
    VECTOR,
    dot_accumulate,
    joined_levels,
    output_step,
    tables_in_registers,
)
from glowmlir.dialects import glowll
from glowmlir.lowering.fused_tables import looked_up
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import ArithmeticDomain
from glowmlir.lowering.requantization import LaneRequantization
from glowmlir.lowering.vector_columns import load_vector, store_vector

BYTES = VectorType(i8, [WINDOW])


def signed_byte(value: int) -> int:
    return value - 256 if value >= 128 else value


class ChannelSums:
    """One channel's sums: `vpdpbusd`s of (unsigned bytes, word) operands with the channel's
    words (`channel_words`; a kernel row's quad is word `word(ky, quad)`, `extra` words after
    them), then, for a channel whose levels less their zero point leave int8, with its rest
    words (a loop of one trip; of none for the others)."""

    def __init__(self, b: KernelBuilder, domain: ArithmeticDomain, filter_: View, c: Index, rest_levels: bool,
                 extra: tuple[tuple[int | None, ...], ...] = ()):
        self.b, self.rest_levels, self.quads = b, rest_levels, groups(filter_.shape[3])
        self.words, self.parts_of_channel = channel_words(b, filter_, c, domain.weight_offset, rest_levels, extra)

    def word(self, ky: int, quad: int) -> int:
        return ky * self.quads + quad

    def without_rest(self) -> ChannelSums:
        """The same channel's sums with part 0's words alone (for a channel that has no rest)."""
        sums = copy.copy(self)
        sums.rest_levels = False
        return sums

    def part(self, total: SSAValue, operands: list[tuple[SSAValue, int]], part: Index) -> SSAValue:
        b = self.b
        for unsigned, word in operands:
            total = dot_accumulate(b, total, b.bitcast(unsigned, VECTOR),
                                   b.splat(b.load(self.words, [part, word]), VECTOR))
        return total

    def padded_starts(self, start: SSAValue, padding: SSAValue, classes: list[tuple[int, ...]]) -> list[SSAValue]:
        """For each class of output rows, `start` plus the products of its kernel rows wholly in
        the padding (`classes`: the rows of each) with the zero point's bytes: the start of the
        output rows that have them. Each such kernel row's products are made once for every
        class, from zero, the rows independent of one another (the rest parts one loop for
        them all), then added to `start` by a tree: a chain of one `vpdpbusd` after the other
        (a 5x5 on 2 x 96: 6 a class) kept every channel's outputs waiting on its latency."""
        b = self.b
        rows = sorted({ky for padded in classes for ky in padded})

        def parts(totals: list[SSAValue], part: Index) -> list[SSAValue]:
            return [self.part(total, [(padding, self.word(ky, quad)) for quad in range(self.quads)], part)
                    for total, ky in zip(totals, rows)]

        totals = parts([b.int_value(0, VECTOR)] * len(rows), 0)
        if self.rest_levels and rows:
            with b.loop(1, self.parts_of_channel, carried=totals) as part:
                part.next(*parts(part.carried, part.index))
            totals = part.results
        products = dict(zip(rows, totals))
        return [tree_sum(b, [start, *(products[ky] for ky in padded)]) for padded in classes]

    def total(self, start: SSAValue, operands: list[tuple[SSAValue, int]]) -> SSAValue:
        total = self.part(start, operands, 0)
        if not self.rest_levels:
            return total
        with self.b.loop(1, self.parts_of_channel, carried=[total]) as part:
            part.next(self.part(part.carried[0], operands, part.index))
        return part.results[0]


def tree_sum(b: KernelBuilder, values: list[SSAValue]) -> SSAValue:
    """The sum of `values` (int32 lanes, wrapping) added in pairs, a tree of depth log2 of
    their number."""
    while len(values) > 1:
        values = [b.int_add(*values[k:k + 2]) if k + 1 < len(values) else values[k] for k in range(0, len(values), 2)]
    return values[0]


def channel_words(b: KernelBuilder, filter_: View, c: Index, weight_offset: int | SSAValue, rest_levels: bool,
                  extra: tuple[tuple[int | None, ...], ...] = ()) -> tuple[View, Index]:
    """Channel `c`'s int8 levels ([C, 1, KH, KW], as the model holds them) less their zero
    point as the words `vpdpbusd` takes, made in the stack once a channel: [2, 16] i32, first a
    kernel row's taps four a word (zeros past KW), KH x quads of them, then the `extra` words
    (each four taps by their index in the channel's KH x KW, None for a 0). Part 0 holds each
    level less the zero point saturated to int8 (`vpsubsb`), part 1 the rest (the wrapped
    difference less it, exact for levels in [-255, 254] from the zero point:
    `DepthwiseGeometry` layers are selected so), made only for a layer with `rest_levels`; and
    the parts the channel takes: 2 where some rest is not 0, else 1."""
    k_h, k_w = filter_.shape[2:]
    quads, taps = groups(k_w), k_h * k_w
    flat = filter_.reshaped((filter_.shape[0], taps), (filter_.strides[0], 1))
    levels = load_vector(b, flat, [c, 0], WINDOW, [lane < taps for lane in range(WINDOW)])
    offset = b.int_value(weight_offset, BYTES) if isinstance(weight_offset, int) else \
        b.splat(b.truncate(weight_offset, i8), BYTES)
    first = b.emit(llvm.CallIntrinsicOp("llvm.ssub.sat.v64i8", [levels, offset], [BYTES]))
    words_taps = [tuple(ky * k_w + 4 * quad + j if 4 * quad + j < k_w else None for j in range(GROUP))
                  for ky in range(k_h) for quad in range(quads)] + list(extra)
    assert len(words_taps) * GROUP <= WINDOW, "a channel's words fit a window"
    order = DenseArrayBase.from_list(i32, [WINDOW if tap is None else tap for word in words_taps for tap in word]
                                     + [WINDOW] * (WINDOW - GROUP * len(words_taps)))
    zeros = b.int_value(0, BYTES)
    words = View.contiguous(b.alloca(2 * WINDOW, i8), (2, WINDOW), element_type=i8)
    store_vector(b, b.emit(llvm.ShuffleVectorOp(first, zeros, order, BYTES)), words, [0, 0])
    view = View(words.base, (2, WINDOW // GROUP), (WINDOW // GROUP, 1), 0, i32)
    if not rest_levels:
        return view, 1
    rest_words = b.emit(llvm.ShuffleVectorOp(b.int_sub(b.int_sub(levels, offset), first), zeros, order, BYTES))
    store_vector(b, rest_words, words, [1, 0])
    some_rest = b.int_compare("ne", b.bitcast(b.int_compare("ne", rest_words, zeros), i64), 0)
    return view, b.add(b.emit(llvm.ZExtOp(some_rest, b.index_type)), 1)


def emit_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view) -> None:
    """Per image and channel, each vector of 16 outputs: its taps' unsigned input bytes
    permuted into the accumulator (bias first) with the channel's words (`channel_words`),
    requantized (a fused table looked up by `vpermi2b`: `vnni_kernels.tables_in_registers`)
    and stored, in the plane's form (`form_of`)."""
    tables_in_registers(b, domain, op)
    dest, src, filter_, bias = view(op.dest), view(op.input), view(op.filter), view(op.bias)
    n_size, channels = dest.shape[:2]
    geometry = DepthwiseGeometry.of(op)
    form = form_of(geometry)
    with b.loops([n_size, channels]) as (n, c):
        rows = glowll.bias_rows(op)  # a start a class of output rows: `padded_start_biases`
        biases = [b.splat(b.load(bias, [k, c]), VECTOR) for k in range(rows)] if rows else None
        start = biases[0] if biases else b.splat(b.load(bias, [c]), VECTOR)
        step = output_step(b, domain, op, c)
        sums = ChannelSums(b, domain, filter_, c, op.microkernel.parameter(REST_LEVELS) is not None,
                           geometry.column_words() if form is emit_short_plane else ())

        def channel(sums: ChannelSums) -> None:
            form(b, geometry, sums, (n, c), ClassStarts(sums, start, biases), domain.input_offset,
                 JoinedOutputs(b, step, domain.lookup_table), dest, src)

        if sums.rest_levels and form is not emit_rows:
            # two versions of the channel: the vectors' sums would otherwise each wait on a loop over parts
            with b.when(b.compare("ne", sums.parts_of_channel, 1)):
                channel(sums)
            with b.when(b.compare("eq", sums.parts_of_channel, 1)):
                channel(sums.without_rest())
        else:
            channel(sums)


@dataclass
class ClassStarts:
    """A channel's starts of its vectors' sums: `start` (the bias) for the per-vector form; for
    the short and rows forms one a class of output rows (`DepthwiseGeometry.row_classes`), the
    bias's rows where it holds them (`biases`, made at compile time), else made by the
    kernel (`ChannelSums.padded_starts`)."""

    sums: ChannelSums
    start: SSAValue
    biases: list[SSAValue] | None

    def of_classes(self, padding: SSAValue, classes: list[tuple[int, int, tuple[int, ...]]]) -> list[SSAValue]:
        if self.biases is not None:
            return self.biases
        return self.sums.padded_starts(self.start, padding, [padded for _, _, padded in classes])


JOINED_VECTORS = 4
"""Vectors of 16 consecutive outputs a fused table looks up at once: 64 levels, two `vpermi2b`
and a blend for the four (`vnni_kernels.PermutedTable`), not for each."""


class JoinedOutputs:
    """A channel's output step: each vector's total requantized and narrowed to int8 levels;
    where a table is fused, up to `JOINED_VECTORS` vectors of consecutive outputs joined,
    looked up at once and stored as one. Four vectors are narrowed together by the packs and
    one `vpermd` (`saturating_packs.ordered_bytes`: 4 shuffles, where four `vpmovsdb` and three
    inserts are 7; 5x5 of 200 channels on 2 x 96 with a table 3% faster); without a table
    each vector is stored as it is done (joined, they waited for each other: 0-3% slower)."""

    def __init__(self, b: KernelBuilder, step: LaneRequantization, table):
        self.b, self.step, self.table = b, step, table
        self.joined = JOINED_VECTORS if table is not None else 1

    def groups(self, size: int):
        """(first output, the first outputs of its vectors, real lanes) of each group of at most
        `joined` vectors over `size` consecutive outputs."""
        step = LANES * self.joined
        for first in range(0, size, step):
            yield first, range(first, min(size, first + step), LANES), min(size - first, step)

    def store(self, totals: list[SSAValue], count: int, view: View, indices: list[Index]) -> None:
        """`totals`, at most `joined` vectors of the consecutive outputs from `indices` (`view`'s
        last index the first one's), `count` of their lanes real."""
        b = self.b
        joined = looked_up(b, self.table, joined_levels(b, [self.step] * len(totals), totals, view.element_type))
        lanes = joined.type.get_shape()[0]
        store_vector(b, joined, view, indices, None if count == lanes else [lane < count for lane in range(lanes)])


def form_of(geometry: DepthwiseGeometry):
    """The form a plane takes: the short form (`DepthwiseGeometry.short`), else the per-vector
    form (`DepthwiseGeometry.fits`), else the rows form."""
    return emit_short_plane if geometry.short() else emit_vectors if geometry.per_vector() else emit_rows


def unsigned_zero_point(b: KernelBuilder, input_offset: int | SSAValue) -> SSAValue:
    """The input zero point (compile-time, or a record's read at run time) as unsigned bytes
    U = x_offset + 128: the padding's taps."""
    if isinstance(input_offset, int):
        return b.int_value(signed_byte(input_offset + UNSIGNED_SHIFT), BYTES)
    return b.splat(b.truncate(b.int_add(input_offset, UNSIGNED_SHIFT), i8), BYTES)


def emit_vectors(b: KernelBuilder, geometry: DepthwiseGeometry, sums: ChannelSums, image_channel: tuple,
                 starts: ClassStarts, input_offset: int | SSAValue, outputs: JoinedOutputs, dest: View,
                 src: View) -> None:
    """The per-vector form: the plane's outputs, row-major, cut into vectors of 16, each code of
    its own: its windows (64 bytes of the plane each, at compile-time offsets) loaded and made
    unsigned, its taps permuted out of them, the taps in the padding the zero point's bytes."""
    n, c = image_channel
    n_size, channels, height, width = dest.shape
    in_plane = src.shape[2] * src.shape[3]
    plane = height * width
    assert src.strides[2:] == (src.shape[3], 1) and dest.strides[2:] == (width, 1), "planes are contiguous"
    flat_src = src.reshaped((n_size, channels, in_plane), src.strides[:2] + (1,))
    flat_dest = dest.reshaped((n_size, channels, plane), dest.strides[:2] + (1,))
    flip, padding = b.int_value(-UNSIGNED_SHIFT, BYTES), unsigned_zero_point(b, input_offset)

    def total(first: int) -> SSAValue:
        windows, padded = geometry.windows(first, min(LANES, plane - first))
        operands = [(padding, sums.word(ky, quad)) for ky, quad in padded]
        for window in windows:
            loaded = None if window.start + WINDOW <= in_plane else \
                [window.start + k < in_plane for k in range(WINDOW)]
            unsigned = b.int_xor(load_vector(b, flat_src, [n, c, window.start], WINDOW, loaded), flip)
            operands += [(b.emit(llvm.ShuffleVectorOp(unsigned, padding, DenseArrayBase.from_list(i32, taps.order),
                                                      BYTES)), sums.word(taps.ky, taps.quad)) for taps in window.taps]
        return sums.total(starts.start, operands)

    for first, vectors, count in outputs.groups(plane):
        outputs.store([total(vector) for vector in vectors], count, flat_dest, [n, c, first])


def copy_padded_plane(b: KernelBuilder, geometry: DepthwiseGeometry, src: View, n: Index, c: Index,
                      plane: View, input_offset: int | SSAValue) -> None:
    """The channel's input rows the outputs read into `plane` as unsigned bytes (x ^ 0x80), each
    row from its left padding on, the padding's columns (and the row's bytes past the input)
    the zero point's: a window of 64 bytes at a time, loaded masked to the input's columns."""
    rows, row_bytes = plane.shape
    with b.loop(0, rows) as row:
        for first in range(0, row_bytes, WINDOW):
            store_vector(b, padded_row_window(b, geometry, src, (n, c, row.index), first, input_offset), plane,
                         [row.index, first])


def padded_row_window(b: KernelBuilder, geometry: DepthwiseGeometry, src: View, row: tuple[Index, Index, Index],
                      first: int, input_offset: int | SSAValue) -> SSAValue:
    """The 64 unsigned bytes (x ^ 0x80) of input row `row` (image, channel, row) from byte
    `first` of its padded copy on (the left padding's columns first): the padding's columns and
    the bytes past the input the zero point's, the input's loaded masked to its columns."""
    in_w, left = geometry.in_hw[1], geometry.pads[1]
    columns = [0 <= first - left + k < in_w for k in range(WINDOW)]
    if not any(columns):
        return unsigned_zero_point(b, input_offset)
    levels = load_vector(b, src, [*row, first - left], WINDOW, None if all(columns) else columns, input_offset)
    return b.int_xor(levels, b.int_value(-UNSIGNED_SHIFT, BYTES))


class PaddedRows:
    """The short form's padded rows (`DepthwiseGeometry.padded_plane`) in registers, each row
    its 64-byte windows (`padded_row_window`), and the loads the taps read cut out of them by
    shuffles, which LLVM joins with the taps' permutes (one `vpermt2b` of a row's two
    windows where the stack copy's loads straddled two of its stores: a store-forwarding
    stall each)."""

    def __init__(self, b: KernelBuilder, geometry: DepthwiseGeometry, src: View, n: Index, c: Index,
                 input_offset: int | SSAValue):
        rows, row_bytes = geometry.padded_plane()
        self.b = b
        self.rows = [[padded_row_window(b, geometry, src, (n, c, row), first, input_offset)
                      for first in range(0, row_bytes, WINDOW)] for row in range(rows)]

    def load(self, row: int, start: int, size: int) -> SSAValue:
        """`size` bytes of padded row `row` from byte `start` on."""
        windows = self.rows[row]
        low = windows[start // WINDOW]
        high = windows[start // WINDOW + 1] if start % WINDOW + size > WINDOW else low
        order = DenseArrayBase.from_list(i32, [start % WINDOW + k for k in range(size)])
        return self.b.emit(llvm.ShuffleVectorOp(low, high, order, VectorType(i8, [size])))


def copied_plane(b: KernelBuilder, geometry: DepthwiseGeometry, src: View, n: Index, c: Index,
                 input_offset: int | SSAValue) -> View:
    """A stack array of `DepthwiseGeometry.padded_plane`'s bytes holding the channel's plane
    (`copy_padded_plane`)."""
    rows, row_bytes = geometry.padded_plane()
    plane = View.contiguous(b.alloca(rows * row_bytes, i8), (rows, row_bytes), element_type=i8)
    copy_padded_plane(b, geometry, src, n, c, plane, input_offset)
    return plane


def tap_orders(geometry: DepthwiseGeometry, quads: int) -> list[DenseArrayBase]:
    """Per quad, the byte permute of a window from a vector's first input column (the plane's
    copy) that gives each lane its four taps of a kernel row (0 past the kernel's columns,
    whose weights are 0)."""
    k_w = geometry.kernel[1]
    return [DenseArrayBase.from_list(i32, [geometry.tap_bytes(lane, 4 * quad + j) if 4 * quad + j < k_w else 0
                                           for lane in range(LANES) for j in range(GROUP)]) for quad in range(quads)]


def emit_short_plane(b: KernelBuilder, geometry: DepthwiseGeometry, sums: ChannelSums, image_channel: tuple,
                     starts: ClassStarts, input_offset: int | SSAValue, outputs: JoinedOutputs, dest: View,
                     src: View) -> None:
    """The short form (`DepthwiseGeometry.short`): the channel's padded rows in registers
    (`PaddedRows`, the rows form's copy without the stack), then each vector of 16 columns for
    every output row at once: each input row's window cut out and its taps permuted once for
    all the output rows that read it (a 5x5 on 2 x 96: 4 permutes for its 2 vectors of
    outputs, where the per-vector form takes 8), the kernel rows in the padding in each output
    row's start (`ClassStarts`). Where whole vectors tile the rows and a table is fused, the
    vectors join in the plane's order across rows (2 x 96: 3 lookups of 64 levels, not 4)."""
    n, c = image_channel
    (strides_y, _), (dilation_y, _), top = geometry.strides, geometry.dilations, geometry.pads[0]
    quads = sums.quads
    plane = PaddedRows(b, geometry, src, n, c, input_offset)
    padding, orders = unsigned_zero_point(b, input_offset), tap_orders(geometry, quads)
    out_h, out_w = dest.shape[2:]
    classes = geometry.row_classes()
    padded = [geometry.padded_rows(y) for y in range(out_h)]
    class_starts = starts.of_classes(padding, classes)
    row_starts = [start for (first, stop, _), start in zip(classes, class_starts) for _ in range(first, stop)]

    column_words = geometry.column_words()
    first_column_word = geometry.kernel[0] * quads
    row_quads = quads - 1 if column_words else quads

    def totals(first: int) -> list[SSAValue]:
        """The sums of output rows' vectors from column `first`, row by row."""
        windows = [plane.load(row, first * geometry.strides[1], geometry.window_bytes())
                   for row in range(len(plane.rows))]
        permuted = [[b.emit(llvm.ShuffleVectorOp(window, window, order, BYTES)) for order in orders[:row_quads]]
                    for window in windows]
        column = column_operand(b, geometry, windows) if column_words else None
        row_totals = []
        for y in range(out_h):
            operands = [(taps, sums.word(ky, quad)) for ky in range(geometry.kernel[0]) if ky not in padded[y]
                        for quad, taps in enumerate(permuted[y * strides_y + ky * dilation_y - top])]
            if column is not None:
                operands.append((column, first_column_word + y))
            row_totals.append(sums.total(row_starts[y], operands))
        return row_totals

    if outputs.joined > 1 and out_w % LANES == 0 and dest.strides[2] == out_w:
        # whole vectors tile the plane: joined in its order, across rows (2 x 96: 3 lookups, not 4)
        columns = [totals(vector) for vector in range(0, out_w, LANES)]
        plane_totals = [column[y] for y in range(out_h) for column in columns]
        flat_dest = dest.reshaped((*dest.shape[:2], out_h * out_w), (*dest.strides[:2], 1))
        for first, vectors, count in outputs.groups(out_h * out_w):
            outputs.store([plane_totals[vector // LANES] for vector in vectors], count, flat_dest, [n, c, first])
        return
    for first, vectors, count in outputs.groups(out_w):
        group = [totals(vector) for vector in vectors]
        for y in range(out_h):
            outputs.store([vector[y] for vector in group], count, dest, [n, c, y, first])


def column_operand(b: KernelBuilder, geometry: DepthwiseGeometry, windows: list[SSAValue]) -> SSAValue:
    """The bytes of the kernel's last column for every input row (`DepthwiseGeometry.column_words`):
    lane l's byte t input row t's tap, the windows joined in pairs and one two-source permute
    (`vpermt2b`) picking them."""
    width = windows[0].type.get_shape()[0]
    rows = windows + [b.int_value(0, windows[0].type)] * (GROUP - len(windows))
    pairs = [b.emit(llvm.ShuffleVectorOp(low, high, DenseArrayBase.from_list(i32, list(range(2 * width))),
                                         VectorType(i8, [2 * width]))) for low, high in (rows[:2], rows[2:])]
    last = geometry.kernel[1] - 1
    order = [(t // 2) * 2 * width + (t % 2) * width + geometry.tap_bytes(lane, last)
             for lane in range(LANES) for t in range(GROUP)]
    return b.emit(llvm.ShuffleVectorOp(pairs[0], pairs[1], DenseArrayBase.from_list(i32, order), BYTES))


def emit_rows(b: KernelBuilder, geometry: DepthwiseGeometry, sums: ChannelSums, image_channel: tuple,
              starts: ClassStarts, input_offset: int | SSAValue, outputs: JoinedOutputs, dest: View, src: View) -> None:
    """The rows form: the channel's plane copied into the stack, its padding written out
    (`copy_padded_plane`), then each output row's vectors of 16: per kernel row, one window
    from the vector's first input column and the taps permuted out of it. Kernel rows in the
    padding above or below the input are not read: their products with the zero point's bytes
    go into the start of the rows that have them (`DepthwiseGeometry.row_classes`), once a
    channel."""
    n, c = image_channel
    b.optimize_for_size = True
    assert src.strides[3] == 1 and dest.strides[3] == 1, "rows are contiguous"
    (strides_y, _), (dilation_y, _), top = geometry.strides, geometry.dilations, geometry.pads[0]
    k_h = geometry.kernel[0]
    quads = sums.quads
    plane = copied_plane(b, geometry, src, n, c, input_offset)
    padding, orders = unsigned_zero_point(b, input_offset), tap_orders(geometry, quads)
    out_w = dest.shape[3]
    classes = geometry.row_classes()
    for (first_row, stop_row, padded), class_start in zip(classes, starts.of_classes(padding, classes)):
        read = [ky for ky in range(k_h) if ky not in padded]
        with b.loop(first_row, stop_row) as y:
            top_row = b.sub(b.mul(y.index, strides_y), top)

            def total(first: int) -> SSAValue:
                operands = []
                for ky in read:
                    window = load_vector(b, plane, [b.add(top_row, ky * dilation_y), first * geometry.strides[1]],
                                         geometry.window_bytes())
                    operands += [(b.emit(llvm.ShuffleVectorOp(window, window, order, BYTES)), sums.word(ky, quad))
                                 for quad, order in enumerate(orders)]
                return sums.total(class_start, operands)

            for first, vectors, count in outputs.groups(out_w):
                outputs.store([total(vector) for vector in vectors], count, dest, [n, c, y.index, first])
