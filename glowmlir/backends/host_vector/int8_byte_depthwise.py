"""The int8 depthwise convolution on NEON with int8 products (`vector-depthwise-int8`,
`{products = "neon-bytes", int16_taps = g}`): eight products an instruction, not four.

The depthwise tiles (`depthwise.emit_convolution`: rows x vectors of one channel's output
columns, each input row loaded once a kernel column and multiplied into every row of the
tile whose window covers it) on vectors of `BYTE_LANES` pixels (`ByteTaps`). A tap's input
vector is its 8 levels as they are, the lanes in the padding loaded as the input zero point
z_x; its weight the level less its zero point (an int8 filter, `takes_byte_depthwise`) in
every byte. `smull` multiplies the two into int16 lanes, `smlal` adds the next taps' products
into the same lanes, up to `g` adjacent kernel columns (the filter's `int16_taps`: every
channel's and kernel row's run of g columns keeps every int16 sum exact for any int8 input,
checked at compile time), and `saddw`, `saddw2` add the int16 lanes into the two int32
registers of the vector's sums. A 5x5 kernel row whose weights fit one run: 5 products
instructions and 2 widening adds a vector of 8 pixels, where the int16 pair products take 6
`smlal` for 4 pixels and their levels a widening less z_x.

Levels as they are: sum (x - z_x) w = sum x w - z_x sum w. The padding's lanes hold z_x,
so a kernel row the tile reads contributes z_x times its weights' sum, and the row's first
sums (`ByteTaps.row_starts`) are the bias less z_x times the sum of the weights of the kernel
rows it reads (the tiles skip those wholly outside the input): the generic kernel's sums.
A tile's product is a whole kernel row (`taps_per_product`), so none is skipped at the row's
ends (a window of a convolution whose pads are narrower than its kernel always reads some
input column). At a row's edge a tap's vector of stride 1 whose lanes run off the row is
read as the whole vector inside the row that ends (or starts) with its lanes, and one `ext`
with the zero points (`vector_columns.load_edge_vector`), not lane by lane: PaddleOCR's cls
model under qemu-aarch64 6,264,387 -> 6,165,003 instructions (docs/quantization.md, stop 66).

A per-tensor filter with a zero point (the default asymmetric schema) has levels less it in
[-255, 255]; its taps whose level leaves int8 in some channel are few (on PaddleOCR's cls
model 1 to 3 kernel positions a layer, each in one channel or two). Those kernel positions
are the layer's `wide_taps` (at most `MOST_WIDE_TAPS` of its taps): the filter is then stored
as int16, the other taps' weights narrowed to bytes as they are loaded, and a wide tap's
product is taken alone in the int16 lanes (`sxtl` of its 8 levels, `mul` by the int16
weight: |x w| <= 128 x 255 fits), widened into the sums as a run's.

Per-channel filters (each channel's largest weight +-127) allow runs of 2 columns: every
depthwise filter of PaddleOCR's cls model quantized so (per tensor 3 to 5). Even so, on the
PP-OCR-cls-style layers with per-channel filters (`bench/bench_host_int8_layers.py --board
aarch64 --per-channel`) the instructions fell 18-33% against the int16 pairs (5x5 of 200
channels on 2 x 96: 415,450 -> 307,243; float 200,233), the filter's bytes halved
(docs/quantization.md, stop 65).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import VectorType, i8, i16
from xdsl.ir import SSAValue

from glowmlir.backends.host_vector import depthwise as vector_depthwise
from glowmlir.backends.host_vector import int8_depthwise
from glowmlir.backends.host_vector.int8_byte_products import sums_fit_int16
from glowmlir.backends.host_vector.int8_depthwise import NEON_BYTES, HostInt8Columns, products_of
from glowmlir.backends.host_vector.table_lookup import neon_tables_in_registers
from glowmlir.dialects import glowll
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View, is_zero
from glowmlir.lowering.loop_skeletons import ArithmeticDomain
from glowmlir.lowering.vector_columns import load_edge_vector, load_vector
from glowmlir.lowering.vector_layout import INT8_PLANES

WIDE_TAPS = "wide_taps"
"""The microkernel parameter of a NEON byte depthwise layer whose filter leaves int8: its
kernel positions (ky KW + kx) whose weights some channel has outside int8, multiplied in int16
(`wide_taps`)."""
MOST_WIDE_TAPS = 0.25
"""The largest share of a kernel's positions that may be wide for the int8 products to be
taken (`takes_byte_depthwise`): each costs a widening and a product of its own a vector."""
INT16_TAPS = "int16_taps"
"""The microkernel parameter of a NEON byte depthwise layer: the adjacent kernel columns
whose products one int16 lane sums (`int16_taps`)."""
BYTE_LANES = 8
"""Pixels a vector: 8 bytes, `smull`'s 8 int16 lanes, two registers of int32 sums."""


def int16_taps(levels: np.ndarray) -> int:
    """The most adjacent kernel columns g whose products of any int8 levels by a depthwise
    filter's `levels` [C, KH, KW] (less their zero point) sum exactly in int16: every run of
    columns [k g, (k + 1) g) of every channel and kernel row, whose extremes over x in
    [-128, 127] `sums_fit_int16` bounds, its `wide_taps` left out (each taken alone). One
    product alone (|x w| <= 128 x 255) always fits."""
    levels = np.asarray(levels, np.int64)
    k_w = levels.shape[-1]
    narrow = np.where(wide_positions(levels), 0, levels)
    for taps in range(k_w, 1, -1):
        if all(sums_fit_int16(narrow[..., first:first + taps]) for first in range(0, k_w, taps)):
            return taps
    return 1


def wide_positions(levels: np.ndarray) -> np.ndarray:
    """[KH, KW]: the kernel positions where some channel's level of `levels` [C, KH, KW]
    leaves int8."""
    levels = np.asarray(levels, np.int64)
    return np.any((levels < -128) | (levels > 127), axis=0)


def wide_taps(levels: np.ndarray) -> list[int]:
    """The kernel positions ky KW + kx of a depthwise filter's `levels` [C, KH, KW] (less
    their zero point) that some channel has outside int8 (`wide_positions`)."""
    return [int(tap) for tap in np.flatnonzero(wide_positions(levels))]


def takes_byte_depthwise(levels: np.ndarray, pads: tuple[int, ...], kernel: tuple[int, int]) -> bool:
    """Whether a depthwise filter's levels less their zero point [C, KH, KW] (int8 for a
    per-channel filter: symmetric; in [-255, 255] for one with a zero point, an int16 lane's
    product with any int8 level) leave int8 at no more than `MOST_WIDE_TAPS` of its kernel
    positions (`wide_taps`), and its pads are narrower than its kernel (each window reads some
    input column: `ByteTaps`)."""
    k_h, k_w = kernel
    top, left, bottom, right = pads
    levels = np.asarray(levels, np.int64).reshape(-1, k_h, k_w)
    return (len(wide_taps(levels)) <= MOST_WIDE_TAPS * k_h * k_w
            and max(top, bottom) < k_h and max(left, right) < k_w)


class ByteTaps(HostInt8Columns):
    """The depthwise tiles' arithmetic on int8 products (the module doc): a product a whole
    kernel row, its taps' int8 vectors and weights as lists."""

    def __init__(self, b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp):
        super().__init__(b, domain, op)
        self.taps_per_product = op.filter_shape.get_values()[3]
        self.summed_taps = op.microkernel.parameter(INT16_TAPS).value.data
        wide = op.microkernel.parameter(WIDE_TAPS)
        self.wide_taps = set(wide.get_values()) if wide is not None else set()
        self.levels = VectorType(i8, [self.lanes])
        self.products = VectorType(i16, [self.lanes])

    def taps_weight(self, packed: View, indices: list[list[Index]]) -> list[SSAValue]:
        """Each tap's weight in every lane of a vector: a byte, or (a `wide_taps` position)
        an int16 lane; an int16 filter's other weights narrowed to bytes."""
        k_w = self.taps_per_product
        weights = []
        for at in indices:
            weight = self.b.load(packed, at)
            if at[2] * k_w + at[3] in self.wide_taps:
                weights.append(self.b.splat(weight, self.products))
                continue
            if weight.type != i8:
                weight = self.b.truncate(weight, i8)
            weights.append(self.b.splat(weight, self.levels))
        return weights

    def taps_input(self, view: View, indices: list[list[Index]], loaded: list[list[bool] | None],
                   stride: int, first_tap: int = 0) -> list[SSAValue]:
        """Each tap's input levels as they are, the lanes not `loaded` the input zero point (at
        a row's edge, of stride 1, a whole vector inside the row and an `ext`: `load_edge_vector`)."""
        if stride == 1:
            return [load_edge_vector(self.b, view, at, self.lanes, lanes, self.domain.input_offset)
                    for at, lanes in zip(indices, loaded, strict=True)]
        return [load_vector(self.b, view, at, self.lanes, lanes, self.domain.input_offset, stride)
                for at, lanes in zip(indices, loaded, strict=True)]

    def multiply_accumulate(self, total: SSAValue, pixels: list[SSAValue], weights: list[SSAValue]) -> SSAValue:
        """total + each tap's products: `summed_taps` of them summed in int16 lanes (`smull`,
        `smlal`), a wide tap's (an int16 weight) alone (`sxtl`, `mul`), each such sum widened
        into the int32 sums (`saddw`, `saddw2`)."""
        b = self.b
        for first in range(0, len(pixels), self.summed_taps):
            run = zip(pixels[first:first + self.summed_taps], weights[first:first + self.summed_taps], strict=True)
            products = None
            for x, w in run:
                product = b.int_mul(b.sign_extend(x, self.products), b.sign_extend(w, self.products))
                if w.type == self.products:  # a wide tap: its own sum
                    total = b.int_add(total, b.sign_extend(product, self.vector))
                    continue
                products = product if products is None else b.int_add(products, product)
            if products is not None:
                total = b.int_add(total, b.sign_extend(products, self.vector))
        return total

    def row_starts(self, start: SSAValue, packed: View, channel: Index):
        """Each row's first sums: the bias less z_x times the weights' sum of the kernel rows
        it reads (once a channel, each kernel row's sum)."""
        offset = self.domain.input_offset
        if is_zero(offset):
            return super().row_starts(start, packed, channel)
        b = self.b
        _, _, k_h, k_w = self.op.filter_shape.get_values()
        row_sums = []
        for ky in range(k_h):
            total = b.sign_extend(b.load(packed, [channel, 0, ky, 0, 0]))
            for kx in range(1, k_w):
                total = b.int_add(total, b.sign_extend(b.load(packed, [channel, 0, ky, kx, 0])))
            row_sums.append(total)

        def starts(rows: list[list[int]], interior: bool) -> list[SSAValue]:
            """A tile's rows' starts, each set of kernel rows' made once in the tile."""
            made: dict[tuple[int, ...], SSAValue] = {}
            for kernel_rows in map(tuple, rows):
                if kernel_rows not in made:
                    if kernel_rows:
                        weights = row_sums[kernel_rows[0]]
                        for ky in kernel_rows[1:]:
                            weights = b.int_add(weights, row_sums[ky])
                        made[kernel_rows] = b.int_sub(start, b.splat(b.int_mul(weights, offset), self.vector))
                    else:
                        made[kernel_rows] = start
            return [made[tuple(kernel_rows)] for kernel_rows in rows]
        return starts


def emit_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view) -> None:
    """The `vector-depthwise-int8` and `vector-planes-int8` microkernels' entry: on int8
    products (`{products = "neon-bytes"}`) the depthwise tiles on `ByteTaps`, else
    `int8_depthwise.emit_convolution`."""
    neon_tables_in_registers(b, domain, op)
    if op.microkernel.data != INT8_PLANES and products_of(op) == NEON_BYTES:
        vector_depthwise.emit_convolution(b, domain, op, view, ByteTaps)
    else:
        int8_depthwise.emit_convolution(b, domain, op, view)
