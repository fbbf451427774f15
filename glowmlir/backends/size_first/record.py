"""The record layouts and microkernel names of the shape-parameterised int8 kernels (`backends.size_first.kernels`).

A size-first build's int8 layer reads its quantization numbers from an i32 record
(`glowll-quantization-records`: `quantization.rescaling.KernelParameters`, 10 words). A
layer given the shape-parameterised matrix product (`glowll-shape-parameterised-kernels`)
has a longer record: those 10 words, then its `MatrixShape` (7 words), so that one kernel
serves layers of any shape. Element strides address its input and output as [channel,
pixel] matrices: a convolution's NCHW input is [C, pixels] (channel stride = pixels), a
FullyConnected's [rows, K] input has pixel (row) stride K. A depthwise convolution's
record holds its `DepthwiseShape` (11 words) instead. A backend's forms of the kernels lay
out their weights themselves (`Backend.shape_parameterised`).
"""

from __future__ import annotations

MICROKERNEL = "shape-parameterised"
"""The matrix product's portable form; its forms for the Arm DSP extension and AVX-512 VNNI
are those backends' (`backends.arm_dsp.shape_parameterised`, `backends.x86.vnni_shape_parameterised`)."""
DEPTHWISE_MICROKERNEL = "shape-parameterised-depthwise"
"""The depthwise convolution's portable kernel (a multiply-add a tap; its DSP-extension form is
`backends.arm_dsp.shape_parameterised`'s)."""
OUTPUT_BLOCK = 2
"""Output channels the portable kernel computes together (a layer needs at least this many)."""
