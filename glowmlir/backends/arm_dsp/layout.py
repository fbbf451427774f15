"""The data layout of the Arm DSP-extension int8 convolution (`backends.arm_dsp.emitters`).

Along a row of the input, one word load gives the int16 *input pairs* (i, i + 2) and
(i + 1, i + 3) of four adjacent columns (`SXTB16`, `SXTB16 ror #8`). A *tile* of
`TILE_PIXELS` adjacent outputs of one output row reads the input columns under its windows
as such pairs (`PairTiling`); the filter is stored as the int16 *weight pairs* the tiling
multiplies them with (`pack_filter`). Both the selection pass, which packs the filter, and
the kernel, which reads it, take the layout from here.

A depthwise convolution (one input channel per group) runs plane by plane on a
copy of each input plane padded with the input zero point (`DepthwisePlan`): every tile is
then an interior tile of `DEPTHWISE_PIXELS` outputs, the row's last outputs a tile of their
own. Of int8 data along undilated rows (`widens_planes`) the copy holds int16 elements,
which a tile multiplies as they are (`HalfwordTiling`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from xdsl.dialects.builtin import i8

from glowmlir.dialects import glow
from glowmlir.dialects.quant import storage_type

LEVEL_TABLES = "level-tables"
"""The microkernel of int8 adds, subs and softmaxes that look up values of single levels in tables
(`level_tables`)."""
LEVEL_TABLE_ENTRIES = 256
"""A table of levels holds one entry per int8 level."""
LEVEL_TABLE_ELEMENTWISE = ("add", "sub")
"""The `glowll.elementwise` kinds whose terms a kernel may look up in tables of levels."""
CHANNEL_PRODUCTS = "channel-products"
"""The microkernel of int8 Muls of a tensor by one level per channel (`channel_products`)."""

RECIPROCAL_QUANTIZE = "reciprocal-quantize"
"""The microkernel of float to int8 quantizes by a multiply (`reciprocal_quantize`)."""

LEVEL_TABLE_ELEMENTWISE_FROM = 192
"""Elements from which an int8 Add or Sub takes tables of levels. Measured in estimated
cycles (tests/unit/test_arm_dsp_kernel_choices.py; /tmp sweeps of adds of 96 to 512
elements) the two kernels meet at 150 to 190 elements on the M4 and the M33 (filling the
two tables costs 2,800 to 3,700 cycles, with the quantization parameters; a generic
element about 27, a looked-up one about 11) and at about 120 on the M7: a table entry
costs about a fifth of an element's generic work. From 192 the tables are ahead on all
three (M4: 4,697 against 5,409 cycles at 192; the M7 gives up 12-30% on adds of 120 to
191 elements). The rule this replaced (more than 512 elements: a table entry priced as
an element's term) kept adds of 192 to 512 elements generic, 13-67% slower on the M4 and
47-55% on the M7."""

TILE_PIXELS = 2
"""Adjacent outputs of a row computed together by the DSP convolution."""

CHANNEL_BLOCK = 2
"""Output channels computed together (when the channels of a group divide by it)."""

QUAD_CHANNELS = 16
"""A pointwise convolution of at most this many input channels takes four pixels a tile
(8 accumulators and 4 pairs: fast while LLVM unrolls the few channel pairs whole); over
more channels, two pixels a tile fit the registers (four output channels a tile would be
5% faster on MobileNetV2 on the M7 and 25% more code)."""


@dataclass(frozen=True)
class PairTiling:
    """How a tile of `pixels` adjacent outputs reads one kernel row as int16 pairs.

    Input byte b is column `first + b` of the input row, where `first` is the tile's
    first input column. `words` words are loaded, at bytes 0, 2, 4, ...; input pair i is
    the bytes (i, i + 2): the low pair of word i // 2 if i is even, else its high pair.
    `weight_words` are the distinct weight pairs, each (tap of the low half, tap of the
    high half), None for a zero weight; `products[p]` lists (input pair, weight word) of
    output p of the tile.
    """

    words: int
    weight_words: tuple[tuple[int | None, int | None], ...]
    products: tuple[tuple[tuple[int, int], ...], ...]

    @property
    def bytes_read(self) -> int:
        """Input columns the tile's word loads span (its last one is `first + bytes_read - 1`)."""
        return 2 * self.words + 2

    def tap_position(self, tap: int) -> tuple[int, int]:
        """(weight word, half) holding the weight of `tap`."""
        for index, word in enumerate(self.weight_words):
            if tap in word:
                return index, word.index(tap)
        raise AssertionError(f"tap {tap} is not in the tiling")


@cache
def pair_tiling(width: int, stride: int, dilation: int, pixels: int = TILE_PIXELS) -> PairTiling:
    """The tiling of a kernel row of `width` taps (stride, dilation along the row)."""
    return tiling_of(tuple(tuple((p * stride + k * dilation, k) for k in range(width)) for p in range(pixels)))


def tiling_of(columns: tuple[tuple[tuple[int, int], ...], ...]) -> PairTiling:
    """The tiling of outputs whose taps are at the given input bytes: `columns[p]` lists
    (byte, tap) of output p (a tap in the padding is left out)."""
    span = max((column for taps in columns for column, _ in taps), default=0)  # the last byte needed
    words = max(1, -(-(span - 1) // 2))  # word j holds bytes 2j .. 2j + 3: 2 * words + 1 >= span
    last_pair = 2 * words - 1
    weight_words: dict[tuple[int | None, int | None], int] = {}
    products = []
    for pixel_taps in columns:
        taps = dict(pixel_taps)
        waiting = sorted(taps)
        chosen = []
        while waiting:
            column = waiting.pop(0)
            if column <= last_pair and column + 2 in waiting:
                waiting.remove(column + 2)
                pair, word = column, (taps[column], taps[column + 2])
            elif column <= last_pair:
                pair, word = column, (taps[column], None)
            else:  # beyond the last pair's first byte: the high half of the pair two columns back
                pair, word = column - 2, (None, taps[column])
            chosen.append((pair, weight_words.setdefault(word, len(weight_words))))
        products.append(tuple(chosen))
    return PairTiling(words, tuple(weight_words), tuple(products))


DEPTHWISE_PIXELS = 4
"""Adjacent outputs of a row computed together by the depthwise convolution: four
accumulators and, for a 3-wide row of stride 1, two words of input (four pairs), three
weight words and two SMLADs per output and kernel row."""

WIDENED_DEPTHWISE_PIXELS = 8
"""Adjacent outputs of a row computed together on a widened plane (`DepthwisePlan.widened`):
eight accumulators, the weight words of a kernel row loaded once for eight outputs instead
of four, and each input word once for the tile (issue 37: visual wake words' depthwise
layers on the M4 2.81 -> 2.46 cycles a MAC at 48 x 48 x 8; in a tile of more than five
outputs the words of a kernel row are loaded as the outputs need them, `arm_dsp.slotted_run`,
or LLVM loads the row's five first and spills accumulators)."""

ORDERED_PIXELS = 4
"""Adjacent outputs of a row computed together on an int8 plane read in order
(`DepthwisePlan.ordered`) when the row has more than WIDENED_DEPTHWISE_PIXELS (else the row is
one tile): visual wake words' 48 -> 24 stride-2 layer on the M4 282,430 cycles in tiles of
eight (LLVM spilled a dozen values a tile), 263,262 in tiles of four; its 12 -> 6 one 74,200
as a tile of four and one of two, 65,624 as one tile of six."""

def halved_row_pixels(width: int, stride: int) -> int | None:
    """The tile of a widened stride-1 row of 12 outputs (more than WIDENED_DEPTHWISE_PIXELS, a
    multiple of 4, up to twice that but not twice it): half the row, two tiles of six, the
    second from 2 columns past a multiple of 4 (`DepthwisePlan.shifted`), instead of a tile of
    eight and one of four (the weight words of one tiling, read once a row). Visual wake
    words' 12 x 12 x 64 layer on the M4 221,030 -> 203,174 cycles (M7 136,704 -> 138,012). Not
    wider rows (tiles of six in pairs a loop step: its 24 x 24 x 32 layer 454,395 -> 482,813, its
    48 x 48 x 8 one 403,934 -> 464,672 on the M4) nor stride 2 (on the M7 its 24 -> 12 layer
    84,883 -> 95,811 in tiles of six). None: the tiles of WIDENED_DEPTHWISE_PIXELS."""
    pixels = width // 2
    if stride == 1 and WIDENED_DEPTHWISE_PIXELS < width < 2 * WIDENED_DEPTHWISE_PIXELS and width % 4 == 0:
        return pixels
    return None


MERGED_REST = 1
"""A depthwise row whose tiles of DEPTHWISE_PIXELS leave at most this many outputs takes
them into its last tile (DS-CNN's rows of 5: one tile of five, three words of input and the
same three weight words per kernel row, instead of a tile of four and a tile of one with
words of their own)."""


@dataclass(frozen=True)
class RowPlan:
    """How a convolution row of `width` outputs is computed, in tiles of TILE_PIXELS.

    `tilings[0]` is the interior tiling, used by `interior` = (first output, tiles) tiles
    whose words all lie in the input row; each of `edges` = (first output, tiling, first
    loaded column) is a tile whose windows reach into the padding or whose interior words
    would leave the row, with a tiling of its own that leaves those taps out and loads
    from inside the row; `singles` are the outputs computed one tap at a time. The packed
    filter holds the weight words of every tiling, the i-th's from `word_offsets[i]`.
    """

    tilings: tuple[PairTiling, ...]
    word_offsets: tuple[int, ...]
    interior: tuple[int, int]
    edges: tuple[tuple[int, int, int], ...]
    singles: tuple[int, ...]

    @property
    def words(self) -> int:
        return self.word_offsets[-1] + len(self.tilings[-1].weight_words)


@cache
def row_plan(in_width: int, width: int, kernel: int, stride: int, dilation: int, pad_left: int) -> RowPlan:
    interior = pair_tiling(kernel, stride, dilation)
    tilings, edges, inside, singles = [interior], [], [], []
    for x0 in range(0, width - TILE_PIXELS + 1, TILE_PIXELS):
        first = x0 * stride - pad_left
        if first >= 0 and first + interior.bytes_read <= in_width:
            inside.append(x0)
            continue
        taps = [[(first + p * stride + k * dilation, k) for k in range(kernel)] for p in range(TILE_PIXELS)]
        taps = [[(column, k) for column, k in pixel if 0 <= column < in_width] for pixel in taps]
        kept = [column for pixel in taps for column, _ in pixel]
        origin = min(kept, default=0)
        words = max(1, -(-(max(kept, default=0) - origin - 1) // 2))
        origin = min(origin, in_width - 2 * words - 2)  # the words stay in the row
        if not kept or origin < 0:
            singles += range(x0, x0 + TILE_PIXELS)
            continue
        edges.append((x0, len(tilings), origin))
        tilings.append(tiling_of(tuple(tuple((column - origin, k) for column, k in pixel) for pixel in taps)))
    singles += range(width - width % TILE_PIXELS, width)
    offsets = [0]
    for tiling in tilings[:-1]:
        offsets.append(offsets[-1] + len(tiling.weight_words))
    return RowPlan(tuple(tilings), tuple(offsets), (inside[0] if inside else 0, len(inside)), tuple(edges),
                   tuple(sorted(singles)))


def convolution_row_plan(input_shape: Sequence[int], filter_shape: Sequence[int], strides: Sequence[int],
                         pads: Sequence[int], dilations: Sequence[int], group: int) -> RowPlan:
    """The row plan of an NCHW convolution (OIHW filter)."""
    width = glow.ConvolutionOp.shape_rule(input_shape, filter_shape, strides, pads, dilations, group)[3]
    return row_plan(input_shape[3], width, filter_shape[3], strides[1], dilations[1], pads[1])


@dataclass(frozen=True)
class HalfwordTiling:
    """How a tile of `pixels` adjacent outputs reads one kernel row of a plane of int16
    elements (`DepthwisePlan.widened`).

    Its words are the pairs of columns (2i, 2i + 1) from an even column of the row, tap k
    of output p at column `shift + p * stride + k * dilation` from there; words
    `first_word` .. `words` - 1 are loaded. `weight_words` are the distinct weight pairs,
    each (tap of the low half, tap of the high half), None for a zero weight;
    `products[p]` lists (input word, weight word, halves) of output p: halves None
    multiplies both halves (`SMLAD`: two adjacent taps of a word), else (input half, weight
    half) one product (`SMLA<x><y>`: a tap alone). `dropped[p]` are the taps of output p
    in the left padding that it leaves out: the kernel starts its sum with their products
    (`arm_dsp.padding_products`)."""

    words: int
    weight_words: tuple[tuple[int | None, int | None], ...]
    products: tuple[tuple[tuple[int, int, tuple[int, int] | None], ...], ...]
    dropped: tuple[tuple[int, ...], ...] = ()
    first_word: int = 0

    def tap_position(self, tap: int) -> tuple[int, int]:
        """(weight word, half) holding the weight of `tap`."""
        return PairTiling.tap_position(self, tap)


@cache
def halfword_tiling(width: int, stride: int, dilation: int, pixels: int, shift: int,
                    inside: int = 0) -> HalfwordTiling:
    """The tiling of a kernel row of `width` taps over int16 columns: two taps in one word
    (columns 2i, 2i + 1) take one `SMLAD`, any other tap one `SMLA<x><y>` by a weight word
    that holds its weight (a pair's, else one of its own); taps left of column `inside`
    (the left padding of a row's first tile) are dropped."""
    every = [{shift + p * stride + k * dilation: k for k in range(width)} for p in range(pixels)]
    columns = [{c: k for c, k in taps.items() if c >= inside} for taps in every]
    dropped = tuple(tuple(k for c, k in taps.items() if c < inside) for taps in every)
    weight_words: dict[tuple[int | None, int | None], int] = {}
    paired = [{c for c in taps if c % 2 == 0 and c + 1 in taps} for taps in columns]
    for taps, pairs in zip(columns, paired):
        for c in sorted(pairs):
            weight_words.setdefault((taps[c], taps[c + 1]), len(weight_words))
    products = []
    for taps, pairs in zip(columns, paired):
        chosen = []
        for c in sorted(taps):
            if c in pairs:
                chosen.append((c // 2, weight_words[(taps[c], taps[c + 1])], None))
            elif c - 1 not in pairs:  # a tap alone: the first word holding its weight
                tap = taps[c]
                word = next((word for word in weight_words if tap in word), (tap, None))
                index = weight_words.setdefault(word, len(weight_words))
                chosen.append((c // 2, index, (c % 2, word.index(tap))))
        products.append(tuple(chosen))
    for tap in sorted({tap for taps in dropped for tap in taps}):  # the kernel reads their weights too
        if not any(tap in word for word in weight_words):
            weight_words[(tap, None)] = len(weight_words)
    read = [c // 2 for taps in columns for c in taps] or [-1]  # (none: every tap left out)
    return HalfwordTiling(max(read) + 1, tuple(weight_words), tuple(products),
                          dropped if any(dropped) else (), max(min(read), 0))


def slot_word(word: int) -> int:
    """Where word `word` of a widened plane's row (or of a widened filter's kernel row) lies:
    two words, then one unused, so that the words a tile loads are runs of two consecutive
    words, each one `LDRD` (`arm_dsp.SLOT_WORDS`: LLVM's ARM backend pairs loads only so)."""
    return word + word // 2


def slotted(words: int) -> int:
    """The words that `words` words laid out by `slot_word` take, the last unused one included
    (a run of two ends at the next row's first word else)."""
    return 3 * -(-words // 2)


def widens_planes(dilations: Sequence[int], int8_input: bool, ordered: bool = False) -> bool:
    """Whether a depthwise convolution copies its input planes widened to int16
    (`DepthwisePlan.widened`): of int8 data, undilated along the rows (dilated, the pair
    tiling's pairs two columns apart take its taps; int16 data is copied as it is), unless
    its int8 planes are read in order (`orders_planes`). Faster and smaller in speed-first
    and size-first builds alike (docs/arm-dsp-kernels.md)."""
    return int8_input and dilations[1] == 1 and not ordered


def wide_tiling(tiling) -> bool:
    """Whether a depthwise tiling keeps more accumulators than DS-CNN's five (a tile of
    `DEPTHWISE_PIXELS` and the `MERGED_REST`): the tiles `OPAQUE_STARTS` starts from an opaque bias."""
    return len(tiling.products) > DEPTHWISE_PIXELS + MERGED_REST


OPAQUE_STARTS = "opaque_starts"
"""The microkernel parameter of a speed-first build's depthwise convolution on widened planes
on a dual-issue core (the Cortex-M7; `select_kernels.SelectArmDspKernels.single_issue`
false): each tile of more than five outputs starts their sums from the bias made opaque once
for the tile (`arm_dsp.DepthwiseConvolution.tile`), which LLVM keeps in a register for the
tile's first products instead of reloading it for each output (and on the M7 loads its words
ahead, `WORDS_AHEAD`). Visual wake words on the M7
(model estimate) 6,667,945 -> 6,637,053 cycles: its 48 x 48 x 8 layer 278,591 -> 255,603,
12 x 12 x 64 138,012 -> 125,673, 24 x 24 x 32 258,408 -> 267,680. Not on the single-issue M4
(10,944,391 -> 10,951,456: its 48 x 48 x 8 layer 403,934 -> 439,014)."""

WORDS_AHEAD = "words_ahead"
"""The microkernel parameter of an `OPAQUE_STARTS` depthwise convolution on a core without
Helium (the Cortex-M7): its wide tiles load each word alone, ahead of its products
(`arm_dsp.products_ahead`), a looped plane's channel filter read from the stack
(`DepthwiseConvolution.stack_filter`). Visual wake words on the M7 6,284,078 -> 6,232,490
estimated cycles; on the M55 (its DSP depthwise layers) 5,175,080 -> 5,203,773, so not there."""

ORDERED_PLANES = "ordered_planes"
"""The microkernel parameter of a depthwise convolution whose int8 planes are read in order
(`orders_planes`)."""


def orders_planes(dilations: Sequence[int], int8_input: bool, strides: Sequence[int], single_issue: bool) -> bool:
    """Whether a depthwise convolution multiplies int8 copies of its input planes, their
    aligned words loaded in order as the outputs need them (`DepthwisePlan.ordered`,
    `arm_dsp.ordered_pair_products`): of int8 data, undilated rows of stride 2 (where a
    widened plane costs four input columns widened an output), on a single-issue core
    (`banded_windows.SINGLE_ISSUE_CPUS`). Visual wake words' four stride-2 layers on the M4
    275,423 + 139,403 + 64,676 + 42,220 -> 263,262 + 137,550 + 65,624 + 38,386 cycles (the
    bundle 11,515,086 -> 11,498,319); on the M7 the profiling build's layers took 9k fewer
    but its bundle 7,267,947 -> 7,323,483, so the M7 keeps widened planes."""
    return int8_input and dilations[1] == 1 and strides[1] == 2 and single_issue


@dataclass(frozen=True)
class DepthwisePlan:
    """How a depthwise convolution's output row of `width` is computed from a padded input
    plane whose rows are `padded_width` bytes: the input row's columns start at byte
    `pad_left`, every other byte holds the input zero point. `tiles` tiles of
    `pixels` outputs (DEPTHWISE_PIXELS; widened, WIDENED_DEPTHWISE_PIXELS) from output 0
    (`tilings[0]`, when there are any), then, if the width leaves some, one tile of the rest
    (`tilings[-1]`; with at most `MERGED_REST` left, the last tile takes them). The packed filter holds the
    weight words of each tiling, the i-th's from `word_offsets[i]`.

    `ordered`: int8 rows of whole words, each tile's aligned words inside its row, read in
    order (`arm_dsp.ordered_pair_products`).

    `widened`: the plane holds int16 elements (`HalfwordTiling`s), its rows `padded_width`
    columns (a multiple of 4), the input's columns from the even column `pad_left`; word i of
    a row (columns 2i, 2i + 1) lies at word `slot_word(i)` of its `row_words`, and the
    filter's weight words alike; a tile of outputs from x0 loads its words from column
    x0 x stride rounded down to a multiple of 4: where that leaves 2 (every other tile when
    `pixels` x stride is 2 more than a multiple of 4), by `shifted`, the interior tiling two
    columns on (its first word unread; the same weight words)."""

    tilings: tuple[PairTiling | HalfwordTiling, ...]
    word_offsets: tuple[int, ...]
    tiles: int
    padded_width: int
    pad_left: int
    widened: bool = False
    pixels: int = DEPTHWISE_PIXELS
    ordered: bool = False
    shifted: HalfwordTiling | None = None

    @property
    def words(self) -> int:
        words = self.word_offsets[-1] + len(self.tilings[-1].weight_words)
        return slotted(words) if self.widened else words

    @property
    def row_words(self) -> int:
        """Words of a widened plane's row, its unused ones included."""
        return slotted(self.padded_width // 2)


@cache
def depthwise_plan(in_width: int, width: int, kernel: int, stride: int, dilation: int, pad_left: int,
                   widened: bool = False, ordered: bool = False) -> DepthwisePlan:
    pixels = (halved_row_pixels(width, stride) or WIDENED_DEPTHWISE_PIXELS) if widened else DEPTHWISE_PIXELS
    if ordered:  # a row of at most WIDENED_DEPTHWISE_PIXELS outputs is one tile
        pixels = ORDERED_PIXELS if width > WIDENED_DEPTHWISE_PIXELS else WIDENED_DEPTHWISE_PIXELS
    tiles, rest = divmod(width, pixels)
    if tiles and 0 < rest <= MERGED_REST:
        tiles, rest = tiles - 1, rest + pixels
    # the input's first column in the padded row: widened, even, a multiple of 4 when a row is one tile
    # (which leaves out its taps in the left padding: its words from the input's first column)
    first_column = -(-pad_left // (2 if tiles else 4)) * (2 if tiles else 4) if widened else pad_left
    tilings, ends = [], []  # ends: the columns the last tile of each tiling reads from the padded row's first one
    last_tiles = ((tiles, pixels, (tiles - 1) * pixels), (1, rest, tiles * pixels))
    shifted = None  # every other tile's, from 2 columns past a multiple of 4
    if widened and tiles and pixels * stride % 4:
        assert pixels * stride % 4 == 2 and tiles % 2 == 0, "tiles in pairs of 4k + 2 columns"
        shifted = halfword_tiling(kernel, stride, dilation, pixels, first_column - pad_left + 2, 0)
    for count, outputs, first in last_tiles:
        if count and outputs:
            if widened:
                tilings.append(halfword_tiling(kernel, stride, dilation, outputs, first_column - pad_left,
                                               0 if tiles else first_column))
                tiling = shifted if shifted is not None and first * stride % 4 else tilings[-1]  # its last tile's
                ends.append(first * stride // 4 * 4 + 2 * tiling.words)
            else:
                tilings.append(pair_tiling(kernel, stride, dilation, outputs))
                # ordered: the aligned words holding its pairs' bytes (`ordered_pair_products`)
                ends.append(first * stride + (4 * (tilings[-1].words // 2 + 1) if ordered else tilings[-1].bytes_read))
    offsets = [0, len(tilings[0].weight_words)][:len(tilings)]
    padded_width = max(first_column + in_width, *ends)
    if widened or ordered:  # rows of whole words
        padded_width = -(-padded_width // 4) * 4
    assert shifted is None or shifted.weight_words == tilings[0].weight_words
    return DepthwisePlan(tuple(tilings), tuple(offsets), tiles, padded_width, first_column, widened, pixels, ordered,
                         shifted)


def convolution_depthwise_plan(input_shape: Sequence[int], filter_shape: Sequence[int], strides: Sequence[int],
                               pads: Sequence[int], dilations: Sequence[int], widened: bool = False,
                               ordered: bool = False) -> DepthwisePlan:
    """The depthwise plan of an NCHW convolution (OIHW filter); `widened`: on int16 copies
    of the input planes (`widens_planes`); `ordered`: on int8 copies read in order
    (`orders_planes`)."""
    width = glow.ConvolutionOp.shape_rule(input_shape, filter_shape, strides, pads, dilations, input_shape[1])[3]
    return depthwise_plan(input_shape[3], width, filter_shape[3], strides[1], dilations[1], pads[1], widened, ordered)


ROW_PAIRS, CHANNEL_PAIRS, DEPTHWISE, WINDOW_PAIRS = "row pairs", "channel pairs", "depthwise", "window pairs"

WINDOW_TAPS = 144
"""An ungrouped convolution wider than 1x1 of at most this many taps a window (input
channels x kernel height x width), unpooled or with a pool its windows tile (`tiled_pool`),
pairs the taps of each output's window (WINDOW_PAIRS): its windows are gathered once per
pixel as int16 tap pairs (the padding as the input zero point) and multiplied as a pointwise
convolution's gathered channels are. DS-CNN's 10x4 stride-2 first convolution (one input
channel, 64 outputs) took 546k instructions on the M7 on planes, MobileNetV3's 3x3 stride-2
padded one (3 channels, 16 outputs) 1.15M on row pairs; the CIFAR-10-sized net's 3x3 of 16
channels (144 taps) with its 2x2 average pool 1.97M on row pairs. A pool window's pixels
are gathered together (`TILED_POOL_PIXELS` at most): 144 taps keep them in 2,304 bytes of
stack."""

GATHERED_WINDOW_TAPS = 1024
"""An unpooled ungrouped convolution wider than 1x1 of more taps than `WINDOW_TAPS`, up to this
many (a pixel's window 2 KB of stack as int16 pairs), pairs them too
(WINDOW_PAIRS): the kernel gathers as many pixels a run as its buffer holds (one at least).
ResNet-8's 3x3 convolutions of 32 and 64 input channels (288 and 576 taps) ran on ROW_PAIRS,
whose filter keeps the weight words of every tiling of the row plan (12 times the int8
bytes): on the M4 at -O3 the net's constants 729,664 -> 158,208 B and its estimated cycles
29,633,881 -> 22,964,333 (those windows gathered looped, `WINDOW_LOOP_PAIRS`)."""

WINDOW_LOOP_PAIRS = 2
"""A speed-first build's WINDOW_PAIRS convolution of more tap pairs than `UNROLLED_PAIRS` keeps
its window's gather and its products looped, this many pairs a step (`loop_pairs`, as a
size-first build's): its products loop anyway, and the straight gather of a large window was
larger and slower (ResNet-8's 576-tap layer on the M4: 26,568 B of code, 4.83M cycles straight;
1,516 B, 4.66M looped; its 144-tap layers 4.45M -> 4.24M cycles)."""

TILED_POOL_PIXELS = 4
"""A fused pool whose windows tile the convolution's output (kernel = strides, unpadded) and
hold at most this many pixels lets the convolution run on WINDOW_PAIRS: the kernel gathers
one pool window's pixels at a time and pools their products in registers."""


def tiled_pool(op) -> bool:
    """A convolution's (glow or glowll) fused pool that WINDOW_PAIRS takes (`pool_tiles`)."""
    return op.pool is not None and pool_tiles(op.pool_kernel.get_values(), op.pool_strides.get_values(),
                                              op.pool_pads.get_values(), glow.convolution_shape(op)[2:])


def pool_tiles(kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int],
               convolution_hw: Sequence[int]) -> bool:
    """A pool window over a convolution's output of `convolution_hw` that WINDOW_PAIRS takes:
    a global one (the whole plane, unpadded, as `glow.pools_globally`), or one whose windows
    of at most `TILED_POOL_PIXELS` pixels tile the output (kernel = strides, unpadded; a last
    row or column no window covers is never computed)."""
    if any(pads):
        return False
    return tuple(kernel) == tuple(convolution_hw) or (
        tuple(kernel) == tuple(strides) and int(np.prod(kernel)) <= TILED_POOL_PIXELS)


def window_row_order(width: int, dilation: int) -> tuple[int, ...]:
    """The order of a window row's taps in its WINDOW_PAIRS pairs: (0, 2, 1, 3) within each
    four when the row is a multiple of four taps wide at dilation 1, so that one word of four
    input columns gives two of its pairs as they are (`SXTB16`, `SXTB16 ror #8`); else as
    they are."""
    if width % 4 or dilation != 1:
        return tuple(range(width))
    return tuple(4 * (kx // 4) + (0, 2, 1, 3)[kx % 4] for kx in range(width))


def word_taps(channels: int, width: int, dilation: int) -> int:
    """The taps at the start of each window row that a WINDOW_PAIRS gather loads four a word
    (`window_tap_order`): the row's whole fours at dilation 1 when the row is a multiple of
    four taps wide, or when the window has one input channel (then the row's last taps are
    loaded one by one); else none."""
    return width // 4 * 4 if dilation == 1 and (width % 4 == 0 or channels == 1) else 0


def window_tap_order(channels: int, height: int, width: int, dilation: int) -> tuple[int, ...]:
    """The order of a WINDOW_PAIRS window's taps (c, ky, kx), flattened, in its pairs: the
    `word_taps` of every row in `window_row_order`, then the other taps of every row. A window
    of several channels is thus each row's taps in `window_row_order`, channel by channel; one
    of a single channel whose rows are wider than four but not a multiple of four (a stem that
    reads an NHWC image in place, `glow-convolve-interleaved-rows`: visual wake words' 3 x 3 x 3
    is 3 rows of 9) is each row's first eight taps from two words (four `SXTB16`s), then the
    rows' ninth taps paired together: per window 6 word loads and 3 byte loads, where its 27
    taps took a byte load and a half of `PKHBT` each."""
    words = word_taps(channels, width, dilation)
    rows = [(c * height + ky) * width for c in range(channels) for ky in range(height)]
    return tuple([row + kx for row in rows for kx in window_row_order(words, 1)]
                 + [row + kx for row in rows for kx in range(words, width)])


def packing(filter_shape: Sequence[int], pads: Sequence[int], group: int, pooled: bool = False,
            tiled: bool = False, int8_words: bool = False) -> str | None:
    """How a convolution's filter is packed: WINDOW_PAIRS along the taps of a whole window of
    an ungrouped convolution wider than 1x1 of at most `WINDOW_TAPS` taps, unpooled or with a
    pool whose windows tile its output (`tiled`, see `tiled_pool`), or unpooled of at most
    `GATHERED_WINDOW_TAPS`, or (`int8_words`: its filter as int8 words) tiled of at most
    `GATHERED_WINDOW_TAPS`, its pool window's pixels gathered one at a time
    (`gathered_product.POOLED_GATHER_BYTES`); DEPTHWISE
    for an unpooled convolution of one input channel per group (depthwise, of any channel
    multiplier: planes padded with the input zero point, row pairs); ROW_PAIRS along a kernel
    row at least two taps wide; CHANNEL_PAIRS along the input channels of an unpadded,
    ungrouped 1x1 convolution (pointwise: nothing to pair along a row); None: the generic
    kernel."""
    _, group_c, k_h, k_w = filter_shape
    taps = group_c * k_h * k_w
    if group == 1 and k_h * k_w > 1 and ((tiled or not pooled) and taps <= WINDOW_TAPS
                                         or (int8_words and tiled or not pooled) and taps <= GATHERED_WINDOW_TAPS):
        return WINDOW_PAIRS
    if filter_shape[1] == 1 and not pooled:
        return DEPTHWISE
    if filter_shape[3] >= 2:
        return ROW_PAIRS
    if filter_shape[2] == 1 and group == 1 and not any(pads):
        return CHANNEL_PAIRS
    return None


UNROLLED_PAIRS = 32
"""A gathered product of at most this many input channel pairs multiplies the pixels of a run
by a block of output channels in straight-line code, reading the buffer and the block's
weight words at constant offsets from two pointers made opaque there
(`backends.arm_dsp.gathered_product`): per channel pair one `LDRD` of weights and one of
inputs per pixel pair, two `SMLAD`s per pixel pair and channel (`STRAIGHT_PIXEL_PAIRS`). In the loop, LLVM
unrolls eight pairs, indexes the streams from one induction variable and spends adds and
spills on the addresses (one DS-CNN 64-channel pointwise layer alone on the M7: 645,571
instructions looped, 521,141 straight); over fewer pairs it unrolled the loop whole, but the
straight products of four pixels still take fewer (DS-CNN's 20-pair stem on the M7: 353k
looped, 332k straight). Over more pairs the loop keeps the code short. A size-first build
keeps the loop (its convolutions carry `loop_pairs`): straight code took MobileNetV2's code at
-Os on the M7 from 29.5 KB to 32.8 KB."""


DUAL_ISSUE_STRAIGHT_PAIRS = 16
"""On a dual-issue core (the Cortex-M7) a pointwise (CHANNEL_PAIRS) gathered product of more
channel pairs than this, not `UNROLLED_PAIRS`, is blocked (`gathered_product.BLOCKED_PIXELS`, on
output pair words): its 64-channel layers' straight products on int16 pairs took three `LDRD`s
for eight `SMLAD`s, and llvm-mca's M7 issues an `LDRD` alone (visual wake words' 64 -> 64 and
64 -> 128 layers: 789 cycles a step of two blocks by four pixels, 512 `SMLAD`s; blocked, 358 a
block, 256). Visual wake words on the M7 6,507,203 -> 6,459,346 estimated cycles, code 48,472 ->
45,392 B, constants 293,376 -> 280,320 B (int8 output pair words, not int16 pairs). Its
32-channel layers blocked too (from 8 pairs): 6,551,072 cycles for 40,136 B of code."""


def straight_pairs(kind: str | None, single_issue: bool) -> int:
    """The most channel (or tap) pairs of a gathered product packed as `kind` whose blocks take
    them in straight-line code: `UNROLLED_PAIRS`, a pointwise one's on a dual-issue core
    `DUAL_ISSUE_STRAIGHT_PAIRS`."""
    return UNROLLED_PAIRS if single_issue or kind != CHANNEL_PAIRS else DUAL_ISSUE_STRAIGHT_PAIRS


def straight_products(kind: str | None, strides: Sequence[int], pooled: bool, pools_globally: bool, pairs: int,
                      looped: bool, single_issue: bool) -> bool:
    """Whether a convolution packed as `kind`, of `pairs` channel (or tap) pairs, is a gathered
    product (`gathers`) whose blocks of output channels take them in straight-line code
    (`straight_pairs` on a core that issues one instruction a cycle or not, `single_issue`;
    `looped`: a size-first build's, which keeps the loop)."""
    return gathers(kind, strides, pooled, pools_globally) and pairs <= straight_pairs(kind, single_issue) \
        and not looped


BIAS_PAIRS = 1
"""A gathered product's filter whose blocks take their pairs in straight-line code
(`straight_products`) and whose sums are doubled (`doubled_accumulators`) may begin with
this many pairs holding, where each block's weight words of a pair lie, its channels'
doubled biases as int32 words (`with_biases`; the convolution is marked `biases_in_filter`):
a block then reads its biases and its weight words from one pointer, the biases already
doubled (one `LDRD` where the biases took two loads, two `LSL`s and a pointer of their own
spilled over the products)."""


def with_biases(packed: np.ndarray, biases: np.ndarray) -> np.ndarray:
    """A CHANNEL_PAIRS or WINDOW_PAIRS filter [O / (block x interleaved), pairs, interleaved,
    block, 2] with `BIAS_PAIRS` pairs in front holding `biases` (int32, one per output
    channel) as the two int16 halves of each channel's word, low half first."""
    groups, _, interleaved, block, _ = packed.shape
    halves = biases.astype("<i4").view("<i2").astype(np.int16).reshape(groups, BIAS_PAIRS, interleaved, block, 2)
    return np.concatenate([halves, packed], axis=1)


def gathers(kind: str | None, strides: Sequence[int], pooled: bool, pools_globally: bool) -> bool:
    """Whether a convolution packed as `kind` runs as a matrix product over its pixels, each
    pixel's taps gathered once (`backends.arm_dsp.gathered_product`): a WINDOW_PAIRS one, and a
    CHANNEL_PAIRS one of stride 1, unpooled or pooled globally; the others run on rows."""
    return kind == WINDOW_PAIRS or (kind == CHANNEL_PAIRS and tuple(strides) == (1, 1)
                                    and (not pooled or pools_globally))


def gathers_windows(conv) -> bool:
    """Whether a `glow` convolution (NCHW or NHWC, fused pool or not) would run on the
    gathered product (`gathers` of its `packing`)."""
    filter_shape = glow.shape_of(conv.filter)
    kind = packing(glow.to_nchw(filter_shape) if glow.is_nhwc(conv) else filter_shape, conv.pads.get_values(),
                   conv.group.value.data, conv.pool is not None, tiled_pool(conv))
    return gathers(kind, conv.strides.get_values(), conv.pool is not None, glow.pools_globally(conv))


def channel_block(out_channels: int, group: int) -> int:
    return CHANNEL_BLOCK if (out_channels // group) % CHANNEL_BLOCK == 0 else 1


INTERLEAVED_BLOCKS = 2
"""A pointwise filter holds, for each channel pair, the weight words of this many blocks of
output channels side by side (when the blocks divide by it): a block's words of one channel
pair are then one `LDRD`, and those of the next pair are not beside them. LLVM's ARM backend
pairs two loads into an `LDRD` only where their run of consecutive words is two long
(a longer run it leaves for an `LDM` it then rarely forms): DS-CNN's 64-channel pointwise
layers ran 13% fewer instructions on the M7 so."""


def interleaved_blocks(out_channels: int) -> int:
    """Blocks of output channels whose weight words of a channel pair lie side by side."""
    blocks = out_channels // channel_block(out_channels, 1)
    return INTERLEAVED_BLOCKS if blocks % INTERLEAVED_BLOCKS == 0 else 1


def pack_filter(levels: np.ndarray, weight_offset: int, input_shape: Sequence[int], strides: Sequence[int],
                dilations: Sequence[int], pads: Sequence[int], group: int, pooled: bool = False,
                tiled: bool = False, widened: bool = False, int8_words: bool = False,
                ordered: bool = False) -> np.ndarray:
    """An OIHW int8 filter as int16 weight pairs, zero point subtracted, in the order the
    kernel reads them: ROW_PAIRS [O / block, C / group, KH, block, weight words, 2] (the
    weight words of every tiling of the row plan), DEPTHWISE [O, KH, weight words, 2] (of
    every tiling of the depthwise plan), CHANNEL_PAIRS [O / (block x interleaved),
    ceil(C / 2), interleaved, block, 2] (channels 2i and 2i + 1, an odd last channel paired
    with a zero; `interleaved_blocks` blocks side by side), WINDOW_PAIRS the same over the
    taps of a window (in `window_tap_order`: C x KH x KW, each row's in `window_row_order`) instead
    of the channels. `pooled`: the convolution has a fused pool, `tiled`: one WINDOW_PAIRS
    takes (`tiled_pool`), `widened`: a DEPTHWISE one runs on int16 planes (`widens_planes`),
    `int8_words`: packed for int8 words (`packing`), `ordered`: a DEPTHWISE one's tiles read
    their int8 words in order (`orders_planes`)."""
    out_c, group_c, k_h, _ = levels.shape
    kind = packing(levels.shape, pads, group, pooled, tiled, int8_words)
    block = channel_block(out_c, group)
    centred = levels.astype(np.int16) - np.int16(weight_offset)
    if kind in (CHANNEL_PAIRS, WINDOW_PAIRS):
        taps = group_c * k_h * levels.shape[3]
        centred = centred.reshape(out_c, taps)
        if kind == WINDOW_PAIRS:
            centred = centred[:, list(window_tap_order(group_c, k_h, levels.shape[3], dilations[1]))]
        padded = np.zeros((out_c, 2 * -(-taps // 2)), np.int16)
        padded[:, :taps] = centred
        interleaved = interleaved_blocks(out_c)
        return padded.reshape(out_c // (block * interleaved), interleaved, block, -1, 2).transpose(0, 3, 1, 2, 4).copy()
    if kind == DEPTHWISE:
        plan = convolution_depthwise_plan(input_shape, levels.shape, strides, pads, dilations, widened, ordered)
        return tiling_weight_words(centred[:, 0], plan.tilings, plan.word_offsets, plan.words,
                                   slot_word if widened else None)
    plan = convolution_row_plan(input_shape, levels.shape, strides, pads, dilations, group)
    blocked = centred.reshape(out_c // block, block, group_c, k_h, -1).transpose(0, 2, 3, 1, 4)
    return tiling_weight_words(blocked, plan.tilings, plan.word_offsets, plan.words)


def int8_filter_words(packed: np.ndarray) -> np.ndarray | None:
    """A gathered product's CHANNEL_PAIRS or WINDOW_PAIRS filter of int16 pairs [groups, pairs,
    interleaved, block, 2] as int8 words of the same shape, the last two axes swapped: per
    pair, a block of two output channels' word holds the bytes (channel 0's low, channel 1's
    low, channel 0's high, channel 1's high), which `SXTB16` and `SXTB16 ror #8` widen into
    the weight pairs of channels 0 and 1 as the int16 form holds them
    (`instructions.weight_pairs`, CMSIS-NN's `read_and_pad_reordered`): 1x the int8 weights
    for one load and two `SXTB16`s a pair where the int16 form takes one `LDRD`. None where
    the blocks are not pairs of channels or a level less its zero point leaves int8."""
    if packed.ndim != 5 or packed.shape[3] != CHANNEL_BLOCK or packed.min(initial=0) < -128 \
            or packed.max(initial=0) > 127:
        return None
    return packed.transpose(0, 1, 2, 4, 3).astype(np.int8)


OUTPUT_PAIR_LIMIT = 1 << 23
"""The sums of the second output (channel) of an output pair stay below this in magnitude
(`output_pair_filter_words`, `fully_connected.takes_output_pairs`): its accumulator holds 256
times them beside the first one's sums (mod 2^32), and an arithmetic shift right by 8 of the
difference gives them back exactly."""


def output_pair_bytes(first: np.ndarray, second: np.ndarray) -> np.ndarray | None:
    """Two output channels' levels less their zero point (int16 arrays of one shape) as output
    pair bytes on a new last axis, int8: (first, second less 1 where first is negative), so that
    each pair, read as an int16 halfword, is 256 second + first. None where a borrowed byte
    leaves int8."""
    borrowed = second - (first < 0)
    if borrowed.min(initial=0) < -128:
        return None
    return np.stack([first, borrowed], axis=-1).astype(np.int8)


def output_pair_sums_fit(second_rows: np.ndarray, largest_input: int) -> bool:
    """Whether the sums of each second channel of an output pair (`second_rows` [channels,
    taps], its levels less their zero point; inputs of at most `largest_input` in magnitude)
    stay below `OUTPUT_PAIR_LIMIT`."""
    return largest_input * int(np.abs(second_rows.astype(np.int64)).sum(axis=1).max(initial=0)) < OUTPUT_PAIR_LIMIT


def output_pair_filter_words(words: np.ndarray, largest_input: int) -> np.ndarray | None:
    """A gathered product's int8 filter words (`int8_filter_words` [groups, pairs, interleaved,
    half, channel]) as output pair words (`output_pair_bytes`, `fully_connected.output_pair_words`'
    layout for a convolution): `SXTB16` of a word gives channel 0's pair, and one `SMLAD` of a
    gathered pair by the raw word sums S0 + 256 S1. None where a borrowed byte leaves int8, or
    where some channel 1's sums may reach `OUTPUT_PAIR_LIMIT` (`largest_input`: the largest
    |input| its products take)."""
    first, second = words[..., 0].astype(np.int16), words[..., 1].astype(np.int16)
    second_rows = second.transpose(0, 2, 1, 3).reshape(second.shape[0] * second.shape[2], -1)
    return output_pair_bytes(first, second) if output_pair_sums_fit(second_rows, largest_input) else None


def tiling_weight_words(rows: np.ndarray, tilings: Sequence[PairTiling | HalfwordTiling], offsets: Sequence[int],
                        words: int, slot=None) -> np.ndarray:
    """Kernel rows [..., taps] as the weight words of `tilings` [..., words, 2], each
    tiling's from its offset (a half with no tap: 0); word i at `slot(i)` when given."""
    packed = np.zeros((*rows.shape[:-1], words, 2), np.int16)
    for tiling, offset in zip(tilings, offsets):
        for index, word in enumerate(tiling.weight_words):
            for half, tap in enumerate(word):
                if tap is not None:
                    packed[..., offset + index if slot is None else slot(offset + index), half] = rows[..., tap]
    return packed


def packing_of(op) -> str | None:
    """`packing` of a `glowll.convolution` with `filter_shape`, its filter as it is stored
    (int8: int8 words)."""
    return packing(op.filter_shape.get_values(), op.pads.get_values(), op.group.value.data, op.pool is not None,
                   tiled_pool(op), storage_type(op.filter.type.element_type) == i8)


def packed_filter_shape(op) -> tuple[int, ...]:
    """The packed filter's shape for a `glowll.convolution` with `filter_shape` (see `pack_filter`)."""
    filter_shape = op.filter_shape.get_values()
    out_c, group_c, k_h, _ = filter_shape
    group = op.group.value.data
    kind = packing_of(op)
    block = channel_block(out_c, group)
    geometry = (glow.shape_of(op.input), filter_shape, op.strides.get_values(), op.pads.get_values(),
                op.dilations.get_values())
    if kind in (CHANNEL_PAIRS, WINDOW_PAIRS):
        interleaved = interleaved_blocks(out_c)
        biases = op.microkernel.parameter("biases_in_filter") is not None
        pairs = -(-int(np.prod(filter_shape[1:])) // 2) + (BIAS_PAIRS if biases else 0)
        return (out_c // (block * interleaved), pairs, interleaved, block, 2)
    if kind == DEPTHWISE:
        return (out_c, k_h, convolution_depthwise_plan(*geometry, widened_planes(op), ordered_planes(op)).words, 2)
    return (out_c // block, group_c, k_h, block, convolution_row_plan(*geometry, group).words, 2)


def takes_int8_words(op) -> bool:
    """Whether a `glowll.convolution` with `filter_shape` may hold its filter as int8 words
    (`int8_filter_words`): a CHANNEL_PAIRS or WINDOW_PAIRS one of blocks of two output channels."""
    filter_shape = op.filter_shape.get_values()
    kind = packing_of(op)
    return kind in (CHANNEL_PAIRS, WINDOW_PAIRS) and channel_block(filter_shape[0], op.group.value.data) == 2


def widened_planes(op) -> bool:
    """Whether a DEPTHWISE `glowll.convolution` runs on int16 planes (`widens_planes`)."""
    return widens_planes(op.dilations.get_values(), storage_type(op.input.type.element_type) == i8,
                         ordered_planes(op))


def ordered_planes(op) -> bool:
    """Whether a DEPTHWISE `glowll.convolution` reads int8 planes' words in order (`orders_planes`:
    the selection marked it `ORDERED_PLANES`)."""
    return op.microkernel is not None and op.microkernel.parameter(ORDERED_PLANES) is not None
