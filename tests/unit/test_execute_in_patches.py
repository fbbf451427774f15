"""Patch-by-patch execution of the first stage (issue 38, `glowll-execute-in-patches`, `-patches`).

A VWW-shaped int8 network (MobileNetV1 layers: a strided 3x3 stem, depthwise-separable blocks,
random weights, on 32x32 images) whose layer-by-layer plan peaks at its first pointwise
convolution: patched up to the 12x12 pointwise layer, it fits a RAM size the layer-by-layer plan
does not, and its outputs — the last feature map, which every input pixel reaches, and the
classifier's — are TFLite Micro's bit for bit, on the host (each region flush against a guard
page) and on the emulated Cortex-M4.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

import glowmlir
from glowmlir.memory_report import memory_report
from glowmlir.runtime.host import FLUSH_PLACEMENTS, HostRunner
from glowmlir.transforms.execute_in_patches import patched
from tests.support.tflite_micro import run_micro
from tests.support.tflite_models import Net, build, random_inputs, run_reference_float

QEMU = shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")
CUT = "conv_2d_2"
"""The pointwise convolution of the 8x8 stage (instruction 5 of the lowered IR)."""


def vww_shaped(seed: int = 0) -> Net:
    net = Net(seed)
    x = net.input("input", [1, 32, 32, 3])
    x = net.conv2d(x, 8, 3, 2, "SAME", "RELU6")                    # [1, 16, 16, 8]
    x = net.depthwise_conv2d(x, 3, 1, "SAME", "RELU6")
    x = net.conv2d(x, 16, 1, 1, "VALID", "RELU6")                  # [1, 16, 16, 16]: the layer-by-layer peak
    x = net.depthwise_conv2d(x, 3, 2, "SAME", "RELU6")             # [1, 8, 8, 16]
    x = net.conv2d(x, 32, 1, 1, "VALID", "RELU6")                  # [1, 8, 8, 32]: the cut
    x = net.depthwise_conv2d(x, 3, 2, "SAME", "RELU6")             # [1, 4, 4, 32]
    x = net.conv2d(x, 64, 1, 1, "VALID", "RELU6", name="features")  # [1, 4, 4, 64]
    net.output(x)
    x = net.reshape(net.avg_pool(x, 4, 4), [1, 64])
    net.output(net.softmax(net.fully_connected(x, 2), 1.0, name="output"))
    return net


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> tuple[str, bytes]:
    content = build(vww_shaped(), quantized=True)
    path = tmp_path_factory.mktemp("vww") / "vww_shaped.tflite"
    path.write_bytes(content)
    return str(path), content


@pytest.fixture(scope="module")
def bundles(model) -> tuple[glowmlir.Bundle, glowmlir.Bundle]:
    """The host bundles layer by layer and patched (2 x 2 patches up to the cut)."""
    path, _ = model
    return glowmlir.compile(path), glowmlir.compile(path, patches=(CUT, 2))


def _assert_tflite_micro_outputs(outputs: dict[str, np.ndarray], model: bytes, inputs: dict[str, np.ndarray]):
    expected = run_micro(model, inputs)
    assert set(expected) == set(outputs)
    for name, value in expected.items():
        np.testing.assert_array_equal(outputs[name].reshape(value.shape), value, err_msg=name)


def test_a_patched_plan_fits_a_ram_size_the_layer_by_layer_plan_cannot(model, bundles):
    _, content = model
    layer_by_layer, patched = bundles
    assert layer_by_layer.layout.activations_size == 16 * 16 * (8 + 16)  # the first pointwise's input and output
    assert patched.layout.activations_size < 0.65 * layer_by_layer.layout.activations_size
    ram_size = patched.layout.mutable_size + patched.layout.activations_size
    assert memory_report(patched, ram_size=ram_size).weights_in_flash.fits
    assert not memory_report(layer_by_layer, ram_size=ram_size).weights_in_flash.fits
    for seed in range(2):
        inputs = random_inputs(content, seed)
        runs = [HostRunner(patched.layout, patched.object_code, flush=flush).run(inputs) for flush in FLUSH_PLACEMENTS]
        for run in runs:
            _assert_tflite_micro_outputs(run, content, inputs)


def test_glow_compile_patches_option_meets_require_fit(model, bundles, tmp_path):
    """`-patches=CUT,N` with `-ram-size` and `-require-fit`: the patched bundle is written (the cut
    given by its index is the same instruction); with `-ram-size` alone, the chooser patches the
    stage by itself (the memory report names the plan and its extra MACs)."""
    path, _ = model
    patched = bundles[1]
    ram_size = patched.layout.mutable_size + patched.layout.activations_size
    command = [sys.executable, "-m", "glowmlir.cli.compile", f"-model={path}", f"-ram-size={ram_size}",
               "-require-fit"]
    chosen = subprocess.run([*command, f"-emit-bundle={tmp_path / 'chosen'}",
                             f"-memory-report={tmp_path / 'report.json'}"], capture_output=True, text=True)
    assert chosen.returncode == 0, chosen.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["plan"].startswith("patched up to instruction ") and report["plan_extra_macs"] > 0
    assert report["io"] + report["activations"] <= ram_size
    written = subprocess.run([*command, f"-emit-bundle={tmp_path / 'patched'}", "-patches=5,2"],
                             capture_output=True, text=True)
    assert written.returncode == 0, written.stderr
    header = (tmp_path / "patched" / "vww_shaped.h").read_text()
    assert f"VWW_SHAPED_ACTIVATIONS_MEM_SIZE  {patched.layout.activations_size}" in " ".join(header.split("\n"))


def test_glow_compile_patches_option_errors(model, tmp_path):
    path, _ = model
    for option, message in (("-patches=3", "-patches=\"3\": expected CUT,N"),
                            ("-patches=softmax_nothing,2", "cut=\"softmax_nothing\": no instruction of that name"),
                            (f"-patches={CUT},9", "patches=9: between 1 and 8")):
        result = subprocess.run([sys.executable, "-m", "glowmlir.cli.compile", f"-model={path}", option,
                                 f"-emit-bundle={tmp_path / 'out'}"], capture_output=True, text=True)
        assert result.returncode != 0 and message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
def test_patched_plan_on_the_cortex_m4_equals_tflite_micro(model):
    from glowmlir.runtime.boards import run_on_board, target_for

    path, content = model
    bundle = glowmlir.compile(path, patches=(CUT, 2), target=target_for("mps2-an386", "O3"))
    inputs = random_inputs(content, 2)
    _assert_tflite_micro_outputs(run_on_board(bundle, "mps2-an386", inputs).outputs, content, inputs)


def test_float_patched_plan_equals_the_layer_by_layer_one_and_the_interpreter(tmp_path):
    """In float, the layer-by-layer bundle's and the TFLite interpreter's outputs to rounding
    (the host's float kernels tile a smaller plane differently: the sums' order may change)."""
    content = build(vww_shaped(1))
    path = tmp_path / "vww_float.tflite"
    path.write_bytes(content)
    inputs = random_inputs(content, 0)
    layer_by_layer = glowmlir.compile(str(path)).run(inputs)
    patched = glowmlir.compile(str(path), patches=(CUT, 3)).run(inputs)
    for name, value in run_reference_float(content, inputs).items():
        np.testing.assert_allclose(patched[name], layer_by_layer[name], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(patched[name].reshape(value.shape), value, rtol=1e-4, atol=1e-5)


def test_patched_gives_the_module_and_its_extra_macs(model):
    """The chooser's entry point: a patched copy, the original left as it was, and the MACs
    the halos add (each patch's receptive field, counted from the IR)."""
    from glowmlir.compiler import CompileOptions, import_network
    from glowmlir.lowering.glow_to_glowll import LowerGlowToGlowLL
    from glowmlir.pipeline import run_passes
    from glowmlir.transforms.execute_in_patches import convolution_macs, patched

    path, _ = model
    module = import_network(path, CompileOptions())
    run_passes(module, (*CompileOptions().pipeline().glow, LowerGlowToGlowLL()))
    before = str(module)
    one = patched(module, CUT, 1)
    assert one.extra_macs == 0 and one.macs == convolution_macs(module)
    two = patched(module, CUT, 2)
    assert str(module) == before
    assert 0 < two.extra_macs < two.macs // 2
    assert two.extra_macs == convolution_macs(two.module) - convolution_macs(module)
    assert two.extra_macs < patched(module, CUT, 4).extra_macs


# ------------------------------------------------------------------- the chooser picks patches (-ram-size alone)

def _ram(bundle: glowmlir.Bundle) -> int:
    return bundle.layout.mutable_size + bundle.layout.activations_size


def chosen_by_ram(path: str, target: str) -> tuple[glowmlir.Bundle, glowmlir.Bundle]:
    """(layer-by-layer bundle, bundle compiled with only a `-ram-size` below what the layer-by-
    layer plan and every in-place plan need): the chooser must take a patched plan by itself."""
    whole = glowmlir.compile(path, target=target)
    ram_size = _ram(whole) - 1
    in_place = glowmlir.compile(path, target=target, in_place=True)
    assert _ram(in_place) > ram_size  # the first pointwise widens 8 -> 16 channels: no in-place layer takes it
    chosen = glowmlir.compile(path, target=target, ram_size=ram_size)
    assert chosen.plan is not None and chosen.plan.name.startswith("patched up to instruction "), chosen.plan
    assert _ram(chosen) == chosen.plan.ram <= ram_size and chosen.plan.extra_macs > 0
    return whole, chosen


def test_the_chooser_takes_a_patched_plan_that_fits_on_host_without_out_of_bounds_access(model):
    path, content = model
    whole, chosen = chosen_by_ram(path, "x86-64")
    assert "glowll.insert_tensor" in chosen.ir["glowll"] and "insert_tensor" not in whole.ir["glowll"]
    report = memory_report(chosen, ram_size=chosen.plan.ram_size)
    assert report.weights_in_flash.fits and report.plan == chosen.plan.name
    assert report.plan_extra_macs == chosen.plan.extra_macs and report.plan_extra_cycles == chosen.plan.extra_cycles
    inputs = random_inputs(content, 3)
    for flush in FLUSH_PLACEMENTS:  # each region flush against a guard page, at its start and at its end
        _assert_tflite_micro_outputs(HostRunner(chosen.layout, chosen.object_code, flush=flush).run(inputs), content,
                                     inputs)


@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
def test_the_chooser_takes_a_patched_plan_on_the_cortex_m4_equal_to_tflite_micro(model):
    from glowmlir.runtime.boards import run_on_board, target_for

    path, content = model
    _, chosen = chosen_by_ram(path, target_for("mps2-an386", "O3"))
    inputs = random_inputs(content, 4)
    _assert_tflite_micro_outputs(run_on_board(chosen, "mps2-an386", inputs).outputs, content, inputs)


def test_patch_cost_counts_what_the_pass_adds(model, bundles):
    """The chooser's estimate from the regions alone: the same extra MACs as the rewritten IR,
    one patch's instructions per extra patch, and the bytes the allocated plan holds within 15%
    (the kernels chosen after it may hold a buffer less: an estimate, not a bound)."""
    from glowmlir.compiler import CompileOptions, import_network
    from glowmlir.dialects import glowll
    from glowmlir.lowering.glow_to_glowll import LowerGlowToGlowLL
    from glowmlir.pipeline import run_passes
    from glowmlir.transforms.execute_in_patches import find_cut, patch_cost, stage_of

    path, _ = model
    module = import_network(path, CompileOptions())
    run_passes(module, (*CompileOptions().pipeline().glow, LowerGlowToGlowLL()))
    function = next(op for op in module.body.block.ops if isinstance(op, glowll.FunctionOp))
    cut = find_cut(function, CUT)
    for patches in (2, 3):
        cost = patch_cost(cut, patches)
        assert cost.extra_macs == patched(module, CUT, patches).extra_macs > 0
        assert cost.extra_instructions == len(stage_of(cut)) * (patches * patches - 1)
        bundle = bundles[1] if patches == 2 else glowmlir.compile(path, patches=(CUT, patches))  # 2 x 2: the fixture's
        allocated = bundle.layout.activations_size
        assert abs(cost.stage_bytes - allocated) <= 0.15 * allocated, (cost, allocated)


def test_given_patches_the_chooser_adds_no_other_patches(model, bundles):
    """`-patches` and `-ram-size` together: the user's stage, the chooser's in-place layers at most."""
    path, _ = model
    bundle = glowmlir.compile(path, patches=(CUT, 2), ram_size=_ram(bundles[1]))
    assert bundle.plan.name == "layer by layer" and bundle.layout.activations_size == bundles[1].layout.activations_size


def test_use_cmsis_patched_plan_calls_the_library_per_patch_equal_to_tflite_micro(model):
    """-use-cmsis with only a `-ram-size`: the chooser patches the NHWC stage too; each patch's
    layers are library calls on the patch's buffers (host: the CMSIS-NN stand-ins, written from
    the library's contract), and the outputs are TFLite Micro's."""
    from tests.unit.test_kernel_libraries import STANDINS

    path, content = model
    whole = glowmlir.compile(path, kernel_library="cmsis-nn")
    chosen = glowmlir.compile(path, kernel_library="cmsis-nn", ram_size=_ram(whole) - 1)
    assert chosen.plan.name.startswith("patched up to instruction ") and _ram(chosen) < _ram(whole)
    calls = [detail for _, kind, detail in chosen.library_calls if kind == "library"]
    assert calls.count("arm_convolve_wrapper_s8") > 4  # layer by layer: 4 convolutions, each a call
    inputs = random_inputs(content, 5)
    _assert_tflite_micro_outputs(HostRunner(chosen.layout, chosen.object_code, link=[STANDINS]).run(inputs),
                                 content, inputs)
