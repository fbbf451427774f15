"""Bounds checking of whole bundles on the host (issue 12).

Every host run (`HostRunner`, so `Bundle.run` in every test) places each region flush
against a `PROT_NONE` guard page and makes the constant region read-only: an out-of-bounds
access faults. Here the end-to-end models run with the regions flush at either end, and
under valgrind's memcheck with each region a heap block of exactly its size; and the checks
themselves are shown to catch a bundle that overruns its region.

The models are compiled for the generic x86-64 CPU (SSE2): memcheck runs AVX2 code about
three times slower. VGG19 is onnx's light model with a quarter of its channels on 64x64 images
(`narrowed_vgg19`): the same 16 convolutions, 5 max pools, 3 fully connected layers and plan,
at a 200th of the work, so that memcheck fits the suite's time. The other host tests run the
host-CPU builds, guarded.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import glowmlir
from glowmlir.compiler import QuantizationOptions
from glowmlir.names import legalize_name
from glowmlir.runtime.host import FLUSH_PLACEMENTS, HostRunner
from tests.support.models import LENET, light_model_path, onnxruntime_outputs, random_inputs, randomized
from tests.support.valgrind import VALGRIND, MemcheckError, run_under_valgrind
from tests.unit.test_kernel_libraries import profile_for

MOBILENET_V2 = os.path.join(os.path.dirname(LENET), "..", "mobilenet_v2", "mobilenet_v2.onnx")
MODELS = ["lenet", "lenet-int8", "mobilenet_v2", "squeezenet", "vgg19"]
needs_valgrind = pytest.mark.skipif(VALGRIND is None, reason="valgrind is not installed (scripts/setup.sh installs it)")


def narrowed_vgg19(divisor: int = 4, side: int = 64) -> onnx.ModelProto:
    """onnx's light VGG19 (splat weights) with its channels and fully connected widths divided by
    `divisor` (the 3 input channels and the 1000 classes kept) on `side` x `side` images."""
    model = onnx.load(light_model_path("vgg19"))
    graph = model.graph
    pooled = side // 2 ** 5  # the five 2x2 max pools
    shapes = {}
    for tensor in graph.initializer:
        dims = [int(d) for d in numpy_helper.to_array(tensor).reshape(-1)] if tensor.name.endswith("__SHAPE") \
            else list(tensor.dims)
        if tensor.name == "OC2_DUMMY_1":
            shapes[tensor.name] = np.array([1, 512 // divisor * pooled * pooled], np.int64)
        elif tensor.name == "fc6_w_0__SHAPE":
            shapes[tensor.name] = np.array([dims[0] // divisor, 512 // divisor * pooled * pooled], np.int64)
        elif tensor.name == "fc8_w_0__SHAPE":
            shapes[tensor.name] = np.array([dims[0], dims[1] // divisor], np.int64)
        elif tensor.name.endswith("__SHAPE") and tensor.name != "fc8_b_0__SHAPE":
            shapes[tensor.name] = np.array([d // divisor if d > 3 else d for d in dims[:2]] + dims[2:], np.int64)
        elif not tensor.name.endswith("__SHAPE"):  # conv1_1's and conv1_2's biases, given as values
            shapes[tensor.name] = numpy_helper.to_array(tensor)[:dims[0] // divisor]
    for tensor in graph.initializer:
        if tensor.name in shapes:
            tensor.CopyFrom(numpy_helper.from_array(shapes[tensor.name], tensor.name))
    for value in graph.input:
        if value.name in shapes:
            value.CopyFrom(helper.make_tensor_value_info(value.name, value.type.tensor_type.elem_type,
                                                         list(shapes[value.name].shape)))
        elif value.name == "data_0":
            value.CopyFrom(helper.make_tensor_value_info(value.name, value.type.tensor_type.elem_type,
                                                         [1, 3, side, side]))
    onnx.checker.check_model(model)
    return model


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """name -> (bundle, its onnx model, inputs by placeholder name), compiled once."""
    cache = {}

    def get(name: str):
        if name not in cache:
            directory = tmp_path_factory.mktemp(name)
            quantization = None
            if name in ("lenet", "lenet-int8"):
                path = LENET
                if name == "lenet-int8":
                    samples = [random_inputs(onnx.load(LENET), seed) for seed in range(4)]
                    quantization = QuantizationOptions(profile_for(LENET, samples, str(directory / "lenet.yaml")))
            elif name == "mobilenet_v2":
                path = MOBILENET_V2
            else:  # the light models, with random weights instead of their splat ones
                path = str(directory / f"{name}.onnx")
                light = narrowed_vgg19() if name == "vgg19" else onnx.load(light_model_path(name))
                onnx.save(randomized(light, seed=3), path)
            model = onnx.load(path)
            inputs = {legalize_name(k): v for k, v in random_inputs(model).items()}
            cache[name] = glowmlir.compile(path, quantization=quantization, target="x86-64"), model, inputs
        return cache[name]

    return get


@pytest.mark.parametrize("name", MODELS)
def test_runs_with_each_region_flush_against_a_guard_page(compiled, name):
    """Both placements give the same outputs, and those match onnxruntime (float models)."""
    bundle, model, inputs = compiled(name)
    runs = [HostRunner(bundle.layout, bundle.object_code, flush=flush).run(inputs) for flush in FLUSH_PLACEMENTS]
    for output in runs[0]:
        np.testing.assert_array_equal(runs[0][output], runs[1][output])
    if not name.endswith("int8"):
        expected = onnxruntime_outputs(model, random_inputs(model))
        for output_name, value in expected.items():
            actual = runs[0][legalize_name(output_name)]
            np.testing.assert_allclose(actual.reshape(value.shape), value, atol=1e-5 * float(np.abs(value).max()),
                                       rtol=0)


@needs_valgrind
@pytest.mark.parametrize("name", MODELS)
def test_memcheck_finds_no_invalid_access(compiled, name, tmp_path):
    """Not one byte read or written outside a region, nor scratch read before it is written;
    the outputs equal the guarded run's."""
    bundle, _, inputs = compiled(name)
    checked = run_under_valgrind(bundle.layout, bundle.object_code, inputs, str(tmp_path))
    expected = bundle.run(inputs)
    for output in expected:
        np.testing.assert_array_equal(checked[output], expected[output])


def _short_activations(bundle: glowmlir.Bundle, missing: int):
    """The bundle's layout with `missing` bytes fewer activations than its code uses."""
    return dataclasses.replace(bundle.layout, activations_size=bundle.layout.activations_size - missing)


@needs_valgrind
def test_memcheck_reports_a_bundle_that_overruns_its_region(compiled, tmp_path):
    bundle, _, inputs = compiled("lenet")
    with pytest.raises(MemcheckError, match="Invalid (write|read) of size"):
        run_under_valgrind(_short_activations(bundle, 4), bundle.object_code, inputs, str(tmp_path))


OVERRUN = """
import dataclasses, sys
import numpy as np
import glowmlir
from glowmlir.runtime.host import HostRunner
from tests.support.models import LENET
bundle = glowmlir.compile(LENET)
layout = dataclasses.replace(bundle.layout, activations_size=bundle.layout.activations_size - int(sys.argv[1]))
runner = HostRunner(layout, bundle.object_code, flush=sys.argv[2])
print("ran", flush=True)
runner.run(data=np.zeros((1, 1, 28, 28), np.float32))
print("returned", flush=True)
"""


@pytest.mark.parametrize("missing, flush, faults", [(0, "end", False), (256, "end", True), (256, "start", False)])
def test_guard_page_stops_a_bundle_that_overruns_its_region(missing, flush, faults):
    """LeNet given 256 bytes fewer activations than it uses faults at once when the region
    ends at the guard page (and runs to the end when the slack is on the other side)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    run = subprocess.run([sys.executable, "-c", OVERRUN, str(missing), flush], capture_output=True, text=True,
                         cwd=root, env={**os.environ, "PYTHONPATH": root})
    assert "ran" in run.stdout, run.stderr
    if faults:
        assert run.returncode == -11 and "returned" not in run.stdout
    else:
        assert run.returncode == 0, run.stderr


GUARD = """
import ctypes, sys
from glowmlir.runtime.host import GuardedRegion
from glowmlir.transforms.allocate_memory import align
region = GuardedRegion(1000, sys.argv[1])
if sys.argv[2] == "constant":
    region.make_read_only()
address = {"below": region.address - 1, "above": region.address + align(1000), "first": region.address,
           "last": region.address + 999}[sys.argv[3]]
ctypes.memset(address, 7, 1)
print("wrote", flush=True)
"""


@pytest.mark.parametrize("flush, kind, where, faults", [
    ("start", "mutable", "below", True), ("end", "mutable", "above", True),
    ("start", "mutable", "first", False), ("end", "mutable", "last", False),
    ("end", "constant", "last", True), ("start", "constant", "first", True)])
def test_guarded_region_faults_outside_its_bytes_and_on_constant_writes(flush, kind, where, faults):
    run = subprocess.run([sys.executable, "-c", GUARD, flush, kind, where], capture_output=True, text=True)
    assert (run.returncode == -11, "wrote" in run.stdout) == (faults, not faults), run.stderr
