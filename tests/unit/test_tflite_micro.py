"""TFLite Micro's own interpreter (`tflite-micro`, tests/support/tflite_micro.py) as the
oracle of int8 TFLite models: glowmlir's host bundle gives its outputs bit for bit.

* every int8 model of tests/support/tflite_models.py, and one generated model per int8
  kernel family (random weights, quantized to TFLite's int8 spec): convolution,
  depthwise, FullyConnected, pools, Add/Sub/Mul, softmax, the table/activation ops;
* TFLite's 16x8 kernels (which glowmlir's TFLite importer does not take) check the numpy
  int16 reference (tests/support/int16_reference.py) that the int16 kernels are tested
  against: convolution and FullyConnected with int32 and int64 biases, depthwise, Add,
  pools;
* one whole int8 model on a board of each Cortex-M core family (M3, M7, M55): board ==
  TFLite Micro == host.

Inputs run over twice the calibrated range, so saturating levels are covered too.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import glowmlir
from glowmlir.runtime.boards import run_on_board, target_for
from tests.support import int8_reference as ref8
from tests.support import int16_reference as ref16
from tests.support import tflite_models as tm
from tests.support.tflite_micro import MicroRunner

INPUT_SEEDS = range(6)


def compile_model(tmp_path, data: bytes):
    path = tmp_path / "model.tflite"
    path.write_bytes(data)
    return glowmlir.compile(str(path))


def compare_with_micro(tmp_path, data: bytes) -> dict[str, int]:
    """The bundle's and TFLite Micro's outputs over `INPUT_SEEDS` inputs: per output, the
    number of levels that differ (asserted to be at most one level apart)."""
    bundle, micro = compile_model(tmp_path, data), MicroRunner(data)
    differing: dict[str, int] = {}
    for seed in INPUT_SEEDS:
        inputs = tm.random_inputs(data, seed=seed, low=-2.0, high=2.0)
        ours = bundle.run(inputs)
        for name, expected in micro(inputs).items():
            assert ours[name].dtype == expected.dtype == np.int8, name
            got = ours[name].reshape(expected.shape).astype(np.int64)
            assert np.abs(got - expected).max() <= 1, name
            differing[name] = differing.get(name, 0) + int(np.count_nonzero(got != expected))
    return differing


@pytest.mark.parametrize("name", ["conv_net", "mobilenet_block", "elementwise_net", "lenet"])
def test_int8_model_equals_tflite_micro(name, tmp_path):
    assert compare_with_micro(tmp_path, getattr(tm, name)(True, seed=3)) == \
        {"output": 0, **({"gate": 0} if name == "elementwise_net" else {})}


def family(name: str) -> tm.Net:
    """A small float model of one int8 kernel family, random weights (seeded by the name)."""
    net = tm.Net(sum(map(ord, name)))
    x = net.input("input", [1, 9, 9, 5] if name in ("conv", "depthwise", "fully_connected", "pools") else [1, 5, 6, 4])
    if name == "conv":
        y = net.conv2d(net.conv2d(x, 6, 3, 2, "SAME", "RELU6"), 7, 1, 1, "VALID", "NONE", name="output")
    elif name == "depthwise":
        y = net.depthwise_conv2d(net.depthwise_conv2d(x, 3, 1, "SAME", "RELU"), 3, 2, "VALID", depth_multiplier=2,
                                 name="output")
    elif name == "fully_connected":
        y = net.fully_connected(net.fully_connected(net.reshape(x, [1, -1]), 24, "RELU"), 10, name="output")
    elif name == "pools":
        y = net.avg_pool(net.max_pool(x, 3, 2, "SAME"), 2, 1, "SAME", name="output")
    elif name == "add_mul":
        scaled = net.mul(x, net.const("scale", net.rng.uniform(-2, 2, [4])))
        y = net.add(net.sub(scaled, x), net.mul(x, x), "RELU", name="output")
    elif name == "softmax":
        y = net.softmax(net.mul(x, net.const("scale", net.rng.uniform(1, 4, [4]))), 1.0, name="output")
    elif name == "activations":
        for opcode in ("LOGISTIC", "TANH", "RELU"):  # (TFLite Micro's int8 RELU6 ignores the output's parameters)
            net.output(net.unary(opcode, x, name=opcode.lower()))
        y = net.unary("LEAKY_RELU", x, "LeakyReluOptions", alpha=0.3, name="output")
    net.output(y)
    return net


@pytest.mark.parametrize("name", ["conv", "depthwise", "fully_connected", "pools", "add_mul", "softmax",
                                  "activations"])
def test_int8_kernel_family_equals_tflite_micro(name, tmp_path):
    differing = compare_with_micro(tmp_path, tm.build(family(name), quantized=True))
    assert differing == dict.fromkeys(differing, 0)


def test_int8_hard_swish_is_within_one_level_of_tflite_micro(tmp_path):
    """HARD_SWISH runs in float between a dequantize and a quantize (TFLite's int8 kernel is
    a fixed-point polynomial glowmlir does not reproduce): within one level, rarely off."""
    net = tm.Net(11)
    net.output(net.unary("HARD_SWISH", net.input("input", [1, 5, 6, 4]), "HardSwishOptions", name="output"))
    differing = compare_with_micro(tmp_path, tm.build(net, quantized=True))
    assert differing["output"] <= len(INPUT_SEEDS) * 120 // 50  # at most 2% of the levels


# ----------------------------------------------------------------------------- 16x8: the int16 reference


def int16_input(rng, shape) -> np.ndarray:
    return rng.integers(-32768, 32768, shape, dtype=np.int16)


def weight_scales(rng, count: int) -> np.ndarray:
    return rng.uniform(0.002, 0.02, count).astype(np.float32)


def micro_conv16(x, w_ohwi, bias, x_scale, w_scales, out_scale, stride, padding, depthwise=False,
                 activation="NONE", depth_multiplier=1) -> np.ndarray:
    """One 16x8 CONV_2D / DEPTHWISE_CONV_2D run by TFLite Micro (NHWC), its int16 output."""
    b = tm.ModelBuilder()
    channels = w_ohwi.shape[3] if depthwise else w_ohwi.shape[0]
    axis = 3 if depthwise else 0
    xi = b.input("x", x.shape, "int16", (x_scale, 0))
    wi = b.constant("w", w_ohwi, (w_scales, np.zeros(channels), axis))
    bias_scales = (np.float32(x_scale) * w_scales).astype(np.float32)
    bi = b.constant("b", bias, (bias_scales, np.zeros(channels), 0))
    n, h, w, _ = x.shape
    kh, kw = w_ohwi.shape[1:3]
    size = (lambda d, k: -(-d // stride)) if padding == "SAME" else (lambda d, k: (d - k) // stride + 1)
    yi = b.tensor("y", [n, size(h, kh), size(w, kw), channels], "int16", (out_scale, 0))
    if depthwise:
        b.op("DEPTHWISE_CONV_2D", [xi, wi, bi], [yi], "DepthwiseConv2DOptions", padding=padding, stride_w=stride,
             stride_h=stride, depth_multiplier=depth_multiplier, fused_activation_function=activation)
    else:
        b.op("CONV_2D", [xi, wi, bi], [yi], "Conv2DOptions", padding=padding, stride_w=stride, stride_h=stride,
             fused_activation_function=activation)
    b.output(yi)
    return MicroRunner(b.finish())({"x": x})["y"]


def same_pads(size: int, kernel: int, stride: int) -> tuple[int, int]:
    """TFLite's SAME padding of one axis: (before, after), the odd one after."""
    total = max((-(-size // stride) - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


@pytest.mark.parametrize("bias_type,depthwise", [(np.int32, False), (np.int64, False), (np.int64, True)])
def test_int16_reference_convolution_equals_tflite_micro(bias_type, depthwise):
    """TFLite Micro's 16x8 convolution takes its accumulator from the bias type: int32 sums
    and the Q31 multiplier, or int64 sums and the multiplier reduced to Q15; the int16
    reference does the same (per-channel weights, SAME padding, stride 2, relu)."""
    rng = np.random.default_rng(4100 + 2 * depthwise + (bias_type == np.int64))
    x = int16_input(rng, (1, 9, 9, 6))
    channels = 6 if depthwise else 5
    w_ohwi = rng.integers(-127, 128, (1, 3, 3, channels) if depthwise else (channels, 3, 3, 6)).astype(np.int8)
    x_scale, w_scales = 1e-3, weight_scales(rng, channels)
    bias = rng.integers(-300_000, 300_000, channels).astype(bias_type)
    pads = (*same_pads(9, 3, 2), *same_pads(9, 3, 2))
    pads = (pads[0], pads[2], pads[1], pads[3])  # (top, left, bottom, right)
    w_oihw = np.transpose(w_ohwi, (3, 0, 1, 2)) if depthwise else np.transpose(w_ohwi, (0, 3, 1, 2))
    x_nchw, group = np.transpose(x, (0, 3, 1, 2)), 6 if depthwise else 1
    sums = ref8.conv2d_accumulators(x_nchw, w_oihw, bias, 0, np.zeros(channels), (2, 2), pads, group=group,
                                    int32=False)
    out_scale = float(np.float32(sums.std() * x_scale * w_scales.mean() / 8000))
    got = micro_conv16(x, w_ohwi, bias, x_scale, w_scales, out_scale, 2, "SAME", depthwise, "RELU")
    expected = ref16.conv2d(x_nchw, w_oihw, bias, x_scale, w_scales, np.zeros(channels), out_scale, (2, 2), pads,
                            group=group, activation="relu")
    assert len(np.unique(got)) > 40
    np.testing.assert_array_equal(np.transpose(expected, (0, 2, 3, 1)), got)


@pytest.mark.parametrize("bias_type", [np.int32, np.int64])
def test_int16_reference_fully_connected_equals_tflite_micro(bias_type):
    rng = np.random.default_rng(4200 + (bias_type == np.int64))
    x = int16_input(rng, (16, 40))
    w = rng.integers(-127, 128, (8, 40)).astype(np.int8)  # TFLite [units, depth]
    x_scale, w_scale = 1e-3, float(weight_scales(rng, 1)[0])
    bias = rng.integers(-300_000, 300_000, 8).astype(bias_type)
    out_scale = float(np.float32(x_scale * w_scale * 5000))
    b = tm.ModelBuilder()
    xi = b.input("x", x.shape, "int16", (x_scale, 0))
    wi = b.constant("w", w, (w_scale, 0))
    bi = b.constant("b", bias, (np.float32(x_scale) * np.float32(w_scale), 0))
    yi = b.tensor("y", [16, 8], "int16", (out_scale, 0))
    b.op("FULLY_CONNECTED", [xi, wi, bi], [yi], "FullyConnectedOptions", fused_activation_function="NONE")
    b.output(yi)
    got = MicroRunner(b.finish())({"x": x})["y"]
    expected = ref16.fully_connected(x, w.T, bias, x_scale, (w_scale, 0), out_scale)
    assert len(np.unique(got)) > 12
    np.testing.assert_array_equal(expected, got)


def test_int16_reference_add_and_pools_equal_tflite_micro():
    """Int16 ADD (left shift 15), MAX_POOL_2D and AVERAGE_POOL_2D (SAME padding, padded taps
    left out of the count)."""
    rng = np.random.default_rng(4300)
    a, c = int16_input(rng, (1, 6, 6, 3)), int16_input(rng, (1, 6, 6, 3))
    a_scale, c_scale, out_scale = 1e-3, 2.5e-3, 3e-3
    b = tm.ModelBuilder()
    ai = b.input("a", a.shape, "int16", (a_scale, 0))
    ci = b.input("c", c.shape, "int16", (c_scale, 0))
    si = b.tensor("sum", a.shape, "int16", (out_scale, 0))
    mi = b.tensor("max", [1, 3, 3, 3], "int16", (out_scale, 0))
    vi = b.tensor("avg", [1, 3, 3, 3], "int16", (out_scale, 0))
    b.op("ADD", [ai, ci], [si], "AddOptions", fused_activation_function="NONE")
    for opcode, out in (("MAX_POOL_2D", mi), ("AVERAGE_POOL_2D", vi)):
        b.op(opcode, [si], [out], "Pool2DOptions", padding="SAME", stride_w=2, stride_h=2, filter_width=3,
             filter_height=3)
    for out in (si, mi, vi):
        b.output(out)
    got = MicroRunner(b.finish())({"a": a, "c": c})
    nchw = (0, 3, 1, 2)
    total = ref16.add(np.transpose(a, nchw), np.transpose(c, nchw), a_scale, c_scale, out_scale)
    pads = (*same_pads(6, 3, 2), *same_pads(6, 3, 2))
    pads = (pads[0], pads[2], pads[1], pads[3])
    expected = {"sum": total, "max": ref8.max_pool(total, (3, 3), (2, 2), pads, bits=16),
                "avg": ref8.avg_pool(total, (3, 3), (2, 2), pads, bits=16)}
    for name, value in expected.items():
        np.testing.assert_array_equal(np.transpose(value, (0, 2, 3, 1)), got[name], err_msg=name)


# ----------------------------------------------------------------------------- on the boards

QEMU = shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")
CORE_FAMILIES = {"mps2-an385": "Cortex-M3, generic kernels", "mps2-an500": "Cortex-M7, DSP-extension kernels",
                 "mps3-an547": "Cortex-M55, Helium kernels"}


@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
@pytest.mark.parametrize("board", sorted(CORE_FAMILIES))
def test_int8_model_on_each_core_family_equals_tflite_micro(board, tmp_path):
    """A whole int8 model (conv_net: convolutions, depthwise, a residual Add, both pools,
    FullyConnected, softmax) on one board of each core family: the board's outputs equal
    TFLite Micro's bit for bit, and the host bundle's."""
    data = tm.conv_net(True, seed=5)
    path = tmp_path / "conv_net.tflite"
    path.write_bytes(data)
    device = glowmlir.compile(str(path), target=target_for(board))
    host, micro = glowmlir.compile(str(path)), MicroRunner(data)
    for seed in range(2):
        inputs = tm.random_inputs(data, seed=seed, low=-2.0, high=2.0)
        expected = micro(inputs)["output"]
        board_output = run_on_board(device, board, inputs).outputs["output"].reshape(expected.shape)
        np.testing.assert_array_equal(board_output, expected)
        np.testing.assert_array_equal(host.run(inputs)["output"].reshape(expected.shape), expected)


def visual_wake_words_stem(seed: int = 7) -> tm.Net:
    """A small VWW-like net (random weights): an NHWC 3-channel image, MobileNetV1's stride-2
    stem convolution, a depthwise and a pointwise one, the global average, FullyConnected."""
    net = tm.Net(seed)
    x = net.input("input", [1, 24, 24, 3])
    x = net.conv2d(x, 8, 3, 2, "SAME", "RELU")
    x = net.conv2d(net.depthwise_conv2d(x, 3, 1, "SAME", "RELU"), 16, 1, 1, "VALID", "RELU")
    net.output(net.softmax(net.fully_connected(net.mean(x, [1, 2]), 2), 1.0, name="output"))
    return net


@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
def test_stem_convolution_reads_the_nhwc_input_in_place(tmp_path):
    """On the DSP-extension cores (Cortex-M4, M7), the stem convolution reads the NHWC image
    where the caller put it (one channel of interleaved rows, `glow-convolve-interleaved-rows`):
    no transpose, no activation buffer of the input's size; the Cortex-M7's outputs (and the
    host's, which keeps the transpose) equal TFLite Micro's bit for bit."""
    data = tm.build(visual_wake_words_stem(), quantized=True)
    path = tmp_path / "vww_stem.tflite"
    path.write_bytes(data)
    bundles = {"host": glowmlir.compile(str(path))} | {
        board: glowmlir.compile(str(path), target=target_for(board)) for board in ("mps2-an386", "mps2-an500")}
    for board in ("mps2-an386", "mps2-an500"):
        glowll = bundles[board].ir["glowll"]
        assert "glowll.transpose" not in glowll
        assert "tensorview %0 {offset = 0 : i64} : memref<1x24x24x3x!quant.uniform<i8" in glowll
    micro = MicroRunner(data)
    for seed in range(2):
        inputs = tm.random_inputs(data, seed=seed, low=-2.0, high=2.0)
        expected = micro(inputs)["output"]
        np.testing.assert_array_equal(bundles["host"].run(inputs)["output"].reshape(expected.shape), expected)
        board_output = run_on_board(bundles["mps2-an500"], "mps2-an500", inputs).outputs["output"]
        np.testing.assert_array_equal(board_output.reshape(expected.shape), expected)


def odd_stem(shape: tuple[int, ...], channels: int, kernel: int, stride: int, seed: int) -> tm.Net:
    """One SAME-padded convolution of a 3-channel NHWC image (random per-channel weights)."""
    net = tm.Net(seed)
    x = net.input("input", list(shape))
    net.conv2d(x, channels, kernel, stride, "SAME", "RELU6", name="output")
    net.output("output")
    return net


@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an500"])
def test_stems_of_odd_widths_gather_window_words_bit_identical(board, tmp_path):
    """A stem read in place is a one-channel convolution of rows 3 x kernel taps wide
    (`glow-convolve-interleaved-rows`): 3x3 stride 2 is 3 rows of 9 taps, 5x5 stride 1 is 5
    rows of 15; the DSP kernel gathers each row's whole fours of taps as words and the rows'
    last taps one by one (`layout.window_tap_order`), at odd widths, at the right and bottom
    padding and within it; the 3x3 one's padded input is too large to copy (2,775 bytes), so
    its runs of four pixels (across rows: 19 a row) are gathered straight when inside
    (`window_gathering.straight_run`), else pixel by pixel: the board's outputs equal
    TFLite Micro's bit for bit."""
    for k, (shape, channels, kernel, stride, filter_shape) in enumerate([
            ((1, 25, 37, 3), 8, 3, 2, "8, 1, 3, 9"), ((1, 11, 9, 3), 6, 5, 1, "6, 1, 5, 15")]):
        data = tm.build(odd_stem(shape, channels, kernel, stride, seed=11 + k), quantized=True)
        path = tmp_path / f"stem{k}.tflite"
        path.write_bytes(data)
        bundle = glowmlir.compile(str(path), target=target_for(board))
        assert f"filter_shape = array<i64: {filter_shape}>" in bundle.ir["glowll"]
        inputs = tm.random_inputs(data, seed=k, low=-2.0, high=2.0)
        expected = MicroRunner(data)(inputs)["output"]
        actual = run_on_board(bundle, board, inputs).outputs["output"]
        np.testing.assert_array_equal(actual.reshape(expected.shape), expected)
