"""The record and weight layouts of the shape-parameterised int8 kernels (`backends.size_first.kernels`).

A size-first build's int8 layer reads its quantization numbers from an i32 record
(`glowll-quantization-records`: `quantization.rescaling.KernelParameters`, 10 words). A
layer given the shape-parameterised matrix product (`glowll-shape-parameterised-kernels`)
has a longer record: those 10 words, then its `MatrixShape` (7 words), so that one kernel
serves layers of any shape. Element strides address its input and output as [channel,
pixel] matrices: a convolution's NCHW input is [C, pixels] (channel stride = pixels), a
FullyConnected's [rows, K] input has pixel (row) stride K. A depthwise convolution's
record holds its `DepthwiseShape` (11 words) instead. The weight layouts of the kernels'
DSP-extension forms are here too (`pack_dsp_weights`, `pack_depthwise_weights`).
"""

from __future__ import annotations

import numpy as np

from glowmlir.backends.arm_dsp.layout import PairTiling, pair_tiling, tiling_weight_words

MICROKERNEL = "shape-parameterised"
DSP_MICROKERNEL = "shape-parameterised-dsp"
"""The matrix product's portable form and its form for the Arm DSP extension (a pointwise
convolution's: pixels x output channels a step on int16 pairs); its form for AVX-512 VNNI is
the x86 backend's (`backends.x86.vnni_shape_parameterised`)."""
DEPTHWISE_MICROKERNEL = "shape-parameterised-depthwise"
DSP_DEPTHWISE_MICROKERNEL = "shape-parameterised-depthwise-dsp"
"""The depthwise convolution's kernel: portable (a multiply-add a tap), and its form for the
Arm DSP extension (a word of four input bytes a step along a window row, `SMLAD`s)."""
OUTPUT_BLOCK = 2
"""Output channels the portable kernel computes together (a layer needs at least this many)."""
DSP_PIXELS = 2
"""Adjacent pixels the DSP-extension form computes together (a layer needs at least this many)."""
DSP_BLOCK = 2
"""Output channels the DSP-extension form computes together (a layer needs at least this many)."""
DSP_GATHER_BYTES = 4096
"""The DSP-extension form gathers the input channels of `DSP_PIXELS` pixels as int16 pairs
into this many bytes of stack: a layer has at most `DSP_MAX_CHANNELS` input channels."""
DSP_MAX_CHANNELS = DSP_GATHER_BYTES // (2 * DSP_PIXELS)


DEPTHWISE_PLANE_BYTES = 4096
"""The stack plane of the depthwise kernel: a layer's padded input plane fits in it, with
`PLANE_SLACK` bytes to spare."""
PLANE_SLACK = 4
"""Bytes after the padded plane (holding the input zero point) that the DSP-extension form's
last word of a window row may read (multiplied by weight 0)."""
DEPTHWISE_PIXELS = 2
"""Adjacent outputs of a row the depthwise kernel computes together (a row has at least this many)."""

def dsp_blocks(out_channels: int) -> int:
    """Blocks of `DSP_BLOCK` output channels of the DSP-extension form: block k holds channels
    min(k * DSP_BLOCK, out_channels - DSP_BLOCK) on, so the last overlaps the one before
    when the block does not divide the channels (those are computed twice, the same numbers)."""
    return -(-out_channels // DSP_BLOCK)


def pack_dsp_weights(centred: np.ndarray) -> np.ndarray:
    """An [O, C] int8 filter less its zero point (C even) as the int16 weight pairs the
    DSP-extension form reads: [blocks, C / 2, DSP_BLOCK, 2], for each block and input channel
    pair (2i, 2i + 1) the pairs of its `DSP_BLOCK` channels side by side (`dsp_blocks`)."""
    out_channels, channels = centred.shape
    firsts = [min(k * DSP_BLOCK, out_channels - DSP_BLOCK) for k in range(dsp_blocks(out_channels))]
    rows = np.stack([centred[first:first + DSP_BLOCK] for first in firsts])  # [blocks, DSP_BLOCK, C]
    return rows.reshape(len(firsts), DSP_BLOCK, channels // 2, 2).transpose(0, 2, 1, 3).astype(np.int16).copy()


def window_row(kernel_width: int) -> PairTiling:
    """How the DSP-extension depthwise kernel reads a window row of `kernel_width` taps: words
    of four input bytes from the window's first column (two bytes apart), each as the pairs
    (0, 2) and (1, 3), multiplied by weight words (`arm_dsp_layout.pair_tiling` of one output)."""
    return pair_tiling(kernel_width, 1, 1, pixels=1)


def pack_depthwise_weights(centred: np.ndarray) -> np.ndarray:
    """A [C, 1, KH, KW] depthwise filter less its zero point as the int16 weight words of
    `window_row`, [C, KH, words, 2] (a half with no tap: 0)."""
    tiling = window_row(centred.shape[3])
    return tiling_weight_words(centred[:, 0], [tiling], [0], len(tiling.weight_words))
