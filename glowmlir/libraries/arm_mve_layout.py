"""The data layout of the Helium (MVE) int8 convolution (`lowering.arm_mve`).

A Helium Q register holds four int32 lanes. The kernel keeps `ACCUMULATORS` of them: a tile
of `columns` adjacent outputs of a row (`LANES` per vector) times `block` output channels,
with `block * columns / LANES = ACCUMULATORS`. Per tap it loads each vector of input columns
once (`VLDRB.S32`, four int8 widened to int32) and multiplies it by each channel's weight, a
scalar broadcast over the lanes (`VMLA.I32 q, q, r`): four output channels take 16 products
for one vector load, four scalar weight loads and four multiply-accumulates. Lanes are
adjacent output columns, so the convolution must step one input column per output column
(`takes_helium`). The filter is stored as the kernel reads it (`pack_filter`): per block of
output channels, per input channel and tap, the block's weights side by side, as int16 with
the weight zero point subtracted.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

LANES = 4
"""int32 lanes of a Q register: output columns one vector holds."""
ACCUMULATORS = 4
"""Q registers of accumulators a tile keeps (MVE has eight: the rest hold the input)."""
CHANNEL_BLOCKS = (4, 2, 1)
"""Output channels a tile computes together: the first that divides a group's channels."""


def takes_helium(strides: Sequence[int]) -> bool:
    """A convolution whose output columns are adjacent input columns (stride 1 along the row):
    any kernel size, padding, dilation and grouping (columns whose taps reach into the
    padding, and a row's last columns, are vectors with predicated lanes)."""
    return strides[1] == 1


def channel_block(out_channels: int, group: int) -> int:
    return next(size for size in CHANNEL_BLOCKS if (out_channels // group) % size == 0)


def tile_vectors(block: int) -> int:
    """Vectors of `LANES` output columns a tile of `block` channels computes."""
    return ACCUMULATORS // block


def interior_columns(in_width: int, width: int, kernel: int, dilation: int, pad_left: int) -> tuple[int, int]:
    """[first, end) of the output columns (stride 1) whose taps all lie inside the input row."""
    first = min(pad_left, width)
    end = min(width, in_width - (kernel - 1) * dilation + pad_left)
    return first, max(first, end)


def pack_filter(levels: np.ndarray, weight_offset: int, group: int) -> np.ndarray:
    """An OIHW int8 filter as the Helium kernel reads it: int16 [O / block, C / group, KH, KW,
    block], zero point subtracted (`block` = `channel_block`)."""
    out_c, group_c, k_h, k_w = levels.shape
    block = channel_block(out_c, group)
    centred = levels.astype(np.int16) - np.int16(weight_offset)
    return centred.reshape(out_c // block, block, group_c, k_h, k_w).transpose(0, 2, 3, 4, 1).copy()


def packed_filter_shape(filter_shape: Sequence[int], group: int) -> tuple[int, ...]:
    out_c, group_c, k_h, k_w = filter_shape
    block = channel_block(out_c, group)
    return (out_c // block, group_c, k_h, k_w, block)
