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
of two loaded bytes. On a core with the DSP extension (`microkernel =
"shape-parameterised-dsp"`, pointwise convolutions only) `dsp_matrix_product` gathers two
pixels' input channels as int16 pairs and multiplies them by int16 weight pairs laid out at
compile time, two pixels x two output channels a step, with `SMLAD`s.

The depthwise convolution has a kernel of its own (`depthwise_convolution`,
`shape-parameterised-depthwise[-dsp]`): its shape (channels, planes, strides, pads) from
the record (`shape_record.DepthwiseShape`), its kernel size in the code.

On a host with AVX-512 VNNI the matrix product has a form of its own,
`backends.x86.vnni_shape_parameterised` (`x86-vnni-shape-parameterised`), reading the same
record through `record_shape` and `runtime_strided`.
"""

from __future__ import annotations

from xdsl.dialects.builtin import i32
from xdsl.ir import SSAValue

from glowmlir.backends.arm_dsp import instructions as arm_dsp
from glowmlir.backends.arm_dsp import row_kernels
from glowmlir.backends.size_first.record import (
    DEPTHWISE_MICROKERNEL,
    DEPTHWISE_PIXELS,
    DEPTHWISE_PLANE_BYTES,
    DSP_BLOCK,
    DSP_DEPTHWISE_MICROKERNEL,
    DSP_GATHER_BYTES,
    DSP_MAX_CHANNELS,
    DSP_MICROKERNEL,
    DSP_PIXELS,
    OUTPUT_BLOCK,
    PLANE_SLACK,
    window_row,
)
from glowmlir.dialects import glowll
from glowmlir.lowering.int8_sums import level
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import ArithmeticDomain, Row, ViewOf, overlapping_tiles
from glowmlir.lowering.shape_records import (
    DepthwiseShape,
    MatrixShape,
    read_table_by_record,
    record_shape,
    runtime_strided,
)

__all__ = ["emit_convolution", "emit_fully_connected"]


def runtime_views(b: KernelBuilder, op: glowll.ConvolutionOp | glowll.FullyConnectedOp,
                  view: ViewOf) -> tuple[MatrixShape, View, View]:
    """The layer's shape, loaded from its record, and its input and output as [channel, pixel]
    views with the record's strides."""
    shape = record_shape(b, op, view)
    return (shape, runtime_strided(view, op.input, (shape.input_channel_stride, shape.input_pixel_stride)),
            runtime_strided(view, op.dest, (shape.output_channel_stride, shape.output_pixel_stride)))


def emit_matrix_product(b: KernelBuilder, domain: ArithmeticDomain,
                        op: glowll.ConvolutionOp | glowll.FullyConnectedOp, view: ViewOf) -> None:
    """The kernel (see the module docstring): its DSP-extension form (`dsp_matrix_product`), or
    the portable one: two output channels a step of the outer loop (their biases and
    requantization read once; with an odd count the last step takes the last two, computing
    one of them again), one pixel a step of the middle one, the input channels summed in the
    inner one, one a step with multiply-adds, each input loaded once for both channels."""
    if op.microkernel.data == DSP_MICROKERNEL:
        dsp_matrix_product(b, domain, op, view)
        return
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


def dsp_matrix_product(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view: ViewOf) -> None:
    """The DSP-extension form, for a pointwise convolution (pixels adjacent, `DSP_PIXELS` of
    them at least; an even count of input channels), register-blocked as the per-layer
    `arm_dsp.gathered_product.gathered_product`: per run of `DSP_PIXELS` adjacent pixels (the last run ends at
    the last pixel, overlapping the one before when the count is odd), their input channels
    are gathered once onto the stack as int16 pairs (channels 2i, 2i + 1; less the input
    offset unless the bias holds it), a word per pixel side by side; then each block of
    `DSP_BLOCK` output channels (`shape_record.dsp_blocks`, the last overlapping) sums them
    in 2 x `DSP_BLOCK` accumulators, per channel pair one `LDRD` of the pixels' pairs, two of
    the block's weight pairs (`shape_record.pack_dsp_weights`) and eight `SMLAD`s."""
    shape, src, dest = runtime_views(b, op, view)
    read_table_by_record(domain, shape.output_channels)
    bias = view(op.bias)
    pairs = b.div(shape.input_channels, 2)
    x_offset = None if op.folded_input_offset is not None else arm_dsp.offset_pair(b, domain.input_offset)
    packed = view(op.operands[2])  # [blocks, pairs, DSP_BLOCK, 2] int16: a word per weight pair
    weights = View(packed.base, (0, 0, DSP_BLOCK), (b.mul(pairs, DSP_BLOCK), DSP_BLOCK, 1), 0, i32)
    gathered = View.contiguous(b.alloca(DSP_GATHER_BYTES // 4, i32, arm_dsp.STACK_ALIGNMENT),
                               (DSP_MAX_CHANNELS // 2, DSP_PIXELS), element_type=i32)
    with overlapping_tiles(b, shape.pixels, DSP_PIXELS) as (first_pixel, _):
        with b.loop(0, pairs) as i:
            channel = b.mul(i.index, 2)
            words = arm_dsp.pixel_channel_pairs(b, src, [channel, first_pixel], [b.add(channel, 1), first_pixel],
                                                DSP_PIXELS, x_offset)
            for q, word in enumerate(words):
                b.store(word, gathered, [i.index, q])
        with overlapping_tiles(b, shape.output_channels, DSP_BLOCK) as (first, block):
            channels = [b.add(first, j) for j in range(DSP_BLOCK)]
            starts = [domain.bias(bias, o) for o in channels]

            def pair_products(totals: list[SSAValue], i: Index) -> list[SSAValue]:
                """`totals` ([pixel][channel]) plus the products of input channel pair i."""
                inputs = arm_dsp.load_words(b, gathered, [i, 0], DSP_PIXELS)
                weight_words = arm_dsp.load_words(b, weights, [block, i, 0], DSP_BLOCK)
                totals = list(totals)
                for q, word in enumerate(inputs):
                    for j, weight in enumerate(weight_words):
                        totals[q * DSP_BLOCK + j] = arm_dsp.smlad(b, word, weight, totals[q * DSP_BLOCK + j])
                return totals

            with b.loop(0, pairs, carried=starts * DSP_PIXELS) as i:
                i.next(*pair_products(i.carried, i.index))
            outputs = [Row(dest, (o,)) for o in channels]
            row_kernels.store_tile(b, domain, channels, outputs, i.results,
                               [b.add(first_pixel, q) for q in range(DSP_PIXELS)])


def depthwise_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view: ViewOf) -> None:
    """The depthwise kernel (`shape-parameterised-depthwise[-dsp]`), its shape from the record
    (`shape_record.DepthwiseShape`), its kernel size in the code. A stack plane of the
    padded input size is filled with the input zero point once; per channel the input plane
    is copied into its interior, so every tap of every output lies in the plane (a tap in
    the padding adds what the folded bias takes off, or, not folded, its level less the
    offset is 0). Per output row, `DEPTHWISE_PIXELS` adjacent outputs a step (the row's last
    step ends at its last output, overlapping the one before when the count is odd), each
    weight (int16, less its zero point) loaded once for both. Portable: a multiply-add a
    tap. On the DSP extension: a window row as words of four input bytes from its first
    column (`shape_record.window_row`), each split into the pairs (0, 2) and (1, 3) by
    `SXTB16`, times the weight words by `SMLAD` (a byte past the row's last tap times a
    weight 0: the plane has `PLANE_SLACK` bytes of the zero point past its end)."""
    shape = record_shape(b, op, view, DepthwiseShape)
    read_table_by_record(domain, shape.channels)
    k_h, k_w = op.filter_shape.get_values()[2:]
    plane_size = b.mul(shape.height, shape.width)
    src = runtime_strided(view, op.input, (plane_size, shape.width, 1))
    dest = runtime_strided(view, op.dest, (b.mul(shape.out_height, shape.out_width), shape.out_width, 1))
    weights, bias = view(op.filter), view(op.bias)  # [C, 1, KH, KW] int16, or the DSP form's [C, KH, words, 2]
    words = b.ceil_div(b.add(b.mul(shape.padded_height, shape.padded_width), PLANE_SLACK), 4)
    plane = View.contiguous(b.alloca(DEPTHWISE_PLANE_BYTES // 4, i32, arm_dsp.STACK_ALIGNMENT),
                            (DEPTHWISE_PLANE_BYTES // 4,), element_type=i32)
    padding = b.int_mul(b.int_and(b.int_value(domain.input_offset), 0xFF), 0x01010101)
    with b.loop(0, words) as i:
        b.store(padding, plane, [i.index])
    levels = View(plane.base, (0, 0), (shape.padded_width, 1), 0, src.element_type)  # [padded rows, columns]
    folded = op.folded_input_offset is not None
    dsp = op.microkernel.data == DSP_DEPTHWISE_MICROKERNEL
    tiling = window_row(k_w)
    x_offset = None if folded else arm_dsp.offset_pair(b, domain.input_offset)

    def window_row_taps(totals: list[SSAValue], c: Index, ky: int, y: Index, lefts: list[Index]) -> list[SSAValue]:
        """`totals` plus the taps of window row `ky` (plane row y) of the outputs whose windows
        start at columns `lefts`."""
        totals = list(totals)
        if dsp:
            words = arm_dsp.load_words(b, weights, [c, ky, 0, 0], len(tiling.weight_words))
            for p, left in enumerate(lefts):
                pairs = row_kernels.tile_pairs(b, Row(levels, (y,)), left, tiling, x_offset)
                totals[p], = row_kernels.tile_products(b, tiling, pairs, 1, [totals[p]], lambda j: words)
            return totals
        for kx in range(k_w):
            weight = level(b, weights, [c, 0, ky, kx])
            for p, left in enumerate(lefts):
                at = [y, b.add(left, kx)]
                x = level(b, levels, at) if folded else domain.input(levels, at)
                totals[p] = domain.multiply_accumulate(totals[p], x, weight)
        return totals

    with b.loop(0, shape.channels) as c:
        with b.loop(0, shape.height) as y:
            into = Row(levels, (b.add(y.index, shape.pad_top),))
            copy_bytes(b, Row(src, (c.index, y.index)), into, shape.pad_left, shape.width)
        start, stored = domain.bias(bias, c.index), domain.output(c.index, dest.element_type)
        with b.loop(0, shape.out_height) as y:
            top = b.mul(y.index, shape.stride_y)
            with overlapping_tiles(b, shape.out_width, DEPTHWISE_PIXELS) as (x0, _):
                first = b.mul(x0, shape.stride_x)
                lefts = [first] + [b.add(first, b.mul(p, shape.stride_x)) for p in range(1, DEPTHWISE_PIXELS)]
                totals = [start] * DEPTHWISE_PIXELS
                for ky in range(k_h):
                    totals = window_row_taps(totals, c.index, ky, b.add(top, ky), lefts)
                for p, total in enumerate(totals):
                    b.store(stored(total), dest, [c.index, y.index, b.add(x0, p)])


def copy_bytes(b: KernelBuilder, source: Row, into: Row, first: Index, count: Index) -> None:
    """`count` bytes of `source` into `into` from column `first`: a word at a time (any
    addresses), then the bytes left one by one."""
    words = b.div(count, 4)
    with b.loop(0, words) as i:
        x = b.mul(i.index, 4)
        arm_dsp.store_word(b, arm_dsp.load_word(b, source.view, source.at(x)), into, b.add(first, x))
    with b.loop(b.mul(words, 4), count) as x:
        b.store(b.load(source.view, source.at(x.index)), into.view, into.at(b.add(first, x.index)))


def emit_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view: ViewOf) -> None:
    if op.microkernel.data in (DEPTHWISE_MICROKERNEL, DSP_DEPTHWISE_MICROKERNEL):
        depthwise_convolution(b, domain, op, view)
    else:
        emit_matrix_product(b, domain, op, view)


emit_fully_connected = emit_matrix_product
