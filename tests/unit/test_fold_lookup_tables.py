"""glow-fold-lookup-tables on activations as exporters write them out (issue 42): each chain
becomes one int8 table whose outputs are within one level of the int8 reference (the input
quantized, the original ONNX chain run by onnxruntime on its levels, the result quantized
once), and the float model still computes what onnxruntime does."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import glowmlir
from glowmlir.bundle import constant_region
from glowmlir.compiler import CompileOptions, QuantizationOptions
from glowmlir.profiling import Profiler
from glowmlir.quantization.params import QuantParams, dequantize, quantize
from glowmlir.quantization.profile import write_profile
from tests.support.models import onnxruntime_outputs, ppocr_cls_style, quantized_by_onnxruntime, without_softmax
from tests.unit.test_onnx_quantized_models import onnxruntime_int8

SHAPE = [1, 4, 8, 8]

CHAINS = {  # name -> (nodes from "x" to "y", scalar constants)
    "hardswish_add_clip_mul_div": ([("Add", ["x", "three"], "a"), ("Clip", ["a", "zero", "six"], "b"),
                                    ("Mul", ["x", "b"], "m"), ("Div", ["m", "six"], "y")],
                                   {"three": 3.0, "zero": 0.0, "six": 6.0}),
    "hardswish_x_hardsigmoid": ([("HardSigmoid", ["x"], "h", {"alpha": 1 / 6, "beta": 0.5}), ("Mul", ["x", "h"], "y")],
                                {}),
    "hardsigmoid_mul_add_clip": ([("Mul", ["x", "slope"], "a"), ("Add", ["a", "half"], "b"),
                                  ("Clip", ["b", "zero", "one"], "y")],
                                 {"slope": 0.2, "half": 0.5, "zero": 0.0, "one": 1.0}),
    "silu": ([("Sigmoid", ["x"], "s"), ("Mul", ["x", "s"], "y")], {}),
    "gelu": ([("Div", ["x", "sqrt2"], "d"), ("Erf", ["d"], "e"), ("Add", ["e", "one"], "p"), ("Mul", ["x", "p"], "m"),
              ("Mul", ["m", "half"], "y")], {"sqrt2": float(np.sqrt(2.0)), "one": 1.0, "half": 0.5}),
}


def chain_model(name: str) -> onnx.ModelProto:
    steps, constants = CHAINS[name]
    nodes = [helper.make_node(step[0], step[1], [step[2]], name=step[2], **(step[3] if len(step) > 3 else {}))
             for step in steps]
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)],
                              [numpy_helper.from_array(np.array(v, np.float32), k) for k, v in constants.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)


def _parameters(text: str) -> list[QuantParams]:
    return [QuantParams(float(scale), int(offset))
            for scale, offset in re.findall(r"!quant.uniform<i8:f32, ([-0-9.e+]+):([-0-9]+)>", text)]


def int8_bundle(path: str, calibration: list[dict[str, np.ndarray]], directory) -> glowmlir.Bundle:
    """The model's int8 bundle from a profile of `calibration` (every node quantized)."""
    profiler = Profiler.for_model(path, CompileOptions())
    for _ in profiler.run(calibration):
        pass
    write_profile(str(directory / "profile.yaml"), profiler.profile)
    return glowmlir.compile(path, quantization=QuantizationOptions(str(directory / "profile.yaml"),
                                                                   assert_all_nodes_quantized=True))


def float_and_int8(path: str, calibration: list[dict[str, np.ndarray]], directory) -> tuple:
    """The model's float bundle and its int8 bundle (`int8_bundle`)."""
    return glowmlir.compile(path), int8_bundle(path, calibration, directory)


@pytest.mark.parametrize("name", list(CHAINS))
def test_exported_activation_becomes_one_table_within_a_level(tmp_path, name):
    model = chain_model(name)
    path = str(tmp_path / "chain.onnx")
    onnx.save(model, path)
    rng = np.random.default_rng(5)
    samples = [{"x": rng.normal(0, 2.5, SHAPE).astype(np.float32)} for _ in range(6)]
    float_bundle, quantized = float_and_int8(path, samples[:4], tmp_path)

    graph = quantized.ir["glow"]
    table_lines = [line for line in graph.splitlines() if "glow.int_lookup_table" in line]
    assert len(table_lines) == 1, graph
    assert not re.search(r"glow\.(add|mul|div|clip|relu|sigmoid|erf)\b", graph), graph
    input_params, _, output_params = _parameters(table_lines[0].split(" : ")[-1])[:3]

    for sample in samples:
        expected = onnxruntime_outputs(model, sample)["y"]
        np.testing.assert_allclose(float_bundle.run(sample)["y"], expected, rtol=1e-5, atol=1e-5)
        # the int8 reference: x at its input levels, the original chain (onnxruntime), quantized once
        levels_x = dequantize(quantize(sample["x"], input_params), input_params)
        reference = quantize(onnxruntime_outputs(model, {"x": levels_x})["y"], output_params).astype(np.int64)
        actual = quantize(quantized.run(sample)["y"], output_params).astype(np.int64)
        assert np.abs(actual - reference).max() <= 1
        assert len(np.unique(reference)) > 40  # the chain spans many levels


def test_ppocr_cls_style_net_folds_every_activation_and_beats_onnxruntime_int8(tmp_path):
    """The PP-OCR-cls-style net (HardSwish and HardSigmoid written out, random weights): each of
    its 18 HardSwish chains becomes one table (the squeeze-excitation gates' Mul and Add fold
    into their convolution, glow-fold-batchnorm, and the Clip fuses into it), nothing is left
    float, and its int8 logits are closer to float than onnxruntime's int8 (QDQ,
    `quantize_static` on the same calibration inputs); float is onnxruntime's float run."""
    model = without_softmax(ppocr_cls_style())
    path = str(tmp_path / "cls.onnx")
    onnx.save(model, path)
    rng = np.random.default_rng(0)
    samples = [{"data": rng.normal(size=(1, 3, 48, 192)).astype(np.float32)} for _ in range(50)]
    calibration, held_out = samples[:20], samples[20:]
    quantized = int8_bundle(path, calibration, tmp_path)
    graph = quantized.ir["glow"]
    assert graph.count("glow.int_lookup_table") == 18
    assert not re.search(r"glow\.(clip|div|relu)\b", graph)  # every Relu and Clip fused into a convolution
    gate_tables = [weight for weight in quantized.layout.weights if weight[0].startswith("int16_gate_table")]
    assert len(gate_tables) == quantized.ir["glowll"].count(' = glowll.weight "int16_gate_table')
    region = constant_region(quantized.layout)  # the SE Muls' int16 tables (AVX2) are weights.bin's bytes
    for _, offset, table in gate_tables:
        assert region[offset:offset + table.nbytes] == table.astype("<i2").tobytes()
    session = onnxruntime_int8(quantized_by_onnxruntime(model, calibration, str(tmp_path), "QDQ"))
    expected = np.stack([onnxruntime_outputs(model, s)["logits"] for s in held_out])
    ours = np.stack([quantized.run(s)["logits"] for s in held_out])
    theirs = np.stack([session.run(None, s)[0] for s in held_out])
    ours_error, theirs_error = (float(np.sqrt(np.mean((v - expected) ** 2))) for v in (ours, theirs))
    assert ours_error < 0.8 * theirs_error
