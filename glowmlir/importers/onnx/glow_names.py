"""Glow's node names for the values of an imported model (see glowmlir/quantization/glow_names.py).

Rules, from Glow's sources (`opName` is `loadOperatorName`: the node's name, else, for an ONNX
node, `<op_type>_<first output>`, for a Caffe2 op its first output; each creation below goes
through `Module::uniqueName`, `GlowNodeNames`):

* ONNX `loadConv2D`: filter transpose `opName`, input transpose `opName`, the convolution
  `opName`, output transpose `opName` — the convolution is the third: `conv__2`.
* ONNX `loadPool` / `loadGlobalAveragePool`, Caffe2 `loadConv` / pools (order NCHW, the only
  one we import): input transpose, then the node — `pool__1`, `conv1__1`.
* Caffe2 FC on an input of rank > 2: `createFullyConnected` flattens it first as
  `<opName>.reshape2D` (`ip1_reshape2D`); Caffe2 Softmax: `<opName>.reshapeInput`, then the
  SoftMax, then `<opName>.reshapeOutput`. The Caffe2 translator writes these names in the
  ONNX nodes' doc_string (`CAFFE2_GLOW_NAME`).
* Storage names are taken first: ONNX initializers and inputs; Caffe2 weights, inputs and
  (claimed by `loadNetwork` before any op) the external outputs — so Caffe2's `softmax`
  node is `softmax__1`.
* Graph optimizer, `SinkCode` (run to a fixed point after loading): a Relu, Clip, LeakyRelu,
  Sigmoid, Tanh or BatchNormalization whose input is a layout transpose is created again
  below it under its own name (`relu` -> `relu__1`), as is an arithmetic node both of
  whose inputs are; the result is in Glow's layout, so its users are sunk below too.
  BatchNormalization is then folded into the convolution, which keeps its name.

A value Glow computes in another layout (NHWC) has the same range, so its entry serves.
Not modelled: the names Glow's lowering gives (a profile also carries the pre-lowering
names, `findAndInsertLoweredInfos`), 1-D and 3-D convolutions, opset-13 SoftMax.
"""

from __future__ import annotations

from collections.abc import Callable

import onnx

from glowmlir.quantization.glow_names import GlowNodeNames

CAFFE2_PRODUCER = "glowmlir-caffe2"
CAFFE2_GLOW_NAME = "glow node name: "
"""Prefix of the doc_string by which the Caffe2 translator gives a node's Glow name base."""

_TRANSPOSES_BEFORE = {"onnx": {"Conv": 2, "MaxPool": 1, "AveragePool": 1, "GlobalAveragePool": 1,
                               "GlobalMaxPool": 1},
                      "caffe2": {"Conv": 1, "MaxPool": 1, "AveragePool": 1, "GlobalAveragePool": 1,
                                 "GlobalMaxPool": 1}}
"""Nodes the loader creates under the op's name before the op's own node (4-D inputs)."""

_TRANSPOSES_AFTER = {"Conv": 1, "MaxPool": 2, "AveragePool": 1, "GlobalAveragePool": 1, "GlobalMaxPool": 1}

_SUNK_UNARY = frozenset({"Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "BatchNormalization"})
_SUNK_ARITHMETIC = frozenset({"Add", "Sub", "Mul", "Div", "Max", "Min"})


class GlowLoaderNames:
    """Follows one model's import node by node, naming each as Glow's loader would, and at
    the end applies the optimizer's renames (`finish`)."""

    def __init__(self, model: onnx.ModelProto):
        graph = model.graph
        self.loader = "caffe2" if model.producer_name == CAFFE2_PRODUCER else "onnx"
        storage = [t.name for t in graph.initializer] + [i.name for i in graph.input]
        if self.loader == "caffe2":
            storage += [o.name for o in graph.output]
        self.names = GlowNodeNames(storage)
        self.layout: set[str] = set()  # ONNX tensors Glow computes transposed (NHWC)
        self.sunk: list[int] = []
        self.main: dict[int, str] = {}

    def base(self, node: onnx.NodeProto) -> str:
        if self.loader == "caffe2" and node.doc_string.startswith(CAFFE2_GLOW_NAME):
            return node.doc_string[len(CAFFE2_GLOW_NAME):]
        if node.name:
            return node.name
        return node.output[0] if self.loader == "caffe2" else f"{node.op_type}_{node.output[0]}"

    def load(self, index: int, node: onnx.NodeProto, rank: Callable[[str], int | None]) -> None:
        """Takes the names Glow's loader takes for node `index`; `rank` gives a tensor's rank."""
        if self.loader == "onnx":
            self.names.note_original(node.name)
        base = self.base(node)
        transposed = bool(node.input) and rank(node.input[0]) == 4
        before = _TRANSPOSES_BEFORE[self.loader].get(node.op_type, 0) if transposed else 0
        for _ in range(before):
            self.names(base)
        self.main[index] = self.names(base)
        for _ in range(_TRANSPOSES_AFTER.get(node.op_type, 0) if before else 0):
            self.names(base)
        inputs = [name for name in node.input if name]
        if before:
            self.layout.add(node.output[0])
        elif (node.op_type in _SUNK_UNARY and inputs and inputs[0] in self.layout) or \
                (node.op_type in _SUNK_ARITHMETIC and len(inputs) == 2 and all(i in self.layout for i in inputs)):
            self.sunk.append(index)
            self.layout.add(node.output[0])

    def finish(self) -> dict[int, str]:
        """Node index -> Glow's name for the node computing its (first) output, once SinkCode
        has re-created the sunk nodes (after all loading, under their own names)."""
        for index in self.sunk:
            self.main[index] = self.names(self.main[index])
        return self.main
