"""The float microkernels of a host's vector unit: `FloatColumns` (f32 vectors, FMA with the
broadcast weight) run by the column, plane, channel and depthwise tiles."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import llvm
from xdsl.dialects.builtin import VectorType, f32
from xdsl.ir import Attribute, SSAValue

from glowmlir.backends.host_vector import depthwise as vector_depthwise
from glowmlir.dialects import glowll
from glowmlir.lowering import vector_channels, vector_columns
from glowmlir.lowering.activations import clamp
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.kernels import FloatArithmetic
from glowmlir.lowering.loop_skeletons import ViewOf
from glowmlir.lowering.vector_layout import CHANNELS, COLUMNS, DEPTHWISE, PLANES


class FloatColumns(vector_columns.ColumnArithmetic):
    """f32 vectors of the host's vector unit (`vector_tile`: lanes, accumulator registers,
    and a vector-depthwise tile's rows):
    a multiply-accumulate LLVM fuses into one FMA with the broadcast weight; the fused
    relu/clip on the vectors (`llvm.maxnum`/`llvm.minnum`, the scalar kernels' results
    NaN included)."""

    def __init__(self, b: KernelBuilder, domain: FloatArithmetic, op: glowll.ConvolutionOp):
        super().__init__(b, domain, op)
        self.lanes, self.accumulators = op.vector_tile.get_values()[:2]
        self.vector = VectorType(f32, [self.lanes])

    def input(self, view: View, indices: list[Index], loaded: list[bool] | None, stride: int) -> SSAValue:
        return vector_columns.load_vector(self.b, view, indices, self.lanes, loaded, 0.0, stride)

    def add(self, total: SSAValue, value: SSAValue) -> SSAValue:
        return self.b.fadd(total, value)

    def multiply_accumulate(self, total: SSAValue, pixels: SSAValue, weight: SSAValue) -> SSAValue:
        return self.b.fadd(total, self.b.fmul(pixels, weight))

    def output(self, channel: Index, total: SSAValue, storage: Attribute) -> SSAValue:
        b, suffix = self.b, f"v{self.lanes}f32"

        def bound(name: str) -> Callable[[SSAValue, SSAValue], SSAValue]:
            return lambda x, y: b.emit(llvm.CallIntrinsicOp(f"llvm.{name}.{suffix}", [x, y], [self.vector]))

        return clamp(total, self.domain.activation, bound("maxnum"), bound("minnum"),
                     lambda value: b.splat(b.f32(value), self.vector))


FLOAT_MICROKERNELS = {COLUMNS: vector_columns, PLANES: vector_columns, CHANNELS: vector_channels,
                      DEPTHWISE: vector_depthwise}
"""The module of each float microkernel: its `emit_convolution`."""


def emit_convolution(b: KernelBuilder, domain: FloatArithmetic, op: glowll.ConvolutionOp, view: ViewOf) -> None:
    """A float convolution on its microkernel's tiles of `FloatColumns`."""
    FLOAT_MICROKERNELS[op.microkernel.data].emit_convolution(b, domain, op, view, FloatColumns)
