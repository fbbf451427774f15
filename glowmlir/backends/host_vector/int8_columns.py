"""The int8 ungrouped convolution on a host's vector unit, two kernel columns a product
(`microkernel = "vector-columns-int8"`).

The float column kernel's tiles (`lowering.vector_columns.convolution_rows`: vectors of a
row's output columns x a block of output channels, every accumulator a vector register) on
int32 lanes with `int8_depthwise.PairedTaps`' arithmetic: the input vectors of kernel columns
kx and kx + 1 interleaved as int16 halves less the input zero point (lanes in the padding
loaded as it, so 0), the weights of both taps an int32 word, one `vpmaddwd` for both
products of a lane. The filter is packed as those words (`tap_pair_words`: the float
kernel's blocks, `vector_layout.pack_filter`, of int16 levels less their zero point, each
pair of kernel columns one word), so a product's weight is one broadcast load, not two int16
loads joined by scalar shifts and an OR each time a tile reads it (the PP-OCR-cls-style stem
read 12 words a step of its loop that way). Sums are the generic kernel's modulo 2^32; the
output step `LaneRequantization`'s.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from glowmlir.backends.host_vector.int8_depthwise import PairedTaps
from glowmlir.backends.host_vector.int8_pointwise import halves_as_words
from glowmlir.backends.host_vector.table_lookup import neon_tables_in_registers
from glowmlir.dialects import glowll
from glowmlir.lowering import vector_columns
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import ArithmeticDomain
from glowmlir.lowering.vector_layout import pack_filter


def tap_pair_words(centred: np.ndarray, block: int) -> np.ndarray:
    """An OIHW filter's levels less their zero point (|w| < 2^15) as int32 words [O / block,
    C, KH, ceil(KW / 2), block]: word (.., ky, p, j) holds w[ky, 2p] in its low half and
    w[ky, 2p + 1] (0 past the last column) in its high half, the pair `PairedTaps` multiplies
    by one `vpmaddwd`."""
    packed = pack_filter(centred, block)  # [O / block, C, KH, KW, block]
    return np.ascontiguousarray(halves_as_words(packed.transpose(0, 1, 2, 4, 3)).transpose(0, 1, 2, 4, 3))


def tap_pair_words_shape(filter_shape, block: int) -> tuple[int, ...]:
    """The shape `tap_pair_words` gives an OIHW `filter_shape` in blocks of `block` channels."""
    out_c, in_c, k_h, k_w = filter_shape
    return out_c // block, in_c, k_h, -(-k_w // 2), block


class ColumnPairTaps(PairedTaps):
    """`PairedTaps` whose weight words are packed (`tap_pair_words`)."""

    def taps_weight(self, packed: View, indices: list[list[Index]]) -> SSAValue:
        """The word of the taps at `indices` (kernel columns 2p and, where there is one,
        2p + 1): the packed word (.., p, j) broadcast over the lanes as int16 halves."""
        *outer, first, j = indices[0]
        assert isinstance(first, int) and first % 2 == 0, "a product's first tap is an even kernel column"
        return self.word(packed, [*outer, first // 2, j])


def emit_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view) -> None:
    """The column tiles, `optsize`: unrolled by LLVM (its kernel rows and input channels) the
    PP-OCR-cls-style stem was 16,943 bytes of code for 8% less time than its 4,704 here."""
    neon_tables_in_registers(b, domain, op)
    b.optimize_for_size = True
    vector_columns.emit_convolution(b, domain, op, view, ColumnPairTaps)
