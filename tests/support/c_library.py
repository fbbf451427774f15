"""What the tests of our C stand-ins of the int8 kernel libraries share
(tests/unit/test_cmsis_standins.py for tests/support/cmsis_nn/standins.c,
tests/unit/test_hifi4_standins.py for tests/support/hifi4/standins.c): compiling a C
source (a host shared library loaded with ctypes, or an object file for a cross
compiler), ctypes pointers into numpy arrays, scratch buffers with guard zones, and the
random int8 data both draw with the independent numpy reference's expected results
(tests/support/int8_reference.py).

The data generators take a seed and draw in a fixed order, so that a test's data depends
only on its seed. Layouts: activations NHWC (with a batch dimension), results NHWC.
"""

from __future__ import annotations

import ctypes
import operator
import os
import shutil
import subprocess
from ctypes import POINTER, c_int8, c_int32

import numpy as np

from glowmlir.quantization.params import quantize_multiplier
from tests.support import int8_reference as ref

C_FLAGS = ("-std=c11", "-Wall", "-Wextra", "-Werror")
ARM_GCC = shutil.which("arm-none-eabi-gcc")
CORTEX_M7_FLAGS = ("-mcpu=cortex-m7", "-mthumb")
SENTINEL = 0xAB

# ----------------------------------------------------------------------------- compiling


def run_compiler(*command) -> None:
    """Runs a compiler command line; the test fails with the compiler's diagnostics."""
    result = subprocess.run([str(part) for part in command], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def compile_object(source, output, include_dir: str, compiler: str = "cc", flags=()) -> None:
    """`source` compiled (not linked) to `output` with C11 and every warning an error."""
    run_compiler(compiler, *C_FLAGS, "-I", include_dir, *flags, "-c", source, "-o", output)


def build_library(source: str, include_dir: str, out_dir, name: str, flags=()) -> ctypes.CDLL:
    """`source` built with the host's cc into `out_dir`/lib`name`.so (-O1, C11, every
    warning an error, and `flags`) and loaded; the caller declares argtypes / restype."""
    path = os.path.join(str(out_dir), f"lib{name}.so")
    run_compiler("cc", "-shared", "-fPIC", "-O1", *C_FLAGS, *flags, "-I", include_dir, source, "-o", path)
    return ctypes.CDLL(path)


# ----------------------------------------------------------------------------- ctypes

P8, P32 = POINTER(c_int8), POINTER(c_int32)


def p8(array: np.ndarray | None):
    """An int8_t pointer to a C-contiguous int8 array (NULL for None)."""
    if array is None:
        return None
    assert array.dtype == np.int8 and array.flags.c_contiguous
    return array.ctypes.data_as(P8)


def p32(array: np.ndarray | None):
    """An int32_t pointer to a C-contiguous int32 array (NULL for None)."""
    if array is None:
        return None
    assert array.dtype == np.int32 and array.flags.c_contiguous
    return array.ctypes.data_as(P32)


class GuardedBuffer:
    """`size` bytes of scratch inside a byte array filled with `fill`: GUARD bytes of guard
    zone after them and, given `misalign` (the address of the first byte modulo 8), at least
    GUARD bytes before them, so that a kernel writing outside its `size` bytes is caught."""

    GUARD = 64

    def __init__(self, size: int, misalign: int | None = None, fill: int = SENTINEL):
        self.size = size
        self.fill = fill
        if misalign is None:
            self.memory = np.full(size + self.GUARD, fill, np.uint8)
            self.start = 0
        else:
            self.memory = np.full(size + 2 * self.GUARD + 8, fill, np.uint8)
            base = self.memory.ctypes.data
            self.start = self.GUARD + (misalign - (base + self.GUARD)) % 8
            assert (base + self.start) % 8 == misalign % 8

    @property
    def address(self) -> int:
        return self.memory.ctypes.data + self.start

    @property
    def region(self) -> np.ndarray:
        """The `size` bytes handed to the kernel."""
        return self.memory[self.start:self.start + self.size]

    def last_byte_written(self) -> bool:
        """The last of the `size` bytes no longer holds the fill: the kernel used (at least
        cleared) all of the size it asked for."""
        return bool(self.region[-1] != self.fill)

    def guards_intact(self) -> bool:
        return bool((self.memory[:self.start] == self.fill).all()
                    and (self.memory[self.start + self.size:] == self.fill).all())


# ----------------------------------------------------------------------------- data


def levels(rng, *shape) -> np.ndarray:
    """Uniformly random int8 levels."""
    return rng.integers(-128, 128, shape, dtype=np.int8)


def out_size(size: int, kernel: int, stride: int, pad_before: int, pad_after: int, dilation: int = 1) -> int:
    return (size + pad_before + pad_after - (dilation * (kernel - 1) + 1)) // stride + 1


def assert_spread(y: np.ndarray) -> None:
    """The comparison is meaningful: outputs take many values."""
    assert len(np.unique(y)) > min(20, y.size // 4), np.unique(y)


def nchw(x_nhwc: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x_nhwc.transpose(0, 3, 1, 2))


def nhwc(x_nchw: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x_nchw.transpose(0, 2, 3, 1))


def activation_bounds(out_scale: float, out_zp: int, activation: str | None, spread: float = 100.0):
    """(activation name, clip_min, clip_max) for the reference (clip: [-0.4, 0.6] * spread
    output steps) and the quantized bounds it clamps to."""
    if activation == "clip":
        clip_min, clip_max = -0.4 * spread * out_scale, 0.6 * spread * out_scale
    else:
        clip_min = clip_max = None
    return (activation, clip_min, clip_max), ref.activation_range(out_scale, out_zp, activation, clip_min, clip_max)


def conv_reference_case(seed: int, batches: int, height: int, width: int, in_channels: int, out_channels: int,
                        kernel, strides, pads, dilations=(1, 1), groups: int = 1, x_zp: int = 0,
                        depthwise: bool = False, with_bias: bool = True, activation: str | None = None) -> dict:
    """Random data for a (grouped) convolution or a depthwise convolution (C_OUT a multiple
    of C_IN) with per-channel weight scales, and the reference's result. pads = (top, left,
    bottom, right). Returns x (NHWC), kernel (OHWI [C_OUT, KH, KW, C_IN / groups]; depthwise
    [KH, KW, C_OUT]), bias (int32 or None), x_zp, out_zp, act (the quantized activation
    bounds), mult / shift (int32 per output channel) and expected (NHWC)."""
    rng = np.random.default_rng(seed)
    kh, kw = kernel
    x = levels(rng, batches, height, width, in_channels)
    w_oihw = levels(rng, out_channels, 1 if depthwise else in_channels // groups, kh, kw)
    w_scales = rng.uniform(0.002, 0.05, out_channels).astype(np.float32)
    x_scale = ref.f32(rng.uniform(0.005, 0.1))
    bias = rng.integers(-20000, 20001, out_channels).astype(np.int32) if with_bias else None
    ref_bias = np.zeros(out_channels) if bias is None else bias
    group = in_channels if depthwise else groups
    acc = ref.conv2d_accumulators(nchw(x), w_oihw, ref_bias, x_zp, np.zeros(out_channels), strides, pads, dilations,
                                  group)
    reals = acc * x_scale * w_scales[None, :, None, None]
    out_scale = ref.f32(float(np.abs(reals).max()) / 110.0)
    out_zp = int(rng.integers(-15, 16))
    act, bounds = activation_bounds(out_scale, out_zp, activation)
    expected = nhwc(ref.conv2d(nchw(x), w_oihw, ref_bias, (x_scale, x_zp), w_scales, 0, (out_scale, out_zp), strides,
                               pads, dilations, group, activation=act[0], clip_min=act[1], clip_max=act[2]))
    mult, shift = ref.multipliers([ref.real_multiplier(x_scale, s, out_scale) for s in w_scales])
    if depthwise:
        kernel_data = np.ascontiguousarray(w_oihw[:, 0].transpose(1, 2, 0))  # [KH, KW, C_OUT]
    else:
        kernel_data = np.ascontiguousarray(w_oihw.transpose(0, 2, 3, 1))  # OHWI
    return dict(x=x, kernel=kernel_data, bias=bias, x_zp=x_zp, out_zp=out_zp, act=bounds,
                mult=mult.astype(np.int32), shift=shift.astype(np.int32), expected=expected)


def fc_reference_case(seed: int, batches: int, depth: int, outputs: int, x_zp_range: tuple[int, int], w_zp: int = 0,
                      with_bias: bool = True, activation: str | None = None) -> dict:
    """Random data for a fully connected layer (per-tensor weight scale, input zero point
    drawn from [x_zp_range[0], x_zp_range[1])) and the reference's result. Returns x
    [batches, depth], weights in the reference's [depth, C_OUT], bias (int32 or None),
    x_type / w_type / out_type (scale, zero point), act (the quantized activation bounds),
    mult / shift and expected [batches, C_OUT]."""
    rng = np.random.default_rng(seed)
    x = levels(rng, batches, depth)
    weights = levels(rng, depth, outputs)
    bias = rng.integers(-20000, 20001, outputs).astype(np.int32) if with_bias else None
    x_type = (ref.f32(rng.uniform(0.005, 0.1)), int(rng.integers(*x_zp_range)))
    w_type = (ref.f32(rng.uniform(0.002, 0.05)), w_zp)
    acc = (x.astype(np.int64) - x_type[1]) @ (weights.astype(np.int64) - w_zp) + (0 if bias is None else bias)
    out_scale = ref.f32(float(np.abs(acc).max()) * x_type[0] * w_type[0] / 110.0)
    out_type = (out_scale, int(rng.integers(-15, 16)))
    act, bounds = activation_bounds(out_scale, out_type[1], activation)
    expected = ref.fully_connected(x, weights, np.zeros(outputs) if bias is None else bias, x_type, w_type, out_type,
                                   activation=act[0], clip_min=act[1], clip_max=act[2])
    mult, shift = quantize_multiplier(ref.real_multiplier(x_type[0], w_type[0], out_scale))
    return dict(x=x, weights=weights, bias=bias, x_type=x_type, w_type=w_type, out_type=out_type, act=bounds,
                mult=mult, shift=shift, expected=expected)


def add_parameters(a_type, b_type, out_type):
    """TFLite's Add Prepare (the reference's rule): left shift 20, each input rescaled by
    s_i / (2 max(s_a, s_b)), the sum by 2 max(s_a, s_b) / (2^20 s_out)."""
    sa, sb, so = ref.f32(a_type[0]), ref.f32(b_type[0]), ref.f32(out_type[0])
    twice_max = 2.0 * max(sa, sb)
    return (quantize_multiplier(sa / twice_max), quantize_multiplier(sb / twice_max),
            quantize_multiplier(twice_max / ((1 << ref.ADD_LEFT_SHIFT) * so)))


def _operands(rng, size: int, combine):
    """Two random int8 vectors with random types, and an output type that spreads
    combine(real a, real b) over about +-100 levels."""
    a, b = levels(rng, size), levels(rng, size)
    a_type = (ref.f32(rng.uniform(0.01, 0.1)), int(rng.integers(-128, 128)))
    b_type = (ref.f32(rng.uniform(0.01, 0.1)), int(rng.integers(-128, 128)))
    reals = combine(ref.dequantize(a, *a_type), ref.dequantize(b, *b_type))
    out_type = (ref.f32(float(np.abs(reals).max()) / 100.0), int(rng.integers(-20, 21)))
    return a, b, a_type, b_type, out_type


def add_reference_case(seed: int, activation: str | None = None, size: int = 257) -> dict:
    """Random data for TFLite's int8 Add (optionally with a relu / clip activation) and the
    reference's result. Returns a, b, their types and out_type (scale, zero point), the
    quantized activation bounds low / high, the multiplier / shift pairs of add_parameters
    (a, b, out) and expected."""
    a, b, a_type, b_type, out_type = _operands(np.random.default_rng(seed), size, operator.add)
    act, (low, high) = activation_bounds(out_type[0], out_type[1], activation)
    expected = ref.add(a, b, a_type, b_type, out_type, *act)
    (ma, sha), (mb, shb), (mo, sho) = add_parameters(a_type, b_type, out_type)
    return dict(a=a, b=b, a_type=a_type, b_type=b_type, out_type=out_type, low=low, high=high, a_mult=ma,
                a_shift=sha, b_mult=mb, b_shift=shb, out_mult=mo, out_shift=sho, expected=expected)


def mul_reference_case(seed: int, clamped: bool, size: int = 300) -> dict:
    """Random data for TFLite's int8 Mul, clamped to [-30, 50] or to the int8 range, and the
    reference's result. Returns a, b, their types and out_type, the bounds low / high, the
    multiplier / shift and expected."""
    a, b, a_type, b_type, out_type = _operands(np.random.default_rng(10 + seed), size, operator.mul)
    low, high = (-30, 50) if clamped else (-128, 127)
    expected = np.clip(ref.mul(a, b, a_type, b_type, out_type), low, high)
    mult, shift = quantize_multiplier(ref.real_multiplier(a_type[0], b_type[0], out_type[0]))
    return dict(a=a, b=b, a_type=a_type, b_type=b_type, out_type=out_type, low=low, high=high, mult=mult, shift=shift,
                expected=expected)


# ----------------------------------------------------------------------------- softmax data

# (rows, row length, input scale); the first row has ties at its maximum
SOFTMAX_CASES = [(1, 10, 0.1), (4, 37, 0.05), (3, 1, 0.2), (2, 300, 0.02), (5, 16, 0.5), (3, 64, 2.0),
                 (2, 100, 0.004)]
SOFTMAX_EVERY_DIFFERENCE_SCALES = (0.003, 0.01, 0.03, 0.08, 0.2, 0.6, 1.5)


def softmax_rows(rows: int, length: int) -> np.ndarray:
    """Random rows, the first half of the first row tied at its maximum."""
    x = levels(np.random.default_rng(rows * 1000 + length), rows, length)
    x[0, : length // 2] = x[0].max()
    return x


def every_difference_rows(rng) -> np.ndarray:
    """Rows [127, v, random] for every level v: every input difference to the row maximum,
    with sums of two and three terms."""
    return np.stack([np.full(256, 127), np.arange(-128, 128), rng.integers(-128, 128, 256)], axis=1).astype(np.int8)

