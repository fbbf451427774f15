"""Int8 kernels whose shapes are data: a matrix product (pointwise convolutions, FullyConnected), a depthwise one.

A kernel compiled for one layer holds its shapes as constants (loop bounds, strides), so
layers of different shapes each get their own, even in a size-first build where their
quantization numbers are data (`glowll-quantization-records`). The matrix product here
reads its shapes too from the layer's record, after the `KernelParameters` words
(`lowering.shape_records.MatrixShape`), so one kernel serves every int8 1x1 convolution
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
multiplied as they are. The portable form takes one input channel a step, a multiply-add
of two loaded bytes. A backend may have a form of its own, which the pass gives the layers
with its option (`Backend.shape_parameterised`): on a core with the DSP extension
`backends.arm_dsp.shape_parameterised` (`shape-parameterised-dsp`, pointwise convolutions
only), two pixels x two output channels a step with `SMLAD`s.

The depthwise convolution has a kernel of its own (`shape-parameterised-depthwise`, the
skeleton `lowering.shape_parameterised_depthwise` with a multiply-add a tap,
`portable_window_row_taps`; its DSP form `shape-parameterised-depthwise-dsp`): its shape
(channels, planes, strides, pads) from the record (`shape_records.DepthwiseShape`), its
kernel size in the code.

On a host with AVX-512 VNNI the matrix product has a form of its own,
`backends.x86.vnni_shape_parameterised` (`x86-vnni-shape-parameterised`), reading the same
record through `record_shape` and `runtime_strided`.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from glowmlir.backends.size_first.record import DEPTHWISE_MICROKERNEL, OUTPUT_BLOCK
from glowmlir.dialects import glowll
from glowmlir.lowering.int8_sums import level
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import ArithmeticDomain, ViewOf, overlapping_tiles
from glowmlir.lowering.shape_parameterised_depthwise import WindowRowTaps, depthwise_convolution
from glowmlir.lowering.shape_records import read_table_by_record, runtime_strided, runtime_views

__all__ = ["emit_convolution", "emit_fully_connected"]


def emit_matrix_product(b: KernelBuilder, domain: ArithmeticDomain,
                        op: glowll.ConvolutionOp | glowll.FullyConnectedOp, view: ViewOf) -> None:
    """The kernel (see the module docstring): two output channels a step of the outer loop
    (their biases and requantization read once; with an odd count the last step takes the
    last two, computing one of them again), one pixel a step of the middle one, the input
    channels summed in the inner one, one a step with multiply-adds, each input loaded once
    for both channels."""
    shape, src, dest = runtime_views(b, op, view)
    read_table_by_record(domain, shape.output_channels)
    bias = view(op.bias)
    weights = runtime_strided(view, op.operands[2], (shape.input_channels, 1))
    folded = op.folded_input_offset is not None  # the bias holds bias - x_offset * sum w

    def products(totals: list[SSAValue], channels: list[Index], step: Index, pixel: Index) -> list[SSAValue]:
        x = level(b, src, [step, pixel]) if folded else domain.input(src, [step, pixel])
        return [domain.multiply_accumulate(total, x, domain.weight(weights, [o, step]), reduction=True)
                for total, o in zip(totals, channels)]

    with overlapping_tiles(b, shape.output_channels, OUTPUT_BLOCK) as (first, _):
        channels = [b.add(first, j) for j in range(OUTPUT_BLOCK)]
        starts = [domain.bias(bias, o) for o in channels]
        stores = [domain.output(o, dest.element_type) for o in channels]
        with b.loop(0, shape.pixels) as p:
            with b.loop(0, shape.input_channels, carried=starts) as step:
                step.next(*products(step.carried, channels, step.index, p.index))
            for o, stored, total in zip(channels, stores, step.results):
                b.store(stored(total), dest, [o, p.index])


def portable_window_row_taps(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, weights: View,
                             levels: View) -> WindowRowTaps:
    """The portable depthwise kernel's window rows (`shape_parameterised_depthwise.TapsOf`): a
    multiply-add a tap, each weight (int16 [C, 1, KH, KW], less its zero point) loaded once for
    the outputs of a step."""
    k_w = op.filter_shape.get_values()[3]
    folded = op.folded_input_offset is not None

    def taps(totals: list[SSAValue], c: Index, ky: int, y: Index, lefts: list[Index]) -> list[SSAValue]:
        totals = list(totals)
        for kx in range(k_w):
            weight = level(b, weights, [c, 0, ky, kx])
            for p, left in enumerate(lefts):
                at = [y, b.add(left, kx)]
                x = level(b, levels, at) if folded else domain.input(levels, at)
                totals[p] = domain.multiply_accumulate(totals[p], x, weight)
        return totals

    return taps


def emit_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view: ViewOf) -> None:
    if op.microkernel.data == DEPTHWISE_MICROKERNEL:
        depthwise_convolution(b, domain, op, view, portable_window_row_taps)
    else:
        emit_matrix_product(b, domain, op, view)


emit_fully_connected = emit_matrix_product
