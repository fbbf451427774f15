"""One loop skeleton per kernel family, shared by the float and the int8 kernels.

A kernel is two things. Its *loop skeleton* says which elements are visited in which order:
the innermost loop runs along a contiguous row of the destination (output width for
convolution and pooling, output features for FullyConnected) so that LLVM's vectorizer turns
it into SIMD code, kernel columns are unrolled so that each one's valid range of output
columns is a constant, taps in the padding are never visited. Its *arithmetic domain* says
what is computed at each step: what type accumulates and where, how an element is loaded,
multiplied and accumulated, where the bias enters, and how an accumulator becomes the stored
element. The skeletons are written once, here; the domains are

* `kernels.FloatArithmetic`: f32 storage and accumulation in place in the destination rows,
  fused relu/clip on the way out;
* `quantized_kernels.QuantizedArithmetic`: int8 storage, int32 accumulators on the stack,
  zero points subtracted on load, bias in accumulator units, requantization (per tensor or
  per output channel), clamping and narrowing on the way out.

Families:

* `emit_convolution`: blocks of output channels computed row by row (independent
  accumulator chains), with the fused activation, residual, or pooling window;
* `emit_pool`: max/average windows folded row by row, with `count_include_pad` and the
  window sizes at the borders (`window_size`);
* `emit_fully_connected`: one dot product per output along a contiguous weight row;
* `emit_strided_map`: dest[i] = compute(sources[i]) over strided views (elementwise
  arithmetic, copies, transposes, slices); each domain brings its table of `compute`s.

A skeleton calls the domain's steps in one fixed order, so each output is computed with
exactly the operations, in the order, its domain writes (float sums are never reassociated
by the skeleton, results stay bit-identical across targets).
"""

from __future__ import annotations

import abc
import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from xdsl.dialects import llvm
from xdsl.dialects.builtin import i32
from xdsl.ir import Attribute, SSAValue

from glowmlir.dialects import glow, glowll
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View

ViewOf = Callable[[SSAValue], View]
"""Maps a buffer SSA value of the instruction to a contiguous view of its memory."""

StoredElement = Callable[[SSAValue], SSAValue]
"""Turns an accumulator into the element stored in a destination."""

ConvolutionRows = Callable[..., None]
"""`convolution_rows`' signature: computes one output row of a block of output channels."""

CHANNEL_BLOCKS = (4, 5, 6, 3, 2, 1)
"""Output channels computed together by a convolution: independent accumulator chains."""

UNROLLED_WINDOW_ROWS = 2
"""A pooling window fused into a convolution with at most this many rows has its rows
unrolled (LeNet's 2x2 max pools run 7% faster so); a taller one loops over them (as fast or
faster: SqueezeNet's first convolution and 3x3 max pool 3.5 -> 2.7 ms, ResNet-50's and
Inception-v1's the same; and O3 has a third of the code to optimise). The x86 VNNI kernels
loop over any window's rows (`unrolled_window_rows=0`): one copy of their long convolution
row's code (LeNet on a VNNI host 25,669 -> 20,178 B of int8 code, 1.5% slower)."""


# ----------------------------------------------------------------------------- rows and windows


@dataclass(frozen=True)
class Row:
    """One contiguous row of a view: the elements `view[*prefix, x]`."""

    view: View
    prefix: tuple[Index, ...]

    def at(self, x: Index) -> list[Index]:
        return [*self.prefix, x]


def row(view: View, *prefix: Index) -> Row:
    return Row(view, prefix)


def fill_row(b: KernelBuilder, into: Row, width: int, value_at: Callable[[Index], SSAValue]) -> None:
    """into[x] = value_at(x) for x in [0, width)."""
    with b.loop(0, width) as x:
        b.store(value_at(x.index), into.view, into.at(x.index))


def load_word(b: KernelBuilder, view: View, indices: Sequence[Index], aligned: bool = False) -> SSAValue:
    """The i32 at the address of `view[indices]`, for a target that loads words from any address
    (Armv7E-M and Armv8-M Mainline do); `aligned` says it is a multiple of 4 (a packed weight
    pair), which lets LLVM load two words with one LDRD."""
    return b.emit(llvm.LoadOp(b.element(view, indices), i32, alignment=4 if aligned else 1))


def store_word(b: KernelBuilder, word: SSAValue, into: Row, x: Index) -> None:
    """The i32 `word` as the four bytes of `into` from column x (any address)."""
    address = b.emit(llvm.GEPOp(b.element(into.view, into.at(x)), [0], i32, inbounds=True))  # an i32 pointer
    b.emit(llvm.StoreOp(word, address, alignment=1))


def window_columns(b: KernelBuilder, kx: Index, in_width: int, out_width: int, stride: int, pad: int,
                   dilation: int) -> tuple[Index, Index, Index]:
    """For kernel column kx: the output columns [lo, hi) whose input column
    `x * stride + shift` falls inside the input, and that `shift`."""
    shift = b.sub(b.mul(kx, dilation), pad)
    lo = b.max(b.ceil_div(b.sub(0, shift), stride), 0)
    hi = b.min(b.max(b.ceil_div(b.sub(in_width, shift), stride), 0), out_width)
    return lo, hi, shift


def inside_rows(b: KernelBuilder, in_y: Index, in_h: int, padded: bool):
    """Guards code for input row `in_y`; without vertical padding every row is inside."""
    return b.when(b.in_range(in_y, in_h)) if padded else contextlib.nullcontext()


@dataclass(frozen=True)
class Window:
    """A pooling window: kernel, strides, pads (top, left, bottom, right), averaging rule."""

    kernel: tuple[int, int]
    strides: tuple[int, int]
    pads: tuple[int, int, int, int]
    is_max: bool
    count_include_pad: bool = False

    @staticmethod
    def of_pool(op: glowll.MaxPoolOp | glowll.AvgPoolOp) -> Window:
        return Window(op.kernel.get_values(), op.strides.get_values(), op.pads.get_values(),
                      isinstance(op, glowll.MaxPoolOp), getattr(op, "count_include_pad", None) is not None)

    @staticmethod
    def of_fused_pool(op: glowll.ConvolutionOp) -> Window | None:
        if op.pool is None:
            return None
        return Window(op.pool_kernel.get_values(), op.pool_strides.get_values(), op.pool_pads.get_values(),
                      op.pool.data == "max", op.pool_count_include_pad is not None)


def window_size(b: KernelBuilder, window: Window, y: Index, in_hw: tuple[int, int]) -> int | Callable[[Index], Index]:
    """How many input elements the averaging window of output row `y` divides by: an int
    when every window counts the same, else a function of the output column."""
    k_h, k_w = window.kernel
    sy, sx = window.strides
    pt, pl, pb, pr = window.pads
    if window.count_include_pad or not any((pt, pl, pb, pr)):
        return k_h * k_w
    in_h, in_w = in_hw
    top = b.sub(b.mul(y, sy), pt)
    rows = b.sub(b.min(b.add(top, k_h), in_h), b.max(top, 0))

    def size_at(x: Index) -> Index:
        left = b.sub(b.mul(x, sx), pl)
        return b.mul(rows, b.sub(b.min(b.add(left, k_w), in_w), b.max(left, 0)))

    return size_at


def pool_row(b: KernelBuilder, window: Window, into: Row, source: Row, in_w: int,
             combine: Callable[[SSAValue, SSAValue], SSAValue]) -> None:
    """Folds one input row into one pooled row, horizontally over the window:
    `into[x] = combine(into[x], source[x * stride + kx - pad])` for each kernel column kx.
    The columns whose whole window row lies in the input fold it in registers and update
    `into[x]` once; the others, at the edges, once per kernel column (the same order of
    combination either way)."""
    out_w = into.view.shape[-1]
    ranges = [window_columns(b, kx, in_w, out_w, window.strides[1], window.pads[1], 1)
              for kx in range(window.kernel[1])]
    first, end = max(lo for lo, _, _ in ranges), min(hi for _, hi, _ in ranges)
    end = max(first, end)

    def column(x: Index, shift: Index) -> SSAValue:
        return b.load(source.view, source.at(b.add(b.mul(x, window.strides[1]), shift)))

    with b.loop(first, end) as x:
        folded = b.load(into.view, into.at(x.index))
        for _, _, shift in ranges:
            folded = combine(folded, column(x.index, shift))
        b.store(folded, into.view, into.at(x.index))
    for lo, hi, shift in ranges:
        for start, stop in ((lo, b.min(hi, first)), (b.max(lo, end), hi)):
            with b.loop(start, stop) as x:
                element = column(x.index, shift)
                b.store(combine(b.load(into.view, into.at(x.index)), element), into.view, into.at(x.index))


# ----------------------------------------------------------------------------- the arithmetic domain


class ArithmeticDomain(abc.ABC):
    """The number-dependent steps of one instruction's kernel; the skeletons call them."""

    def __init__(self, b: KernelBuilder):
        self.b = b

    # Convolution and FullyConnected.

    bias_after_products: bool = False
    """A dot product (FullyConnected) starts from `zero()` and adds the bias after its
    products, instead of starting from the bias."""

    @abc.abstractmethod
    def accumulator_rows(self, count: int, width: int) -> View | None:
        """`count` stack rows a convolution accumulates in, or None to accumulate in place
        in its output rows."""

    @abc.abstractmethod
    def zero(self) -> SSAValue:
        """An empty sum."""

    @abc.abstractmethod
    def bias(self, bias: View, channel: Index) -> SSAValue:
        """The bias of an output channel, in accumulator units."""

    @abc.abstractmethod
    def input(self, view: View, indices: Sequence[Index]) -> SSAValue:
        """An input element, loaded and ready to multiply (widened, its zero point removed)."""

    @abc.abstractmethod
    def weight(self, view: View, indices: Sequence[Index]) -> SSAValue:
        """A weight, loaded and ready to multiply."""

    @abc.abstractmethod
    def add(self, total: SSAValue, value: SSAValue) -> SSAValue:
        """total + value."""

    @abc.abstractmethod
    def multiply_accumulate(self, total: SSAValue, x: SSAValue, w: SSAValue, reduction: bool = False) -> SSAValue:
        """total + x * w; `reduction`: the sum is one loop-carried chain (a dot product)."""

    @abc.abstractmethod
    def output(self, channel: Index, storage: Attribute) -> StoredElement | None:
        """How an accumulator of output `channel` becomes a stored element of type `storage`
        (activation, requantization, clamping, narrowing); None: stored as it is."""

    output_is_monotonic: bool = False
    """`output` never decreases: a fused max pool may take the maximum of the accumulators
    and apply `output` once per pooled element."""

    # Pooling (standalone or fused into a convolution).

    @abc.abstractmethod
    def convolution_rows_to_pool(self, count: int, width: int) -> View:
        """`count` stack rows holding the convolution rows a fused pooling window folds."""

    @abc.abstractmethod
    def pool_rows(self, count: int, width: int) -> View | None:
        """`count` stack rows a pooling window folds into, or None to fold in place in the
        destination rows."""

    @abc.abstractmethod
    def pool_start(self, window: Window) -> SSAValue:
        """What an output starts from: the identity of max, or an empty sum."""

    @abc.abstractmethod
    def pool_combine(self, window: Window) -> Callable[[SSAValue, SSAValue], SSAValue]:
        """`combine(pooled, element)`: max, or sum."""

    @abc.abstractmethod
    def finish_pool_row(self, window: Window, pooled: Row, dest: Row, y: Index, in_hw: tuple[int, int]) -> None:
        """Writes output row `y` from its folded row: maxima as they are, sums divided by the
        window sizes."""


class GlobalPool:
    """A fused global pool (`glow.pools_globally`) folded in as a convolution's outputs come,
    pixel by pixel: a stack sum (or maximum) of each output channel's levels (`fold`),
    started per image (`start`), averaged once at its end (`finish`)."""

    def __init__(self, b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, dest: View):
        self.b, self.domain, self.op, self.dest = b, domain, op, dest
        self.window = Window.of_fused_pool(op)
        self.channels = dest.shape[1]
        # read and written one i32 at a time: no vector alignment (no frame pointer on Arm)
        self.folded = View.contiguous(b.alloca(self.channels, i32, alignment=4), (self.channels, 1), element_type=i32)

    def start(self) -> None:
        fill_row(self.b, Row(self.folded.reshaped((self.channels,), (1,)), ()), self.channels,
                 lambda o: self.domain.pool_start(self.window))

    def fold(self, channel: Index, levels: list[SSAValue]) -> None:
        """Output levels of `channel` (at any pixels) into its running sum or maximum."""
        self.fold_channels(channel, [levels])

    def fold_channels(self, first: Index, levels: list[list[SSAValue]]) -> None:
        """Output levels of consecutive channels (`levels[j]` of channel `first` + j) into their
        running sums or maxima, every one read before any is written: LLVM then keeps a
        gathered product's block of sums apart from its stores (DS-CNN's last pointwise layer
        and global pool on the M7: 408,244 -> 405,964 instructions)."""
        b, combine = self.b, self.domain.pool_combine(self.window)
        channels = [b.add(first, j) for j in range(len(levels))]
        folded = [functools.reduce(combine, levels[j], b.load(self.folded, [o, 0])) for j, o in enumerate(channels)]
        for value, o in zip(folded, channels):
            b.store(value, self.folded, [o, 0])

    def finish(self, n: Index) -> None:
        """Image `n`'s pooled outputs into `dest[n, o, 0, ...]`."""
        in_hw = tuple(glow.convolution_shape(self.op)[2:])
        with self.b.loop(0, self.channels) as o:
            self.domain.finish_pool_row(self.window, Row(self.folded, (o.index,)),
                                        Row(self.dest, (n, o.index, 0)), 0, in_hw)


# ----------------------------------------------------------------------------- convolution


def kernel_rows_inside(b: KernelBuilder, op: glowll.ConvolutionOp, y: Index, in_h: int,
                       k_h: int) -> tuple[Index, Index, Index]:
    """(top, ky_lo, ky_hi): the input row of kernel row 0 for output row `y`, and the kernel
    rows [ky_lo, ky_hi) that lie inside the input."""
    sy, dy = op.strides.get_values()[0], op.dilations.get_values()[0]
    pt, _, pb, _ = op.pads.get_values()
    top = b.sub(b.mul(y, sy), pt)
    if not (pt or pb):
        return top, 0, k_h
    return top, b.max(b.ceil_div(b.sub(0, top), dy), 0), b.min(b.ceil_div(b.sub(in_h, top), dy), k_h)



def convolution_rows(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, src: View, filt: View,
                     bias: View, n: Index, channels: list[Index], y: Index, outputs: list[Row], width: int,
                     accumulators: View | None, residual: View | None = None) -> None:
    """Convolution output row `y` of each of `channels` into `outputs`: the accumulators
    start from the bias (+ the residual row), every tap is accumulated, then each
    accumulator row becomes its output row."""
    _, _, in_h, in_w = src.shape
    _, group_c, k_h, k_w = filt.shape
    sy, sx = op.strides.get_values()
    pt, pl, pb, _ = op.pads.get_values()
    dy, dx = op.dilations.get_values()
    out_per_group = filt.shape[0] // op.group.value.data
    sums = outputs if accumulators is None else [row(accumulators, j) for j in range(len(channels))]
    for o, total in zip(channels, sums):
        bias_o = domain.bias(bias, o)
        if residual is None:
            fill_row(b, total, width, lambda x: bias_o)
        else:
            fill_row(b, total, width, lambda x: domain.add(bias_o, b.load(residual, [n, o, y, x])))
    first_channel = b.mul(b.div(channels[0], out_per_group), group_c) if op.group.value.data > 1 else 0
    with b.loop(0, group_c) as c, b.loop(0, k_h) as ky:
        in_y = b.sub(b.add(b.mul(y, sy), b.mul(ky.index, dy)), pt)
        with inside_rows(b, in_y, in_h, pt or pb):
            channel = b.add(first_channel, c.index)
            # Unrolled over the kernel columns: each column's valid output range is a constant.
            for kx in range(k_w):
                lo, hi, shift = window_columns(b, kx, in_w, width, sx, pl, dx)
                weights = [domain.weight(filt, [o, c.index, ky.index, kx]) for o in channels]
                with b.loop(lo, hi) as x:
                    pixel = domain.input(src, [n, channel, in_y, b.add(b.mul(x.index, sx), shift)])
                    for total, weight in zip(sums, weights):
                        accumulated = domain.multiply_accumulate(b.load(total.view, total.at(x.index)), pixel, weight)
                        b.store(accumulated, total.view, total.at(x.index))
    for o, total, output in zip(channels, sums, outputs):
        stored = domain.output(o, output.view.element_type)
        if stored is None and accumulators is None:
            continue  # accumulated in place, stored as it is
        stored = stored or (lambda value: value)
        fill_row(b, output, width, lambda x: stored(b.load(total.view, total.at(x))))


def rows_per_band(op: glowll.ConvolutionOp, band_bytes: int | None, blocks: int) -> int:
    """Output rows a band computes for every one of the `blocks` of output channels before
    the next band: as many as read at most `band_bytes` of input rows (at least one); every
    row when `band_bytes` is None, the whole input fits, or the bands would read more than
    they save. A band's input stays in cache while each block of channels reads it, where
    one block after another over the whole plane would read it from memory once per block
    (VGG-19's 3x3 of 64 channels on 224 x 224 planes: 12.8 MB of input read 16 times). But
    each band reads every block's filter: a filter larger than `band_bytes` would come from
    memory once per band (VGG-19's 512 -> 512 on 28 x 28: 9.4 MB in 14 bands, against 1.6 MB
    of input for each of 32 blocks)."""
    n_size, _, in_h, _ = op.input.type.get_shape()
    out_h = op.dest.type.get_shape()[2]
    if band_bytes is None or glowll.byte_size(op.input.type) <= band_bytes:
        return out_h
    k_h = op.filter_shape.get_values()[2]
    stride, dilation = op.strides.get_values()[0], op.dilations.get_values()[0]
    pool = Window.of_fused_pool(op)
    row_bytes = glowll.byte_size(op.input.type) // (n_size * in_h)

    def input_rows(band: int) -> int:
        convolved = band if pool is None else (band - 1) * pool.strides[0] + pool.kernel[0]
        return (convolved - 1) * stride + (k_h - 1) * dilation + 1

    band = 1
    while band < out_h and input_rows(band + 1) * row_bytes <= band_bytes:
        band += 1
    filter_bytes = glowll.byte_size(op.filter.type)
    if filter_bytes > band_bytes and filter_bytes * -(-out_h // band) > glowll.byte_size(op.input.type) * blocks:
        return out_h
    return band


@contextlib.contextmanager
def banded_loops(b: KernelBuilder, n_size: int, blocks: int, count: int, band: int):
    """Loops over (n, block of output channels, step) for `count` steps (output rows, or
    tiles of a plane) in bands of `band` steps: per band, every block; yields (n, block,
    step, first step of the band)."""
    if band >= count:
        with b.loops([n_size, blocks, count]) as (n, o_block, step):
            yield n, o_block, step, 0
        return
    with b.loops([n_size, -(-count // band), blocks, band]) as (n, band_index, o_block, in_band):
        first = b.mul(band_index, band)
        step = b.add(first, in_band)
        with b.when(b.compare("slt", step, count)) if count % band else contextlib.nullcontext():
            yield n, o_block, step, first


@contextlib.contextmanager
def overlapping_tiles(b: KernelBuilder, width: Index, size: int) -> Iterator[tuple[Index, Index]]:
    """Tiles of `size` covering [0, width) (width >= size): a loop over the tiles t whose body,
    emitted inside the `with` block for (x0, t), starts at x0 = min(size * t, width - size), so
    the last tile ends at the row's end (the units it shares with the one before are done
    twice, the same numbers): one copy of the tile's code, not two."""
    last = b.sub(width, size)
    with b.loop(0, b.ceil_div(width, size)) as t:
        x0 = b.mul(t.index, size)
        yield (x0 if isinstance(width, int) and width % size == 0 else b.min(x0, last)), t.index


def block_channels(b: KernelBuilder, o_block: Index, block: int, out_c: int, last_block_overlaps: bool = False):
    """The output channels of block `o_block`, for code emitted once per kind of block: the
    `block` channels of a whole block; when `block` does not divide `out_c` (a kernel whose
    vectors of channels are padded), also the last block's fewer channels, each kind under
    a run-time test of `o_block`. With `last_block_overlaps` and more than `block` channels,
    one kind: the last block is the last `block` channels, those it shares with the block
    before computed twice (the same numbers)."""
    full, rest = divmod(out_c, block)
    if last_block_overlaps and full and rest:
        first = b.min(b.mul(o_block, block), out_c - block)
        yield [b.add(first, j) for j in range(block)]
        return
    if rest == 0 or full:
        with b.when(b.compare("slt", o_block, full)) if rest else contextlib.nullcontext():
            yield [b.add(b.mul(o_block, block), j) for j in range(block)]
    if rest:
        with b.when(b.compare("eq", o_block, full)) if full else contextlib.nullcontext():
            yield [full * block + j for j in range(rest)]


def emit_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view: ViewOf,
                     rows: ConvolutionRows | None = None, block: int | None = None,
                     band_bytes: int | None = None, unrolled_window_rows: int = UNROLLED_WINDOW_ROWS,
                     last_block_overlaps: bool = False) -> None:
    """Convolution, optionally followed by a fused pooling window.

    Per output row and block of output channels, each row computed by `rows` (default
    `convolution_rows`; `block` output channels at a time, default the first of
    `CHANNEL_BLOCKS` that divides the channels of a group); with `band_bytes`, the rows in
    bands whose input fits it (`rows_per_band`). Fused, each pooled output row is folded from
    the convolution rows under its window, computed one at a time into stack rows: the
    full-resolution convolution output is never stored; a window of at most
    `unrolled_window_rows` rows has its rows unrolled, a taller one loops over them; blocks of
    channels as `block_channels` with `last_block_overlaps`.
    """
    dest, src, filt, bias = view(op.dest), view(op.input), view(op.filter), view(op.bias)
    rows = rows or convolution_rows
    n_size, out_c, out_h, out_w = dest.shape
    block = block or next(size for size in CHANNEL_BLOCKS if (out_c // op.group.value.data) % size == 0)
    pool = Window.of_fused_pool(op)
    conv_h, conv_w = glow.convolution_shape(op)[2:]
    accumulators = domain.accumulator_rows(block, conv_w)
    blocks = -(-out_c // block)
    band = rows_per_band(op, band_bytes, blocks)
    if pool is None:
        residual = view(op.residual) if op.residual is not None else None
        with banded_loops(b, n_size, blocks, out_h, band) as (n, o_block, y, _):
            for channels in block_channels(b, o_block, block, out_c, last_block_overlaps):
                rows(b, domain, op, src, filt, bias, n, channels, y, [row(dest, n, o, y) for o in channels],
                     out_w, accumulators, residual)
        return
    # Windows that overlap (kernel > stride) share rows: the convolved rows live in a ring of
    # one slot per window row, and a pooled row computes only the rows the previous one did
    # not (a 3x3 pool of stride 2 convolves each row once, not 1.5 times).
    shared = pool.kernel[0] - pool.strides[0]
    ring = pool.kernel[0] if shared > 0 else 1
    convolved = domain.convolution_rows_to_pool(block * ring, conv_w)
    pooled_rows = domain.pool_rows(block, out_w)
    combine = domain.pool_combine(pool)
    output_after_pool = pool.is_max and domain.output_is_monotonic
    row_domain = _AccumulatorsOut(domain) if output_after_pool else domain

    def pooled_block(n: Index, channels: list[Index], y: Index, first_row: Index) -> None:
        """Pooled output row `y` of `channels`."""
        pooled = ([row(dest, n, o, y) for o in channels] if pooled_rows is None else
                  [row(pooled_rows, j) for j in range(len(channels))])
        start = domain.pool_start(pool)
        for into in pooled:
            fill_row(b, into, out_w, lambda x: start)

        def window_row(wy: Index) -> None:
            conv_y = b.sub(b.add(b.mul(y, pool.strides[0]), wy), pool.pads[0])
            slot = b.mul(b.remainder(b.add(b.mul(y, pool.strides[0]), wy), ring), block)
            slots = [row(convolved, b.add(slot, j)) for j in range(len(channels))]
            with inside_rows(b, conv_y, conv_h, pool.pads[0] or pool.pads[2]):
                fresh = None  # computed by the previous pooled row, unless it starts a band
                if shared > 0 and not (isinstance(wy, int) and wy >= shared):
                    fresh = b.compare("eq", y, first_row)
                    if not isinstance(wy, int):
                        fresh = b.emit(llvm.OrOp(fresh, b.compare("sge", wy, shared)))
                with b.when(fresh) if fresh is not None else contextlib.nullcontext():
                    rows(b, row_domain, op, src, filt, bias, n, channels, conv_y, slots, conv_w, accumulators)
                for into, convolved_row in zip(pooled, slots):
                    pool_row(b, pool, into, convolved_row, conv_w, combine)

        if pool.kernel[0] <= unrolled_window_rows:
            for wy in range(pool.kernel[0]):
                window_row(wy)
        else:  # a loop: unrolled, a global pool's window (13 rows) made one kernel take O3 2.5 s
            with b.loop(0, pool.kernel[0]) as wy:
                window_row(wy.index)
        for o, into in zip(channels, pooled):
            if output_after_pool:
                stored = domain.output(o, dest.element_type)
                fill_row(b, row(dest, n, o, y), out_w, lambda x: stored(b.load(into.view, into.at(x))))
            else:
                domain.finish_pool_row(pool, into, row(dest, n, o, y), y, (conv_h, conv_w))

    with banded_loops(b, n_size, blocks, out_h, band) as (n, o_block, y, first_row):
        for channels in block_channels(b, o_block, block, out_c, last_block_overlaps):
            pooled_block(n, channels, y, first_row)


class _AccumulatorsOut:
    """A domain whose convolution rows keep the accumulators as they are (the fused max pool
    applies `output` after taking the maxima)."""

    def __init__(self, domain: ArithmeticDomain):
        self._domain = domain

    def __getattr__(self, name: str):
        return getattr(self._domain, name)

    def output(self, channel: Index, storage: Attribute) -> None:
        return None


# ----------------------------------------------------------------------------- pools


def emit_pool(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.MaxPoolOp | glowll.AvgPoolOp,
              view: ViewOf) -> None:
    """Per output row: fold the input rows under the window (top to bottom), then finish."""
    dest, src = view(op.dest), view(op.input)
    window = Window.of_pool(op)
    n_size, channels, out_h, out_w = dest.shape
    in_h, in_w = src.shape[2:]
    pooled_rows = domain.pool_rows(1, out_w)
    combine = domain.pool_combine(window)
    with b.loops([n_size, channels, out_h]) as (n, c, y):
        pooled = row(dest, n, c, y) if pooled_rows is None else row(pooled_rows, 0)
        start = domain.pool_start(window)
        fill_row(b, pooled, out_w, lambda x: start)
        with b.loop(0, window.kernel[0]) as ky:
            in_y = b.sub(b.add(b.mul(y, window.strides[0]), ky.index), window.pads[0])
            with inside_rows(b, in_y, in_h, window.pads[0] or window.pads[2]):
                pool_row(b, window, pooled, row(src, n, c, in_y), in_w, combine)
        domain.finish_pool_row(window, pooled, row(dest, n, c, y), y, (in_h, in_w))


# ----------------------------------------------------------------------------- fully connected


FULLY_CONNECTED_BLOCK = 4
"""Outputs of a FullyConnected computed together (`emit_fully_connected`)."""


def emit_fully_connected(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.FullyConnectedOp,
                         view: ViewOf) -> None:
    """Each output is one dot product over a contiguous weight row ([N, K] layout), four
    outputs at a time where they divide the columns: each input element loaded once for
    four weight rows read side by side (a batch-1 FullyConnected streams its weights)."""
    dest, src, weights, bias = view(op.dest), view(op.input), view(op.weights), view(op.bias)
    rows, columns = dest.shape
    depth = src.shape[1]
    block = FULLY_CONNECTED_BLOCK if columns % FULLY_CONNECTED_BLOCK == 0 else 1
    with b.loops([rows, columns // block]) as (m, n_block):
        outputs = [b.add(b.mul(n_block, block), j) for j in range(block)]
        starts = [domain.zero() if domain.bias_after_products else domain.bias(bias, n) for n in outputs]
        with b.loop(0, depth, carried=starts) as k:
            x = domain.input(src, [m, k.index])
            k.next(*(domain.multiply_accumulate(total, x, domain.weight(weights, [n, k.index]), reduction=True)
                     for total, n in zip(k.carried, outputs)))
        for n, total in zip(outputs, k.results):
            if domain.bias_after_products:
                total = domain.add(total, domain.bias(bias, n))
            stored = domain.output(n, dest.element_type)
            b.store(stored(total) if stored is not None else total, dest, [m, n])


# ----------------------------------------------------------------------------- elementwise: strided maps


def broadcast_view(source: View, shape: Sequence[int]) -> View:
    """`source` seen with `shape` (numpy broadcasting: stride 0 on broadcast dimensions)."""
    return source.reshaped(shape, glow.broadcast_strides(source.shape, source.strides, shape))


def elementwise_views(op: glowll.ElementwiseOp, view: ViewOf) -> tuple[View, list[View]]:
    """The destination of an elementwise instruction and its sources broadcast to its shape."""
    dest = view(op.dest)
    return dest, [broadcast_view(view(v), dest.shape) for v in op.inputs]


def emit_strided_map(b: KernelBuilder, dest: View, sources: Sequence[View],
                     compute: Callable[[list[SSAValue]], SSAValue]) -> None:
    """dest[i] = compute(sources[i]) over dest's shape, for arbitrary strided views."""
    shape, views = merge_dimensions(dest, sources)
    with b.loops(shape) as indices:
        values = [b.load(v, indices) for v in views[1:]]
        b.store(compute(values), views[0], indices)


def merge_dimensions(dest: View, sources: Sequence[View]) -> tuple[list[int], list[View]]:
    """Collapses adjacent dimensions that are contiguous in every view into one loop."""
    views = [dest, *sources]
    shape, strides = glow.merged_loops(dest.shape, [v.strides for v in views])
    return shape, [v.reshaped(shape, s) for v, s in zip(views, strides)]

