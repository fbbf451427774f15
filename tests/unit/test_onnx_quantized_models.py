"""ONNX models quantized elsewhere (onnxruntime's `quantize_static`, QDQ and QOperator forms)
compile to our int8 kernels with the file's own scales and zero points, no profile, and agree
with onnxruntime's int8 run within one quantization level of the output."""

from __future__ import annotations

import logging
import os

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import glowmlir
from glowmlir.compiler import ModelOutputs
from glowmlir.runtime.host import HostRunner
from tests.support.models import LENET, quantized_by_onnxruntime, small_convnet, without_softmax

CMSIS_STANDINS = os.path.join(os.path.dirname(__file__), "..", "support", "cmsis_nn", "standins.c")
MOBILENET = os.path.join(os.path.dirname(LENET), "..", "mobilenet_v2", "mobilenet_v2.onnx")
logging.getLogger().setLevel(logging.ERROR)  # onnxruntime's quantizer suggests pre-processing on every call


def digits(count: int, offset: int = 0) -> list[dict[str, np.ndarray]]:
    images = np.load(os.path.join(os.path.dirname(LENET), "heldout.npz"))["images"][offset:offset + count]
    return [{"data": (image / 255.0).astype(np.float32).reshape(1, 1, 28, 28)} for image in images]


def random_samples(shape, count: int, seed: int) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [{"data": rng.random(shape).astype(np.float32)} for _ in range(count)]


def output_scale(model: onnx.ModelProto) -> float:
    """The scale of the DequantizeLinear that gives the model's output."""
    initializers = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    last = next(n for n in model.graph.node if n.output[0] == model.graph.output[0].name)
    assert last.op_type == "DequantizeLinear"
    return float(initializers[last.input[1]])


def onnxruntime_int8(path: str):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.log_severity_level = 1, 3
    return onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def check_within_one_level(path: str, samples: list[dict[str, np.ndarray]], runner=None, **options) -> glowmlir.Bundle:
    """Compiles the model (with `options`) and runs it (on `runner(bundle)` if given, else the
    host) against onnxruntime's int8 run of it."""
    model = onnx.load(path)
    output = model.graph.output[0].name
    session = onnxruntime_int8(path)
    bundle = glowmlir.compile(path, **options)
    level = output_scale(model)
    for sample in samples:
        expected = session.run(None, sample)[0]
        actual = ModelOutputs(bundle.layout, runner(bundle).run(sample)) if runner else bundle.run(sample)
        difference = np.abs(actual[output] - expected).max()
        assert difference <= level * 1.0001, f"{difference / level:.2f} quantization levels apart"
    return bundle


def float_ops_left(bundle: glowmlir.Bundle) -> list[str]:
    """The compute ops of the final graph that still run in float (not conversions)."""
    lines = [line for line in bundle.ir["glow"].splitlines() if " = glow." in line and "glow.constant" not in line
             and "glow.placeholder" not in line]
    conversions = ("glow.quantize", "glow.dequantize")
    return [line.split(" = ")[1].split()[0] for line in lines
            if "!quant" not in line.split("->")[-1] and not any(k in line for k in conversions)]


@pytest.fixture(scope="module")
def lenet_logits() -> onnx.ModelProto:
    return without_softmax(onnx.load(LENET))


@pytest.mark.parametrize("quant_format", ["QDQ", "QOperator"])
def test_lenet_quantized_by_onnxruntime(lenet_logits, quant_format, tmp_path):
    """Every compute op runs in int8 (the only conversions: the input's quantize and the
    output's dequantize), and the logits of 20 held-out digits are within one level of
    onnxruntime's int8 run."""
    path = quantized_by_onnxruntime(lenet_logits, digits(32), str(tmp_path), quant_format)
    bundle = check_within_one_level(path, digits(20, offset=100))
    assert float_ops_left(bundle) == []
    glow_ir = bundle.ir["glow"]
    assert glow_ir.count("glow.quantize ") == 1 and glow_ir.count("glow.dequantize ") == 1
    assert "glow.convolution" in glow_ir and "glow.fully_connected" in glow_ir


def test_per_channel_weights_and_a_residual_add(tmp_path):
    """A conv net with depthwise convolution, average pools and a residual Add, quantized with
    one weight scale per output channel."""
    path = quantized_by_onnxruntime(without_softmax(small_convnet(seed=3)), random_samples([1, 3, 32, 32], 16, 1),
                                    str(tmp_path), "QDQ", per_channel=True)
    assert any(len(t.dims) == 1 and t.dims[0] > 1 and t.name.endswith("_scale")
               for t in onnx.load(path).graph.initializer)  # the file does have per-channel scales
    check_within_one_level(path, random_samples([1, 3, 32, 32], 10, 2))


def test_mobilenet_v2_quantized_by_onnxruntime(tmp_path):
    model = without_softmax(onnx.load(MOBILENET))
    path = quantized_by_onnxruntime(model, random_samples([1, 3, 96, 96], 8, 3), str(tmp_path), "QDQ")
    bundle = check_within_one_level(path, random_samples([1, 3, 96, 96], 3, 4))
    assert bundle.ir["glow"].count("glow.convolution") == 52
    assert all(op in ("glow.reduce",) for op in float_ops_left(bundle))  # the global mean stays float


def test_lenet_qdq_with_cmsis_nn(lenet_logits, tmp_path):
    """-use-cmsis takes a QDQ model as it is (no profile): the library's kernels (our host
    stand-ins) agree with onnxruntime within one level too."""
    path = quantized_by_onnxruntime(lenet_logits, digits(32), str(tmp_path), "QDQ")
    bundle = check_within_one_level(path, digits(10, offset=200), kernel_library="cmsis-nn",
                                    runner=lambda b: HostRunner(b.layout, b.object_code, link=[CMSIS_STANDINS]))
    assert "arm_fully_connected_s8" in bundle.ir["glowll"]
