"""The float depthwise convolution on tiles of rows (`microkernel = "vector-depthwise"`).

On the column kernel (`vector_columns`) a depthwise convolution has a block of one channel:
each tap loads the tile's input vectors and does one FMA per load. Here a tile is `rows`
output rows times `vectors` vectors of `lanes` output columns of one channel, every
accumulator a vector register, and the channel's k_h x k_w weights are broadcast once a
channel. Each input row the tile reads is loaded once per kernel column (as `vectors`
vectors; of stride 2, two loads and a shuffle: `vector_columns.load_vector`) and multiplied
into every row of the tile whose window covers it: (rows - 1 + k_h) loads for rows x k_h
FMAs a kernel column (a 3x3 on 4 rows: 6 loads for 12 FMAs). Sums are taken in the
generic kernel's order (bias, then kernel rows, then kernel columns).

Edges as on the column kernel: each row cut into vectors from column 0, the vectors whose
taps all lie inside the input row in tiles in a loop, the others in tiles with lanes masked
at compile time; the rows alike, those whose input rows all lie inside in groups in a loop,
the first and last groups known at compile time, where the input rows outside the input are
skipped. The fused relu/clip is applied to the accumulators (`ColumnArithmetic.output`);
where the arithmetic takes wider vectors there (`widest_output`: the int8 requantization) and
a row is one whole vector, the rows of a tile are joined into vectors of that width for it
(rows of 4 int8 outputs: one requantization of 16 lanes, not four of 4); else, in a tile of
whole vectors, as many whole rows as that width takes (AVX2's int8 tiles: four rows of one
vector of 8 levels, or two of two, one sequence of packs for 32 levels, then a store of each
row's part); else a row's adjacent whole vectors (two of 8 int8 outputs: one pack and one
store of 16 levels).
Unpooled convolutions without a residual only (`column_layout.depthwise_tile`).
"""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, VectorType, i32
from xdsl.ir import SSAValue

from glowmlir.dialects import glowll
from glowmlir.lowering.kernel_builder import Index, KernelBuilder
from glowmlir.lowering.loop_skeletons import ArithmeticDomain
from glowmlir.lowering.vector_columns import (
    ColumnArithmetic,
    in_tiles,
    inputs_read,
    join,
    joined_runs,
    row_vectors,
    store_vector,
    tap_columns,
)
from glowmlir.lowering.vector_layout import interior_columns


def emit_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view,
                     arithmetic: type[ColumnArithmetic]) -> None:
    """A depthwise convolution (filter packed [C, 1, KH, KW, 1], `vector_tile` = lanes,
    accumulators, rows): per image and channel, the weights broadcast, then the output plane
    in tiles of rows x vectors."""
    columns = arithmetic(b, domain, op)
    lanes = columns.lanes
    rows = op.vector_tile.get_values()[2]
    vectors = columns.accumulators // rows
    dest, src, packed, bias = view(op.dest), view(op.input), view(op.filter), view(op.bias)
    n_size, channels, height, width = dest.shape
    _, _, in_h, in_w = src.shape
    _, _, k_h, k_w = op.filter_shape.get_values()
    pt, pl, _, _ = op.pads.get_values()
    dy, dx = op.dilations.get_values()
    sy, sx = op.strides.get_values()
    storage = dest.element_type

    with b.loops([n_size, channels]) as (n, c):
        taps = [list(range(kx, min(kx + columns.taps_per_product, k_w)))
                for kx in range(0, k_w, columns.taps_per_product)]  # kernel columns one product takes
        weights = [[columns.taps_weight(packed, [[c, 0, ky, kx, 0] for kx in group]) for group in taps]
                   for ky in range(k_h)]
        row_starts = columns.row_starts(columns.start(bias, c), packed, c)

        def tile(y0: Index, count_y: int, x0: Index, count_v: int, row_edge: bool, column_edge: bool) -> None:
            """Output rows [y0, y0 + count_y) x vectors [x0, x0 + count_v * lanes); a
            compile-time y0 (`row_edge`) skips the input rows outside the input, a
            compile-time x0 (`column_edge`) masks the lanes past the row's end and the
            input columns outside it."""
            counts = [min(lanes, width - x0 - v * lanes) if column_edge else lanes for v in range(count_v)]
            top = b.sub(b.mul(y0, sy), pt)  # the input row of the first row's first kernel row
            rows_read = [(i, covered) for i, covered in inputs_read(count_y, k_h, sy, dy)
                         if not row_edge or 0 <= top + i < in_h]  # the tile's input rows inside the input
            starts = row_starts([[ky for _, covered in rows_read for r, ky in covered if r == row]
                                 for row in range(count_y)], not column_edge)
            sums: list[SSAValue] = [start for start in starts for _ in range(count_v)]  # row-major
            for i, covered in rows_read:
                for g, group in enumerate(taps):
                    for v in range(count_v):
                        read = tap_columns(b, x0, v, group, (sx, dx, pl, lanes, in_w), counts[v], column_edge)
                        if read is None:
                            continue
                        at_columns, loaded = read
                        pixels = columns.taps_input(src, [[n, c, b.add(top, i), column] for column in at_columns],
                                                    loaded, sx, group[0])
                        for r, ky in covered:
                            at = r * count_v + v
                            sums[at] = columns.multiply_accumulate(sums[at], pixels, weights[ky][g])
            joined = columns.widest_output // lanes if count_v == 1 and width == lanes == dest.strides[2] else 1
            while joined > 1 and count_y % joined:
                joined //= 2
            for r in range(0, count_y, joined) if joined > 1 else ():  # whole rows, one after the other
                store_vector(b, columns.output(c, join(b, sums[r:r + joined]), storage), dest,
                             [n, c, b.add(y0, r), 0])
            stored = [None if count == lanes else [lane < count for lane in range(lanes)] for count in counts]
            whole = joined <= 1 and all(lanes_stored is None for lanes_stored in stored)
            rows_per_step = columns.widest_output // (lanes * count_v) if whole else 0
            if rows_per_step >= 2:  # a tile of whole vectors: whole rows' through one output step
                r = 0
                while r < count_y:
                    rows_joined = min(rows_per_step, 1 << ((count_y - r).bit_length() - 1))  # a power of two
                    levels = columns.output(c, join(b, sums[r * count_v:(r + rows_joined) * count_v]), storage)
                    for k in range(rows_joined):
                        store_vector(b, part(b, levels, k, rows_joined), dest, [n, c, b.add(y0, r + k), x0])
                    r += rows_joined
                return
            for r in range(count_y) if joined <= 1 else ():
                for v, count in joined_runs(stored, columns.widest_output // lanes):  # a row's whole vectors joined
                    store_vector(b, columns.output(c, join(b, sums[r * count_v + v:r * count_v + v + count]), storage),
                                 dest, [n, c, b.add(y0, r), b.add(x0, v * lanes)], stored[v])

        clean_columns = interior_columns(in_w, width, columns.window_taps(k_w, dx, sx), dx, pl, sx)

        def row_group(y0: Index, count_y: int, row_edge: bool) -> None:
            row_vectors(b, width, lanes, vectors, clean_columns,
                        lambda x0, count_v, column_edge: tile(y0, count_y, x0, count_v, row_edge, column_edge))

        first_row, end_row = interior_columns(in_h, height, k_h, dy, pt, sy)
        in_tiles(b, height, rows, first_row, end_row, row_group)


def part(b: KernelBuilder, vector: SSAValue, k: int, parts: int) -> SSAValue:
    """Part `k` (0: the first lanes) of a vector cut into `parts` (1: the vector)."""
    if parts == 1:
        return vector
    lanes = vector.type.get_shape()[0] // parts
    order = DenseArrayBase.from_list(i32, [k * lanes + lane for lane in range(lanes)])
    return b.emit(llvm.ShuffleVectorOp(vector, vector, order, VectorType(vector.type.element_type, [lanes])))
