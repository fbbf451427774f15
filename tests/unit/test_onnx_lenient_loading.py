"""What onnxruntime loads, glowmlir loads: models with the omissions older exporters leave
(no value_info types, an empty graph name, IR-3 initializers not among the inputs, a stated
shape inference disagrees with), the ops Glow's importer tests use (Tile, DepthToSpace,
SpaceToDepth, negative Pad, InstanceNormalization, ReduceProd, ConvTranspose with
output_shape/auto_pad, Loop, If), each checked against onnxruntime on random data."""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import glowmlir
from tests.support.models import onnxruntime_outputs

rng = np.random.default_rng(2026)


def random(*shape):
    return rng.uniform(-1.0, 1.0, shape).astype(np.float32)


def model_of(nodes, inputs: dict[str, list[int]], initializers: dict[str, np.ndarray] | None = None,
             outputs=("y",), opset: int = 13, ir_version: int = 8, **graph_fields) -> onnx.ModelProto:
    """A model whose outputs carry no type at all (as Glow's test models are written)."""
    graph = helper.make_graph(
        nodes, graph_fields.pop("name", "test"),
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape) for name, shape in inputs.items()],
        [onnx.ValueInfoProto(name=name) for name in outputs],
        [numpy_helper.from_array(np.asarray(v), name) for name, v in (initializers or {}).items()])
    graph.value_info.extend(graph_fields.pop("value_info", []))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir_version)


def check(model: onnx.ModelProto, tmp_path, tolerance: float = 1e-5) -> None:
    """Compiles the model (saved without any repair) and compares every output with onnxruntime."""
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(model, path)
    initializers = {t.name for t in model.graph.initializer}
    inputs = {i.name: random(*[d.dim_value for d in i.type.tensor_type.shape.dim])
              for i in model.graph.input if i.name not in initializers}
    expected = onnxruntime_outputs(model, inputs)
    actual = glowmlir.compile(path).run(inputs)
    for name, want in expected.items():
        assert actual[name].shape == want.shape, name
        np.testing.assert_allclose(actual[name], want, atol=tolerance * max(1.0, float(np.abs(want).max())), rtol=0)


# ----------------------------------------------------------------------------- omissions


def test_outputs_and_value_info_without_a_type_and_an_empty_graph_name(tmp_path):
    """onnx's checker refuses all three ("Field 'type' of 'value_info' is required but missing",
    "Field 'name' of 'graph' is required to be non-empty"); onnxruntime runs the model."""
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"])]
    model = model_of(nodes, {"x": [1, 2, 5, 5]}, {"w": random(3, 2, 3, 3), "b": random(3)}, name="",
                     value_info=[onnx.ValueInfoProto(name="c")])
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(model)
    check(model, tmp_path)


def test_ir3_initializer_not_listed_among_the_inputs(tmp_path):
    """Below IR version 4 every initializer must be a graph input; older exporters did not
    always list them ("... in initializer but not in graph input")."""
    model = model_of([helper.make_node("Mul", ["x", "scale"], ["y"])], {"x": [2, 3]}, {"scale": random(2, 3)},
                     opset=7, ir_version=3)
    check(model, tmp_path)


def test_a_stated_shape_that_shape_inference_disagrees_with(tmp_path):
    """The file states the wrong shape for an intermediate: onnxruntime warns and computes;
    so do we (strict inference refused: "Inferred shape and existing shape differ")."""
    wrong = helper.make_tensor_value_info("t", TensorProto.FLOAT, [1, 7])
    model = model_of([helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]), helper.make_node("Relu", ["t"], ["y"])],
                     {"x": [3, 2]}, value_info=[wrong])
    with pytest.raises(onnx.shape_inference.InferenceError):
        onnx.shape_inference.infer_shapes(model, strict_mode=True)
    check(model, tmp_path)


def test_a_model_that_cannot_be_imported_is_still_refused_with_its_node_named(tmp_path):
    model = model_of([helper.make_node("Add", ["x", "missing"], ["y"], name="adder")], {"x": [2]})
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(model, path)
    with pytest.raises(glowmlir.GlowError, match="adder|missing") as error:
        glowmlir.compile(path)
    assert "\n" not in str(error.value)


# ----------------------------------------------------------------------------- ops


@pytest.mark.parametrize("repeats", [[1, 3, 2], [2, 1, 1]])
def test_tile(repeats, tmp_path):
    model = model_of([helper.make_node("Tile", ["x", "r"], ["y"])], {"x": [2, 3, 4]}, {"r": np.array(repeats)})
    check(model, tmp_path)


@pytest.mark.parametrize("op_type,mode,shape", [("DepthToSpace", "DCR", [1, 8, 3, 2]),
                                                ("DepthToSpace", "CRD", [2, 12, 2, 3]),
                                                ("SpaceToDepth", None, [1, 3, 4, 6])])
def test_depth_to_space_and_back(op_type, mode, shape, tmp_path):
    """(SpaceToDepth's CRD mode, newer than onnxruntime 1.31 knows, is checked by onnx's
    conformance test test_spacetodepth_crd_mode_example.)"""
    attributes = {"blocksize": 2} | ({"mode": mode} if mode else {})
    check(model_of([helper.make_node(op_type, ["x"], ["y"], **attributes)], {"x": shape}), tmp_path)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad_with_negative_pads_crops(mode, tmp_path):
    model = model_of([helper.make_node("Pad", ["x", "p"], ["y"], mode=mode)], {"x": [1, 2, 6, 5]},
                     {"p": np.array([0, 0, 2, -2, 0, 1, -1, 1])})
    check(model, tmp_path)


def test_instance_normalization(tmp_path):
    model = model_of([helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-3)],
                     {"x": [2, 3, 4, 5]}, {"s": random(3), "b": random(3)})
    check(model, tmp_path)


@pytest.mark.parametrize("attributes", [{"axes": [1], "keepdims": 0}, {"axes": [0, 2]}, {}])
def test_reduce_prod(attributes, tmp_path):
    check(model_of([helper.make_node("ReduceProd", ["x"], ["y"], **attributes)], {"x": [2, 3, 4]}), tmp_path)


@pytest.mark.parametrize("attributes", [
    {"strides": [2, 2], "output_shape": [9, 10]},
    {"strides": [2, 2], "output_shape": [8, 11], "output_padding": [1, 1]},
    {"strides": [3, 2], "output_shape": [13, 12]},  # beyond the last window, within a stride: output padding
    {"strides": [2, 3], "auto_pad": "SAME_UPPER"},
    {"strides": [2, 2], "auto_pad": "SAME_LOWER", "dilations": [2, 1]},
    {"strides": [1, 2], "auto_pad": "VALID"},
])
def test_conv_transpose_pads_from_output_shape_and_auto_pad(attributes, tmp_path):
    model = model_of([helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attributes)], {"x": [1, 3, 4, 5]},
                     {"w": random(3, 2, 3, 3), "b": random(2)}, opset=11)
    check(model, tmp_path)


def loop_model(trip_count: int | None, stop_below: float | None) -> onnx.ModelProto:
    """y = x + a * 1 + a * 2 + ... (the carried value), s = the carried value of each iteration
    (a scan output); with `stop_below`, the loop also ends once the sum of a constant counter
    falls below it."""
    body_nodes = [
        helper.make_node("Cast", ["i"], ["i_float"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["a", "i_float"], ["step"]),
        helper.make_node("Add", ["carried", "step"], ["carried_out"]),
        helper.make_node("Sub", ["counter", "one"], ["counter_out"]),
        helper.make_node("Greater", ["counter_out", "limit"], ["going"]),
        helper.make_node("Identity", ["carried"], ["scanned"]),
    ]
    body = helper.make_graph(
        body_nodes, "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("carried", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("counter", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("going", TensorProto.BOOL, []),
         helper.make_tensor_value_info("carried_out", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("counter_out", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("scanned", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(np.float32(1.0), "one")])
    initializers = {"a": random(2, 3), "start": np.float32(10.0), "limit": np.float32(stop_below or -1e9),
                    "cond": np.array(True)}
    if trip_count is not None:
        initializers["M"] = np.array(trip_count, np.int64)
    loop = helper.make_node("Loop", ["M" if trip_count is not None else "", "cond", "x", "start"],
                            ["y", "counter_final", "s"], body=body)
    return model_of([loop], {"x": [2, 3]}, initializers, outputs=("y", "s"), opset=13)


def test_conv_transpose_output_shape_beyond_the_windows_is_refused(tmp_path):
    model = model_of([helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="up", strides=[2, 2],
                                       output_shape=[12, 11])], {"x": [1, 3, 4, 5]}, {"w": random(3, 2, 3, 3)})
    # (4 - 1) * 2 + 3 = 9 reached; 12 is more than a stride (2) beyond: onnxruntime refuses it too
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(model, path)
    with pytest.raises(glowmlir.GlowError, match=r"node \"up\" .*output size 12 of spatial axis 0 is larger than the "
                                                 r"windows reach \(9\)"):
        glowmlir.compile(path)


@pytest.mark.parametrize("trip_count,stop_below", [(4, None), (None, 6.5), (9, 7.5)])
def test_loop_is_unrolled(trip_count, stop_below, tmp_path):
    check(loop_model(trip_count, stop_below), tmp_path)


def test_loop_with_a_run_time_condition_is_refused_naming_the_node(tmp_path):
    model = loop_model(3, None)
    model.graph.node[0].name = "the_loop"
    model.graph.node[0].input[1] = "x_positive"
    model.graph.node.insert(0, helper.make_node("ReduceMax", ["x"], ["x_max"], keepdims=0))
    model.graph.node.insert(1, helper.make_node("Greater", ["x_max", "zero"], ["x_positive"]))
    model.graph.initializer.append(numpy_helper.from_array(np.float32(0.0), "zero"))
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(model, path)
    with pytest.raises(glowmlir.GlowError, match=r"node \"the_loop\" \(Loop, opset 13\): the condition is computed "
                                                 r"at run time, which is not supported: the Loop is unrolled"):
        glowmlir.compile(path)


@pytest.mark.parametrize("condition", [True, False])
def test_if_with_a_constant_condition_takes_its_branch(condition, tmp_path):
    def branch(op_type):
        return helper.make_graph([helper.make_node(op_type, ["x"], ["out"])], op_type,
                                 [], [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 3])])

    node = helper.make_node("If", ["c"], ["y"], then_branch=branch("Relu"), else_branch=branch("Neg"))
    check(model_of([node], {"x": [2, 3]}, {"c": np.array(condition)}), tmp_path)


def test_lstm_with_input_forget_couples_the_gates_as_onnxruntime(tmp_path):
    """ONNX only says input_forget=1 "couples the input and forget gates"; onnxruntime takes
    f = 1 - i (Glow i = 1 - f, onnx's reference evaluator ignores it). Our constant folding of
    the LSTM follows onnxruntime (glowmlir/importers/onnx/reference_ops.py)."""
    steps, batch, features, hidden = 3, 2, 4, 5
    lstm = helper.make_node("LSTM", ["X", "W", "R", "B"], ["Y"], hidden_size=hidden, input_forget=1)
    initializers = {"X": random(steps, batch, features), "W": random(1, 4 * hidden, features),
                    "R": random(1, 4 * hidden, hidden), "B": random(1, 8 * hidden)}
    model = model_of([lstm, helper.make_node("Add", ["Y", "x"], ["y"])], {"x": [steps, 1, batch, hidden]},
                     initializers, opset=14)
    check(model, tmp_path)


@pytest.mark.parametrize("attributes,k", [({"axis": -1}, 3), ({"axis": 1, "largest": 0}, 2), ({"axis": 0}, 1)])
def test_top_k(attributes, k, tmp_path):
    """Values and indices, best first; the input has ties (equal values: lower index first)."""
    node = helper.make_node("TopK", ["x", "k"], ["y", "i"], **attributes)
    model = model_of([helper.make_node("Floor", ["t"], ["x"]), node], {"t": [3, 4, 5]}, {"k": np.array([k])},
                     outputs=("y", "i"))
    check(model, tmp_path)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd_with_run_time_indices(reduction, tmp_path):
    """Slices of a [4, 3, 2] tensor replaced (or combined) at run-time index pairs, one
    negative; with a reduction, a repeated index accumulates."""
    path = os.path.join(tmp_path, "model.onnx")
    node = helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"], reduction=reduction)
    graph = helper.make_graph([node], "scatter", [
        helper.make_tensor_value_info("data", TensorProto.FLOAT, [4, 3, 2]),
        helper.make_tensor_value_info("indices", TensorProto.INT64, [3, 2]),
        helper.make_tensor_value_info("updates", TensorProto.FLOAT, [3, 2])], [onnx.ValueInfoProto(name="y")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    onnx.save(model, path)
    repeated = reduction != "none"  # without a reduction a repeated index is undefined in ONNX
    inputs = {"data": random(4, 3, 2), "updates": random(3, 2),
              "indices": np.array([[1, 2], [-1, 0], [1, 2] if repeated else [0, 1]], np.int64)}
    expected = onnxruntime_outputs(model, inputs)["y"]
    np.testing.assert_allclose(glowmlir.compile(path).run(inputs)["y"], expected, rtol=1e-6)


def test_scatter_nd_index_outside_the_data_writes_nothing(tmp_path):
    """onnxruntime refuses an out-of-range index at run time; a bundle cannot report an
    error, so it skips that update instead of writing outside the tensor."""
    node = helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"])
    graph = helper.make_graph([node], "scatter", [
        helper.make_tensor_value_info("data", TensorProto.FLOAT, [5]),
        helper.make_tensor_value_info("indices", TensorProto.INT64, [3, 1]),
        helper.make_tensor_value_info("updates", TensorProto.FLOAT, [3])], [onnx.ValueInfoProto(name="y")])
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), path)
    data = np.arange(5, dtype=np.float32)
    y = glowmlir.compile(path).run(data=data, indices=np.array([[7], [-9], [2]], np.int64),
                                   updates=np.array([10, 20, 30], np.float32))["y"]
    np.testing.assert_array_equal(y, [0, 1, 30, 3, 4])


def test_3d_convolution_with_non_square_dilation(tmp_path):
    model = model_of([helper.make_node("Conv", ["x", "w", "b"], ["y"], dilations=[2, 1, 3], pads=[1, 0, 2, 1, 1, 2])],
                     {"x": [1, 2, 6, 5, 9]}, {"w": random(3, 2, 2, 3, 3), "b": random(3)})
    check(model, tmp_path)
