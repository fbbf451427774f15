"""Caffe2 NetDef pairs for the tests: built op by op, written as Glow's Caffe2 model directories."""

from __future__ import annotations

import os

import numpy as np
import onnx
from google.protobuf import text_format
from onnx import numpy_helper

from glowmlir.importers.caffe2_schema import Argument, NetDef, OperatorDef


def argument(name: str, value) -> Argument:
    arg = Argument(name=name)
    if isinstance(value, str):
        arg.s = value.encode()
    elif isinstance(value, float):
        arg.f = value
    elif isinstance(value, int):
        arg.i = value
    elif all(isinstance(v, int) for v in value):
        arg.ints.extend(value)
    else:
        arg.floats.extend(value)
    return arg


def op(op_type: str, inputs: list[str], outputs: list[str], name: str = "", **arguments) -> OperatorDef:
    return OperatorDef(type=op_type, input=inputs, output=outputs, name=name,
                       arg=[argument(k, v) for k, v in arguments.items()])


def init_net(weights: dict[str, np.ndarray]) -> NetDef:
    return NetDef(name="init", op=[op("GivenTensorFill", [], [name], values=[float(v) for v in array.ravel()],
                                      shape=list(array.shape)) for name, array in weights.items()])


def predict_net(ops: list[OperatorDef], inputs: list[str], outputs: list[str], weights=()) -> NetDef:
    return NetDef(name="predict", op=ops, external_input=[*inputs, *weights], external_output=outputs)


def write_model(directory, ops, inputs, outputs, weights, text=False) -> str:
    """predict_net and init_net (.pb, or .pbtxt) in `directory`."""
    os.makedirs(directory, exist_ok=True)
    for stem, net in (("predict_net", predict_net(ops, inputs, outputs, weights)), ("init_net", init_net(weights))):
        if text:
            with open(os.path.join(directory, f"{stem}.pbtxt"), "w") as f:
                f.write(text_format.MessageToString(net))
        else:
            with open(os.path.join(directory, f"{stem}.pb"), "wb") as f:
                f.write(net.SerializeToString())
    return str(directory)


def lenet_ops() -> list[OperatorDef]:
    """Glow's Caffe2 LeNet (its example's lenet_mnist): conv1, pool1, conv2, pool2, ip1, relu
    (in place), ip2, softmax; weights conv1_w/_b, conv2_w/_b, ip1_w/_b, ip2_w/_b."""
    return [op("Conv", ["data", "conv1_w", "conv1_b"], ["conv1"], kernel=5, order="NCHW"),
            op("MaxPool", ["conv1"], ["pool1"], kernel=2, stride=2),
            op("Conv", ["pool1", "conv2_w", "conv2_b"], ["conv2"], kernel=5),
            op("MaxPool", ["conv2"], ["pool2"], kernel=2, stride=2),
            op("FC", ["pool2", "ip1_w", "ip1_b"], ["ip1"]),
            op("Relu", ["ip1"], ["ip1"]),
            op("FC", ["ip1", "ip2_w", "ip2_b"], ["ip2"]),
            op("Softmax", ["ip2"], ["softmax"])]


def write_lenet_mnist(directory, onnx_path: str) -> str:
    """Glow's Caffe2 `lenet_mnist` directory (ops and blob names as in Glow's downloaded model:
    conv1, pool1, conv2, pool2, ip1, relu, ip2, softmax) holding the weights of the ONNX LeNet
    at `onnx_path`, so both forms compute the same function."""
    model = onnx.load(onnx_path)
    onnx_weights = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    names = {"conv1_w": "conv1.weight", "conv1_b": "conv1.bias", "conv2_w": "conv2.weight", "conv2_b": "conv2.bias",
             "ip1_w": "fc1.weight", "ip1_b": "fc1.bias", "ip2_w": "fc2.weight", "ip2_b": "fc2.bias"}
    weights = {caffe2: np.asarray(onnx_weights[source], np.float32) for caffe2, source in names.items()}
    return write_model(directory, lenet_ops(), ["data"], ["softmax"], weights)
