"""The int8 1x1 convolution on NEON with int8 products (`vector-pointwise-int8`,
`{products = "neon-bytes"}`): eight products an instruction, not four.

NEON without the dot product extension (Cortex-A53) multiplies int8 by int8 into int16 lanes
eight at a time (`smull`, `smull2`; `smlal`, `smlal2` with an add), and adds adjacent int16
lanes into int32 ones (`sadalp`). The tile takes the input channels four at a time: a vector
of 16 bytes holds 8 pixels' levels of channels (c, c + 1) interleaved, as they are (not less
their zero point), and the filter word its pair of levels, as they are, in every 16-bit lane
(`byte_pair_words`). Per 8 pixels and output channel, `smull` + `smull2` of the first pair,
`smlal` + `smlal2` of the second (channels c + 2, c + 3) into the same int16 lanes and two
`sadalp` into the int32 sums: 32 products in 6 instructions, where the int16 pair products
(`"neon"`, `int8_depthwise.split_products`) take 8 for 32 and an `addp` an output vector.

Each int16 lane then holds x[c] w[c] + x[c + 2] w[c + 2] (or c + 1, c + 3) of levels in
[-128, 127]: exact in int16 unless both weights are -128 (and the pixel -128 in both), which
`byte_products_fit` rules out for the layer's filter at compile time (a filter with such a
pair keeps the int16 products). The weights' zero point z_w is not subtracted from them:
sum x (w - z_w) = sum x w - z_w sum x, the second term each pixel's column sum of its
input levels (`saddlp` of the pairs, carried in int16: at most `MOST_SUMMED_CHANNELS`
channels) times z_w, added once a tile (0: per-channel weights, symmetric). The input zero
point is folded into the bias (`folded_input_offset`) as for the int16 products.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import VectorType, i8, i16, i32
from xdsl.ir import SSAValue

from glowmlir.backends.host_vector import depthwise as vector_depthwise
from glowmlir.backends.host_vector.int8_depthwise import PairColumns, interleaved
from glowmlir.dialects import glowll
from glowmlir.lowering import vector_columns
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import ArithmeticDomain

MOST_PREPARED_BYTES = 131072
"""The most stack a run's prepared input takes (`prepared_bytes`), as
`int8_pointwise.MOST_WIDENED_BYTES`."""
MOST_SUMMED_CHANNELS = 256
"""The most input channels whose column sums (`saddlp` of pairs, each in [-256, 254]) fit the
int16 lanes they are carried in, where the weights' zero point is not 0."""


def byte_products_fit(levels: np.ndarray) -> bool:
    """Whether a 1x1 filter's int8 levels [O, C] (as they are) keep every int16 lane of the
    tile exact for any int8 input: each lane sums two products x[c] w[c] + x[c + 2] w[c + 2]
    (channels 4k + i and 4k + 2 + i, i = 0, 1; past the last channel w = 0), whose extremes
    over x in [-128, 127] are 128 |w| (w < 0) or 127 w above and -128 w (w > 0) or 127 w
    below."""
    out_c, in_c = levels.shape
    padded = np.zeros((out_c, -(-in_c // 4) * 4), np.int64)
    padded[:, :in_c] = levels
    quads = padded.reshape(out_c, -1, 2, 2)  # [o, step, pair of the step, channel of the pair]
    return sums_fit_int16(quads.swapaxes(2, 3))  # a lane: the two pairs' products of one channel of a pair


def sums_fit_int16(weights: np.ndarray) -> bool:
    """Whether every sum of products x[k] w[k] along the last axis of int8 `weights` stays in
    int16 for any int8 levels x: its extremes over x in [-128, 127] are 128 |w| (w < 0) or
    127 w above and -128 w (w > 0) or 127 w below."""
    weights = np.asarray(weights, np.int64)
    highest = np.where(weights < 0, -128 * weights, 127 * weights).sum(axis=-1)
    lowest = np.where(weights > 0, -128 * weights, 127 * weights).sum(axis=-1)
    return bool(highest.max(initial=0) <= np.iinfo(np.int16).max and lowest.min(initial=0) >= np.iinfo(np.int16).min)


def byte_pair_words(levels: np.ndarray, block: int) -> np.ndarray:
    """A 1x1 filter's int8 levels [O, C] as int32 words [O / block, ceil(C / 2), 1, 1, block]:
    word (o, p) the bytes (w[o, 2p], w[o, 2p + 1]) twice (0 past the last channel), so that
    the word broadcast over a vector is the pair in every 16-bit lane."""
    out_c, in_c = levels.shape
    padded = np.zeros((out_c, in_c + in_c % 2), np.int64)
    padded[:, :in_c] = levels
    pair = (padded[:, 0::2] & 0xFF) | (padded[:, 1::2] & 0xFF) << 8
    words = (pair | pair << 16).astype(np.uint32).view(np.int32)
    return np.ascontiguousarray(words.reshape(out_c // block, block, -1).transpose(0, 2, 1))[:, :, None, None, :]


class BytePairColumns(PairColumns):
    """`PairColumns` of int8 products: a vector of `NEON_BYTE_LANES` pixels' sums in pixel order
    (no split sums), its pairs of input channels 16 bytes as they are."""

    word_lanes = 4  # a filter word broadcast over 16 bytes: the pair in each 16-bit lane

    def __init__(self, b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp):
        super().__init__(b, domain, op)
        self.weight_offset = op.filter.type.element_type.offset if not op.filter.type.element_type.per_channel else 0

    def pair(self, src: View, n: Index, channel: Index, column: Index, loaded: list[bool] | None,
             second: bool = True) -> SSAValue:
        """The levels of `channel` and (`second`; else 0) the next one from `column`, as they
        are, interleaved: bytes 2i and 2i + 1 hold (x[channel, i], x[channel + 1, i])."""
        def levels(c: Index) -> SSAValue:
            return vector_columns.load_vector(self.b, src, [n, c, 0, column], self.lanes, loaded)

        other = levels(self.b.add(channel, 1)) if second else self.b.int_value(0, VectorType(i8, [self.lanes]))
        return interleaved(self.b, levels(channel), other)

    def word(self, packed: View, indices: list[Index]) -> SSAValue:
        """A packed pair of weights (`byte_pair_words`) in every 16-bit lane of a 16-byte vector."""
        word = self.b.splat(self.b.load(packed, indices), VectorType(i32, [self.word_lanes]))
        return self.b.bitcast(word, VectorType(i8, [4 * self.word_lanes]))

    def byte_products(self, total: SSAValue, factors: list[tuple[SSAValue, SSAValue]], prepared: bool) -> SSAValue:
        """total + the products of one or two (pairs, word): each half of the pairs (4 pixels)
        times its half of the word, the int16 products of the two summed lane by lane (`smull`,
        `smlal`; the high halves `smull2`, `smlal2` where the pairs are `prepared`, one 16-byte
        load, and otherwise the word's low half for both: its pairs' halves are two 8-byte
        interleavings, and a high half of the word alone would take an `ext`), then adjacent
        int16 lanes added into the int32 sums (`sadalp`: x[c] w[c] + x[c + 1] w[c + 1] + ...
        of each pixel)."""
        halves = VectorType(i16, [self.lanes])
        parts = []
        for k in range(2):
            products = None
            for pixels, word in factors:
                word_half = vector_depthwise.part(self.b, word, k if prepared else 0, 2)
                product = self.b.int_mul(*(self.b.emit(llvm.SExtOp(value, halves))
                                           for value in (vector_depthwise.part(self.b, pixels, k, 2), word_half)))
                products = product if products is None else self.b.int_add(products, product)
            parts.append(self.b.int_add(vector_depthwise.part(self.b, total, k, 2), pairwise_sums(self.b, products)))
        return vector_columns.join(self.b, parts)

    def column_sums(self, sums: SSAValue, pixels: SSAValue) -> SSAValue:
        """`sums` (int16, a pixel a lane) + each pixel's two levels of `pixels` (`saddlp`)."""
        return self.b.int_add(sums, pairwise_sums(self.b, pixels))

    def less_of(self, sums: SSAValue) -> SSAValue:
        """What the int32 sums of a vector of pixels take for the weights' zero point: -z_w x
        each pixel's column sum (`column_sums`)."""
        return self.b.int_mul(self.b.emit(llvm.SExtOp(sums, self.vector)),
                              self.b.int_value(-self.weight_offset, self.vector))


def pairwise_sums(b: KernelBuilder, value: SSAValue) -> SSAValue:
    """Adjacent lanes of `value` added into lanes of twice the width (`saddlp`; with an add
    of its result, `sadalp`)."""
    count, width = value.type.get_shape()[0], value.type.element_type.width.data
    wider = VectorType(i16 if width == 8 else i32, [count // 2])
    return b.emit(llvm.CallIntrinsicOp(f"llvm.aarch64.neon.saddlp.v{count // 2}i{2 * width}.v{count}i{width}",
                                       [value], [wider]))


@dataclass(frozen=True)
class PreparedBytes:
    """A run's input as the tiles multiply it (`prepared_bytes`): `pairs` [ceil(C / 2),
    2 x whole vectors of pixels] int8, each pixel's levels of channels (2p, 2p + 1) as they are
    (0 past the last channel and the run); `less` [whole vectors of pixels] int32, each pixel's
    -z_w x its column sum, or None where z_w is 0."""
    pairs: View
    less: View | None

    @staticmethod
    def on_stack(b: KernelBuilder, pairs: int, padded: int, summed: bool) -> PreparedBytes:
        """Stack arrays for `pairs` pairs of channels (or of taps: `int8_im2col.RowBytes`) of
        `padded` pixels, and for their column sums times -z_w where `summed`."""
        return PreparedBytes(
            View.contiguous(b.alloca(pairs * padded * 2, i8, alignment=16), (pairs, 2 * padded), element_type=i8),
            View.contiguous(b.alloca(padded, i32, alignment=16), (padded,), element_type=i32) if summed else None)

    def store_pair(self, b: KernelBuilder, columns: BytePairColumns, p: Index, first: Index, pixels: SSAValue,
                   sums: SSAValue | None) -> SSAValue | None:
        """Pair `p`'s interleaved `pixels` [first, first + lanes) into `pairs`; `sums` plus their
        column sums where the layer keeps them (`less`), else None."""
        vector_columns.store_vector(b, pixels, self.pairs, [p, b.mul(first, 2)])
        return columns.column_sums(sums, pixels) if self.less is not None else None

    def store_less(self, b: KernelBuilder, columns: BytePairColumns, first: Index, sums: SSAValue | None) -> None:
        """The column `sums` of pixels [first, first + lanes) times -z_w into `less` (none kept: nothing)."""
        if self.less is not None:
            vector_columns.store_vector(b, columns.less_of(sums), self.less, [first])


def prepared_bytes(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, n: Index, src: View,
                   width: int) -> View | PreparedBytes:
    """The run `src` of `width` pixels interleaved once for all the blocks of output channels
    (their tiles then load 16 bytes a pair of channels, not two 8-byte loads and two
    interleavings), and its pixels' column sums times -z_w, into stack arrays of C x `width`
    and 4 x `width` bytes; `src` as it is where those would exceed `MOST_PREPARED_BYTES`."""
    columns = BytePairColumns(b, domain, op)
    lanes, in_c = columns.lanes, src.shape[1]
    pairs, padded = -(-in_c // 2), -(-width // lanes) * lanes
    summed = columns.weight_offset != 0
    if pairs * padded * 2 + 4 * padded * summed > MOST_PREPARED_BYTES:
        return src
    prepared = PreparedBytes.on_stack(b, pairs, padded, summed)
    column_vector = VectorType(i16, [lanes])

    def vector(first: Index, count: int) -> None:
        loaded = None if count == lanes else [lane < count for lane in range(lanes)]

        def pair(p: Index, sums: SSAValue | None, second: bool) -> SSAValue | None:
            return prepared.store_pair(b, columns, p, first, columns.pair(src, n, b.mul(p, 2), first, loaded, second),
                                       sums)

        with b.loop(0, in_c // 2, carried=[b.int_value(0, column_vector)] if summed else []) as at:
            sums = pair(at.index, at.carried[0] if summed else None, True)
            at.next(*([sums] if summed else []))
        sums = at.results[0] if summed else None
        if in_c % 2:
            sums = pair(in_c // 2, sums, False)
        prepared.store_less(b, columns, first, sums)

    vector_columns.in_runs(b, width, lanes, vector)
    return prepared
