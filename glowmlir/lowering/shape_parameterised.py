"""Int8 kernels whose shapes are data: one matrix product for pointwise convolutions and FullyConnected.

A kernel compiled for one layer holds its shapes as constants (loop bounds, strides), so
layers of different shapes each get their own, even in a size-first build where their
quantization numbers are data (`glowll-quantization-records`). The matrix product here
reads its shapes too from the layer's record, after the `KernelParameters` words
(`libraries.shape_record.MatrixShape`), so one kernel serves every int8 1x1 convolution (stride 1, unpadded,
ungrouped, unpooled, batch 1) and FullyConnected whose arithmetic is alike (the same
numbers zero, the same requantization kind):

    dest[o, p] = clamp(requantize(bias[o] + sum_c (input[c, p] - x_offset) * (weights[o, c] - w_offset)))

with `o` an output channel, `p` a pixel (a FullyConnected's row) and `c` an input channel,
each of input and dest addressed through two strides of the record: a convolution's input
is [C, pixels] (channel stride = pixels), a FullyConnected's [rows, K] (pixel stride = K).
The weights are [O, C] as both instructions store them. The arithmetic is the layer's
`QuantizedArithmetic`, so the outputs are those of the per-layer kernels, bit for bit.

`glowll-shape-parameterised-kernels` chooses it (`microkernel = "shape-parameterised"`) in
size-first builds where it makes the code smaller (`docs/code-size.md`). The kernel is the
portable one on every core: its inner loop is a multiply-accumulate of two loaded bytes.
"""

from __future__ import annotations

from glowmlir.dialects import glowll
from glowmlir.libraries.shape_record import MICROKERNEL, SHAPE_SLOT, SHAPE_WORDS, MatrixShape
from glowmlir.lowering.kernel_builder import KernelBuilder, View
from glowmlir.lowering.loop_skeletons import ArithmeticDomain, ViewOf

__all__ = ["MICROKERNEL", "emit_convolution", "emit_fully_connected"]


def emit_matrix_product(b: KernelBuilder, domain: ArithmeticDomain,
                        op: glowll.ConvolutionOp | glowll.FullyConnectedOp, view: ViewOf) -> None:
    """The kernel (see the module docstring): shapes and strides loaded from the record, one
    output channel a step of the outer loop (its bias and requantization read once), one
    pixel a step of the middle one, the input channels summed in the inner one."""
    record = view(op.parameters)
    shape = MatrixShape(*(b.as_index(b.load(record, [SHAPE_SLOT + slot])) for slot in range(SHAPE_WORDS)))

    def runtime_view(buffer, strides) -> View:
        contiguous = view(buffer)
        return View(contiguous.base, (0, 0), tuple(strides), 0, contiguous.element_type)

    src = runtime_view(op.input, (shape.input_channel_stride, shape.input_pixel_stride))
    dest = runtime_view(op.dest, (shape.output_channel_stride, shape.output_pixel_stride))
    weights = runtime_view(op.operands[2], (shape.input_channels, 1))
    bias = view(op.bias)
    with b.loop(0, shape.output_channels) as o:
        start = domain.bias(bias, o.index)
        stored = domain.output(o.index, dest.element_type)
        with b.loop(0, shape.pixels) as p:
            with b.loop(0, shape.input_channels, carried=[start]) as c:
                x = domain.input(src, [c.index, p.index])
                c.next(domain.multiply_accumulate(c.carried[0], x, domain.weight(weights, [o.index, c.index]),
                                                  reduction=True))
            b.store(stored(c.results[0]), dest, [o.index, p.index])


emit_convolution = emit_matrix_product
emit_fully_connected = emit_matrix_product
