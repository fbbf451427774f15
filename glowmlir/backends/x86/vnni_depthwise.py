"""An int8 depthwise convolution of a small plane on AVX-512 VNNI and VBMI (`microkernel = "x86-vnni-depthwise"`).

`vpdpbusd` adds four products of unsigned and signed bytes into each int32 lane. Here a lane
is one output pixel and its four bytes four taps of one kernel row: the input bytes those
taps read, gathered by one byte permute (`vpermb` / `vpermt2b`, an LLVM shufflevector of
compile-time indices), times the word of the channel's four weights of that row broadcast.
A 3x3 kernel is three `vpdpbusd` for 16 outputs (the int16 kernel's nine `vpdpwssd`, nine
sign extensions and nine loads), a 5x5 ten.

The plane's outputs, row-major, are cut into vectors of 16 (`vnni_layout.DepthwiseGeometry`):
for each, the taps' input bytes are found at compile time and grouped into windows of 64
consecutive bytes of the channel's input plane, each one load (masked past the plane's end),
made unsigned (x ^ 0x80 = x + 128) once; the bytes of a tap in the padding (or past the
kernel's columns) are the input zero point, unsigned: U = x_offset + 128. So

    sum (w - w_offset)(x - x_offset) = sum s u - U sum s,    s = w - w_offset, u = x + 128,

and the bias holds `bias - U sum s` (`vnni_layout.folded_bias`), exactly, at the borders too.
A level s in [-255, 255] that is no int8 is split into two, part 0 clamped to int8 and part
1 the rest (`vnni_layout.depthwise_filter`): a channel with such levels takes a second
`vpdpbusd` per word (a loop of one trip for it, of none for the others: in a layer of
asymmetric weights the extremes lie in few channels). Sums wrap modulo 2^32 as the generic
kernel's do; the output step is `lowering.requantization.LaneRequantization`'s, so the outputs are the int8
reference's, bit for bit.

Every vector of a plane is code of its own (its permutes are constants), the channels a loop
over it: planes of at most `vnni_layout.MOST_DEPTHWISE_VECTORS` vectors (MobileNetV3's 8 x 8
and 4 x 4, DS-CNN's 25 x 5).
"""

from __future__ import annotations

import functools

from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, VectorType, i8, i32
from xdsl.ir import SSAValue

from glowmlir.backends.x86.layout import GROUP, LANES, UNSIGNED_SHIFT, WINDOW, DepthwiseGeometry
from glowmlir.backends.x86.vnni_kernels import VECTOR, dot_accumulate, tables_in_registers
from glowmlir.dialects import glowll
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import ArithmeticDomain
from glowmlir.lowering.requantization import LaneRequantization
from glowmlir.lowering.vector_columns import load_vector, store_vector

BYTES = VectorType(i8, [WINDOW])


def signed_byte(value: int) -> int:
    return value - 256 if value >= 128 else value


def emit_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view) -> None:
    """Per image and channel, each vector of 16 outputs: its windows loaded, its taps
    permuted out of them into the accumulator (bias first), requantized (a fused table looked up
    by `vpermi2b`: `vnni_kernels.tables_in_registers`) and stored."""
    tables_in_registers(b, domain, op)
    dest, src, packed, bias = view(op.dest), view(op.input), view(op.filter), view(op.bias)
    n_size, channels, height, width = dest.shape
    in_plane = src.shape[2] * src.shape[3]
    plane = height * width
    assert src.strides[2:] == (src.shape[3], 1) and dest.strides[2:] == (width, 1), "planes are contiguous"
    flat_src = src.reshaped((n_size, channels, in_plane), src.strides[:2] + (1,))
    flat_dest = dest.reshaped((n_size, channels, plane), dest.strides[:2] + (1,))
    parts, k_h, row_bytes = packed.shape[1:]
    base = b.offset_pointer(packed.base, packed.offset, packed.element_type)
    words = View(base, (channels, parts, k_h, row_bytes // GROUP),
                 tuple(stride // GROUP for stride in packed.strides[:3]) + (1,), 0, i32)
    geometry = DepthwiseGeometry.of(op)
    vectors = [(first, min(LANES, plane - first), geometry.windows(first, min(LANES, plane - first)))
               for first in range(0, plane, LANES)]
    offset = domain.input_offset  # a record's, read at run time, or the input type's
    padding = (b.int_value(signed_byte(offset + UNSIGNED_SHIFT), BYTES) if isinstance(offset, int)
               else b.splat(b.truncate(b.int_add(offset, UNSIGNED_SHIFT), i8), BYTES))
    flip = b.int_value(-UNSIGNED_SHIFT, BYTES)
    storage = dest.element_type

    with b.loops([n_size, channels]) as (n, c):
        start = b.splat(b.load(bias, [c]), VECTOR)
        step = LaneRequantization(b, domain, VECTOR, *domain.requantization.of(c))
        parts_of_channel = 1
        if parts > 1:  # the rest words' products only for a channel that has some (few do)
            rest = functools.reduce(b.int_or, [b.load(words, [c, 1, ky, quad]) for ky in range(k_h)
                                               for quad in range(row_bytes // GROUP)])
            parts_of_channel = b.add(b.emit(llvm.ZExtOp(b.int_compare("ne", rest, 0), b.index_type)), 1)

        def accumulate(total: SSAValue, operands: list[tuple[SSAValue, int, int]], part: Index) -> SSAValue:
            for unsigned, ky, quad in operands:
                total = dot_accumulate(b, total, b.bitcast(unsigned, VECTOR),
                                       b.splat(b.load(words, [c, part, ky, quad]), VECTOR))
            return total

        for first, count, (windows, padded) in vectors:
            operands = [(padding, ky, quad) for ky, quad in padded]
            for window in windows:
                loaded = None if window.start + WINDOW <= in_plane else \
                    [window.start + k < in_plane for k in range(WINDOW)]
                unsigned = b.int_xor(load_vector(b, flat_src, [n, c, window.start], WINDOW, loaded), flip)
                operands += [(b.emit(llvm.ShuffleVectorOp(unsigned, padding, DenseArrayBase.from_list(i32, taps.order),
                                                          BYTES)), taps.ky, taps.quad) for taps in window.taps]
            total = accumulate(start, operands, 0)
            if parts > 1:
                with b.loop(1, parts_of_channel, carried=[total]) as part:
                    part.next(accumulate(part.carried[0], operands, part.index))
                total = part.results[0]
            stored = None if count == LANES else [lane < count for lane in range(LANES)]
            store_vector(b, step.output(total, storage), flat_dest, [n, c, first], stored)
