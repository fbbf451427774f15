"""The depthwise convolution on the DSP extension: one input channel per group, on copies of the
input planes padded with the input zero point (of int8 data along undilated rows, widened to
int16: `widen_row`, `halfword_products`)."""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable, Sequence

from xdsl.dialects import llvm
from xdsl.dialects.builtin import i16, i32, i64
from xdsl.ir import SSAValue

from glowmlir.backends.arm_dsp.instructions import (
    after,
    element_bytes,
    high_halves,
    input_pairs,
    intrinsic,
    load_word,
    load_words,
    offset_pair,
    pack_halves,
    pack_halves_of,
    smlad,
)
from glowmlir.backends.arm_dsp.layout import (
    DEPTHWISE_PIXELS,
    OPAQUE_STARTS,
    WORDS_AHEAD,
    DepthwisePlan,
    HalfwordTiling,
    PairTiling,
    convolution_depthwise_plan,
    ordered_planes,
    slot_word,
    wide_tiling,
    widened_planes,
)
from glowmlir.backends.arm_dsp.row_kernels import tile_pairs, tile_products
from glowmlir.backends.arm_dsp.stack_copies import copy_row, zero_point_plane
from glowmlir.dialects import glowll
from glowmlir.lowering.int8_sums import level
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View, is_zero
from glowmlir.lowering.loop_skeletons import (
    ArithmeticDomain,
    Row,
    StoredElement,
    fill_row,
)

PLANE_BYTES = 2304
"""A depthwise convolution copies each input plane, padded, into this many bytes of stack:
the whole plane when it fits, else bands of it (one row of output at least). 2,304 holds a
widened 24 x 24 plane (26 rows of 84 bytes), which 2,048 cut into a band of 22 rows and one
of 2: visual wake words' 24 -> 12 stride-2 layer on the M4 180,482 -> 162,124 cycles, its
24 x 24 x 32 one 484,823 -> 489,787 (the whole model 13,967,253 -> 13,966,170, M7 8,814,847
-> 8,801,841, code 524 B less). The 48 x 48 planes (7.8 KB) stay in bands."""


UNROLLED_PLANE_OUTPUTS = 128
"""A widened depthwise plane (`arm_dsp_layout.widens_planes`) copied whole of at most this
many outputs (output rows x columns) is multiplied in straight-line code in a speed-first
build (`unrolls_plane`): its rows unrolled, each tile's words, weight words and outputs at
constant offsets from two pointers, the channel's filter copied beside the plane
(`copy_filter`). About 50 bytes of code an output: DS-CNN's planes (3x3, 25 x 5 outputs)
take 5.1 KB more a kernel, and its four depthwise layers' kernels differ in their
requantization numbers (four kernels); their depthwise layers on the M7 119,228 -> 105,752
instructions each. MobileNetV2's planes of 6 x 6 outputs or fewer are unrolled, its larger
ones (12 x 12 outputs, up to 48 x 48) stay looped. (Counted in tiles of four outputs, 32,
until the tiles of eight, `arm_dsp_layout.WIDENED_DEPTHWISE_PIXELS`: counted so, visual
wake words' 12 x 12 planes, 24 tiles of eight, were unrolled: about 13 KB more code.) A
size-first build keeps the loop (its convolutions carry `loop_pairs`)."""


STRAIGHT_ROW_TILES = 3
"""A looped plane's stride-1 row in a speed-first build of at most this many tiles of `plan.pixels` (not counting its
last tile) takes them in straight-line code, each at a constant column: visual wake words'
24 x 24 x 32 layer (three tiles of eight) on the M4 454,395 -> 374,490 cycles, on the M7
267,680 -> 244,640. Stride 2 too, its 24 -> 12 layer on the M4 (ordered, three tiles of four)
took 138,702 -> 133,612, its 48 -> 24 one on the M7 (widened, three of eight) 183,983 ->
164,507, but the M7's code 49,304 B, over 48 KB. At 6, the M4's 48 x 48 x 8 layer took
403,934 -> 428,966 (its 48 -> 24 stride-2 one 263,262 -> 246,059)."""

ORDERED_ROW_TILES = 6
"""`STRAIGHT_ROW_TILES` of a row of int8 planes read in order (stride 2 on a single-issue core,
`DepthwisePlan.ordered`, tiles of four): visual wake words' 48 -> 24 layer (six tiles) on the
M4 263,262 -> 246,059 cycles, its 24 -> 12 one (three) 138,702 -> 133,612."""


def straight_row_tiles(plan: DepthwisePlan, stride: int) -> int:
    """The most tiles a speed-first build's looped row takes in straight-line code."""
    return ORDERED_ROW_TILES if plan.ordered else STRAIGHT_ROW_TILES if stride == 1 else 0


def depthwise_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view) -> None:
    """An unpooled convolution of one input channel per group (depthwise, of any channel
    multiplier, or of a one-channel input), plane by plane (`arm_dsp_layout.DepthwisePlan`).

    Each input plane (or band of its rows, `PLANE_BYTES`) is copied a word at a time into a
    stack plane whose padding holds the input zero point: a padded tap then adds the
    product the folded bias takes off (or, not folded, its pair less the offset is 0), so
    every tile is an interior one. Per output row, tiles of `plan.pixels` outputs keep
    their accumulators in registers over the kernel rows (input words to pairs, weight words
    by `LDRD`, `SMLAD`s), then one tile of the outputs left; every output channel of the
    input channel reads the same copy (`DepthwiseChannel`).

    A widened plan (int8 data, undilated rows: `arm_dsp_layout.widens_planes`) copies the
    planes as int16 (`widen_row`): the tiles load their words two at a time and multiply
    them as they are (`halfword_products`), with the weight words of each tile read through
    an opaque pointer, by `LDRD` too. A small widened plane's rows are unrolled whole in a
    speed-first build (`UNROLLED_PLANE_OUTPUTS`)."""
    DepthwiseConvolution(b, domain, op, view).emit()


class DepthwiseConvolution:
    """A depthwise convolution's views, plan, bands of rows and stack plane
    (`depthwise_convolution`)."""

    def __init__(self, b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view):
        self.b, self.domain, self.op = b, domain, op
        self.dest, self.src, self.packed, self.bias = view(op.dest), view(op.input), view(op.filter), view(op.bias)
        self.n_size, self.channels, self.out_h, self.out_w = self.dest.shape
        _, self.in_c, self.in_h, self.in_w = self.src.shape
        filter_shape = op.filter_shape.get_values()
        self.k_h = filter_shape[2]
        (self.sy, self.sx), (self.dy, _) = op.strides.get_values(), op.dilations.get_values()
        self.pads = op.pads.get_values()
        self.widened = widened_planes(op)
        self.plan = plan = convolution_depthwise_plan(self.src.shape, filter_shape, (self.sy, self.sx), self.pads,
                                                      op.dilations.get_values(), self.widened, ordered_planes(op))
        row_bytes = 4 * plan.row_words if self.widened else plan.padded_width * element_bytes(self.src)
        largest = next((rows for rows in range(self.out_h, 0, -1)
                        if self.rows_read(rows) * row_bytes <= PLANE_BYTES), 1)
        self.bands = -(-self.out_h // largest)
        self.band = -(-self.out_h // self.bands)  # as even as they can be: the last band copies as many rows
        self.words = -(-self.rows_read(self.band) * row_bytes // 4)
        self.x_offset = None if op.folded_input_offset is not None else offset_pair(b, domain.input_offset)
        self.derived = op.microkernel.parameter("loop_pairs") is None  # not a size-first build's loop
        self.opaque_starts = op.microkernel.parameter(OPAQUE_STARTS) is not None
        self.words_ahead = op.microkernel.parameter(WORDS_AHEAD) is not None
        self.unrolled = unrolls_plane(plan, self.out_h, self.out_w, self.bands, self.derived)
        # looped wide tiles on a dual-issue core read the channel's filter from a copy after the plane
        self.stack_filter = self.widened and self.words_ahead and not self.unrolled
        self.make_plane()

    def rows_read(self, outputs: int) -> int:
        """The input rows `outputs` output rows read."""
        return (outputs - 1) * self.sy + (self.k_h - 1) * self.dy + 1

    def make_plane(self) -> None:
        """The stack plane (`plane`, its input columns `columns`) and the word of its padding."""
        b, domain, plan, src = self.b, self.domain, self.plan, self.src
        filter_words = self.k_h * self.packed.shape[2]  # a channel's packed weight words
        # widened, the offset not folded, the copy subtracts it: the padding is 0 (unrolled: the filter after it)
        if self.widened:
            plane, self.padding = zero_point_plane(b, 0 if self.x_offset is not None else domain.input_offset,
                                                   self.words + (filter_words if self.unrolled or self.stack_filter
                                                                 else 0), i16)
            self.plane = View.contiguous(plane.base, (self.rows_read(self.band), plan.row_words), element_type=i32)
            self.columns = self.plane
        else:
            plane, self.padding = zero_point_plane(b, domain.input_offset, self.words, src.element_type)
            self.plane = View.contiguous(
                plane.base, (self.words * 4 // element_bytes(src) // plan.padded_width, plan.padded_width),
                element_type=src.element_type)
            self.columns = self.plane.reshaped(self.plane.shape, self.plane.strides, plan.pad_left)  # the input's

    def emit(self) -> None:
        """Every band of every input plane copied, then each output channel of its input channel."""
        b = self.b
        multiplier = self.channels // self.in_c  # output channels of each input channel
        with b.loops([self.n_size, self.in_c, self.bands]) as (n, g, band_index):
            y0 = b.mul(band_index, self.band)
            self.copy_band(n, g, b.sub(b.mul(y0, self.sy), self.pads[0]))
            with b.loops([multiplier]) as (j,):
                DepthwiseChannel.of(self, n, b.add(b.mul(g, multiplier), j), y0).emit()

    def copy(self, source: Row, r: Index) -> None:
        if self.widened:
            widen_row(self.b, self.domain, source, self.plane, r, self.plan.pad_left, self.in_w, self.x_offset)
        else:
            copy_row(self.b, source, Row(self.columns, (r,)), self.in_w)

    def copy_band(self, n: Index, c: Index, top: Index) -> None:
        """Input rows top .. top + rows_read(band) - 1 of plane (n, c) into the stack plane
        (a row outside the input: padding, when bands of the plane take turns in it)."""
        b, src, in_h, pads = self.b, self.src, self.in_h, self.pads
        if self.bands == 1 and self.widened:  # rows pads[0] .. pads[0] + in_h - 1, the padding never written
            with b.loop(0, min(in_h, self.rows_read(self.band) - pads[0])) as in_y:
                self.copy(Row(src, (n, c, in_y.index)), b.add(in_y.index, pads[0]))
            return
        with b.loop(0, self.rows_read(self.band)) as r:
            in_y = b.add(top, r.index)
            with b.when(b.in_range(in_y, in_h)):
                self.copy(Row(src, (n, c, in_y)), r.index)
            if self.bands > 1:
                with b.when(b.compare("uge", in_y, in_h)):
                    if self.widened:
                        fill_row(b, Row(self.plane, (r.index,)), self.plan.row_words, lambda x: self.padding)
                    else:
                        fill_row(b, Row(self.columns, (r.index,)), self.in_w,
                                 lambda x: b.truncate(self.padding, src.element_type))

    def padding_rows(self, y: int) -> tuple[int, ...]:
        """The kernel rows of (unrolled) output row y wholly in the plane's top or bottom padding."""
        return tuple(ky for ky in range(self.k_h) if not 0 <= y * self.sy + ky * self.dy - self.pads[0] < self.in_h)

    def tile(self, n: Index, c: Index, y: Index, plane_y: Index, start: SSAValue | list[SSAValue], index: int,
             x0: Index, filter_rows: View | None = None, skipped: Sequence[int] = (),
             channel_plane: View | None = None, stored: StoredElement | None = None, shifted: bool = False) -> None:
        """The tile of tiling `index` from output column x0 of output row y (stack plane row
        `plane_y` under its kernel row 0), its sums from `start` (or each output's), the
        kernel rows `skipped` left out (their products in `start`); unrolled, the plane read
        through `channel_plane`; the outputs stored through `stored` (the channel's
        `ArithmeticDomain.output`, None: as they are); `shifted`: a tile from 2 columns past a
        multiple of 4 (`DepthwisePlan.shifted`)."""
        b, plan, plane = self.b, self.plan, self.plane
        tiling = plan.shifted if shifted else plan.tilings[index]
        wide = wide_tiling(tiling)  # more accumulators than DS-CNN's five
        if wide and self.opaque_starts and not isinstance(start, list):
            start = b.opaque(start)  # in a register for the tile's first products (`OPAQUE_STARTS`)
        totals = list(start) if isinstance(start, list) else [start] * len(tiling.products)
        if self.widened:
            group = b.div(b.mul(x0, self.sx), 4)  # of four columns, three words
            if self.unrolled:  # at constant offsets from the channel's copy of the plane's address
                under = channel_plane.reshaped(plane.shape, plane.strides, plane_y * plan.row_words + 3 * group)
            else:
                under = View.contiguous(b.opaque(b.element(plane, [plane_y, b.mul(group, 3)])), plane.shape,
                                        element_type=i32)  # the tile's words from its kernel row 0
        kept = [ky for ky in range(self.k_h) if ky not in skipped]
        if self.widened and wide and self.words_ahead:  # the M7: loads ahead of their products
            rows = [(functools.partial(single_word, b, filter_rows, [0, ky], plan.word_offsets[index]),
                     functools.partial(single_word, b, under, [ky * self.dy], 0)) for ky in kept]
            totals = products_ahead(b, tiling, rows, totals, LOADS_AHEAD)
            kept = []
        for ky in kept:
            if self.widened:
                weights = slotted_words(b, filter_rows, [0, ky], plan.word_offsets[index], len(tiling.weight_words))
                if wide:  # each word loaded as the outputs need it
                    words = functools.partial(slotted_run, b, under, [ky * self.dy], tiling)
                else:
                    words = slotted_words(b, under, [ky * self.dy], tiling.first_word, tiling.words - tiling.first_word)
                    words = [None] * tiling.first_word + words
                totals = halfword_products(b, tiling, words, weights, totals)
                if ky == kept[0] or wide:  # the next kernel rows' loads (a wide tile's output step) wait for it
                    after(b, totals)
                continue
            row = Row(plane, (b.add(plane_y, ky * self.dy),))
            weights = load_words(b, self.packed, [c, ky, plan.word_offsets[index], 0], len(tiling.weight_words))
            if plan.ordered:
                totals = ordered_pair_products(b, row, b.mul(x0, self.sx), tiling, self.x_offset, weights, totals)
                if ky != kept[-1]:  # the next kernel row's loads wait for its products
                    after(b, totals)
                continue
            pairs = tile_pairs(b, row, b.mul(x0, self.sx), tiling, self.x_offset, derive=self.derived)
            totals = tile_products(b, tiling, pairs, 1, totals, lambda j: weights)
        for p, total in enumerate(totals):  # through the channel's output step, made once a channel
            b.store(stored(total) if stored is not None else total, self.dest, [n, c, y, b.add(x0, p)])


@dataclasses.dataclass
class DepthwiseChannel:
    """Output channel c of a depthwise convolution over a band of rows (from output row y0) of
    its input plane's copy: where its sums start (`start`; the last tile's `last_start`, an
    unrolled row's tiles' `edge_starts`), its weight words (`filter_rows`, widened) and,
    unrolled, the plane and the filter's copy after it (`channel_plane`)."""

    kernel: DepthwiseConvolution
    n: Index
    c: Index
    y0: Index
    start: SSAValue
    last_start: SSAValue
    filter_rows: View | None
    channel_plane: View | None = None
    stored: StoredElement | None = None
    edge_starts: dict[tuple[tuple[int, ...], int], list[SSAValue]] = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, kernel: DepthwiseConvolution, n: Index, c: Index, y0: Index) -> DepthwiseChannel:
        """Channel c's bias, and widened, its weight words read in each tile (and the last
        tile's starts, its dropped taps' products in)."""
        b, plan = kernel.b, kernel.plan
        start = kernel.domain.bias(kernel.bias, c)
        filter_rows, last_start = None, start
        if kernel.widened:  # channel c's weight words, read in each tile
            filter_rows = View.contiguous(b.opaque(b.element(kernel.packed, [c, 0, 0, 0])), kernel.packed.shape,
                                          element_type=kernel.packed.element_type)
            if plan.tilings[-1].dropped and kernel.x_offset is None:
                last_start = padding_products(b, kernel.domain, filter_rows, plan.tilings[-1], plan.word_offsets[-1],
                                              kernel.k_h, start)
        stored = kernel.domain.output(c, kernel.dest.element_type)  # its numbers read once a channel
        return cls(kernel, n, c, y0, start, last_start, filter_rows, stored=stored)

    def emit(self) -> None:
        """The channel's output rows of the band (unrolled: with their edge starts)."""
        kernel, b = self.kernel, self.kernel.b
        for y in range(kernel.out_h // 2 if kernel.unrolled else 0):  # the top rows' starts, before the filter's copy
            self.make_edge_starts(y)
        if kernel.unrolled:  # the plane and a copy of the channel's filter after it, from one opaque pointer
            self.channel_plane = View.contiguous(b.opaque(kernel.plane.base), kernel.plane.shape, element_type=i32)
            self.filter_rows = copy_filter(b, self.filter_rows, self.channel_plane.base, kernel.words)
        if kernel.stack_filter:  # at constant offsets from the stack pointer
            copied = copy_filter(b, self.filter_rows, b.opaque(kernel.plane.base), kernel.words)
            self.filter_rows = dataclasses.replace(copied, base=kernel.plane.base)
        if kernel.unrolled:
            for y in range(kernel.out_h):
                self.row(y)
        else:
            with b.loop(0, b.min(kernel.band, b.sub(kernel.out_h, self.y0))) as y:
                self.row(y.index)

    def make_edge_starts(self, y: int) -> None:
        """Unrolled output row y's tiles leave out its kernel rows in the top or bottom
        padding: the starts of each tiling's outputs, those rows' products in
        (`edge_starts`). Not where the offset is not folded (the padding is 0: nothing to
        leave out) nor in rows of fewer than four outputs (MobileNetV2's 3 x 3 planes:
        the starts cost more than the products they save)."""
        kernel = self.kernel
        plan, last = kernel.plan, len(kernel.plan.tilings) - 1
        skipped = kernel.padding_rows(y)
        if kernel.unrolled and kernel.x_offset is None and skipped and kernel.out_w >= DEPTHWISE_PIXELS:
            for index in {0 if plan.tiles else last, last}:
                if (skipped, index) not in self.edge_starts:
                    self.edge_starts[skipped, index] = padding_products(
                        kernel.b, kernel.domain, self.filter_rows, plan.tilings[index], plan.word_offsets[index],
                        kernel.k_h, self.start, skipped, (plan.tilings[-1], plan.word_offsets[-1]))

    def starts_of(self, y: Index, index: int, otherwise: SSAValue) -> tuple[tuple[int, ...], SSAValue]:
        """The kernel rows tiling `index` of output row y leaves out, and its outputs'
        starts (`edge_starts`; else none and `otherwise`)."""
        key = (self.kernel.padding_rows(y), index) if self.kernel.unrolled else None
        return (key[0], self.edge_starts[key]) if key in self.edge_starts else ((), otherwise)

    def row(self, y: Index) -> None:
        """Output row y of the band: its tiles (straight, `STRAIGHT_ROW_TILES`; in pairs, the
        second shifted, `DepthwisePlan.shifted`; else a loop), then the last tile."""
        kernel, b, n, c = self.kernel, self.kernel.b, self.n, self.c
        plan, last = kernel.plan, len(kernel.plan.tilings) - 1
        plane_y = b.mul(y, kernel.sy)
        tile = functools.partial(kernel.tile, filter_rows=self.filter_rows, channel_plane=self.channel_plane,
                                 stored=self.stored)
        if kernel.unrolled:  # the bottom rows' from the copy, right before them (made first: held in registers)
            self.make_edge_starts(y)
        if plan.tiles and kernel.unrolled:
            skipped, tile_start = self.starts_of(y, 0, self.start)
            for t in range(plan.tiles):
                tile(n, c, b.add(self.y0, y), plane_y, tile_start, 0, t * plan.pixels, skipped=skipped,
                     shifted=t * plan.pixels * kernel.sx % 4 != 0)
        elif plan.tiles and plan.shifted is not None:  # tiles in pairs, the second from 2 columns on
            with b.loop(0, plan.tiles // 2) as t:
                for second in (False, True):
                    tile(n, c, b.add(self.y0, y), plane_y, self.start, 0,
                         b.add(b.mul(t.index, 2 * plan.pixels), plan.pixels if second else 0), shifted=second)
        elif plan.tiles and kernel.derived and plan.tiles <= straight_row_tiles(plan, kernel.sx):  # constant columns
            for t in range(plan.tiles):
                tile(n, c, b.add(self.y0, y), plane_y, self.start, 0, t * plan.pixels)
        elif plan.tiles:
            with b.loop(0, plan.tiles) as t:
                tile(n, c, b.add(self.y0, y), plane_y, self.start, 0, b.mul(t.index, plan.pixels))
        if plan.tiles * plan.pixels < kernel.out_w:
            skipped, tile_start = self.starts_of(y, last, self.last_start)
            tile(n, c, b.add(self.y0, y), plane_y, tile_start, last,
                 plan.tiles * plan.pixels, skipped=skipped)


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
    """Whether a depthwise plane's rows are unrolled whole (`UNROLLED_PLANE_OUTPUTS`): a
    widened plane copied whole, of at most that many outputs, in a speed-first build."""
    return plan.widened and speed_first and bands == 1 and out_h * out_w <= UNROLLED_PLANE_OUTPUTS


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


def slotted_run(b: KernelBuilder, view: View, prefix: Sequence[Index], tiling: HalfwordTiling,
                word: int) -> dict[int, SSAValue]:
    """Word `word` of a tile's kernel row (`HalfwordTiling`) and the word beside it in its
    slot when the tile reads it (one `LDRD`; `slot_word`), by their indices."""
    run = [word, word + 1] if word % 2 == 0 and tiling.first_word <= word + 1 < tiling.words else [word]
    run = [w for w in run if w >= tiling.first_word]
    return dict(zip(run, slotted_words(b, view, prefix, run[0], len(run))))


def ordered_pair_products(b: KernelBuilder, row: Row, first: Index, tiling: PairTiling, x_offset: SSAValue | None,
                          weights: list[SSAValue], totals: list[SSAValue]) -> list[SSAValue]:
    """`totals` plus the products of one kernel row of a tile (`PairTiling`) over int8 `row`
    from its column `first` (a multiple of 4), its aligned words loaded as the outputs in
    order first need them, each load after the products before it (`after`: eight
    accumulators, two weight words and two words' pairs fill the registers).

    Pair i of the tiling is the bytes (i, i + 2) of the word at byte 2 (i // 2): of an
    aligned word a (bytes 4a .. 4a + 3) `SXTB16` gives the pairs (4a, 4a + 2) and
    (4a + 1, 4a + 3), multiplied by `SMLAD`. A pair of the word between two aligned ones
    (bytes 4a + 2 .. 4a + 5) is the high half of aligned word a's pair and the low half of
    word a + 1's: with both its taps, one `PKHBT` makes it swapped and `SMLADX` multiplies
    it; with one tap (a weight word's other half None), `SMLATB` or `SMLABT` takes that
    half where it is. A stride-2 row of three taps: per two outputs one load, two
    `SXTB16`s, one `PKHBT` and four multiplies."""
    split: dict[int, tuple[SSAValue, SSAValue]] = {}
    derived: dict[tuple[int, int], SSAValue] = {}
    totals = list(totals)

    def aligned(a: int) -> tuple[SSAValue, SSAValue]:
        if a not in split:
            if split:
                after(b, totals)
            split[a] = input_pairs(b, load_word(b, row.view, row.at(b.add(first, 4 * a))), x_offset)
        return split[a]

    for p, products in enumerate(tiling.products):
        for pair, weight in products:
            word, odd = divmod(pair, 2)  # the word at byte 2 word; odd: its pair (1, 3)
            low_tap, high_tap = tiling.weight_words[weight]
            if word % 2 == 0:
                totals[p] = smlad(b, aligned(word // 2)[odd], weights[weight], totals[p])
            elif high_tap is None:  # the pair's low byte alone: aligned word a's pair, high half
                totals[p] = intrinsic(b, "smlatb", aligned(word // 2)[odd], weights[weight], totals[p])
            elif low_tap is None:  # its high byte alone: word a + 1's pair, low half
                totals[p] = intrinsic(b, "smlabt", aligned(word // 2 + 1)[odd], weights[weight], totals[p])
            else:
                if (word, odd) not in derived:
                    before, next_pair = aligned(word // 2)[odd], aligned(word // 2 + 1)[odd]
                    derived[word, odd] = pack_halves_of(b, next_pair, before)  # (byte 2 word + 2, byte 2 word)
                totals[p] = intrinsic(b, "smladx", derived[word, odd], weights[weight], totals[p])
    return totals


LOADS_AHEAD = 2
"""On the M7 (`WORDS_AHEAD`) a wide tile loads each weight word and each input
word alone, this many products before the first product that reads it (`products_ahead`):
llvm-mca's Cortex-M7 issues an `LDRD` alone, an `LDR` beside an independent multiply. Visual
wake words on the M7 (model estimate, with the filter on the stack, `DepthwiseConvolution.stack_filter`):
its depthwise layers' looped tile of eight 89 -> 82 cycles; one product ahead, or three, lost
to two (6,286,041 and 6,276,585 cycles against 6,256,379 without the stack filter)."""


def single_word(b: KernelBuilder, view: View, prefix: Sequence[Index], offset: int, word: int) -> SSAValue:
    """Word `offset + word` of `view[*prefix]` laid out by `slot_word`, loaded alone."""
    return slotted_words(b, view, prefix, offset + word, 1)[0]


def products_ahead(b: KernelBuilder, tiling: HalfwordTiling,
                   rows: Sequence[tuple[Callable[[int], SSAValue], Callable[[int], SSAValue]]],
                   totals: list[SSAValue], ahead: int) -> list[SSAValue]:
    """`totals` plus the products of a wide tile's kernel rows (`halfword_products`' products,
    row after row): `rows` gives each kernel row's weight word and input word by index. Each
    word is loaded alone (`LDR`: the Cortex-M7 issues an `LDRD` alone, an `LDR` beside a
    multiply), `ahead` products before the first product that reads it, after the products
    before that point (`after`, which also keeps LLVM from joining two loads)."""
    steps = [(r, p, word, weight, halves) for r in range(len(rows))
             for p, products in enumerate(tiling.products) for word, weight, halves in products]
    loaded: dict[tuple[int, int, int], SSAValue] = {}
    totals = list(totals)
    for i, (r, p, word, weight, halves) in enumerate(steps):
        window = steps[i:i + ahead + 1]
        needed = dict.fromkeys(key for row, _, x, w, _ in window for key in ((0, row, w), (1, row, x)))
        for key in sorted(needed, key=lambda key: key[1]):  # a row's weight words before its input words
            if key not in loaded:
                if loaded:
                    after(b, totals)
                loaded[key] = rows[key[1]][key[0]](key[2])
        totals[p] = halfword_product(b, loaded[1, r, word], loaded[0, r, weight], halves, totals[p])
    after(b, totals)  # the output step waits for the last products
    return totals


def halfword_products(b: KernelBuilder, tiling: HalfwordTiling,
                      words: list[SSAValue] | Callable[[int], dict[int, SSAValue]], weights: list[SSAValue],
                      totals: list[SSAValue]) -> list[SSAValue]:
    """`totals` (one per output of the tile) plus the products of one kernel row of int16
    `words` (`HalfwordTiling`): a word's two taps by `SMLAD`, a tap alone by `SMLA<x><y>`.
    Given a function of a word's index (`slotted_run`), the words are loaded as the outputs
    in order first need them, each load after the products before it (`after`: the 8-output
    tiles keep two or three words of input live, not the row's five)."""
    totals = list(totals)
    if callable(words):
        load, words = words, {}
    for p, products in enumerate(tiling.products):
        for word, weight, halves in products:
            if isinstance(words, dict) and word not in words:
                if words:
                    after(b, totals)
                words.update(load(word))
            totals[p] = halfword_product(b, words[word], weights[weight], halves, totals[p])
    return totals


def halfword_product(b: KernelBuilder, word: SSAValue, weight: SSAValue, halves: tuple[int, int] | None,
                     total: SSAValue) -> SSAValue:
    """`total` plus one product of a `HalfwordTiling`: both halves (`SMLAD`), or the (input
    half, weight half) `halves` (`SMLA<x><y>`)."""
    return smlad(b, word, weight, total) if halves is None else intrinsic(b, HALF_PRODUCTS[halves], word, weight, total)
