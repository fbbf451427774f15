"""The Python API checks its arguments where the user passes them: a wrong argument is a
GlowError (a ValueError) naming it, never a TypeError or AttributeError from deep inside."""

from __future__ import annotations

import os
import pathlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import glowmlir
from glowmlir import CompileOptions, GlowError, GlowWarning
from glowmlir.importers.onnx import ModelInput
from glowmlir.targets import resolve_target
from tests.support.models import LENET


@pytest.fixture(scope="module")
def relu(tmp_path_factory) -> str:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    path = str(tmp_path_factory.mktemp("model") / "relu.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), path)
    return path


def test_glow_error_is_a_value_error_and_documented():
    assert issubclass(GlowError, ValueError)
    assert "GlowError" in glowmlir.compile.__doc__


def test_model_as_os_pathlike(relu):
    bundle = glowmlir.compile(pathlib.Path(relu))
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    np.testing.assert_array_equal(bundle.run(x=x)["y"], np.maximum(x, 0))


@pytest.mark.parametrize("model, fragment", [
    (None, "model=None: expected a file path"),
    (3, "model=3: expected a file path"),
    ([pathlib.Path("a.pb"), 7], "model=[PosixPath('a.pb'), 7]: expected a file path"),
])
def test_bad_model_argument(model, fragment):
    with pytest.raises(GlowError, match=fragment.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        glowmlir.compile(model)


@pytest.mark.parametrize("options, fragment", [
    ({"frobnicate": 1}, 'unknown keyword argument "frobnicate"'),
    ({"network_name": 1}, "network_name=1: expected a string or None, not int"),
    ({"network_name": ""}, "network_name (-network-name) must not be empty"),
    ({"target": "not-a-cpu"}, 'target="not-a-cpu": neither a CPU'),
    ({"target": 7}, "target=7: expected a Target"),
    ({"model_inputs": "x,float,[2,3]"}, "model_inputs='x,float,[2,3]': expected a list of ModelInput"),
    ({"model_inputs": [("x", "float", (2, 3))]}, "model_inputs=('x', 'float', (2, 3)): expected a ModelInput"),
    ({"symbols": ["N", 3]}, "symbols=['N', 3]: expected a dict"),
    ({"symbols": {"N": "x"}}, "symbol \"N\" has the value 'x'"),
    ({"bundle_api": "shared"}, "bundle_api='shared' (-bundle-api): expected static or dynamic"),
    ({"reuse_activations": "yes"}, "reuse_activations='yes': expected True or False"),
    ({"memory_fusion": 1}, "memory_fusion=1: expected True or False"),
    ({"quantization": "profile.yaml"}, "quantization='profile.yaml': expected a QuantizationOptions"),
    ({"kernel_library": "cmsis"}, "kernel_library='cmsis': expected None or one of 'cmsis-nn', 'hifi4'"),
])
def test_bad_keyword_argument_names_it(relu, options, fragment):
    with pytest.raises(GlowError) as error:
        glowmlir.compile(relu, **options)
    assert fragment in str(error.value) and "\n" not in str(error.value)


def test_options_given_by_position_are_refused(relu):
    """compile(model, "net") raised Python's own TypeError."""
    with pytest.raises(GlowError, match=r"compile\(\): 2 positional arguments; the model is the only one"):
        glowmlir.compile(relu, "net")


def test_compile_options_check_their_fields_too():
    with pytest.raises(GlowError, match="tflite_float_inputs='no'"):
        CompileOptions(tflite_float_inputs="no")


@pytest.mark.parametrize("target, triple", [("cortex-m7", "thumbv7em-unknown-none-eabihf"),
                                            ("thumbv7m-none-eabi", "thumbv7m-unknown-none-eabi"),
                                            ("riscv32", "riscv32-unknown-none-elf")])
def test_target_given_as_cpu_or_triple_string(relu, target, triple):
    bundle = glowmlir.compile(relu, target=target)
    assert bundle.target.triple == triple
    assert bundle.target == (resolve_target(mcpu=target) if target == "cortex-m7" else resolve_target(target=target))
    assert bundle.object_code[:4] == b"\x7fELF"


def test_model_inputs_as_strings(relu):
    by_string = glowmlir.compile(relu, model_inputs=["x,float,[2,3]"])
    assert by_string.layout.placeholder("x").shape == (2, 3)
    assert CompileOptions(model_inputs=["x,float,[2,3]"]).model_inputs == (ModelInput("x", "float", (2, 3)),)


@pytest.fixture(scope="module")
def bundle(relu):
    return glowmlir.compile(relu)


@pytest.mark.parametrize("call, fragment", [
    (lambda b: b.run([1, 2]), "inputs: expected a dict of input name to array, not list"),
    (lambda b: b.run({}), 'no value for input "x" (inputs: x)'),
    (lambda b: b.run(x=np.zeros(6), z=np.zeros(6)), 'no input "z" (inputs: x)'),
    (lambda b: b.run(x=np.zeros(6), y=np.zeros(6)), 'no input "y"'),  # an output is not an input
    (lambda b: b.run(x="abc"), 'input "x": not an array of numbers'),
    (lambda b: b.run(x=np.zeros(5)), 'input "x" has 5 elements'),
    (lambda b: b.save(None), "directory=None: expected a directory path"),
    (lambda b: b.save(3), "directory=3: expected a directory path"),
])
def test_bundle_run_and_save_arguments(bundle, call, fragment):
    with pytest.raises(GlowError) as error:
        call(bundle)
    assert fragment in str(error.value)


def test_run_refuses_a_bundle_for_another_machine(relu):
    bundle = glowmlir.compile(relu, target="cortex-m4")
    with pytest.raises(GlowError, match="compiled for thumbv7em-unknown-none-eabihf: run\\(\\) runs host bundles only"):
        bundle.run(x=np.zeros((2, 3), np.float32))


def test_save_takes_os_pathlike(bundle, tmp_path):
    written = bundle.save(tmp_path / "out")
    assert sorted(os.listdir(tmp_path / "out")) == ["relu.h", "relu.o", "relu.weights.bin", "relu.weights.txt"]
    assert sorted(os.path.basename(p) for p in written) == sorted(os.listdir(tmp_path / "out"))


def test_renaming_is_a_glow_warning_of_the_package(relu):
    with pytest.warns(GlowWarning, match='network name "return" is reserved in C; the bundle is named "return_"'):
        assert glowmlir.compile(relu, network_name="return").name == "return_"


def test_model_contents_instead_of_a_path_are_refused_in_one_line():
    """compile(open(path, "rb").read()) gave a 477-line "file not found" message."""
    with open(LENET, "rb") as f:
        contents = f.read()
    with pytest.raises(GlowError) as error:
        glowmlir.compile(contents)
    assert str(error.value) == (f"model: a bytes of length {len(contents):,} is not a file path (to compile a model "
                                f"held in memory, save it to a file first)")


def test_run_takes_and_gives_tensors_by_the_models_names(tmp_path):
    """Names C cannot take ("3", "input:0") are changed for the header's macros; Bundle.run still
    speaks the model's names, and the C names find the same tensors."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["input:0"], ["3"])], "g",
                              [helper.make_tensor_value_info("input:0", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("3", TensorProto.FLOAT, [1, 4])])
    path = tmp_path / "names.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    bundle = glowmlir.compile(str(path))
    assert sorted(p.name for p in bundle.layout.placeholders) == ["A3", "input_0"]
    x = np.array([[-1.0, 2.0, -3.0, 4.0]], np.float32)
    outputs = bundle.run({"input:0": x})
    assert list(outputs) == ["3"]
    np.testing.assert_array_equal(outputs["3"], np.maximum(x, 0))
    np.testing.assert_array_equal(outputs["A3"], outputs["3"])
    np.testing.assert_array_equal(bundle.run(input_0=x)["3"], outputs["3"])
    with pytest.raises(GlowError, match=r'no value for input "input:0" \(inputs: input:0\)'):
        bundle.run({})


def test_compile_leaves_the_garbage_collector_as_it_found_it(relu):
    """Compiling pauses Python's cyclic collector (compile_module); afterwards it is on or off as
    before, the objects a process froze stay frozen, the full collections it runs itself skip
    the objects from before it (frozen meanwhile, thawed after), and the cycles a compilation
    dropped are still collected."""
    import gc
    import weakref

    class Node:
        pass

    def compile_dropping_a_cycle() -> weakref.ref:
        cycle = Node()
        cycle.itself = cycle
        reference = weakref.ref(cycle)
        del cycle
        glowmlir.compile(relu)
        return reference

    frozen_at_collections = []

    def watch(phase: str, info: dict) -> None:
        if phase == "start":
            frozen_at_collections.append(gc.get_freeze_count())

    assert gc.isenabled()
    gc.callbacks.append(watch)
    try:
        dropped = compile_dropping_a_cycle()  # frozen while compiling (its collections skip it), thawed after
    finally:
        gc.callbacks.remove(watch)
    assert max(frozen_at_collections, default=0) > 0  # the collections the compilation ran (gc's own, before: 0)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.collect()
    assert dropped() is None
    gc.disable()
    try:
        glowmlir.compile(relu)
        assert not gc.isenabled()
    finally:
        gc.enable()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        glowmlir.compile(relu)
        # Still frozen (not thawed to 0), and nothing of the compilation's frozen with them; a
        # frozen object the compilation lets go of (a cache entry replaced) is freed as usual.
        assert 0.99 * frozen <= gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()
