"""One-node (or few-node) ONNX models with random weights, for kernel tests."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def single_node_model(op_type: str, input_shapes: dict[str, list[int]],
                      initializers: dict[str, np.ndarray] | None = None, opset: int = 13,
                      input_types: dict[str, int] | None = None, **attributes) -> onnx.ModelProto:
    """A model computing `op_type` on graph inputs (float unless `input_types` gives their
    TensorProto type) and constant initializers; output "y"."""
    initializers = initializers or {}
    node = helper.make_node(op_type, [*input_shapes, *initializers], ["y"], **attributes)
    return nodes_model([node], input_shapes, initializers, opset, input_types, f"test_{op_type}")


def nodes_model(nodes: list[onnx.NodeProto], input_shapes: dict[str, list[int]],
                initializers: dict[str, np.ndarray] | None = None, opset: int = 13,
                input_types: dict[str, int] | None = None, name: str = "test") -> onnx.ModelProto:
    """A model of `nodes` on graph inputs (float unless `input_types` gives their TensorProto
    type) and constant initializers; its output is "y", with the shape inference gives it."""
    initializers, input_types = initializers or {}, input_types or {}
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(name, input_types.get(name, TensorProto.FLOAT), shape)
         for name, shape in input_shapes.items()],
        [helper.make_empty_tensor_value_info("y")],
        [numpy_helper.from_array(np.asarray(v), name) for name, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    model = onnx.shape_inference.infer_shapes(model)
    output = next(v for v in [*model.graph.value_info, *model.graph.output]
                  if v.name == "y" and v.type.tensor_type.HasField("shape"))
    del model.graph.output[:]
    model.graph.output.append(output)
    return model
