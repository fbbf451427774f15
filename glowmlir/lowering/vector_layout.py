"""The data layout of the convolution on vectors of output columns (`lowering.vector_columns`).

A tile holds `accumulators` vector registers: `block` output channels times `vectors`
vectors of adjacent output columns of a row. Per tap it loads each vector of input columns
once and multiplies it by each channel's weight broadcast over the lanes, so the filter is
stored as the tile reads it (`pack_filter`): per block of output channels, per input channel
and tap, the block's weights side by side. Lanes are adjacent output columns, so the
convolution must step one input column per output column (`takes_columns`).

Helium (int8 on the Cortex-M55) keeps 4 accumulators of 4 int32 lanes (`backends.arm_mve.layout.TILE`), its
filter int16 with the weight zero point subtracted; float on a host keeps as many
accumulators as its vector registers allow (`VectorTile.of_features`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import f32, i16
from xdsl.utils.exceptions import VerifyException

from glowmlir.backends import microkernel
from glowmlir.dialects import glow, glowll
from glowmlir.dialects.quant import storage_type
from glowmlir.target import VectorTile

COLUMNS = "vector-columns"
"""The float microkernel over vectors of a row's output columns."""
PLANES = "vector-planes"
"""The float microkernel over vectors of a plane's pixels (a "same"-padded convolution)."""
CHANNELS = "vector-channels"
"""The float microkernel over vectors of output channels (`lowering.vector_channels`)."""
DEPTHWISE = "vector-depthwise"
"""The float microkernel of depthwise convolutions: rows x vectors of one channel's output
columns (`backends.host_vector.depthwise`)."""
INT8_DEPTHWISE = "vector-depthwise-int8"
"""The int8 microkernel of depthwise convolutions on a host, on the same tiles (int32 lanes,
the filter int16 less its zero point: `backends.host_vector.int8_depthwise`)."""
INT8_PLANES = "vector-planes-int8"
"""The int8 microkernel of "same"-padded depthwise convolutions of small planes on a host:
each channel's plane one tile of vectors of its pixels (the vector-planes kernel's, on
int32 lanes: `backends.host_vector.int8_depthwise`)."""

INT8_COLUMNS = "vector-columns-int8"
"""The int8 microkernel of ungrouped convolutions on a host: the float column kernel's
tiles, two kernel columns a `vpmaddwd` (`backends.host_vector.int8_columns`)."""
INT8_IM2COL = "vector-im2col-int8"
"""The int8 microkernel of ungrouped convolutions of few taps (a stem) on a host: a 1x1 over
each output row's im2col pairs (`backends.host_vector.int8_im2col`)."""
INT8_ELEMENTWISE = "vector-elementwise-int8"
"""The int8 Add, Sub and Mul on a host's vector unit: 16 levels a step on int32 lanes
(`lowering.vector_elementwise`)."""
INT8_LOOKUP = "vector-lookup-int8"
"""An int8 lookup table on a host's byte shuffles, a vector of levels a step
(`backends.host_vector.table_lookup`)."""
INT8_QUANTIZE = "vector-quantize-int8"
"""A float to int8 quantize on a host, 32 levels a step (`backends.host_vector.quantize`)."""
INT8_POINTWISE = "vector-pointwise-int8"
"""The int8 microkernel of 1x1 convolutions on a host: vectors of a plane's pixels, two
input channels a `vpmaddwd` (`backends.host_vector.int8_pointwise`)."""

CHANNEL_BLOCKS = (4, 2, 1)
"""Output channels a tile computes together: the first that divides a group's channels."""


def row_lanes(widest: int, width: int) -> int:
    """Lanes for rows of `width` outputs on a unit whose widest vector has `widest` lanes
    (it has the halves too, down to 4): the fewest vector operations per row, the narrower
    vector when equal (fewer masked lanes)."""
    candidates = [lanes for lanes in (16, 8, 4) if lanes <= widest]
    return min(candidates, key=lambda lanes: (-(-width // lanes), lanes))


def channel_is_one_row(filter_shape: Sequence[int], strides: Sequence[int], pads: Sequence[int],
                       pooled: bool) -> bool:
    """An unpooled, unpadded 1x1 convolution of stride 1: the kernel sees each channel's
    pixels as one row."""
    return not pooled and not any(pads) and tuple(filter_shape[2:]) == (1, 1) and tuple(strides) == (1, 1)


def plane_is_one_row(filter_shape: Sequence[int], strides: Sequence[int], pads: Sequence[int],
                     dilations: Sequence[int], pooled: bool) -> bool:
    """An unpooled convolution of stride 1, larger than 1x1, whose padding keeps each plane's
    size ("same"): with each channel's plane seen as one row, a tap is one offset into the
    plane (the vector-planes kernel; lanes whose tap falls in the padding are masked)."""
    k_h, k_w = filter_shape[2:]
    top, left, bottom, right = pads
    return (not pooled and tuple(strides) == (1, 1) and (k_h, k_w) != (1, 1)
            and top + bottom == (k_h - 1) * dilations[0] and left + right == (k_w - 1) * dilations[1])


MOST_PLANE_VECTORS = 1
"""Vectors a vector-planes tile may take: each keeps one run-time lane mask per tap, and a
tile of more vectors keeps more masks than there are mask registers (VGG-19's 3x3s on
56 x 56 planes: 4 vectors x 4 channels 1.12 x onnxruntime's time, 1 x 16 channels 1.06)."""


def plane_block(out_channels: int, group: int, height: int, width: int, lanes: int, accumulators: int) -> int | None:
    """The channel block of a vector-planes tile over planes of height x width: the fewest
    vectors computed per plane (the last tile's unused lanes count), then the fewest loads
    per multiply-accumulate; None when no block of a group's channels fills half a tile, or
    when the planes would compute more lanes than rows do (7x7 on 16 lanes: 4 vectors, 64
    lanes; as rows, 7 vectors of 8, 56 lanes)."""
    per_group = out_channels // group
    count = -(-(height * width) // lanes)
    narrow = row_lanes(lanes, width)
    as_rows = height * -(-width // narrow) * narrow
    choices = []
    for block in (size for size in range(1, accumulators + 1) if per_group % size == 0):
        vectors = min(tile_vectors(block, accumulators), count)
        if vectors <= MOST_PLANE_VECTORS and 2 * block * vectors > accumulators:
            choices.append((-(-count // vectors) * vectors * lanes, 1 / vectors + 1 / block, block))
    best = min(choices, default=None)
    return best[2] if best is not None and best[0] < as_rows else None


def planes_block(filter_shape: Sequence[int], strides: Sequence[int], pads: Sequence[int],
                 dilations: Sequence[int], group: int, height: int, width: int, tile: VectorTile) -> int | None:
    """The channel block of an unpooled float convolution with these outputs if it takes the
    vector-planes kernel on `tile` (masked loads, "same" padding, `plane_block`), else None."""
    if not tile.masked_loads or not plane_is_one_row(filter_shape, strides, pads, dilations, pooled=False):
        return None
    return plane_block(filter_shape[0], group, height, width, tile.lanes, tile.accumulators)


MOST_CHANNEL_PIXELS = 16
"""Pixels a vector-channels tile takes at most (VGG-19's and ResNet-50's 3x3s ran as fast
with 14 or 16 as with 20 or 24, and a row of 28 is two tiles of 14)."""

FEWEST_CHANNEL_PRODUCTS = 8
"""Accumulators below which a vector-channels tile takes a second vector of channels."""

SMALLEST_CHANNEL_REDUCTION = 64
"""Products per output below which a convolution keeps the column kernel: a
vector-channels tile writes its outputs through the stack once, over all its taps (VGG-19's
first 3x3, of 3 channels, 27 products: 0.99 x onnxruntime's time on channels, 0.80 on
columns; ResNet-50's 7x7 stem, 147: 1.02 on channels, 1.31 on columns)."""


def row_width(filter_shape: Sequence[int], strides: Sequence[int], pads: Sequence[int], pooled: bool,
              height: int, width: int) -> int:
    """Outputs a row of the kernels has: a plane's for a 1x1 seen as one row, else `width`."""
    return height * width if channel_is_one_row(filter_shape, strides, pads, pooled) else width


@dataclass(frozen=True)
class ChannelTile:
    """A vector-channels tile: `pixels` output columns times `block` output channels, in
    vectors of `lanes`."""

    lanes: int
    block: int
    pixels: int


def channel_tile(filter_shape: Sequence[int], group: int, width: int, tile: VectorTile) -> ChannelTile | None:
    """The vector-channels tile of an ungrouped float convolution whose rows have `width`
    outputs (`row_width`), or None. Lanes: the widest vector (at most the tile's) whose lanes
    divide the output channels. Pixels: at most `MOST_CHANNEL_PIXELS`, and as many as leave
    registers for a kernel row's weights and a broadcast column, the row cut into tiles of
    equal size (28: 14 + 14, not 16 + 12). One vector of channels, two where a row's tile
    would hold fewer than `FEWEST_CHANNEL_PRODUCTS` accumulators (ResNet-50's 3x3 of stride
    2 onto 7 x 7: 1.19 x onnxruntime's time with one vector, 1.09 with two). A 1x1 takes the
    kernel only where its rows are no multiple of the tile's lanes (on columns, lanes would
    idle: ResNet-50's 7 x 7 planes, 49 pixels in 4 vectors of 16)."""
    out_c, in_c, k_h, k_w = filter_shape
    if (not (tile.masked_loads and tile.registers) or group != 1 or in_c * k_h * k_w < SMALLEST_CHANNEL_REDUCTION
            or ((k_h, k_w) == (1, 1) and width % tile.lanes == 0)):
        return None
    lanes = next((size for size in (16, 8, 4) if size <= tile.lanes and out_c % size == 0), None)
    if lanes is None:
        return None
    choice = None
    for vectors in (1, 2):
        pixels = channel_pixels(width, k_w, tile.registers, vectors)
        if out_c % (vectors * lanes) or pixels < 1:
            break
        choice = ChannelTile(lanes, vectors * lanes, pixels)
        if choice.pixels * vectors >= FEWEST_CHANNEL_PRODUCTS:
            break
    return choice


def channel_pixels(width: int, k_w: int, registers: int, vectors: int = 1) -> int:
    """Pixels a tile with output channels in its lanes takes from rows of `width`: at most
    `MOST_CHANNEL_PIXELS`, and as many as leave `registers` room for a kernel row's weights
    (`vectors` a column) and a broadcast column, the row cut into tiles of equal size (28:
    14 + 14, not 16 + 12); 0 when not one fits."""
    most = min(MOST_CHANNEL_PIXELS, (registers - 2 - vectors * k_w) // vectors)
    return -(-width // -(-width // most)) if most >= 1 else 0


def is_depthwise(filter_shape: Sequence[int], group: int) -> bool:
    """A convolution with one filter per input channel and one output channel per filter
    (group == input channels == output channels)."""
    return filter_shape[1] == 1 and group == filter_shape[0] > 1


@dataclass(frozen=True)
class DepthwiseTile:
    """A vector-depthwise tile: `rows` output rows times `vectors` vectors of `lanes` output
    columns of one channel."""

    lanes: int
    rows: int
    vectors: int


MOST_DEPTHWISE_ROWS = 4
"""Rows a vector-depthwise tile takes at most: MobileNetV2's 17 depthwise layers (AVX-512,
`glow-run -profile=true`, two runs each) took 49.5-49.7 us in tiles of 2 rows, 46.5 of 3,
45.7-45.9 of 4, 45.1-45.6 of 6, 47.1-50.1 of 8 and 50.9-51.0 of 16 (with 16 accumulators
and 9 weights the stride-2 shuffles spill), and the larger tiles are larger code (the
model's LLVM IR 13,759 lines with 4 rows, 18,329 with 16)."""


MOST_INT8_PLANE_VECTORS = 8
"""Vectors of a plane the vector-planes-int8 kernel takes at most: the whole plane is one
tile, so its lane masks are the same for every channel (computed once, not per channel)."""
MOST_INT8_PLANE_TAPS = 9
"""Taps of the largest filter that takes vector-planes-int8: each tap of each vector has its
own lane mask (MobileNetV3-style 5x5 on 4 x 4 planes, 1 vector against 4 rows of 4 lanes:
3.5 us on the depthwise tiles, 5.3 as planes)."""
INT8_PLANE_GAIN = 2
"""How many times fewer vectors than its rows on the depthwise tiles a plane must take for
vector-planes-int8, which loads each tap's input for one vector where the depthwise tile
loads an input row once for the rows it covers: DS-CNN's 3x3 on 25 x 5 planes, 8 vectors of
16 lanes against 25 rows of 8, 7.9 -> 4.3 us a layer (AVX-512); MobileNetV3-style 3x3 on
8 x 8 planes, 4 vectors against 8 rows, 3.2 and 3.3 us; 5x5 on 8 x 8, 3.5 -> 4.4 us."""


def int8_plane_vectors(filter_shape: Sequence[int], strides: Sequence[int], pads: Sequence[int],
                       dilations: Sequence[int], group: int, height: int, width: int, tile: VectorTile) -> int | None:
    """The vectors of `tile.lanes` that one plane of an int8 depthwise convolution takes on
    the vector-planes-int8 kernel ("same"-padded, stride 1, masked loads, at most
    `MOST_INT8_PLANE_TAPS` taps), if at most `MOST_INT8_PLANE_VECTORS` and `INT8_PLANE_GAIN`
    times fewer than its rows take on the depthwise tiles; else None."""
    if (not tile.masked_loads or not is_depthwise(filter_shape, group)
            or filter_shape[2] * filter_shape[3] > MOST_INT8_PLANE_TAPS
            or not plane_is_one_row(filter_shape, strides, pads, dilations, pooled=False)):
        return None
    vectors = -(-(height * width) // tile.lanes)
    as_rows = height * -(-width // row_lanes(tile.lanes, width))
    return vectors if vectors <= MOST_INT8_PLANE_VECTORS and INT8_PLANE_GAIN * vectors < as_rows else None


def depthwise_tile(filter_shape: Sequence[int], group: int, height: int, width: int,
                   tile: VectorTile) -> DepthwiseTile | None:
    """The vector-depthwise tile of a depthwise float convolution with height x width outputs
    on `tile`, or None (not depthwise, or a target without `registers`). Lanes: `row_lanes`.
    Accumulators: at most the tile's, and as many as leave registers for the channel's
    k_h x k_w weights and an input vector (AVX2's 16 registers: 6 for a 3x3; at least 4).
    Rows first, up to `MOST_DEPTHWISE_ROWS` (an input vector is loaded once per kernel column
    for every row of the tile whose window covers it: (rows - 1 + k_h) loads for rows x k_h
    FMAs), then vectors of a row with the accumulators left."""
    if not tile.registers or not is_depthwise(filter_shape, group):
        return None
    k_h, k_w = filter_shape[2:]
    lanes = row_lanes(tile.lanes, width)
    budget = max(4, min(tile.accumulators, tile.registers - k_h * k_w - 1))
    rows = min(height, budget, MOST_DEPTHWISE_ROWS)
    return DepthwiseTile(lanes, rows, min(-(-width // lanes), budget // rows))


def prefers_planes(filter_shape: Sequence[int], strides: Sequence[int], pads: Sequence[int],
                   dilations: Sequence[int], group: int, height: int, width: int, tile: VectorTile) -> bool:
    """Whether an unpooled float convolution with these outputs runs on whole planes, which
    compute fewer lanes than its rows: a 1x1 of stride 1 seen as one row (SqueezeNet's last,
    13 x 13: 11 vectors of 16 against 13 rows of 16), or the vector-planes kernel
    (`planes_block`), unless it takes the vector-channels kernel. A fused pool would make it
    rows."""
    if channel_tile(filter_shape, group, row_width(filter_shape, strides, pads, False, height, width), tile):
        return False
    if channel_is_one_row(filter_shape, strides, pads, pooled=False):
        flat, narrow = row_lanes(tile.lanes, height * width), row_lanes(tile.lanes, width)
        return -(-(height * width) // flat) * flat < height * -(-width // narrow) * narrow
    return planes_block(filter_shape, strides, pads, dilations, group, height, width, tile) is not None


def takes_columns(strides: Sequence[int], largest_stride: int = 1) -> bool:
    """A convolution whose output columns are input columns at most `largest_stride` apart
    (a vector of stride s loads s times the lanes and keeps every s-th): any kernel size,
    padding, dilation and grouping (columns whose taps reach into the padding, and a row's
    last columns, are vectors with predicated lanes)."""
    return strides[1] <= largest_stride


def channel_block(out_channels: int, group: int) -> int:
    """Helium's block: the first of `CHANNEL_BLOCKS` that divides a group's channels."""
    return next(size for size in CHANNEL_BLOCKS if (out_channels // group) % size == 0)


def row_block(out_channels: int, group: int, width: int, lanes: int, accumulators: int) -> int:
    """A float tile's block for rows of `width` outputs: as many vectors of a row as fit a
    quarter of the accumulators, then as many channels as fill the rest (the largest
    divisor of a group's channels that does): narrow rows take more channels."""
    vectors = min(-(-width // lanes), max(1, accumulators // 4))
    per_group = out_channels // group
    return max(size for size in range(1, accumulators // vectors + 1) if per_group % size == 0)


def tile_vectors(block: int, accumulators: int) -> int:
    """Vectors of output columns a tile of `block` channels computes."""
    return max(1, accumulators // block)


def interior_columns(in_width: int, width: int, kernel: int, dilation: int, pad_left: int,
                     stride: int = 1) -> tuple[int, int]:
    """[first, end) of the output columns whose taps, and the `stride - 1` input columns after
    each (a vector of stride s loads them), all lie inside the input row."""
    first = min(-(-pad_left // stride), width)
    end = min(width, (in_width - stride - (kernel - 1) * dilation + pad_left) // stride + 1)
    return first, max(first, end)


def pack_filter(weights: np.ndarray, block: int) -> np.ndarray:
    """An OIHW filter as the tile reads it: [O / block, C / group, KH, KW, block], in the
    filter's own element type."""
    out_c, group_c, k_h, k_w = weights.shape
    return weights.reshape(out_c // block, block, group_c, k_h, k_w).transpose(0, 2, 3, 4, 1).copy()


def packed_filter_shape(filter_shape: Sequence[int], block: int) -> tuple[int, ...]:
    out_c, group_c, k_h, k_w = filter_shape
    return (out_c // block, group_c, k_h, k_w, block)


def verify_column_filter(op) -> None:
    """A convolution's filter packed in blocks of output channels (`pack_filter`):
    int16 levels less the zero point for an int8 kernel, f32 for a float one."""
    if not isinstance(op, glowll.ConvolutionOp):
        return
    if op.filter_shape is None:
        raise VerifyException(f"{op.name}: a packed filter needs its filter_shape")
    block = glow.shape_of(op.filter)[-1]
    if (op.filter_shape.get_values()[0] // op.group.value.data) % block:
        raise VerifyException(f"{op.name}: a block of {block} output channels does not divide a group's")
    expected = packed_filter_shape(op.filter_shape.get_values(), block)
    float_kernel = microkernel(op.microkernel.data).numbers == "f32"
    element, what = (f32, "f32 blocks") if float_kernel else (i16, "int16 blocks")
    if storage_type(op.filter.type.element_type) != element or glow.shape_of(op.filter) != expected:
        raise VerifyException(f"{op.name}: the packed filter must be {what} {list(expected)}")
