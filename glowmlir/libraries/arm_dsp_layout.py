"""The data layout of the Arm DSP-extension int8 convolution (`lowering.arm_dsp`).

Along a row of the input, one word load gives the int16 *input pairs* (i, i + 2) and
(i + 1, i + 3) of four adjacent columns (`SXTB16`, `SXTB16 ror #8`). A *tile* of
`TILE_PIXELS` adjacent outputs of one output row reads the input columns under its windows
as such pairs (`PairTiling`); the filter is stored as the int16 *weight pairs* the tiling
multiplies them with (`pack_filter`). Both the selection pass, which packs the filter, and
the kernel, which reads it, take the layout from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

TILE_PIXELS = 2
"""Adjacent outputs of a row computed together by the DSP convolution."""

CHANNEL_BLOCK = 2
"""Output channels computed together (when the channels of a group divide by it)."""


@dataclass(frozen=True)
class PairTiling:
    """How a tile of `pixels` adjacent outputs reads one kernel row as int16 pairs.

    Input byte b is column `first + b` of the input row, where `first` is the tile's
    first input column. `words` words are loaded, at bytes 0, 2, 4, ...; input pair i is
    the bytes (i, i + 2): the low pair of word i // 2 if i is even, else its high pair.
    `weight_words` are the distinct weight pairs, each (tap of the low half, tap of the
    high half), None for a zero weight; `products[p]` lists (input pair, weight word) of
    output p of the tile.
    """

    words: int
    weight_words: tuple[tuple[int | None, int | None], ...]
    products: tuple[tuple[tuple[int, int], ...], ...]

    @property
    def bytes_read(self) -> int:
        """Input columns the tile's word loads span (its last one is `first + bytes_read - 1`)."""
        return 2 * self.words + 2

    def tap_position(self, tap: int) -> tuple[int, int]:
        """(weight word, half) holding the weight of `tap`."""
        for index, word in enumerate(self.weight_words):
            if tap in word:
                return index, word.index(tap)
        raise AssertionError(f"tap {tap} is not in the tiling")


@cache
def pair_tiling(width: int, stride: int, dilation: int, pixels: int = TILE_PIXELS) -> PairTiling:
    """The tiling of a kernel row of `width` taps (stride, dilation along the row)."""
    span = (pixels - 1) * stride + (width - 1) * dilation  # the last input byte a tile needs
    words = max(1, -(-(span - 1) // 2))  # word j holds bytes 2j .. 2j + 3: 2 * words + 1 >= span
    last_pair = 2 * words - 1
    weight_words: dict[tuple[int | None, int | None], int] = {}
    products = []
    for p in range(pixels):
        taps = {p * stride + k * dilation: k for k in range(width)}
        waiting = sorted(taps)
        chosen = []
        while waiting:
            column = waiting.pop(0)
            if column <= last_pair and column + 2 in waiting:
                waiting.remove(column + 2)
                pair, word = column, (taps[column], taps[column + 2])
            elif column <= last_pair:
                pair, word = column, (taps[column], None)
            else:  # beyond the last pair's first byte: the high half of the pair two columns back
                pair, word = column - 2, (None, taps[column])
            chosen.append((pair, weight_words.setdefault(word, len(weight_words))))
        products.append(tuple(chosen))
    return PairTiling(words, tuple(weight_words), tuple(products))


def convolution_tiling(strides: Sequence[int], dilations: Sequence[int], filter_shape: Sequence[int]) -> PairTiling:
    return pair_tiling(filter_shape[3], strides[1], dilations[1])


ROW_PAIRS, CHANNEL_PAIRS = "row pairs", "channel pairs"


def packing(filter_shape: Sequence[int], pads: Sequence[int], group: int) -> str | None:
    """How a convolution's filter is packed: ROW_PAIRS along a kernel row at least two taps
    wide; CHANNEL_PAIRS along the input channels of an unpadded, ungrouped 1x1 convolution
    (pointwise: nothing to pair along a row); None: the generic kernel."""
    if filter_shape[3] >= 2:
        return ROW_PAIRS
    if filter_shape[2] == 1 and group == 1 and not any(pads):
        return CHANNEL_PAIRS
    return None


def channel_block(out_channels: int, group: int) -> int:
    return CHANNEL_BLOCK if (out_channels // group) % CHANNEL_BLOCK == 0 else 1


def pack_filter(levels: np.ndarray, weight_offset: int, strides: Sequence[int], dilations: Sequence[int],
                pads: Sequence[int], group: int) -> np.ndarray:
    """An OIHW int8 filter as int16 weight pairs, zero point subtracted, in the order the
    kernel reads them: ROW_PAIRS [O / block, C / group, KH, block, weight words, 2] (the
    weight words of the row's `PairTiling`), CHANNEL_PAIRS [O / block, ceil(C / 2), block, 2]
    (channels 2i and 2i + 1; an odd last channel paired with a zero)."""
    out_c, group_c, k_h, _ = levels.shape
    block = channel_block(out_c, group)
    centred = levels.astype(np.int16) - np.int16(weight_offset)
    if packing(levels.shape, pads, group) == CHANNEL_PAIRS:
        padded = np.zeros((out_c, 2 * -(-group_c // 2)), np.int16)
        padded[:, :group_c] = centred.reshape(out_c, group_c)
        return padded.reshape(out_c // block, block, -1, 2).transpose(0, 2, 1, 3).copy()
    tiling = convolution_tiling(strides, dilations, levels.shape)
    packed = np.zeros((out_c // block, group_c, k_h, block, len(tiling.weight_words), 2), np.int16)
    blocked = centred.reshape(out_c // block, block, group_c, k_h, -1).transpose(0, 2, 3, 1, 4)
    for index, word in enumerate(tiling.weight_words):
        for half, tap in enumerate(word):
            if tap is not None:
                packed[..., index, half] = blocked[..., tap]
    return packed


def packed_filter_shape(op) -> tuple[int, ...]:
    """The packed filter's shape for a `glowll.convolution` with `filter_shape` (see `pack_filter`)."""
    filter_shape = op.filter_shape.get_values()
    out_c, group_c, k_h, _ = filter_shape
    group = op.group.value.data
    block = channel_block(out_c, group)
    if packing(filter_shape, op.pads.get_values(), group) == CHANNEL_PAIRS:
        return (out_c // block, -(-group_c // 2), block, 2)
    tiling = convolution_tiling(op.strides.get_values(), op.dilations.get_values(), filter_shape)
    return (out_c // block, group_c, k_h, block, len(tiling.weight_words), 2)
