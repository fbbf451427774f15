"""The int8 depthwise convolution on a host's vector unit (`microkernel = "vector-depthwise-int8"`).

The float depthwise kernel's tiles (`vector_depthwise`: rows x vectors of one channel's
output columns, every accumulator a vector register, each input row the tile reads loaded
once per kernel column and multiplied into every row of the tile whose window covers it) on
int32 lanes (`HostInt8Columns`): an input vector is `lanes` int8 levels sign-extended (one
`vpmovsxbd`), less the input zero point, the lanes in the padding or past the row's end
loaded as the zero point (a masked load), so they add 0 (the tiles skip the input rows and
vectors wholly outside the input). The weights are int16 with their zero point subtracted at compile time
(`transforms.int8_kernel_selection.centred_type`), zero-extended into the lanes once a channel. Both
factors fit 16 bits, so they are multiplied by `vpmaddwd` (AVX2, AVX-512BW: one uop, where
`vpmulld` takes two and twice the latency; with AVX-512 VNNI LLVM fuses the add into
`vpdpwssd`): the weight's high half 0, the input's high half is multiplied by 0. The sums
are the generic kernel's modulo 2^32 (int32, the same products), and the output step is
`lowering.requantization.LaneRequantization`'s: the channel's multiplier and shift in every lane, the fused
relu/clip in its clamp.

A "same"-padded depthwise convolution of small planes (`microkernel = "vector-planes-int8"`,
`column_layout.int8_plane_vectors`) runs the same arithmetic on the vector-planes kernel's
tiles, each channel's whole plane one tile of vectors of its pixels: the lanes whose tap
falls in the padding masked at run time, the masks the same for every channel. Every tap is
loaded there, so the selection pass folds `-x_offset * sum w` into the bias
(`folded_input_offset`) and the levels are multiplied as they are, the padding's lanes
loaded as the zero point (where the folded bias would not fit int32, as on the tiles).
"""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import VectorType, i16, i32
from xdsl.ir import Attribute, SSAValue

from glowmlir.backends.host_vector import depthwise as vector_depthwise
from glowmlir.dialects import glowll
from glowmlir.lowering import vector_columns
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import ArithmeticDomain
from glowmlir.lowering.requantization import LaneRequantization
from glowmlir.lowering.vector_layout import INT8_PLANES

PMADDWD = {16: "llvm.x86.avx512.pmaddw.d.512", 8: "llvm.x86.avx2.pmadd.wd", 4: "llvm.x86.sse2.pmadd.wd"}
"""`vpmaddwd` by int32 lanes: the sums of the products of adjacent int16 pairs."""


class HostInt8Columns(vector_columns.Int8ColumnArithmetic):
    """The int8 column arithmetic on the host's vectors (`vector_tile`: lanes,
    accumulators), requantized with the generic arithmetic on the lanes."""

    widest_output = 16  # rows of 4 or 8 lanes requantized 16 lanes at a time

    def __init__(self, b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp):
        super().__init__(b, domain, op)
        self.lanes, self.accumulators = op.vector_tile.get_values()[:2]
        self.vector = VectorType(i32, [self.lanes])

    def weight(self, packed: View, indices: list[Index]) -> SSAValue:
        """The int16 weight zero-extended into every int32 lane: its high half 0."""
        return self.b.splat(self.b.int_and(self.domain.weight(packed, indices), 0xFFFF), self.vector)

    def multiply_accumulate(self, total: SSAValue, pixels: SSAValue, weight: SSAValue) -> SSAValue:
        """total + pixels * weight by `vpmaddwd`: each int32 lane as two int16 halves, the
        pixel's low half its value (a level, or a level less its zero point: it fits, signed),
        the weight's high half 0: the lane's two products are the one wanted and 0."""
        halves = VectorType(i16, [2 * self.lanes])
        products = self.b.emit(llvm.CallIntrinsicOp(PMADDWD[self.lanes], [self.b.bitcast(pixels, halves),
                                                                          self.b.bitcast(weight, halves)],
                                                    [self.vector]))
        return self.b.int_add(total, products)

    def output(self, channel: Index, total: SSAValue, storage: Attribute) -> SSAValue:
        if self.domain.output(channel, storage) is None:  # accumulators kept
            return total
        multiplier, shift = self.domain.requantization.of(channel)
        return LaneRequantization(self.b, self.domain, total.type, multiplier, shift).output(total, storage)


def emit_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view) -> None:
    """On the depthwise tiles, or (`vector-planes-int8`) each channel's plane as one tile of
    the vector-planes kernel (`vector_columns.same_padded_planes`, a block of one channel)."""
    if op.microkernel.data == INT8_PLANES:
        vector_columns.same_padded_planes(b, domain, op, view, 1, HostInt8Columns)
    else:
        vector_depthwise.emit_convolution(b, domain, op, view, HostInt8Columns)
