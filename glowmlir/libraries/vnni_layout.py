"""The data layout of the int8 kernels on AVX-512 VNNI (`lowering.x86_vnni`).

`vpdpbusd` adds to each int32 lane the four products of that lane's four unsigned bytes of
one operand and four signed bytes of the other. The kernels put output channels in the 16
lanes of a zmm register and take the input channels four at a time:

* the filter, OIHW, is stored as the kernel reads it (`pack_filter`): per block of 16 output
  channels, per group of 4 input channels and tap, 64 signed bytes, lane by lane the 4
  weights of the group; its zero point subtracted, channels past the filter's zero;
* the input is unsigned: the kernel stores each int8 level x as the byte u = x ^ 0x80 =
  x + 128 (`x86_vnni.pack_input`, with the padding as the input zero point U = x_offset +
  128), and the weights are the filter's int8 levels w as they are, so with K taps an output
  `sum (x - x_offset)(w - w_offset) = sum u w - U sum w - w_offset sum u + w_offset U K`:
  the second and fourth terms go into the bias at compile time (`folded_bias`), the third,
  a sum over the input window alone, the kernel subtracts per pixel when w_offset is not 0.
  Sums wrap modulo 2^32 as the generic kernel's do, so the outputs are its own, bit for bit.

FullyConnected is the same product over one pixel: its [N, K] weights are packed as a 1x1
filter of K input channels.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MICROKERNEL = "x86-vnni"
LOOKUP_TABLE_MICROKERNEL = "x86-vbmi"
"""An int8 lookup table's: 64 levels at once by `vpermi2b` (AVX-512 VBMI)."""
LANES = 16
"""int32 accumulators in a zmm register: output channels a block computes."""
GROUP = 4
"""Bytes `vpdpbusd` multiplies into one lane: input channels taken together."""
UNSIGNED_SHIFT = 128
"""x ^ 0x80 = x + 128: an int8 level as the unsigned byte `vpdpbusd` takes."""

LARGEST_PACKED_INPUT = 512 * 1024
"""Bytes of the stack copy of a convolution's input (its channels in groups of 4, its
padding written out) above which a convolution keeps the generic int8 kernel."""


def groups(channels: int) -> int:
    return -(-channels // GROUP)


def blocks(channels: int) -> int:
    return -(-channels // LANES)


def columns_in_bytes(filter_shape: Sequence[int], dilations: Sequence[int]) -> bool:
    """A filter of one input channel, over one column wide, its kernel columns one apart:
    four kernel columns take the four bytes of a word as four channels would (the filter
    packed as if OIHW were [O, KW, KH, 1], the input's words holding four adjacent columns:
    DS-CNN's 10x4 stem one `vpdpbusd` a kernel row, not four of one byte each)."""
    return filter_shape[1] == 1 and filter_shape[3] > 1 and dilations[1] == 1


def pack_filter(levels: np.ndarray, dilations: Sequence[int] = (1, 1)) -> np.ndarray:
    """An OIHW int8 filter as [O / 16, C / 4, KH, KW, 16, 4] int8, zero-padded to whole blocks
    and groups (with `columns_in_bytes`, as [O / 16, KW / 4, KH, 1, 16, 4])."""
    if columns_in_bytes(levels.shape, dilations):
        levels = levels.transpose(0, 3, 2, 1)
    out_c, in_c, k_h, k_w = levels.shape
    padded = np.zeros((blocks(out_c) * LANES, groups(in_c) * GROUP, k_h, k_w), np.int8)
    padded[:out_c, :in_c] = levels
    return padded.reshape(blocks(out_c), LANES, groups(in_c), GROUP, k_h, k_w).transpose(0, 2, 4, 5, 1, 3).copy()


def packed_filter_shape(filter_shape: Sequence[int], dilations: Sequence[int] = (1, 1)) -> tuple[int, ...]:
    out_c, in_c, k_h, k_w = filter_shape
    if columns_in_bytes(filter_shape, dilations):
        in_c, k_w = k_w, 1
    return (blocks(out_c), groups(in_c), k_h, k_w, LANES, GROUP)


def folded_bias(bias: np.ndarray, levels: np.ndarray, input_offset: int, weight_offset: int) -> np.ndarray:
    """bias - U * sum w + w_offset * U * K for each output of an OIHW filter (U = x_offset +
    128, K taps an output), as int32 modulo 2^32."""
    shifted_offset = input_offset + UNSIGNED_SHIFT
    rows = levels.reshape(levels.shape[0], -1).astype(np.int64)
    folded = bias.astype(np.int64) - shifted_offset * rows.sum(axis=1) + weight_offset * shifted_offset * rows.shape[1]
    return ((folded + 2**31) % 2**32 - 2**31).astype(np.int32)


def packed_input_bytes(input_shape: Sequence[int], pads: Sequence[int]) -> int:
    """Bytes of the convolution's unsigned input copy: [N, C / 4, H + pads, W + pads, 4]."""
    n, channels, height, width = input_shape
    top, left, bottom, right = pads
    return n * groups(channels) * (height + top + bottom) * (width + left + right) * GROUP
