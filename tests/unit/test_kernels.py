"""Each kernel, compiled to a host bundle, against onnxruntime on random weights and inputs."""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest

import glowmlir
from tests.support.models import onnxruntime_outputs, random_inputs
from tests.support.onnx_graphs import nodes_model, single_node_model

rng = np.random.default_rng(1234)


def random(*shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, shape).astype(np.float32)


def check(model: onnx.ModelProto, tmp_path, tolerance: float = 1e-5) -> None:
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(model, path)
    inputs = random_inputs(model, seed=7)
    expected = onnxruntime_outputs(model, inputs)["y"]
    actual = glowmlir.compile(path).run(inputs)["y"]
    scale = max(1.0, float(np.abs(expected).max()))
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, atol=tolerance * scale, rtol=0)


CONVOLUTIONS = [
    # input shape, filter shape, attributes
    ([1, 3, 9, 9], [4, 3, 3, 3], {}),
    ([2, 3, 9, 11], [5, 3, 3, 3], {"pads": [1, 1, 1, 1]}),
    ([1, 4, 10, 10], [6, 4, 3, 3], {"strides": [2, 2], "pads": [1, 0, 2, 1]}),
    ([1, 3, 12, 12], [4, 3, 3, 3], {"dilations": [2, 2], "pads": [2, 2, 2, 2]}),
    ([1, 6, 8, 8], [6, 1, 3, 3], {"group": 6, "pads": [1, 1, 1, 1]}),  # depthwise
    ([1, 8, 7, 7], [4, 4, 1, 1], {"group": 2}),  # grouped 1x1
    ([1, 3, 11, 11], [7, 3, 5, 5], {"strides": [3, 2], "auto_pad": "SAME_UPPER"}),
    ([1, 2, 5, 5], [3, 2, 7, 7], {"pads": [3, 3, 3, 3]}),  # kernel wider than the input
]


@pytest.mark.parametrize("x_shape,w_shape,attributes", CONVOLUTIONS)
def test_convolution(x_shape, w_shape, attributes, tmp_path):
    model = single_node_model("Conv", {"x": x_shape}, {"w": random(*w_shape), "b": random(w_shape[0])}, **attributes)
    check(model, tmp_path)


def test_convolution_without_bias(tmp_path):
    check(single_node_model("Conv", {"x": [1, 2, 6, 6]}, {"w": random(3, 2, 3, 3)}), tmp_path)


POOLS = [
    ("MaxPool", [1, 3, 8, 8], {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ("MaxPool", [1, 2, 9, 9], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ("MaxPool", [1, 2, 10, 10], {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ("AveragePool", [1, 3, 8, 8], {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ("AveragePool", [1, 2, 7, 7], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    ("AveragePool", [1, 2, 7, 7], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}),
    ("GlobalAveragePool", [2, 5, 6, 7], {}),
    ("GlobalMaxPool", [1, 5, 6, 7], {}),
]


@pytest.mark.parametrize("op_type,shape,attributes", POOLS)
def test_pool(op_type, shape, attributes, tmp_path):
    check(single_node_model(op_type, {"x": shape}, **attributes), tmp_path)


@pytest.mark.parametrize("attributes", [{}, {"transB": 1}, {"transA": 1, "alpha": 0.5, "beta": 2.0}])
def test_gemm(attributes, tmp_path):
    a_shape = [7, 3] if attributes.get("transA") else [3, 7]
    b = random(5, 7) if attributes.get("transB") else random(7, 5)
    check(single_node_model("Gemm", {"a": a_shape}, {"b": b, "c": random(5)}, **attributes), tmp_path)


@pytest.mark.parametrize("a_shape,b_shape,constant_b", [
    ([4, 6], [6, 3], True),     # becomes FullyConnected
    ([2, 4, 6], [6, 5], False),  # batch broadcast
    ([3, 1, 4, 6], [2, 6, 5], False),
])
def test_matmul(a_shape, b_shape, constant_b, tmp_path):
    if constant_b:
        model = single_node_model("MatMul", {"a": a_shape}, {"b": random(*b_shape)})
    else:
        model = single_node_model("MatMul", {"a": a_shape, "b": b_shape})
    check(model, tmp_path)


@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Max", "Min"])
@pytest.mark.parametrize("a_shape,b_shape", [([2, 3, 4], [2, 3, 4]), ([2, 3, 4], [3, 1]), ([1, 5, 1, 3], [2, 1, 4, 1])])
def test_binary_broadcast(op_type, a_shape, b_shape, tmp_path):
    check(single_node_model(op_type, {"a": a_shape, "b": b_shape}), tmp_path)


def test_div(tmp_path):
    model = single_node_model("Div", {"a": [3, 4]}, {"b": random(4, low=0.5, high=2.0)})
    check(model, tmp_path)


@pytest.mark.parametrize("op_type", ["Relu", "Sigmoid", "Tanh"])
def test_unary(op_type, tmp_path):
    check(single_node_model(op_type, {"x": [2, 3, 17]}), tmp_path)


def test_clip(tmp_path):
    model = single_node_model("Clip", {"x": [4, 9]}, {"lo": np.float32(-0.3), "hi": np.float32(0.4)})
    check(model, tmp_path)


@pytest.mark.parametrize("shape,axis,opset",
                         [([3, 10], 1, 13), ([2, 3, 4], 1, 13), ([2, 3, 4], -1, 13), ([2, 3, 4], 1, 11)])
def test_softmax(shape, axis, opset, tmp_path):
    check(single_node_model("Softmax", {"x": shape}, opset=opset, axis=axis), tmp_path)


def test_transpose(tmp_path):
    check(single_node_model("Transpose", {"x": [2, 3, 4, 5]}, perm=[0, 2, 3, 1]), tmp_path)


def test_concat(tmp_path):
    model = single_node_model("Concat", {"a": [1, 2, 3, 3], "b": [1, 5, 3, 3]}, {"c": random(1, 1, 3, 3)}, axis=1)
    check(model, tmp_path)


def test_slice(tmp_path):
    model = single_node_model("Slice", {"x": [4, 10, 6]}, {
        "starts": np.array([1, -8], np.int64), "ends": np.array([3, 100], np.int64),
        "axes": np.array([0, 1], np.int64), "steps": np.array([1, 3], np.int64)})
    check(model, tmp_path)


def test_pad(tmp_path):
    model = single_node_model("Pad", {"x": [1, 2, 3, 3]}, {"pads": np.array([0, 0, 1, 2, 0, 1, 0, 1], np.int64),
                                                          "value": np.float32(0.5)})
    check(model, tmp_path)


@pytest.mark.parametrize("op_type,attributes,extra", [
    ("Reshape", {}, {"shape": np.array([0, -1], np.int64)}),
    ("Flatten", {"axis": 2}, {}),
    ("Unsqueeze", {}, {"axes": np.array([0, 3], np.int64)}),
    ("Squeeze", {}, {"axes": np.array([1], np.int64)}),
])
def test_shape_ops(op_type, attributes, extra, tmp_path):
    shape = [2, 1, 3, 4] if op_type == "Squeeze" else [2, 3, 4, 5]
    check(single_node_model(op_type, {"x": shape}, extra, **attributes), tmp_path)


@pytest.mark.parametrize("scale_shape", [[1, 6, 1, 1], [6, 1, 1], [1]])
def test_channel_mul_and_add_fold_into_the_convolution(scale_shape, tmp_path):
    """Conv -> Mul -> Add by per-channel constants (a BatchNormalization as the onnx package's
    Inception-v2 writes it) -> Relu -> MaxPool: one convolution with its activation and pool."""
    from onnx import helper

    rng = np.random.default_rng(5)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Mul", ["c", "s"], ["m"]), helper.make_node("Add", ["a", "m"], ["t"]),
             helper.make_node("Relu", ["t"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[2, 2], strides=[2, 2])]
    weights = {"w": random(6, 4, 3, 3), "b": random(6), "s": rng.uniform(0.5, 2, scale_shape).astype(np.float32),
               "a": rng.uniform(-1, 1, [6, 1, 1]).astype(np.float32)}
    model = nodes_model(nodes, {"x": [1, 4, 10, 12]}, weights)
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(model, path)
    inputs = random_inputs(model, seed=5)
    bundle = glowmlir.compile(path)
    assert "glow.mul" not in bundle.ir["glow"] and "glow.add" not in bundle.ir["glow"]
    assert " activation relu" in bundle.ir["glow"] and " pool max " in bundle.ir["glow"]
    expected = onnxruntime_outputs(model, inputs)["y"]
    np.testing.assert_allclose(bundle.run(inputs)["y"], expected, atol=1e-5, rtol=1e-5)


def test_batch_normalization_alone(tmp_path):
    params = {"scale": random(3), "bias": random(3), "mean": random(3), "var": random(3, low=0.5, high=2.0)}
    check(single_node_model("BatchNormalization", {"x": [2, 3, 4, 5]}, params, epsilon=1e-3), tmp_path)


FUSED_POOLS = [
    # conv attributes, pool op, pool attributes, activation between (None, "Relu" before pool, "after")
    ({}, "MaxPool", {"kernel_shape": [2, 2], "strides": [2, 2]}, None),
    ({"pads": [1, 1, 1, 1]}, "MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, "Relu"),
    ({"group": 2}, "AveragePool", {"kernel_shape": [2, 2], "strides": [2, 2]}, None),
    ({"pads": [1, 1, 1, 1]}, "AveragePool", {"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1]}, "after"),
    ({"strides": [2, 2]}, "AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}, None),
    ({"pads": [1, 1, 1, 1]}, "MaxPool", {"kernel_shape": [2, 2], "strides": [2, 2]}, "after"),
    # Windows taller than loop_skeletons.UNROLLED_WINDOW_ROWS: their rows are a loop.
    ({"pads": [1, 1, 1, 1]}, "MaxPool", {"kernel_shape": [5, 4], "strides": [2, 3], "pads": [2, 1, 2, 1]}, "Relu"),
    ({}, "AveragePool", {"kernel_shape": [4, 3], "strides": [3, 2], "pads": [1, 1, 0, 0]}, None),
    ({}, "AveragePool", {"kernel_shape": [9, 8]}, None),  # a global pool (SqueezeNet's last)
]


@pytest.mark.parametrize("conv_attributes,pool_type,pool_attributes,relu", FUSED_POOLS)
@pytest.mark.parametrize("fuse", [True, False])
def test_convolution_with_pooling(conv_attributes, pool_type, pool_attributes, relu, fuse, tmp_path):
    """Convolution (+ Relu) + pooling, fused by glow-fuse-conv-pool or not."""
    from onnx import helper

    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], **conv_attributes)]
    pool_input = "c"
    if relu == "Relu":
        nodes.append(helper.make_node("Relu", ["c"], ["r"]))
        pool_input = "r"
    nodes.append(helper.make_node(pool_type, [pool_input], ["p" if relu == "after" else "y"], **pool_attributes))
    if relu == "after":
        nodes.append(helper.make_node("Relu", ["p"], ["y"]))
    weights = {"w": random(6, 4 // conv_attributes.get("group", 1), 3, 3), "b": random(6)}
    model = nodes_model(nodes, {"x": [1, 4, 11, 10]}, weights)
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(model, path)
    inputs = random_inputs(model, seed=3)
    expected = onnxruntime_outputs(model, inputs)["y"]
    bundle = glowmlir.compile(path, memory_fusion=fuse)
    assert (" pool max " in bundle.ir["glowll"] or " pool avg " in bundle.ir["glowll"]) == fuse
    np.testing.assert_allclose(bundle.run(inputs)["y"], expected, atol=1e-5, rtol=0)


@pytest.mark.parametrize("size", [3, 5])  # onnxruntime takes odd sizes only
def test_local_response_normalization(size, tmp_path):
    model = single_node_model("LRN", {"x": [1, 7, 4, 5]}, size=size, alpha=0.3, beta=0.6, bias=1.5)
    check(model, tmp_path)


@pytest.mark.parametrize("residual_is_input", [False, True])
def test_convolution_with_residual_add(residual_is_input, tmp_path):
    """Add(Relu(Conv(t)), r) → a convolution starting from r, in place where that is safe."""
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("Relu", ["x"], ["t"]),
             helper.make_node("Conv", ["t", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c", "t" if residual_is_input else "r"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    if not residual_is_input:
        nodes.insert(0, helper.make_node("Sigmoid", ["x"], ["r"]))
    weights = {"w": random(4, 4, 3, 3), "b": random(4)}
    graph = helper.make_graph(nodes, "residual", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 7, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 7, 6])],
                              [numpy_helper.from_array(v, k) for k, v in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(model, path)
    inputs = random_inputs(model, seed=4)
    bundle = glowmlir.compile(path)
    assert "residual" in bundle.ir["glowll"]
    np.testing.assert_allclose(bundle.run(inputs)["y"], onnxruntime_outputs(model, inputs)["y"], atol=1e-5, rtol=0)


@pytest.mark.parametrize("op_type,attributes", [
    ("LeakyRelu", {"alpha": 0.2}), ("Elu", {"alpha": 0.7}), ("Selu", {}), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
    ("HardSwish", {}), ("Exp", {}), ("Neg", {}), ("Abs", {}),
])
def test_more_unary(op_type, attributes, tmp_path):
    check(single_node_model(op_type, {"x": [2, 3, 9]}, opset=14, **attributes), tmp_path)


@pytest.mark.parametrize("op_type,attributes", [
    ("Sqrt", {}), ("Reciprocal", {}), ("Log", {}), ("Softplus", {}), ("Softsign", {}), ("Mish", {}),
    ("Celu", {"alpha": 0.8}),
])
def test_math_unary(op_type, attributes, tmp_path):
    """On positive and negative values where the function is defined (Sqrt, Log: positive)."""
    model = single_node_model(op_type, {"x": [2, 3, 9]}, opset=18, **attributes)
    low = 0.05 if op_type in ("Sqrt", "Log", "Reciprocal") else -6.0
    x = np.random.default_rng(5).uniform(low, 6.0, (2, 3, 9)).astype(np.float32)
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(model, path)
    np.testing.assert_allclose(glowmlir.compile(path).run(x=x)["y"], onnxruntime_outputs(model, {"x": x})["y"],
                               rtol=2e-5, atol=2e-6)


def test_prelu_with_channel_slopes(tmp_path):
    check(single_node_model("PRelu", {"x": [1, 3, 4, 4]}, {"slope": random(3, 1, 1)}), tmp_path)


@pytest.mark.parametrize("op_type", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2",
                                     "ReduceSumSquare", "ReduceLogSumExp"])
@pytest.mark.parametrize("axes,keepdims", [([1], 1), ([0, 2], 0), ([-1], 1), ([0, 1, 2], 0)])
def test_reductions(op_type, axes, keepdims, tmp_path):
    model = single_node_model(op_type, {"x": [3, 4, 5]}, {"axes": np.array(axes, np.int64)}, opset=18,
                              keepdims=keepdims)
    check(model, tmp_path)


def test_reduce_log_sum_of_positive_values(tmp_path):
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Abs", ["x"], ["a"]),
                               helper.make_node("ReduceLogSum", ["a", "axes"], ["y"], keepdims=0)], "log_sum",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
                              [helper.make_tensor("axes", TensorProto.INT64, [1], [1])])
    check(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8), tmp_path)


@pytest.mark.parametrize("upper,k", [(1, 0), (0, 0), (1, 2), (0, -1)])
def test_trilu(upper, k, tmp_path):
    check(single_node_model("Trilu", {"x": [2, 4, 5]}, {"k": np.int64(k)}, opset=14, upper=upper), tmp_path)


def test_log_softmax_and_split(tmp_path):
    check(single_node_model("LogSoftmax", {"x": [2, 7]}, axis=1), tmp_path)
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Split", ["x"], ["a", "b"], axis=1, num_outputs=2),
                               helper.make_node("Sub", ["a", "b"], ["y"])], "split",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    check(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8), tmp_path)


@pytest.mark.parametrize("indices,axis", [(np.array(2, np.int64), 1), (np.array([3, 0, -1], np.int64), 0),
                                          (np.array([[1, 1], [0, 2]], np.int64), 2)])
def test_gather_with_constant_indices(indices, axis, tmp_path):
    check(single_node_model("Gather", {"x": [4, 3, 5]}, {"i": indices}, axis=axis), tmp_path)


@pytest.mark.parametrize("w_shape,attributes", [
    ([3, 4, 3, 3], {}),
    ([3, 2, 3, 3], {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ([3, 4, 2, 3], {"strides": [2, 3], "output_padding": [1, 1]}),
    ([4, 2, 3, 3], {"group": 2, "strides": [2, 2], "dilations": [2, 1], "pads": [0, 1, 2, 0]}),
    # pads that cancel the kernel's along the width: the interleaved input is padded along the
    # height only, and the Pad's fill must not run over the cropped input written in place
    ([1, 2, 3, 3], {"strides": [3, 2], "pads": [1, 2, 1, 2]}),
])
@pytest.mark.parametrize("filter_at_run_time", [False, True])
def test_conv_transpose(w_shape, attributes, filter_at_run_time, tmp_path):
    """A constant filter is flipped at compile time; a graph input one by ops at run time."""
    channels_in = w_shape[0]
    inputs = {"x": [1, channels_in, 5, 4]} | ({"w": w_shape} if filter_at_run_time else {})
    constants = ({} if filter_at_run_time else {"w": random(*w_shape)}) | \
        {"b": random(w_shape[1] * attributes.get("group", 1))}
    check(single_node_model("ConvTranspose", inputs, constants, **attributes), tmp_path)


@pytest.mark.parametrize("op_type, attributes, weights", [
    ("Conv", {"pads": [1, 2], "strides": [2], "dilations": [2]}, (4, 3, 3)),
    ("Conv", {"auto_pad": "SAME_UPPER", "group": 3}, (6, 1, 5)),
    ("ConvTranspose", {"strides": [2], "pads": [1, 0]}, (3, 2, 3)),
    ("MaxPool", {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}, None),
    ("AveragePool", {"kernel_shape": [4], "strides": [1], "pads": [0, 2]}, None),
    ("GlobalAveragePool", {}, None),
    ("GlobalMaxPool", {}, None),
])
def test_one_dimensional_windows(op_type, attributes, weights, tmp_path):
    """1-D Conv, ConvTranspose and pools run as their 2-D forms over [N, C, 1, L]."""
    initializers = {"w": random(*weights), "b": random(weights[0] if op_type == "Conv" else weights[1])} \
        if weights else {}
    check(single_node_model(op_type, {"x": [2, 3, 17]}, initializers, **attributes), tmp_path)


@pytest.mark.parametrize("mode, opset", [("edge", 13), ("reflect", 13), ("wrap", 19)])
@pytest.mark.parametrize("pads", [[0, 1, 2, 0, 2, 1], [1, 0, 0, 0, 3, 2]])
def test_pad_modes(mode, opset, pads, tmp_path):
    """Edge, reflect and wrap padding, as a Concat of slices of the input."""
    model = single_node_model("Pad", {"x": [2, 4, 5]}, {"pads": np.array(pads, np.int64)}, opset=opset, mode=mode)
    check(model, tmp_path)


@pytest.mark.parametrize("op_type, opset, axis, bias", [("LayerNormalization", 17, -1, True),
                                                       ("LayerNormalization", 17, 1, False),
                                                       ("RMSNormalization", 23, -1, False)])
def test_normalization(op_type, opset, axis, bias, tmp_path):
    """Layer and RMS normalization, from reductions, Sqrt and elementwise arithmetic."""
    shape = [2, 3, 8]
    normalized = shape[axis % 3:]
    weights = {"scale": random(*normalized)} | ({"bias": random(*normalized)} if bias else {})
    check(single_node_model(op_type, {"x": shape}, weights, opset=opset, axis=axis, epsilon=1e-3), tmp_path, 2e-5)


@pytest.mark.parametrize("attributes", [{}, {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}])
@pytest.mark.parametrize("c_shape", [None, [1, 5], [4, 5]])
def test_gemm_with_run_time_weights(attributes, c_shape, tmp_path):
    """B (and C) as graph inputs: a MatMul and broadcasting arithmetic instead of FullyConnected."""
    a_shape = [3, 4] if attributes.get("transA") else [4, 3]
    b_shape = [5, 3] if attributes.get("transB") else [3, 5]
    inputs = {"a": a_shape, "b": b_shape} | ({"c": c_shape} if c_shape else {})
    check(single_node_model("Gemm", inputs, **attributes), tmp_path)


@pytest.mark.parametrize("mode, transform, nearest", [
    ("nearest", "half_pixel", "round_prefer_floor"), ("nearest", "asymmetric", "floor"),
    ("nearest", "align_corners", "round_prefer_ceil"), ("nearest", "half_pixel", "ceil"),
    ("linear", "half_pixel", None), ("linear", "align_corners", None), ("linear", "asymmetric", None),
    ("linear", "pytorch_half_pixel", None), ("linear", "half_pixel_symmetric", None),
])
@pytest.mark.parametrize("scales, sizes", [([1, 1, 2.0, 1.5], None), ([1, 1, 0.5, 0.8], None), (None, [1, 3, 7, 3])])
def test_resize(mode, transform, nearest, scales, sizes, tmp_path):
    """Resize with constant scales or sizes, one resampled axis at a time, against onnxruntime."""
    attributes = {"mode": mode, "coordinate_transformation_mode": transform}
    if nearest:
        attributes["nearest_mode"] = nearest
    constants = {"roi": np.array([], np.float32), "scales": np.array(scales or [], np.float32)}
    if sizes:
        constants["sizes"] = np.array(sizes, np.int64)
    check(single_node_model("Resize", {"x": [1, 3, 6, 5]}, constants, opset=19, **attributes), tmp_path)


def test_upsample(tmp_path):
    check(single_node_model("Upsample", {"x": [1, 2, 3, 4]}, {"scales": np.array([1, 1, 2, 3], np.float32)},
                            opset=9, mode="nearest"), tmp_path)


@pytest.mark.parametrize("op_type, attributes", [
    ("MaxPool", {"kernel_shape": [2, 3, 2], "strides": [2, 1, 2], "pads": [1, 0, 1, 0, 1, 1]}),
    ("AveragePool", {"kernel_shape": [3, 2, 2], "strides": [1, 2, 2], "pads": [1, 1, 0, 1, 0, 1]}),
    ("AveragePool", {"kernel_shape": [3, 3, 3], "pads": [1, 1, 1, 1, 1, 1], "count_include_pad": 1}),
    ("MaxPool", {"kernel_shape": [3, 3, 3], "strides": [2, 2, 2], "ceil_mode": 1}),
    ("GlobalAveragePool", {}), ("GlobalMaxPool", {}),
])
def test_three_dimensional_pools(op_type, attributes, tmp_path):
    """3-D pools as a 2-D pool over the planes and one over the depth (they are separable)."""
    check(single_node_model(op_type, {"x": [1, 2, 5, 6, 7]}, **attributes), tmp_path)


@pytest.mark.parametrize("weights, attributes", [
    ((4, 2, 3, 3, 3), {"pads": [1, 1, 1, 1, 1, 1]}),
    ((4, 2, 2, 3, 1), {"strides": [2, 1, 2], "dilations": [2, 1, 1], "pads": [1, 0, 0, 0, 1, 0]}),
    ((4, 1, 3, 1, 2), {"group": 2, "strides": [1, 2, 1]}),
])
def test_three_dimensional_convolution(weights, attributes, tmp_path):
    """3-D Conv as one 2-D convolution per depth tap over the depth planes, summed."""
    check(single_node_model("Conv", {"x": [1, 2, 5, 6, 4]}, {"w": random(*weights), "b": random(weights[0])},
                            **attributes), tmp_path)
