"""The int8 depthwise convolution on a host's vector unit (`microkernel = "vector-depthwise-int8"`).

The float depthwise kernel's tiles (`vector_depthwise`: rows x vectors of one channel's
output columns, every accumulator a vector register, each input row the tile reads loaded
once per kernel column and multiplied into every row of the tile whose window covers it) on
int32 lanes (`HostInt8Columns`): an input vector is `lanes` int8 levels sign-extended (one
`vpmovsxbd`), less the input zero point, the lanes in the padding or past the row's end
loaded as the zero point (a masked load), so they add 0; the weights are int16 with their
zero point subtracted at compile time (`select_arm_dsp_kernels.centred_type`), broadcast once
a channel. Both factors fit 16 bits, so LLVM multiplies them with `vpmaddwd` (one instruction
for the lanes' products; the high halves are 0). The sums are the generic kernel's exactly
(int32, the same terms), and the output step is `x86_vnni.LaneRequantization`'s: the
channel's multiplier and shift in every lane, the fused relu/clip in its clamp.
"""

from __future__ import annotations

from xdsl.dialects.builtin import VectorType, i32
from xdsl.ir import Attribute, SSAValue

from glowmlir.dialects import glowll
from glowmlir.lowering import vector_depthwise
from glowmlir.lowering.arm_mve import Int8Columns
from glowmlir.lowering.kernel_builder import Index, KernelBuilder
from glowmlir.lowering.loop_skeletons import ArithmeticDomain
from glowmlir.lowering.x86_vnni import LaneRequantization


class HostInt8Columns(Int8Columns):
    """Helium's int8 column arithmetic on the host's vectors (`vector_tile`: lanes,
    accumulators), requantized with the generic arithmetic on the lanes."""

    def __init__(self, b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp):
        super().__init__(b, domain, op)
        self.lanes, self.accumulators = op.vector_tile.get_values()[:2]
        self.vector = VectorType(i32, [self.lanes])

    def output(self, channel: Index, total: SSAValue, storage: Attribute) -> SSAValue:
        if self.domain.output(channel, storage) is None:  # accumulators kept
            return total
        multiplier, shift = self.domain.requantization.of(channel)
        return LaneRequantization(self.b, self.domain, self.vector, multiplier, shift).output(total, storage)


def emit_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view) -> None:
    vector_depthwise.emit_convolution(b, domain, op, view, HostInt8Columns)
