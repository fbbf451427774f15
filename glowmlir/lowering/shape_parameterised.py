"""Int8 kernels whose shapes are data: one matrix product for pointwise convolutions and FullyConnected.

A kernel compiled for one layer holds its shapes as constants (loop bounds, strides), so
layers of different shapes each get their own, even in a size-first build where their
quantization numbers are data (`glowll-quantization-records`). The matrix product here
reads its shapes too from the layer's record, after the `KernelParameters` words
(`libraries.shape_record.MatrixShape`), so one kernel serves every int8 1x1 convolution
(stride 1, unpadded, ungrouped, unpooled, batch 1) and FullyConnected whose arithmetic is
alike (the same numbers zero, the same requantization kind, the input zero point folded
into the bias or not):

    dest[o, p] = clamp(requantize(bias[o] + sum_c (input[c, p] - x_offset) * (weights[o, c] - w_offset)))

with `o` an output channel, `p` a pixel (a FullyConnected's row) and `c` an input channel,
each of input and dest addressed through two strides of the record: a convolution's input
is [C, pixels] (channel stride = pixels), a FullyConnected's [rows, K] (pixel stride = K).
The weights are [O, C] as both instructions store them. The arithmetic is the layer's
`QuantizedArithmetic` (int32 sums, exact in any order), so the outputs are those of the
per-layer kernels, bit for bit.

`glowll-shape-parameterised-kernels` chooses it (`microkernel = "shape-parameterised"`) in
size-first builds where it makes the code smaller (`docs/code-size.md`). Where it could, the
pass folded the input zero point into the bias (`folded_input_offset`), and the inputs are
multiplied as they are. On a core with the DSP extension (`microkernel =
"shape-parameterised-dsp"`, layers of a multiple of 4 input channels) the inner loop takes
four input channels a step: the four input bytes packed into the pairs (0, 2) and (1, 3)
(`arm_dsp.pack_halves`), and one word of four int8 weights, as they are stored, split into
the same pairs less the weight zero point (`arm_dsp.input_pairs`), two `SMLAD`s per output
channel (`arm_dsp.smlad`); elsewhere (the M3) it takes one, a multiply-add of two loaded
bytes.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from xdsl.dialects.builtin import i32
from xdsl.ir import SSAValue

from glowmlir.dialects import glowll
from glowmlir.libraries.shape_record import (
    DSP_CHANNELS,
    DSP_MICROKERNEL,
    OUTPUT_BLOCK,
    SHAPE_SLOT,
    SHAPE_WORDS,
    MatrixShape,
)
from glowmlir.lowering import arm_dsp
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import ArithmeticDomain, ViewOf

__all__ = ["emit_convolution", "emit_fully_connected"]


def record_shape(b: KernelBuilder, op: glowll.ConvolutionOp | glowll.FullyConnectedOp, view: ViewOf) -> MatrixShape:
    """The layer's `MatrixShape`, loaded from its record as index values."""
    record = view(op.parameters)
    return MatrixShape(*(b.as_index(b.load(record, [SHAPE_SLOT + slot])) for slot in range(SHAPE_WORDS)))


def runtime_strided(view: ViewOf, buffer: SSAValue, strides: Sequence[Index], element_type=None,
                    shape: Sequence[Index] | None = None) -> View:
    """A buffer addressed through run-time strides (its compile-time shape not part of the
    code); `shape` as the kernel's loops need it, if they read it."""
    contiguous = view(buffer)
    return View(contiguous.base, tuple(shape or (0,) * len(strides)), tuple(strides), 0,
                element_type or contiguous.element_type)


def emit_matrix_product(b: KernelBuilder, domain: ArithmeticDomain,
                        op: glowll.ConvolutionOp | glowll.FullyConnectedOp, view: ViewOf) -> None:
    """The kernel (see the module docstring): shapes and strides loaded from the record; two
    output channels a step of the outer loop (their biases and requantization read once;
    with an odd count the last step takes the last two, computing one of them again), one
    pixel a step of the middle one, the input channels summed in the inner one, each input
    loaded once for both channels: one a step with multiply-adds, or, in the DSP-extension
    kernel (`shape-parameterised-dsp`), four a step with `SMLAD`s."""
    shape = record_shape(b, op, view)
    runtime_view = functools.partial(runtime_strided, view)
    src = runtime_view(op.input, (shape.input_channel_stride, shape.input_pixel_stride))
    dest = runtime_view(op.dest, (shape.output_channel_stride, shape.output_pixel_stride))
    bias = view(op.bias)
    folded = op.folded_input_offset is not None  # the bias holds bias - x_offset * sum w

    def input_level(channel: Index, pixel: Index) -> SSAValue:
        return arm_dsp.level(b, src, [channel, pixel]) if folded else domain.input(src, [channel, pixel])

    if op.microkernel.data == DSP_MICROKERNEL:  # four input channels a step, two SMLADs per output channel
        count = b.div(shape.input_channels, DSP_CHANNELS)
        weights = runtime_view(op.operands[2], (count, 1), i32)  # a word of four weights a step
        weight_offset = arm_dsp.offset_pair(b, domain.weight_offset)

        def products(totals: list[SSAValue], channels: list[Index], step: Index, pixel: Index) -> list[SSAValue]:
            first = b.mul(step, DSP_CHANNELS)
            x = [input_level(b.add(first, j), pixel) for j in range(DSP_CHANNELS)]
            inputs = arm_dsp.pack_halves(b, x[0], x[2]), arm_dsp.pack_halves(b, x[1], x[3])
            sums = []
            for o, total in zip(channels, totals):
                word = arm_dsp.load_word(b, weights, [o, step], aligned=True)
                for pair, weight_pair in zip(inputs, arm_dsp.input_pairs(b, word, weight_offset)):
                    total = arm_dsp.smlad(b, pair, weight_pair, total)
                sums.append(total)
            return sums
    else:
        weights = runtime_view(op.operands[2], (shape.input_channels, 1))
        count = shape.input_channels

        def products(totals: list[SSAValue], channels: list[Index], step: Index, pixel: Index) -> list[SSAValue]:
            x = input_level(step, pixel)
            return [domain.multiply_accumulate(total, x, domain.weight(weights, [o, step]), reduction=True)
                    for total, o in zip(totals, channels)]

    last = b.sub(shape.output_channels, OUTPUT_BLOCK)
    with b.loop(0, b.ceil_div(shape.output_channels, OUTPUT_BLOCK)) as block:
        first = b.min(b.mul(block.index, OUTPUT_BLOCK), last)
        channels = [b.add(first, j) for j in range(OUTPUT_BLOCK)]
        starts = [domain.bias(bias, o) for o in channels]
        stores = [domain.output(o, dest.element_type) for o in channels]
        with b.loop(0, shape.pixels) as p:
            with b.loop(0, count, carried=starts) as step:
                step.next(*products(step.carried, channels, step.index, p.index))
            for o, stored, total in zip(channels, stores, step.results):
                b.store(stored(total), dest, [o, p.index])


emit_convolution = emit_matrix_product
emit_fully_connected = emit_matrix_product
