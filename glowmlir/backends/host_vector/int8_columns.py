"""The int8 ungrouped convolution on a host's vector unit, two kernel columns a product
(`microkernel = "vector-columns-int8"`).

The float column kernel's tiles (`lowering.vector_columns.convolution_rows`: vectors of a
row's output columns x a block of output channels, every accumulator a vector register) on
int32 lanes with `int8_depthwise.PairedTaps`' arithmetic: the input vectors of kernel columns
kx and kx + 1 interleaved as int16 halves less the input zero point (lanes in the padding
loaded as it, so 0), the weights of both taps an int32 word, one `vpmaddwd` for both
products of a lane. The filter is packed as the float kernel's (`vector_layout.pack_filter`)
as int16 levels less their zero point. Sums are the generic kernel's modulo 2^32; the output
step `LaneRequantization`'s.
"""

from __future__ import annotations

from glowmlir.backends.host_vector.int8_depthwise import PairedTaps
from glowmlir.dialects import glowll
from glowmlir.lowering import vector_columns
from glowmlir.lowering.kernel_builder import KernelBuilder
from glowmlir.lowering.loop_skeletons import ArithmeticDomain


def emit_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view) -> None:
    vector_columns.emit_convolution(b, domain, op, view, PairedTaps)
