"""Stack copies of input planes padded with the input zero point (the depthwise kernel's planes,
a WINDOW_PAIRS convolution's `PaddedInput`)."""

from __future__ import annotations

import dataclasses

import numpy as np
from xdsl.dialects.builtin import i8, i32
from xdsl.ir import SSAValue

from glowmlir.backends.arm_dsp.instructions import STACK_ALIGNMENT, element_bytes, load_word, store_word
from glowmlir.dialects import glowll
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import (
    ArithmeticDomain,
    Row,
)


def zero_point_plane(b: KernelBuilder, zero_point: int | SSAValue, words: int, element=i8) -> tuple[View, SSAValue]:
    """A stack buffer of `words` words, every `element` (int8 or int16) `zero_point` (stored
    once here: copies into it write only the input's columns), and the word of them."""
    mask, copies = (0xFF, 0x01010101) if element == i8 else (0xFFFF, 0x10001)
    padding = b.int_mul(b.int_and(b.int_value(zero_point), mask), copies)
    plane = View.contiguous(b.alloca(words, i32, STACK_ALIGNMENT), (words,), element_type=i32)
    with b.loop(0, words) as i:
        b.store(padding, plane, [i.index])
    return plane, padding


def copy_row(b: KernelBuilder, source: Row, into: Row, width: int) -> None:
    """`width` elements of `source` into `into`, a word at a time (any addresses)."""
    per_word = 4 // element_bytes(source.view)
    with b.loop(0, width // per_word) as i:
        x = b.mul(i.index, per_word)
        store_word(b, load_word(b, source.view, source.at(x)), into, x)
    for x in range(width // per_word * per_word, width):
        b.store(b.load(source.view, source.at(x)), into.view, into.at(x))


PADDED_INPUT_BYTES = 2048
"""A WINDOW_PAIRS convolution whose padded input takes at most this many bytes copies it per
image onto the stack, its padding the input zero point: then every window lies inside it and
loads its taps at constant offsets, none clamped or selected (DS-CNN's 10x4 stride-2 stem,
whose borders take 65 of its 125 windows, on the M7: 332k -> 310k instructions; 296k with its
rows of four taps gathered as words, `window_row_order`)."""


@dataclasses.dataclass
class PaddedInput:
    """A copy of an input image, [C, pad top + H + pad bottom, pad left + W + pad right] of its
    elements, whose padding holds the input zero point (`copy(n)` writes image n's levels)."""

    b: KernelBuilder
    src: View
    view: View
    pads: tuple[int, int]

    def copy(self, n: Index) -> None:
        _, channels, height, width = self.src.shape
        pt, pl = self.pads
        columns = self.view.reshaped(self.view.shape, self.view.strides, pl)  # the input's columns
        with self.b.loops([channels, height]) as (c, y):
            copy_row(self.b, Row(self.src, (n, c, y)), Row(columns, (c, self.b.add(y, pt))), width)


def padded_input(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp,
                 src: View) -> PaddedInput | None:
    """The `PaddedInput` of a padded convolution whose copy fits `PADDED_INPUT_BYTES`, else None."""
    pt, pl, pb, pr = op.pads.get_values()
    _, channels, height, width = src.shape
    shape = (channels, pt + height + pb, pl + width + pr)
    if not any((pt, pl, pb, pr)) or int(np.prod(shape)) * element_bytes(src) > PADDED_INPUT_BYTES:
        return None
    words = -(-int(np.prod(shape)) * element_bytes(src) // 4)
    plane, _ = zero_point_plane(b, domain.input_offset, words, src.element_type)
    view = View.contiguous(plane.base, shape, element_type=src.element_type)
    return PaddedInput(b, src, view, (pt, pl))
