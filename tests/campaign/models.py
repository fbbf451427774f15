"""Tiny models for the campaign, written into a case's work directory: ONNX graphs built with
`onnx.helper`, a float TFLite model, a Caffe2 net pair, and byte-level mutations of them."""

from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FLOAT = TensorProto.FLOAT


def tensor(name: str, shape, element_type: int = FLOAT) -> onnx.ValueInfoProto:
    """A graph input or output; `shape=None` leaves the shape unset, a string entry is symbolic."""
    return helper.make_tensor_value_info(name, element_type, shape)


def constant(name: str, array) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(array), name)


def graph_model(nodes, inputs, outputs, initializers=(), opset: int | None = 13, ir_version: int = 8,
                infer: bool = True) -> onnx.ModelProto:
    """A model of `nodes`; `outputs` are names (typed by shape inference where it can) or value infos.
    No checker runs: malformed graphs are the point."""
    outputs = [tensor(o, None) if isinstance(o, str) else o for o in outputs]
    graph = helper.make_graph(list(nodes), "campaign", list(inputs), outputs, list(initializers))
    opsets = [] if opset is None else [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=ir_version)
    if infer:
        try:
            inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
        except Exception:  # noqa: BLE001 - malformed on purpose: keep the untyped outputs
            return model
        known = {v.name: v for v in [*inferred.graph.value_info, *inferred.graph.output]
                 if v.type.tensor_type.HasField("shape")}
        for index, output in enumerate(model.graph.output):
            if not output.type.tensor_type.HasField("shape") and output.name in known:
                model.graph.output[index].CopyFrom(known[output.name])
    return model


def unary_model(op_type: str = "Relu", shape=(1, 4), **attributes) -> onnx.ModelProto:
    return graph_model([helper.make_node(op_type, ["x"], ["y"], **attributes)], [tensor("x", list(shape))], ["y"])


def single_op_model(op_type: str, input_shapes: dict, initializers: dict | None = None, opset: int = 13,
                    **attributes) -> onnx.ModelProto:
    """`op_type` over graph inputs then constant initializers (in that order), output y."""
    initializers = initializers or {}
    node = helper.make_node(op_type, [*input_shapes, *initializers], ["y"], **attributes)
    return graph_model([node], [tensor(n, list(s)) for n, s in input_shapes.items()], ["y"],
                       [constant(n, v) for n, v in initializers.items()], opset=opset)


def conv_model(input_shape=(1, 3, 8, 8), filter_shape=(4, 3, 3, 3), seed: int = 0, **attributes) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    weights = {"w": rng.standard_normal(filter_shape).astype(np.float32),
               "b": rng.standard_normal(filter_shape[:1]).astype(np.float32)}
    return single_op_model("Conv", {"x": input_shape}, weights, **attributes)


def small_convnet() -> onnx.ModelProto:
    from tests.support.models import small_convnet as convnet

    return convnet(seed=0)


def save(model: onnx.ModelProto, path: str) -> str:
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path


# ----------------------------------------------------------------------------- TFLite and Caffe2


def tflite_model() -> bytes:
    """A float TFLite model: y = relu(x + c), x [1, 8]."""
    from tests.support.tflite_models import ModelBuilder

    builder = ModelBuilder()
    x = builder.input("x", [1, 8])
    c = builder.constant("c", np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8))
    s = builder.tensor("s", [1, 8])
    y = builder.tensor("y", [1, 8])
    builder.op("ADD", [x, c], [s], "AddOptions")
    builder.op("RELU", [s], [y])
    builder.output(y)
    return builder.finish()


def tflite_int8_model() -> bytes:
    """An int8 TFLite model as the converter writes one: a per-channel convolution, a
    per-tensor fully connected layer and a softmax, x [1, 6, 6, 2] with float I/O."""
    from tests.support.tflite_models import Net, build

    net = Net(seed=0)
    x = net.input("x", [1, 6, 6, 2])
    x = net.conv2d(x, 4, 3, 2, "SAME", "RELU")
    x = net.reshape(x, [1, -1])
    x = net.fully_connected(x, 5)
    net.output(net.softmax(x, 1.0, name="y"))
    return build(net, quantized=True, float_io=True)


def caffe2_ops(fc_weights: bool = True):
    """predict_net and init_net of y = relu(FC(x)), x [1, 4] (x needs -model-input)."""
    from glowmlir.importers.caffe2_schema import Argument, NetDef, OperatorDef

    def op(op_type, inputs, outputs, **arguments):
        args = []
        for key, value in arguments.items():
            argument = Argument(name=key)
            if isinstance(value, list) and all(isinstance(v, int) for v in value):
                argument.ints.extend(value)
            elif isinstance(value, list):
                argument.floats.extend(value)
            else:
                argument.i = value
            args.append(argument)
        return OperatorDef(type=op_type, input=inputs, output=outputs, arg=args)

    rng = np.random.default_rng(0)
    weights = {"w": rng.standard_normal((3, 4)).astype(np.float32), "b": rng.standard_normal(3).astype(np.float32)}
    if not fc_weights:
        weights.pop("b")
    init = NetDef(name="init", op=[op("GivenTensorFill", [], [n], values=[float(v) for v in a.ravel()],
                                      shape=list(a.shape)) for n, a in weights.items()])
    predict = NetDef(name="predict", op=[op("FC", ["x", "w", "b"], ["fc"]), op("Relu", ["fc"], ["y"])],
                     external_input=["x", "w", "b"], external_output=["y"])
    return predict, init


def write_caffe2(directory: str, fc_weights: bool = True) -> str:
    os.makedirs(directory, exist_ok=True)
    predict, init = caffe2_ops(fc_weights)
    for stem, net in (("predict_net", predict), ("init_net", init)):
        with open(os.path.join(directory, f"{stem}.pb"), "wb") as f:
            f.write(net.SerializeToString())
    return directory


# ----------------------------------------------------------------------------- mutations


def bit_flipped(data: bytes, seed: int, flips: int = 1) -> bytes:
    """`flips` random bits of `data` inverted (reproducible from `seed`)."""
    rng = np.random.default_rng(seed)
    mutated = bytearray(data)
    for position in rng.integers(0, len(data) * 8, flips):
        mutated[position // 8] ^= 1 << (position % 8)
    return bytes(mutated)


def flip_in_string(data: bytes, text: bytes, bit: int = 7) -> bytes:
    """The high bit of the first byte of `text` flipped where it occurs in `data`: an invalid UTF-8
    string field (for bit 7), or a different name (lower bits)."""
    index = data.index(text)
    mutated = bytearray(data)
    mutated[index] ^= 1 << bit
    return bytes(mutated)


def tflite_mutant(data: bytes, seed: int) -> bytes:
    """`data` with bytes changed as damage does, by `seed % 4`: 1-3 bits flipped; an aligned
    32-bit word (a flatbuffer offset, a vector length, a scale) replaced by 0, -1, a large
    or a random value; a run of up to 32 bytes zeroed (e.g. a quantization table); one byte
    replaced."""
    rng = np.random.default_rng(seed)
    mutated = bytearray(data)
    kind = seed % 4
    if kind == 0:
        for position in rng.integers(0, len(data) * 8, 1 + seed % 3):
            mutated[position // 8] ^= 1 << (position % 8)
    elif kind == 1:
        position = int(rng.integers(0, len(data) // 4)) * 4
        word = int(rng.choice([0, -1, 1, 0x7FFFFFFF, int(rng.integers(-1000, 1000)),
                               int(rng.integers(0, 2 * len(data)))]))
        mutated[position:position + 4] = word.to_bytes(4, "little", signed=True)
    elif kind == 2:
        position, length = int(rng.integers(0, len(data))), int(rng.integers(1, 32))
        mutated[position:position + length] = bytes(len(mutated[position:position + length]))
    else:
        mutated[int(rng.integers(0, len(data)))] = int(rng.integers(0, 256))
    return bytes(mutated)


def truncated(data: bytes, fraction: float) -> bytes:
    return data[: max(1, int(len(data) * fraction))]
