"""`glow-fold-batchnorm`'s HardSigmoid fold (issue 42, PP-OCR's exported text-direction
classifier): a squeeze-excitation gate written as the ONNX op HardSigmoid after its 1x1
Convolution becomes the convolution's own requantization and clamp to [0, 1], not a
convolution to the pre-activation's type and a lookup table over its levels. Random weights
and inputs; the int8 outputs are the int8 reference's (`tests/support/int8_reference.py`)
for the folded layer, bit for bit, on the host's vector kernels."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import glowmlir
from tests.support import int8_reference as ref
from tests.support.profiles import profiled

ALPHA, BETA = 0.2, 0.5  # PP-OCR's gates (ONNX's defaults)
SHAPE = (1, 24, 3, 40)  # the squeeze's channels over many pixels: more outputs to compare than a 1x1 plane
CHANNELS = 16  # within `weights.ELIDE_LIMIT`: the quantized graph prints the bias levels


def gate_model(seed: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """Conv 1x1 (24 -> 16, bias) then HardSigmoid ("y"); random weights, spread so that the
    gate's outputs cover both clamps and the slope between."""
    rng = np.random.default_rng(seed)
    weights = {"w": rng.normal(0, 0.6, (CHANNELS, SHAPE[1], 1, 1)).astype(np.float32),
               "b": rng.normal(0, 1.0, CHANNELS).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["e"]),
             helper.make_node("HardSigmoid", ["e"], ["y"], alpha=ALPHA, beta=BETA)]
    graph = helper.make_graph(nodes, "gate", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, CHANNELS, *SHAPE[2:]))],
                              [numpy_helper.from_array(v, k) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), weights


@pytest.fixture(scope="module")
def gate(tmp_path_factory):
    directory = tmp_path_factory.mktemp("fold_hard_sigmoid")
    path = str(directory / "gate.onnx")
    model, weights = gate_model(3)
    onnx.save(model, path)
    rng = np.random.default_rng(4)
    samples = [{"x": rng.normal(size=SHAPE).astype(np.float32)} for _ in range(8)]
    return path, weights, profiled(path, samples[:5], str(directory / "profile.yaml")), samples[5:]


def test_float_gate_is_a_clipped_convolution(gate):
    path, weights, _, samples = gate
    bundle = glowmlir.compile(path)
    assert 'kind = "hard_sigmoid"' not in bundle.ir["glowll"] and "activation clip" in bundle.ir["glowll"]
    for sample in samples:
        pre = np.einsum("oc,nchw->nohw", weights["w"][:, :, 0, 0], sample["x"]) + weights["b"][None, :, None, None]
        np.testing.assert_allclose(bundle.run(sample)["y"], np.clip(ALPHA * pre + BETA, 0, 1), atol=1e-5)


def quantized(type_text: str) -> tuple[float, int]:
    scale, offset = re.fullmatch(r"!quant\.uniform<i\d+:f32, ([^:>]+)(?::(-?\d+))?>", type_text).groups()
    return float(scale), int(offset or 0)


def test_int8_gate_is_the_convolutions_clamp_with_the_references_bits(gate):
    path, weights, quantization, samples = gate
    bundle = glowmlir.compile(path, quantization=quantization)
    glowll = bundle.ir["glowll"]
    assert "int_lookup_table" not in glowll, "the gate is no table"
    (line,) = [line for line in glowll.splitlines() if "glowll.convolution" in line]
    assert "activation clip" in line and "clip_min = 0.000000e+00" in line and "clip_max = 1.000000e+00" in line
    assert 'microkernel<"vector-pointwise-int8">' in line or "x86-vnni" in line, line
    # the folded layer's types and bias levels, as the quantized graph holds them
    (conv,) = [line for line in bundle.ir["glow"].splitlines() if "glow.convolution" in line]
    types = re.findall(r"!quant\.uniform<[^>]*>", conv)
    x_type, w_type, _, y_type = (quantized(text) for text in types[:4])
    (bias_line,) = [line for line in bundle.ir["glow"].splitlines() if '"b_hard_sigmoid"' in line]
    bias = np.array(re.search(r"dense<\[([^\]]*)\]>", bias_line).group(1).split(","), np.int64).astype(np.int32)
    assert abs(y_type[0] - 1 / 255) < 1e-6 and y_type[1] == -128, y_type  # the gate's [0, 1]
    # the filter's levels: the folded filter (w x alpha in f32) quantized to its type
    w_levels = ref.quantize(weights["w"] * np.float32(ALPHA), *w_type)
    for sample in samples:
        x_levels = ref.quantize(sample["x"], *x_type)
        expected = ref.conv2d(x_levels, w_levels, bias, x_type, [w_type[0]], [w_type[1]], y_type,
                              activation="clip", clip_min=0.0, clip_max=1.0)
        np.testing.assert_array_equal(bundle.run(sample)["y"], ref.dequantize(expected, *y_type))
