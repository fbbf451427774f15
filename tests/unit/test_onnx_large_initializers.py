"""Large initializers (weights) are left out of what onnx's checker and shape inference see
(`loader.without_large_initializers`): the model imports as before, its weights stay
weights, and only its real inputs are inputs."""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import glowmlir
from glowmlir.errors import GlowError
from glowmlir.importers.onnx.file_weights import LARGE_INITIALIZER_ELEMENTS
from glowmlir.importers.onnx.loader import without_large_initializers
from tests.support.models import onnxruntime_outputs

rng = np.random.default_rng(0)


def gemm_model(ir_version: int, initializers_as_inputs: bool) -> onnx.ModelProto:
    """x [2, 64] -> Gemm(transB, alpha) with 300 x 64 weights (large) -> Reshape by a small
    constant shape (read by shape inference) -> y [2, 30, 10]."""
    weights = {"w": rng.standard_normal((300, 64)).astype(np.float32),
               "c": rng.standard_normal(300).astype(np.float32), "shape": np.array([2, 30, 10], np.int64)}
    assert weights["w"].size >= LARGE_INITIALIZER_ELEMENTS > weights["c"].size
    nodes = [helper.make_node("Gemm", ["x", "w", "c"], ["g"], transB=1, alpha=0.5),
             helper.make_node("Reshape", ["g", "shape"], ["y"])]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])]
    if initializers_as_inputs:
        inputs += [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                   for k, v in weights.items()]
    graph = helper.make_graph(nodes, "gemm", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(v, k) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=ir_version)


@pytest.mark.parametrize("ir_version,initializers_as_inputs", [(8, False), (8, True), (3, True)])
def test_large_weights_import_as_weights(ir_version, initializers_as_inputs, tmp_path):
    model = gemm_model(ir_version, initializers_as_inputs)
    light, set_aside = without_large_initializers(model)
    assert set_aside == {"w"} and [t.name for t in light.graph.initializer] == ["c", "shape"]
    assert [i.name for i in light.graph.input].count("w") == 1
    path = os.path.join(tmp_path, "gemm.onnx")
    onnx.save(model, path)
    bundle = glowmlir.compile(path)
    assert [(p.name, p.kind, p.shape) for p in bundle.layout.placeholders] == [("x", "input", (2, 64)),
                                                                              ("y", "output", (2, 30, 10))]
    x = rng.standard_normal((2, 64)).astype(np.float32)
    np.testing.assert_allclose(bundle.run(x=x)["y"], onnxruntime_outputs(model, {"x": x})["y"], rtol=1e-5, atol=1e-5)


def test_model_input_errors_name_only_real_inputs(tmp_path):
    path = os.path.join(tmp_path, "gemm.onnx")
    onnx.save(gemm_model(8, False), path)
    with pytest.raises(GlowError, match=r"no input \"w\" \(inputs: x\)"):
        glowmlir.compile(path, model_inputs=["w,float,[300,64]"])


def test_large_weights_read_apart_from_the_file(tmp_path):
    """`file_weights`: the large initializer's values come from the file, as onnx reads them;
    the model protobuf parses keeps everything else (the small initializers' data included)."""
    from glowmlir.importers.onnx.file_weights import load_with_weights_apart

    model = gemm_model(8, False)
    path = os.path.join(tmp_path, "gemm.onnx")
    onnx.save(model, path)
    light, arrays = load_with_weights_apart(path)
    expected = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    assert list(arrays) == ["w"]
    np.testing.assert_array_equal(arrays["w"], expected["w"])
    assert arrays["w"].dtype == np.float32 and not arrays["w"].flags.writeable
    read = {t.name: t for t in light.graph.initializer}
    assert not read["w"].HasField("raw_data") and list(read["w"].dims) == [300, 64]
    for name in ("c", "shape"):
        np.testing.assert_array_equal(numpy_helper.to_array(read[name]), expected[name])
    assert light.graph.node == model.graph.node and light.opset_import == model.opset_import


def test_weights_in_an_external_file_are_read_by_onnx(tmp_path):
    from glowmlir.importers.onnx.file_weights import load_with_weights_apart

    model = gemm_model(8, False)
    x = rng.standard_normal((2, 64)).astype(np.float32)
    expected = onnxruntime_outputs(model, {"x": x})["y"]
    path = os.path.join(tmp_path, "gemm.onnx")
    onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True, location="gemm.data",
              size_threshold=0)
    assert load_with_weights_apart(path) is None  # onnx.load reads the external data
    np.testing.assert_allclose(glowmlir.compile(path).run(x=x)["y"], expected, rtol=1e-5, atol=1e-5)
