"""The VNNI matrix product whose shapes are data (`microkernel = "x86-vnni-shape-parameterised"`).

`backends.x86.vnni_kernels` compiles a kernel per layer: its loop bounds and strides are constants,
so the MobileNetV3-style net's ten pointwise convolutions of ten shapes were ten kernels of
1.3-2.3 KB each. This kernel reads the shape from the layer's record
(`lowering.shape_records.MatrixShape`, after the quantization numbers), as the Cortex-M
matrix product does (`backends.size_first.kernels`), so one kernel serves the layers whose
arithmetic is alike (`glowll-shape-parameterised-kernels{vnni=true}` groups them). Its steps
are `x86_vnni`'s, on views through the record's strides, so the outputs are theirs bit for
bit:

* a pointwise convolution of at least 16 pixels (`x86_vnni.pixels_in_lanes`): its input
  packed once into a stack buffer of words of four channels' unsigned bytes, [C / 4, pixels]
  (`x86_vnni.pack_pixels`; the buffer's size is the record's, allocated when the kernel
  starts), then per block of 16 output channels `x86_vnni.channel_rows`' tiles of 16 pixels
  in the lanes over one row of all the pixels. The blocks of 16 are a loop; a last block of
  fewer channels (`O % 16` of them, a compile-time number: the pass groups layers by it) is
  code of its own, as in the per-layer kernel;
* a FullyConnected, or a pointwise convolution of one pixel (squeeze-excitation's): the
  per-layer kernel's FullyConnected steps (`x86_vnni.emit_fully_connected`) over the
  record's rows, depth and outputs, the last block of outputs masked at run time.

The input channels (a FullyConnected's depth) are a multiple of 4, so no word holds a
padding byte.
"""

from __future__ import annotations

from xdsl.dialects.builtin import i32

from glowmlir.backends.x86 import vnni_kernels as x86_vnni
from glowmlir.backends.x86.layout import GROUP, LANES
from glowmlir.dialects import glow, glowll
from glowmlir.lowering.kernel_builder import KernelBuilder, View
from glowmlir.lowering.loop_skeletons import ArithmeticDomain, ViewOf, overlapping_tiles, row
from glowmlir.lowering.shape_records import MatrixShape, read_table_by_record, record_shape, runtime_strided

__all__ = ["emit_convolution", "emit_fully_connected"]


def record_shape_of(b: KernelBuilder, domain: ArithmeticDomain, op, view: ViewOf) -> MatrixShape:
    """The layer's shape from its record; a per-channel requantization table [2, O] is then
    read through the record's O too."""
    shape = record_shape(b, op, view)
    read_table_by_record(domain, shape.output_channels)
    return shape


def packed_filter_words(b: KernelBuilder, view: ViewOf, op, groups) -> View:
    """The packed filter [O / 16, C / 4, 1, 1, 16, 4] int8 as i32 words [O / 16, C / 4, 1, 1, 16]
    through run-time strides (`groups` = C / 4)."""
    return runtime_strided(view, op.operands[2], (b.mul(groups, LANES), LANES, LANES, LANES, 1), i32)


def emit_pixel_rows(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view: ViewOf) -> None:
    """A pointwise convolution of at least 16 pixels (see the module docstring), `optsize` as
    the per-layer kernels are."""
    b.optimize_for_size = True
    shape = record_shape_of(b, domain, op, view)
    pixels, groups = shape.pixels, b.div(shape.input_channels, GROUP)
    src = runtime_strided(view, op.input, (0, shape.input_channel_stride, 0, shape.input_pixel_stride))
    words = View(b.alloca(b.mul(groups, pixels), i32), (1, groups, 1, pixels), (0, pixels, 0, 1), 0, i32)
    with b.loop(0, groups) as g, overlapping_tiles(b, pixels, x86_vnni.PACKED_PIXELS) as (x0, _):
        x86_vnni.pack_pixels(b, src, words, [0, g.index, 0, x0])
    dest = runtime_strided(view, op.dest, (0, shape.output_channel_stride, 0, shape.output_pixel_stride))
    filter_words = packed_filter_words(b, view, op, groups)
    bias = view(op.bias)

    def block(first, count: int) -> None:
        channels = [b.add(first, j) for j in range(count)]
        x86_vnni.channel_rows(b, domain, op, src, None, bias, 0, channels, 0, [row(dest, 0, o, 0) for o in channels],
                              pixels, words=words, sums=None, weight_offset=domain.weight_offset, k_w=1,
                              summed=shape.input_channels, filter_words=filter_words,
                              output_row=lambda j: row(dest, 0, b.add(first, j), 0))

    whole = b.div(shape.output_channels, LANES)
    with b.loop(0, whole) as o_block:
        block(b.mul(o_block.index, LANES), LANES)
    rest = glow.shape_of(op.dest)[1] % LANES
    if rest:
        block(b.mul(whole, LANES), rest)


def emit_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view: ViewOf) -> None:
    _, _, height, width = glow.shape_of(op.input)
    if height * width == 1:
        emit_fully_connected(b, domain, op, view)
    else:
        emit_pixel_rows(b, domain, op, view)


def emit_fully_connected(b: KernelBuilder, domain: ArithmeticDomain,
                         op: glowll.FullyConnectedOp | glowll.ConvolutionOp, view: ViewOf) -> None:
    """A FullyConnected, or a pointwise convolution of one pixel, as [rows, depth] x [depth,
    outputs] (see the module docstring)."""
    shape = record_shape_of(b, domain, op, view)
    src = runtime_strided(view, op.input, (shape.input_pixel_stride, shape.input_channel_stride))
    dest = runtime_strided(view, op.dest, (shape.output_pixel_stride, shape.output_channel_stride))
    groups = b.div(shape.input_channels, GROUP)
    x86_vnni.fully_connected_rows(b, domain, op, src, dest, packed_filter_words(b, view, op, groups), view(op.bias),
                                  shape.pixels, shape.input_channels, shape.output_channels)
