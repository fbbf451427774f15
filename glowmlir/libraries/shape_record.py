"""The record of a shape-parameterised int8 kernel (`lowering.shape_parameterised`).

A size-first build's int8 layer reads its quantization numbers from an i32 record
(`glowll-quantization-records`: `quantization.rescaling.KernelParameters`, 10 words). A
layer given the shape-parameterised matrix product (`glowll-shape-parameterised-kernels`)
has a longer record: those 10 words, then its `MatrixShape` (7 words), so that one kernel
serves layers of any shape. Element strides address its input and output as [channel,
pixel] matrices: a convolution's NCHW input is [C, pixels] (channel stride = pixels), a
FullyConnected's [rows, K] input has pixel (row) stride K.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from glowmlir.dialects import glow, glowll
from glowmlir.quantization.rescaling import KernelParameters

MICROKERNEL = "shape-parameterised"
DSP_MICROKERNEL = "shape-parameterised-dsp"
VNNI_MICROKERNEL = "x86-vnni-shape-parameterised"
"""The kernel's portable form, its form for the Arm DSP extension (four input channels a
step), and its form for AVX-512 VNNI (`lowering.vnni_shape_parameterised`: a multiple of 4
input channels, a convolution of one pixel or of at least 16)."""
VNNI_LOADED_NUMBERS = ("output_offset",)
"""The numbers the VNNI form loads from the record even when they are 0: its code for them
(an add in the rounding term, a clamp) is the same for any value, so layers that differ in
them share the kernel."""
DSP_CHANNELS = 4
"""The DSP-extension form's input channels a step (a layer's count must be a multiple)."""
OUTPUT_BLOCK = 2
"""Output channels the kernel computes together (a layer needs at least this many)."""


@dataclass(frozen=True)
class MatrixShape:
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

    def record(self) -> np.ndarray:
        return np.array(dataclasses.astuple(self), dtype=np.int32)


SHAPE_SLOT = len(dataclasses.fields(KernelParameters))
"""Where the shape words start in a record (after the quantization numbers)."""
SHAPE_WORDS = len(dataclasses.fields(MatrixShape))
RECORD_WORDS = SHAPE_SLOT + SHAPE_WORDS


def layer_record(op: glowll.ConvolutionOp | glowll.FullyConnectedOp) -> np.ndarray:
    """The record a shape-parameterised kernel reads: the layer's numbers, then its shape."""
    return np.concatenate([KernelParameters.of(op).record(), MatrixShape.of(op).record()])
