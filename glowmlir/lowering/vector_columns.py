"""Convolution on vectors of output columns: the register-blocked kernel of the vector units.

A convolution of stride 1 along its rows computes, for one output row, *tiles* of
`vectors` x `lanes` adjacent output columns times a block of output channels, every
accumulator a vector register: over the input channels, kernel rows and taps, each vector of
input columns is loaded once and multiplied by each channel's weight broadcast over the
lanes. That is `VLDRB.S32` + `VMLA.I32 q, q, r` on Helium (int8, `Int8ColumnArithmetic`) and
a load + `VFMADD` with a broadcast weight on AVX2/AVX-512 or NEON (f32,
`float_kernels.FloatColumns`): the accumulators never leave the registers until the tile is done.
Columns whose taps reach into the padding, and a row's last columns, are one vector per
channel with lanes masked at compile time (tail predication: `llvm.masked.load` /
`llvm.masked.store`, a predicated load or store on MVE and AVX-512). Kernel rows in the
padding are skipped. The filter is laid out as the tile reads it
(`lowering.vector_layout.pack_filter`).

What differs between int8 and float (loading and widening an input vector, the weight, the
bias, multiply-accumulate, the output step) is a `ColumnArithmetic`.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Callable, Iterator

from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, IntegerType, VectorType, i32, i64
from xdsl.ir import Attribute, SSAValue

from glowmlir.dialects import glowll
from glowmlir.lowering import loop_skeletons
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View, is_zero
from glowmlir.lowering.loop_skeletons import ArithmeticDomain, Row, kernel_rows_inside, row
from glowmlir.lowering.vector_layout import PLANES, channel_is_one_row, interior_columns, tile_vectors

# ----------------------------------------------------------------------------- vector memory


def _mangled(vector: VectorType) -> str:
    """An intrinsic's type suffix: v4i8, v16f32."""
    element = vector.element_type
    kind = f"i{element.width.data}" if isinstance(element, IntegerType) else "f32"
    return f"v{vector.get_shape()[0]}{kind}"


def load_vector(b: KernelBuilder, view: View, indices: list[Index], lanes: int,
                loaded: list[bool] | SSAValue | None = None, passthrough: int | float | SSAValue = 0,
                stride: int = 1, lead: int = 0) -> SSAValue:
    """`lanes` elements of `view` `stride` apart from `indices` (its last index, the first
    lane's column, may be negative when masked); with `loaded`, only those lanes are read
    (a predicated load; an `<N x i1>` value: lanes chosen at run time), the others are
    `passthrough` (an integer value is truncated to the element type). A stride over 1
    loads `stride` times the lanes and keeps every `stride`-th (a shuffle): unmasked, it
    reads `stride` - 1 elements past the last lane's, unless `lead` (< `stride`, the first
    lane's column at least `lead`) starts it that many elements before the first lane's."""
    if stride > 1:
        assert not isinstance(loaded, SSAValue), "a strided vector takes compile-time lanes"
        assert lead == 0 or loaded is None, "a masked strided vector reads only its lanes"
        at = [*indices[:-1], b.add(indices[-1], -lead)] if lead else indices
        wide = load_vector(b, view, at, lanes * stride,
                           None if loaded is None else [element % stride == 0 and loaded[element // stride]
                                                        for element in range(lanes * stride)], passthrough)
        every = DenseArrayBase.from_list(i32, [lead + lane * stride for lane in range(lanes)])
        return b.emit(llvm.ShuffleVectorOp(wide, wide, every, VectorType(view.element_type, [lanes])))
    vector = VectorType(view.element_type, [lanes])
    if loaded is None:
        return b.emit(llvm.LoadOp(b.element(view, indices), vector, alignment=1))
    address = column_address(b, view, indices)
    if isinstance(passthrough, SSAValue):
        others = b.splat(b.truncate(passthrough, view.element_type), vector)
    elif isinstance(view.element_type, IntegerType):
        others = b.int_value(int(passthrough), vector)
    else:
        others = b.splat(b.emit(llvm.ConstantOp(FloatAttr(float(passthrough), view.element_type),
                                                view.element_type)), vector)
    mask = loaded if isinstance(loaded, SSAValue) else b.lane_mask(loaded)
    return b.emit(llvm.CallIntrinsicOp(f"llvm.masked.load.{_mangled(vector)}.p0",
                                       [address, b.integer(1), mask, others], [vector]))


def load_edge_vector(b: KernelBuilder, view: View, indices: list[Index], lanes: int, loaded: list[bool] | None,
                     passthrough: int | SSAValue = 0) -> SSAValue:
    """`load_vector` of consecutive elements (stride 1), where a masked vector at a row's edge
    (its lanes read a run at its start or its end, the others `passthrough`, its first lane's
    column known at compile time) is read as a whole vector inside the row (the `lanes`
    elements that end with the run, or start with it, where those lie inside the row), moved
    into place by one shuffle with the passthrough (`ext` on NEON): one load and one shuffle
    where a target without masked loads reads lane by lane. Other masks as `load_vector`."""
    count = sum(loaded) if loaded is not None else lanes
    outside, column = lanes - count, indices[-1]
    if (loaded is None or not count or not isinstance(column, int)
            or list(loaded) not in ([False] * outside + [True] * count, [True] * count + [False] * outside)):
        return load_vector(b, view, indices, lanes, loaded, passthrough)
    first = column + outside if not loaded[0] else column - outside  # the whole vector's first column
    if not 0 <= first <= view.shape[-1] - lanes:
        return load_vector(b, view, indices, lanes, loaded, passthrough)
    vector = VectorType(view.element_type, [lanes])
    others = (b.splat(b.truncate(passthrough, view.element_type), vector) if isinstance(passthrough, SSAValue)
              else b.int_value(int(passthrough), vector))
    inside = load_vector(b, view, [*indices[:-1], first], lanes)
    if not loaded[0]:  # the lanes read in the last lanes
        order = list(range(outside)) + [lanes + lane for lane in range(count)]
        return b.emit(llvm.ShuffleVectorOp(others, inside, DenseArrayBase.from_list(i32, order), vector))
    order = [outside + lane for lane in range(count)] + [lanes + lane for lane in range(outside)]
    return b.emit(llvm.ShuffleVectorOp(inside, others, DenseArrayBase.from_list(i32, order), vector))


def column_address(b: KernelBuilder, view: View, indices: list[Index]) -> SSAValue:
    """The address of `view[indices]` whose last index, a masked vector's first lane, may lie
    outside the row (negative): an offset from the row's start, which is inside the buffer."""
    row_start = b.element(view, [*indices[:-1], 0])
    return b.emit(llvm.GEPOp(row_start, [llvm.GEP_USE_SSA_VAL], view.element_type,
                             ssa_indices=[b.index(indices[-1])]))


def store_vector(b: KernelBuilder, value: SSAValue, view: View, indices: list[Index],
                 stored: list[bool] | SSAValue | None = None) -> None:
    """A vector into consecutive elements of `view` from `indices`; with `stored`, only those
    lanes (a predicated store; an `<N x i1>` value: chosen at run time). A whole vector of 16
    or 32 bits of integers is stored as one integer of its bits: AArch64's LLVM stored a
    `<4 x i8>` cut from a wider vector lane by lane (an `umov` and a `mov` a byte: the
    NEON 1x1 8 -> 8 on 24x96, 125,691 -> 104,383 instructions a call, code 1,352 -> 1,220 B)."""
    address = b.element(view, indices)
    if stored is None:
        bits = value.type.get_shape()[0] * value.type.element_type.bitwidth
        if isinstance(value.type.element_type, IntegerType) and bits in (16, 32):
            b.emit(llvm.StoreOp(b.bitcast(value, IntegerType(bits)), address, alignment=1))
            return
        # a GEP of the vector's type: llvmlite stores only through a pointer to the value's type
        address = b.emit(llvm.GEPOp(address, [0], value.type, inbounds=True))
        b.emit(llvm.StoreOp(value, address, alignment=1))
        return
    if (not isinstance(stored, SSAValue) and stored.count(True) == 1 and stored[0]
            and isinstance(value.type.element_type, IntegerType)):
        store_first_lane(b, value, view, indices)
        return
    mask = stored if isinstance(stored, SSAValue) else b.lane_mask(stored)
    b.emit(llvm.CallIntrinsicOp(f"llvm.masked.store.{_mangled(value.type)}.p0",
                                [value, address, b.integer(1), mask], []))


def store_first_lanes(b: KernelBuilder, value: SSAValue, view: View, indices: list[Index], count: int) -> None:
    """The first `count` lanes of `value` into consecutive elements of `view` from `indices`:
    where `count` is a power of two, as a vector of their own by a plain store (an x86 masked
    store's bytes do not forward to the loads that read them next: a one-pixel input packed
    for x86-vnni and read back at once), else by a masked store."""
    lanes = value.type.get_shape()[0]
    if count == lanes or count & (count - 1):
        store_vector(b, value, view, indices, None if count == lanes else [lane < count for lane in range(lanes)])
        return
    first = b.emit(llvm.ShuffleVectorOp(value, value, DenseArrayBase.from_list(i32, list(range(count))),
                                        VectorType(value.type.element_type, [count])))
    store_vector(b, first, view, indices)


def store_first_lane(b: KernelBuilder, value: SSAValue, view: View, indices: list[Index]) -> None:
    """Lane 0 of an integer vector into `view[indices]` by a scalar store (the vector as one
    wide integer, truncated to its low lane), not a masked store of one lane: LLVM's x86
    backend (llvmlite 0.50's) folds a one-lane masked store of bytes truncated from i32
    lanes into `vmovd`, which writes four bytes, clobbering the three after it (an x86-vnni
    convolution of output rows one pixel wide: a streaming model's 1-wide time axis)."""
    lanes, element = value.type.get_shape()[0], value.type.element_type
    whole = b.bitcast(value, IntegerType(lanes * element.width.data))
    b.store(b.truncate(whole, element), view, indices)


# ----------------------------------------------------------------------------- the arithmetic


class ColumnArithmetic(abc.ABC):
    """The number-dependent steps of the column kernel, for one instruction and one
    `ArithmeticDomain` (the skeleton may hand the rows a domain that keeps accumulators)."""

    lanes: int
    """Lanes of an accumulator vector."""
    accumulators: int
    """Accumulator vectors a tile keeps in registers."""
    vector: VectorType
    """An accumulator vector."""
    widest_output = 0
    """Lanes `output` takes at most in one vector of several accumulators joined (0: one
    accumulator a call)."""

    def __init__(self, b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp):
        self.b, self.domain, self.op = b, domain, op

    @abc.abstractmethod
    def input(self, view: View, indices: list[Index], loaded: list[bool] | SSAValue | None,
              stride: int) -> SSAValue:
        """An input vector from `view[indices]`, lanes `stride` columns apart, ready to
        multiply (`loaded`: the lanes read, at compile or run time; the others, taps in the
        padding, must add what the bias expects of them: a real 0, or the input zero point
        where the bias has it folded in)."""

    def weight(self, packed: View, indices: list[Index]) -> SSAValue:
        """A weight broadcast over the lanes."""
        return self.b.splat(self.domain.weight(packed, indices), self.vector)

    taps_per_product = 1
    """Adjacent kernel columns one `multiply_accumulate` takes (the depthwise tiles': 2 where
    each lane holds two int16 products, `int8_pointwise.PairedTaps`)."""

    def taps_weight(self, packed: View, indices: list[list[Index]]) -> SSAValue:
        """The weights of `taps_per_product` adjacent taps (fewer at the filter's last column),
        as `multiply_accumulate` takes them."""
        return self.weight(packed, indices[0])

    def taps_input(self, view: View, indices: list[list[Index]], loaded: list[list[bool] | None],
                   stride: int, first_tap: int = 0) -> SSAValue:
        """The input vectors of adjacent taps (`input`'s, each with its lanes `loaded`), as
        `multiply_accumulate` takes them; `first_tap`: the kernel column of the first."""
        return self.input(view, indices[0], loaded[0], stride)

    def window_taps(self, k_w: int, dilation: int, stride: int) -> int:
        """The kernel columns a vector away from the row's edges may read as if the kernel had
        them (`vector_layout.interior_columns`' kernel): `k_w`, more where `taps_input` loads
        a wider window of the row at once."""
        return k_w

    def start(self, bias: View, channel: Index) -> SSAValue:
        """The bias of an output channel in every lane."""
        return self.b.splat(self.domain.bias(bias, channel), self.vector)

    def row_starts(self, start: SSAValue, packed: View,
                   channel: Index) -> Callable[[list[list[int]], bool], list[SSAValue]]:
        """For the depthwise tiles (`backends.host_vector.depthwise`), built once a channel
        beside its weights: a function of a tile's rows (the kernel rows each reads, those
        whose input rows lie outside the input left out) and of whether the tile is
        `interior` (no lane of it near the row's ends), giving each row's first sum:
        `start` (the channel's bias) for every row here."""
        return lambda kernel_rows, interior: [start] * len(kernel_rows)

    @abc.abstractmethod
    def add(self, total: SSAValue, value: SSAValue) -> SSAValue:
        """total + value, lane by lane."""

    @abc.abstractmethod
    def multiply_accumulate(self, total: SSAValue, pixels: SSAValue, weight: SSAValue) -> SSAValue:
        """total + pixels * weight, lane by lane."""

    @abc.abstractmethod
    def output(self, channel: Index, total: SSAValue, storage: Attribute) -> SSAValue:
        """The accumulators of output `channel` as stored elements of `storage` (the domain's
        output step on vectors), or as they are if the domain keeps accumulators."""

    def joined_channels(self, lanes: int) -> int:
        """How many channels' vectors of `lanes` accumulators `outputs` takes at once (a power
        of two; 1: `output` one channel at a time)."""
        return 1

    def outputs(self, channels: list[Index], totals: list[SSAValue], storage: Attribute) -> list[SSAValue]:
        """`output` of each of `joined_channels` channels' accumulators (one vector each)."""
        return [self.output(o, total, storage) for o, total in zip(channels, totals)]


# ----------------------------------------------------------------------------- the kernel


class Int8ColumnArithmetic(ColumnArithmetic):
    """int8 inputs widened to int32 lanes, less the input zero point unless the pass folded
    it into the bias (`folded_input_offset`: the bias holds bias - x_offset * sum w); int16
    weights (zero point subtracted); int32 sums. A backend's subclass gives its lanes and its
    output step (Helium's `Int8Columns`, the host's `HostInt8Columns`)."""

    def input(self, view: View, indices: list[Index], loaded: list[bool] | SSAValue | None, stride: int) -> SSAValue:
        """The levels less the input zero point (with it folded into the bias, the levels as
        they are); lanes not `loaded` (the padding) are loaded as the zero point: a real 0, or
        the x_offset * w the folded bias takes off."""
        folded = self.op.folded_input_offset is not None
        offset = self.domain.input_offset
        levels = load_vector(self.b, view, indices, self.lanes, loaded, offset, stride)
        widened = self.b.emit(llvm.SExtOp(levels, self.vector))
        return widened if folded or is_zero(offset) else self.b.int_sub(widened, self.b.lanewise(offset, self.vector))

    def add(self, total: SSAValue, value: SSAValue) -> SSAValue:
        return self.b.int_add(total, value)

    def multiply_accumulate(self, total: SSAValue, pixels: SSAValue, weight: SSAValue) -> SSAValue:
        return self.b.int_add(total, self.b.int_mul(pixels, weight))


def tile_starts(columns: ColumnArithmetic, bias: View, channels: list[Index], vectors: int,
                residual: Callable[[int, Index], SSAValue] | None) -> list[SSAValue]:
    """A tile's accumulators before its taps, vector-major: each channel's bias in every lane,
    plus, with a fused residual, its vector (`residual(v, channel)`)."""
    starts = []
    for v in range(vectors):
        for o in channels:
            start = columns.start(bias, o)
            starts.append(start if residual is None else columns.add(start, residual(v, o)))
    return starts


def accumulate_tap(columns: ColumnArithmetic, sums: list[SSAValue], packed: View, weight_at: list[Index],
                   inputs: list[tuple[int, SSAValue]], more_taps: tuple[list[Index], ...] = ()) -> None:
    """sums[v * block + j] += inputs' vector v * the tap's weight of channel j of the block
    (`weight_at`: the packed filter's indices of the tap, less the channel in the block;
    `more_taps`: those of the adjacent taps one product takes too, `taps_per_product`)."""
    block = packed.shape[-1]
    for j in range(block):
        weight = columns.taps_weight(packed, [[*at, j] for at in (weight_at, *more_taps)])
        for v, pixels in inputs:
            sums[v * block + j] = columns.multiply_accumulate(sums[v * block + j], pixels, weight)


def join(b: KernelBuilder, vectors: list[SSAValue]) -> SSAValue:
    """A power of two of vectors of one type one after the other in one vector (pairwise shuffles)."""
    while len(vectors) > 1:
        lanes = vectors[0].type.get_shape()[0]
        both = VectorType(vectors[0].type.element_type, [2 * lanes])
        order = DenseArrayBase.from_list(i32, list(range(2 * lanes)))
        vectors = [b.emit(llvm.ShuffleVectorOp(first, second, order, both))
                   for first, second in zip(vectors[::2], vectors[1::2])]
    return vectors[0]


def joined_runs(stored: list[list[bool] | None], widest: int) -> list[tuple[int, int]]:
    """A tile's vectors (`stored`: None where every lane is stored) as runs (first, count) of
    adjacent whole vectors that go through the output step as one: a power of two of them,
    at most `widest` (the arithmetic's `widest_output` in vectors; 0 or 1: each alone), a
    partly stored vector alone. Joined, the int8 output step packs 16 levels by one
    sequence of saturating packs and stores them at once."""
    runs, v = [], 0
    while v < len(stored):
        count = 1
        while (2 * count <= widest and v + 2 * count <= len(stored)
               and all(lanes is None for lanes in stored[v:v + 2 * count])):
            count *= 2
        runs.append((v, count))
        v += count
    return runs


def store_tile(b: KernelBuilder, columns: ColumnArithmetic, channels: list[Index], totals: list[SSAValue],
               at: Callable[[int, int], tuple[View, list[Index]]], stored: list) -> None:
    """A tile's accumulators through the output step: vector v of channel j to `at(v, j)`
    (a view and the first lane's indices; vector v + 1's lanes follow vector v's), its lanes
    `stored[v]`; adjacent whole vectors of a channel joined up to the arithmetic's
    `widest_output` (`joined_runs`), and the vectors of `joined_channels` channels through
    `outputs` at once."""
    block = len(channels)
    for first, count in joined_runs(stored, columns.widest_output // columns.lanes):
        j = 0
        while j < block:
            group = min(columns.joined_channels(count * columns.lanes), 1 << (block - j).bit_length() - 1)
            places = [at(first, k) for k in range(j, j + group)]
            totals_joined = [join(b, [totals[v * block + k] for v in range(first, first + count)])
                             for k in range(j, j + group)]
            levels = columns.outputs(channels[j:j + group], totals_joined, places[0][0].element_type)
            for (view, indices), value in zip(places, levels):
                store_vector(b, value, view, indices, stored[first])
            j += group


def convolution_rows(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, src: View, packed: View,
                     bias: View, n: Index, channels: list[Index], y: Index, outputs: list[Row], width: int,
                     accumulators: None = None, residual: View | None = None, *,
                     arithmetic: type[ColumnArithmetic]) -> None:
    """Convolution output row `y` of the output channels `channels` (one block) into
    `outputs` (`loop_skeletons.convolution_rows`' contract): the row as vectors from column
    0, in tiles; a loop over the tiles whose columns' taps all lie inside the input row,
    tiles with compile-time lane masks at the row's edges."""
    columns = arithmetic(b, domain, op)
    lanes = columns.lanes
    _, _, in_h, in_w = src.shape
    out_c, group_c, k_h, k_w = op.filter_shape.get_values()
    _, pl, _, _ = op.pads.get_values()
    dy, dx = op.dilations.get_values()
    sx = op.strides.get_values()[1]
    group = op.group.value.data
    block = len(channels)
    first_channel = b.mul(b.div(channels[0], out_c // group), group_c) if group > 1 else 0
    o_block = b.div(channels[0], block) if block > 1 else channels[0]
    top, ky_lo, ky_hi = kernel_rows_inside(b, op, y, in_h, k_h)

    def tile(x0: Index, vectors: int, edge: bool = False) -> None:
        """`vectors` x `lanes` outputs of each channel from column x0, all taps inside the
        input; or (`edge`: a compile-time x0) vectors whose lanes past the row's end and
        whose taps outside the input row are masked."""
        counts = [min(lanes, width - x0 - v * lanes) if edge else lanes for v in range(vectors)]
        stored = [None if count == lanes else [lane < count for lane in range(lanes)] for count in counts]

        def taps(sums: list[SSAValue], channel: Index, c: Index, in_y: Index, ky: Index) -> list[SSAValue]:
            for first in range(0, k_w, columns.taps_per_product):
                group = range(first, min(first + columns.taps_per_product, k_w))
                inputs = []
                for v in range(vectors):
                    if (read := tap_columns(b, x0, v, group, (sx, dx, pl, lanes, in_w), counts[v], edge)) is None:
                        continue
                    at_columns, loaded = read
                    inputs.append((v, columns.taps_input(src, [[n, channel, in_y, column] for column in at_columns],
                                                         loaded, sx, first)))
                accumulate_tap(columns, sums, packed, [o_block, c, ky, first], inputs,
                               tuple([o_block, c, ky, kx] for kx in group[1:]))
            return sums

        starts = tile_starts(columns, bias, channels, vectors, residual and (
            lambda v, o: load_vector(b, residual, [n, o, y, b.add(x0, v * lanes)], lanes, stored[v])))
        with b.loop(0, group_c, carried=starts) as c:
            with b.loop(ky_lo, ky_hi, carried=c.carried) as ky:
                in_y = b.add(top, b.mul(ky.index, dy))
                ky.next(*taps(list(ky.carried), b.add(first_channel, c.index), c.index, in_y, ky.index))
            c.next(*ky.results)
        store_tile(b, columns, channels, c.results,
                   lambda v, j: (outputs[j].view, outputs[j].at(b.add(x0, v * lanes))), stored)

    row_vectors(b, width, lanes, tile_vectors(block, columns.accumulators),
                interior_columns(in_w, width, columns.window_taps(k_w, dx, sx), dx, pl, sx), tile)


def row_vectors(b: KernelBuilder, width: int, lanes: int, vectors: int, clean: tuple[int, int],
                tile: Callable[[Index, int, bool], None]) -> None:
    """A row of `width` outputs as vectors of `lanes` from column 0, tiles of `vectors`:
    those whose lanes all lie in the row with all their taps inside the input (`clean`, the
    columns [first, end) of `interior_columns`) in a loop, the others in tiles of their own
    with masks known at compile time (a row of 28 on 16 lanes: two vectors, one tile).
    `tile(first column, vectors, edge)`."""
    first, end = clean
    count = -(-width // lanes)
    in_tiles(b, count, min(vectors, count), -(-first // lanes), end // lanes,
             lambda v, size, edge: tile(b.mul(v, lanes), size, edge))


def inputs_read(count: int, kernel: int, stride: int, dilation: int) -> Iterator[tuple[int, list[tuple[int, int]]]]:
    """The input columns (or rows) a tile of `count` outputs along them reads, as offsets from
    its first output's first tap, each with the (output, kernel position) pairs that read it:
    loaded or broadcast once, an input feeds them all."""
    for offset in range((count - 1) * stride + (kernel - 1) * dilation + 1):
        taps = [(p, k) for k in range(kernel) for p in [(offset - k * dilation) // stride]
                if (offset - k * dilation) % stride == 0 and 0 <= p < count]
        if taps:
            yield offset, taps


def tap_columns(b: KernelBuilder, x0: Index, v: int, group: range | list[int], row: tuple[int, int, int, int, int],
                count: int, edge: bool) -> tuple[list[Index], list[list[bool] | None]] | None:
    """The input columns that the taps `group` (kernel columns) read for vector `v` of a tile of
    a row's outputs from `x0`, and the lanes each reads (`edge_lanes`, of the vector's `count`
    outputs; None: every lane, away from an `edge`); None when no lane of any is in the row.
    `row` is (stride, dilation, left pad, lanes, input width)."""
    sx, dx, pl, lanes, in_w = row
    at_columns = [b.add(b.mul(x0, sx), kx * dx - pl + v * lanes * sx) for kx in group]
    loaded = [edge_lanes(column, count, lanes, sx, in_w) if edge else None for column in at_columns]
    if all(lanes_read is not None and not any(lanes_read) for lanes_read in loaded):
        return None
    return at_columns, loaded


def edge_lanes(column: int, count: int, lanes: int, stride: int, in_w: int) -> list[bool] | None:
    """The lanes of an input vector read from compile-time `column`, `stride` apart, for a
    vector of `count` outputs: those inside the input row (all False: none), or None when
    all are and the strided read stays inside (a strided vector reads past its last lane)."""
    loaded = [lane < count and 0 <= column + lane * stride < in_w for lane in range(lanes)]
    return None if all(loaded) and column + lanes * stride - 1 < in_w else loaded


def in_tiles(b: KernelBuilder, count: int, size: int, clean_from: int, clean_end: int,
             tile: Callable[[Index, int, bool], None]) -> None:
    """Units [0, count) (vectors of a row, rows of a plane) in tiles of `size`: those within
    [clean_from, clean_end) in a loop (`tile(first unit, size, False)`), the others in tiles
    of their own, their first unit known at compile time (`tile(first, size or fewer, True)`)."""
    u = 0
    while u < count:
        if clean_from <= u and u + size <= clean_end:
            tiles = (clean_end - u) // size
            with b.loop(0, tiles) as t:
                tile(b.add(u, b.mul(t.index, size)), size, False)
            u += tiles * size
        else:  # an edge tile, as wide as a tile
            part = min(size, count - u)
            tile(u, part, True)
            u += part


def in_runs(b: KernelBuilder, size: int, lanes: int, step: Callable[[Index, int], None]) -> None:
    """step(first, count) over [0, size) in runs of `lanes` (a loop), the last run shorter
    (`in_tiles` with every run clean but the last)."""
    in_tiles(b, size, lanes, 0, size, lambda first, count, _: step(first, count))


def lane_positions(b: KernelBuilder, first: Index, lanes: int) -> SSAValue:
    """The `<lanes x i32>` vector first, first + 1, ..., first + lanes - 1."""
    vector = VectorType(i32, [lanes])
    steps = b.emit(llvm.UndefOp(vector))
    for lane in range(lanes):
        steps = b.emit(llvm.InsertElementOp(steps, b.integer(lane), b.integer(lane)))
    start = b.emit(llvm.TruncOp(b.index(first), i32)) if not isinstance(first, int) else b.integer(first)
    return b.emit(llvm.AddOp(b.splat(start, vector), steps))


def same_padded_planes(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view, block: int,
                       arithmetic: type[ColumnArithmetic]) -> None:
    """A convolution of stride 1 whose padding keeps the planes' size (`vector-planes`), each
    channel's plane seen as one row: a tile is `vectors` x `lanes` adjacent pixels of the
    plane, running across its rows, and a tap one offset into the input plane. The lanes
    whose tap falls in the padding, or would wrap into the row above or below, are masked at
    run time (from each lane's row and column, computed once a tile), and so are the lanes
    past the plane's end when stored. A 14x14 plane on 16 lanes: 13 vectors, not 14."""
    columns = arithmetic(b, domain, op)
    lanes = columns.lanes
    dest, src, packed, bias = view(op.dest), view(op.input), view(op.filter), view(op.bias)
    residual = view(op.residual) if getattr(op, "residual", None) is not None else None
    n_size, out_c, height, width = dest.shape
    pixels = height * width
    _, group_c, k_h, k_w = op.filter_shape.get_values()
    top, left, _, _ = op.pads.get_values()
    dy, dx = op.dilations.get_values()
    group = op.group.value.data
    vectors = min(tile_vectors(block, columns.accumulators), -(-pixels // lanes))
    span = vectors * lanes
    index_vector = VectorType(i32, [lanes])

    def flat(whole: View) -> View:
        n, channels = whole.shape[:2]
        return whole.reshaped((n, channels, 1, pixels), (channels * pixels, pixels, pixels, 1))

    def below(values: SSAValue, size: int) -> SSAValue:
        flag = llvm.ICmpPredicateFlag("ult").to_int()
        return b.emit(llvm.ICmpOp(values, b.constant(size, index_vector), IntegerAttr(flag, i64)))

    def shifted(values: SSAValue, by: int) -> SSAValue:
        return values if by == 0 else b.emit(llvm.AddOp(values, b.constant(by, index_vector)))

    dest, src = flat(dest), flat(src)
    residual = flat(residual) if residual is not None else None
    with b.loops([n_size, out_c // block, -(-pixels // span)]) as (n, o_block, t):
        channels = [b.add(b.mul(o_block, block), j) for j in range(block)]
        first_channel = b.mul(b.div(channels[0], out_c // group), group_c) if group > 1 else 0
        p0 = b.mul(t, span)
        positions = [lane_positions(b, b.add(p0, v * lanes), lanes) for v in range(vectors)]
        lane_rows = [b.emit(llvm.UDivOp(p, b.constant(width, index_vector))) for p in positions]
        lane_columns = [b.emit(llvm.URemOp(p, b.constant(width, index_vector))) for p in positions]
        stored = [below(p, pixels) for p in positions]
        inside_columns = {(kx, v): below(shifted(lane_columns[v], kx * dx - left), width)
                          for kx in range(k_w) for v in range(vectors)}

        starts = tile_starts(columns, bias, channels, vectors, residual and (
            lambda v, o: load_vector(b, residual, [n, o, 0, b.add(p0, v * lanes)], lanes, stored[v])))

        def kernel_row(sums: list[SSAValue], channel: Index, c: Index, ky: int) -> list[SSAValue]:
            row_shift = ky * dy - top
            inside_rows = [below(shifted(lane_rows[v], row_shift), height) for v in range(vectors)]
            for kx in range(k_w):
                offset = b.add(b.mul(row_shift, width), kx * dx - left)
                inputs = [(v, columns.input(src, [n, channel, 0, b.add(b.add(p0, v * lanes), offset)],
                                            b.emit(llvm.AndOp(inside_rows[v], inside_columns[kx, v])), 1))
                          for v in range(vectors)]
                accumulate_tap(columns, sums, packed, [o_block, c, ky, kx], inputs)
            return sums

        with b.loop(0, group_c, carried=starts) as c:  # kernel rows unrolled: their masks are hoisted
            sums = list(c.carried)
            for ky in range(k_h):
                sums = kernel_row(sums, b.add(first_channel, c.index), c.index, ky)
            c.next(*sums)
        store_tile(b, columns, channels, c.results, lambda v, j: (dest, [n, channels[j], 0, b.add(p0, v * lanes)]),
                   stored)


def emit_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view,
                     arithmetic: type[ColumnArithmetic]) -> None:
    """A convolution packed for the column kernel: the shared skeleton with
    `convolution_rows`; an unpooled, unpadded 1x1 convolution of stride 1 sees each
    channel's pixels as one row; `vector-planes`, each plane (`same_padded_planes`)."""
    rows = functools.partial(convolution_rows, arithmetic=arithmetic)
    block = view(op.filter).shape[4]
    if op.microkernel.data == PLANES:
        same_padded_planes(b, domain, op, view, block, arithmetic)
    elif channel_is_one_row(op.filter_shape.get_values(), op.strides.get_values(), op.pads.get_values(),
                          op.pool is not None):
        span = None  # Helium's: the whole plane in one pass
        if op.vector_tile is not None:
            lanes, accumulators = op.vector_tile.get_values()
            span = tile_vectors(block, accumulators) * lanes
        one_row_per_channel(b, domain, op, view, rows, block, span)
    else:
        loop_skeletons.emit_convolution(b, domain, op, view, rows, block,
                                        run_bytes(b) if op.vector_tile is not None else None)


CACHE_SHARE = 4
"""A run of pixels or band of rows reads at most this share of a core's cache
(`KernelBuilder.cache_bytes`, the target's L2): room is left for the block's filter and the
output rows."""


def run_bytes(b: KernelBuilder) -> int | None:
    """The input a pass over all output channels reads: a larger plane is computed in runs of
    pixels (a 1x1 seen as one row) or bands of rows whose input stays in the core's cache,
    every block of output channels per run (ResNet-50's 1x1s of 64 to 256 channels on 56x56
    planes read their 800 KB input once per block of 4 channels); None on a target whose
    cache is unknown (no runs)."""
    return b.cache_bytes // CACHE_SHARE or None


def one_row_per_channel(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view,
                        rows: loop_skeletons.ConvolutionRows, block: int, span: int | None,
                        last_block_overlaps: bool = False,
                        prepared_input: Callable[[Index, View, int], object] | None = None) -> None:
    """An unpooled 1x1 convolution of stride 1 with each channel's pixels seen as one row
    (`rows` called once per block of output channels, its tiles of `span` outputs running
    across the input rows; a residual seen the same way); with `span`, a plane whose input
    exceeds `run_bytes` in runs of whole tiles of pixels, each run for every block of
    channels (`loop_skeletons.block_channels`, with `last_block_overlaps`). With
    `prepared_input`, `prepared_input(n, run's input, width)` is called once a run, before
    its blocks of channels, and what it returns is the input `rows` take (a kernel's input
    converted once for all its blocks)."""
    def flat(buffer: SSAValue) -> View:
        whole = view(buffer)
        n_size, channels, height, width = whole.shape
        pixels = height * width
        return whole.reshaped((n_size, channels, 1, pixels), (channels * pixels, pixels, pixels, 1))

    def run_of(whole: View | None, start: Index, width: int) -> View | None:
        """Pixels [start, start + width) of each channel of a flat view."""
        if whole is None:
            return None
        base = b.offset_pointer(whole.base, b.add(whole.offset, start), whole.element_type)
        return View(base, (*whole.shape[:3], width), whole.strides, 0, whole.element_type)

    dest, src, packed, bias = flat(op.dest), flat(op.input), view(op.filter), view(op.bias)
    residual = flat(op.residual) if getattr(op, "residual", None) is not None else None
    n_size, out_c, _, pixels = dest.shape
    budget = run_bytes(b)
    run = pixels if span is None or budget is None else max(span, budget // (4 * src.shape[1]) // span * span)

    def pass_over(n: Index, o_block: Index, start: Index, width: int, inputs) -> None:
        into = run_of(dest, start, width)
        for channels in loop_skeletons.block_channels(b, o_block, block, out_c, last_block_overlaps):
            rows(b, domain, op, inputs, packed, bias, n, channels, 0,
                 [row(into, n, o, 0) for o in channels], width, None, run_of(residual, start, width))

    blocks = -(-out_c // block)

    def passes(outer: list[int], start: Callable[[list[Index]], Index], width: int) -> None:
        """For each index of the loops `outer` (n, then the run's if any), every block over
        the run of `width` pixels from `start(indices)`."""
        if prepared_input is None:
            with b.loops([*outer, blocks]) as (*indices, o_block):
                first = start(indices)
                pass_over(indices[0], o_block, first, width, run_of(src, first, width))
            return
        with b.loops(outer) as indices:
            first = start(indices)
            inputs = prepared_input(indices[0], run_of(src, first, width), width)
            with b.loops([blocks]) as (o_block,):
                pass_over(indices[0], o_block, first, width, inputs)

    if run >= pixels:
        passes([n_size], lambda indices: 0, pixels)
        return
    runs, rest = divmod(pixels, run)
    passes([n_size, runs], lambda indices: b.mul(indices[1], run), run)
    if rest:
        passes([n_size], lambda indices: runs * run, rest)
