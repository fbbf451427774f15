"""TFLite importer: float and int8 models built in tests/support/tflite_models.py (random
weights, the int8 ones quantized to TFLite's int8 spec), checked against ai-edge-litert's
reference kernels (OpResolverType.BUILTIN_REF).

Int8 outputs may differ from the reference by one level, rarely: ai-edge-litert rounds a
requantization once, we (as CMSIS-NN and TFLite Micro by default) round twice
(`arm_nn_requantize`); the tests bound both the size and the rate of such differences.
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

import glowmlir
from glowmlir.compiler import CompileOptions, QuantizationOptions
from glowmlir.errors import GlowError
from glowmlir.importers.onnx import ModelInput
from glowmlir.profiling import Profiler
from glowmlir.quantization.profile import write_profile
from glowmlir.runtime.boards import run_on_board, target_for
from glowmlir.runtime.host import HostRunner
from tests.support import tflite_models as tm
from tests.support.models import LENET
from tests.unit.test_errors import assert_clean_failure, glow_compile
from tests.unit.test_kernel_libraries import STANDINS

MODELS = ["conv_net", "mobilenet_block", "elementwise_net", "lenet"]
ALL_INT8 = ["conv_net", "lenet"]
"""Models whose every op has an integer kernel: their int8 graph has no float op (the
others have Logistic, Tanh, ... or, in mobilenet_block, a MEAN that changes scale)."""


def saved(tmp_path, name: str, data: bytes) -> str:
    path = str(tmp_path / f"{name}.tflite")
    with open(path, "wb") as f:
        f.write(data)
    return path


def assert_within_one_level(ours: dict, reference: dict, inputs_seen: int) -> None:
    """Every int8 output within one level of the reference, at most 1% of them off at all."""
    differing = total = 0
    for name, expected in reference.items():
        assert ours[name].dtype == expected.dtype == np.int8
        difference = np.abs(ours[name].astype(int) - expected.astype(int))
        assert difference.max() <= 1, (name, difference.max())
        differing, total = differing + int(np.count_nonzero(difference)), total + difference.size
    assert differing <= max(1, total // 100), f"{differing} of {total} levels differ over {inputs_seen} inputs"


@pytest.mark.parametrize("name", MODELS)
def test_float_model_matches_the_reference(name, tmp_path):
    data = getattr(tm, name)(False, seed=3)
    bundle = glowmlir.compile(saved(tmp_path, name, data))
    for seed in range(3):
        inputs = tm.random_inputs(data, seed=seed)
        expected = tm.run_reference(data, inputs)
        outputs = bundle.run(inputs)
        for output, value in expected.items():
            np.testing.assert_allclose(outputs[output], value, rtol=1e-4, atol=1e-5, err_msg=output)


@pytest.mark.parametrize("name", MODELS)
def test_int8_model_matches_the_reference(name, tmp_path):
    """The file's own scales and zero points, no profile: int8 in, int8 out."""
    data = getattr(tm, name)(True, seed=3)
    bundle = glowmlir.compile(saved(tmp_path, name, data))
    placeholder = bundle.layout.placeholder("input")
    assert placeholder.quantization is not None and placeholder.dtype == np.int8
    if name in ALL_INT8:
        assert "glow.dequantize" not in bundle.ir["glow"] and "glow.quantize" not in bundle.ir["glow"]
    else:  # Logistic, Tanh, HardSwish, ... run in float between conversions
        assert "glow.dequantize" in bundle.ir["glow"]
    if name == "elementwise_net":  # RELU, LEAKY_RELU and their MAXIMUM, all of one int8 tensor: one table
        assert "glow.leaky_relu" not in bundle.ir["glow"]  # (glow-fold-lookup-tables), here bit-exact with TFLite
        assert 'name = "maximum_0"' in next(line for line in bundle.ir["glow"].splitlines() if "lookup_table" in line
                                            and "maximum_0" in line)
    outputs, expected = {}, {}
    for seed in range(8):
        inputs = tm.random_inputs(data, seed=seed)
        for output, value in tm.run_reference(data, inputs).items():
            expected.setdefault(output, []).append(value)
        for output, value in bundle.run(inputs).items():
            outputs.setdefault(output, []).append(value)
    assert_within_one_level({k: np.stack(v) for k, v in outputs.items()},
                            {k: np.stack(v) for k, v in expected.items()}, 8)


def test_int8_model_with_float_io_takes_and_gives_float(tmp_path):
    """QUANTIZE -> int8 body -> DEQUANTIZE, as TFLite's converter writes models with float I/O."""
    data = tm.float_io_net(seed=1)
    bundle = glowmlir.compile(saved(tmp_path, "float_io", data))
    assert bundle.layout.placeholder("input").quantization is None
    output_scale = _tensor_scale(data, "output_int8")
    for seed in range(4):
        inputs = tm.random_inputs(data, seed=seed)
        np.testing.assert_allclose(bundle.run(inputs)["output"], tm.run_reference(data, inputs)["output"],
                                   atol=output_scale * 1.001, rtol=0)


def _tensor_scale(data: bytes, name: str) -> float:
    import tflite

    graph = tflite.Model.GetRootAsModel(data, 0).Subgraphs(0)
    for index in range(graph.TensorsLength()):
        tensor = graph.Tensors(index)
        if tensor.Name().decode() == name:
            return float(tensor.Quantization().ScaleAsNumpy()[0])
    raise KeyError(name)


def test_tflite_float_inputs_and_outputs(tmp_path):
    """-tflite-float-inputs / -tflite-float-outputs: float placeholders around the int8 graph."""
    data = tm.conv_net(True, seed=2)
    bundle = glowmlir.compile(saved(tmp_path, "conv_net", data), tflite_float_inputs=True, tflite_float_outputs=True)
    assert all(p.quantization is None and p.dtype == np.float32 for p in bundle.layout.placeholders)
    for seed in range(4):
        inputs = tm.random_inputs(data, seed=seed, as_float=True)
        np.testing.assert_allclose(bundle.run(inputs)["output"], tm.run_reference_float(data, inputs)["output"],
                                   atol=1 / 256 * 1.001, rtol=0)


def test_header_gives_the_quantized_io_parameters(tmp_path):
    model = saved(tmp_path, "conv_net", tm.conv_net(True, seed=2))
    out_dir = tmp_path / "bundle"
    result = glow_compile("-backend=CPU", f"-model={model}", f"-emit-bundle={out_dir}")
    assert result.returncode == 0, result.stderr
    header = (out_dir / "conv_net.h").read_text()
    assert "#define CONV_NET_output_scale   0.00390625f" in header
    assert "#define CONV_NET_output_offset  -128" in header
    assert "#define CONV_NET_input_scale" in header


def test_convolutions_stay_nchw_between_their_layout_changes(tmp_path):
    """NHWC in the file, NCHW in Glow: only the graph's ends change layout (LeNet's input,
    one channel, becomes a reshape; the flatten before the FC absorbs the last one)."""
    bundle = glowmlir.compile(saved(tmp_path, "lenet", tm.lenet(True, seed=0)))
    assert "glow.transpose" not in bundle.ir["glow"]
    assert bundle.layout.activations_size == 3_680  # what LeNet takes from the ONNX importer


def test_cmsis_nn_takes_an_int8_tflite_model_without_a_profile(tmp_path):
    data = tm.conv_net(True, seed=4)
    model = saved(tmp_path, "conv_net", data)
    library = glowmlir.compile(model, kernel_library="cmsis-nn", memory_fusion=False)
    ours = glowmlir.compile(model)
    callees = {detail for _, kind, detail in library.library_calls if kind == "library"}
    assert {"arm_convolve_wrapper_s8", "arm_depthwise_conv_wrapper_s8", "arm_fully_connected_s8",
            "arm_softmax_s8"} <= callees
    runner = HostRunner(library.layout, library.object_code, link=[STANDINS])
    for seed in range(3):
        inputs = tm.random_inputs(data, seed=seed)
        np.testing.assert_array_equal(runner.run(inputs)["output"], ours.run(inputs)["output"])


def test_kernel_library_needs_an_int8_model(tmp_path):
    """-use-cmsis takes an int8 TFLite model as it is, but not a float one."""
    model = saved(tmp_path, "conv_net", tm.conv_net(False))
    with pytest.raises(GlowError,
                       match=r"-use-cmsis needs a quantized model \(-load-profile, or an int8 TFLite model\)"):
        glowmlir.compile(model, kernel_library="cmsis-nn")


def test_per_channel_fully_connected_runs_in_float_with_its_own_bias(tmp_path):
    """Our int8 FullyConnected wants one weight scale: a per-channel one runs in float, its
    weights and bias dequantized with their own scales (once)."""
    rng = np.random.default_rng(0)
    builder = tm.ModelBuilder()
    x = builder.input("x", [2, 8], "int8", quant=(0.02, 3))
    weight_scales = rng.uniform(0.005, 0.02, 4).astype(np.float32)
    zeros = np.zeros(4, np.int64)
    w = builder.constant("w", rng.integers(-127, 128, (4, 8)).astype(np.int8), quant=(weight_scales, zeros, 0))
    bias = builder.constant("b", rng.integers(-2000, 2000, 4).astype(np.int32),
                            quant=(np.float32(0.02) * weight_scales, zeros, 0))
    y = builder.tensor("y", [2, 4], "int8", quant=(0.05, -2))
    builder.op("FULLY_CONNECTED", [x, w, bias], [y], "FullyConnectedOptions", fused_activation_function="NONE")
    builder.output(y)
    data = builder.finish()
    bundle = glowmlir.compile(saved(tmp_path, "fc", data))
    assert "glow.dequantize" in bundle.ir["glow"]
    outputs, expected = [], []
    for seed in range(20):
        inputs = tm.random_inputs(data, seed=seed, low=-2.5, high=2.5)
        outputs.append(bundle.run(inputs)["y"])
        expected.append(tm.run_reference(data, inputs)["y"])
    assert_within_one_level({"y": np.stack(outputs)}, {"y": np.stack(expected)}, 20)


def test_float_tflite_model_quantizes_with_a_profile(tmp_path):
    """A float TFLite model goes through glow-profile and -load-profile like an ONNX one."""
    data = tm.conv_net(False, seed=5)
    model = saved(tmp_path, "conv_net", data)
    profiler = Profiler.for_model(model, CompileOptions())
    for _ in profiler.run(tm.random_inputs(data, seed=seed) for seed in range(20)):
        pass
    profile = str(tmp_path / "conv_net.yaml")
    write_profile(profile, profiler.profile)
    bundle = glowmlir.compile(model, quantization=QuantizationOptions(profile))
    assert "!quant.uniform" in bundle.ir["glow"] and "glow.convolution" in bundle.ir["glow"]
    inputs = tm.random_inputs(data, seed=100)
    np.testing.assert_allclose(bundle.run(inputs)["output"], tm.run_reference(data, inputs)["output"], atol=0.03)


QEMU = shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")


@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
def test_int8_tflite_bundle_on_a_cortex_m7_matches_the_host(tmp_path):
    data = tm.lenet(True, seed=6)
    model = saved(tmp_path, "lenet", data)
    host = glowmlir.compile(model)
    device = glowmlir.compile(model, target=target_for("mps2-an500"))
    inputs = tm.random_inputs(data, seed=0)
    result = run_on_board(device, "mps2-an500", inputs)
    np.testing.assert_array_equal(result.outputs["output"], host.run(inputs)["output"])


# ----------------------------------------------------------------------------- errors


def _one_op_model(opcode: str, options: str | None = None, **fields) -> bytes:
    builder = tm.ModelBuilder()
    x = builder.input("x", [1, 4, 4, 2])
    y = builder.tensor("y", [1, 4, 4, 2])
    builder.op(opcode, [x], [y], options, **fields)
    builder.output(y)
    return builder.finish()


def test_unsupported_operator_names_it_and_its_output(tmp_path):
    model = saved(tmp_path, "ceil", _one_op_model("CEIL"))
    with pytest.raises(GlowError, match=r'TFLite operator 0 \(CEIL, output "y"\): unsupported operator "CEIL"'):
        glowmlir.compile(model)
    out_dir = str(tmp_path / "bundle")
    assert_clean_failure(glow_compile(f"-model={model}", f"-emit-bundle={out_dir}"), "unsupported operator \"CEIL\"")
    assert not os.path.exists(out_dir)


def test_unsupported_fused_activation(tmp_path):
    builder = tm.ModelBuilder()
    a, b = builder.input("a", [1, 4]), builder.input("b", [1, 4])
    y = builder.tensor("y", [1, 4])
    builder.op("ADD", [a, b], [y], "AddOptions", fused_activation_function="TANH")
    builder.output(y)
    with pytest.raises(GlowError,
                       match=r"ADD, output \"y\"\): fused activation 4 \(TANH or SIGN_BIT\) is not supported"):
        glowmlir.compile(saved(tmp_path, "add", builder.finish()))


def test_not_a_tflite_file(tmp_path):
    path = tmp_path / "broken.tflite"
    path.write_bytes(b"\x00" * 64)
    with pytest.raises(GlowError, match=r"is not a TFLite model \(no TFL3 identifier\)"):
        glowmlir.compile(str(path))
    with pytest.raises(GlowError, match=r'-model: file ".*missing.tflite" not found'):
        glowmlir.compile(str(tmp_path / "missing.tflite"))


def test_model_input_must_restate_the_models_shape(tmp_path):
    model = saved(tmp_path, "lenet", tm.lenet(False))
    with pytest.raises(GlowError, match=r'input "input" has shape \[1, 28, 28, 1\] in the model, not \[2, 28, 28, 1\]'):
        glowmlir.compile(model, model_inputs=[ModelInput("input", "float", (2, 28, 28, 1))])
    with pytest.raises(GlowError, match=r'the model has no input "data"'):
        glowmlir.compile(model, model_inputs=[ModelInput("data", "float", (1, 28, 28, 1))])


def test_tflite_options_need_a_tflite_model():
    with pytest.raises(GlowError, match="-tflite-float-inputs and -tflite-float-outputs apply to TFLite models only"):
        glowmlir.compile(LENET, tflite_float_inputs=True)


def _int8_conv(x_quant=(0.05, 3), w_quant=((0.01, 0.02), (0, 0), 0), y_quant=(0.1, -5)) -> bytes:
    """An int8 CONV_2D, 2 output channels, with the given quantization (None: none)."""
    rng = np.random.default_rng(0)
    builder = tm.ModelBuilder()
    x = builder.input("x", [1, 4, 4, 2], "int8", quant=x_quant)
    w = builder.constant("w", rng.integers(-127, 128, (2, 1, 1, 2)).astype(np.int8), quant=w_quant)
    b = builder.constant("b", np.zeros(2, np.int32), quant=((0.0005, 0.001), (0, 0), 0))
    y = builder.tensor("y", [1, 4, 4, 2], "int8", quant=y_quant)
    builder.op("CONV_2D", [x, w, b], [y], "Conv2DOptions", padding="SAME", stride_w=1, stride_h=1)
    builder.output(y)
    return builder.finish()


@pytest.mark.parametrize("model, message", [
    (dict(w_quant=None), r'CONV_2D, output "y"\): tensor "w" \(INT8\) has no quantization parameters'),
    (dict(y_quant=None), r'CONV_2D, output "y"\): tensor "y" \(INT8\) has no quantization parameters'),
    (dict(w_quant=((0.01, 0.0), (0, 0), 0)), r'tensor "w": .*scale'),
    (dict(x_quant=(0.05, 300)), r'tensor "x": .*'),
    (dict(w_quant=((0.01, 0.02), (0, 4), 0)),
     r'CONV_2D, output "y"\): the filter "w" is quantized per channel with nonzero zero points'),
    (dict(w_quant=((0.01, 0.02, 0.03), (0, 0, 0), 0)), r'tensor "w" has 3 scales on dimension 0 of its shape'),
    (dict(y_quant=((0.1, 0.1), (0, 0), 3)),
     r'CONV_2D, output "y"\): tensor "y" is quantized per channel, which only weights can be'),
])
def test_quantization_is_checked_before_arithmetic(model, message, tmp_path):
    """Missing or zero scales, zero points out of range, asymmetric per-channel weights, scales
    that do not fit the shape: one clean error naming the operator or the tensor."""
    path = saved(tmp_path, "conv", _int8_conv(**model))
    with pytest.raises(GlowError, match=message):
        glowmlir.compile(path)
    tensor = next(name for name in "wxy" if f"tensor \"{name}\"" in message or f"filter \"{name}\"" in message)
    assert_clean_failure(glow_compile(f"-model={path}", f"-emit-bundle={tmp_path / 'out'}"), f'"{tensor}"')


def test_names_c_cannot_take_keep_working_under_the_models_name(tmp_path):
    """A converter's `serving_default_input_1:0` is `serving_default_input_1_0` in the bundle,
    announced by a warning; Bundle.run and glow-run still take and give the model's names."""
    import subprocess
    import sys

    from glowmlir.errors import GlowWarning

    builder = tm.ModelBuilder()
    x = builder.input("serving_default_input_1:0", [1, 4])
    y = builder.tensor("StatefulPartitionedCall:0", [1, 4])
    builder.op("RELU", [x], [y])
    builder.output(y)
    model = saved(tmp_path, "named", builder.finish())
    with pytest.warns(GlowWarning, match=r'"serving_default_input_1:0" as "serving_default_input_1_0"'):
        bundle = glowmlir.compile(model)
    assert bundle.layout.placeholder("serving_default_input_1:0").name == "serving_default_input_1_0"
    value = np.array([[-1, 2, -3, 4]], np.float32)
    outputs = bundle.run(**{"serving_default_input_1:0": value})
    np.testing.assert_array_equal(outputs["StatefulPartitionedCall:0"], np.maximum(value, 0))
    np.save(tmp_path / "x.npy", value)
    result = subprocess.run([sys.executable, "-m", "glowmlir.cli.run", f"-model={model}",
                             f"-input=serving_default_input_1:0={tmp_path / 'x.npy'}"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "StatefulPartitionedCall:0 [1, 4]: [0. 2. 0. 4.]" in result.stdout
    assert "names C cannot take are changed in the bundle" in result.stderr


def _wide_fully_connected() -> bytes:
    """An int8 FULLY_CONNECTED with 2048 outputs of a fine scale: requantization ties occur."""
    rng = np.random.default_rng(0)
    builder = tm.ModelBuilder()
    x = builder.input("x", [16, 64], "int8", quant=(0.03, 2))
    w = builder.constant("w", rng.integers(-127, 128, (128, 64)).astype(np.int8), quant=(0.004, 0))
    b = builder.constant("b", rng.integers(-500, 500, 128).astype(np.int32), quant=(0.03 * 0.004, 0))
    y = builder.tensor("y", [16, 128], "int8", quant=(0.09, -3))
    builder.op("FULLY_CONNECTED", [x, w, b], [y], "FullyConnectedOptions", fused_activation_function="NONE")
    builder.output(y)
    return builder.finish()


def test_tflite_rounding_single_is_bit_identical_to_ai_edge_litert(tmp_path):
    """ai-edge-litert's FULLY_CONNECTED rounds a requantization once, TFLite Micro's twice:
    `-tflite-rounding=single` gives the former's bits, the default the latter's."""
    data = _wide_fully_connected()
    model = saved(tmp_path, "fc", data)
    single, double = glowmlir.compile(model, tflite_rounding="single"), glowmlir.compile(model)
    differing = 0
    for seed in range(5):
        inputs = tm.random_inputs(data, seed=seed, low=-3, high=3)
        litert, micro = tm.run_reference(data, inputs)["y"], tm.run_micro(data, inputs)["y"]
        np.testing.assert_array_equal(single.run(inputs)["y"], litert)
        np.testing.assert_array_equal(double.run(inputs)["y"], micro)
        differing += int(np.count_nonzero(litert != micro))
    assert differing > 0  # the two conventions do differ on this model


@pytest.mark.parametrize("name", MODELS)
def test_tflite_rounding_single_on_the_int8_models(name, tmp_path):
    data = getattr(tm, name)(True, seed=3)
    bundle = glowmlir.compile(saved(tmp_path, name, data), tflite_rounding="single")
    for seed in range(4):
        inputs = tm.random_inputs(data, seed=seed)
        for output, value in tm.run_reference(data, inputs).items():
            np.testing.assert_array_equal(bundle.run(inputs)[output], value)


def test_tflite_rounding_errors(tmp_path):
    model = saved(tmp_path, "fc", _wide_fully_connected())
    with pytest.raises(GlowError, match=r"-tflite-rounding=single: -use-cmsis's library rounds twice"):
        glowmlir.compile(model, tflite_rounding="single", kernel_library="cmsis-nn")
    assert_clean_failure(glow_compile(f"-model={model}", "-tflite-rounding=half", f"-emit-bundle={tmp_path / 'o'}"),
                         "-tflite-rounding", "double or single")
