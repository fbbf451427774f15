"""Models for the tests: onnx's light models with their splat weights made random, and small graphs."""

from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import helper, numpy_helper

LIGHT_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
LENET = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "lenet_mnist", "lenet_mnist.onnx")


def lenet_evaluation_digits() -> tuple[np.ndarray, np.ndarray]:
    """LeNet's evaluation set: the held-out MNIST digits (examples/lenet_mnist/heldout.npz)
    without the 20 that the example's calibration images (examples/lenet_mnist/images, named
    `<MNIST index>_<label>.png`) are copies of, so that no digit both calibrates and scores.
    Images float32 [N, 1, 1, 28, 28] in [0, 1], labels [N]."""
    example = os.path.dirname(LENET)
    data = np.load(os.path.join(example, "heldout.npz"))
    calibration = {int(name.split("_")[0]) for name in os.listdir(os.path.join(example, "images"))}
    keep = np.array([int(index) not in calibration for index in data["indices"]])
    assert len(keep) - keep.sum() == len(calibration), "a calibration image is not among the held-out digits"
    return (data["images"][keep].astype(np.float32) / np.float32(255))[:, None, None], data["labels"][keep]


def light_model_path(name: str) -> str:
    return os.path.join(LIGHT_DIR, f"light_{name}.onnx")


def light_reference_output(name: str) -> np.ndarray:
    tensor = onnx.TensorProto()
    with open(os.path.join(LIGHT_DIR, f"light_{name}_output_0.pb"), "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


def randomized(model: onnx.ModelProto, seed: int = 0, extra_outputs: list[str] = ()) -> onnx.ModelProto:
    """The model with every ConstantOfShape weight replaced by random values.

    Filters get He-scaled normal values (so activations stay O(1) through deep nets);
    1-D parameters (biases, batch-norm scale/shift/mean/variance) get values in [0.5, 1.5],
    positive so that variances stay valid.
    """
    rng = np.random.default_rng(seed)
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    shapes = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    kept = []
    for node in graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in shapes:
            shape = tuple(int(d) for d in shapes[node.input[0]])
            if len(shape) >= 2:
                fan_in = int(np.prod(shape[1:]))
                value = rng.normal(0.0, np.sqrt(2.0 / fan_in), shape)
            else:
                value = rng.uniform(0.5, 1.5, shape)
            graph.initializer.append(numpy_helper.from_array(value.astype(np.float32), node.output[0]))
        else:
            kept.append(node)
    del graph.node[:]
    graph.node.extend(kept)
    inputs = {i.name for i in graph.input}
    for init in graph.initializer:
        if init.name not in inputs:
            graph.input.append(helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
    if extra_outputs:
        inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(model).graph.value_info}
        graph.output.extend(inferred[name] for name in extra_outputs)
    return model


def graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    initializers = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initializers]


def random_inputs(model: onnx.ModelProto, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
            for i in graph_inputs(model)}


def onnxruntime_outputs(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(model.SerializeToString(), options)
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, inputs)))


def small_convnet(seed: int = 0) -> onnx.ModelProto:
    """A CIFAR-10-sized conv net with random weights: padded convolutions with ReLU, max and
    average pooling (fused into the convolutions), a depthwise convolution, a residual Add,
    global average pooling, Gemm and Softmax."""
    rng = np.random.default_rng(seed)

    def weight(*shape):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        return numpy_helper.from_array(rng.normal(0, np.sqrt(2 / fan_in), shape).astype(np.float32))

    initializers = {"w1": weight(16, 3, 3, 3), "b1": weight(16), "w2": weight(24, 16, 3, 3), "b2": weight(24),
                    "w3": weight(24, 1, 3, 3), "b3": weight(24), "fc_w": weight(10, 24), "fc_b": weight(10)}
    for name, tensor in initializers.items():
        tensor.name = name
    nodes = [
        helper.make_node("Conv", ["data", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("AveragePool", ["r2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p2", "w3", "b3"], ["c3"], pads=[1, 1, 1, 1], group=24),
        helper.make_node("Add", ["c3", "p2"], ["sum"]),
        helper.make_node("Relu", ["sum"], ["r3"]),
        helper.make_node("GlobalAveragePool", ["r3"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["prob"], axis=1),
    ]
    graph = helper.make_graph(nodes, "small_convnet",
                              [helper.make_tensor_value_info("data", onnx.TensorProto.FLOAT, [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("prob", onnx.TensorProto.FLOAT, [1, 10]),
                               helper.make_tensor_value_info("logits", onnx.TensorProto.FLOAT, [1, 10])],
                              list(initializers.values()))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def without_softmax(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with its last Softmax removed: the Softmax's input (the logits) is its only
    output, informative to compare where probabilities saturate or are uniform. A model
    without a Softmax is returned unchanged (a copy)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    softmax = next((n for n in reversed(copy.graph.node) if n.op_type == "Softmax"), None)
    if softmax is None:
        return copy
    copy.graph.node.remove(softmax)
    del copy.graph.output[:]
    copy.graph.output.append(helper.make_empty_tensor_value_info(softmax.input[0]))
    inferred = onnx.shape_inference.infer_shapes(copy)
    logits = next(v for v in inferred.graph.value_info if v.name == softmax.input[0])
    del copy.graph.output[:]
    copy.graph.output.append(logits)
    return copy


def quantized_by_onnxruntime(model: onnx.ModelProto, samples: list[dict[str, np.ndarray]], directory: str,
                             quant_format: str = "QDQ", per_channel: bool = False, reduce_range: bool = True) -> str:
    """The model quantized by onnxruntime's `quantize_static` (int8 activations and weights,
    calibrated on `samples`) in the QDQ or QOperator form; returns its path.

    Weights take 7 bits (`reduce_range`): on an x86 CPU without VNNI, onnxruntime's int8
    convolutions and matrix products multiply in pairs summed into saturating 16-bit lanes
    (AVX2 `vpmaddubsw`), so with full-range weights its own int8 run is not exact there (LeNet's
    logits came out 3 levels from the exact result on an AVX2-only host); with 7-bit weights it
    is exact on every CPU, and an oracle. With `reduce_range=False` (8-bit weights, for a
    comparison of accuracy), run the QDQ model with onnxruntime's graph optimizations off
    (`exact_qdq_session`): DequantizeLinear -> float op -> QuantizeLinear, the same numbers on
    every CPU."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Samples(CalibrationDataReader):
        def __init__(self):
            self.remaining = iter(samples)

        def get_next(self):
            return next(self.remaining, None)

    source, target = os.path.join(directory, "float.onnx"), os.path.join(directory, f"{quant_format}.onnx")
    onnx.save(model, source)
    quantize_static(source, target, Samples(), quant_format=QuantFormat[quant_format],
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, per_channel=per_channel,
                    reduce_range=reduce_range)
    return target


def exact_qdq_session(path: str):
    """An onnxruntime session of a QDQ model that computes what the model says on every CPU:
    graph optimizations off, so no QDQ group is fused into an int8 kernel (whose AVX2 form
    saturates 16-bit pair sums on a CPU without VNNI)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def he_initialized(rng: np.random.Generator, initializers: list, name: str, *shape: int) -> str:
    """Appends to `initializers` a random weight `name` of `shape` with He's deviation
    sqrt(2 / fan-in); a bias (one dimension) gets a small deviation, so that outputs follow the
    input. Returns the name."""
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 0
    deviation = np.sqrt(2 / fan_in) if fan_in else 0.05
    initializers.append(numpy_helper.from_array(rng.normal(0, deviation, shape).astype(np.float32), name))
    return name


def mobilenet_v3_style(seed: int = 0, size: int = 64, classes: int = 10) -> onnx.ModelProto:
    """A MobileNetV3-small-style net with random weights: HardSwish stem, inverted residual
    blocks (1x1 expansion, depthwise 3x3/5x5, squeeze-excitation with ReLU and HardSigmoid
    gating a Mul, 1x1 projection, residual Add), GlobalAveragePool, Gemm. Input
    [1, 3, size, size], output "logits"; small biases, so that the class depends on the input."""
    rng = np.random.default_rng(seed)
    initializers, nodes = [], []

    def weight(name, *shape):
        return he_initialized(rng, initializers, name, *shape)

    def conv(x, name, out_channels, in_channels, kernel, stride=1, group=1):
        filter_ = weight(f"{name}_w", out_channels, in_channels // group, kernel, kernel)
        nodes.append(helper.make_node("Conv", [x, filter_, weight(f"{name}_b", out_channels)], [name],
                                      pads=[kernel // 2] * 4, strides=[stride, stride], group=group))
        return name

    def activation(x, kind):
        name = f"{x}_{kind.lower()}"
        nodes.append(helper.make_node(kind, [x], [name]))
        return name

    def squeeze_excite(x, channels):
        pooled = f"{x}_se_pool"
        nodes.append(helper.make_node("GlobalAveragePool", [x], [pooled]))
        squeezed = activation(conv(pooled, f"{x}_se_reduce", channels // 4, channels, 1), "Relu")
        gate = f"{x}_se_gate"
        nodes.append(helper.make_node("HardSigmoid", [conv(squeezed, f"{x}_se_expand", channels, channels // 4, 1)],
                                      [gate], alpha=1 / 6, beta=0.5))
        nodes.append(helper.make_node("Mul", [x, gate], [f"{x}_se"]))
        return f"{x}_se"

    x = activation(conv("data", "stem", 16, 3, 3, stride=2), "HardSwish")
    channels = 16
    for index, (expanded, out, kernel, stride, se, kind) in enumerate(
            [(16, 16, 3, 2, True, "Relu"), (72, 24, 3, 2, False, "Relu"), (88, 24, 3, 1, False, "Relu"),
             (96, 40, 5, 2, True, "HardSwish"), (120, 40, 5, 1, True, "HardSwish")]):
        block = f"block{index}"
        y = activation(conv(x, f"{block}_expand", expanded, channels, 1), kind) if expanded != channels else x
        y = activation(conv(y, f"{block}_depthwise", expanded, expanded, kernel, stride, group=expanded), kind)
        if se:
            y = squeeze_excite(y, expanded)
        y = conv(y, f"{block}_project", out, expanded, 1)
        if stride == 1 and out == channels:
            nodes.append(helper.make_node("Add", [y, x], [f"{block}_sum"]))
            y = f"{block}_sum"
        x, channels = y, out
    x = activation(conv(x, "last", 96, channels, 1), "HardSwish")
    nodes += [helper.make_node("GlobalAveragePool", [x], ["pooled"]), helper.make_node("Flatten", ["pooled"], ["flat"]),
              helper.make_node("Gemm", ["flat", weight("fc_w", classes, 96), weight("fc_b", classes)], ["logits"],
                               transB=1)]
    graph = helper.make_graph(nodes, "mobilenet_v3_style",
                              [helper.make_tensor_value_info("data", onnx.TensorProto.FLOAT, [1, 3, size, size])],
                              [helper.make_tensor_value_info("logits", onnx.TensorProto.FLOAT, [1, classes])],
                              initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)


def ppocr_cls_style(seed: int = 0, width: int = 192) -> onnx.ModelProto:
    """A PP-OCR text-direction-classifier-style net (PaddleOCR's `cls`: MobileNetV3-small at
    scale 0.35, input [1, 3, 48, 192]) with random weights and the activations written out as
    Paddle's exporter writes them: HardSwish as Add(3) -> Clip(0, 6) -> Mul(x) -> Div(6),
    HardSigmoid (the squeeze-excitation gates) as Mul(0.2) -> Add(0.5) -> Clip(0, 1). Stem
    convolution of stride 2, eleven inverted-residual blocks (1x1 expansion, depthwise 3x3/5x5
    of stride (2, 1) or 1, squeeze-excitation, 1x1 projection, residual Add), a 1x1 to 200
    channels, MaxPool 2x2, GlobalAveragePool, Gemm to 2 classes, Softmax ("softmax"). A
    narrower `width` (a multiple of 4) makes the same net on a shorter line of text."""
    rng = np.random.default_rng(seed)
    initializers, nodes = [], []

    def weight(name, *shape):
        return he_initialized(rng, initializers, name, *shape)

    def scalar(name, value):
        if name not in {i.name for i in initializers}:
            initializers.append(numpy_helper.from_array(np.array(value, np.float32), name))
        return name

    def node(op_type, inputs, output, **attributes):
        nodes.append(helper.make_node(op_type, inputs, [output], name=output, **attributes))
        return output

    def conv(x, name, out_channels, in_channels, kernel, stride=(1, 1), group=1):
        filter_ = weight(f"{name}_w", out_channels, in_channels // group, kernel, kernel)
        return node("Conv", [x, filter_, weight(f"{name}_b", out_channels)], name, pads=[kernel // 2] * 4,
                    strides=list(stride), group=group)

    def hard_swish(x):
        gate = node("Clip", [node("Add", [x, scalar("three", 3.0)], f"{x}_add"), scalar("zero", 0.0),
                             scalar("six", 6.0)], f"{x}_clip")
        return node("Div", [node("Mul", [x, gate], f"{x}_mul"), "six"], f"{x}_hardswish")

    def hard_sigmoid(x):
        scaled = node("Add", [node("Mul", [x, scalar("slope", 0.2)], f"{x}_mul"), scalar("offset", 0.5)], f"{x}_add")
        return node("Clip", [scaled, "zero", scalar("one", 1.0)], f"{x}_hardsigmoid")

    def activation(x, kind):
        return hard_swish(x) if kind == "hardswish" else node("Relu", [x], f"{x}_relu")

    def squeeze_excite(x, channels):
        pooled = node("GlobalAveragePool", [x], f"{x}_se_pool")
        squeezed = node("Relu", [conv(pooled, f"{x}_se_reduce", channels // 4, channels, 1)], f"{x}_se_relu")
        gate = hard_sigmoid(conv(squeezed, f"{x}_se_expand", channels, channels // 4, 1))
        return node("Mul", [x, gate], f"{x}_se")

    x = hard_swish(conv("data", "stem", 8, 3, 3, stride=(2, 2)))
    channels = 8
    blocks = [(3, 8, 8, True, "relu", (2, 1)), (3, 24, 8, False, "relu", (2, 1)), (3, 32, 8, False, "relu", (1, 1)),
              (5, 32, 16, True, "hardswish", (2, 1)), (5, 88, 16, True, "hardswish", (1, 1)),
              (5, 88, 16, True, "hardswish", (1, 1)), (5, 40, 16, True, "hardswish", (1, 1)),
              (5, 48, 16, True, "hardswish", (1, 1)), (5, 104, 32, True, "hardswish", (2, 1)),
              (5, 200, 32, True, "hardswish", (1, 1)), (5, 200, 32, True, "hardswish", (1, 1))]
    for index, (kernel, expanded, out, se, kind, stride) in enumerate(blocks):
        block = f"block{index}"
        y = activation(conv(x, f"{block}_expand", expanded, channels, 1), kind)
        y = activation(conv(y, f"{block}_depthwise", expanded, expanded, kernel, stride, group=expanded), kind)
        if se:
            y = squeeze_excite(y, expanded)
        y = conv(y, f"{block}_project", out, expanded, 1)
        if stride == (1, 1) and out == channels:
            y = node("Add", [y, x], f"{block}_sum")
        x, channels = y, out
    x = hard_swish(conv(x, "last", 200, channels, 1))
    x = node("MaxPool", [x], "last_pool", kernel_shape=[2, 2], strides=[2, 2])
    x = node("Flatten", [node("GlobalAveragePool", [x], "pooled")], "flat")
    logits = node("Gemm", [x, weight("fc_w", 2, 200), weight("fc_b", 2)], "logits", transB=1)
    node("Softmax", [logits], "softmax", axis=1)
    graph = helper.make_graph(nodes, "ppocr_cls_style",
                              [helper.make_tensor_value_info("data", onnx.TensorProto.FLOAT, [1, 3, 48, width])],
                              [helper.make_tensor_value_info("softmax", onnx.TensorProto.FLOAT, [1, 2])],
                              initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def activations_after_layers(seed: int = 0) -> onnx.ModelProto:
    """Each kind of layer followed by an activation written out, as exporters do, with random
    weights: input "x" [1, 4, 10, 12]; a 3x3 convolution to 8 channels then HardSwish
    (Add -> Clip -> Mul -> Div), a 3x3 depthwise one then SiLU (Sigmoid -> Mul), a 1x1 one to
    12 channels then GELU (Div -> Erf -> Add -> Mul -> Mul), saved as "features"; then
    GlobalAveragePool, Flatten, Gemm to 6 and HardSwish, saved as "y"."""
    rng = np.random.default_rng(seed)
    initializers, nodes = [], []

    def node(op_type, inputs, output, **attributes):
        nodes.append(helper.make_node(op_type, inputs, [output], name=output, **attributes))
        return output

    def conv(x, name, out_channels, in_channels, kernel, group=1):
        filter_ = he_initialized(rng, initializers, f"{name}_w", out_channels, in_channels // group, kernel, kernel)
        return node("Conv", [x, filter_, he_initialized(rng, initializers, f"{name}_b", out_channels)], name,
                    pads=[kernel // 2] * 4, group=group)

    for name, value in (("three", 3.0), ("zero", 0.0), ("six", 6.0), ("sqrt2", float(np.sqrt(2.0))), ("one", 1.0),
                        ("half", 0.5)):
        initializers.append(numpy_helper.from_array(np.array(value, np.float32), name))

    def hard_swish(x):
        gate = node("Clip", [node("Add", [x, "three"], f"{x}_add"), "zero", "six"], f"{x}_clip")
        return node("Div", [node("Mul", [x, gate], f"{x}_mul"), "six"], f"{x}_hardswish")

    def silu(x):
        return node("Mul", [x, node("Sigmoid", [x], f"{x}_sigmoid")], f"{x}_silu")

    def gelu(x, output):
        erf = node("Erf", [node("Div", [x, "sqrt2"], f"{x}_div")], f"{x}_erf")
        return node("Mul", [node("Mul", [x, node("Add", [erf, "one"], f"{x}_add")], f"{x}_mul"), "half"], output)

    x = hard_swish(conv("x", "conv", 8, 4, 3))
    x = silu(conv(x, "depthwise", 8, 8, 3, group=8))
    features = gelu(conv(x, "pointwise", 12, 8, 1), "features")
    flat = node("Flatten", [node("GlobalAveragePool", [features], "pooled")], "flat")
    logits = node("Gemm", [flat, he_initialized(rng, initializers, "fc_w", 6, 12),
                           he_initialized(rng, initializers, "fc_b", 6)], "fc", transB=1)
    node("Identity", [hard_swish(logits)], "y")
    graph = helper.make_graph(nodes, "activations_after_layers",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4, 10, 12])],
                              [helper.make_tensor_value_info("features", onnx.TensorProto.FLOAT, [1, 12, 10, 12]),
                               helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 6])],
                              initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def ds_cnn_style(seed: int = 0, classes: int = 12) -> onnx.ModelProto:
    """A DS-CNN-small-style keyword-spotting net (Arm's ML-zoo KWS) with random weights:
    [1, 1, 49, 10] MFCC features, a 10x4 stride-2 convolution to 64 channels, four
    depthwise-separable blocks (3x3 depthwise, 1x1 pointwise, ReLU after each), average
    pooling over the whole map, Gemm to `classes` logits ("logits")."""
    rng = np.random.default_rng(seed)
    initializers, nodes = [], []

    def weight(name, *shape):
        return he_initialized(rng, initializers, name, *shape)

    def conv_relu(x, name, out_channels, in_channels, kernel, pads, stride=1, group=1):
        filter_ = weight(f"{name}_w", out_channels, in_channels // group, *kernel)
        nodes.append(helper.make_node("Conv", [x, filter_, weight(f"{name}_b", out_channels)], [name], pads=pads,
                                      strides=[stride, stride], group=group))
        nodes.append(helper.make_node("Relu", [name], [f"{name}_relu"]))
        return f"{name}_relu"

    x = conv_relu("data", "stem", 64, 1, (10, 4), [4, 1, 5, 1], stride=2)  # 'same': 25 x 5
    for index in range(4):
        x = conv_relu(x, f"block{index}_depthwise", 64, 64, (3, 3), [1, 1, 1, 1], group=64)
        x = conv_relu(x, f"block{index}_pointwise", 64, 64, (1, 1), [0, 0, 0, 0])
    nodes += [helper.make_node("AveragePool", [x], ["pooled"], kernel_shape=[25, 5]),
              helper.make_node("Flatten", ["pooled"], ["flat"]),
              helper.make_node("Gemm", ["flat", weight("fc_w", classes, 64), weight("fc_b", classes)], ["logits"],
                               transB=1)]
    graph = helper.make_graph(nodes, "ds_cnn_style",
                              [helper.make_tensor_value_info("data", onnx.TensorProto.FLOAT, [1, 1, 49, 10])],
                              [helper.make_tensor_value_info("logits", onnx.TensorProto.FLOAT, [1, classes])],
                              initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)
