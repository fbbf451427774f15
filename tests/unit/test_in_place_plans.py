"""In-place layers (`glowll-convolve-in-place`) and the plan chosen to fit `-ram-size`
(`glowmlir.plan_choice`): DS-CNN- and ResNet-8-shaped int8 nets (random weights) compiled with
a RAM only an in-place plan meets run bit-identical to TFLite Micro on the host (under
valgrind's memcheck: each region a heap block of exactly its size) and on an emulated
Cortex-M4 or M7; a RAM no plan meets is refused."""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest

import glowmlir
from glowmlir.memory_report import memory_report
from glowmlir.runtime.boards import run_on_board, target_for
from tests.support import tflite_models as tm
from tests.support.tflite_micro import MicroRunner
from tests.support.valgrind import VALGRIND, run_under_valgrind

QEMU = shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")


def ds_cnn_description(seed: int, last_channels: int = 64, blocks: int = 4) -> tm.Net:
    """DS-CNN's blocks (`tm.ds_cnn_description`) on a square 20 x 20 input, ending in an average
    pool as MLPerf Tiny's reference model does (the float kernel of a mean would hold the peak);
    `blocks` depthwise-separable blocks, the last one's pointwise layer to `last_channels`."""
    net = tm.Net(seed)
    x = net.conv2d(net.input("input", [1, 20, 20, 1]), 64, 4, 2, "SAME", "RELU")
    for block in range(blocks):
        x = net.depthwise_conv2d(x, 3, 1, "SAME", "RELU")
        x = net.conv2d(x, 64 if block < blocks - 1 else last_channels, 1, 1, "VALID", "RELU")
    x = net.reshape(net.avg_pool(x, 10, 10), [1, last_channels])
    net.output(net.softmax(net.fully_connected(x, 12), 1.0, name="output"))
    return net


def saved(directory, name: str, data: bytes) -> tuple[str, bytes]:
    path = directory / f"{name}.tflite"
    path.write_bytes(data)
    return str(path), data


@pytest.fixture(scope="module")
def ds_cnn(tmp_path_factory):
    return saved(tmp_path_factory.mktemp("ds_cnn"), "ds_cnn", tm.build(ds_cnn_description(seed=5), quantized=True))


@pytest.fixture(scope="module")
def ds_cnn_narrowing(tmp_path_factory):
    """One block, its pointwise layer 64 -> 16: the peak at the depthwise layer (two 64-channel
    tensors; the host's pointwise kernels would hold it at any 64 -> 64 pointwise layer)."""
    return saved(tmp_path_factory.mktemp("ds_cnn_narrowing"), "ds_cnn_narrowing",
                 tm.build(ds_cnn_description(seed=6, last_channels=16, blocks=1), quantized=True))


@pytest.fixture(scope="module")
def resnet8(tmp_path_factory):
    return saved(tmp_path_factory.mktemp("resnet8"), "resnet8",
                 tm.build(tm.resnet8_description(seed=7, size=16), quantized=True))


def ram(bundle) -> int:
    return bundle.layout.mutable_size + bundle.layout.activations_size


def fitted(path: str, target: str):
    """(layer-by-layer bundle, bundle compiled with a RAM only an in-place plan meets)."""
    whole = glowmlir.compile(path, target=target)
    chosen = glowmlir.compile(path, target=target, ram_size=ram(whole) - 1)
    assert chosen.plan is not None and chosen.plan.name.startswith("in place"), chosen.plan
    assert ram(chosen) < ram(whole) and chosen.plan.extra_cycles > 0
    return whole, chosen


def expected_outputs(data: bytes, seeds=range(3)):
    micro = MicroRunner(data)
    for seed in seeds:
        inputs = tm.random_inputs(data, seed=seed, low=-2.0, high=2.0)
        yield inputs, micro(inputs)


@pytest.mark.skipif(VALGRIND is None, reason="valgrind is not installed (scripts/setup.sh installs it)")
def test_ds_cnn_in_place_on_host_equals_tflite_micro_without_out_of_bounds_access(ds_cnn_narrowing, tmp_path):
    path, data = ds_cnn_narrowing
    whole, chosen = fitted(path, "x86-64")
    # The host's pointwise kernels do not stage their pixels: the depthwise layers are staged.
    assert "glowll.copy" in chosen.ir["glowll"] and "in_place" not in chosen.ir["glowll"]
    for inputs, expected in expected_outputs(data, range(2)):
        ours = run_under_valgrind(chosen.layout, chosen.object_code, inputs, str(tmp_path))
        assert np.array_equal(ours["output"].reshape(expected["output"].shape), expected["output"])


@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
def test_ds_cnn_in_place_on_cortex_m4_equals_tflite_micro(ds_cnn):
    path, data = ds_cnn
    whole, chosen = fitted(path, "cortex-m4")
    # Depthwise layers staged and pointwise ones over their input: one 10 x 10 x 64 tensor and a stage.
    assert chosen.layout.activations_size <= 6400 + 1600 < whole.layout.activations_size == 12800
    assert "in_place" in chosen.ir["glowll"]
    # The memory plan (its picture) shows the stage and the buffer the layers work in place in.
    roles = {buffer.role for buffer in chosen.memory_plan.buffers}
    assert {"staging", "in place"} <= roles and "staging" in chosen.memory_plan.picture(".svg").decode()
    report = memory_report(chosen, ram_size=chosen.plan.ram_size)
    assert report.plan == chosen.plan.name and report.plan_extra_cycles == chosen.plan.extra_cycles > 0
    assert report.weights_in_flash.fits
    inputs, expected = next(expected_outputs(data))
    outputs = run_on_board(chosen, "mps2-an386", inputs).outputs
    assert np.array_equal(np.asarray(outputs["output"]).reshape(expected["output"].shape), expected["output"])


@pytest.mark.skipif(VALGRIND is None, reason="valgrind is not installed (scripts/setup.sh installs it)")
@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
def test_resnet8_residual_slices_on_host_and_cortex_m7_equal_tflite_micro(resnet8, tmp_path):
    path, data = resnet8
    inputs, expected = next(expected_outputs(data))
    whole, chosen = fitted(path, "x86-64")
    # Layer by layer three 16 x 16 x 16 tensors around the first residual; staged: two and a slice.
    assert whole.layout.activations_size == 3 * 4096 and chosen.layout.activations_size < 3 * 4096
    ours = run_under_valgrind(chosen.layout, chosen.object_code, inputs, str(tmp_path))
    assert np.array_equal(ours["output"].reshape(expected["output"].shape), expected["output"])
    _, on_board = fitted(path, "cortex-m7")
    outputs = run_on_board(on_board, "mps2-an500", inputs).outputs
    assert np.array_equal(np.asarray(outputs["output"]).reshape(expected["output"].shape), expected["output"])


@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
@pytest.mark.parametrize("board_name, level", [("mps3-an547", None), ("mps2-an386", "Oz")])
def test_resnet8_residual_slices_on_helium_and_a_size_first_build_equal_tflite_micro(resnet8, board_name, level):
    """The slices are ordinary convolutions and adds: Helium's kernels and a size-first
    build's (loop pairs, quantization records) take them as any other."""
    path, data = resnet8
    inputs, expected = next(expected_outputs(data))
    whole, chosen = fitted(path, target_for(board_name, level))
    outputs = run_on_board(chosen, board_name, inputs).outputs
    assert np.array_equal(np.asarray(outputs["output"]).reshape(expected["output"].shape), expected["output"])


def test_ram_no_plan_fits_is_one_line_exit_2_nothing_written(ds_cnn, tmp_path):
    path, _ = ds_cnn
    out = tmp_path / "bundle"
    result = subprocess.run([sys.executable, "-m", "glowmlir.cli.compile", "-model", path, "-emit-bundle", str(out),
                             "-ram-size", "2K"], capture_output=True, text=True)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if "Warning" not in line and "if abs" not in line]
    assert len(lines) == 1 and lines[0].startswith("glow-compile: error: the bundle does not fit the target's RAM: "
                                            "-ram-size 2,048 B, and no plan fits"), lines
    assert not out.exists()


def test_without_a_ram_limit_the_plan_is_layer_by_layer(ds_cnn):
    path, _ = ds_cnn
    bundle = glowmlir.compile(path, target="x86-64", ram_size=1 << 20)
    assert bundle.plan.name == "layer by layer" and bundle.plan.extra_cycles == 0
    assert "in_place" not in bundle.ir["glowll"] and glowmlir.compile(path, target="x86-64").plan is None
