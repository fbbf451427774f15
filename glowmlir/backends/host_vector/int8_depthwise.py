"""The int8 depthwise convolution on a host's vector unit (`microkernel = "vector-depthwise-int8"`).

The float depthwise kernel's tiles (`vector_depthwise`: rows x vectors of one channel's
output columns, every accumulator a vector register, each input row the tile reads loaded
once per kernel column and multiplied into every row of the tile whose window covers it) on
int32 lanes, two adjacent kernel columns a product (`PairedTaps`): the input vectors of taps
kx and kx + 1 (`lanes` int8 levels each, the lanes in the padding or past the row's end
loaded as the zero point by a masked load) are interleaved, sign-extended to int16 and less
the input zero point, so each int32 lane holds its output's pair of inputs as two int16
halves (of stride 2 and undilated, the pairs are the row's 2 x lanes bytes as they lie: one
load). The weights are int16 with their zero point subtracted at compile time
(`transforms.int8_kernel_selection.centred_type`), a channel's pairs (w[ky, kx], w[ky, kx + 1])
made int32 words once a channel (an odd last column pairs with 0). `vpmaddwd` (AVX2,
AVX-512BW) multiplies both halves and sums them: two products a lane an instruction. Both
factors lie in [-255, 255], so the sums are the generic kernel's modulo 2^32 (int32, the same
products), and the output step is `lowering.requantization.LaneRequantization`'s: the
channel's multiplier and shift in every lane, the fused relu/clip in its clamp. The tiles skip
the input rows and pairs of taps wholly outside the input.

A "same"-padded depthwise convolution of small planes (`microkernel = "vector-planes-int8"`,
`column_layout.int8_plane_vectors`) runs one tap a product (`HostInt8Columns`: each lane one
sign-extended level, the weight's high half 0) on the vector-planes kernel's
tiles, each channel's whole plane one tile of vectors of its pixels: the lanes whose tap
falls in the padding masked at run time, the masks the same for every channel. Every tap is
loaded there, so the selection pass folds `-x_offset * sum w` into the bias
(`folded_input_offset`) and the levels are multiplied as they are, the padding's lanes
loaded as the zero point (where the folded bias would not fit int32, as on the tiles).
"""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, VectorType, f32, i8, i16, i32
from xdsl.ir import Attribute, SSAValue

from glowmlir.backends.host_vector import depthwise as vector_depthwise
from glowmlir.dialects import glowll
from glowmlir.lowering import saturating_packs, vector_columns
from glowmlir.lowering.fused_tables import looked_up
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import ArithmeticDomain
from glowmlir.lowering.requantization import LaneRequantization, channel_step, nearest_levels
from glowmlir.lowering.vector_layout import INT8_PLANES, interior_columns

WINDOW_LANES = 8
"""The widest tile whose taps are shuffled out of one window of the row (`PairedTaps.window_pairs`):
AVX2's byte shuffle takes 16 levels at once (a window of 32 would cross its 128-bit halves)."""
LANES_PER_HALF = 4
"""int32 lanes in a 128-bit half of an AVX2 vector: `vpshufb` shuffles bytes within halves."""
FLIP = 128
"""The bias of a flipped level (`PairedTaps.flipped_window`): x XOR 0x80 is x + 128 unsigned."""
JOINED_LEVELS = 32
"""Output levels `HostInt8Columns.outputs` narrows at once: a 32-byte vector of int8."""
STORE_QUEUE = 64
"""Stores in flight on Zen 3: `WidenedRows` widens the next channel's rows while it reads this
one's where a channel's widening is no more stores than this (its rows would otherwise be read
while still queued); of more rows, they left the queue before the tiles read them."""
PMADDWD = {16: "llvm.x86.avx512.pmaddw.d.512", 8: "llvm.x86.avx2.pmadd.wd", 4: "llvm.x86.sse2.pmadd.wd"}
"""`vpmaddwd` by int32 lanes: the sums of the products of adjacent int16 pairs."""
PAIR_PRODUCTS = "products"
"""The int8 tiles' microkernel parameter naming the instructions of their pair products where
they are not `vpmaddwd` (`pair_sums`): "neon" on AArch64 (`split_products`)."""
NEON_PAIR_LANES = (4,)
"""The int32 lanes a NEON pair product takes: one Q register."""
NEON_BYTES = "neon-bytes"
"""The `PAIR_PRODUCTS` of a NEON 1x1 or depthwise layer on int8 products (`int8_byte_products`,
`int8_byte_depthwise`)."""
NEON_BYTE_LANES = (8,)
"""The pixels of a `NEON_BYTES` tile's vector: 16 bytes of pairs, two registers of sums."""


def pair_lanes(products: str) -> tuple[int, ...]:
    """The int32 lanes of a vector whose pair products `products` make (`pair_sums`,
    `split_products`, `int8_byte_products`)."""
    return {"neon": NEON_PAIR_LANES, NEON_BYTES: NEON_BYTE_LANES}.get(products, tuple(PMADDWD))


def pair_sums(b: KernelBuilder, pixels: SSAValue, word: SSAValue) -> SSAValue:
    """The int32 lanes x[2i] * w[2i] + x[2i + 1] * w[2i + 1] of two vectors of int16 halves:
    one `vpmaddwd` (x86)."""
    lanes = pixels.type.get_shape()[0] // 2
    return b.emit(llvm.CallIntrinsicOp(PMADDWD[lanes], [pixels, word], [VectorType(i32, [lanes])]))


def split_products(b: KernelBuilder, total: SSAValue, pixels: SSAValue, word: SSAValue) -> SSAValue:
    """NEON's pair products (`products` "neon"): `total` as split sums (`HostInt8Columns.split`,
    twice the lanes) + each int16 product of `pixels` and `word` in its own int32 lane, which AArch64's
    LLVM selects as `smlal` of the low four halves and `smlal2` of the high four: two
    instructions for a `vpmaddwd` and its add (each product exact in int32)."""
    vector = total.type
    widened = [b.emit(llvm.SExtOp(value, vector)) for value in (pixels, word)]
    return b.int_add(total, b.int_mul(*widened))


def products_of(op: glowll.ConvolutionOp) -> str:
    """The op's `PAIR_PRODUCTS` parameter ("": `vpmaddwd`)."""
    products = op.microkernel.parameter(PAIR_PRODUCTS) if op.microkernel is not None else None
    return "" if products is None else products.data


class HostInt8Columns(vector_columns.Int8ColumnArithmetic):
    """The int8 column arithmetic on the host's vectors (`vector_tile`: lanes,
    accumulators), requantized with the generic arithmetic on the lanes."""

    widest_output = 16  # rows of 4 or 8 lanes requantized 16 lanes at a time

    def __init__(self, b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp):
        super().__init__(b, domain, op)
        self.lanes, self.accumulators = op.vector_tile.get_values()[:2]
        self.vector = VectorType(i32, [self.lanes])
        self.products = products_of(op)
        self.split = self.products == "neon"
        """The sums split (NEON, `split_products`): each output's sum the two lanes 2i and 2i + 1 of a
        vector of twice the lanes, a pair's two products one in each, added once, as the
        output step reads them (`joined`)."""
        self.sums = VectorType(i32, [2 * self.lanes]) if self.split else self.vector
        self.neon = self.products in ("neon", NEON_BYTES)
        """NEON's saturating narrows (`neon_saturated_bytes`), not AVX2's packs."""

    def joined(self, total: SSAValue) -> SSAValue:
        """Split sums (one or several vectors of them one after the other) as one sum a
        lane: lanes 2i and 2i + 1 added (`addp` on NEON); others as they are."""
        if not self.split:
            return total
        count = total.type.get_shape()[0]
        halves = [self.b.emit(llvm.ShuffleVectorOp(total, total, DenseArrayBase.from_list(
            i32, list(range(odd, count, 2))), VectorType(i32, [count // 2]))) for odd in (0, 1)]
        return self.b.int_add(*halves)

    def zero_sums(self) -> SSAValue:
        """A tile's sums before its first product, all 0."""
        return self.b.splat(self.b.integer(0), self.sums)

    def weight(self, packed: View, indices: list[Index]) -> SSAValue:
        """The int16 weight zero-extended into every int32 lane: its high half 0."""
        return self.b.splat(self.b.int_and(self.domain.weight(packed, indices), 0xFFFF), self.vector)

    def multiply_accumulate(self, total: SSAValue, pixels: SSAValue, weight: SSAValue) -> SSAValue:
        """total + pixels * weight by `vpmaddwd`: each int32 lane as two int16 halves, the
        pixel's low half its value (a level, or a level less its zero point: it fits, signed),
        the weight's high half 0: the lane's two products are the one wanted and 0."""
        halves = VectorType(i16, [2 * self.lanes])
        return self.pair_multiply_accumulate(total, self.b.bitcast(pixels, halves), self.b.bitcast(weight, halves))

    def pair_multiply_accumulate(self, total: SSAValue, pixels: SSAValue, word: SSAValue) -> SSAValue:
        """total + x[c] * w[c] + x[c + 1] * w[c + 1] in every lane (`pair_sums`; split sums:
        `split_products`)."""
        if self.split:
            return split_products(self.b, total, pixels, word)
        return self.b.int_add(total, pair_sums(self.b, pixels, word))

    def output(self, channel: Index, total: SSAValue, storage: Attribute) -> SSAValue:
        total = self.joined(total)
        if self.domain.output(channel, storage) is None:  # accumulators kept
            return total
        step = self.step(channel, total)
        if not isinstance(self.domain.lookup_table, View) and self.packs_bytes(total, storage):  # 4 vectors joined
            return looked_up(self.b, self.domain.lookup_table, step.bounded(self.packed(step.level(total))))
        return step.output(total, storage)

    def packs_bytes(self, levels: SSAValue, storage: Attribute) -> bool:
        """Whether `levels` (int32, several vectors joined) narrow to int8 by `packed`: 32 of
        them on AVX2's 8 lanes (`packed_bytes`), 8, 16 or 32 on NEON (`self.split`: `sqxtn`,
        `neon_saturated_bytes`)."""
        count = levels.type.get_shape()[0]
        return storage == i8 and (count % 8 == 0 if self.neon else count == JOINED_LEVELS and self.lanes == 8)

    def packed(self, levels: SSAValue) -> SSAValue:
        """`levels` (`packs_bytes`) saturated to int8, in order."""
        return neon_saturated_bytes(self.b, levels) if self.neon else packed_bytes(self.b, levels)

    step_offsets: View | None = None
    """A `bias_in_step` layer's bias operand: each channel's single of its fused step (set by
    the kernel, `int8_pointwise.pointwise_rows`)."""

    def start(self, bias: View, channel: Index) -> SSAValue:
        """The channel's first sums: its bias in every lane, or 0 for a `bias_in_step` layer
        (`select_int8_pointwise.fuse_bias_into_step`: its bias operand the channel's single of
        its fused step, which `step` reads: one `vpaddd` fewer an output vector)."""
        if self.op.bias_in_step is None:
            start = super().start(bias, channel)
            if not self.split:
                return start
            # split: the bias in the even lanes, 0 in the odd ones
            order = [k // 2 + (k % 2) * self.lanes for k in range(2 * self.lanes)]
            return self.b.emit(llvm.ShuffleVectorOp(start, self.b.splat(self.b.integer(0), self.vector),
                                                    DenseArrayBase.from_list(i32, order), self.sums))
        self.step_offsets = bias
        return self.zero_sums()

    def step(self, channel: Index, total: SSAValue) -> LaneRequantization:
        """The output step of `channel`'s sums `total`: a `float_step_table` layer's channel step
        loaded from its table (`requantization.channel_step`), else the layer's numbers."""
        nearest = neon_nearest_levels if self.neon else nearest_levels
        table = getattr(self.op, "float_step_table", None)
        if table is not None:
            requantization = self.domain.requantization
            step = channel_step(self.b, requantization.table, channel, requantization.numbers, table.value.data == 1,
                                getattr(self.domain, "doubled", False))
            return LaneRequantization(self.b, self.domain, total.type, 0, 0, nearest=nearest, channel=step)
        multiplier, shift = self.domain.requantization.of(channel)
        fused = None if self.step_offsets is None else self.b.bitcast(self.b.load(self.step_offsets, [channel]), f32)
        return LaneRequantization(self.b, self.domain, total.type, multiplier, shift, fused, nearest)

    def joined_channels(self, lanes: int) -> int:
        """Channels whose int8 levels fill a 32-byte vector: each channel's vector requantized
        as it is, their int32 levels joined and narrowed by one sequence of saturating packs
        (4 channels of 8 lanes: 2 `vpackssdw`, 1 `vpacksswb`, 1 `vpermd` and one relu
        `vpmaxsb` for 32 levels, not 3 and 1 for every 8), each channel's stored apart."""
        return max(1, JOINED_LEVELS // lanes)

    def outputs(self, channels: list[Index], totals: list[SSAValue], storage: Attribute) -> list[SSAValue]:
        if (len(channels) == 1 or self.domain.output(channels[0], storage) is None
                or isinstance(self.domain.lookup_table, View)):
            return super().outputs(channels, totals, storage)
        totals = [self.joined(total) for total in totals]
        steps = [self.step(o, total) for o, total in zip(channels, totals)]
        levels = vector_columns.join(self.b, [step.level(total) for step, total in zip(steps, totals)])
        if self.packs_bytes(levels, storage):
            joined = steps[0].bounded(self.packed(levels))
        else:
            joined = steps[0].narrowed(levels, storage)
        joined = looked_up(self.b, self.domain.lookup_table, joined)  # a table in registers (`NeonTable`)
        lanes = totals[0].type.get_shape()[0]
        return [self.b.emit(llvm.ShuffleVectorOp(joined, joined, DenseArrayBase.from_list(
            i32, list(range(k * lanes, (k + 1) * lanes))), VectorType(storage, [lanes]))) for k in range(len(steps))]


class PairColumns(HostInt8Columns):
    """`HostInt8Columns` whose lanes each hold a pixel's two input channels as int16 halves."""

    def centred_pairs(self, levels: SSAValue) -> SSAValue:
        """Interleaved int8 levels as int16 less the input zero point (one widening, one
        subtraction for both of a lane's pair); as they are where the selection pass folded
        the zero point into the bias (`folded_input_offset`: `vector-pointwise-int8`)."""
        return self.less_input_offset(self.b.emit(llvm.SExtOp(levels, VectorType(i16, [2 * self.lanes]))))

    def less_input_offset(self, pairs: SSAValue, bias: int = 0) -> SSAValue:
        """int16 `pairs` less `bias` + the input zero point (of which nothing where the
        selection pass folded it into the bias: `folded_input_offset`)."""
        offset = 0 if self.op.folded_input_offset is not None else self.domain.input_offset
        if isinstance(offset, int):
            return pairs if offset + bias == 0 else self.b.int_sub(pairs, offset + bias)
        subtracted = self.b.truncate(offset, i16)
        if bias:
            subtracted = self.b.int_add(subtracted, bias)
        return self.b.int_sub(pairs, self.b.splat(subtracted, pairs.type))

    def pair(self, src: View, n: Index, channel: Index, column: Index, loaded: list[bool] | None,
             second: bool = True) -> SSAValue:
        """The levels of `channel` and (`second`) the next one from `column`, less the input
        zero point as int16, interleaved: lane i holds (x[channel, i], x[channel + 1, i])."""
        def levels(c: Index) -> SSAValue:
            return vector_columns.load_vector(self.b, src, [n, c, 0, column], self.lanes, loaded)

        other = levels(self.b.add(channel, 1)) if second else self.zero_levels()
        return self.centred_pairs(interleaved(self.b, levels(channel), other))

    def zero_levels(self, lanes: int | None = None) -> SSAValue:
        """`lanes` (default: the tile's) lanes of the input zero point: 0 once centred."""
        offset = self.domain.input_offset
        vector = VectorType(i8, [lanes or self.lanes])
        return self.b.int_value(offset, vector) if isinstance(offset, int) else self.b.splat(
            self.b.truncate(offset, i8), vector)

    def word(self, packed: View, indices: list[Index]) -> SSAValue:
        """A packed pair of weights in every int32 lane, as int16 halves."""
        word = self.b.splat(self.b.load(packed, indices), self.vector)
        return self.b.bitcast(word, VectorType(i16, [2 * self.lanes]))



class PairedTaps(PairColumns):
    """The depthwise tiles' arithmetic (`vector-depthwise-int8`) with two adjacent kernel
    columns a `vpmaddwd`: each int32 lane holds the pixel's inputs at taps kx and kx + 1 as
    int16 halves (less the input zero point; lanes in the padding loaded as it, so 0), and the
    weight word the pair (w[ky, kx], w[ky, kx + 1]); an odd last column pairs with 0. Of
    stride 2 and undilated, the pairs of a row's vector are its 2 x lanes bytes from the
    first tap's column, as they lie: one load."""

    taps_per_product = 2

    def __init__(self, b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp):
        super().__init__(b, domain, op)
        self.windows: dict[tuple, SSAValue] = {}
        """The flipped windows (`window_pairs`) by block, view and indices."""

    def taps_weight(self, packed: View, indices: list[list[Index]]) -> SSAValue:
        halves = [self.b.int_and(self.domain.weight(packed, at), 0xFFFF) for at in indices]
        word = halves[0] if len(halves) == 1 else self.b.int_or(halves[0], self.b.shift_left(halves[1], 16))
        return self.b.bitcast(self.b.splat(word, self.vector), VectorType(i16, [2 * self.lanes]))

    def window_taps(self, k_w: int, dilation: int, stride: int) -> int:
        """Of stride 1, undilated, `WINDOW_LANES` lanes: away from the row's edges, a
        vector's taps are read as one window of 2 x lanes columns from its first tap's
        (`window_pairs`), so the kernel is taken as at least lanes + 1 columns wide."""
        return max(k_w, self.lanes + 1) if self.takes_window(dilation, stride) else k_w

    def takes_window(self, dilation: int, stride: int) -> bool:
        return stride == 1 and dilation == 1 and self.lanes <= WINDOW_LANES

    def taps_input(self, view: View, indices: list[list[Index]], loaded: list[list[bool] | None],
                   stride: int, first_tap: int = 0) -> SSAValue:
        zero_point = self.domain.input_offset
        column = indices[0][-1]
        if (stride == 2 and self.op.dilations.get_values()[1] == 1 and all(at is None for at in loaded)
                and (len(indices) == 2 or not isinstance(column, int) or column + 2 * self.lanes <= view.shape[-1])):
            # the pairs as the row holds them; a lone last tap's high halves are the next
            # column's levels, which its word's high half 0 multiplies (`taps_weight`), and
            # which lie in the row (a run-time column is an interior tile's, whose taps and
            # the column after each do: `vector_layout.interior_columns`)
            return self.centred_pairs(vector_columns.load_vector(self.b, view, indices[0], 2 * self.lanes))
        start = indices[0][-1] - first_tap if isinstance(indices[0][-1], int) else None
        in_row = start is None or 0 <= start <= view.shape[-1] - 2 * self.lanes  # run-time: `window_taps`
        if (self.takes_window(self.op.dilations.get_values()[1], stride)
                and first_tap + len(indices) - 1 + self.lanes <= 2 * self.lanes
                and all(at is None for at in loaded) and in_row):
            return self.window_pairs(view, indices[0], first_tap, len(indices))

        in_row = [lanes_read is not None and any(lanes_read) and isinstance(at[-1], int)
                  and view.shape[-1] >= self.lanes * stride for at, lanes_read in zip(indices, loaded)]

        def levels(k: int) -> SSAValue:
            at, lanes_read = indices[k], loaded[k]
            if lanes_read is not None and not any(lanes_read):  # a tap wholly in the padding
                return self.zero_levels()
            if in_row[k]:
                return self.in_row_levels(view, at, lanes_read, stride)
            return vector_columns.load_vector(self.b, view, at, self.lanes, lanes_read, zero_point, stride)

        other = levels(1) if len(indices) > 1 else self.zero_levels()
        pairs = self.centred_pairs(interleaved(self.b, levels(0), other))
        if not any(in_row):
            return pairs
        # the lanes an in-row load left outside the row: their centred halves 0, as the padding's zero point
        kept = [half >= len(indices) or not in_row[half] or loaded[half][lane]
                for lane in range(self.lanes) for half in (0, 1)]
        return self.b.int_and(pairs, self.b.lane_constants([-1 if keep else 0 for keep in kept], i16))

    def window_pairs(self, view: View, indices: list[Index], first_tap: int, taps: int) -> SSAValue:
        """The interleaved levels of `taps` (1 or 2) adjacent taps from kernel column
        `first_tap` (at `indices`), of stride 1, less the input zero point: shuffled out of the
        2 x lanes columns from the vector's first tap's (kernel column 0), the same window for
        every tap of the row (`flipped_window`), so that lane i holds columns first_tap + i
        and first_tap + i + 1 of it. Each level is picked by `vpshufb` into the low byte of
        its int16 half, the high byte 0: the flipped level x + 128 as it is, so the pair less
        128 + the zero point (one `vpsubw`) is x - x_offset, in [-255, 255], exactly. A lone
        last tap pairs with itself: its weight word's high half is 0. A vector of a run-time
        column is one of the row's interior loop, whose taps `window_taps` widened to the
        window: it lies in the row."""
        column = self.b.add(indices[-1], -first_tap)
        at = [*indices[:-1], column]
        key = (id(self.b.block), id(view), tuple(linear_form(index) for index in at))
        if key not in self.windows:
            self.windows[key] = self.flipped_window(vector_columns.load_vector(self.b, view, at, 2 * self.lanes))
        window = self.windows[key]
        copy = 2 * self.lanes  # a lane's level from the window's copy in the lane's own 128-bit half
        zero = window.type.get_shape()[0]  # the first lane of the zeros
        order = [zero if byte else first_tap + lane + half * (taps - 1) + copy * (lane // LANES_PER_HALF)
                 for lane in range(self.lanes) for half in (0, 1) for byte in (0, 1)]
        picked = self.b.emit(llvm.ShuffleVectorOp(window, self.b.int_value(0, window.type), DenseArrayBase.from_list(
            i32, order), VectorType(i8, [len(order)])))
        pairs = self.b.bitcast(picked, VectorType(i16, [2 * self.lanes]))
        return self.less_input_offset(pairs, FLIP)

    def flipped_window(self, levels: SSAValue) -> SSAValue:
        """A row's window of int8 levels XOR 0x80 (each x + 128 as an unsigned byte), one copy
        in each 128-bit half of the pairs' vector (`vbroadcasti128` of the load: `vpshufb`
        shuffles within halves), held in a vector register (`in_register`: no
        instruction) so that LLVM neither pushes the XOR past the pairs' shuffles (one a pair
        of taps, not a window) nor broadcasts the window again for each."""
        count = levels.type.get_shape()[0]
        copies = max(1, self.lanes // LANES_PER_HALF)
        both = self.b.emit(llvm.ShuffleVectorOp(levels, levels, DenseArrayBase.from_list(
            i32, list(range(count)) * copies), VectorType(i8, [count * copies])))
        return in_register(self.b, self.b.int_xor(both, self.b.int_value(-FLIP, both.type)), self.products)

    def in_row_levels(self, view: View, indices: list[Index], loaded: list[bool], stride: int) -> SSAValue:
        """An edge tile's levels of a tap (lanes `stride` columns apart from the compile-time
        column `indices[-1]`) by one unmasked load of the `lanes x stride` columns of the row
        that hold every `loaded` lane (a row at least that wide) and one shuffle; the others
        (in the padding or past the row's end) hold some level of the row, for `taps_input`
        to clear once centred. AVX2 has no byte-masked load (LLVM inserts a masked load's
        bytes one at a time), and a shuffle that fills them with the zero point becomes an
        SSE4a `insertq` on AMD hosts (an SSE instruction among AVX ones: twice the time)."""
        count = self.lanes * stride
        column, width = indices[-1], view.shape[-1]
        wanted = [column + lane * stride for lane in range(self.lanes) if loaded[lane]]
        start = min(wanted[0], width - count)  # in the row, and so is every loaded lane's column
        window = self.b.emit(llvm.LoadOp(self.b.element(view, [*indices[:-1], start]), VectorType(i8, [count]),
                                         alignment=1))
        order = [(column + lane * stride if loaded[lane] else wanted[0]) - start for lane in range(self.lanes)]
        return self.b.emit(llvm.ShuffleVectorOp(window, window, DenseArrayBase.from_list(i32, order),
                                                VectorType(i8, [self.lanes])))

    def multiply_accumulate(self, total: SSAValue, pixels: SSAValue, weight: SSAValue) -> SSAValue:
        return self.pair_multiply_accumulate(total, pixels, weight)


class DepthwiseTaps(PairedTaps):
    """`PairedTaps` on the depthwise tiles (`vector-depthwise-int8`, where not on
    `WidenedRows`): on AVX2 one output step takes
    32 levels (`widest_output`: four rows of one vector, or two rows of two, through one
    `LaneRequantization` and `packed_bytes`: two `vpackssdw`, one `vpacksswb`, one `vpermd`
    and one relu `vpmaxsb` for the 32, not three packs, a `vpshufd` and a `vpmaxsb` for
    every 16)."""

    def __init__(self, b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp):
        super().__init__(b, domain, op)
        if self.lanes * 4 == JOINED_LEVELS:
            self.widest_output = JOINED_LEVELS


class WidenedRows(PairedTaps):
    """The depthwise convolution of stride 1 along its rows on rows widened once a channel
    (`vector-depthwise-int8` where `takes_widened_rows`): each input row of the channel is
    sign-extended to int16 less the input zero point once, into a stack array whose columns
    are the input's shifted by the left padding and by the columns before it that put the
    input's first column on a 32-byte boundary (`lead`: the widening's stores aligned, none
    split across two cache lines; the 3x3 24 s(2,1) on 12x96, 144 stores a channel, int8 µs
    -8%), the padding and the slack past the row's end 0 (written once a call). Outputs go
    in chunks of 2 x lanes columns from x0, as two vectors: the even outputs x0 + 2l and the
    odd ones x0 + 2l + 1. Read as int32 words, the row's int16 from column a hold the pairs
    (a + 2l, a + 2l + 1): the taps (kx, kx + 1) of the even outputs from a = x0 + kx, of the
    odd ones from x0 + 1 + kx, each ONE plain load (a `vpmaddwd` memory operand), no
    shuffle, no edge tile (a lone last tap reads the next
    column in its high half, which its word's high half 0 multiplies). Per output vector and
    kernel row ceil(k_w / 2) loads, `vpmaddwd` and `vpaddd`, each sum held in a register as
    it is after each (`in_register`: LLVM's reassociation of the 8 chains spilled 9-18 ymm a
    loop; llvm-mca znver3 cycles a loop of 8 output vectors 47.5 -> 40.1 on the 5x5 of 200
    channels on 2x96, 49.1 -> 44.0 on the 3x3 of 32 on 6x96); the widening (`vpmovsxbw`,
    `vpsubw`, a store: 16 columns) is paid once per input row; of few rows (`STORE_QUEUE`),
    the next channel's rows while this one's are read (two arrays in turn where the input's
    channels lie one after the other: the tiles' loads, 2 to 6 bytes off the widening's
    32-byte stores, do not wait for them to leave the store queue). The output step takes both
    vectors of two chunks at once (32 levels, `HostInt8Columns.outputs`' packs) and one byte
    shuffle within 128-bit halves puts each row's even and odd levels back in order.

    Of stride 1 along the columns too, an odd kernel's lone last column takes two kernel rows
    a `vpmaddwd` (`vertical_rows`, `column_pairs_of`): the words (x[y, a], x[y + 1, a]) of the
    even and of the odd outputs, each built from two loads of the widened rows by a shift and
    a `vpblendw` (FP1/FP2 and any pipe on Zen 3, where `vpmaddwd` takes FP0/FP3), the pair of
    input rows shared by a tile's output rows 2j and 2j + 1 (kernel rows (1, 2) of the one,
    (0, 1) of the other): a 3x3's 6 `vpmaddwd` and `vpaddd` an output vector 5, a 5x5's 15
    13, for half a shift and half a blend. Of stride 2 along the rows no two output rows share
    a pair (as many FP uops either way: not taken)."""

    ROWS = 4
    """Output rows a tile takes: 2 x 4 accumulators beside a 3x3's 6 weight words."""
    CHUNKS = 4
    """Chunks of a tile's rows together: a tile of fewer rows takes more chunks of each (2 of
    2 rows, 4 of 1): as many accumulators, more independent sums between the output steps
    (PP-OCR-cls's 5x5 of 200 channels on 2x96: 14.9 us, not 16.8 on one chunk)."""

    @staticmethod
    def takes_widened_rows(op: glowll.ConvolutionOp, lanes: int, in_w: int) -> bool:
        """Of stride 1 along the rows, undilated, on AVX2's 8 lanes (the output's byte
        shuffle within 128-bit halves), rows at least 2 x lanes wide (the widening's loads
        lie in the row)."""
        return (op.strides.get_values()[1] == 1 and op.dilations.get_values() == (1, 1) and lanes == 8
                and in_w >= 2 * lanes)

    @staticmethod
    def vertical_rows(r: int, k_h: int) -> range:
        """The first kernel rows ka of the pairs (ka, ka + 1) whose lone last column output row
        `r` of a tile takes vertically (`column_pairs_of`): an odd kernel's last row alone on
        even rows, its first on odd ones, so that (of stride 1) rows 2j and 2j + 1 read the
        same pairs of input rows; an even kernel's rows all paired."""
        return range(1 - r % 2 if k_h % 2 else 0, k_h - 1, 2)

    def emit(self, view) -> None:
        b, lanes = self.b, self.lanes
        chunk = 2 * lanes  # output columns of a tile's even and odd vectors
        dest, src, packed, bias = view(self.op.dest), view(self.op.input), view(self.op.filter), view(self.op.bias)
        n_size, channels, height, width = dest.shape
        _, _, in_h, in_w = src.shape
        _, _, k_h, k_w = self.op.filter_shape.get_values()
        pt, pl, _, _ = self.op.pads.get_values()
        sy = self.op.strides.get_values()[0]
        storage = dest.element_type
        taps = [list(range(kx, min(kx + 2, k_w))) for kx in range(0, k_w, 2)]
        chunks = -(-width // chunk)
        lead = -pl % chunk  # columns before the left padding: the widening's stores 32-byte aligned
        row_size = -(-(lead + max(chunk * chunks + 2 * (len(taps) - 1) + 1, pl + in_w)) // chunk) * chunk
        halves = VectorType(i16, [chunk])
        planes = n_size * channels
        stores = in_h * -(-in_w // chunk)  # a channel's widening
        buffers = 2 if planes > 1 and src.strides[0] == channels * src.strides[1] and stores <= STORE_QUEUE else 1
        rows = View.contiguous(b.alloca(buffers * in_h * row_size, i16), [buffers * in_h, row_size],
                               element_type=i16)

        def store(value: SSAValue, indices: list[Index]) -> None:
            store_widened(b, value, rows, indices)

        with b.loop(0, buffers * in_h) as y:  # the padding and the slack: 0
            for x in range(0, row_size, chunk):
                store(b.int_value(0, halves), [y.index, x])

        def widen(levels: View, plane: list[Index], first_row: Index) -> None:
            """Each input row of the channel at `plane` in `levels` widened once, into the rows
            from `first_row`."""
            with b.loop(0, in_h) as y:
                for x in range(0, in_w, chunk):
                    x = min(x, in_w - chunk)  # the last chunk ends at the row's end
                    widened = self.less_input_offset(b.emit(llvm.SExtOp(
                        vector_columns.load_vector(b, levels, [*plane, y.index, x], chunk), halves)))
                    store(widened, [b.add(first_row, y.index), lead + pl + x])

        src_planes = src.reshaped([planes, in_h, in_w], src.strides[1:])  # (n, c) as plane n x channels + c
        lone = len(taps) - 1 if k_w % 2 else None  # the group of the lone last kernel column
        column_pairs = {} if lone is None or sy != 1 else {ka: None for ka in range(k_h - 1)}

        with b.loops([n_size, channels]) as (n, c):
            weights = [[self.taps_weight(packed, [[c, 0, ky, kx, 0] for kx in group]) for group in taps]
                       for ky in range(k_h)]
            for ka in column_pairs:  # the lone column's pairs of kernel rows (ka, ka + 1)
                column_pairs[ka] = self.taps_weight(packed, [[c, 0, ka + k, k_w - 1, 0] for k in (0, 1)])
            start = self.start(bias, c)
            if buffers == 2:  # the next channel's rows widened while this one's are read (the first's too)
                plane = b.add(b.mul(n, channels), c)
                top_row = b.mul(b.int_and(plane, 1), in_h)  # this channel's first row
                with b.loop(b.min(plane, 1), 2) as ahead:  # one code for both
                    widened = b.add(plane, ahead.index)
                    with b.when(b.compare("slt", widened, planes)):
                        widen(src_planes, [widened], b.mul(b.int_and(widened, 1), in_h))
            else:
                top_row = 0
                widen(src, [n, c], 0)

            def tile(y0: Index, count_y: int, x0: Index, count_x: int, row_edge: bool,
                     stored: list[bool] | None) -> None:
                """Output rows [y0, y0 + count_y) x `count_x` chunks from column x0 (`stored`:
                the lanes of a last, partial chunk)."""
                top = b.sub(b.mul(y0, sy), pt)
                at_top = b.add(top, top_row)
                rows_read = [(i, covered) for i, covered in vector_columns.inputs_read(count_y, k_h, sy, 1)
                             if not row_edge or 0 <= top + i < in_h]
                units = [(r, x) for r in range(count_y) for x in range(count_x)]  # a row's chunk: even, odd
                sums = [start] * (2 * len(units))

                def accumulate(r: int, x: int, odd: int, pairs: SSAValue, word: SSAValue) -> None:
                    at = 2 * (r * count_x + x) + odd
                    sums[at] = in_register(b, self.pair_multiply_accumulate(sums[at], pairs, word), self.products)

                vertical = {r: [ka for ka in self.vertical_rows(r, k_h) if ka in column_pairs and (
                    not row_edge or all(0 <= top + r * sy + ka + k < in_h for k in (0, 1)))]
                    for r in range(count_y)}
                for i, covered in rows_read:
                    for g, group in enumerate(taps):
                        readers = [(r, ky) for r, ky in covered
                                   if g != lone or not any(0 <= ky - ka <= 1 for ka in vertical[r])]
                        for x in range(count_x):
                            for odd in (0, 1):
                                if not readers:
                                    continue
                                pairs = vector_columns.load_vector(
                                    b, rows, [b.add(at_top, i), b.add(x0, lead + x * chunk + group[0] + odd)], chunk)
                                for r, ky in readers:
                                    accumulate(r, x, odd, pairs, weights[ky][g])
                for i in sorted({r * sy + ka for r in vertical for ka in vertical[r]}):
                    for x in range(count_x):
                        column = b.add(x0, lead + x * chunk + k_w - 1)
                        upper, lower = (vector_columns.load_vector(b, rows, [b.add(at_top, i + k), column], chunk)
                                        for k in (0, 1))
                        for odd in (0, 1):
                            pairs = column_pairs_of(b, upper, lower, odd, self.products)
                            for r in vertical:
                                for ka in vertical[r]:
                                    if r * sy + ka == i:
                                        accumulate(r, x, odd, pairs, column_pairs[ka])
                for u in range(0, len(units), 2):  # two chunks through one output step: 32 levels
                    joined = min(2, len(units) - u)
                    levels = self.output(c, vector_columns.join(b, sums[2 * u:2 * (u + joined)]), storage)
                    order = [group + (k % chunk) // 2 + lanes * (k % 2) for group in range(0, joined * chunk, chunk)
                             for k in range(chunk)]  # each chunk's even and odd levels interleaved
                    in_order = b.emit(llvm.ShuffleVectorOp(levels, levels, DenseArrayBase.from_list(i32, order),
                                                           levels.type))
                    for k in range(joined):
                        r, x = units[u + k]
                        vector_columns.store_vector(b, vector_depthwise.part(b, in_order, k, joined), dest,
                                                    [n, c, b.add(y0, r), b.add(x0, x * chunk)], stored)

            def row_group(y0: Index, count_y: int, row_edge: bool) -> None:
                whole, count_x = width // chunk, max(1, self.CHUNKS // count_y)
                with b.loop(0, whole // count_x) as t:
                    tile(y0, count_y, b.mul(t.index, count_x * chunk), count_x, row_edge, None)
                for x in range(whole - whole % count_x, whole):
                    tile(y0, count_y, x * chunk, 1, row_edge, None)
                if whole < chunks:  # a last, partial chunk
                    last = whole * chunk
                    tile(y0, count_y, last, 1, row_edge, [last + lane < width for lane in range(chunk)])

            first_row, end_row = interior_columns(in_h, height, k_h, 1, pt, sy)
            vector_columns.in_tiles(b, height, self.ROWS, first_row, end_row, row_group)


class PairedRows(WidenedRows):
    """The depthwise convolution of stride 1 along its rows on an input of two rows whose every
    output row reads both through kernel rows (ky, ky + 1) (`takes_paired_rows`;
    PP-OCR-cls's 5x5 of 200 channels on 2x96): the two rows widened once a channel into ONE
    stack array of int32 words, column a's word the pair (x[0, a], x[1, a]) as int16 halves
    less the input zero point, from `lead` words that put the input's first column on a
    32-byte boundary (as `WidenedRows`': every store of 8 columns aligned, none split across
    two cache lines; the 5x5 200 on 2x96 in one process -1.4%) (per 8 columns two 8-byte
    loads, one `vpunpcklbw`, `vpmovsxbw`, `vpsubw` and a store; LLVM's form of 16 columns at
    once broadcast and permuted each row's half: 5 shuffles for 2), and the weight word of
    output row y and kernel column kx (w[ky, kx], w[ky + 1, kx]), ky the kernel row reading
    row 0. An output vector of 8 consecutive columns from x0 takes, per kernel column, the 8
    words from x0 + kx: one plain load into `vpmaddwd`, k_w of them (5: no column paired
    with 0, as `WidenedRows`' ceil(k_w / 2) a row on both rows are: 6), its levels in order
    (no even/odd shuffle). A tile: both output rows' `CHUNKS` vectors, the loads shared by
    the rows; 32 levels of a row through one output step."""

    @staticmethod
    def takes_paired_rows(op: glowll.ConvolutionOp, lanes: int, in_h: int, in_w: int, height: int) -> bool:
        """`WidenedRows`' layers of two input rows, an odd kernel width (an even one takes as
        many products either way) and every output row's kernel rows for both in the kernel."""
        k_h, k_w = op.filter_shape.get_values()[2:]
        pt, sy = op.pads.get_values()[0], op.strides.get_values()[0]
        return (WidenedRows.takes_widened_rows(op, lanes, in_w) and in_h == 2 and k_w % 2 == 1
                and all(0 <= pt - y * sy and pt - y * sy + 1 < k_h for y in range(height)))

    def emit(self, view) -> None:
        b, lanes = self.b, self.lanes
        dest, src, packed, bias = view(self.op.dest), view(self.op.input), view(self.op.filter), view(self.op.bias)
        n_size, channels, height, width = dest.shape
        in_w = src.shape[-1]
        _, _, _, k_w = self.op.filter_shape.get_values()
        pt, pl, _, _ = self.op.pads.get_values()
        sy = self.op.strides.get_values()[0]
        storage = dest.element_type
        chunk = 2 * lanes  # int16 halves of a vector of words
        vectors = -(-width // lanes)
        lead = -pl % lanes  # words before the left padding: the widening's stores 32-byte aligned
        columns = -(-(lead + max(vectors * lanes + k_w - 1, pl + in_w)) // chunk) * chunk
        words = VectorType(i16, [chunk])
        pairs = View.contiguous(b.alloca(2 * columns, i16), [2 * columns], element_type=i16)

        def store(value: SSAValue, column: int) -> None:
            store_widened(b, value, pairs, [2 * column])

        for x in range(0, columns, lanes):  # the padding and the slack: 0
            store(b.int_value(0, words), x)

        with b.loops([n_size, channels]) as (n, c):
            weights = [[self.taps_weight(packed, [[c, 0, pt - y * sy + k, kx, 0] for k in (0, 1)])
                        for kx in range(k_w)] for y in range(height)]
            start = self.start(bias, c)
            for x in range(0, in_w, lanes):
                x = min(x, in_w - lanes)  # the last run ends at the row's end
                rows = [vector_columns.load_vector(b, src, [n, c, y, x], lanes) for y in (0, 1)]
                store(self.less_input_offset(b.emit(llvm.SExtOp(interleaved(b, *rows), words))), lead + pl + x)

            def tile(x0: Index, count: int, stored: list[bool] | None) -> None:
                """`count` (a power of two) vectors of every output row from column x0
                (`stored`: the lanes of a last, partial vector)."""
                sums = [[start] * count for _ in range(height)]
                for kx in range(k_w):
                    for v in range(count):
                        taps = vector_columns.load_vector(b, pairs, [b.mul(b.add(x0, lead + v * lanes + kx), 2)],
                                                        chunk)
                        for y in range(height):
                            sums[y][v] = in_register(b, self.pair_multiply_accumulate(sums[y][v], taps,
                                                                                      weights[y][kx]))
                for y in range(height):
                    levels = self.output(c, vector_columns.join(b, sums[y]), storage)
                    vector_columns.store_vector(b, levels, dest, [n, c, y, x0], stored)

            whole = width // lanes
            with b.loop(0, whole // self.CHUNKS) as t:
                tile(b.mul(t.index, self.CHUNKS * lanes), self.CHUNKS, None)
            first = whole - whole % self.CHUNKS
            for count in (2, 1):  # the vectors left, in powers of two
                if (whole - first) & count:
                    tile(first * lanes, count, None)
                    first += count
            if whole < vectors:  # a last, partial vector
                tile(whole * lanes, 1, [whole * lanes + lane < width for lane in range(lanes)])


def store_widened(b: KernelBuilder, value: SSAValue, rows: View, indices: list[Index]) -> None:
    """A vector of widened int16 `value` stored into the stack array `rows` (64-byte aligned,
    rows of whole vectors) at `indices`: aligned to the vector's size (`vmovdqa`, never split
    across two cache lines) where the last index is a compile-time multiple of its length,
    else to its elements' 2 bytes."""
    count = value.type.get_shape()[0]
    column = indices[-1]
    aligned = isinstance(column, int) and column % count == 0
    address = b.emit(llvm.GEPOp(b.element(rows, indices), [0], value.type, inbounds=True))
    b.emit(llvm.StoreOp(value, address, alignment=2 * count if aligned else 2))


def column_pairs_of(b: KernelBuilder, upper: SSAValue, lower: SSAValue, odd: int, products: str = "") -> SSAValue:
    """The int16 of two widened rows' same columns paired: word l of the `odd` (0 or 1) outputs
    (upper[2l + odd], lower[2l + odd]), a column of two kernel rows in one `vpmaddwd` lane: one
    row's words shifted by 16 bits (`vpslld` of the lower for the even, `vpsrld` of the upper
    for the odd: FP1/FP2 on Zen 3) and one `vpblendw` (any FP pipe) of alternate halves; the
    shifted words held in a register (`in_register`), or LLVM folds both into byte shuffles
    (two `vpshufb` and a `vpunpcklwd` a vector, all on FP1/FP2)."""
    count = upper.type.get_shape()[0]
    words = VectorType(i32, [count // 2])
    shift = b.shift_right_logical if odd else b.shift_left
    moved = in_register(b, b.bitcast(shift(b.bitcast(lower if odd == 0 else upper, words), 16), upper.type), products)
    first, second = (upper, moved) if odd == 0 else (moved, lower)
    order = [k + count * (k % 2) for k in range(count)]
    return b.emit(llvm.ShuffleVectorOp(first, second, DenseArrayBase.from_list(i32, order), upper.type))


VECTOR_REGISTER = {"": "x", "neon": "w"}
"""The inline-asm constraint of a vector register by the pair products' unit (`PAIR_PRODUCTS`):
x86's xmm/ymm ("x"), AArch64's SIMD ("w")."""


def in_register(b: KernelBuilder, value: SSAValue, products: str = "") -> SSAValue:
    """`value` through an empty inline asm that takes and gives it in one vector register (no
    instruction) of the unit of `products` (`VECTOR_REGISTER`): LLVM computes it there, as it
    is, and can neither reorder the sum it ends (`WidenedRows`: its reassociation of a tile's 8
    accumulations, each a chain of bias and products, into trees of partial sums spilled 10-30
    ymm a loop) nor push an operation past it."""
    constraint = VECTOR_REGISTER[products]
    return b.emit(llvm.InlineAsmOp("", f"={constraint},0", [value], [value.type]))


def linear_form(index: Index) -> tuple:
    """An index as a sum of run-time values times integers plus an integer (through the
    builder's nsw adds, subtractions, products by constants and constants), so that two
    indices built apart compare equal when they are the same sum."""
    terms: dict[int, int] = {}
    constant = 0

    def walk(value: Index, factor: int) -> None:
        nonlocal constant
        if isinstance(value, int):
            constant += factor * value
            return
        op = value.owner
        if isinstance(op, llvm.ConstantOp) and isinstance(op.value, IntegerAttr):
            constant += factor * op.value.value.data
        elif isinstance(op, llvm.AddOp | llvm.SubOp):
            walk(op.lhs, factor)
            walk(op.rhs, -factor if isinstance(op, llvm.SubOp) else factor)
        elif isinstance(op, llvm.MulOp) and isinstance(op.rhs.owner, llvm.ConstantOp):
            walk(op.lhs, factor * op.rhs.owner.value.value.data)
        else:
            terms[id(value)] = terms.get(id(value), 0) + factor

    walk(index, 1)
    return tuple(sorted((term, factor) for term, factor in terms.items() if factor)), constant


def packed_bytes(b: KernelBuilder, levels: SSAValue) -> SSAValue:
    """32 int32 levels saturated to int8, in order, by AVX2's packs: `vpackssdw` of the first
    and second 8 and of the third and fourth, `vpacksswb` of the two, each within 128-bit
    halves, then one `vpermd` puts the 4-byte runs back in order (LLVM's own narrowing of the
    32 lanes permutes after every pack: 6 shuffles, not 4)."""
    def quarter(k: int) -> SSAValue:
        return b.emit(llvm.ShuffleVectorOp(levels, levels, DenseArrayBase.from_list(i32, list(range(8 * k, 8 * k + 8))),
                                           VectorType(i32, [8])))

    return saturating_packs.ordered_bytes(b, [quarter(k) for k in range(4)], AVX2_PACKS)


def neon_saturated_bytes(b: KernelBuilder, levels: SSAValue) -> SSAValue:
    """int32 levels (a multiple of 8 of them) saturated to int8, in order, by NEON's
    saturating narrows: each four to int16 (`sqxtn`, `sqxtn2`), each eight of those to int8
    (LLVM's narrowing of a clamp clamped both bounds in int32 first: 2 instructions more for
    every 4 levels)."""
    count = levels.type.get_shape()[0]
    part = vector_depthwise.part
    words = vector_columns.join(b, [b.emit(llvm.CallIntrinsicOp(
        "llvm.aarch64.neon.sqxtn.v4i16", [part(b, levels, k, count // 4)], [VectorType(i16, [4])]))
        for k in range(count // 4)])
    return neon_saturated_words(b, words)


def neon_saturated_words(b: KernelBuilder, words: SSAValue) -> SSAValue:
    """int16 words (a multiple of 8 of them) saturated to int8, in order: each eight by one
    `sqxtn` (`sqxtn2` for the upper half of a register)."""
    count = words.type.get_shape()[0]
    return vector_columns.join(b, [b.emit(llvm.CallIntrinsicOp(
        "llvm.aarch64.neon.sqxtn.v8i8", [vector_depthwise.part(b, words, k, count // 8)], [VectorType(i8, [8])]))
        for k in range(count // 8)])


def neon_nearest_levels(b: KernelBuilder, singles: SSAValue, levels_type: VectorType) -> SSAValue:
    """Singles rounded to nearest even and converted to int32 by one `fcvtns` each 4 lanes
    (`requantization.nearest_levels`' `llvm.rint` and conversion are `frintx` and `fcvtzs`
    on AArch64: LLVM folds none of them)."""
    count = singles.type.get_shape()[0]
    return vector_columns.join(b, [b.emit(llvm.CallIntrinsicOp(
        "llvm.aarch64.neon.fcvtns.v4i32.v4f32", [vector_depthwise.part(b, singles, k, count // 4)],
        [VectorType(i32, [4])])) for k in range(count // 4)])


AVX2_PACKS = ("llvm.x86.avx2.packssdw", "llvm.x86.avx2.packsswb")
"""AVX2's saturating packs (`saturating_packs.Packs`)."""


def saturated_bytes(b: KernelBuilder, quarters: list[SSAValue]) -> SSAValue:
    """Four `<8 x i32>` vectors saturated to int8 by AVX2's packs (`saturating_packs`): in
    each 128-bit half the half's four lanes of the first vector, then the second's, the
    third's, the fourth's."""
    return saturating_packs.saturated_bytes(b, quarters, AVX2_PACKS)


def interleaved(b: KernelBuilder, first: SSAValue, other: SSAValue) -> SSAValue:
    """Two vectors as one of pairs: (first[0], other[0], first[1], other[1], ...)."""
    lanes = first.type.get_shape()[0]
    order = DenseArrayBase.from_list(i32, [k // 2 + (k % 2) * lanes for k in range(2 * lanes)])
    return b.emit(llvm.ShuffleVectorOp(first, other, order, VectorType(first.type.element_type, [2 * lanes])))


def emit_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view) -> None:
    """On the depthwise tiles, or (`vector-planes-int8`) each channel's plane as one tile of
    the vector-planes kernel (`vector_columns.same_padded_planes`, a block of one channel).
    (On NEON's int8 products, `int8_byte_depthwise.emit_convolution`.)"""
    if op.microkernel.data == INT8_PLANES:
        vector_columns.same_padded_planes(b, domain, op, view, 1, HostInt8Columns)
    elif PairedRows.takes_paired_rows(op, op.vector_tile.get_values()[0], *view(op.input).shape[-2:],
                                      view(op.dest).shape[-2]):
        PairedRows(b, domain, op).emit(view)
    elif WidenedRows.takes_widened_rows(op, op.vector_tile.get_values()[0], view(op.input).shape[-1]):
        WidenedRows(b, domain, op).emit(view)
    else:  # two kernel columns a vpmaddwd
        vector_depthwise.emit_convolution(b, domain, op, view, DepthwiseTaps)
