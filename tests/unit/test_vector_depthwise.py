"""The float depthwise convolution on tiles of rows (`microkernel = "vector-depthwise"`,
`backends/host_vector/depthwise.py`) at each width of the host's vector unit (AVX-512's 16 lanes,
AVX2's 8, SSE's 4), against onnxruntime on random weights and inputs: 3x3 of stride 1 and 2,
5x5, dilation, asymmetric pads, planes whose rows and columns are no multiple of the tile's
rows, vectors or lanes, fused relu and clip, two images; and the tile each target chooses.
"""

from __future__ import annotations

import re

import pytest

from glowmlir.lowering.vector_layout import DepthwiseTile, VectorTile, depthwise_tile
from tests.unit.test_vector_columns import WIDTHS, compiled_convolution, needs_x86_vectors

DEPTHWISE = [
    # input shape, filter shape, attributes, fused
    ([1, 6, 10, 19], [6, 1, 3, 3], {"group": 6, "pads": [1, 1, 1, 1]}, "relu"),
    ([2, 5, 13, 37], [5, 1, 3, 3], {"group": 5, "strides": [2, 2], "pads": [1, 1, 1, 1]}, "clip"),
    ([1, 3, 23, 21], [3, 1, 5, 5], {"group": 3, "pads": [2, 2, 2, 2]}, None),
    ([1, 4, 37, 9], [4, 1, 3, 3], {"group": 4, "pads": [0, 1, 2, 2]}, None),  # rows in groups, the last short
    ([1, 6, 8, 9], [6, 1, 3, 3], {"group": 6, "strides": [1, 2], "pads": [0, 1, 1, 0]}, None),
    ([1, 4, 12, 40], [4, 1, 3, 3], {"group": 4, "dilations": [2, 2], "pads": [2, 1, 2, 3]}, None),
    ([2, 8, 56, 56], [8, 1, 3, 3], {"group": 8, "strides": [2, 2], "pads": [1, 1, 1, 1]}, "clip"),  # MobileNet's
    ([1, 3, 7, 7], [3, 1, 3, 3], {"group": 3}, "relu"),  # unpadded: every tile inside
]


@needs_x86_vectors
@pytest.mark.parametrize("lanes", sorted(WIDTHS))
@pytest.mark.parametrize("index", range(len(DEPTHWISE)))
def test_depthwise_kernel_matches_onnxruntime(lanes, index, tmp_path):
    bundle, check = compiled_convolution(DEPTHWISE[index], 200 + index, WIDTHS[lanes], tmp_path)
    tiles = re.findall(r'microkernel = "vector-depthwise", filter_shape = array<i64: [\d, ]+>, '
                       r'vector_tile = array<i64: (\d+), (\d+), (\d+)>', bundle.ir["glowll"])
    assert len(tiles) == 1 and int(tiles[0][0]) <= lanes
    check()


@needs_x86_vectors
def test_pooled_depthwise_stays_on_columns(tmp_path):
    case = ([1, 4, 11, 18], [4, 1, 3, 3], {"group": 4, "pads": [1, 1, 1, 1]}, "maxpool")
    bundle, check = compiled_convolution(case, 3, "", tmp_path)
    assert 'microkernel = "vector-columns"' in bundle.ir["glowll"] and "vector-depthwise" not in bundle.ir["glowll"]
    check()


def test_depthwise_tiles_fill_their_registers():
    avx512 = VectorTile.of_features("x86_64-unknown-linux-gnu", ["+avx", "+avx512f"])
    avx2 = VectorTile.of_features("x86_64-unknown-linux-gnu", ["+avx"])
    neon = VectorTile.of_features("aarch64-linux-gnu", [])
    # AVX-512: 32 registers, 9 weights: 16 accumulators, 4 rows of 4 vectors of 16 (7 a row)
    assert depthwise_tile([32, 1, 3, 3], 32, 112, 112, avx512) == DepthwiseTile(16, 4, 4)
    # a 7 x 7 plane: rows of one vector of 8
    assert depthwise_tile([96, 1, 3, 3], 96, 7, 7, avx512) == DepthwiseTile(8, 4, 1)
    # 3 rows: the accumulators left take more vectors of a row (5 of 16 lanes)
    assert depthwise_tile([8, 1, 3, 3], 8, 3, 80, avx512) == DepthwiseTile(16, 3, 5)
    # AVX2's 16 registers: 16 - 9 weights - 1 input leave 6 accumulators: 4 rows of 1 vector
    assert depthwise_tile([32, 1, 3, 3], 32, 56, 56, avx2) == DepthwiseTile(8, 4, 1)
    # a 5x5 on AVX-512: 32 - 25 - 1 = 6 accumulators
    assert depthwise_tile([32, 1, 5, 5], 32, 56, 56, avx512) == DepthwiseTile(16, 4, 1)
    assert depthwise_tile([32, 1, 3, 3], 32, 56, 56, neon) == DepthwiseTile(4, 4, 4)
    # not depthwise: a multiplier of 2, ungrouped, or a target without `registers`
    assert depthwise_tile([64, 1, 3, 3], 32, 56, 56, avx512) is None
    assert depthwise_tile([32, 32, 3, 3], 1, 56, 56, avx512) is None
    assert depthwise_tile([32, 1, 3, 3], 32, 56, 56, VectorTile(16, 16)) is None
