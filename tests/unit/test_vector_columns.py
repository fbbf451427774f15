"""The float convolution on vectors of output columns (`glowll-select-vector-columns`,
`lowering/vector_columns.py` with `float_kernels.FloatColumns`), on the host's vector unit at each
width it has (AVX-512's 16 lanes, AVX2's 8 with -mattr=-avx512f, SSE's 4 with
-mattr=-avx,-avx2,-avx512f on an x86-64 host), against onnxruntime on random weights and
inputs: rows wider than a tile, narrower than a vector, padded edges (predicated lanes),
dilation, groups, depthwise, a 1x1 seen as one row per channel (with a residual too), fused
pooling and activations, block sizes that are not powers of two, stride 2 along the rows.
"""

from __future__ import annotations

import os
import re

import numpy as np
import onnx
import pytest
from onnx import helper

import glowmlir
from glowmlir import target as target_description
from glowmlir.lowering.vector_layout import (
    ChannelTile,
    VectorTile,
    channel_tile,
    plane_block,
    row_block,
    row_lanes,
)
from glowmlir.target import Target
from tests.support.models import onnxruntime_outputs, random_inputs
from tests.support.onnx_graphs import nodes_model

HOST_TILE = Target().vector_tile
WIDTHS = {16: "", 8: "-avx512f", 4: "-avx,-avx2,-avx512f"}
"""Lanes -> the -mattr that leaves the host that vector width."""

CONVOLUTIONS = [
    # input shape, filter shape, attributes, fused: None, "relu", "clip", "maxpool", "avgpool", "residual"
    ([1, 3, 9, 37], [8, 3, 3, 3], {"pads": [1, 1, 1, 1]}, "relu"),
    ([2, 5, 6, 3], [6, 5, 3, 3], {"pads": [1, 2, 1, 0]}, None),  # 3 columns: one predicated vector
    ([1, 4, 7, 16], [10, 4, 3, 3], {}, "clip"),  # 14 columns, block 10
    ([1, 3, 12, 21], [4, 3, 3, 3], {"dilations": [2, 2], "pads": [2, 2, 2, 2]}, None),
    ([1, 6, 10, 19], [6, 1, 3, 3], {"group": 6, "pads": [1, 1, 1, 1]}, "relu"),  # depthwise
    ([1, 8, 9, 13], [12, 4, 5, 5], {"group": 2, "pads": [2, 2, 2, 2]}, None),
    ([1, 16, 5, 7], [20, 16, 1, 1], {}, None),  # 1x1: one row of 35 pixels per channel
    ([1, 16, 6, 11], [16, 16, 1, 1], {}, "residual"),  # 1x1 with a residual, both seen as rows
    ([1, 300, 6, 12], [8, 300, 1, 1], {}, "relu"),  # 300 input channels
    ([1, 4, 9, 10], [4, 4, 3, 3], {"pads": [1, 1, 1, 1]}, "residual"),
    ([1, 4, 11, 18], [6, 4, 3, 3], {"pads": [1, 1, 1, 1]}, "maxpool"),
    ([1, 4, 11, 18], [5, 4, 3, 3], {}, "avgpool"),
    ([1, 3, 11, 11], [7, 3, 5, 5], {"strides": [2, 1], "pads": [2, 2, 2, 2]}, "relu"),  # strided rows only
    # stride 2 along the rows: vectors of even columns out of two loads
    ([1, 4, 9, 37], [8, 4, 3, 3], {"strides": [2, 2], "pads": [1, 1, 1, 1]}, "relu"),
    ([1, 8, 6, 14], [12, 8, 1, 1], {"strides": [2, 2]}, None),  # a downsampling 1x1
    ([2, 3, 13, 24], [4, 3, 7, 7], {"strides": [2, 2], "pads": [3, 3, 3, 3]}, "maxpool"),  # a ResNet stem
    ([1, 6, 8, 9], [6, 1, 3, 3], {"group": 6, "strides": [1, 2], "pads": [0, 1, 1, 0]}, None),
    # "same" padding, stride 1: whole planes (vector-planes), tiles across rows
    ([1, 8, 14, 14], [32, 8, 3, 3], {"pads": [1, 1, 1, 1]}, "relu"),
    ([1, 16, 7, 7], [16, 16, 3, 3], {"pads": [1, 1, 1, 1]}, "residual"),
    ([1, 3, 6, 20], [8, 3, 5, 3], {"pads": [2, 0, 2, 2]}, None),
    ([1, 4, 9, 13], [16, 4, 3, 3], {"dilations": [2, 2], "pads": [2, 2, 2, 2]}, None),
    ([1, 8, 10, 11], [32, 4, 3, 3], {"group": 2, "pads": [1, 1, 1, 1]}, "relu"),
    ([1, 16, 9, 10], [16, 16, 3, 3], {"pads": [1, 1, 1, 1]}, "residual"),
    ([1, 3, 8, 12], [16, 3, 3, 5], {"pads": [1, 3, 1, 1]}, None),  # uneven left and right padding
    # a 1x1 whose input exceeds vector_columns.run_bytes: runs of pixels, and the rest
    ([1, 256, 20, 20], [256, 256, 1, 1], {}, "residual"),
    # a pool after a convolution that runs on planes stays apart on AVX and AVX-512
    ([1, 8, 14, 14], [32, 8, 3, 3], {"pads": [1, 1, 1, 1]}, "maxpool"),
    # input over run_bytes: rows in bands (the last one short), every block of channels per
    # band; with an overlapping pool, each band refills its ring of convolved rows
    ([1, 16, 66, 74], [8, 16, 3, 3], {}, "relu"),
    ([1, 16, 66, 74], [8, 16, 3, 3], {}, "maxpool3"),
    # vector-channels (AVX, AVX-512): output channels in the lanes
    ([1, 16, 9, 101], [32, 16, 3, 3], {"strides": [2, 2], "pads": [1, 1, 1, 1]}, "relu"),  # tiles in a loop
    ([1, 3, 19, 47], [16, 3, 11, 11], {"strides": [4, 4], "pads": [2, 2, 2, 2]}, "relu"),  # AlexNet's stem
    ([1, 8, 12, 40], [24, 8, 3, 3], {"dilations": [2, 2], "pads": [2, 1, 2, 3]}, None),  # 24 channels: 8 lanes
    ([1, 16, 10, 33], [16, 16, 3, 3], {"pads": [1, 1, 1, 1]}, "residual"),
    ([1, 8, 15, 23], [16, 8, 5, 5], {"strides": [1, 2], "pads": [2, 2, 2, 2]}, "maxpool3"),
    # two vectors of channels where a row holds few pixels; a 1x1 over 7 x 7 planes (49 pixels)
    ([1, 32, 11, 11], [64, 32, 3, 3], {"strides": [2, 2], "pads": [1, 1, 1, 1]}, "relu"),
    ([1, 32, 6, 6], [32, 32, 3, 3], {"pads": [1, 1, 1, 1]}, "residual"),
    ([1, 64, 7, 7], [64, 64, 1, 1], {}, "residual"),
    # vector-planes with a residual (AVX: a block of 8 channels fills over half its 12 accumulators)
    ([1, 16, 12, 12], [16, 8, 3, 3], {"group": 2, "pads": [1, 1, 1, 1]}, "residual"),
]
PLANES = {0: {8}, 19: {8}, 20: {8, 16}, 21: {8, 16}, 23: {8, 16}, 36: {8}}
"""The cases run as whole planes (case: lanes): stride 1, "same" padding, a tile of one
vector whose block of channels is over half the accumulators (AVX: 12, so case 0's 8
channels do; AVX-512: 16, so they do not), and fewer lanes computed than as rows (a 7x7
plane on 16 lanes: 64, as rows of 8: 56); AVX or AVX-512 only (SSE has no masked loads)."""
CHANNELS = {index: {8, 16} for index in (15, 17, 18, 22, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35)} | {8: {16}}
"""The cases run on vectors of output channels (AVX, AVX-512): ungrouped, at least 64
products an output, channels a multiple of 4 (case 15's 4 channels on 4 lanes); a 1x1 only
where its plane is no multiple of the lanes (case 8: 72 pixels, 4.5 vectors of 16)."""
DEPTHWISE = {4, 16}
"""The depthwise cases, on the vector-depthwise kernel at every width (test_vector_depthwise.py)."""
GENERIC = {29: {4}}
"""The cases left to the generic kernel: a stride of 4 along the rows on SSE."""


def convolution_model(x_shape, w_shape, attributes, fused, seed) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    weights = {"w": rng.uniform(-1, 1, w_shape).astype(np.float32),
               "b": rng.uniform(-1, 1, w_shape[0]).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], **attributes)]
    if fused == "relu":
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    elif fused == "clip":
        weights.update(lo=np.array(-0.5, np.float32), hi=np.array(0.75, np.float32))
        nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["y"]))
    elif fused in ("maxpool", "avgpool"):
        kind = "MaxPool" if fused == "maxpool" else "AveragePool"
        nodes.append(helper.make_node(kind, ["c"], ["y"], kernel_shape=[2, 2], strides=[2, 2]))
    elif fused == "maxpool3":  # overlapping windows
        nodes.append(helper.make_node("MaxPool", ["c"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    elif fused == "residual":
        nodes.append(helper.make_node("Add", ["c", "x"], ["y"]))
    else:
        nodes[0].output[0] = "y"
    return nodes_model(nodes, {"x": x_shape}, weights)


def compiled_convolution(case, seed: int, features: str, tmp_path):
    """The convolution `case` (input shape, filter shape, attributes, fused) with random
    weights (`seed`) and inputs, compiled for the host with `features`: (bundle, a function
    checking the bundle's output against onnxruntime's)."""
    x_shape, w_shape, attributes, fused = case
    model = convolution_model(x_shape, w_shape, attributes, fused, seed)
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(model, path)
    inputs = random_inputs(model, seed=seed)
    expected = onnxruntime_outputs(model, inputs)["y"]
    bundle = glowmlir.compile(path, target=Target(features=features))

    def check() -> None:
        np.testing.assert_allclose(bundle.run(inputs)["y"], expected,
                                   atol=1e-5 * max(1.0, float(np.abs(expected).max())), rtol=0)

    return bundle, check


needs_x86_vectors = pytest.mark.skipif(HOST_TILE is None or HOST_TILE.lanes < 16,
                                       reason="the lane widths are taken from an AVX-512 host")


@needs_x86_vectors
@pytest.mark.parametrize("lanes", sorted(WIDTHS))
@pytest.mark.parametrize("index", range(len(CONVOLUTIONS)))
def test_column_kernel_matches_onnxruntime(lanes, index, tmp_path):
    x_shape, w_shape, attributes, fused = CONVOLUTIONS[index]
    bundle, check = compiled_convolution(CONVOLUTIONS[index], 100 + index, WIDTHS[lanes], tmp_path)
    tiles = re.findall(r'microkernel = #glowll.microkernel<'
                       r'"(vector-columns|vector-planes|vector-channels|vector-depthwise)">, '
                       r'filter_shape = array<i64: [\d, ]+>, vector_tile = array<i64: (\d+), (\d+)[\d, ]*>',
                       bundle.ir["glowll"])
    planes = lanes in PLANES.get(index, ())
    channels = lanes in CHANNELS.get(index, ())
    if lanes in GENERIC.get(index, ()):
        assert not tiles
    else:
        assert len(tiles) == 1 and int(tiles[0][1]) <= lanes
        assert tiles[0][0] == ("vector-planes" if planes else "vector-channels" if channels
                               else "vector-depthwise" if index in DEPTHWISE else "vector-columns")
    if fused in ("maxpool", "maxpool3", "avgpool"):  # fused unless the convolution runs on planes
        assert (" pool " in bundle.ir["glowll"]) == (not planes)
    if fused == "residual":
        assert "residual" in bundle.ir["glowll"]
    # a 1x1 of stride 2 reads a subsampled input (glow-subsample-strided-pointwise)
    assert ("steps = array<i64: 1, 1, 2, 2>" in bundle.ir["glowll"]) == (w_shape[2:] == [1, 1] and
                                                                          attributes.get("strides") == [2, 2])
    check()


def test_rows_of_stride_three_keep_the_generic_kernel(tmp_path):
    model = convolution_model([1, 3, 9, 9], [4, 3, 3, 3], {"strides": [1, 3]}, None, seed=1)
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(model, path)
    assert "vector-columns" not in glowmlir.compile(path).ir["glowll"]


def test_the_tile_follows_the_target():
    x86 = "x86_64-unknown-linux-gnu"
    # +avx512f turns FMA3 on (LLVM's implication), -avx512f leaves it on
    assert VectorTile.of_features(x86, ["+avx2", "+avx", "+avx512f"]) == VectorTile(16, 16, True, 32, True)
    assert VectorTile.of_features(x86, ["+avx", "+avx512f", "-avx512f"]) == VectorTile(8, 12, True, 16, True)
    assert VectorTile.of_features(x86, ["+avx512f", "-avx"]) == VectorTile(4, 12, registers=16)
    assert VectorTile.of_features("x86_64-unknown-linux-gnu", ["+sse4.2"]) == VectorTile(4, 12, registers=16)
    assert VectorTile.of_features(x86, ["+avx2", "+avx", "+fma"]) == VectorTile(8, 12, True, 16, True)
    assert VectorTile.of_features(x86, ["+avx", "+fma", "-fma"]) == VectorTile(8, 12, True, 16)
    assert VectorTile.of_features("aarch64-linux-gnu", []) == VectorTile(4, 16, registers=32, fused_multiply_add=True)
    assert VectorTile.of_features("thumbv7em-none-eabi", ["+dsp"]) is None


def test_planes_choose_their_channels_or_rows():
    # 28x28 on 16 lanes: 49 vectors, a tile of one vector and 16 channels wastes no lane
    assert plane_block(128, 1, 28, 28, 16, 16) == 16
    # 56x56: 196 vectors, one a tile (more vectors keep more run-time masks than mask registers)
    assert plane_block(64, 1, 56, 56, 16, 16) == 16
    # 7x7: 4 vectors of 16 as a plane (64 lanes), 7 rows of 8 lanes (56): rows
    assert plane_block(512, 1, 7, 7, 16, 16) is None
    # depthwise: one channel a group never fills half a tile
    assert plane_block(32, 32, 28, 28, 16, 16) is None


def test_rows_choose_their_vectors_and_channels():
    assert row_lanes(16, 3) == 4 and row_lanes(16, 8) == 8 and row_lanes(16, 24) == 16 and row_lanes(8, 40) == 8
    # a narrow row takes many channels: LeNet's second convolution, 8 columns, 50 channels
    assert row_block(50, 1, 8, 8, 16) == 10
    # a long row (a 1x1 seen as one row) takes 4 vectors and 4 channels
    assert row_block(64, 1, 35 * 35, 16, 16) == 4
    assert row_block(6, 6, 19, 8, 12) == 1  # depthwise: one channel a group


def test_channel_tiles_fill_their_registers():
    avx512, avx2 = VectorTile(16, 16, True, 32), VectorTile(8, 12, True, 16)
    # 14 columns: one tile of 14 pixels x 16 channels; 28: two of 14, not 16 + 12
    assert channel_tile([512, 512, 3, 3], 1, 14, avx512) == ChannelTile(16, 16, 14)
    assert channel_tile([128, 128, 3, 3], 1, 28, avx512) == ChannelTile(16, 16, 14)
    # 7 columns: fewer than 8 accumulators a vector, so two vectors of channels
    assert channel_tile([512, 512, 3, 3], 1, 7, avx512) == ChannelTile(16, 32, 7)
    # AVX2's 16 registers: 16 - 2 - 3 weights leave 11 pixels a tile (28: 10 + 9 + 9 -> 10)
    assert channel_tile([64, 64, 3, 3], 1, 28, avx2) == ChannelTile(8, 8, 10)
    # 11x11 kernel rows keep 11 weight vectors: 32 - 2 - 11 = 19, at most 16
    assert channel_tile([96, 3, 11, 11], 1, 55, avx512) == ChannelTile(16, 16, 14)
    # 20 channels: vectors of 4; grouped, 27 products, or a 1x1 over whole vectors: none
    assert channel_tile([20, 16, 3, 3], 1, 9, avx512).lanes == 4
    assert channel_tile([64, 32, 3, 3], 2, 14, avx512) is None
    assert channel_tile([64, 3, 3, 3], 1, 224, avx512) is None
    assert channel_tile([256, 64, 1, 1], 1, 56 * 56, avx512) is None
    assert channel_tile([512, 2048, 1, 1], 1, 49, avx512) == ChannelTile(16, 16, 13)
    assert channel_tile([64, 64, 3, 3], 1, 14, VectorTile(4, 12)) is None  # SSE: not taken


def test_the_cache_follows_the_target():
    assert Target(triple="aarch64-linux-gnu").cache_bytes == 512 << 10
    assert Target(triple="x86_64-unknown-linux-gnu", features="+avx,+avx2").cache_bytes == 1 << 20
    assert Target().cache_bytes == (target_description.host_cache_bytes() or 1 << 20)


@needs_x86_vectors
def test_bands_follow_the_cache(tmp_path, monkeypatch):
    """Case 27 (a 312 KB input, an overlapping fused pool) on a host whose L2 holds it whole
    runs unbanded; on one of 256 KB, in bands of rows (each refilling the pool's ring)."""
    x_shape, w_shape, attributes, fused = CONVOLUTIONS[27]
    model = convolution_model(x_shape, w_shape, attributes, fused, seed=5)
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(model, path)
    inputs = random_inputs(model, seed=5)
    expected = onnxruntime_outputs(model, inputs)["y"]
    objects = []
    for cache in (256 << 10, 64 << 20):
        monkeypatch.setattr(target_description, "host_cache_bytes", lambda level=2, cache=cache: cache)
        bundle = glowmlir.compile(path, keep_assembly=True)
        np.testing.assert_allclose(bundle.run(inputs)["y"], expected, atol=1e-5 * float(np.abs(expected).max()), rtol=0)
        objects.append(bundle.ir["assembly"])
    assert objects[0] != objects[1]
