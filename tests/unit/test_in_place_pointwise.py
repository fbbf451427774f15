"""Pointwise layers written over their input on every kernel family (`glowll-convolve-in-place`):
in blocks of rows where the kernels do not stage their pixels (the host's, x86-64 and AVX2,
the portable ones of a Cortex-M3, a size-first build's), by Helium's im2col product itself on the Cortex-M55. A
depthwise-separable int8 net (random weights) whose peak is a pointwise layer, compiled with a
RAM only such a plan meets, runs bit-identical to TFLite Micro: on the host under valgrind's
memcheck (each region a heap block of exactly its size), on the emulated boards. And a
stem convolution of the NHWC input that reads the input's rows itself, without a whole-tensor
transpose into an activation buffer."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import glowmlir
from glowmlir.runtime.boards import run_on_board, target_for
from glowmlir.targets import resolve_target
from tests.support import tflite_models as tm
from tests.support.tflite_micro import MicroRunner
from tests.support.valgrind import VALGRIND, run_under_valgrind
from tests.unit.test_in_place_plans import saved

QEMU = shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")

def pointwise_peak_description(seed: int, size: int = 12, channels: int = 32) -> tm.Net:
    """Two depthwise-separable blocks on `size` x `size` maps, `channels` -> `channels` and
    `channels` -> 24 pointwise layers: layer by layer two maps of `channels` live at each; in
    place, one and a stage."""
    net = tm.Net(seed)
    x = net.conv2d(net.input("input", [1, size, size, 1]), channels, 3, 1, "SAME", "RELU")
    for out in (channels, 24):
        x = net.depthwise_conv2d(x, 3, 1, "SAME", "RELU")
        x = net.conv2d(x, out, 1, 1, "VALID", "RELU")
    x = net.reshape(net.avg_pool(x, size, size), [1, 24])
    net.output(net.softmax(net.fully_connected(x, 10), 1.0, name="output"))
    return net


@pytest.fixture(scope="module")
def pointwise_peak(tmp_path_factory):
    """12 x 12 x 32 maps (4,608 bytes)."""
    return saved(tmp_path_factory.mktemp("pointwise_peak"), "pointwise_peak",
                 tm.build(pointwise_peak_description(seed=11), quantized=True))


@pytest.fixture(scope="module")
def small_planes(tmp_path_factory):
    """5 x 5 x 64 maps, whose pointwise layers Helium's im2col product takes."""
    return saved(tmp_path_factory.mktemp("small_planes"), "small_planes",
                 tm.build(pointwise_peak_description(seed=12, size=5, channels=64), quantized=True))


def in_place(path: str, target):
    """The bundle compiled with a RAM only in-place pointwise layers meet: one map, half
    another (a depthwise stage), less than two."""
    whole = glowmlir.compile(path, target=target)
    biggest = max(whole.layout.activations_size // 2, 1)
    chosen = glowmlir.compile(path, target=target, ram_size=whole.layout.mutable_size + biggest * 3 // 2)
    assert chosen.plan is not None and chosen.plan.name.startswith("in place") and chosen.plan.extra_cycles > 0
    return chosen


def expected(data: bytes, seed: int = 0):
    inputs = tm.random_inputs(data, seed=seed, low=-2.0, high=2.0)
    return inputs, MicroRunner(data)(inputs)["output"]


def same(outputs, want) -> bool:
    return np.array_equal(np.asarray(outputs["output"]).reshape(want.shape), want)


@pytest.mark.skipif(VALGRIND is None, reason="valgrind is not installed (scripts/setup.sh installs it)")
@pytest.mark.parametrize("cpu, level", [("x86-64", None), ("haswell", "Oz")])  # AVX2, size-first
def test_host_pointwise_blocks_of_rows_equal_tflite_micro_without_out_of_bounds_access(pointwise_peak, tmp_path,
                                                                                       cpu, level):
    path, data = pointwise_peak
    chosen = in_place(path, resolve_target("x86_64-unknown-linux-gnu", mcpu=cpu, opt_level=level))
    ir = chosen.ir["glowll"]
    assert ir.count("glowll.extract_tensor") >= 2 and "in_place" not in ir
    inputs, want = expected(data, seed=1)
    assert same(run_under_valgrind(chosen.layout, chosen.object_code, inputs, str(tmp_path)), want)


@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
@pytest.mark.parametrize("board_name, level, rows_only", [
    # Helium: the im2col product writes over its input, a layer its column kernel takes in rows
    ("mps3-an547", None, False),
    ("mps2-an385", None, True),  # Cortex-M3: the portable kernels, in blocks of rows
    ("mps3-an547", "Oz", True),  # size-first: record-reading kernels, in blocks of rows
])
def test_pointwise_in_place_on_boards_equals_tflite_micro(pointwise_peak, board_name, level, rows_only):
    path, data = pointwise_peak
    chosen = in_place(path, target_for(board_name, level))
    ir = chosen.ir["glowll"]
    assert "glowll.extract_tensor" in ir or (not rows_only and "in_place" in ir)
    assert not (rows_only and "in_place" in ir)
    inputs, want = expected(data)
    assert same(run_on_board(chosen, board_name, inputs).outputs, want)


@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
def test_helium_im2col_pointwise_over_its_input_equals_tflite_micro(small_planes):
    path, data = small_planes
    chosen = in_place(path, target_for("mps3-an547"))
    ir = chosen.ir["glowll"]
    assert "in_place" in ir and "arm-mve-im2col" in ir and "glowll.extract_tensor" not in ir
    inputs, want = expected(data)
    assert same(run_on_board(chosen, "mps3-an547", inputs).outputs, want)


def stem_description(seed: int) -> tm.Net:
    """A 3-channel 24 x 24 NHWC input, a 3x3 stride-2 stem convolution (the kernels' NCHW input
    is a whole transpose of it, layer by layer, at the peak with the stem's output)."""
    net = tm.Net(seed)
    x = net.conv2d(net.input("input", [1, 24, 24, 3]), 8, 3, 2, "SAME", "RELU")
    x = net.depthwise_conv2d(x, 3, 1, "SAME", "RELU")
    x = net.conv2d(x, 8, 1, 1, "VALID", "RELU")
    x = net.reshape(net.avg_pool(x, 12, 12), [1, 8])
    net.output(net.softmax(net.fully_connected(x, 4), 1.0, name="output"))
    return net


@pytest.fixture(scope="module")
def stem(tmp_path_factory):
    return saved(tmp_path_factory.mktemp("stem"), "stem", tm.build(stem_description(seed=21), quantized=True))


def stem_in_rows(path: str, target):
    whole = glowmlir.compile(path, target=target)
    transposed = 3 * 24 * 24
    assert whole.layout.activations_size == transposed + 8 * 12 * 12
    chosen = glowmlir.compile(path, target=target, ram_size=whole.layout.mutable_size + transposed)
    ir = chosen.ir["glowll"]
    assert chosen.plan.name.startswith("in place") and "memref<1x3x24x24x" not in ir
    assert ir.count("glowll.transpose") >= 2
    return chosen


@pytest.mark.skipif(VALGRIND is None, reason="valgrind is not installed (scripts/setup.sh installs it)")
def test_host_stem_reads_the_nhwc_input_rows_equal_tflite_micro_without_out_of_bounds_access(stem, tmp_path):
    path, data = stem
    chosen = stem_in_rows(path, "x86-64")
    inputs, want = expected(data)
    assert same(run_under_valgrind(chosen.layout, chosen.object_code, inputs, str(tmp_path)), want)


@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
def test_helium_stem_reads_the_nhwc_input_rows_equals_tflite_micro(stem):
    path, data = stem
    chosen = stem_in_rows(path, target_for("mps3-an547"))
    inputs, want = expected(data)
    assert same(run_on_board(chosen, "mps3-an547", inputs).outputs, want)
