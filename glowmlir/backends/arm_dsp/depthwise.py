"""The depthwise convolution on the DSP extension: one input channel per group, on copies of the
input planes padded with the input zero point (of int8 data along undilated rows, widened to
int16: `widen_row`, `halfword_products`)."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence

from xdsl.dialects import llvm
from xdsl.dialects.builtin import i16, i32, i64
from xdsl.ir import SSAValue

from glowmlir.backends.arm_dsp.instructions import (
    after,
    element_bytes,
    high_halves,
    input_pairs,
    intrinsic,
    level,
    load_word,
    load_words,
    offset_pair,
    pack_halves,
    smlad,
)
from glowmlir.backends.arm_dsp.layout import (
    DEPTHWISE_PIXELS,
    DepthwisePlan,
    HalfwordTiling,
    convolution_depthwise_plan,
    slot_word,
    widened_planes,
)
from glowmlir.backends.arm_dsp.row_kernels import store_tile, tile_pairs, tile_products
from glowmlir.backends.arm_dsp.stack_copies import copy_row, zero_point_plane
from glowmlir.dialects import glowll
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View, is_zero
from glowmlir.lowering.loop_skeletons import (
    ArithmeticDomain,
    Row,
    fill_row,
)

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
                intrinsic(b, HALF_PRODUCTS[halves], words[word], weights[weight], totals[p])
    return totals
