"""-use-cmsis / -use-hifi4: kernel selection into CMSIS-NN and HiFi 4 NNLib, checked against
our own int8 kernels bit for bit, with the bundle linked against our host stand-ins of the
library functions (tests/support/{cmsis_nn,hifi4}/standins.c, written from the documented
semantics)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest

import glowmlir
from glowmlir.compiler import CompileOptions, QuantizationOptions
from glowmlir.libraries import cmsis_nn
from glowmlir.profiling import Profiler
from glowmlir.quantization.profile import write_profile
from glowmlir.runtime.boards import run_on_board, target_for
from glowmlir.runtime.host import HostRunner
from tests.support.models import LENET, small_convnet
from tests.unit.test_errors import assert_clean_failure, glow_compile

SUPPORT = os.path.join(os.path.dirname(__file__), "..", "support", "cmsis_nn")
STANDINS = os.path.join(SUPPORT, "standins.c")
HIFI4_STANDINS = os.path.join(os.path.dirname(__file__), "..", "support", "hifi4", "standins.c")
STANDINS_OF = {"cmsis-nn": STANDINS, "hifi4": HIFI4_STANDINS}


def profile_for(model_path: str, samples: list[dict], path: str) -> str:
    profiler = Profiler.for_model(model_path, CompileOptions())
    for _ in profiler.run(samples):
        pass
    write_profile(path, profiler.profile)
    return path


@pytest.fixture(scope="module")
def lenet_profile(tmp_path_factory):
    data = np.load(os.path.join(os.path.dirname(LENET), "heldout.npz"))
    images = (data["images"][:30].astype(np.float32) / np.float32(255))[:, None, None]
    return profile_for(LENET, [{"data": image} for image in images], str(tmp_path_factory.mktemp("p") / "lenet.yaml"))


def digits(count: int) -> np.ndarray:
    data = np.load(os.path.join(os.path.dirname(LENET), "heldout.npz"))
    return (data["images"][100:100 + count].astype(np.float32) / np.float32(255))[:, None, None]


def compile_both(model: str, profile: str, library_name: str = "cmsis-nn",
                 **options) -> tuple[glowmlir.Bundle, HostRunner, glowmlir.Bundle]:
    """The library's bundle (and a host runner linked with its stand-ins) and our own
    kernels' bundle for the same quantization (symmetric weights, as the libraries ask for)."""
    library = glowmlir.compile(model, quantization=QuantizationOptions(profile), kernel_library=library_name, **options)
    ours = glowmlir.compile(model, quantization=QuantizationOptions(profile, symmetric_weights=True), **options)
    return library, HostRunner(library.layout, library.object_code, link=[STANDINS_OF[library_name]]), ours


def test_lenet_fully_connected_and_softmax_go_to_cmsis(lenet_profile):
    """With pooling fused into the convolutions (the default, 3,680 bytes of activations),
    the convolutions keep our kernel and say why; FullyConnected and SoftMax are calls."""
    library, runner, ours = compile_both(LENET, lenet_profile)
    calls = [(op, kind, detail) for op, kind, detail in library.library_calls]
    assert [c[2] for c in calls if c[1] == "library"] == ["arm_fully_connected_s8"] * 2 + ["arm_softmax_s8"]
    assert [c[2] for c in calls if c[0] == "glowll.convolution"] == [
        "not CMSIS-NN: fused pooling (our kernel never stores the full-resolution output; the library would)"] * 2
    assert library.layout.activations_size == 3_680 and library.layout.library_scratch == 0
    for image in digits(10):
        np.testing.assert_array_equal(runner.run(data=image)["softmax"], ours.run(data=image)["softmax"])


def test_lenet_unfused_runs_nhwc_with_no_transpose_left(lenet_profile):
    """Without fusion every convolution and pool is a call, the graph runs NHWC, and the
    layout changes cost nothing: the input's is a reshape (one channel), the Flatten's is
    folded into the FullyConnected weights."""
    library, runner, ours = compile_both(LENET, lenet_profile, memory_fusion=False)
    callees = [detail for _, kind, detail in library.library_calls if kind == "library"]
    assert callees == ["arm_convolve_wrapper_s8", "arm_max_pool_s8"] * 2 + ["arm_fully_connected_s8"] * 2 + \
        ["arm_softmax_s8"]
    assert "glow.transpose" not in library.ir["glow"] and library.ir["glow"].count('layout = "NHWC"') == 4
    # conv2's im2col: 2 * align4(5 * 5 * 20) int16 = 2,000 bytes, planned in the activations
    assert library.layout.library_scratch == 2_000
    assert library.layout.activations_size >= library.layout.activations_lower_bound >= 2_000
    for image in digits(10):
        np.testing.assert_array_equal(runner.run(data=image)["softmax"], ours.run(data=image)["softmax"])


@pytest.mark.parametrize("library_name", ["cmsis-nn", "hifi4"])
@pytest.mark.parametrize("memory_fusion", [True, False])
def test_convnet_with_depthwise_residual_and_average_pooling(tmp_path, memory_fusion, library_name):
    model = small_convnet(seed=2)
    path = str(tmp_path / "convnet.onnx")
    onnx.save(model, path)
    rng = np.random.default_rng(7)
    samples = [{"data": rng.normal(size=(1, 3, 32, 32)).astype(np.float32)} for _ in range(12)]
    profile = profile_for(path, samples[:8], str(tmp_path / "convnet.yaml"))
    library, runner, ours = compile_both(path, profile, library_name, memory_fusion=memory_fusion)
    callees = {detail for _, kind, detail in library.library_calls if kind == "library"}
    expected = {"cmsis-nn": {"arm_depthwise_conv_wrapper_s8", "arm_fully_connected_s8", "arm_softmax_s8"},
                "hifi4": {"xa_nn_conv2d_depthwise_per_chan_sym8sxasym8s", "xa_nn_vec_softmax_asym8s_asym8s"}}
    unfused = {"cmsis-nn": {"arm_convolve_wrapper_s8", "arm_max_pool_s8", "arm_avgpool_s8", "arm_elementwise_add_s8"},
               "hifi4": {"xa_nn_conv2d_std_per_chan_sym8sxasym8s", "xa_nn_maxpool_8", "xa_nn_avgpool_8",
                         "xa_nn_elm_add_asym8sxasym8s_asym8s"}}
    assert expected[library_name] <= {c.split(" + ")[0] for c in callees}
    if not memory_fusion:
        assert unfused[library_name] <= {c.split(" + ")[0] for c in callees}
    for sample in samples[8:]:
        expected = ours.run(sample)
        for name, value in runner.run(sample).items():
            np.testing.assert_array_equal(value, expected[name])


def test_struct_layouts_match_the_c_declarations(tmp_path):
    """Our struct tables (what the constant region and the stack hold) against the C
    compiler's offsetof/sizeof of the documented declarations: host and Cortex-M ABIs."""
    compiled = 0
    for pointer_size, compiler, flags in ((8, "cc", []), (4, "arm-none-eabi-gcc", ["-mcpu=cortex-m7", "-mthumb"])):
        if shutil.which(compiler) is None:
            continue
        lines = ['#include <stddef.h>', '#include "arm_nnfunctions.h"']
        for name in [*cmsis_nn.INT32_STRUCTS, *cmsis_nn.POINTER_STRUCTS]:
            lines.append(f"_Static_assert(sizeof({name}) == {cmsis_nn.struct_size(name, pointer_size)}, \"{name}\");")
            for field, offset in cmsis_nn.struct_offsets(name, pointer_size).items():
                lines.append(f"_Static_assert(offsetof({name}, {field}) == {offset}, \"{name}.{field}\");")
        source = tmp_path / f"layout{pointer_size}.c"
        source.write_text("\n".join(lines) + "\n")
        result = subprocess.run([compiler, *flags, "-I", SUPPORT, "-c", str(source), "-o", str(tmp_path / "x.o")],
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        compiled += 1
    assert compiled, "no C compiler to check the layouts with"


QEMU = shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")


@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
def test_cortex_m7_bundle_with_the_standins_matches_the_host(lenet_profile):
    options = dict(quantization=QuantizationOptions(lenet_profile, convert_placeholders=True),
                   kernel_library="cmsis-nn", memory_fusion=False)
    host = glowmlir.compile(LENET, **options)
    device = glowmlir.compile(LENET, target=target_for("mps2-an500"), **options)
    scale, offset = host.layout.placeholder("data").quantization
    level = np.clip(np.rint(digits(1)[0] / np.float32(scale)) + offset, -128, 127).astype(np.int8)
    result = run_on_board(device, "mps2-an500", {"data": level}, link=[STANDINS])
    expected = HostRunner(host.layout, host.object_code, link=[STANDINS]).run(data=level)["softmax"]
    np.testing.assert_array_equal(result.outputs["softmax"], expected)


def test_use_cmsis_needs_a_quantized_model(tmp_path):
    out_dir = str(tmp_path / "bundle")
    assert_clean_failure(glow_compile(f"-model={LENET}", "-use-cmsis", f"-emit-bundle={out_dir}"),
                         "-use-cmsis needs a quantized model")
    assert not os.path.exists(out_dir)


def test_glow_compile_lists_the_selection(lenet_profile, tmp_path):
    result = subprocess.run([sys.executable, "-m", "glowmlir.cli.compile", f"-model={LENET}",
                             f"-load-profile={lenet_profile}", "-use-cmsis", f"-emit-bundle={tmp_path / 'b'}",
                             "-dump-ir"], capture_output=True, text=True, env=os.environ | {"COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    assert "arm_fully_connected_s8" in result.stdout and "fused pooling" in result.stdout
    assert 'glowll.library_call "arm_softmax_s8"' in result.stdout


def test_hifi4_lenet_and_its_xtensa_bundle(lenet_profile, tmp_path):
    """-use-hifi4 on the host (stand-ins linked) equals our kernels; with -mcpu=hifi4 the
    bundle holds LLVM bitcode and IR for Xtensa calling the xa_nn functions, not an object."""
    library, runner, ours = compile_both(LENET, lenet_profile, "hifi4", memory_fusion=False)
    assert library.layout.library_scratch == 1_008  # conv2: align8(5 * 5 * 20 * 2) + 8
    for image in digits(5):
        np.testing.assert_array_equal(runner.run(data=image)["softmax"], ours.run(data=image)["softmax"])
    from glowmlir.targets import resolve_target
    from llvmlite import binding as llvm

    xtensa = glowmlir.compile(LENET, quantization=QuantizationOptions(lenet_profile), kernel_library="hifi4",
                              memory_fusion=False, target=resolve_target(mcpu="hifi4"))
    written = sorted(os.path.basename(p) for p in xtensa.save(str(tmp_path / "hifi4")))
    assert written == ["lenet_mnist.bc", "lenet_mnist.h", "lenet_mnist.ll", "lenet_mnist.weights.bin",
                       "lenet_mnist.weights.txt"]
    module = llvm.parse_bitcode((tmp_path / "hifi4" / "lenet_mnist.bc").read_bytes())
    assert module.triple == "xtensa-unknown-none-elf"
    declared = {f.name for f in module.functions if f.is_declaration}
    assert {"xa_nn_conv2d_std_per_chan_sym8sxasym8s", "xa_nn_maxpool_8", "xa_nn_fully_connected_sym8sxasym8s_asym8s",
            "xa_nn_vec_softmax_asym8s_asym8s"} <= declared
    assert not module.get_function("lenet_mnist").is_declaration


def test_cmsis_and_hifi4_exclude_each_other(lenet_profile, tmp_path):
    assert_clean_failure(glow_compile(f"-model={LENET}", f"-load-profile={lenet_profile}", "-use-cmsis", "-use-hifi4",
                                      f"-emit-bundle={tmp_path / 'b'}"), "exclude each other")


MOBILENET = os.path.join(os.path.dirname(LENET), "..", "mobilenet_v2", "mobilenet_v2.onnx")


@pytest.fixture(scope="module")
def mobilenet_profile(tmp_path_factory):
    rng = np.random.default_rng(11)
    samples = [{"data": rng.normal(size=(1, 3, 96, 96)).astype(np.float32)} for _ in range(4)]
    return profile_for(MOBILENET, samples, str(tmp_path_factory.mktemp("mb") / "mobilenet.yaml"))


@pytest.mark.parametrize("library_name", ["cmsis-nn", "hifi4"])
def test_mobilenet_v2_runs_nhwc_in_the_library(mobilenet_profile, library_name):
    """52 convolutions (17 depthwise), 11 residual adds, the classifier and the softmax go to
    the library; the only layout changes left are at the float edges (the 3-channel input,
    the float ReduceMean); the outputs equal our own kernels'."""
    library, runner, ours = compile_both(MOBILENET, mobilenet_profile, library_name)
    calls = [detail for _, kind, detail in library.library_calls if kind == "library"]
    assert len(calls) == 35 + 17 + 11 + 2
    assert library.ir["glow"].count("glow.transpose") == 2
    sample = {"data": np.random.default_rng(12).normal(size=(1, 3, 96, 96)).astype(np.float32)}
    expected = ours.run(sample)
    for name, value in runner.run(sample).items():
        np.testing.assert_array_equal(value, expected[name])
