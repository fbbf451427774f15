"""The Arm DSP extension's instructions as the kernels use them, and the loads and packings that
make their int16 pairs (of int8 or int16 data)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import i8, i16, i32, i64
from xdsl.ir import SSAValue

from glowmlir.lowering.int8_sums import level
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import load_word as load_word
from glowmlir.lowering.loop_skeletons import store_word as store_word

STACK_ALIGNMENT = 8
"""The kernels' stack buffers are aligned as the Armv7-M stack is (8 bytes; `LDRD` needs 4):
aligned to 64, LLVM realigned the stack and kept a frame pointer, one register fewer for
accumulators."""


def intrinsic(b: KernelBuilder, name: str, *args: SSAValue) -> SSAValue:
    return b.emit(llvm.CallIntrinsicOp(f"llvm.arm.{name}", list(args), [i32]))


def smlad(b: KernelBuilder, a: SSAValue, c: SSAValue, total: SSAValue) -> SSAValue:
    """total + a.lo * c.lo + a.hi * c.hi: `SMLAD` into an i32 total, `SMLALD` into an i64 one
    (the int64 sums of an int16 layer with `wide_accumulators`)."""
    if total.type == i64:
        return b.emit(llvm.CallIntrinsicOp("llvm.arm.smlald", [a, c, total], [i64]))
    return intrinsic(b, "smlad", a, c, total)


def input_pairs(b: KernelBuilder, word: SSAValue, offset_pair: SSAValue | None) -> tuple[SSAValue, SSAValue]:
    """The pairs (byte 0, byte 2) and (byte 1, byte 3) of a word of four int8, sign-extended to
    int16, plus `offset_pair` (both halves) when given."""
    low = intrinsic(b, "sxtb16", word)
    rotated = b.emit(llvm.CallIntrinsicOp("llvm.fshr.i32", [word, word, b.integer(8)], [i32]))
    high = intrinsic(b, "sxtb16", rotated)
    if offset_pair is None:
        return low, high
    return intrinsic(b, "sadd16", low, offset_pair), intrinsic(b, "sadd16", high, offset_pair)


def pairs_of_four(b: KernelBuilder, view: View, indices: Sequence[Index],
                  offset_pair: SSAValue | None) -> tuple[SSAValue, SSAValue]:
    """The pairs (x0, x2) and (x1, x3) of the four elements of `view` from `indices` (along its
    last dimension), plus `offset_pair` when given: of int8 data one word split by `SXTB16`s
    (`input_pairs`), of int16 data two words whose low halves and whose high halves are
    packed together (`PKHBT`, `PKHTB`). Either way the same pairs meet the same weight words."""
    if view.element_type != i16:
        return input_pairs(b, load_word(b, view, indices), offset_pair)
    first = load_word(b, view, indices)
    second = load_word(b, view, [*indices[:-1], b.add(indices[-1], 2)])
    pairs = pack_halves(b, first, second), high_halves(b, first, second)
    if offset_pair is None:
        return pairs
    return tuple(intrinsic(b, "sadd16", pair, offset_pair) for pair in pairs)


def offset_pair(b: KernelBuilder, zero_point: int | SSAValue) -> SSAValue | None:
    """The word whose two int16 halves are -zero_point (None for a zero point of 0; computed
    at run time for one the kernel reads from its layer's record)."""
    if isinstance(zero_point, SSAValue):
        return b.int_mul(b.int_and(b.int_sub(0, zero_point), 0xFFFF), 0x10001)
    if zero_point == 0:
        return None
    half = -zero_point & 0xFFFF
    return b.integer(np.int32(np.uint32(half * 0x10001)).item())


def load_words(b: KernelBuilder, view: View, indices: Sequence[Index], count: int) -> list[SSAValue]:
    """`count` consecutive i32 words from the 4-byte aligned address of `view[indices]`, two
    at a time as one i64 (one LDRD)."""
    address = b.element(view, indices)
    words = []
    for first in range(0, count, 2):
        at = b.offset_pointer(address, first, i32)
        if first + 1 == count:
            words.append(b.emit(llvm.LoadOp(at, i32, alignment=4)))
            break
        double = b.emit(llvm.LoadOp(at, i64, alignment=4))
        words += [b.truncate(double, i32), b.truncate(b.shift_right_logical(double, 32), i32)]
    return words


def weight_pairs(b: KernelBuilder, packed: View, indices: Sequence[Index], block: int) -> list[SSAValue]:
    """The weight pairs of a block of `block` output channels at `packed[indices]` of a
    gathered product's filter: of int16 pairs, `block` words (one `LDRD` for two); of int8
    words (`layout.int8_filter_words`, a block of two channels), one word widened by
    `SXTB16` (channel 0's pair) and `SXTB16 ror #8` (channel 1's)."""
    if packed.element_type == i8:
        return list(input_pairs(b, load_word(b, packed, indices, aligned=True), None))
    return load_words(b, packed, indices, block)


def after(b: KernelBuilder, values: Sequence[SSAValue]) -> None:
    """An empty inline asm that reads `values` and may touch memory (no instruction): the loads
    that follow stay after the instructions computing them. The straight gathered products
    take each pixel pair's words after the last one's products so: on the Cortex-M4 and M33,
    LLVM's scheduler loaded both pixel pairs' words first and spilled accumulators (DS-CNN's
    pointwise layers on the M4: 607k instructions each so, 430k in order; on the M7 432k -> 428k)."""
    b.emit(llvm.InlineAsmOp("", ",".join(["r"] * len(values) + ["~{memory}"]), list(values), [],
                            has_side_effects=True))


def pack_halves_of(b: KernelBuilder, low: SSAValue, high: SSAValue) -> SSAValue:
    """The low half of `low` and the high half of `high` (one `PKHBT`)."""
    return b.int_or(b.int_and(low, 0xFFFF), b.int_and(high, -0x10000))


def pixel_channel_pairs(b: KernelBuilder, src: View, at_first: list[Index], at_second: list[Index], pixels: int,
                        x_offset: SSAValue | None) -> list[SSAValue]:
    """The pairs (first channel, second channel) of `pixels` (4, 2 or 1) adjacent pixels from
    `src[at_first]` and `src[at_second]`, less `x_offset` (both halves) when given. Of int16
    data, each word of two pixels of both channels gives their two pairs (`PKHBT`, `PKHTB`)."""
    if src.element_type == i16 and pixels > 1:
        pairs = []
        for x in range(0, pixels, 2):
            first, second = (load_word(b, src, [*at[:-1], b.add(at[-1], x)]) for at in (at_first, at_second))
            pairs += [pack_halves(b, first, second), high_halves(b, first, second)]
    elif pixels == 4:
        pairs = channel_pairs(b, load_word(b, src, at_first), load_word(b, src, at_second))
    elif pixels == 2:  # two halfwords side by side: bytes p0 p1 q0 q1
        side_by_side = b.int_or(_halfword(b, src, at_first), b.shift_left(_halfword(b, src, at_second), 16))
        pairs = list(input_pairs(b, side_by_side, None))
    else:
        pairs = [pack_halves(b, level(b, src, at_first), level(b, src, at_second))]
    if x_offset is not None:
        pairs = [intrinsic(b, "sadd16", pair, x_offset) for pair in pairs]
    return pairs


def channel_pairs(b: KernelBuilder, first: SSAValue, second: SSAValue) -> list[SSAValue]:
    """Four pixels of two channels (a word of each) as the pairs (first[p], second[p]), p = 0..3:
    the words' low halves side by side (PKHBT), their high halves (PKHTB), each split in two
    pairs by SXTB16."""
    low = pack_halves(b, first, second)  # bytes p0 p1 q0 q1
    high = high_halves(b, first, second)  # p2 p3 q2 q3
    (p0, p1), (p2, p3) = input_pairs(b, low, None), input_pairs(b, high, None)
    return [p0, p1, p2, p3]


def pack_halves(b: KernelBuilder, low: SSAValue, high: SSAValue) -> SSAValue:
    """The pair (low, high) of two int16 values held in i32s (`PKHBT`)."""
    return b.int_or(b.int_and(low, 0xFFFF), b.shift_left(high, 16))


def high_halves(b: KernelBuilder, low: SSAValue, high: SSAValue) -> SSAValue:
    """The pair of the high halves of two words: (low.hi, high.hi) (`PKHTB`)."""
    return b.int_or(b.int_and(high, -0x10000), b.shift_right_logical(low, 16))


def _halfword(b: KernelBuilder, view: View, indices: Sequence[Index]) -> SSAValue:
    """The two bytes at `view[indices]` as the low half of an i32 (high half zero)."""
    return b.emit(llvm.ZExtOp(b.emit(llvm.LoadOp(b.element(view, indices), i16, alignment=1)), i32))


def element_bytes(view: View) -> int:
    """The bytes of one element of an int8 or int16 view."""
    return view.element_type.width.data // 8
