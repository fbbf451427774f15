"""Our host stand-ins of the CMSIS-NN int8 functions (tests/support/cmsis_nn/standins.c)
against the independent numpy reference of TFLite's int8 arithmetic
(tests/support/int8_reference.py), bit for bit, plus the struct layouts of our
declaration of the API (tests/support/cmsis_nn/arm_nnfunctions.h) on the host and on
Cortex-M7, and the scratch-buffer rules of the *_get_buffer_size functions.

The stand-ins work in NHWC / OHWI / [1, KH, KW, C_OUT] / [C_OUT][depth]; the reference in
NCHW / OIHW / FullyConnected [depth, C_OUT]: the tests transpose. Multipliers and shifts
are derived from the scales exactly as the reference derives them.
"""

from __future__ import annotations

import ctypes
import json
import os
from ctypes import POINTER, Structure, c_int, c_int32, c_void_p

import numpy as np
import pytest

from tests.support import int8_reference as ref
from tests.support.c_library import (
    ARM_GCC,
    CORTEX_M7_FLAGS,
    P8,
    P32,
    SOFTMAX_CASES,
    SOFTMAX_EVERY_DIFFERENCE_SCALES,
    GuardedBuffer,
    add_reference_case,
    assert_spread,
    build_library,
    compile_object,
    conv_reference_case,
    every_difference_rows,
    fc_reference_case,
    levels,
    mul_reference_case,
    nchw,
    nhwc,
    out_size,
    p8,
    p32,
    softmax_rows,
)

CMSIS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support", "cmsis_nn")
HEADER = os.path.join(CMSIS_DIR, "arm_nnfunctions.h")
SOURCE = os.path.join(CMSIS_DIR, "standins.c")

SUCCESS, ARG_ERROR = 0, -1

# ----------------------------------------------------------------------------- ctypes mirror of the header


class Tile(Structure):
    _fields_ = [("w", c_int32), ("h", c_int32)]


class Context(Structure):
    _fields_ = [("buf", c_void_p), ("size", c_int32)]


class Dims(Structure):
    _fields_ = [("n", c_int32), ("h", c_int32), ("w", c_int32), ("c", c_int32)]


class PerChannelQuant(Structure):
    _fields_ = [("multiplier", POINTER(c_int32)), ("shift", POINTER(c_int32))]


class PerTensorQuant(Structure):
    _fields_ = [("multiplier", c_int32), ("shift", c_int32)]


class Activation(Structure):
    _fields_ = [("min", c_int32), ("max", c_int32)]


class ConvParams(Structure):
    _fields_ = [("input_offset", c_int32), ("output_offset", c_int32), ("stride", Tile), ("padding", Tile),
                ("dilation", Tile), ("activation", Activation)]


class DwConvParams(Structure):
    _fields_ = [("input_offset", c_int32), ("output_offset", c_int32), ("ch_mult", c_int32), ("stride", Tile),
                ("padding", Tile), ("dilation", Tile), ("activation", Activation)]


class PoolParams(Structure):
    _fields_ = [("stride", Tile), ("padding", Tile), ("activation", Activation)]


class FcParams(Structure):
    _fields_ = [("input_offset", c_int32), ("filter_offset", c_int32), ("output_offset", c_int32),
                ("activation", Activation)]


# ----------------------------------------------------------------------------- expected layouts

# sizeof and offsetof of every struct of the header, from the field lists of the notes (A.2):
# every field is an int32, a pointer, or a struct of int32s, so structs are packed
# without holes except for the tail padding of pointer-aligned structs on LP64.
LAYOUT_X86_64 = {
    "cmsis_nn_tile": (8, {"w": 0, "h": 4}),
    "cmsis_nn_context": (16, {"buf": 0, "size": 8}),
    "cmsis_nn_dims": (16, {"n": 0, "h": 4, "w": 8, "c": 12}),
    "cmsis_nn_per_channel_quant_params": (16, {"multiplier": 0, "shift": 8}),
    "cmsis_nn_per_tensor_quant_params": (8, {"multiplier": 0, "shift": 4}),
    "cmsis_nn_activation": (8, {"min": 0, "max": 4}),
    "cmsis_nn_conv_params": (40, {"input_offset": 0, "output_offset": 4, "stride": 8, "padding": 16,
                                  "dilation": 24, "activation": 32}),
    "cmsis_nn_dw_conv_params": (44, {"input_offset": 0, "output_offset": 4, "ch_mult": 8, "stride": 12,
                                     "padding": 20, "dilation": 28, "activation": 36}),
    "cmsis_nn_pool_params": (24, {"stride": 0, "padding": 8, "activation": 16}),
    "cmsis_nn_fc_params": (20, {"input_offset": 0, "filter_offset": 4, "output_offset": 8, "activation": 12}),
}
LAYOUT_CORTEX_M = {
    **LAYOUT_X86_64,
    "cmsis_nn_context": (8, {"buf": 0, "size": 4}),
    "cmsis_nn_per_channel_quant_params": (8, {"multiplier": 0, "shift": 4}),
}
# arm-none-eabi-gcc defaults to short enums (AAPCS bare-metal): the status enum (values
# -3..0) is one byte there, an int on the host. Callees return it extended to a word in r0.
STATUS_SIZE = {"x86_64": 4, "cortex-m7": 1}

CTYPES = {"cmsis_nn_tile": Tile, "cmsis_nn_context": Context, "cmsis_nn_dims": Dims,
          "cmsis_nn_per_channel_quant_params": PerChannelQuant,
          "cmsis_nn_per_tensor_quant_params": PerTensorQuant, "cmsis_nn_activation": Activation,
          "cmsis_nn_conv_params": ConvParams, "cmsis_nn_dw_conv_params": DwConvParams,
          "cmsis_nn_pool_params": PoolParams, "cmsis_nn_fc_params": FcParams}


def layout_source(layout: dict, status_size: int) -> str:
    lines = ['#include "arm_nnfunctions.h"', "#include <stddef.h>"]
    for struct, (size, fields) in layout.items():
        lines.append(f'_Static_assert(sizeof({struct}) == {size}, "sizeof {struct}");')
        for field, offset in fields.items():
            lines.append(f'_Static_assert(offsetof({struct}, {field}) == {offset}, "offsetof {struct}.{field}");')
    lines.append(f'_Static_assert(sizeof(arm_cmsis_nn_status) == {status_size}, "sizeof arm_cmsis_nn_status");')
    lines.append('_Static_assert(ARM_CMSIS_NN_SUCCESS == 0 && ARM_CMSIS_NN_ARG_ERROR == -1 '
                 '&& ARM_CMSIS_NN_NO_IMPL_ERROR == -2, "status values");')
    return "\n".join(lines) + "\n"


def compile_layout(compiler: str, flags, layout: dict, status_size: int, out_dir) -> None:
    source = out_dir / "layout.c"
    source.write_text(layout_source(layout, status_size))
    compile_object(source, out_dir / "out.o", CMSIS_DIR, compiler, flags)


def test_layout_host(tmp_path):
    assert ctypes.sizeof(c_void_p) == 8, "the host expectations are written for an LP64 host (x86-64)"
    compile_layout("cc", [], LAYOUT_X86_64, STATUS_SIZE["x86_64"], tmp_path)
    # the ctypes mirror used below agrees with the header
    for struct, (size, fields) in LAYOUT_X86_64.items():
        mirror = CTYPES[struct]
        assert ctypes.sizeof(mirror) == size, struct
        assert [name for name, _ in mirror._fields_] == list(fields), struct
        assert {name: getattr(mirror, name).offset for name in fields} == fields, struct


@pytest.mark.skipif(ARM_GCC is None, reason="needs arm-none-eabi-gcc (scripts/setup.sh)")
def test_layout_cortex_m7(tmp_path):
    compile_layout(ARM_GCC, CORTEX_M7_FLAGS, LAYOUT_CORTEX_M, STATUS_SIZE["cortex-m7"], tmp_path)


@pytest.mark.skipif(ARM_GCC is None, reason="needs arm-none-eabi-gcc (scripts/setup.sh)")
def test_standins_compile_for_cortex_m7(tmp_path):
    compile_object(SOURCE, tmp_path / "out.o", CMSIS_DIR, ARM_GCC, [*CORTEX_M7_FLAGS, "-O2"])


# ----------------------------------------------------------------------------- the library


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return declare(build_library(SOURCE, CMSIS_DIR, tmp_path_factory.mktemp("cmsis_standins"), "cmsis_standins"))


@pytest.fixture(scope="module")
def helium_lib(tmp_path_factory):
    """The stand-ins as the library's Helium build: compiled with ARM_MATH_MVEI."""
    return declare(build_library(SOURCE, CMSIS_DIR, tmp_path_factory.mktemp("cmsis_standins_mve"),
                                 "cmsis_standins_mve", ["-DARM_MATH_MVEI"]))


def declare(so: ctypes.CDLL) -> ctypes.CDLL:
    """The stand-ins' argument and result types."""
    pdims = POINTER(Dims)
    conv_args = [POINTER(Context), c_void_p, POINTER(PerChannelQuant), pdims, P8, pdims, P8, pdims, P32, pdims, P8]
    so.arm_convolve_wrapper_s8.argtypes = [conv_args[0], POINTER(ConvParams), *conv_args[2:]]
    so.arm_convolve_wrapper_s8_get_buffer_size.argtypes = [POINTER(ConvParams), pdims, pdims, pdims]
    so.arm_depthwise_conv_wrapper_s8.argtypes = [conv_args[0], POINTER(DwConvParams), *conv_args[2:]]
    so.arm_depthwise_conv_wrapper_s8_get_buffer_size.argtypes = [POINTER(DwConvParams), pdims, pdims, pdims]
    so.arm_fully_connected_s8.argtypes = [POINTER(Context), POINTER(FcParams), POINTER(PerTensorQuant), pdims, P8,
                                          pdims, P8, pdims, P32, pdims, P8]
    so.arm_fully_connected_s8_get_buffer_size.argtypes = [pdims]
    pool_args = [POINTER(Context), POINTER(PoolParams), pdims, P8, pdims, pdims, P8]
    so.arm_max_pool_s8.argtypes = pool_args
    so.arm_avgpool_s8.argtypes = pool_args
    so.arm_avgpool_s8_get_buffer_size.argtypes = [c_int, c_int]
    so.arm_softmax_s8.argtypes = [P8, c_int32, c_int32, c_int32, c_int32, c_int32, P8]
    so.arm_softmax_s8.restype = None
    so.arm_elementwise_add_s8.argtypes = [P8, P8, *[c_int32] * 7, P8, *[c_int32] * 6]
    so.arm_elementwise_mul_s8.argtypes = [P8, P8, c_int32, c_int32, P8, *[c_int32] * 6]
    for name in ("arm_convolve_wrapper_s8", "arm_convolve_wrapper_s8_get_buffer_size",
                 "arm_depthwise_conv_wrapper_s8", "arm_depthwise_conv_wrapper_s8_get_buffer_size",
                 "arm_fully_connected_s8", "arm_fully_connected_s8_get_buffer_size", "arm_max_pool_s8",
                 "arm_avgpool_s8", "arm_avgpool_s8_get_buffer_size", "arm_elementwise_add_s8",
                 "arm_elementwise_mul_s8"):
        getattr(so, name).restype = c_int32
    return so


class Scratch(GuardedBuffer):
    """A scratch buffer of `size` bytes followed by a guard zone, all filled with SENTINEL
    (`size` None: no buffer); `context` claims `claimed` bytes (default: the whole buffer)."""

    def __init__(self, size: int | None, claimed: int | None = None):
        if size is None:
            self.size = None
            self.memory = None
            self.context = Context(None, 0)
        else:
            super().__init__(size)
            self.context = Context(self.address, size + self.GUARD if claimed is None else claimed)

    def used(self) -> bool:
        """The planned bytes were written (their last byte too)."""
        return self.last_byte_written()


# ----------------------------------------------------------------------------- convolution

CONVOLUTIONS = {
    # name: (N, H, W, C_in, C_out, (KH, KW), strides, pads (t, l, b, r), dilations, groups, input zero point)
    "1x1": (1, 5, 6, 8, 12, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, 7),
    "1x1_stride2": (1, 7, 7, 4, 6, (1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1, -3),
    "3x3_pad1": (1, 8, 8, 3, 5, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, 11),
    "3x3_stride2_same": (1, 9, 10, 4, 7, (3, 3), (2, 2), (1, 0, 1, 1), (1, 1), 1, -20),
    "3x3_valid_stride2": (1, 8, 8, 3, 4, (3, 3), (2, 2), (0, 0, 0, 0), (1, 1), 1, 0),
    "dilation2": (1, 9, 9, 3, 4, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 1, 5),
    "grouped2": (1, 6, 6, 8, 6, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2, -9),
    "grouped3_1x1": (1, 4, 5, 6, 9, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 3, 2),
    "non_square": (1, 7, 11, 5, 3, (2, 4), (2, 1), (0, 1, 1, 2), (1, 2), 1, 14),
    "1xN": (1, 1, 16, 4, 4, (1, 3), (1, 1), (0, 1, 0, 1), (1, 1), 1, -1),
    "batch2": (2, 6, 5, 3, 4, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, 30),
    "input_zp_min": (1, 6, 6, 4, 5, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, -128),
    "input_zp_max": (1, 6, 6, 4, 5, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, 127),
}


def conv_case(seed: int, geometry, depthwise: bool, with_bias: bool = True, activation: str | None = None):
    """Random data for a conv (OHWI kernel) or depthwise conv ([1, KH, KW, C_OUT] kernel) and
    the reference's result (NHWC)."""
    n, h, w, cin, cout, kernel, strides, pads, dilations, groups, x_zp = geometry
    case = conv_reference_case(seed, n, h, w, cin, cout, kernel, strides, pads, dilations, groups, x_zp, depthwise,
                               with_bias, activation)
    if depthwise:
        case["kernel"] = case["kernel"][None]
    return case


def conv_structs(geometry, case, depthwise: bool):
    n, h, w, cin, cout, (kh, kw), strides, pads, dilations, groups, _ = geometry
    oh = out_size(h, kh, strides[0], pads[0], pads[2], dilations[0])
    ow = out_size(w, kw, strides[1], pads[1], pads[3], dilations[1])
    common = dict(input_offset=-case["x_zp"], output_offset=case["out_zp"], stride=Tile(strides[1], strides[0]),
                  padding=Tile(pads[1], pads[0]), dilation=Tile(dilations[1], dilations[0]),
                  activation=Activation(*case["act"]))
    if depthwise:
        params = DwConvParams(ch_mult=cout // cin, **common)
        filter_dims = Dims(1, kh, kw, cout)
    else:
        params = ConvParams(**common)
        filter_dims = Dims(cout, kh, kw, cin // groups)
    quant = PerChannelQuant(p32(case["mult"]), p32(case["shift"]))
    return params, quant, Dims(n, h, w, cin), filter_dims, Dims(cout, 1, 1, 1), Dims(n, oh, ow, cout)


def run_conv(lib, geometry, case, depthwise: bool, scratch: Scratch | None = None, **overrides):
    params, quant, in_dims, filter_dims, bias_dims, out_dims = conv_structs(geometry, case, depthwise)
    for name, value in overrides.items():
        target = {"in_dims": in_dims, "filter_dims": filter_dims, "out_dims": out_dims}.get(name.split(".")[0])
        if target is not None:
            setattr(target, name.split(".")[1], value)
        else:
            setattr(params, name, value)
    getter = lib.arm_depthwise_conv_wrapper_s8_get_buffer_size if depthwise else \
        lib.arm_convolve_wrapper_s8_get_buffer_size
    size = getter(ctypes.byref(params), ctypes.byref(in_dims), ctypes.byref(filter_dims), ctypes.byref(out_dims))
    if scratch is None:
        scratch = Scratch(size if size > 0 else None)
    out = np.zeros((out_dims.n, out_dims.h, out_dims.w, out_dims.c), np.int8)
    function = lib.arm_depthwise_conv_wrapper_s8 if depthwise else lib.arm_convolve_wrapper_s8
    status = function(ctypes.byref(scratch.context), ctypes.byref(params), ctypes.byref(quant), ctypes.byref(in_dims),
                      p8(case["x"]), ctypes.byref(filter_dims), p8(case["kernel"]), ctypes.byref(bias_dims),
                      p32(case["bias"]), ctypes.byref(out_dims), p8(out))
    return status, out, size, scratch


@pytest.mark.parametrize("name", sorted(CONVOLUTIONS))
def test_convolve(lib, name):
    geometry = CONVOLUTIONS[name]
    case = conv_case(sum(map(ord, name)), geometry, depthwise=False)
    status, out, size, scratch = run_conv(lib, geometry, case, depthwise=False)
    assert status == SUCCESS
    np.testing.assert_array_equal(out, case["expected"])
    assert_spread(out)
    if size > 0:
        assert scratch.used() and scratch.guards_intact()


@pytest.mark.parametrize("activation", ["relu", "clip"])
@pytest.mark.parametrize("with_bias", [True, False])
def test_convolve_activation_and_bias(lib, activation, with_bias):
    geometry = CONVOLUTIONS["3x3_pad1"]
    case = conv_case(77, geometry, depthwise=False, with_bias=with_bias, activation=activation)
    status, out, _, _ = run_conv(lib, geometry, case, depthwise=False)
    assert status == SUCCESS
    np.testing.assert_array_equal(out, case["expected"])
    low, high = case["act"]
    assert out.min() == low and (activation == "relu" or out.max() == high), "the clamp is exercised"


DEPTHWISE = {
    # name: (N, H, W, C_in, C_out, (KH, KW), strides, pads, dilations, groups (unused), input zero point)
    "3x3_pad1": (1, 7, 8, 6, 6, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 0, 4),
    "3x3_stride2": (1, 9, 9, 5, 5, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 0, -6),
    "3x3_valid": (1, 6, 6, 3, 3, (3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 0, 0),
    "5x5_pad2": (1, 8, 8, 8, 8, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 0, 10),
    "3x3_pad2": (1, 5, 6, 4, 4, (3, 3), (1, 1), (2, 2, 2, 2), (1, 1), 0, -2),
    "ch_mult2": (1, 7, 7, 4, 8, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 0, 3),
    "ch_mult3_non_square": (1, 6, 9, 3, 9, (2, 3), (1, 2), (0, 1, 1, 1), (1, 1), 0, -30),
    "dilation2": (1, 9, 9, 4, 4, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 0, 8),
    "one_input_channel_x4": (1, 6, 6, 1, 4, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 0, 1),
    "input_zp_min": (1, 5, 5, 4, 4, (4, 2), (1, 1), (1, 0, 2, 1), (1, 1), 0, -128),
}


@pytest.mark.parametrize("name", sorted(DEPTHWISE))
def test_depthwise_conv(lib, name):
    geometry = DEPTHWISE[name]
    case = conv_case(1000 + sum(map(ord, name)), geometry, depthwise=True)
    status, out, size, scratch = run_conv(lib, geometry, case, depthwise=True)
    assert status == SUCCESS
    np.testing.assert_array_equal(out, case["expected"])
    assert_spread(out)
    if size > 0:
        assert scratch.used() and scratch.guards_intact()


@pytest.mark.parametrize("activation", ["relu", "clip"])
def test_depthwise_conv_activation_no_bias(lib, activation):
    geometry = DEPTHWISE["ch_mult2"]
    case = conv_case(78, geometry, depthwise=True, with_bias=False, activation=activation)
    status, out, _, _ = run_conv(lib, geometry, case, depthwise=True)
    assert status == SUCCESS
    np.testing.assert_array_equal(out, case["expected"])
    assert out.min() == case["act"][0]


# ----------------------------------------------------------------------------- fully connected

FULLY_CONNECTED = {
    # name: (batches, input (h, w, c), outputs, weight zero point, bias)
    "vector": (1, (1, 1, 40), 10, 0, True),
    "batch3": (3, (1, 1, 17), 7, 0, True),
    "flattened_input": (2, (3, 2, 5), 6, 0, True),
    "weight_offset": (2, (1, 1, 23), 9, 5, True),
    "no_bias": (1, (1, 1, 31), 12, 0, False),
}


def fc_case(seed: int, spec, activation: str | None = None):
    batches, (h, w, c), outputs, w_zp, with_bias = spec
    depth = h * w * c
    case = fc_reference_case(seed, batches, depth, outputs, (-40, 41), w_zp, with_bias, activation)
    params = FcParams(-case["x_type"][1], -w_zp, case["out_type"][1], Activation(*case["act"]))
    return dict(x=np.ascontiguousarray(case["x"].reshape(batches, h, w, c)),
                weights=np.ascontiguousarray(case["weights"].T), bias=case["bias"], params=params,
                quant=PerTensorQuant(case["mult"], case["shift"]), expected=case["expected"],
                dims=(Dims(batches, h, w, c), Dims(depth, 1, 1, outputs), Dims(outputs, 1, 1, 1),
                      Dims(batches, 1, 1, outputs)))


def run_fc(lib, case, context: Context | None = None):
    in_dims, filter_dims, bias_dims, out_dims = case["dims"]
    out = np.zeros((out_dims.n, out_dims.c), np.int8)
    context = Context(None, 0) if context is None else context
    status = lib.arm_fully_connected_s8(ctypes.byref(context), ctypes.byref(case["params"]),
                                        ctypes.byref(case["quant"]), ctypes.byref(in_dims), p8(case["x"]),
                                        ctypes.byref(filter_dims), p8(case["weights"]), ctypes.byref(bias_dims),
                                        p32(case["bias"]), ctypes.byref(out_dims), p8(out))
    return status, out


@pytest.mark.parametrize("name", sorted(FULLY_CONNECTED))
def test_fully_connected(lib, name):
    case = fc_case(sum(map(ord, name)), FULLY_CONNECTED[name])
    assert lib.arm_fully_connected_s8_get_buffer_size(ctypes.byref(case["dims"][1])) == 0
    status, out = run_fc(lib, case)
    assert status == SUCCESS
    np.testing.assert_array_equal(out, case["expected"])
    assert_spread(out)


@pytest.mark.parametrize("activation", ["relu", "clip"])
def test_fully_connected_activation(lib, activation):
    case = fc_case(5, (2, (1, 1, 50), 40, 0, True), activation)
    status, out = run_fc(lib, case)
    assert status == SUCCESS
    np.testing.assert_array_equal(out, case["expected"])
    assert out.min() == case["params"].activation.min


# ----------------------------------------------------------------------------- pooling

POOLS = {
    # name: (N, H, W, C, (KH, KW), strides, pads (t, l, b, r))
    "2x2_stride2": (1, 8, 8, 5, (2, 2), (2, 2), (0, 0, 0, 0)),
    "3x3_stride2_same": (1, 9, 10, 4, (3, 3), (2, 2), (1, 0, 1, 1)),
    "3x3_stride1_pad1": (1, 6, 7, 3, (3, 3), (1, 1), (1, 1, 1, 1)),
    "global": (1, 7, 5, 6, (7, 5), (1, 1), (0, 0, 0, 0)),
    "non_square": (1, 6, 9, 4, (2, 3), (1, 2), (0, 1, 1, 1)),
    "valid_remainder": (1, 7, 7, 3, (2, 2), (2, 2), (0, 0, 0, 0)),
    "batch2": (2, 5, 6, 3, (3, 2), (2, 1), (1, 0, 1, 1)),
}


def pool_structs(spec, act):
    n, h, w, c, (kh, kw), strides, pads = spec
    oh = out_size(h, kh, strides[0], pads[0], pads[2])
    ow = out_size(w, kw, strides[1], pads[1], pads[3])
    params = PoolParams(Tile(strides[1], strides[0]), Tile(pads[1], pads[0]), Activation(*act))
    return params, Dims(n, h, w, c), Dims(1, kh, kw, 1), Dims(n, oh, ow, c)


def run_pool(lib, function, spec, x, act, context: Context):
    params, in_dims, filter_dims, out_dims = pool_structs(spec, act)
    out = np.zeros((out_dims.n, out_dims.h, out_dims.w, out_dims.c), np.int8)
    status = function(ctypes.byref(context), ctypes.byref(params), ctypes.byref(in_dims), p8(x),
                      ctypes.byref(filter_dims), ctypes.byref(out_dims), p8(out))
    return status, out


@pytest.mark.parametrize("clamped", [False, True])
@pytest.mark.parametrize("name", sorted(POOLS))
def test_max_pool(lib, name, clamped):
    spec = POOLS[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    x = levels(rng, *spec[:4])
    act = (-20, 90) if clamped else (-128, 127)
    expected = np.clip(nhwc(ref.max_pool(nchw(x), spec[4], spec[5], spec[6])), *act)
    status, out = run_pool(lib, lib.arm_max_pool_s8, spec, x, act, Context(None, 0))
    assert status == SUCCESS
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("clamped", [False, True])
@pytest.mark.parametrize("name", sorted(POOLS))
def test_avgpool(lib, name, clamped):
    spec = POOLS[name]
    rng = np.random.default_rng(100 + sum(map(ord, name)))
    x = levels(rng, *spec[:4])
    act = (-20, 30) if clamped else (-128, 127)
    expected = np.clip(nhwc(ref.avg_pool(nchw(x), spec[4], spec[5], spec[6])), *act)
    _, _, _, out_dims = pool_structs(spec, act)
    size = lib.arm_avgpool_s8_get_buffer_size(out_dims.w, spec[3])
    assert size == 4 * spec[3]
    scratch = Scratch(size)
    status, out = run_pool(lib, lib.arm_avgpool_s8, spec, x, act, scratch.context)
    assert status == SUCCESS
    np.testing.assert_array_equal(out, expected)
    assert scratch.used() and scratch.guards_intact()


def test_avgpool_rounds_half_away_from_zero(lib):
    """Window sums chosen so that the averages end in exactly .5, both signs."""
    spec = (1, 2, 2, 4, (2, 2), (1, 1), (0, 0, 0, 0))
    x = np.array([[[[1, -1, 5, -5], [0, 0, 0, 0]], [[1, -1, 0, 0], [0, 0, 1, -1]]]], np.int8)  # sums 2, -2, 6, -6
    scratch = Scratch(16)
    status, out = run_pool(lib, lib.arm_avgpool_s8, spec, x, (-128, 127), scratch.context)
    assert status == SUCCESS
    np.testing.assert_array_equal(out.ravel(), [1, -1, 2, -2])  # 0.5, -0.5, 1.5, -1.5
    np.testing.assert_array_equal(out, nhwc(ref.avg_pool(nchw(x), (2, 2), (1, 1), (0, 0, 0, 0))))


# ----------------------------------------------------------------------------- softmax


@pytest.mark.parametrize("rows,row_size,input_scale", SOFTMAX_CASES)
def test_softmax(lib, rows, row_size, input_scale):
    x = softmax_rows(rows, row_size)
    mult, shift, diff_min = ref.softmax_parameters(input_scale)
    out = np.zeros_like(x)
    lib.arm_softmax_s8(p8(x), rows, row_size, mult, shift, diff_min, p8(out))
    np.testing.assert_array_equal(out, ref.softmax_s8(x, input_scale))


def test_softmax_every_difference(lib):
    """Rows [127, v, random] for every level v over a range of input scales: every input
    difference to the row maximum, with sums of two and three terms."""
    rng = np.random.default_rng(42)
    for input_scale in SOFTMAX_EVERY_DIFFERENCE_SCALES:
        x = every_difference_rows(rng)
        mult, shift, diff_min = ref.softmax_parameters(input_scale)
        out = np.zeros_like(x)
        lib.arm_softmax_s8(p8(x), x.shape[0], x.shape[1], mult, shift, diff_min, p8(out))
        np.testing.assert_array_equal(out, ref.softmax_s8(x, input_scale), err_msg=f"input scale {input_scale}")


def test_softmax_below_diff_min(lib):
    """Large input scale: most entries fall below diff_min and give -128."""
    input_scale = 4.0
    mult, shift, diff_min = ref.softmax_parameters(input_scale)
    assert -20 < diff_min < 0
    x = np.array([[100, 99, 90, 50, -128, 100, 97]], np.int8)
    out = np.zeros_like(x)
    lib.arm_softmax_s8(p8(x), 1, x.shape[1], mult, shift, diff_min, p8(out))
    np.testing.assert_array_equal(out, ref.softmax_s8(x, input_scale))
    assert out[0, 4] == -128 and out[0, 3] == -128


def test_softmax_invalid_shift_writes_nothing(lib):
    x = np.zeros((1, 4), np.int8)
    out = np.full_like(x, 7)
    lib.arm_softmax_s8(p8(x), 1, 4, 1 << 30, -1, -100, p8(out))
    assert (out == 7).all()


# ----------------------------------------------------------------------------- elementwise


@pytest.mark.parametrize("activation", [None, "relu", "clip"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_elementwise_add(lib, seed, activation):
    case = add_reference_case(seed, activation)
    a, b, out = case["a"], case["b"], np.zeros(case["a"].size, np.int8)
    status = lib.arm_elementwise_add_s8(p8(a), p8(b), -case["a_type"][1], case["a_mult"], case["a_shift"],
                                        -case["b_type"][1], case["b_mult"], case["b_shift"], ref.ADD_LEFT_SHIFT,
                                        p8(out), case["out_type"][1], case["out_mult"], case["out_shift"],
                                        case["low"], case["high"], a.size)
    assert status == SUCCESS
    np.testing.assert_array_equal(out, case["expected"])
    assert_spread(out)


@pytest.mark.parametrize("clamped", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_elementwise_mul(lib, seed, clamped):
    case = mul_reference_case(seed, clamped)
    a, b, out = case["a"], case["b"], np.zeros(case["a"].size, np.int8)
    status = lib.arm_elementwise_mul_s8(p8(a), p8(b), -case["a_type"][1], -case["b_type"][1], p8(out),
                                        case["out_type"][1], case["mult"], case["shift"], case["low"], case["high"],
                                        a.size)
    assert status == SUCCESS
    np.testing.assert_array_equal(out, case["expected"])
    assert_spread(out)


# ----------------------------------------------------------------------------- scratch-size rules


def conv_size(lib, kernel, cin, filter_c, pads=(0, 0), stride=(1, 1), dilation=(1, 1), hw=(8, 8)):
    params = ConvParams(0, 0, Tile(stride[1], stride[0]), Tile(pads[1], pads[0]), Tile(dilation[1], dilation[0]),
                        Activation(-128, 127))
    return lib.arm_convolve_wrapper_s8_get_buffer_size(ctypes.byref(params), ctypes.byref(Dims(1, *hw, cin)),
                                                       ctypes.byref(Dims(4, *kernel, filter_c)),
                                                       ctypes.byref(Dims(1, *hw, 4)))


def test_convolve_buffer_size_rule(lib):
    # 1x1, padding 0, dilation 1, not grouped: no scratch, whatever the stride
    assert conv_size(lib, (1, 1), 8, 8) == 0
    assert conv_size(lib, (1, 1), 8, 8, stride=(2, 2)) == 0
    # otherwise 2 * align4(KH * KW * C_IN) * sizeof(int16)
    assert conv_size(lib, (3, 3), 3, 3, pads=(1, 1)) == 2 * 28 * 2
    assert conv_size(lib, (3, 3), 8, 8) == 2 * 72 * 2
    assert conv_size(lib, (1, 1), 8, 8, pads=(1, 0)) == 2 * 8 * 2
    assert conv_size(lib, (1, 1), 8, 8, dilation=(2, 2)) == 2 * 8 * 2
    assert conv_size(lib, (1, 3), 4, 4, hw=(1, 16)) == 2 * 12 * 2  # the 1xN path has the same DSP size
    assert conv_size(lib, (2, 3), 5, 5) == 2 * 32 * 2
    # grouped: C_IN is the input's channel count (over-estimates like the library); grouped 1x1 uses im2col
    assert conv_size(lib, (3, 3), 8, 4) == 2 * 72 * 2
    assert conv_size(lib, (1, 1), 6, 2) == 2 * 8 * 2


def dw_size(lib, kernel, cin, cout, pads=(0, 0), dilation=(1, 1), batches=1):
    params = DwConvParams(0, 0, cout // cin, Tile(1, 1), Tile(pads[1], pads[0]), Tile(dilation[1], dilation[0]),
                          Activation(-128, 127))
    return lib.arm_depthwise_conv_wrapper_s8_get_buffer_size(ctypes.byref(params),
                                                             ctypes.byref(Dims(batches, 8, 8, cin)),
                                                             ctypes.byref(Dims(1, *kernel, cout)),
                                                             ctypes.byref(Dims(batches, 8, 8, cout)))


def test_depthwise_buffer_size_rule(lib):
    assert dw_size(lib, (3, 3), 8, 8, pads=(1, 1)) == 0  # 3x3, padding <= 1
    assert dw_size(lib, (3, 3), 8, 8, pads=(0, 1)) == 0
    assert dw_size(lib, (3, 3), 8, 8, pads=(2, 1)) == 8 * 9 * 2  # otherwise C_IN * KH * KW * sizeof(int16)
    assert dw_size(lib, (5, 5), 8, 8, pads=(2, 2)) == 8 * 25 * 2
    assert dw_size(lib, (2, 3), 3, 3) == 3 * 6 * 2
    assert dw_size(lib, (3, 3), 4, 8, pads=(1, 1)) == 0  # ch_mult != 1: generic kernel, no scratch
    assert dw_size(lib, (5, 5), 4, 8) == 0
    assert dw_size(lib, (5, 5), 8, 8, dilation=(2, 2)) == 0  # dilation: generic kernel
    assert dw_size(lib, (5, 5), 8, 8, batches=2) == 0


def test_other_buffer_size_rules(lib):
    assert lib.arm_avgpool_s8_get_buffer_size(13, 10) == 40
    assert lib.arm_avgpool_s8_get_buffer_size(1, 3) == 12
    assert lib.arm_fully_connected_s8_get_buffer_size(ctypes.byref(Dims(100, 1, 1, 10))) == 0


@pytest.mark.parametrize("depthwise,name", [(False, "3x3_pad1"), (False, "grouped3_1x1"), (True, "5x5_pad2")])
def test_scratch_is_required(lib, depthwise, name):
    """The general paths refuse a missing or short buffer and work with exactly the planned size."""
    geometry = (DEPTHWISE if depthwise else CONVOLUTIONS)[name]
    case = conv_case(5, geometry, depthwise)
    _, _, size, _ = run_conv(lib, geometry, case, depthwise, Scratch(None))
    assert size > 0
    assert run_conv(lib, geometry, case, depthwise, Scratch(None))[0] == ARG_ERROR
    assert run_conv(lib, geometry, case, depthwise, Scratch(size, claimed=size - 1))[0] == ARG_ERROR
    scratch = Scratch(size, claimed=size)
    status, out, _, _ = run_conv(lib, geometry, case, depthwise, scratch)
    assert status == SUCCESS and scratch.used() and scratch.guards_intact()
    np.testing.assert_array_equal(out, case["expected"])


@pytest.mark.parametrize("depthwise,name", [(False, "1x1"), (False, "1x1_stride2"), (True, "3x3_pad1"),
                                            (True, "ch_mult2"), (True, "dilation2")])
def test_no_scratch_paths(lib, depthwise, name):
    geometry = (DEPTHWISE if depthwise else CONVOLUTIONS)[name]
    case = conv_case(6, geometry, depthwise)
    status, out, size, _ = run_conv(lib, geometry, case, depthwise, Scratch(None))
    assert size == 0 and status == SUCCESS
    np.testing.assert_array_equal(out, case["expected"])


def test_avgpool_scratch_is_required(lib):
    spec = POOLS["3x3_stride1_pad1"]
    x = levels(np.random.default_rng(3), *spec[:4])
    assert run_pool(lib, lib.arm_avgpool_s8, spec, x, (-128, 127), Context(None, 0))[0] == ARG_ERROR
    assert run_pool(lib, lib.arm_avgpool_s8, spec, x, (-128, 127), Scratch(12, claimed=11).context)[0] == ARG_ERROR
    scratch = Scratch(12, claimed=12)
    assert run_pool(lib, lib.arm_avgpool_s8, spec, x, (-128, 127), scratch.context)[0] == SUCCESS
    assert scratch.used() and scratch.guards_intact()


# ----------------------------------------------------------------------------- argument validation


@pytest.mark.parametrize("override", [
    {"filter_dims.n": 4},  # filter n != C_OUT
    {"filter_dims.c": 5},  # C_IN not a multiple of the filter's channels
    {"out_dims.n": 2},
    {"out_dims.h": 3},  # output smaller than the geometry gives
    {"stride": Tile(0, 1)},
    {"dilation": Tile(1, 0)},
    {"padding": Tile(-1, 0)},
    {"activation": Activation(10, 5)},
    {"activation": Activation(-129, 127)},
    {"input_offset": -128},
    {"output_offset": 128},
])
def test_convolve_rejects(lib, override):
    geometry = CONVOLUTIONS["3x3_pad1"]
    case = conv_case(9, geometry, depthwise=False)
    size = 4096
    assert run_conv(lib, geometry, case, False, Scratch(size), **override)[0] == ARG_ERROR


def test_convolve_rejects_grouping_and_shift(lib):
    geometry = CONVOLUTIONS["grouped2"]  # C_IN 8, filter C 4: 2 groups
    case = conv_case(9, geometry, depthwise=False)
    case_odd = dict(case, kernel=np.zeros((5, 3, 3, 4), np.int8), mult=np.full(5, 1 << 30, np.int32),
                    shift=np.zeros(5, np.int32), bias=None)
    # C_OUT 5 not a multiple of the 2 groups
    assert run_conv(lib, geometry, case_odd, False, Scratch(4096), **{"filter_dims.n": 5, "out_dims.c": 5})[0] \
        == ARG_ERROR
    bad_shift = dict(case, shift=np.full_like(case["shift"], 31))
    assert run_conv(lib, geometry, bad_shift, False, Scratch(4096))[0] == ARG_ERROR


@pytest.mark.parametrize("override", [
    {"in_dims.n": 2, "out_dims.n": 2},  # batch != 1
    {"ch_mult": 1},  # C_OUT != C_IN * ch_mult
    {"filter_dims.c": 4},
    {"filter_dims.n": 2},
])
def test_depthwise_rejects(lib, override):
    geometry = DEPTHWISE["ch_mult2"]
    case = conv_case(9, geometry, depthwise=True)
    assert run_conv(lib, geometry, case, True, Scratch(4096), **override)[0] == ARG_ERROR


def test_fully_connected_rejects(lib):
    case = fc_case(3, FULLY_CONNECTED["batch3"])
    in_dims, filter_dims, bias_dims, out_dims = case["dims"]
    assert run_fc(lib, dict(case, dims=(in_dims, Dims(16, 1, 1, 7), bias_dims, out_dims)))[0] == ARG_ERROR
    assert run_fc(lib, dict(case, dims=(in_dims, Dims(17, 1, 1, 6), bias_dims, out_dims)))[0] == ARG_ERROR
    assert run_fc(lib, dict(case, dims=(in_dims, filter_dims, bias_dims, Dims(2, 1, 1, 7))))[0] == ARG_ERROR
    bad_quant = dict(case, quant=PerTensorQuant(1 << 30, -32))
    assert run_fc(lib, bad_quant)[0] == ARG_ERROR
    # the context pointer itself is required (the library dereferences it)
    out = np.zeros((3, 7), np.int8)
    status = lib.arm_fully_connected_s8(None, ctypes.byref(case["params"]), ctypes.byref(case["quant"]),
                                        ctypes.byref(in_dims), p8(case["x"]), ctypes.byref(filter_dims),
                                        p8(case["weights"]), ctypes.byref(bias_dims), p32(case["bias"]),
                                        ctypes.byref(out_dims), p8(out))
    assert status == ARG_ERROR


def test_pools_reject(lib):
    x = levels(np.random.default_rng(0), 1, 4, 4, 2)
    # a window entirely in the padding: in 4, kernel 2, stride 2, padding 2 -> output 3, first window empty
    spec = (1, 4, 4, 2, (2, 2), (2, 2), (2, 2, 0, 0))
    assert run_pool(lib, lib.arm_max_pool_s8, spec, x, (-128, 127), Context(None, 0))[0] == ARG_ERROR
    assert run_pool(lib, lib.arm_avgpool_s8, spec, x, (-128, 127), Scratch(8).context)[0] == ARG_ERROR
    spec = (1, 4, 4, 2, (2, 2), (2, 2), (0, 0, 0, 0))
    assert run_pool(lib, lib.arm_max_pool_s8, spec, x, (5, 4), Context(None, 0))[0] == ARG_ERROR
    params, in_dims, filter_dims, out_dims = pool_structs(spec, (-128, 127))
    out = np.zeros(32, np.int8)
    out_dims.c = 3  # channels must be preserved
    assert lib.arm_max_pool_s8(None, ctypes.byref(params), ctypes.byref(in_dims), p8(x), ctypes.byref(filter_dims),
                               ctypes.byref(out_dims), p8(out)) == ARG_ERROR


def test_elementwise_reject(lib):
    a = np.zeros(4, np.int8)
    out = np.zeros(4, np.int8)
    m = 1 << 30
    add = lib.arm_elementwise_add_s8
    assert add(p8(a), p8(a), 0, m, -1, 0, m, -1, 20, p8(out), 0, m, -20, -128, 127, 4) == SUCCESS
    assert add(p8(a), p8(a), 0, m, -1, 0, m, -1, 24, p8(out), 0, m, -20, -128, 127, 4) == ARG_ERROR  # left shift
    assert add(p8(a), p8(a), 0, m, -1, 0, m, -1, 20, p8(out), 0, m, -32, -128, 127, 4) == ARG_ERROR  # shift
    assert add(p8(a), p8(a), 0, m, -1, 0, m, -1, 20, p8(out), 0, m, -20, -128, 127, -1) == ARG_ERROR  # size
    assert add(p8(a), p8(a), 0, m, -1, 0, m, -1, 20, p8(out), 0, m, -20, 0, -1, 4) == ARG_ERROR  # activation
    mul = lib.arm_elementwise_mul_s8
    assert mul(p8(a), p8(a), 0, 0, p8(out), 0, m, -5, -128, 127, 4) == SUCCESS
    assert mul(p8(a), p8(a), 0, 0, p8(out), 128, m, -5, -128, 127, 4) == ARG_ERROR  # output offset
    assert mul(p8(a), p8(a), -128, 0, p8(out), 0, m, -5, -128, 127, 4) == ARG_ERROR  # input offset
    assert mul(None, p8(a), 0, 0, p8(out), 0, m, -5, -128, 127, 4) == ARG_ERROR


# ----------------------------------------------------------------------------- the real library's softmax

ARM_SOFTMAX_OUTPUTS = os.path.join(CMSIS_DIR, "arm_softmax_s8_outputs.json")


def arm_softmax_rows() -> list[dict]:
    with open(ARM_SOFTMAX_OUTPUTS) as f:
        return json.load(f)["rows"]


def int8_hex(text: str) -> np.ndarray:
    return np.frombuffer(bytes.fromhex(text), np.int8).copy()


@pytest.mark.parametrize("row", arm_softmax_rows(), ids=lambda r: r["row"])
def test_softmax_equals_the_real_library(lib, row):
    """The stand-in against the outputs of Arm's own arm_softmax_s8 built for the Cortex-M7
    (GCC) and run under QEMU, including the long rows whose exponent sum reaches 2^28, where
    the library's final shift is by 32 bits or more (undefined in C; -127 on the M7)."""
    x = int8_hex(row["input"])
    out = np.zeros_like(x)
    lib.arm_softmax_s8(p8(x), 1, x.size, row["mult"], row["shift"], row["diff_min"], p8(out))
    np.testing.assert_array_equal(out, int8_hex(row["output"]))


def test_the_real_library_differs_from_tflite_on_long_tied_rows():
    """What the table shows, and why glowmlir keeps its own kernel for rows of 512 or more
    (backends/cmsis_nn/library.py): 1,000 equal entries are each 1/1,000, i.e. 0.256 output levels,
    which TFLite's arithmetic (and our kernel) round to -128; the library gives -127."""
    row = next(r for r in arm_softmax_rows() if r["row"] == "1000 equal")
    library = int8_hex(row["output"])
    assert (library == -127).all()
    assert (ref.softmax_s8(int8_hex(row["input"])[None], 0.1) == -128).all()


# ----------------------------------------------------------------------------- the real library, every function

CMSIS_NN_OUTPUTS = os.path.join(CMSIS_DIR, "cmsis_nn_outputs.json")
"""What Arm's CMSIS-NN returned (bench/cmsis_nn_outputs.py): its DSP build on the M4 and its
Helium build on the M55, every function the stand-ins replace, with their buffer sizes."""


def real_cases() -> list[dict]:
    with open(CMSIS_NN_OUTPUTS) as f:
        return json.load(f)["cases"]


def helium_kernel_sums(case: dict) -> np.ndarray:
    """What the Helium build's arm_fully_connected_s8 reads from its context: per output row,
    bias + input_offset x the sum of the row's weights (CMSIS-NN's arm_vector_sum_s8, from its
    documentation: "the sum of each row ..., multiply by lhs_offset and optionally add bias")."""
    depth, columns = case["filter_dims"][0], case["output_dims"][3]
    weights = np.array(case["filter"], np.int64).reshape(columns, depth)
    return (np.array(case["bias"], np.int64) + case["input_offset"] * weights.sum(axis=1)).astype(np.int32)


def run_standin(so, case: dict, kernel_sums: np.ndarray | None = None) -> tuple[int, int, np.ndarray]:
    """The stand-in's buffer size, status and output for one recorded case, its scratch the
    size its own getter asks for (or, for a Helium fully connected, the kernel sums)."""
    f, i8 = case["function"], np.int8
    out = np.full(int(np.prod(case.get("output_dims", [case.get("size") or 60]))), 0x55, np.uint8).view(i8)
    dims = {key: Dims(*case[key]) for key in ("input_dims", "filter_dims", "output_dims") if key in case}
    if "input" in case:
        x = np.array(case["input"], i8)
    if f in ("arm_convolve_wrapper_s8", "arm_depthwise_conv_wrapper_s8"):
        (sh, sw), (ph, pw), (dh, dw), (low, high) = (case["stride"], case["padding"], case["dilation"],
                                                      case["activation"])
        window = (Tile(sw, sh), Tile(pw, ph), Tile(dw, dh), Activation(low, high))
        params = (DwConvParams(case["input_offset"], case["output_offset"], case["ch_mult"], *window)
                  if f == "arm_depthwise_conv_wrapper_s8" else
                  ConvParams(case["input_offset"], case["output_offset"], *window))
        size = getattr(so, f + "_get_buffer_size")(params, dims["input_dims"], dims["filter_dims"],
                                                   dims["output_dims"])
        scratch = Scratch(size if size > 0 else None)
        mult, shift = np.array(case["multipliers"], np.int32), np.array(case["shifts"], np.int32)
        w, bias = np.array(case["filter"], i8), np.array(case["bias"], np.int32)
        status = getattr(so, f)(scratch.context, params, PerChannelQuant(p32(mult), p32(shift)), dims["input_dims"],
                                p8(x), dims["filter_dims"], p8(w), Dims(1, 1, 1, bias.size), p32(bias),
                                dims["output_dims"], p8(out))
    elif f == "arm_fully_connected_s8":
        size = so.arm_fully_connected_s8_get_buffer_size(dims["filter_dims"])
        sums = kernel_sums if size > 0 else None
        context = Context(None if sums is None else sums.ctypes.data, 0 if sums is None else sums.nbytes)
        w, bias = np.array(case["filter"], i8), np.array(case["bias"], np.int32)
        params = FcParams(case["input_offset"], 0, case["output_offset"], Activation(*case["activation"]))
        status = so.arm_fully_connected_s8(context, params, PerTensorQuant(case["multiplier"], case["shift"]),
                                           dims["input_dims"], p8(x), dims["filter_dims"], p8(w),
                                           Dims(1, 1, 1, bias.size), p32(bias), dims["output_dims"], p8(out))
    elif f in ("arm_max_pool_s8", "arm_avgpool_s8"):
        (sh, sw), (ph, pw) = case["stride"], case["padding"]
        size = (so.arm_avgpool_s8_get_buffer_size(case["output_dims"][2], case["input_dims"][3])
                if f == "arm_avgpool_s8" else 0)
        scratch = Scratch(size if size > 0 else None)
        params = PoolParams(Tile(sw, sh), Tile(pw, ph), Activation(*case["activation"]))
        status = getattr(so, f)(scratch.context, params, dims["input_dims"], p8(x), dims["filter_dims"],
                                dims["output_dims"], p8(out))
    elif f == "arm_softmax_s8":
        size, status = 0, 0
        so.arm_softmax_s8(p8(x), case["rows"], case["row_size"], case["mult"], case["shift"], case["diff_min"],
                          p8(out))
    else:
        a, b = np.array(case["input_1"], i8), np.array(case["input_2"], i8)
        size, (low, high) = 0, case["activation"]
        if f == "arm_elementwise_add_s8":
            status = so.arm_elementwise_add_s8(
                p8(a), p8(b), case["input_1_offset"], case["input_1_mult"], case["input_1_shift"],
                case["input_2_offset"], case["input_2_mult"], case["input_2_shift"], case["left_shift"], p8(out),
                case["output_offset"], case["output_mult"], case["output_shift"], low, high, case["size"])
        else:
            status = so.arm_elementwise_mul_s8(p8(a), p8(b), case["input_1_offset"], case["input_2_offset"], p8(out),
                                               case["output_offset"], case["output_mult"], case["output_shift"],
                                               low, high, case["size"])
    return size, status, out


def test_the_table_is_of_both_builds():
    with open(CMSIS_NN_OUTPUTS) as f:
        table = json.load(f)
    assert table["cmsis_nn"]["commit"] == "99f736a63036613032f9b70de36b493bcd7802d4"
    assert "-mcpu=cortex-m4" in table["builds"]["dsp"]["flags"]
    assert "-mcpu=cortex-m55" in table["builds"]["mve"]["flags"]
    functions = {case["function"] for case in table["cases"]}
    assert functions == {"arm_convolve_wrapper_s8", "arm_depthwise_conv_wrapper_s8", "arm_fully_connected_s8",
                         "arm_max_pool_s8", "arm_avgpool_s8", "arm_softmax_s8", "arm_elementwise_add_s8",
                         "arm_elementwise_mul_s8"}


@pytest.mark.parametrize("build", ["dsp", "mve"])
@pytest.mark.parametrize("case", real_cases(), ids=lambda c: c["name"])
def test_standins_equal_the_real_library(lib, helium_lib, case, build):
    """Buffer size, status and output bytes of the stand-in (compiled as the DSP build, or
    with ARM_MATH_MVEI as the Helium build) against the real library's build on its board."""
    real = case["real"][build]
    sums = None
    if "sums" in real:  # the Helium fully connected: the sums the library computed, as we derive them
        sums = helium_kernel_sums(case)
        np.testing.assert_array_equal(np.frombuffer(bytes.fromhex(real["sums"]), "<i4"), sums)
    size, status, out = run_standin(helium_lib if build == "mve" else lib, case, sums)
    assert (size, status) == (real["size"], real["status"])
    np.testing.assert_array_equal(out, int8_hex(real["output"]))
    assert len(set(out.tolist())) > 3, "a case whose outputs are all alike tells little"
