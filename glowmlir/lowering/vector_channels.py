"""The float convolution on vectors of output channels (`microkernel = "vector-channels"`).

The column kernel (`vector_columns`) puts adjacent output columns in a vector's lanes, so a
row that is not a multiple of the lanes leaves lanes idle (14 columns on 16 lanes), and a
stride of 2 costs a shuffle per vector to pick the even input columns. This kernel puts
adjacent *output channels* in the lanes, as onnxruntime's NCHWc kernels do, while the
tensors stay NCHW:

* a tile is `pixels` adjacent output columns of a row times one vector of `lanes` output
  channels (the filter packed `[O / lanes, C, KH, KW, lanes]` by
  `column_layout.pack_filter`), each pixel's accumulator a vector register;
* per input channel and kernel row it loads the kernel row's weight vectors once, then
  broadcasts each input column the tile reads over the lanes, once, into every tap that
  reads it: a strided convolution only moves the addresses, and the registers live are
  the accumulators, the kernel row's weights and one broadcast column (taken tap by tap,
  LLVM keeps each broadcast column alive across the taps and spills accumulators);
* the accumulators leave the tile through the fused activation, each group of `lanes`
  pixels transposed in registers (`transpose`: shuffles) into one vector of pixels per
  channel, stored into the channel's output row (a fused residual comes in the same way
  backwards); paid once a tile over all its taps, so `column_layout.channel_tile` keeps
  the kernel to reductions of at least `SMALLEST_CHANNEL_REDUCTION` products.

Rows, bands, fused pools and their rings are `loop_skeletons.emit_convolution`'s; this
module is its `rows`.
"""

from __future__ import annotations

import functools

from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, i32
from xdsl.ir import SSAValue

from glowmlir.dialects import glowll
from glowmlir.lowering import loop_skeletons
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import ArithmeticDomain, Row, kernel_rows_inside
from glowmlir.lowering.vector_columns import (
    ColumnArithmetic,
    in_tiles,
    inputs_read,
    load_vector,
    one_row_per_channel,
    run_bytes,
    store_vector,
)
from glowmlir.lowering.vector_layout import channel_is_one_row, interior_columns


def transpose(b: KernelBuilder, rows: list[SSAValue]) -> list[SSAValue]:
    """The lanes x lanes transpose of up to `lanes` vectors (missing rows undefined): vector j
    holds lane j of each row. log2(lanes) rounds of two-vector shuffles, each swapping the
    off-diagonal blocks of pairs of rows `step` apart (64 shuffles for 16 x 16)."""
    vector = rows[0].type
    lanes = vector.get_shape()[0]
    rows = rows + [b.emit(llvm.UndefOp(vector))] * (lanes - len(rows))
    step = lanes // 2
    while step:
        low = DenseArrayBase.from_list(i32, [k if k & step == 0 else lanes + k - step for k in range(lanes)])
        high = DenseArrayBase.from_list(i32, [k + step if k & step == 0 else lanes + k for k in range(lanes)])
        swapped = list(rows)
        for i in (i for i in range(lanes) if not i & step):
            swapped[i] = b.emit(llvm.ShuffleVectorOp(rows[i], rows[i + step], low, vector))
            swapped[i + step] = b.emit(llvm.ShuffleVectorOp(rows[i], rows[i + step], high, vector))
        rows, step = swapped, step // 2
    return rows


def channel_rows(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, src: View, packed: View,
                 bias: View, n: Index, channels: list[Index], y: Index, outputs: list[Row], width: int,
                 accumulators: None = None, residual: View | None = None, *,
                 arithmetic: type[ColumnArithmetic]) -> None:
    """Convolution output row `y` of the block `channels` (whole vectors) into `outputs`
    (`loop_skeletons.convolution_rows`' contract): the row in tiles of pixels, a loop over
    the tiles whose taps all lie inside the input row, tiles of their own (the taps in the
    padding skipped at compile time) at the row's edges."""
    columns = arithmetic(b, domain, op)
    lanes, pixels = columns.lanes, columns.accumulators
    vectors = len(channels) // lanes
    _, _, in_h, in_w = src.shape
    _, _, k_h, k_w = op.filter_shape.get_values()
    _, pl, _, _ = op.pads.get_values()
    dy, dx = op.dilations.get_values()
    sx = op.strides.get_values()[1]
    o_block = b.div(channels[0], len(channels))
    top, ky_lo, ky_hi = kernel_rows_inside(b, op, y, in_h, k_h)
    storage = outputs[0].view.element_type

    def groups(x0: Index, count: int):
        """The tile's pixels in groups of at most `lanes`: (first column, pixels, lanes stored)."""
        for g in range(0, count, lanes):
            size = min(lanes, count - g)
            yield b.add(x0, g), size, None if size == lanes else [lane < size for lane in range(lanes)]

    def residual_vectors(x0: Index, count: int, v: int) -> list[SSAValue]:
        """The residual of vector v's channels at the tile's pixels, a vector a pixel: each
        channel's row loaded as vectors of pixels, transposed."""
        per_pixel = []
        for x, size, stored in groups(x0, count):
            rows = [load_vector(b, residual, [n, o, y, x], lanes, stored) for o in channels[v * lanes:(v + 1) * lanes]]
            per_pixel += transpose(b, rows)[:size]
        return per_pixel

    def tile(x0: Index, count: int, edge: bool = False) -> None:
        """`count` output columns from x0 of every channel of the block; `edge`: x0 is known
        at compile time and the input columns outside the row are skipped."""
        biases = [load_vector(b, bias, [channels[v * lanes]], lanes) for v in range(vectors)]
        residuals = [residual_vectors(x0, count, v) for v in range(vectors)] if residual is not None else None
        starts = []  # pixel-major
        for p in range(count):
            for v in range(vectors):
                starts.append(biases[v] if residuals is None else columns.add(biases[v], residuals[v][p]))
        left = b.sub(b.mul(x0, sx), pl)  # the input column of the first pixel's first tap
        with b.loop(ky_lo, ky_hi, carried=starts) as ky:
            in_y = b.add(top, b.mul(ky.index, dy))
            with b.loop(0, src.shape[1], carried=ky.carried) as c:
                sums = list(c.carried)
                weights = [[load_vector(b, packed, [o_block, c.index, ky.index, kx, v * lanes], lanes)
                            for v in range(vectors)] for kx in range(k_w)]
                for offset, taps in inputs_read(count, k_w, sx, dx):
                    column = b.add(left, offset)
                    if edge and not 0 <= column < in_w:
                        continue
                    pixel = b.splat(domain.input(src, [n, c.index, in_y, column]), columns.vector)
                    for p, kx in taps:
                        for v in range(vectors):
                            at = p * vectors + v
                            sums[at] = columns.multiply_accumulate(sums[at], pixel, weights[kx][v])
                c.next(*sums)
            ky.next(*c.results)
        # Each group of pixels' vectors of channels transposed into each channel's vector of pixels.
        for v in range(vectors):
            totals = [columns.output(channels[v * lanes], ky.results[p * vectors + v], storage) for p in range(count)]
            for g, (x, size, stored) in enumerate(groups(x0, count)):
                for j, pixels_of_channel in enumerate(transpose(b, totals[g * lanes:g * lanes + size])):
                    into = outputs[v * lanes + j]
                    store_vector(b, pixels_of_channel, into.view, into.at(x), stored)

    in_tiles(b, width, pixels, *interior_columns(in_w, width, k_w, dx, pl, sx), tile)


def emit_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view,
                     arithmetic: type[ColumnArithmetic]) -> None:
    """A convolution packed for the channel kernel: the shared skeleton with `channel_rows`,
    a vector of channels at a time, its rows in bands (`vector_columns.run_bytes`)."""
    rows = functools.partial(channel_rows, arithmetic=arithmetic)
    block, pixels = view(op.filter).shape[4], op.vector_tile.get_values()[1]
    if channel_is_one_row(op.filter_shape.get_values(), op.strides.get_values(), op.pads.get_values(),
                          op.pool is not None):
        one_row_per_channel(b, domain, op, view, rows, block, pixels)
    else:
        loop_skeletons.emit_convolution(b, domain, op, view, rows, block, run_bytes(b))
