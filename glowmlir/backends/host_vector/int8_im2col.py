"""The int8 convolution of few taps (a stem: 3 input channels x 3x3) on a host's vector
unit, as a 1x1 over an output row's im2col pairs (`microkernel = "vector-im2col-int8"`).

The column kernel (`vector-columns-int8`) pairs two kernel columns of one input channel and
kernel row a `vpmaddwd`: a 3x3 on 3 channels is 9 full pairs and 9 lone taps (their high
half 0), 18 products per 8 outputs of a channel, each of its 4-channel tiles widening its
own input vectors. Here the C x KH x KW taps are taken two at a time in `im2col_taps`' order
(kernel columns kx and kx + 1 of one channel and row, then the lone last columns two by
two: 27 taps, 14 pairs), and an output row's pairs are made once for all the output channels:
word (p, x) of a stack array [pairs, whole vectors of the row] holds the inputs of pair p's
two taps at output column x as int16 halves, as they are where the selection pass folded the
input zero point into the bias (`folded_input_offset`: the padding the zero point), else less
it (the padding 0).
Of stride 2 and undilated, kernel columns kx and kx + 1 of a lane are two adjacent input
bytes, so such a pair's vector is the 2 x lanes bytes from the first tap's column, as they
lie (one load and one sign extension). The row is then `int8_pointwise.pointwise_rows`' 1x1
over these pairs (the filter packed as `int8_pointwise.pair_words` of its taps in that
order): per 8 outputs of a channel 14 `vpmaddwd`s, each word's vector loaded once for all
the channels of a tile. Sums are the generic kernel's modulo 2^32; the output step
`HostInt8Columns`'. With a float input whose quantize was folded in (`glowll.QUANTIZED_INPUT`,
`fold_input_quantize`), the taps read a ring of the input's last kernel rows of levels on the
stack (`QuantizedRows`), each input row quantized once as the quantize kernel quantizes it.

On NEON's int8 products (`{products = "neon-bytes"}`, rows of at least 8 outputs whose filter
`int8_byte_products.byte_products_fit` keeps exact) a row's taps are bytes, not int16 words
(`RowBytes`): pair p's two taps' levels as they are, interleaved a pixel (of stride 2, the 16
bytes from the first tap's column as they lie), and each pixel's column sum times -z_w; the
row is then `int8_pointwise.byte_pointwise_rows`' 1x1 of as many input channels as taps, its
filter `byte_pair_words` of [O, taps] (PP-OCR-cls-style's stem 3 -> 8 3x3 s2 on 48 x 192 under
qemu-aarch64: 270,141 -> 212,712 instructions, float 271,684; docs/quantization.md, stop 66).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import VectorType, i8, i16, i32
from xdsl.ir import SSAValue

from glowmlir.backends.host_vector.int8_byte_products import BytePairColumns, PreparedBytes
from glowmlir.backends.host_vector.int8_depthwise import NEON_BYTES, PairColumns, interleaved, products_of
from glowmlir.backends.host_vector.int8_pointwise import (
    WidenedPairs,
    broadcast_words,
    byte_pointwise_rows,
    pointwise_rows,
)
from glowmlir.backends.host_vector.table_lookup import neon_tables_in_registers
from glowmlir.dialects import glowll
from glowmlir.dialects.quant import UniformQuantizedType
from glowmlir.lowering import loop_skeletons, vector_columns
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import ArithmeticDomain, row
from glowmlir.lowering.vector_layout import tile_vectors

IM2COL_TAPS = 32
"""The most taps (input channels x kernel rows x kernel columns) of a layer taken as a 1x1
over its im2col pairs: a row's pairs stay on the stack (16 x 4 bytes an output column)."""


def im2col_taps(filter_shape) -> list[tuple[int, int, int]]:
    """The taps (c, ky, kx) of an OIHW `filter_shape` in the order they are paired: of each
    channel and kernel row, kernel columns (0, 1), (2, 3), ...; then the lone last columns
    of odd-width kernels, two by two."""
    _, in_c, k_h, k_w = filter_shape
    paired, lone = [], []
    for c in range(in_c):
        for ky in range(k_h):
            paired += [(c, ky, kx) for kx in range(k_w - k_w % 2)]
            if k_w % 2:
                lone.append((c, ky, k_w - 1))
    return paired + lone


def im2col_filter(centred: np.ndarray) -> np.ndarray:
    """An OIHW filter's centred levels as [O, taps] in `im2col_taps`' order."""
    return np.stack([centred[:, c, ky, kx] for c, ky, kx in im2col_taps(centred.shape)], axis=1)


def takes_im2col(filter_shape, group: int) -> bool:
    return group == 1 and int(np.prod(filter_shape[1:])) <= IM2COL_TAPS


class RowPairs:
    """The im2col pairs of output rows into a stack array (`WidenedPairs`' words)."""

    def __init__(self, b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, src: View,
                 out_w: int, lanes: int, ring: QuantizedRows | None = None):
        self.b, self.domain, self.op, self.src, self.lanes, self.ring = b, domain, op, src, lanes, ring
        self.columns = PairColumns(b, domain, op)
        self.filter_shape = op.filter_shape.get_values()
        self.taps = im2col_taps(self.filter_shape)
        self.strides, self.dilations = op.strides.get_values(), op.dilations.get_values()
        self.pads = op.pads.get_values()
        self.out_w = out_w
        self.allocate(-(-len(self.taps) // 2), -(-out_w // lanes) * lanes)

    def allocate(self, pairs: int, padded: int) -> None:
        """The stack array of a row's pairs (`row`)."""
        self.row = WidenedPairs(View.contiguous(self.b.alloca(pairs * padded, i32, alignment=32), (pairs, padded),
                                                  element_type=i32))

    def clean_rows(self, out_h: int) -> range:
        """The output rows all of whose kernel rows lie in the input."""
        (s_y, _), (d_y, _), top, in_h = self.strides, self.dilations, self.pads[0], self.src.shape[2]
        clean = [y for y in range(out_h)
                 if y * s_y - top >= 0 and y * s_y - top + (self.filter_shape[2] - 1) * d_y < in_h]
        return range(clean[0], clean[-1] + 1) if clean else range(0)

    def clean_vectors(self) -> range:
        """The vectors of output columns whose every tap's loads lie in the row."""
        (_, s_x), (_, d_x), left, in_w = self.strides, self.dilations, self.pads[1], self.src.shape[3]
        last = (self.filter_shape[3] - 1) * d_x
        clean = [v for v in range(self.out_w // self.lanes)
                 if v * self.lanes * s_x - left >= 0 and v * self.lanes * s_x - left + last + self.lanes * s_x <= in_w]
        return range(clean[0], clean[-1] + 1) if clean else range(0)

    def fill(self, n: Index, y: Index) -> WidenedPairs | PreparedBytes:
        """Output row `y`'s pairs: the clean vectors in a loop, the others (compile-time lanes) one by one."""
        vectors = self.clean_vectors()
        with self.b.loop(vectors.start, vectors.stop) as v:
            self.vector(n, y, self.b.mul(v.index, self.lanes), None)
        for v in [v for v in range(-(-self.out_w // self.lanes)) if v not in vectors]:
            self.vector(n, y, v * self.lanes, v)
        return self.row

    def vector(self, n: Index, y: Index, x0: Index, edge: int | None) -> None:
        """The pairs of output columns [x0, x0 + lanes) of row `y` (`edge`: the vector's index,
        whose loads are masked where they leave the row)."""
        b = self.b
        for p in range(0, len(self.taps), 2):
            pairs = self.columns.centred_pairs(self.pair_levels(n, y, x0, edge, p, self.columns.zero_levels()))
            vector_columns.store_vector(b, b.bitcast(pairs, self.columns.vector), self.row.words, [p // 2, x0])

    def pair_levels(self, n: Index, y: Index, x0: Index, edge: int | None, p: int, lone: SSAValue) -> SSAValue:
        """Taps p and p + 1's input levels at output columns [x0, x0 + lanes), interleaved a
        lane (a last lone tap's partner `lone`)."""
        first, *second = self.taps[p:p + 2]
        if second and self.adjacent(first, second[0]):
            return self.levels(n, y, x0, edge, first, 2)
        return interleaved(self.b, self.levels(n, y, x0, edge, first),
                           self.levels(n, y, x0, edge, second[0]) if second else lone)

    def adjacent(self, first: tuple[int, int, int], second: tuple[int, int, int]) -> bool:
        """Both taps' inputs of a lane two adjacent bytes: stride 2, undilated, kx and kx + 1."""
        return (self.strides[1], self.dilations[1]) == (2, 1) and first[:2] == second[:2] and second[2] == first[2] + 1

    def levels(self, n: Index, y: Index, x0: Index, edge: int | None, tap: tuple[int, int, int],
               adjacent: int = 1) -> SSAValue:
        """The input levels of `tap` at output columns [x0, x0 + lanes) (with `adjacent` 2,
        of it and the next kernel column, interleaved: the 2 x lanes bytes as they lie); the
        zero point in the padding."""
        b, lanes = self.b, self.lanes
        (s_y, s_x), (d_y, d_x), (top, left) = self.strides, self.dilations, self.pads[:2]
        c, ky, kx = tap
        in_h, in_w = self.src.shape[2:]
        in_y = b.add(b.mul(y, s_y), ky * d_y - top)
        count = lanes * adjacent
        if isinstance(in_y, int) and not 0 <= in_y < in_h:
            return self.columns.zero_levels(count)
        column = b.add(b.mul(x0, s_x), kx * d_x - left)
        rows, at = (self.src, [n, c, in_y]) if self.ring is None else (self.ring.rows, [0, c, self.ring.slot(in_y)])
        if edge is None:
            return vector_columns.load_vector(b, rows, [*at, column], count, stride=1 if adjacent == 2 else s_x)
        assert isinstance(column, int)
        if adjacent == 2:
            loaded = [0 <= column + k < in_w and edge * lanes + k // 2 < self.out_w for k in range(count)]
            step = 1
        else:
            loaded = [0 <= column + k * s_x < in_w and edge * lanes + k < self.out_w for k in range(count)]
            step = s_x
        if not any(loaded):
            return self.columns.zero_levels(count)
        # a strided vector's wide load reads step - 1 bytes past its last lane's: at the row's
        # end (the input's end, in its last row) it starts that much earlier instead
        overruns = column + count * step > in_w
        if not all(loaded) or (overruns and column < step - 1):
            return vector_columns.load_vector(b, rows, [*at, column], count, loaded, self.domain.input_offset, step)
        lead = step - 1 if overruns else 0
        return vector_columns.load_vector(b, rows, [*at, column], count, stride=step, lead=lead)


class RowBytes(RowPairs):
    """The im2col bytes of output rows for NEON's int8 products (`{products = "neon-bytes"}`):
    into a stack array [pairs, 2 x whole vectors of the row] of int8 (`PreparedBytes`), pair
    p's two taps' levels as they are interleaved a pixel (the padding the input zero point, a
    last lone tap's partner 0), and where the weights have a zero point z_w each pixel's
    column sum of its taps' levels times -z_w beside them, as `int8_byte_products.prepared_bytes`
    makes a 1x1's run: `int8_pointwise.byte_pointwise_rows` then takes the row as a 1x1 of as
    many input channels as taps."""

    def allocate(self, pairs: int, padded: int) -> None:
        self.columns = BytePairColumns(self.b, self.domain, self.op)
        self.row = PreparedBytes.on_stack(self.b, pairs, padded, self.columns.weight_offset != 0)

    def vector(self, n: Index, y: Index, x0: Index, edge: int | None) -> None:
        b = self.b
        sums = b.int_value(0, VectorType(i16, [self.lanes]))
        for p in range(0, len(self.taps), 2):
            pixels = self.pair_levels(n, y, x0, edge, p, b.int_value(0, VectorType(i8, [self.lanes])))
            sums = self.row.store_pair(b, self.columns, p // 2, x0, pixels, sums)
        self.row.store_less(b, self.columns, x0, sums)


class QuantizedRows:
    """The int8 levels of the last kernel-height input rows on the stack, for a convolution
    whose float input's quantize is folded into it (`glowll.QUANTIZED_INPUT`,
    `fold_input_quantize`): input row r in slot r mod KH of a [1, C, KH, W] ring, each row
    quantized once (`quantize.quantize_run`, the quantize kernel's arithmetic), when the
    first output row that reads it comes (output rows in order; undilated rows)."""

    def __init__(self, b: KernelBuilder, op: glowll.ConvolutionOp, src: View, levels: UniformQuantizedType):
        from glowmlir.backends.host_vector.quantize import kernel_division

        self.b, self.src, self.levels = b, src, levels
        self.division = kernel_division(op, levels)
        self.kernel_rows, self.stride, self.top = op.filter_shape.get_values()[2], op.strides.get_values()[0], \
            op.pads.get_values()[0]
        _, channels, _, width = src.shape
        self.rows = View.contiguous(b.alloca(channels * self.kernel_rows * width, i8, alignment=32),
                                    (1, channels, self.kernel_rows, width), element_type=i8)

    def slot(self, in_y: Index) -> Index:
        return self.b.remainder(in_y, self.kernel_rows)

    def new_rows(self, y: Index | None = None) -> range:
        """The kernel rows of output row `y` the one before it did not read (of row 0: all)."""
        return range(self.kernel_rows) if y == 0 else range(max(0, self.kernel_rows - self.stride), self.kernel_rows)

    def quantize(self, n: Index, y: Index, kernel_rows: range) -> None:
        """Quantizes `kernel_rows` of output row `y` (those in the input) into their slots: a
        loop over those input rows and one over the channels (the code of one row's levels once)."""
        from glowmlir.backends.host_vector.quantize import quantize_run

        b, (_, channels, in_h, width) = self.b, self.src.shape
        first, stop = (b.add(b.mul(y, self.stride), ky - self.top) for ky in (kernel_rows.start, kernel_rows.stop))
        if isinstance(first, int):
            first, stop = max(first, 0), min(stop, in_h)
            if first >= stop:
                return
        with b.loop(first, stop) as in_y, b.loop(0, channels) as c:
            quantize_run(b, self.rows, [0, c.index, self.slot(in_y.index)], self.src, [n, c.index, in_y.index], width,
                         self.levels, self.division)


def emit_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view) -> None:
    """Each output row: its im2col pairs (`RowPairs`), then every block of output channels
    over them as `pointwise_rows`' 1x1; the rows reading the padding one by one, in order
    with the others. A layer of one block of tiles of one vector (the stem: 8 channels) has
    its words broadcast once (`broadcast_words`), not once a row. Of a float input (a quantize
    folded in), each output row first quantizes the input rows it is the first to read
    (`QuantizedRows`)."""
    neon_tables_in_registers(b, domain, op)
    dest, src, packed, bias = view(op.dest), view(op.input), view(op.filter), view(op.bias)
    n_size, out_c, out_h, out_w = dest.shape
    block, (lanes, accumulators) = packed.shape[4], op.vector_tile.get_values()[:2]
    levels = op.microkernel.parameter(glowll.QUANTIZED_INPUT)
    ring = QuantizedRows(b, op, src, levels) if levels is not None else None
    on_bytes = products_of(op) == NEON_BYTES
    pairs = (RowBytes if on_bytes else RowPairs)(b, domain, op, src, out_w, lanes, ring)
    taps = len(pairs.taps)
    broadcast = broadcast_words(b, pairs.columns, packed, 0, block) \
        if out_c == block and tile_vectors(block, accumulators) == 1 and not on_bytes else None

    def output_row(n: Index, y: Index, kernel_rows: range | None = None) -> None:
        if ring is not None:
            ring.quantize(n, y, ring.new_rows(y) if kernel_rows is None else kernel_rows)
        words = pairs.fill(n, y)
        with b.loop(0, -(-out_c // block)) as o_block:
            for channels in loop_skeletons.block_channels(b, o_block.index, block, out_c):
                outputs = [row(dest, n, o, y) for o in channels]
                if on_bytes:
                    byte_pointwise_rows(b, domain, op, words, packed, bias, n, channels, y, outputs, out_w,
                                        in_channels=taps)
                else:
                    pointwise_rows(b, domain, op, words, packed, bias, n, channels, y, outputs, out_w,
                                   in_channels=taps, broadcast=broadcast)

    clean = pairs.clean_rows(out_h)
    with b.loop(0, n_size) as n:
        for y in range(clean.start if clean else out_h):
            output_row(n.index, y)
        if clean and ring is not None and clean.start == 0:  # the rows the loop's first row does not quantize
            ring.quantize(n.index, 0, range(ring.new_rows().start))
        with b.loop(clean.start, clean.stop) as y:
            output_row(n.index, y.index)
        for y in range(clean.stop if clean else out_h, out_h):
            output_row(n.index, y)
