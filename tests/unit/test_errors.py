"""Bad input: one line on stderr naming the culprit, exit status 2, no traceback, no bundle."""

from __future__ import annotations

import os
import subprocess

import onnx
import pytest
from onnx import TensorProto, helper

from tests.support.forks import run_module
from tests.support.models import LENET
from tests.support.onnx_graphs import single_node_model


def glow_compile(*arguments: str) -> subprocess.CompletedProcess:
    return run_module("glowmlir.cli.compile", *arguments)


def assert_clean_failure(result: subprocess.CompletedProcess, *fragments: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("glow-compile: error: ")
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.fixture
def out_dir(tmp_path):
    path = os.path.join(tmp_path, "bundle")
    yield path
    assert not os.path.exists(path), "a failed compile left a bundle directory"


def test_missing_model_file(out_dir):
    assert_clean_failure(glow_compile("-model=does/not/exist.onnx", f"-emit-bundle={out_dir}"),
                         "does/not/exist.onnx", "not found")


def test_file_that_is_not_onnx(tmp_path, out_dir):
    path = os.path.join(tmp_path, "model.onnx")
    with open(path, "w") as f:
        f.write("this is not a protobuf\n")
    assert_clean_failure(glow_compile(f"-model={path}", f"-emit-bundle={out_dir}"), path, "not an ONNX model")


def test_unsupported_op_names_node_type_and_opset(tmp_path, out_dir):
    model = single_node_model("Acosh", {"x": [2, 3]})
    model.graph.node[0].name = "my_acosh"
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(model, path)
    assert_clean_failure(glow_compile(f"-model={path}", f"-emit-bundle={out_dir}"),
                         '"my_acosh"', "Acosh", "opset 13", "unsupported")


def test_undefined_symbolic_dimension(tmp_path, out_dir):
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])])
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), path)
    assert_clean_failure(glow_compile(f"-model={path}", f"-emit-bundle={out_dir}"),
                         '"batch"', "-onnx-define-symbol=batch")
    # and with the symbol defined, it compiles
    result = glow_compile(f"-model={path}", f"-emit-bundle={out_dir}", "-onnx-define-symbol=batch,3")
    assert result.returncode == 0, result.stderr
    with open(os.path.join(out_dir, "model.h")) as f:
        assert "float<3 x 4>" in f.read()
    import shutil

    shutil.rmtree(out_dir)


@pytest.mark.parametrize("spec", ["data,float", "data,float,1,2", "data,float,[1,x]", ",float,[1]", "data,float,[0,3]"])
def test_malformed_model_input(spec, out_dir):
    assert_clean_failure(glow_compile(f"-model={LENET}", f"-emit-bundle={out_dir}", f"-model-input={spec}"),
                         "-model-input")


def test_model_input_naming_an_unknown_input(out_dir):
    assert_clean_failure(glow_compile(f"-model={LENET}", f"-emit-bundle={out_dir}",
                                      "-model-input=image,float,[1,1,28,28]"),
                         '"image"', "data")


def test_unknown_option(out_dir):
    assert_clean_failure(glow_compile(f"-model={LENET}", f"-emit-bundle={out_dir}", "-frobnicate=3"), "frobnicate")


def test_bad_bundle_api(out_dir):
    assert_clean_failure(glow_compile(f"-model={LENET}", f"-emit-bundle={out_dir}", "-bundle-api=shared"),
                         "-bundle-api")


def test_model_input_changes_the_batch(tmp_path):
    """The override is real: batch 2 doubles the input and output placeholders."""
    out = os.path.join(tmp_path, "b")
    model = single_node_model("Relu", {"x": [1, 4]})
    path = os.path.join(tmp_path, "relu.onnx")
    onnx.save(model, path)
    result = glow_compile(f"-model={path}", f"-emit-bundle={out}", "-model-input=x,float,[2,4]", "-network-name=net-1")
    assert result.returncode == 0, result.stderr
    with open(os.path.join(out, "net_1.h")) as f:
        header = f.read()
    assert "#define NET_1_x  0" in header and "float<2 x 4>" in header
