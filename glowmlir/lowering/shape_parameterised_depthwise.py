"""The int8 depthwise convolution whose shape is data, the skeleton of its forms.

Its shape (channels, planes, strides, pads) is read from the layer's record
(`shape_records.DepthwiseShape`), its kernel size is in the code, so one kernel serves the
depthwise convolutions of a kernel size (`backends.size_first`, `shape-parameterised-depthwise`).
A stack plane of the padded input size is filled with the input zero point once; per
channel the input plane is copied into its interior, so every tap of every output lies in
the plane (a tap in the padding adds what the folded bias takes off, or, not folded, its
level less the offset is 0). Per output row, `DEPTHWISE_PIXELS` adjacent outputs a step
(the row's last step ends at its last output, overlapping the one before when the count is
odd). How a window row's taps are summed is the form's (`WindowRowTaps`): the portable one
a multiply-add a tap, a backend's its own (its weights laid out for it; a word it reads past
the row's last tap meets a weight 0: the plane has `PLANE_SLACK` bytes of the zero point
past its end).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects.builtin import i32
from xdsl.ir import SSAValue

from glowmlir.dialects import glowll
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import ArithmeticDomain, Row, ViewOf, load_word, overlapping_tiles, store_word
from glowmlir.lowering.shape_records import DepthwiseShape, read_table_by_record, record_shape, runtime_strided

DEPTHWISE_PLANE_BYTES = 4096
"""The stack plane of the depthwise kernel: a layer's padded input plane fits in it, with
`PLANE_SLACK` bytes to spare."""
PLANE_SLACK = 4
"""Bytes after the padded plane (holding the input zero point) that a form's last word of a
window row may read (multiplied by weight 0)."""
DEPTHWISE_PIXELS = 2
"""Adjacent outputs of a row the depthwise kernel computes together (a row has at least this many)."""
PLANE_ALIGNMENT = 8
"""The stack plane's alignment (the Armv7-M stack's: 8 bytes)."""

WindowRowTaps = Callable[[list[SSAValue], Index, int, Index, list[Index]], list[SSAValue]]
"""(totals, channel c, window row ky, plane row y, the columns where the outputs' windows
start) -> `totals` plus the taps of window row `ky` of those outputs."""

TapsOf = Callable[[KernelBuilder, ArithmeticDomain, glowll.ConvolutionOp, View, View], WindowRowTaps]
"""A form's window rows: (b, domain, op, its weights, the plane's levels [padded rows,
columns]) -> its `WindowRowTaps`, called once the plane is filled."""


def depthwise_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view: ViewOf,
                          taps_of: TapsOf) -> None:
    """The kernel (see the module docstring), its window rows summed by `taps_of`'s."""
    shape = record_shape(b, op, view, DepthwiseShape)
    read_table_by_record(domain, shape.channels)
    k_h = op.filter_shape.get_values()[2]
    plane_size = b.mul(shape.height, shape.width)
    src = runtime_strided(view, op.input, (plane_size, shape.width, 1))
    dest = runtime_strided(view, op.dest, (b.mul(shape.out_height, shape.out_width), shape.out_width, 1))
    weights, bias = view(op.filter), view(op.bias)  # a form's layout of them
    words = b.ceil_div(b.add(b.mul(shape.padded_height, shape.padded_width), PLANE_SLACK), 4)
    plane = View.contiguous(b.alloca(DEPTHWISE_PLANE_BYTES // 4, i32, PLANE_ALIGNMENT),
                            (DEPTHWISE_PLANE_BYTES // 4,), element_type=i32)
    padding = b.int_mul(b.int_and(b.int_value(domain.input_offset), 0xFF), 0x01010101)
    with b.loop(0, words) as i:
        b.store(padding, plane, [i.index])
    levels = View(plane.base, (0, 0), (shape.padded_width, 1), 0, src.element_type)  # [padded rows, columns]
    window_row_taps = taps_of(b, domain, op, weights, levels)

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
        store_word(b, load_word(b, source.view, source.at(x)), into, b.add(first, x))
    with b.loop(b.mul(words, 4), count) as x:
        b.store(b.load(source.view, source.at(x.index)), into.view, into.at(b.add(first, x.index)))
