"""glowll-share-buffers on a DenseNet-style dense block: every layer's features are computed
straight into their slice of the block's output (concat in place), each ReLU overwrites the
concatenation it reads (in place), and the results are onnxruntime's."""

from __future__ import annotations

import os
import re

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import glowmlir
from tests.support.models import onnxruntime_outputs


def dense_block(layers: int, growth: int = 2, channels: int = 3, seed: int = 0) -> onnx.ModelProto:
    """x -> [concat of all features so far -> relu -> 3x3 conv] * layers -> concat of all features."""
    rng = np.random.default_rng(seed)
    nodes, weights, features = [], [], ["x"]
    for k in range(layers):
        source = "x"
        if len(features) > 1:
            source = f"cat{k}"
            nodes.append(helper.make_node("Concat", features, [source], axis=1))
        nodes.append(helper.make_node("Relu", [source], [f"relu{k}"]))
        width = channels + growth * k
        weight = rng.normal(0.0, np.sqrt(2.0 / (width * 9)), (growth, width, 3, 3))  # activations stay O(1)
        weights.append(numpy_helper.from_array(weight.astype(np.float32), f"w{k}"))
        nodes.append(helper.make_node("Conv", [f"relu{k}", f"w{k}"], [f"f{k}"], pads=[1, 1, 1, 1]))
        features.append(f"f{k}")
    nodes.append(helper.make_node("Concat", features, ["y"], axis=1))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, 5, 6])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, channels + growth * layers, 5, 6])
    graph = helper.make_graph(nodes, "dense", [x], [y], weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def test_dense_block_concatenates_in_place(tmp_path):
    layers = 12
    model = dense_block(layers)
    path = os.path.join(tmp_path, "dense.onnx")
    onnx.save(model, path)
    bundle = glowmlir.compile(path)
    ir = bundle.ir["glowll"]
    output = re.search(r"(%\d+) = glowll.placeholder output \"y\"", ir).group(1)
    views = dict(re.findall(rf"(%\d+) = glowll.tensorview {output} {{offset = (\d+) : i64}}", ir))
    convolutions = re.findall(r"glowll.convolution (%\d+),", ir)
    assert len(convolutions) == layers
    # Each layer's features are its slice of y: channels 3 + 2k, 30 elements per channel.
    assert [int(views[dest]) for dest in convolutions] == [(3 + 2 * k) * 30 for k in range(layers)]
    relus = re.findall(r"glowll.elementwise (%\d+), (%\d+) {name = \"relu\d+\", kind = \"relu\"}", ir)
    assert all(dest == source for dest, source in relus[1:])  # relu0 reads the input placeholder
    # What remains copied: x into each concatenation, the earlier layers' features into all but the last.
    assert ir.count("glowll.insert_tensor") == sum(1 + k for k in range(1, layers)) + 1
    x = np.random.default_rng(1).standard_normal((1, 3, 5, 6)).astype(np.float32)
    expected = onnxruntime_outputs(model, {"x": x})["y"]
    np.testing.assert_allclose(bundle.run(x=x)["y"], expected, rtol=1e-5, atol=1e-5)
