"""The records of the kernels whose shapes are data: a layer's i32 record holds its quantization
numbers (`quantization.rescaling.KernelParameters`, `SHAPE_SLOT` words), then its shape, a
`MatrixShape` (a matrix product: pointwise convolutions, FullyConnected) or a `DepthwiseShape`
(a depthwise convolution), so that one kernel serves layers of any shape. Element strides
address a matrix product's input and output as [channel, pixel] matrices: a convolution's NCHW
input is [C, pixels] (channel stride = pixels), a FullyConnected's [rows, K] input has pixel
(row) stride K. What every backend's form of those kernels shares: the record's layout
(`layer_record`), its verifier (`record_check`), and the readers of a record in the kernel
(`record_shape`, `runtime_strided`, `read_table_by_record`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import VerifyException

from glowmlir.dialects import glow, glowll
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import ArithmeticDomain, ViewOf
from glowmlir.quantization.rescaling import KernelParameters, RecordWords


@dataclass(frozen=True)
class MatrixShape(RecordWords):
    """The shape words of a record, in field order (strides in elements). A field may be an
    int or, in the kernel that reads it, an SSA value."""

    pixels: object
    input_channels: object
    output_channels: object
    input_channel_stride: object
    input_pixel_stride: object
    output_channel_stride: object
    output_pixel_stride: object

    @staticmethod
    def of(op: glowll.ConvolutionOp | glowll.FullyConnectedOp) -> MatrixShape:
        if isinstance(op, glowll.FullyConnectedOp):
            rows, columns = glow.shape_of(op.dest)
            depth = glow.shape_of(op.input)[1]
            return MatrixShape(rows, depth, columns, 1, depth, 1, columns)
        _, channels, height, width = glow.shape_of(op.input)
        pixels = height * width
        return MatrixShape(pixels, channels, glow.shape_of(op.dest)[1], pixels, 1, pixels, 1)


@dataclass(frozen=True)
class DepthwiseShape(RecordWords):
    """The shape words of a depthwise convolution's record, in field order: its channels,
    input and output planes, strides, top and left pads, and the padded input plane the
    kernel copies each channel into (`DEPTHWISE_PLANE_BYTES` at most)."""

    channels: object
    height: object
    width: object
    out_height: object
    out_width: object
    stride_y: object
    stride_x: object
    pad_top: object
    pad_left: object
    padded_height: object
    padded_width: object

    @staticmethod
    def of(op: glowll.ConvolutionOp) -> DepthwiseShape:
        _, channels, height, width = glow.shape_of(op.input)
        _, _, out_height, out_width = glow.shape_of(op.dest)
        top, left, bottom, right = op.pads.get_values()
        return DepthwiseShape(channels, height, width, out_height, out_width, *op.strides.get_values(), top, left,
                              top + height + bottom, left + width + right)


SHAPE_SLOT = len(dataclasses.fields(KernelParameters))
"""Where the shape words start in a record (after the quantization numbers)."""
SHAPE_WORDS = len(dataclasses.fields(MatrixShape))
RECORD_WORDS = SHAPE_SLOT + SHAPE_WORDS
DEPTHWISE_WORDS = len(dataclasses.fields(DepthwiseShape))
DEPTHWISE_RECORD_WORDS = SHAPE_SLOT + DEPTHWISE_WORDS


def layer_record(op: glowll.ConvolutionOp | glowll.FullyConnectedOp, depthwise: bool = False) -> np.ndarray:
    """The record a shape-parameterised kernel reads: the layer's numbers, then its shape (a
    `DepthwiseShape` with `depthwise`, else a `MatrixShape`)."""
    shape = DepthwiseShape.of(op) if depthwise else MatrixShape.of(op)
    return np.concatenate([KernelParameters.of(op).record(), shape.record()])


def record_check(words: int):
    """The rule of a kernel that reads its numbers and shapes from a record of `words` words."""

    def verify(op) -> None:
        if op.parameters is None or glow.shape_of(op.parameters) != (words,):
            raise VerifyException(f"{op.name}: the {op.microkernel.data} microkernel reads its numbers and shapes "
                                  f"from a {words}-word parameters record")

    return verify


def record_shape(b: KernelBuilder, op: glowll.ConvolutionOp | glowll.FullyConnectedOp, view: ViewOf,
                 kind: type[MatrixShape] | type[DepthwiseShape] = MatrixShape) -> MatrixShape | DepthwiseShape:
    """The layer's shape (a `MatrixShape`, or a depthwise convolution's `DepthwiseShape`),
    loaded from its record as index values."""
    record = view(op.parameters)
    words = DEPTHWISE_WORDS if kind is DepthwiseShape else SHAPE_WORDS
    return kind(*(b.as_index(b.load(record, [SHAPE_SLOT + slot])) for slot in range(words)))


def runtime_strided(view: ViewOf, buffer: SSAValue, strides: Sequence[Index], element_type=None) -> View:
    """A buffer addressed through run-time strides (its shape not part of the code: the
    kernel's loops take their bounds from the record)."""
    contiguous = view(buffer)
    return View(contiguous.base, (0,) * len(strides), tuple(strides), 0,
                element_type or contiguous.element_type)


def runtime_views(b: KernelBuilder, op: glowll.ConvolutionOp | glowll.FullyConnectedOp,
                  view: ViewOf) -> tuple[MatrixShape, View, View]:
    """The layer's shape, loaded from its record, and its input and output as [channel, pixel]
    views with the record's strides."""
    shape = record_shape(b, op, view)
    return (shape, runtime_strided(view, op.input, (shape.input_channel_stride, shape.input_pixel_stride)),
            runtime_strided(view, op.dest, (shape.output_channel_stride, shape.output_pixel_stride)))


def read_table_by_record(domain: ArithmeticDomain, channels: Index) -> None:
    """A per-channel requantization table ([2, channels]: multipliers, then shifts) read with
    the record's channel count as its row stride, so that its layer's channel count is not
    compiled into the kernel."""
    table = domain.requantization.table
    if table is not None:
        domain.requantization.table = View(table.base, (2, 0), (channels, 1), 0, table.element_type)
