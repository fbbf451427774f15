"""-use-cmsis / -use-hifi4: kernel selection into CMSIS-NN and HiFi 4 NNLib, checked against
our own int8 kernels bit for bit, with the bundle linked against our host stand-ins of the
library functions (tests/support/{cmsis_nn,hifi4}/standins.c, written from the documented
semantics)."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.parser import Parser

import glowmlir
from glowmlir.backends.cmsis_nn import library as cmsis_nn
from glowmlir.backends.hifi4 import library as hifi4
from glowmlir.compiler import CompileOptions, QuantizationOptions
from glowmlir.dialects import glowll
from glowmlir.dialects.glow import Glow
from glowmlir.dialects.glowll import GlowLL
from glowmlir.dialects.quant import Quant
from glowmlir.libraries.common import Declined
from glowmlir.profiling import Profiler
from glowmlir.quantization.profile import write_profile
from glowmlir.runtime.boards import run_on_board, target_for
from glowmlir.runtime.host import HostRunner
from glowmlir.transforms.select_kernels import SCRATCH_ATTRIBUTE
from tests.support import tflite_models as tm
from tests.support.models import LENET, small_convnet
from tests.unit.test_errors import assert_clean_failure, glow_compile

SUPPORT = os.path.join(os.path.dirname(__file__), "..", "support", "cmsis_nn")
STANDINS = os.path.join(SUPPORT, "standins.c")
HIFI4_STANDINS = os.path.join(os.path.dirname(__file__), "..", "support", "hifi4", "standins.c")
STANDINS_OF = {"cmsis-nn": STANDINS, "hifi4": HIFI4_STANDINS}


def convnet_with_profile(directory, count: int, calibration: int = 8) -> tuple[str, list[dict], str]:
    """The small conv net (seed 2) saved in `directory`, `count` random inputs (seed 7) and a
    profile of the first `calibration` of them: (model path, inputs, profile path)."""
    path = os.path.join(directory, "convnet.onnx")
    onnx.save(small_convnet(seed=2), path)
    rng = np.random.default_rng(7)
    samples = [{"data": rng.normal(size=(1, 3, 32, 32)).astype(np.float32)} for _ in range(count)]
    return path, samples, profile_for(path, samples[:calibration], os.path.join(directory, "convnet.yaml"))


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
    ours = our_kernels(model, profile, tuple(sorted(options.items())))
    return library, HostRunner(library.layout, library.object_code, link=[STANDINS_OF[library_name]]), ours


@functools.cache
def our_kernels(model: str, profile: str, options: tuple[tuple[str, object], ...]) -> glowmlir.Bundle:
    """Our own kernels' bundle of `compile_both`, compiled once for the tests of either library."""
    return glowmlir.compile(model, quantization=QuantizationOptions(profile, symmetric_weights=True), **dict(options))


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
    assert "glow.transpose" not in library.ir["glow"] and library.ir["glow"].count('layout NHWC') == 4
    # conv2's im2col: 2 * align4(5 * 5 * 20) int16 = 2,000 bytes, planned in the activations
    assert library.layout.library_scratch == 2_000
    assert library.layout.activations_size >= library.layout.activations_lower_bound >= 2_000
    for image in digits(10):
        np.testing.assert_array_equal(runner.run(data=image)["softmax"], ours.run(data=image)["softmax"])


@pytest.mark.parametrize("library_name", ["cmsis-nn", "hifi4"])
@pytest.mark.parametrize("memory_fusion", [True, False])
def test_convnet_with_depthwise_residual_and_average_pooling(tmp_path, memory_fusion, library_name):
    path, samples, profile = convnet_with_profile(tmp_path, 12)
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


def softmax_model(width: int) -> onnx.ModelProto:
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Softmax", ["data"], ["prob"], axis=1)], "softmax",
                              [helper.make_tensor_value_info("data", TensorProto.FLOAT, [1, width])],
                              [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, width])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("width", [511, 1000])
def test_cmsis_softmax_only_where_the_library_is_defined(tmp_path, width):
    """arm_softmax_s8 shifts by 32 bits or more (undefined C) once a row's exponents sum to
    2^28, which takes 512 entries: 1,000 equal inputs give -127 everywhere from the real
    library on the M7, -128 from TFLite's arithmetic. Rows of up to 511 go to the library;
    longer ones keep our kernel, and the bundle linked with the stand-in (which reproduces the
    library) gives our kernel's -128."""
    path = str(tmp_path / "softmax.onnx")
    onnx.save(softmax_model(width), path)
    rng = np.random.default_rng(3)
    samples = [{"data": rng.normal(size=(1, width)).astype(np.float32)} for _ in range(3)]
    profile = profile_for(path, samples, str(tmp_path / "softmax.yaml"))
    library, runner, ours = compile_both(path, profile)
    (_, kind, detail), = [call for call in library.library_calls if call[0] == "glowll.softmax"]
    if width <= cmsis_nn.SOFTMAX_DEFINED_ROW_SIZE:
        assert (kind, detail) == ("library", "arm_softmax_s8")
    else:
        assert kind == "generated" and "arm_softmax_s8 is undefined in C on rows of more than 511" in detail, detail
    tied = {"data": np.full((1, width), 0.25, np.float32)}
    for sample in [tied, samples[0]]:
        np.testing.assert_array_equal(runner.run(sample)["prob"], ours.run(sample)["prob"])
    if width > cmsis_nn.SOFTMAX_DEFINED_ROW_SIZE:  # 0.256 of a level rounds to -128, i.e. 0.0 (the library: 1/256)
        assert (ours.run(tied)["prob"] == 0).all()


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


@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
def test_cortex_m7_runs_the_fused_convolutions_cmsis_declines_on_its_dsp_kernels(lenet_profile):
    """With -use-cmsis on the M7, the convolutions whose pooling we fuse keep our kernel, the
    DSP-extension one, and the selection says so; outputs equal the host's kernels' (the
    generic ones; on an AVX-512 VNNI host too, where Glow's constants, the default budget of
    a model quantized from a profile, leave no room for VNNI's padded filters)."""
    options = dict(quantization=QuantizationOptions(lenet_profile, convert_placeholders=True),
                   kernel_library="cmsis-nn")
    host = glowmlir.compile(LENET, **options)
    device = glowmlir.compile(LENET, target=target_for("mps2-an500"), **options)
    kinds = [kind for op, kind, _ in device.library_calls if op == "glowll.convolution"]
    assert kinds == ["generated: arm-dsp"] * 2
    assert [kind for op, kind, _ in host.library_calls if op == "glowll.convolution"] == ["generated"] * 2
    scale, offset = host.layout.placeholder("data").quantization
    for image in digits(3):
        level = np.clip(np.rint(image / np.float32(scale)) + offset, -128, 127).astype(np.int8)
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
    assert library.layout.library_scratch == 2_621  # what NNLib's xa_nn_conv2d_std_getsize asks for conv1
    for image in digits(5):
        np.testing.assert_array_equal(runner.run(data=image)["softmax"], ours.run(data=image)["softmax"])
    from llvmlite import binding as llvm

    from glowmlir.targets import resolve_target

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
    """51 of the 52 convolutions (17 depthwise), 11 residual adds, the classifier and (HiFi 4)
    the softmax go to the library (CMSIS-NN's arm_softmax_s8 is undefined C on 1,000-wide
    rows); the last convolution keeps our kernel, fused with the global mean (quantized as an
    average pool over the plane, so the full-resolution output is never stored); the two
    layout changes left are the input's and the one into that NCHW kernel; the outputs equal
    our own kernels'."""
    library, runner, ours = compile_both(MOBILENET, mobilenet_profile, library_name)
    calls = [detail for _, kind, detail in library.library_calls if kind == "library"]
    assert len(calls) == 34 + 17 + 11 + 1 + (library_name == "hifi4")
    assert library.ir["glow"].count("glow.transpose") == 2
    sample = {"data": np.random.default_rng(12).normal(size=(1, 3, 96, 96)).astype(np.float32)}
    expected = ours.run(sample)
    for name, value in runner.run(sample).items():
        np.testing.assert_array_equal(value, expected[name])


# ----------------------------------------------------------------------------- HiFi 4: NNLib's own contract

NNLIB_SIZES = os.path.join(os.path.dirname(HIFI4_STANDINS), "nnlib_scratch_sizes.json")
NNLIB_HEADER = os.path.join(os.path.dirname(HIFI4_STANDINS), "xa_nnlib_kernels_api.h")


def nnlib_rows() -> list[dict]:
    with open(NNLIB_SIZES) as f:
        return json.load(f)["rows"]


def our_scratch(function: str, a: dict) -> int:
    """Our rule for NNLib's getsize `function` on the table's named arguments (-1 if declined)."""
    try:
        if function == "xa_nn_conv2d_std_getsize":
            return hifi4.conv2d_std_scratch(
                a["input_height"], a["input_width"], a["input_channels"], a["kernel_height"], a["kernel_width"],
                a["output_channels"], a["y_stride"], a["x_stride"], a["y_padding"], a["x_padding"], a["out_height"],
                a["out_width"], a["input_precision"], a["kernel_channels"])
        if function == "xa_nn_conv2d_depthwise_getsize":
            return hifi4.conv2d_depthwise_scratch(
                a["input_height"], a["input_width"], a["input_channels"], a["kernel_height"], a["kernel_width"],
                a["channels_multiplier"], a["y_stride"], a["x_stride"], a["y_padding"], a["x_padding"],
                a["output_height"], a["output_width"], a["circ_buf_precision"])
        if function in ("xa_nn_maxpool_getsize", "xa_nn_avgpool_getsize"):
            rule = hifi4.maxpool_scratch if function == "xa_nn_maxpool_getsize" else hifi4.avgpool_scratch
            return rule(a["input_channels"], a["input_width"], a["kernel_height"], a["kernel_width"], a["y_stride"],
                        a["x_stride"], a["x_padding"], a["out_height"], a["out_width"], a["inp_precision"])
        return hifi4.softmax_scratch(a["length"], a["inp_precision"])
    except Declined:
        return -1


@pytest.mark.parametrize("function", ["xa_nn_conv2d_std_getsize", "xa_nn_conv2d_depthwise_getsize",
                                      "xa_nn_maxpool_getsize", "xa_nn_avgpool_getsize", "get_softmax_scratch_size"])
def test_hifi4_scratch_rules_equal_what_nnlib_returns(function):
    """Our scratch rules against the sizes NNLib's own getsize returned (the table), every
    row; where NNLib refuses a shape (-1) we decline it."""
    rows = [r for r in nnlib_rows() if r["function"] == function]
    wrong = [(r["arguments"], r["size"], ours) for r in rows
             if (ours := our_scratch(function, r["arguments"])) != r["size"]]
    assert rows and not wrong, wrong[:5]


def test_a_shape_nnlib_refuses_keeps_our_kernel():
    with pytest.raises(Declined, match="NNLib's xa_nn_maxpool_getsize refuses"):
        hifi4.maxpool_scratch(1, 4, 2, 5, 1, 1, 0, 1, 1)  # one channel, a window wider than the input


def getsize_row(callee: str, ints: list[int]) -> tuple[str, dict]:
    """The getsize function and its named arguments (as in the table) for a call's int arguments."""
    if callee == "xa_nn_conv2d_std_per_chan_sym8sxasym8s":
        h, w, c, kh, kw, oc, sx, sy, px, py, oh, ow = ints[:12]
        return "xa_nn_conv2d_std_getsize", dict(
            input_height=h, input_width=w, input_channels=c, kernel_height=kh, kernel_width=kw, kernel_channels=c,
            y_stride=sy, y_padding=py, x_stride=sx, x_padding=px, out_height=oh, out_width=ow, output_channels=oc,
            input_precision=-4, kernel_precision=-5, dilation_height=1, dilation_width=1, out_data_format=0)
    if callee == "xa_nn_conv2d_depthwise_per_chan_sym8sxasym8s":
        h, w, c, kh, kw, m, sx, sy, px, py, oh, ow = ints[:12]
        return "xa_nn_conv2d_depthwise_getsize", dict(
            input_height=h, input_width=w, input_channels=c, kernel_height=kh, kernel_width=kw, channels_multiplier=m,
            x_stride=sx, y_stride=sy, x_padding=px, y_padding=py, output_height=oh, output_width=ow,
            circ_buf_precision=-4, inp_data_format=0)
    if callee in ("xa_nn_maxpool_8", "xa_nn_avgpool_8"):
        h, w, c, kh, kw, sx, sy, px, py, oh, ow = ints[:11]
        return callee.replace("_8", "_getsize"), dict(
            input_channels=c, inp_precision=8, out_precision=8, input_height=h, input_width=w, kernel_height=kh,
            kernel_width=kw, x_stride=sx, y_stride=sy, x_padding=px, y_padding=py, out_height=oh, out_width=ow,
            inp_data_format=0, out_data_format=0)
    assert callee == "xa_nn_vec_softmax_asym8s_asym8s", callee
    return "get_softmax_scratch_size", dict(inp_precision=-4, out_precision=-4, length=ints[3])


def allocated_function(bundle: glowmlir.Bundle) -> glowll.FunctionOp:
    """The bundle's allocated `glowll.function`, parsed back from its IR."""
    context = Context()
    for dialect in (Builtin, Glow, GlowLL, Quant):
        context.load_dialect(dialect)
    module = Parser(context, bundle.ir["glowll"]).parse_module()
    return next(op for op in module.walk() if isinstance(op, glowll.FunctionOp))


def byte_range(buffer) -> tuple[str, int, int]:
    """(region, first byte, end byte) of a buffer or view."""
    root, element_offset = glowll.root_buffer(buffer)
    element_bytes = glowll.byte_size(buffer.type) // max(buffer.type.element_count(), 1)
    start = root.offset.value.data + element_offset * element_bytes
    return root.REGION, start, start + glowll.byte_size(buffer.type)


def restrict_parameters() -> dict[str, list[tuple[str, bool]]]:
    """(parameter name, is a __restrict__ pointer) of every function our NNLib header declares."""
    with open(NNLIB_HEADER) as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    functions = {}
    for name, parameters in re.findall(r"\b(\w+)\s*\(([^()]*)\)\s*;", text):
        functions[name] = [(p.split()[-1].lstrip("*"), "__restrict__" in p) for p in parameters.split(",")]
    return functions


def clamped_int8_model() -> bytes:
    """An int8 TFLite conv with a fused RELU6 and a depthwise conv with a fused RELU whose
    output ranges reach past the activations' ([-2, 8] and [-1, 4]), so the clamps are real
    calls (from a profile, an activation's range starts where the clamp does and none is)."""
    net = tm.Net(seed=3)
    y = net.conv2d(net.input("x", [1, 8, 8, 3]), 8, 3, activation="RELU6", name="conv")
    net.output(net.depthwise_conv2d(y, 3, activation="RELU", name="dw"))
    params = tm.calibrate(net)
    params["conv"], params["dw"] = tm._params_from_range(-2.0, 8.0), tm._params_from_range(-1.0, 4.0)
    return tm.emit(net, "int8", params)


def test_hifi4_fused_activation_clamps_out_of_place(tmp_path):
    """The fused RELU6/RELU is a second call, xa_nn_vec_activation_min_max_8_8, whose two
    pointers NNLib declares __restrict__: it reads an intermediate buffer, not the output it
    writes (the stand-in refuses overlapping pointers as NNLib's contract allows nothing
    else), and the result equals TFLite's interpreter."""
    path = tmp_path / "clamped.tflite"
    path.write_bytes(clamped_int8_model())
    bundle = glowmlir.compile(str(path), kernel_library="hifi4")
    assert [c[2] for c in bundle.library_calls] == [
        "xa_nn_conv2d_std_per_chan_sym8sxasym8s + xa_nn_vec_activation_min_max_8_8",
        "xa_nn_conv2d_depthwise_per_chan_sym8sxasym8s + xa_nn_vec_activation_min_max_8_8"]
    runner = HostRunner(bundle.layout, bundle.object_code, link=[HIFI4_STANDINS])
    x = np.random.default_rng(5).integers(-128, 128, (1, 8, 8, 3), dtype=np.int8)
    expected = tm.run_reference(path.read_bytes(), {"x": x})["dw"]
    assert len(np.unique(expected)) > 10
    np.testing.assert_array_equal(runner.run(x=x)["dw"], expected)


@pytest.fixture(scope="module")
def hifi4_bundles(lenet_profile, mobilenet_profile, tmp_path_factory):
    """-use-hifi4 bundles: LeNet without memory fusion, the test convnet with and without,
    MobileNetV2, and a model whose fused activations are clamp calls."""
    directory = tmp_path_factory.mktemp("hifi4")
    (directory / "clamped.tflite").write_bytes(clamped_int8_model())
    path, _, convnet_profile = convnet_with_profile(directory, 4, calibration=4)
    compile_hifi4 = functools.partial(glowmlir.compile, kernel_library="hifi4")
    return {"lenet": compile_hifi4(LENET, quantization=QuantizationOptions(lenet_profile), memory_fusion=False),
            "convnet": compile_hifi4(path, quantization=QuantizationOptions(convnet_profile), memory_fusion=False),
            "convnet fused": compile_hifi4(path, quantization=QuantizationOptions(convnet_profile)),
            "mobilenet_v2": compile_hifi4(MOBILENET, quantization=QuantizationOptions(mobilenet_profile)),
            "clamped": compile_hifi4(str(directory / "clamped.tflite"))}


def library_calls_with_scratch(bundle):
    for op in allocated_function(bundle).body.block.ops:
        if isinstance(op, glowll.LibraryCallOp) and any(isinstance(a, glowll.BufferArgument)
                                                        and a.operand.data == len(op.operands) - 1
                                                        for a in op.arguments):
            scratch = op.operands[-1]
            if isinstance(scratch.owner, glowll.AllocOp) and SCRATCH_ATTRIBUTE in scratch.owner.attributes:
                yield op, scratch


def test_every_planned_hifi4_scratch_holds_what_nnlib_asks(hifi4_bundles):
    """Every selected NNLib call's scratch buffer is at least what NNLib's getsize returns for
    its arguments (looked up in the table of sizes NNLib itself returned) and 8-byte aligned,
    as the depthwise convolution and the pools require."""
    sizes = {(r["function"], json.dumps(r["arguments"], sort_keys=True)): r["size"] for r in nnlib_rows()}
    checked = 0
    for name, bundle in hifi4_bundles.items():
        for op, scratch in library_calls_with_scratch(bundle):
            ints = [a.value.data for a in op.arguments if isinstance(a, glowll.IntArgument)]
            function, arguments = getsize_row(op.callee.data, ints)
            asked = sizes.get((function, json.dumps(arguments, sort_keys=True)))
            assert asked is not None, f"{name}: {function}{arguments} is not in the table; regenerate it"
            _, start, end = byte_range(scratch)
            assert end - start >= asked > 0, (name, op.callee.data, arguments, end - start, asked)
            assert start % hifi4.ALIGNMENT == 0
            checked += 1
    assert checked >= 2 + 4 + 1 + 35 + 17


def test_no_hifi4_call_writes_through_an_aliased_restrict_pointer(hifi4_bundles):
    """NNLib declares its data pointers __restrict__: a call's output may overlap none of its
    other pointer arguments. (The fused Relu/Clip used to run in place.)"""
    prototypes = restrict_parameters()
    clamps = 0
    for name, bundle in hifi4_bundles.items():
        for op in allocated_function(bundle).body.block.ops:
            if not isinstance(op, glowll.LibraryCallOp):
                continue
            parameters = prototypes[op.callee.data]
            arguments = list(op.arguments)
            assert len(parameters) == len(arguments), op.callee.data
            pointers = {p: byte_range(op.operands[a.operand.data]) for (p, _), a in zip(parameters, arguments)
                        if isinstance(a, glowll.BufferArgument)}
            assert dict(parameters)["p_out"], op.callee.data
            region, start, end = pointers.pop("p_out")
            for parameter, (other_region, other_start, other_end) in pointers.items():
                assert region != other_region or end <= other_start or other_end <= start, \
                    (name, op.callee.data, parameter)
            clamps += op.callee.data == "xa_nn_vec_activation_min_max_8_8"
    assert clamps == 2


# ----------------------------------------------------------------------------- the glue against the real library

def real_cmsis_nn_cases() -> list[dict]:
    from tests.unit.test_cmsis_standins import real_cases

    return real_cases()


def geometry_of(case: dict) -> "cmsis_nn.ConvolutionGeometry":
    depthwise = case["function"] == "arm_depthwise_conv_wrapper_s8"
    n, in_h, in_w, in_c = case["input_dims"]
    _, out_h, out_w, out_c = case["output_dims"]
    _, k_h, k_w, _ = case["filter_dims"]
    return cmsis_nn.ConvolutionGeometry(n, in_h, in_w, in_c, out_c, k_h, k_w, 1 if depthwise else in_c, out_h, out_w,
                                        *case["stride"], *case["padding"], *case["dilation"])


@pytest.mark.parametrize("build", ["dsp", "mve"])
def test_cmsis_scratch_sizes_are_the_real_librarys(build):
    """The scratch glowmlir plans for each convolution, depthwise convolution and average pool
    call equals what the real CMSIS-NN's getter returned on that build (M4 DSP, M55 Helium;
    tests/support/cmsis_nn/cmsis_nn_outputs.json)."""
    helium, checked = build == "mve", 0
    for case in real_cmsis_nn_cases():
        real = case["real"][build]["size"]
        if case["function"] == "arm_convolve_wrapper_s8":
            assert cmsis_nn.convolution_scratch(geometry_of(case), helium) == real, case["name"]
        elif case["function"] == "arm_depthwise_conv_wrapper_s8" and case["input_dims"][0] == 1:
            assert cmsis_nn.depthwise_scratch(geometry_of(case), helium) == real, case["name"]
        else:
            continue
        checked += 1
    assert checked == 12


def test_cmsis_helium_kernel_sums_are_the_real_librarys():
    """On the M55 the fully connected's context holds per-row kernel sums; the glue's equal
    the ones the real library's arm_vector_sum_s8 computed (recorded in the table). That the
    call passes them is checked on the board (test_cmsis_on_the_m55_equals_the_host)."""
    cases = [c for c in real_cmsis_nn_cases() if c["function"] == "arm_fully_connected_s8"]
    for case in cases:
        depth, columns = case["filter_dims"][0], case["output_dims"][3]
        weights = np.array(case["filter"], np.int8).reshape(columns, depth)
        sums = cmsis_nn.kernel_sums(weights, np.array(case["bias"], np.int32), case["input_offset"])
        assert sums.dtype == np.int32
        np.testing.assert_array_equal(sums, np.frombuffer(bytes.fromhex(case["real"]["mve"]["sums"]), "<i4"))
    assert len(cases) == 2


@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
def test_cmsis_on_the_m55_equals_the_host(tmp_path):
    """-use-cmsis on the Cortex-M55 links the library's Helium build, whose contract differs
    (cmsis_nn_outputs.json): the stand-ins compiled for the M55 follow it (ARM_MATH_MVEI from
    the core's MVE, as the library's headers decide), so the depthwise convolution's Helium
    scratch and the fully connected's kernel sums must be planned and passed, or the calls
    fail. The board's outputs equal the host bundle's (the DSP-build contract)."""
    path, samples, profile = convnet_with_profile(tmp_path, 10)
    options = dict(quantization=QuantizationOptions(profile, convert_placeholders=True), kernel_library="cmsis-nn",
                   memory_fusion=False)
    host = glowmlir.compile(path, **options)
    device = glowmlir.compile(path, target=target_for("mps3-an547"), **options)
    callees = {detail.split(";")[0] for _, kind, detail in device.library_calls if kind == "library"}
    assert {"arm_depthwise_conv_wrapper_s8", "arm_fully_connected_s8"} <= callees
    assert device.layout.library_scratch >= 4 * cmsis_nn.CH_IN_BLOCK_MVE * 3 * 3 > host.layout.library_scratch
    runner = HostRunner(host.layout, host.object_code, link=[STANDINS])
    scale, offset = host.layout.placeholder("data").quantization
    for sample in samples[8:]:
        level = np.clip(np.rint(sample["data"] / np.float32(scale)) + offset, -128, 127).astype(np.int8)
        result = run_on_board(device, "mps3-an547", {"data": level}, link=[STANDINS])
        for name, value in runner.run(data=level).items():
            np.testing.assert_array_equal(result.outputs[name], value)
