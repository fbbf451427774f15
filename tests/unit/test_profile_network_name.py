"""A profile fits its model under any bundle name: the graph hash leaves the network name
out, as Glow's `Function::getHash()` does (the eIQ flow names the bundle at compile time)."""

from __future__ import annotations

import numpy as np
import pytest

import glowmlir
from glowmlir.compiler import CompileOptions, QuantizationOptions
from glowmlir.importers.onnx import ModelInput
from glowmlir.profiling import Profiler
from glowmlir.quantization.profile import write_profile
from tests.support import tflite_models as tm
from tests.support.caffe2_nets import write_lenet_mnist
from tests.support.models import LENET

LENET_INPUT = [ModelInput("data", "float", (1, 1, 28, 28))]


def _model(kind: str, tmp_path) -> tuple[str, list]:
    """The model's path and its -model-input."""
    if kind == "onnx":
        return LENET, []
    if kind == "tflite":
        path = tmp_path / "conv_net.tflite"
        path.write_bytes(tm.conv_net(False, seed=1))
        return str(path), []
    return write_lenet_mnist(tmp_path / "lenet_mnist", LENET), LENET_INPUT


@pytest.mark.parametrize("kind", ["onnx", "tflite", "caffe2"])
def test_profile_loads_under_another_network_name(kind, tmp_path):
    """Profile under the default name, compile as "mynet" with that profile."""
    model, model_inputs = _model(kind, tmp_path)
    profiler = Profiler.for_model(model, CompileOptions(model_inputs=model_inputs))
    rng = np.random.default_rng(0)
    feeds = [{name: rng.uniform(-1, 1, shape).astype(np.float32) for name, shape in profiler.input_shapes().items()}
             for _ in range(3)]
    for _ in profiler.run(feeds):
        pass
    profile = str(tmp_path / "profile.yaml")
    write_profile(profile, profiler.profile)
    renamed = glowmlir.compile(model, model_inputs=model_inputs, quantization=QuantizationOptions(profile),
                               network_name="mynet")
    assert renamed.name == "mynet" and "!quant.uniform" in renamed.ir["glow"]
    assert renamed.run(feeds[0])  # runs under its new name
