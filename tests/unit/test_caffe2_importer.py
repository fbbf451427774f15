"""Caffe2 importer: NetDef pairs built here with random weights, compiled, and compared with
an independent numpy reference of Caffe2's semantics (not with the translated ONNX model)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import glowmlir
from glowmlir.cli import compile as compile_cli
from glowmlir.errors import GlowError
from glowmlir.importers.caffe2 import import_caffe2
from glowmlir.importers.caffe2_schema import NetDef, OperatorDef
from glowmlir.importers.onnx import ModelInput
from tests.support.caffe2_nets import lenet_ops, op, write_model

TOLERANCE = {"rtol": 1e-4, "atol": 1e-4}

# ----------------------------------------------------------------------------- building nets


class Weights(dict):
    """Random weights scaled by fan-in, so that activations stay near unit size."""

    def __init__(self, seed: int):
        super().__init__()
        self.rng = np.random.default_rng(seed)

    def filter(self, name: str, shape) -> np.ndarray:
        self[name] = (self.rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)
        return self[name]

    def vector(self, name: str, size: int, low=-0.5, high=0.5) -> np.ndarray:
        self[name] = self.rng.uniform(low, high, size).astype(np.float32)
        return self[name]

    def batch_norm(self, prefix: str, channels: int) -> list[np.ndarray]:
        return [self.vector(f"{prefix}_s", channels, 0.5, 1.5), self.vector(f"{prefix}_b", channels),
                self.vector(f"{prefix}_rm", channels), self.vector(f"{prefix}_riv", channels, 0.5, 1.5)]

    def data(self, shape) -> np.ndarray:
        return self.rng.standard_normal(shape).astype(np.float32)


def compile_and_run(model, inputs: dict[str, np.ndarray], **options) -> dict[str, np.ndarray]:
    specs = [ModelInput(name, "float", value.shape) for name, value in inputs.items()]
    return glowmlir.compile(model, model_inputs=specs, **options).run(inputs)


# ----------------------------------------------------------------------------- numpy reference of Caffe2's ops


def conv(x, w, b=None, stride=(1, 1), pads=(0, 0, 0, 0), dilation=(1, 1), group=1):
    """Caffe2 Conv, NCHW; pads are (top, left, bottom, right)."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    padded = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    m, c_per_group, k_h, k_w = w.shape
    out_h = (padded.shape[2] - dilation[0] * (k_h - 1) - 1) // stride[0] + 1
    out_w = (padded.shape[3] - dilation[1] * (k_w - 1) - 1) // stride[1] + 1
    out = np.zeros((x.shape[0], m, out_h, out_w))
    m_per_group = m // group
    for g in range(group):
        channels, filters = slice(g * c_per_group, (g + 1) * c_per_group), slice(g * m_per_group, (g + 1) * m_per_group)
        for i in range(k_h):
            for j in range(k_w):
                top, left = i * dilation[0], j * dilation[1]
                patch = padded[:, channels, top:top + stride[0] * (out_h - 1) + 1:stride[0],
                               left:left + stride[1] * (out_w - 1) + 1:stride[1]]
                out[:, filters] += np.einsum("nchw,mc->nmhw", patch, w[filters, :, i, j])
    return out if b is None else out + b[None, :, None, None]


def conv_transpose(x, w, b, stride, pads, adj):
    """Caffe2 ConvTranspose: every input pixel scatters W [C, M, kh, kw] times itself."""
    n, c, h, width = x.shape
    _, m, k_h, k_w = w.shape
    full = np.zeros((n, m, (h - 1) * stride + k_h + adj, (width - 1) * stride + k_w + adj))
    for i in range(h):
        for j in range(width):
            full[:, :, i * stride:i * stride + k_h, j * stride:j * stride + k_w] += \
                np.einsum("nc,cmhw->nmhw", x[:, :, i, j], w)
    return full[:, :, pads[0]:full.shape[2] - pads[2], pads[1]:full.shape[3] - pads[3]] + b[None, :, None, None]


def pool(x, kind, kernel, stride, pads=(0, 0, 0, 0), count_include_pad=False):
    """Caffe2 MaxPool/AveragePool, floor rounding; AveragePool divides by the in-bounds count
    unless count_include_pad."""
    fill = -np.inf if kind == "max" else 0.0
    widths = ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3]))
    padded = np.pad(x.astype(np.float64), widths, constant_values=fill)
    inside = np.pad(np.ones(x.shape), widths)
    out_h = (padded.shape[2] - kernel[0]) // stride[0] + 1
    out_w = (padded.shape[3] - kernel[1]) // stride[1] + 1

    def windows(a):
        rows, columns = stride[0] * (out_h - 1) + 1, stride[1] * (out_w - 1) + 1
        return np.stack([a[:, :, i:i + rows:stride[0], j:j + columns:stride[1]]
                         for i in range(kernel[0]) for j in range(kernel[1])])

    if kind == "max":
        return windows(padded).max(axis=0)
    count = kernel[0] * kernel[1] if count_include_pad else windows(inside).sum(axis=0)
    return windows(padded).sum(axis=0) / count


def fully_connected(x, w, b, axis=1):
    """Caffe2 FC: flatten X at `axis`, times W [N, K] transposed, plus b."""
    flat = x.reshape(int(np.prod(x.shape[:axis])), -1).astype(np.float64)
    return (flat @ w.T.astype(np.float64) + b).reshape(*x.shape[:axis], w.shape[0])


def spatial_bn(x, scale, bias, mean, var, epsilon=1e-5):
    def channel(v):
        return v.astype(np.float64)[None, :, None, None]

    return (x - channel(mean)) / np.sqrt(channel(var) + epsilon) * channel(scale) + channel(bias)


def softmax(x, axis=1):
    """Caffe2 Softmax: over everything from `axis` on (X coerced to 2-D)."""
    flat = x.reshape(int(np.prod(x.shape[:axis])), -1).astype(np.float64)
    e = np.exp(flat - flat.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).reshape(x.shape)


def lrn(x, size, alpha, beta, bias):
    """Caffe2 LRN: x / (bias + alpha / size * sum of squares over `size` channels)^beta."""
    squares = np.pad(x.astype(np.float64) ** 2, ((0, 0), ((size - 1) // 2, size - 1 - (size - 1) // 2), (0, 0), (0, 0)))
    window = sum(squares[:, i:i + x.shape[1]] for i in range(size))
    return x / (bias + alpha / size * window) ** beta


def relu(x):
    return np.maximum(x, 0)


# ----------------------------------------------------------------------------- whole nets


def test_lenet_mnist(tmp_path):
    """Glow's Caffe2 LeNet example: no Relu after the convolutions; the directory names the network."""
    weights = Weights(seed=1)
    w1, b1 = weights.filter("conv1_w", (20, 1, 5, 5)), weights.vector("conv1_b", 20)
    w2, b2 = weights.filter("conv2_w", (50, 20, 5, 5)), weights.vector("conv2_b", 50)
    w3, b3 = weights.filter("ip1_w", (500, 800)), weights.vector("ip1_b", 500)
    w4, b4 = weights.filter("ip2_w", (10, 500)), weights.vector("ip2_b", 10)
    ops = lenet_ops()
    model = write_model(tmp_path / "lenet_mnist", ops, ["data"], ["softmax", "ip2"], weights)
    x = weights.data((1, 1, 28, 28))
    bundle = glowmlir.compile(model, model_inputs=[ModelInput("data", "float", (1, 1, 28, 28))])
    assert bundle.name == "lenet_mnist"
    outputs = bundle.run({"data": x})
    pool2 = pool(conv(pool(conv(x, w1, b1), "max", (2, 2), (2, 2)), w2, b2), "max", (2, 2), (2, 2))
    logits = fully_connected(relu(fully_connected(pool2, w3, b3)), w4, b4)
    np.testing.assert_allclose(outputs["ip2"], logits, **TOLERANCE)
    np.testing.assert_allclose(outputs["softmax"], softmax(logits), **TOLERANCE)


def test_resnet_bottleneck(tmp_path):
    """Conv + SpatialBN + in-place Relu, a strided projection shortcut, Sum, AveragePool, FC, Softmax."""
    weights = Weights(seed=2)
    bn = {"is_test": 1, "epsilon": 1e-5, "momentum": 0.9, "order": "NCHW"}
    ops, reference_params = [], {}

    def conv_bn(name, source, shape, relu_after=True, **window):
        w = weights.filter(f"{name}_w", shape)
        params = weights.batch_norm(f"{name}_bn", shape[0])
        ops.append(op("Conv", [source, f"{name}_w"], [name], **window))
        ops.append(op("SpatialBN", [name, *(f"{name}_bn_{p}" for p in ("s", "b", "rm", "riv"))], [f"{name}_bn"], **bn))
        if relu_after:
            ops.append(op("Relu", [f"{name}_bn"], [f"{name}_bn"]))
        reference_params[name] = (w, params, relu_after, window)
        return f"{name}_bn"

    stem = conv_bn("conv1", "data", (16, 8, 3, 3), kernel=3, pad=1)
    branch = conv_bn("res_a", stem, (8, 16, 1, 1), kernel=1)
    branch = conv_bn("res_b", branch, (8, 8, 3, 3), kernel=3, stride=2, pad=1)
    branch = conv_bn("res_c", branch, (32, 8, 1, 1), relu_after=False, kernel=1)
    shortcut = conv_bn("res_proj", stem, (32, 16, 1, 1), relu_after=False, kernel=1, stride=2)
    w_fc, b_fc = weights.filter("pred_w", (10, 32)), weights.vector("pred_b", 10)
    ops += [op("Sum", [branch, shortcut], ["res_sum"]), op("Relu", ["res_sum"], ["res_sum"]),
            op("AveragePool", ["res_sum"], ["pool5"], kernel=8, stride=1),
            op("FC", ["pool5", "pred_w", "pred_b"], ["pred"]), op("Softmax", ["pred"], ["softmax"])]
    model = write_model(tmp_path / "resnet", ops, ["data"], ["softmax", "pred"], weights)
    x = weights.data((1, 8, 16, 16))
    outputs = compile_and_run(model, {"data": x})

    def reference_conv_bn(name, value):
        w, params, relu_after, window = reference_params[name]
        stride, pad = window.get("stride", 1), window.get("pad", 0)
        y = spatial_bn(conv(value, w, stride=(stride, stride), pads=(pad,) * 4), *params)
        return relu(y) if relu_after else y

    stem_value = reference_conv_bn("conv1", x)
    residual = reference_conv_bn("res_c", reference_conv_bn("res_b", reference_conv_bn("res_a", stem_value)))
    summed = relu(residual + reference_conv_bn("res_proj", stem_value))
    logits = fully_connected(pool(summed, "avg", (8, 8), (1, 1)), w_fc, b_fc)
    np.testing.assert_allclose(outputs["pred"], logits, **TOLERANCE)
    np.testing.assert_allclose(outputs["softmax"], softmax(logits), **TOLERANCE)


def test_squeezenet_fire_module(tmp_path):
    """Concat of the 1x1 and 3x3 expand branches (split_info output unused), Dropout is_test
    in place with its mask output, global AveragePool, Softmax of a 4-D tensor."""
    weights = Weights(seed=3)
    shapes = {"conv1": (16, 3, 3, 3), "fire2/squeeze1x1": (4, 16, 1, 1), "fire2/expand1x1": (8, 4, 1, 1),
              "fire2/expand3x3": (8, 4, 3, 3), "conv10": (10, 16, 1, 1)}
    params = {name: (weights.filter(f"{name}_w", shape), weights.vector(f"{name}_b", shape[0]))
              for name, shape in shapes.items()}

    def conv_relu(name, source, **window):
        return [op("Conv", [source, f"{name}_w", f"{name}_b"], [name], **window), op("Relu", [name], [name])]

    ops = [*conv_relu("conv1", "data", kernel=3, stride=2),
           op("MaxPool", ["conv1"], ["pool1"], kernel=3, stride=2),
           *conv_relu("fire2/squeeze1x1", "pool1", kernel=1),
           *conv_relu("fire2/expand1x1", "fire2/squeeze1x1", kernel=1),
           *conv_relu("fire2/expand3x3", "fire2/squeeze1x1", kernel=3, pad=1),
           op("Concat", ["fire2/expand1x1", "fire2/expand3x3"], ["fire2/concat", "fire2/concat_dims"], order="NCHW"),
           op("Dropout", ["fire2/concat"], ["fire2/concat", "_fire2/concat_mask"], ratio=0.5, is_test=1),
           *conv_relu("conv10", "fire2/concat", kernel=1),
           op("AveragePool", ["conv10"], ["pool10"], global_pooling=1),
           op("Softmax", ["pool10"], ["softmaxout"])]
    model = write_model(tmp_path / "squeezenet", ops, ["data"], ["softmaxout", "pool10"], weights)
    x = weights.data((1, 3, 32, 32))
    outputs = compile_and_run(model, {"data": x})

    def conv_relu_ref(name, value, **window):
        return relu(conv(value, *params[name], **window))

    pooled = pool(conv_relu_ref("conv1", x, stride=(2, 2)), "max", (3, 3), (2, 2))
    squeezed = conv_relu_ref("fire2/squeeze1x1", pooled)
    concat = np.concatenate([conv_relu_ref("fire2/expand1x1", squeezed),
                             conv_relu_ref("fire2/expand3x3", squeezed, pads=(1, 1, 1, 1))], axis=1)
    pool10 = conv_relu_ref("conv10", concat).mean(axis=(2, 3), keepdims=True)
    np.testing.assert_allclose(outputs["pool10"], pool10, **TOLERANCE)
    np.testing.assert_allclose(outputs["softmaxout"], softmax(pool10), **TOLERANCE)


def test_legacy_broadcast_arithmetic(tmp_path):
    """broadcast=1: B's dims match A's from `axis` on (default: A's trailing dims)."""
    weights = Weights(seed=4)
    b3, b45, b34 = weights.vector("b3", 3), weights.data((4, 5)), weights.data((3, 4))
    b141, same = weights.data((1, 4, 1)), weights.rng.uniform(1, 2, (2, 3, 4, 5)).astype(np.float32)
    weights.update({"b45": b45, "b34": b34, "b141": b141, "same": same})
    ops = [op("Add", ["x", "b3"], ["add"], broadcast=1, axis=1),
           op("Mul", ["x", "b45"], ["mul"], broadcast=1),
           op("Sub", ["x", "b34"], ["sub"], broadcast=1, axis=1),
           op("Add", ["x", "b141"], ["add_ones"], broadcast=1, axis=1),
           op("Div", ["x", "same"], ["div"])]
    model = write_model(tmp_path / "broadcast", ops, ["x"], ["add", "mul", "sub", "add_ones", "div"], weights)
    x = weights.data((2, 3, 4, 5))
    outputs = compile_and_run(model, {"x": x})
    expected = {"add": x + b3[:, None, None], "mul": x * b45, "sub": x - b34[:, :, None],
                "add_ones": x + b141[None], "div": x / same}
    for name, value in expected.items():
        np.testing.assert_allclose(outputs[name], value, **TOLERANCE, err_msg=name)


def test_window_argument_forms(tmp_path):
    """pads (t, l, b, r), pad_t/pad_l/pad_b/pad_r, kernel_h/kernel_w, kernels/strides/dilations,
    group, AveragePool's count_include_pad (off by default in Caffe2), legacy SAME padding."""
    weights = Weights(seed=5)
    w_pads, w_sides, w_grouped = (weights.filter("w_pads", (3, 2, 3, 3)), weights.filter("w_sides", (3, 2, 3, 2)),
                                  weights.filter("w_grouped", (4, 1, 2, 3)))
    b_pads = weights.vector("b_pads", 3)
    ops = [op("Conv", ["x", "w_pads", "b_pads"], ["conv_pads"], kernel=3, stride=2, pads=[1, 0, 2, 1]),
           op("Conv", ["x", "w_sides"], ["conv_sides"], kernel_h=3, kernel_w=2, stride_h=1, stride_w=2,
              pad_t=2, pad_l=1, pad_b=0, pad_r=3),
           op("Conv", ["x", "w_grouped"], ["conv_grouped"], kernels=[2, 3], strides=[1, 2], dilations=[2, 1],
              pad=1, group=2),
           op("MaxPool", ["x"], ["max_pads"], kernel=3, stride=2, pads=[0, 1, 1, 0]),
           op("AveragePool", ["x"], ["avg_exclude"], kernel=3, stride=1, pad=1),
           op("AveragePool", ["x"], ["avg_include"], kernel=3, stride=1, pad=1, count_include_pad=1),
           op("MaxPool", ["x"], ["max_same"], kernel=3, stride=2, legacy_pad=2)]
    outputs_names = [o.output[0] for o in ops]
    model = write_model(tmp_path / "windows", ops, ["x"], outputs_names, weights)
    x = weights.data((1, 2, 9, 10))
    outputs = compile_and_run(model, {"x": x})
    expected = {
        "conv_pads": conv(x, w_pads, b_pads, stride=(2, 2), pads=(1, 0, 2, 1)),
        "conv_sides": conv(x, w_sides, stride=(1, 2), pads=(2, 1, 0, 3)),
        "conv_grouped": conv(x, w_grouped, stride=(1, 2), pads=(1, 1, 1, 1), dilation=(2, 1), group=2),
        "max_pads": pool(x, "max", (3, 3), (2, 2), (0, 1, 1, 0)),
        "avg_exclude": pool(x, "avg", (3, 3), (1, 1), (1, 1, 1, 1)),
        "avg_include": pool(x, "avg", (3, 3), (1, 1), (1, 1, 1, 1), count_include_pad=True),
        # SAME: ceil(9/2) = 5 rows need 2 pad rows (1 top, 1 bottom); 5 columns need 1 (0 left, 1 right)
        "max_same": pool(x, "max", (3, 3), (2, 2), (1, 0, 1, 1)),
    }
    for name, value in expected.items():
        assert outputs[name].shape == value.shape, name
        np.testing.assert_allclose(outputs[name], value, **TOLERANCE, err_msg=name)


def test_other_ops(tmp_path):
    """LRN, LeakyRelu, Clip, Scale, Transpose, Reshape (old_shape output), FC with axis,
    Softmax with axis, ExpandDims/Squeeze, Flatten, FlattenToVec, Concat add_axis, ConvTranspose."""
    weights = Weights(seed=6)
    w_fc, b_fc = weights.filter("fc_w", (7, 20)), weights.vector("fc_b", 7)
    w_t, b_t = weights.filter("convt_w", (3, 2, 3, 3)), weights.vector("convt_b", 2)
    ops = [op("LRN", ["x"], ["lrn"], size=3, alpha=0.5, beta=0.75, bias=2.0, order="NCHW"),
           op("LeakyRelu", ["x"], ["leaky"], alpha=0.2),
           op("Clip", ["x"], ["clip"], min=-0.5, max=0.3),
           op("Scale", ["x"], ["scaled"], scale=2.5),
           op("Transpose", ["x"], ["transposed"], axes=[0, 2, 3, 1]),
           op("Reshape", ["x"], ["reshaped", "old_shape"], shape=[2, -1, 5]),
           op("FC", ["x", "fc_w", "fc_b"], ["fc_axis2"], axis=2),
           op("Softmax", ["x"], ["softmax_axis2"], axis=2),
           op("ExpandDims", ["x"], ["expanded"], dims=[0, 3]),
           op("Squeeze", ["expanded"], ["squeezed"], dims=[0]),
           op("Flatten", ["x"], ["flat"], axis=2),
           op("FlattenToVec", ["x"], ["vec"]),
           op("Copy", ["x"], ["copied"]),
           op("Concat", ["x", "copied"], ["stacked", "stacked_info"], axis=1, add_axis=1),
           op("ConvTranspose", ["x", "convt_w", "convt_b"], ["convt"], kernel=3, stride=2, pad=1, adj=1)]
    output_names = ["lrn", "leaky", "clip", "scaled", "transposed", "reshaped", "fc_axis2", "softmax_axis2",
                    "squeezed", "flat", "vec", "stacked", "convt"]
    model = write_model(tmp_path / "misc", ops, ["x"], output_names, weights)
    x = weights.data((2, 3, 4, 5))
    outputs = compile_and_run(model, {"x": x})
    expected = {
        "lrn": lrn(x, 3, 0.5, 0.75, 2.0), "leaky": np.where(x > 0, x, 0.2 * x), "clip": np.clip(x, -0.5, 0.3),
        "scaled": 2.5 * x, "transposed": x.transpose(0, 2, 3, 1), "reshaped": x.reshape(2, 12, 5),
        "fc_axis2": fully_connected(x, w_fc, b_fc, axis=2), "softmax_axis2": softmax(x, axis=2),
        "squeezed": x.reshape(2, 3, 1, 4, 5), "flat": x.reshape(6, 20), "vec": x.reshape(-1),
        "stacked": np.stack([x, x], axis=1), "convt": conv_transpose(x, w_t, b_t, 2, (1, 1, 1, 1), 1),
    }
    for name, value in expected.items():
        assert outputs[name].shape == value.shape, name
        np.testing.assert_allclose(outputs[name], value, **TOLERANCE, err_msg=name)


# ----------------------------------------------------------------------------- model forms and names


def small_model(directory, text=False, **options):
    """Conv (named op) -> in-place Relu -> FC -> Softmax; returns (model dir, reference function)."""
    weights = Weights(seed=7)
    w, b = weights.filter("conv_w", (3, 1, 3, 3)), weights.vector("conv_b", 3)
    w_fc, b_fc = weights.filter("fc_w", (4, 48)), weights.vector("fc_b", 4)
    ops = [op("Conv", ["data", "conv_w", "conv_b"], ["conv"], name="my_conv", kernel=3),
           op("Relu", ["conv"], ["conv"]),
           op("FC", ["conv", "fc_w", "fc_b"], ["fc"]),
           op("Softmax", ["fc"], ["prob"])]
    model = write_model(directory, ops, ["data"], ["prob"], weights, text=text)

    def reference(x):
        return softmax(fully_connected(relu(conv(x, w, b)), w_fc, b_fc))

    return model, reference


def test_two_paths_form(tmp_path):
    model, reference = small_model(tmp_path / "pair")
    x = Weights(seed=8).data((2, 1, 6, 6))
    paths = [os.path.join(model, "predict_net.pb"), os.path.join(model, "init_net.pb")]
    bundle = glowmlir.compile(paths, model_inputs=[ModelInput("data", "float", x.shape)])
    assert bundle.name == "predict_net"  # Glow's default: the first path's base name
    np.testing.assert_allclose(bundle.run({"data": x})["prob"], reference(x), **TOLERANCE)


def test_text_format_directory(tmp_path):
    model, reference = small_model(tmp_path / "text_net", text=True)
    assert sorted(os.listdir(model)) == ["init_net.pbtxt", "predict_net.pbtxt"]
    x = Weights(seed=9).data((1, 1, 6, 6))
    np.testing.assert_allclose(compile_and_run(model, {"data": x})["prob"], reference(x), **TOLERANCE)


def test_nodes_carry_caffe2_op_names(tmp_path):
    """The op's name, else its first output (as Glow names nodes; profiles key on them)."""
    model, _ = small_model(tmp_path / "names")
    text = str(import_caffe2([model], [ModelInput("data", "float", (1, 1, 6, 6))], "names"))
    assert 'glow.convolution' in text and 'name = "my_conv"' in text
    assert 'name = "fc"' in text
    assert 'glow.save %' in text and 'as "prob"' in text


# ----------------------------------------------------------------------------- errors


def import_error(model, inputs=(("data", (1, 1, 6, 6)),)) -> str:
    with pytest.raises(GlowError) as error:
        import_caffe2([model] if isinstance(model, str) else model,
                      [ModelInput(name, "float", shape) for name, shape in inputs], "net")
    message = str(error.value)
    assert "\n" not in message
    return message


def test_missing_model_input(tmp_path):
    model, _ = small_model(tmp_path / "m")
    message = import_error(model, inputs=())
    assert '"data"' in message and "-model-input=data,float," in message


def test_model_input_naming_no_input(tmp_path):
    model, _ = small_model(tmp_path / "m")
    message = import_error(model, inputs=(("data", (1, 1, 6, 6)), ("image", (1, 3))))
    assert '"image"' in message and "data" in message


def single_op_model(directory, operator: OperatorDef, weights=None, init_ops=()) -> str:
    model = write_model(directory, [operator], ["data"], list(operator.output[:1]), weights or {})
    if init_ops:
        with open(os.path.join(model, "init_net.pb"), "wb") as f:
            f.write(NetDef(op=init_ops).SerializeToString())
    return model


@pytest.mark.parametrize("operator, fragments", [
    (op("Frobnicate", ["data"], ["y"], name="weird"),
     ['Caffe2 op "weird" (Frobnicate)', 'unsupported op type "Frobnicate"']),
    (op("Frobnicate", ["data"], ["y"]), ['Caffe2 op "y" (Frobnicate)']),
    (op("Int8Relu", ["data"], ["y"]), ['"y" (Int8Relu)', "-load-profile"]),
])
def test_unsupported_op(tmp_path, operator, fragments):
    message = import_error(single_op_model(tmp_path / "m", operator))
    for fragment in fragments:
        assert fragment in message


@pytest.mark.parametrize("operator, fragment", [
    (op("MaxPool", ["data"], ["y"], kernel=2, order="NHWC"), 'order="NHWC"'),
    (op("MaxPool", ["data"], ["y"], kernel=2, legacy_pad=3), "legacy_pad=3"),
    (op("Dropout", ["data"], ["y", "mask"], ratio=0.5), "is_test=0"),
    (op("SpatialBN", ["data", "s", "b", "m", "v"], ["y"], is_test=0), "is_test=0"),
    (op("Add", ["data", "b"], ["y"], broadcast=1, axis=4), "axis=4"),
    (op("Conv", ["data", "w"], ["y"], kernel=5), "kernel [5, 5]"),
    (op("Conv", ["data", "w"], ["y"], pads=[1, 1]), "pads=[1, 1]"),
    (op("LRN", ["data"], ["y"], alpha=0.1), 'argument "size" is required'),
    (op("Reshape", ["data"], ["y"], shape=[1.5, 2.5]), 'argument "shape"'),
])
def test_unsupported_argument(tmp_path, operator, fragment):
    weights = {name: np.ones(1, np.float32) for name in ("s", "b", "m", "v")}
    weights["w"] = np.ones((2, 1, 3, 3), np.float32)
    message = import_error(single_op_model(tmp_path / "m", operator, weights))
    assert message.startswith(f'Caffe2 op "y" ({operator.type}): ')
    assert fragment in message


def test_unsupported_fill_in_init_net(tmp_path):
    model = single_op_model(tmp_path / "m", op("Relu", ["data"], ["y"]),
                            init_ops=[op("XavierFill", [], ["w"], shape=[2, 2])])
    assert 'Caffe2 op "w" (XavierFill): unsupported op type "XavierFill" in init_net' in import_error(model)


def test_external_output_not_computed(tmp_path):
    model = write_model(tmp_path / "m", [op("Relu", ["data"], ["y"])], ["data"], ["z"], {})
    assert 'external_output "z"' in import_error(model)


def test_missing_files(tmp_path):
    model, _ = small_model(tmp_path / "m")
    os.remove(os.path.join(model, "init_net.pb"))
    message = import_error(model)
    assert message == f'-model: file "{os.path.join(model, "init_net.pb")}" not found'
    message = import_error([str(tmp_path / "nothing.pb"), os.path.join(model, "predict_net.pb")])
    assert "nothing.pb" in message and "not found" in message


@pytest.mark.parametrize("file_name, content", [("predict_net.pb", b"this is not a protobuf\n"),
                                                ("predict_net.pbtxt", b"this is not a protobuf\n")])
def test_unparsable_file(tmp_path, file_name, content):
    model, _ = small_model(tmp_path / "m")
    with open(os.path.join(model, file_name), "wb") as f:
        f.write(content)
    message = import_error(model)
    assert os.path.join(model, file_name) in message and "not a Caffe2 NetDef" in message


# ----------------------------------------------------------------------------- the command line


def test_command_line(tmp_path, capsys):
    model, _ = small_model(tmp_path / "lenet_mnist")
    out = str(tmp_path / "bundle")
    compile_cli.main(["-backend=CPU", f"-model={model}", "-model-input=data,float,[1,1,6,6]", f"-emit-bundle={out}"])
    assert {"lenet_mnist.h", "lenet_mnist.o", "lenet_mnist.weights.bin"} <= set(os.listdir(out))
    with open(os.path.join(out, "lenet_mnist.h")) as f:
        assert "LENET_MNIST_prob" in f.read()
    capsys.readouterr()

    bad_out = str(tmp_path / "bad_bundle")
    with pytest.raises(SystemExit) as exit_info:
        compile_cli.main(["-backend=CPU", f"-model={model}", f"-emit-bundle={bad_out}"])
    assert exit_info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("glow-compile: error: ") and "-model-input=data" in lines[0]
    assert not os.path.exists(bad_out)
