"""Whole models: compile, run on the host, compare with onnxruntime and the reference outputs."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import onnx
import pytest

import glowmlir
from glowmlir.names import legalize_name
from tests.support.models import (
    LENET,
    graph_inputs,
    light_model_path,
    light_reference_output,
    onnxruntime_outputs,
    random_inputs,
    randomized,
)

EXAMPLE = os.path.join(os.path.dirname(LENET))


@pytest.fixture(scope="module")
def lenet():
    return glowmlir.compile(LENET)


def test_lenet_matches_onnxruntime(lenet):
    inputs = random_inputs(onnx.load(LENET))
    expected = onnxruntime_outputs(onnx.load(LENET), inputs)["softmax"]
    np.testing.assert_allclose(lenet.run(inputs)["softmax"], expected, atol=1e-6, rtol=0)


def test_lenet_heldout_accuracy_matches_the_recorded_one(lenet):
    import json

    heldout = np.load(os.path.join(EXAMPLE, "heldout.npz"))
    images = heldout["images"].astype(np.float32) / 255.0
    correct = sum(int(lenet.run(data=image)["softmax"].argmax() == label)
                  for image, label in zip(images, heldout["labels"]))
    with open(os.path.join(EXAMPLE, "accuracy.json")) as f:
        recorded = json.load(f)["heldout_accuracy"]
    assert correct / len(images) == pytest.approx(recorded, abs=1e-9)


@pytest.mark.parametrize("name", ["squeezenet", "resnet50"])
def test_light_model_matches_its_reference_output(name):
    """The output file shipped beside the model, for the onnx backend runner's input."""
    model = onnx.load(light_model_path(name))
    (graph_input,) = graph_inputs(model)
    shape = [d.dim_value for d in graph_input.type.tensor_type.shape.dim]
    data = (np.arange(np.prod(shape)).reshape(shape) / np.prod(shape)).astype(np.float32)
    outputs = glowmlir.compile(light_model_path(name)).run({legalize_name(graph_input.name): data})
    (actual,) = outputs.values()
    expected = light_reference_output(name)
    np.testing.assert_allclose(actual.reshape(expected.shape), expected, atol=1e-7, rtol=1e-3)


@pytest.mark.parametrize("name", ["squeezenet", "resnet50", "inception_v1"])
def test_light_model_with_random_weights_matches_onnxruntime(name, tmp_path):
    """Splat weights prove little: random ones, checked on the logits before the softmax too.

    With memory planning on: fused convolution+pooling, concat in place (fire and
    inception modules), in-place activations, the memory-first schedule.
    """
    model = onnx.load(light_model_path(name))
    logits = next(n.input[0] for n in model.graph.node if n.op_type == "Softmax")
    model = randomized(model, seed=3, extra_outputs=[logits])
    path = os.path.join(tmp_path, f"{name}.onnx")
    onnx.save(model, path)
    inputs = random_inputs(model)
    expected = onnxruntime_outputs(model, inputs)
    actual = glowmlir.compile(path).run({legalize_name(k): v for k, v in inputs.items()})
    for output_name, value in expected.items():
        scale = float(np.abs(value).max())
        error = float(np.abs(actual[legalize_name(output_name)].reshape(value.shape) - value).max())
        assert error <= 1e-4 * scale, f"{output_name}: max error {error} against output scale {scale}"


@pytest.mark.parametrize("name", ["squeezenet", "resnet50"])
def test_light_model_through_a_c_main(name, tmp_path):
    """Compiled, linked with a Glow-style C main by the system compiler, run as a program."""
    from glowmlir.runtime.boards import run_on_board

    model = onnx.load(light_model_path(name))
    logits = next(n.input[0] for n in model.graph.node if n.op_type == "Softmax")
    model = randomized(model, seed=5, extra_outputs=[logits])
    path = os.path.join(tmp_path, f"{name}.onnx")
    onnx.save(model, path)
    inputs = random_inputs(model, seed=2)
    expected = onnxruntime_outputs(model, inputs)
    bundle = glowmlir.compile(path)
    outputs = run_on_board(bundle, "native", {legalize_name(k): v for k, v in inputs.items()}).outputs
    for output_name, value in expected.items():
        scale = float(np.abs(value).max())
        error = float(np.abs(outputs[legalize_name(output_name)].reshape(value.shape) - value).max())
        assert error <= 1e-4 * scale, f"{output_name}: max error {error} against output scale {scale}"


def test_glow_style_main_builds_against_our_header_unchanged(tmp_path):
    """examples/lenet_mnist/main.c, written for Glow's bundle API, compiles and predicts."""
    bundle_dir = os.path.join(tmp_path, "bundle")
    subprocess.run([sys.executable, "-m", "glowmlir.cli.compile", "-backend=CPU", f"-model={LENET}",
                    f"-emit-bundle={bundle_dir}"],
                   check=True, capture_output=True)
    program = os.path.join(tmp_path, "lenet")
    subprocess.run(["cc", "-std=c99", "-Wall", "-Werror", "-O2", "-I", bundle_dir, os.path.join(EXAMPLE, "main.c"),
                    os.path.join(bundle_dir, "lenet_mnist.o"), "-lpng", "-lm", "-o", program], check=True)
    images = sorted(os.path.join(EXAMPLE, "images", f) for f in os.listdir(os.path.join(EXAMPLE, "images")))
    result = subprocess.run([program, *images], check=True, capture_output=True, text=True)
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == f"19/{len(images)} correct"  # 2900_5.png is misread as an 8 by the model itself


def test_dynamic_bundle_api(tmp_path):
    """-bundle-api=dynamic: BundleConfig and the placeholder symbol table, read from C."""
    bundle_dir = os.path.join(tmp_path, "bundle")
    glowmlir.compile(LENET, bundle_api="dynamic").save(bundle_dir)
    source = os.path.join(tmp_path, "config.c")
    with open(source, "w") as f:
        f.write('#include <stdio.h>\n#include "lenet_mnist.h"\nint main(void) {\n'
                '  const struct BundleConfig *c = &lenet_mnist_config;\n'
                '  printf("%lu %lu %lu %lu %lu\\n", (unsigned long)c->constantWeightVarsMemSize,'
                ' (unsigned long)c->mutableWeightVarsMemSize, (unsigned long)c->activationsMemSize,'
                ' (unsigned long)c->alignment, (unsigned long)c->numSymbols);\n'
                '  for (unsigned i = 0; i < c->numSymbols; i++) printf("%s %lu %lu %d\\n", c->symbolTable[i].name,'
                ' (unsigned long)c->symbolTable[i].offset, (unsigned long)c->symbolTable[i].size,'
                ' c->symbolTable[i].kind);\n'
                '  return 0;\n}\n')
    program = os.path.join(tmp_path, "config")
    subprocess.run(["cc", "-Wall", "-Werror", "-I", bundle_dir, source, os.path.join(bundle_dir, "lenet_mnist.o"),
                    "-lm", "-o", program], check=True)
    lines = subprocess.run([program], check=True, capture_output=True, text=True).stdout.splitlines()
    bundle = glowmlir.compile(LENET)
    layout = bundle.layout
    assert lines[0] == f"{layout.constant_size} {layout.mutable_size} {layout.activations_size} 64 2"
    assert lines[1:] == ["data 0 784 1", "softmax 3136 10 1"]
    assert not os.path.exists(os.path.join(bundle_dir, "lenet_mnist.weights.txt"))


def test_mobilenet_v2_from_pytorch_matches_onnxruntime(tmp_path):
    """MobileNetV2 (width 0.35, 96x96) exported from PyTorch with random weights
    (examples/mobilenet_v2/export.py): depthwise convolutions, ReLU6, residual adds."""
    path = os.path.join(os.path.dirname(EXAMPLE), "mobilenet_v2", "mobilenet_v2.onnx")
    model = onnx.load(path)
    logits = next(n.output[0] for n in model.graph.node if n.op_type == "Gemm")
    model.graph.output.extend(v for v in onnx.shape_inference.infer_shapes(model).graph.value_info if v.name == logits)
    with_logits = os.path.join(tmp_path, "mobilenet_v2.onnx")
    onnx.save(model, with_logits)
    inputs = random_inputs(model)
    expected = onnxruntime_outputs(model, inputs)
    actual = glowmlir.compile(with_logits).run(inputs)
    for name, value in expected.items():
        scale = float(np.abs(value).max())
        np.testing.assert_allclose(actual[legalize_name(name)].reshape(value.shape), value, atol=1e-4 * scale, rtol=0)
