"""Our host stand-ins of the HiFi 4 NN library (xa_nnlib) int8 functions
(tests/support/hifi4/standins.c) against the independent numpy reference of TFLite's int8
arithmetic (tests/support/int8_reference.py), bit for bit, plus the scratch-size rules of
the *_getsize functions, the scratch use of the kernels and their argument checks.

The stand-ins work in NHWC / OHWI / [KH, KW, C_OUT] / [out_depth][weight_depth] without a
batch dimension; the reference in NCHW / OIHW / FullyConnected [depth, C_OUT]: the tests
transpose. Multipliers and shifts are derived from the scales exactly as the reference
derives them. Arguments are built as ordered dicts in the exact order of the documented
parameter lists (tests/support/hifi4/xa_nnlib_kernels_api.h), so that a test can override
one argument by name.
"""

from __future__ import annotations

import json
import os
import shutil
from ctypes import c_int, c_int32, c_void_p

import numpy as np
import pytest

from tests.support import int8_reference as ref
from tests.support.c_library import (
    ARM_GCC,
    CORTEX_M7_FLAGS,
    P8,
    P32,
    SENTINEL,
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
    out_size,
    p8,
    p32,
    run_compiler,
    softmax_rows,
)

HIFI4_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support", "hifi4")
HEADER = os.path.join(HIFI4_DIR, "xa_nnlib_kernels_api.h")
SOURCE = os.path.join(HIFI4_DIR, "standins.c")

OK, BAD = 0, -1
PREC_8, PREC_ASYM8S, PREC_SYM8S, PREC_16, PREC_ASYM8U = 8, -4, -5, 16, -3

# ----------------------------------------------------------------------------- the library

SIGNATURES = {
    # name: argument types in the documented order (restype WORD32 / int for all)
    "xa_nn_conv2d_std_per_chan_sym8sxasym8s": [P8, P8, P8, P32, *[c_int32] * 13, P32, P32, c_int32, c_int32,
                                               c_void_p],
    "xa_nn_conv2d_std_getsize": [c_int32] * 18,
    "xa_nn_conv2d_depthwise_per_chan_sym8sxasym8s": [P8, P8, P8, P32, *[c_int32] * 13, P32, P32, c_int32, c_int32,
                                                     c_int32, c_void_p],
    "xa_nn_conv2d_depthwise_getsize": [c_int32] * 14,
    "xa_nn_fully_connected_sym8sxasym8s_asym8s": [P8, P8, P8, P32, *[c_int32] * 6],
    "xa_nn_maxpool_8": [P8, P8, *[c_int32] * 13, c_void_p],
    "xa_nn_avgpool_8": [P8, P8, *[c_int32] * 13, c_void_p],
    "xa_nn_maxpool_getsize": [c_int32] * 15,
    "xa_nn_avgpool_getsize": [c_int32] * 15,
    "xa_nn_vec_activation_min_max_8_8": [P8, P8, c_int, c_int, c_int32],
    "xa_nn_vec_softmax_asym8s_asym8s": [P8, P8, *[c_int32] * 4, c_void_p],
    "get_softmax_scratch_size": [c_int, c_int, c_int],
    "xa_nn_elm_add_asym8sxasym8s_asym8s": [P8, *[c_int32] * 5, P8, c_int32, c_int32, c_int32, P8, c_int32, c_int32,
                                           c_int32, c_int32, c_int32],
    "xa_nn_elm_mul_asym8sxasym8s_asym8s": [P8, *[c_int32] * 5, P8, c_int32, P8, c_int32, c_int32],
}


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    so = build_library(SOURCE, HIFI4_DIR, tmp_path_factory.mktemp("hifi4_standins"), "hifi4_standins")
    for name, argtypes in SIGNATURES.items():
        function = getattr(so, name)
        function.argtypes = argtypes
        function.restype = c_int if name == "get_softmax_scratch_size" else c_int32
    return so


def test_header_declares_the_documented_prototypes(tmp_path):
    """The header compiles on its own (C and C++), and every prototype agrees with the
    documented parameter list: a redeclaration with the exact types written out must be
    compatible with it."""
    w8, cw8, w32, cw32 = "WORD8 *", "const WORD8 *", "WORD32", "const WORD32 *"
    conv_tail = ", ".join(["WORD32"] * 13)
    redeclarations = [
        f"WORD32 xa_nn_conv2d_std_per_chan_sym8sxasym8s({w8}, {cw8}, {cw8}, {cw32}, {conv_tail}, "
        "WORD32 *, WORD32 *, WORD32, WORD32, VOID *);",
        "WORD32 xa_nn_conv2d_std_getsize(" + ", ".join(["WORD32"] * 18) + ");",
        f"WORD32 xa_nn_conv2d_depthwise_per_chan_sym8sxasym8s(pWORD8, {cw8}, {cw8}, {cw32}, {conv_tail}, "
        "const WORD32 *, const WORD32 *, WORD32, WORD32, WORD32, pVOID);",
        "WORD32 xa_nn_conv2d_depthwise_getsize(" + ", ".join(["WORD32"] * 14) + ");",
        f"WORD32 xa_nn_fully_connected_sym8sxasym8s_asym8s(pWORD8, {cw8}, {cw8}, {cw32}, "
        + ", ".join(["WORD32"] * 6) + ");",
        f"WORD32 xa_nn_maxpool_8({w8}, {cw8}, " + ", ".join(["WORD32"] * 13) + ", VOID *);",
        f"WORD32 xa_nn_avgpool_8({w8}, {cw8}, " + ", ".join(["WORD32"] * 13) + ", VOID *);",
        "WORD32 xa_nn_maxpool_getsize(" + ", ".join(["WORD32"] * 15) + ");",
        "WORD32 xa_nn_avgpool_getsize(" + ", ".join(["WORD32"] * 15) + ");",
        f"WORD32 xa_nn_vec_activation_min_max_8_8({w8}, {cw8}, int, int, {w32});",
        f"WORD32 xa_nn_vec_softmax_asym8s_asym8s({w8}, {cw8}, WORD32, WORD32, WORD32, WORD32, pVOID);",
        "int get_softmax_scratch_size(int, int, int);",
        f"WORD32 xa_nn_elm_add_asym8sxasym8s_asym8s({w8}, WORD32, WORD32, WORD32, WORD32, WORD32, {cw8}, WORD32, "
        f"WORD32, WORD32, {cw8}, WORD32, WORD32, WORD32, WORD32, WORD32);",
        f"WORD32 xa_nn_elm_mul_asym8sxasym8s_asym8s({w8}, WORD32, WORD32, WORD32, WORD32, WORD32, {cw8}, WORD32, "
        f"{cw8}, WORD32, WORD32);",
    ]
    checks = [
        '_Static_assert(sizeof(WORD8) == 1 && sizeof(WORD16) == 2 && sizeof(WORD32) == 4 && sizeof(WORD64) == 8, "");',
        '_Static_assert(PREC_8 == 8 && PREC_16 == 16 && PREC_32 == 32 && PREC_F32 == -1 && PREC_F16 == -2, "");',
        '_Static_assert(PREC_ASYM8U == -3 && PREC_ASYM8S == -4 && PREC_SYM8S == -5 && PREC_ASYM16U == -6, "");',
        '_Static_assert(PREC_ASYM16S == -7 && PREC_SYM16S == -8 && PREC_ASYM32U == -9, "");',
        '_Static_assert(PREC_ASYM32S == -10 && PREC_SYM32S == -11 && PREC_SYM4S == -12, "");',
        '_Static_assert(PREC_ASYM8 == PREC_ASYM8U, "");',
    ]
    source = tmp_path / "decl.c"
    source.write_text('#include "xa_nnlib_kernels_api.h"\n' + "\n".join(redeclarations + checks) + "\n")
    compile_object(source, tmp_path / "decl.o", HIFI4_DIR)
    cxx = shutil.which("c++")
    if cxx is not None:
        source_cc = tmp_path / "decl.cc"
        source_cc.write_text('#include "xa_nnlib_kernels_api.h"\nint main() { return PREC_ASYM8S; }\n')
        run_compiler(cxx, "-Wall", "-Werror", "-I", HIFI4_DIR, "-c", source_cc, "-o", tmp_path / "decl_cc.o")


@pytest.mark.skipif(ARM_GCC is None, reason="needs arm-none-eabi-gcc (scripts/setup.sh)")
def test_standins_compile_for_a_32_bit_target(tmp_path):
    """A 32-bit bare-metal compile (a stand-in for the 32-bit Xtensa target)."""
    compile_object(SOURCE, tmp_path / "standins.o", HIFI4_DIR, ARM_GCC, [*CORTEX_M7_FLAGS, "-O2"])


# ----------------------------------------------------------------------------- helpers


class Scratch(GuardedBuffer):
    """`size` bytes at `misalign` bytes past a multiple of 8 (by default 3: deliberately not
    8-byte aligned), with guard zones before and after, all filled with `fill`."""

    def __init__(self, size: int, misalign: int = 3, fill: int = SENTINEL):
        super().__init__(size, misalign, fill)
        self.pointer = c_void_p(self.address)

    def used(self) -> bool:
        """The last planned byte was written (it lies past the aligned working area, so only
        the clearing reaches it), some bytes hold working data (neither the fill nor the
        clearing's 0), and nothing outside the planned bytes was touched. (That every planned
        byte is written is checked by `test_scratch_fully_written`.)"""
        region = self.region
        return bool(self.last_byte_written() and ((region != self.fill) & (region != 0)).any()
                    and self.guards_intact())


def nchw(x_hwc: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x_hwc.transpose(2, 0, 1)[None])


def hwc(x_nchw: np.ndarray) -> np.ndarray:
    assert x_nchw.shape[0] == 1
    return np.ascontiguousarray(x_nchw[0].transpose(1, 2, 0))


def call(function, args: dict, **overrides) -> int:
    unknown = set(overrides) - set(args)
    assert not unknown, unknown
    return function(*{**args, **overrides}.values())


# ----------------------------------------------------------------------------- convolution

CONVOLUTIONS = {
    # name: (H, W, C_in, C_out, (KH, KW), strides (y, x), pads (t, l, b, r), input zero point)
    "1x1": (5, 6, 8, 12, (1, 1), (1, 1), (0, 0, 0, 0), 7),
    "1x1_stride2": (7, 7, 4, 6, (1, 1), (2, 2), (0, 0, 0, 0), -3),
    "3x3_pad1": (8, 8, 3, 5, (3, 3), (1, 1), (1, 1, 1, 1), 11),
    "3x3_stride2_same": (9, 10, 4, 7, (3, 3), (2, 2), (1, 0, 1, 1), -20),
    "3x3_valid_stride2": (8, 8, 3, 4, (3, 3), (2, 2), (0, 0, 0, 0), 0),
    "non_square": (7, 11, 5, 3, (2, 4), (2, 1), (0, 1, 1, 2), 14),
    "non_square_strides": (9, 8, 3, 4, (3, 2), (1, 3), (2, 0, 1, 1), -7),
    "1xN": (1, 16, 4, 4, (1, 3), (1, 1), (0, 1, 0, 1), -1),
    "input_zp_min": (6, 6, 4, 5, (3, 3), (1, 1), (1, 1, 1, 1), -128),
    "input_zp_max": (6, 6, 4, 5, (3, 3), (1, 1), (1, 1, 1, 1), 127),
}

DEPTHWISE = {
    # name: (H, W, C_in, C_out, (KH, KW), strides (y, x), pads (t, l, b, r), input zero point)
    "3x3_pad1": (7, 8, 6, 6, (3, 3), (1, 1), (1, 1, 1, 1), 4),
    "3x3_stride2": (9, 9, 5, 5, (3, 3), (2, 2), (1, 1, 1, 1), -6),
    "3x3_valid": (6, 6, 3, 3, (3, 3), (1, 1), (0, 0, 0, 0), 0),
    "5x5_pad2": (8, 8, 8, 8, (5, 5), (1, 1), (2, 2, 2, 2), 10),
    "ch_mult2": (7, 7, 4, 8, (3, 3), (1, 1), (1, 1, 1, 1), 3),
    "ch_mult2_stride2": (8, 9, 3, 6, (3, 3), (2, 2), (0, 1, 1, 1), -12),
    "ch_mult3_non_square": (6, 9, 3, 9, (2, 3), (1, 2), (0, 1, 1, 1), -30),
    "one_input_channel_x4": (6, 6, 1, 4, (3, 3), (1, 1), (1, 1, 1, 1), 1),
    "input_zp_min": (5, 5, 4, 4, (4, 2), (1, 1), (1, 0, 2, 1), -128),
}


def conv_case(seed: int, geometry, depthwise: bool, with_bias: bool = True):
    """Random data for a conv (OHWI kernel) or depthwise conv ([KH, KW, C_OUT] kernel) and
    the reference's result (HWC). No activation: the HiFi kernels only clamp to int8."""
    h, w, cin, cout, (kh, kw), strides, pads, x_zp = geometry
    case = conv_reference_case(seed, 1, h, w, cin, cout, (kh, kw), strides, pads, x_zp=x_zp, depthwise=depthwise,
                               with_bias=with_bias)
    oh = out_size(h, kh, strides[0], pads[0], pads[2])
    ow = out_size(w, kw, strides[1], pads[1], pads[3])
    return dict(case, x=case["x"][0], expected=case["expected"][0], out=np.zeros((oh, ow, cout), np.int8))


def conv_args(geometry, case, scratch) -> dict:
    h, w, cin, cout, (kh, kw), strides, pads, _ = geometry
    oh, ow, _ = case["out"].shape
    return dict(p_out=p8(case["out"]), p_inp=p8(case["x"]), p_kernel=p8(case["kernel"]), p_bias=p32(case["bias"]),
                input_height=h, input_width=w, input_channels=cin, kernel_height=kh, kernel_width=kw,
                out_channels=cout, x_stride=strides[1], y_stride=strides[0], x_padding=pads[1], y_padding=pads[0],
                out_height=oh, out_width=ow, input_zero_bias=-case["x_zp"], p_out_multiplier=p32(case["mult"]),
                p_out_shift=p32(case["shift"]), out_zero_bias=case["out_zp"], out_data_format=0, p_scratch=scratch)


def conv_getsize_args(geometry) -> dict:
    h, w, cin, cout, (kh, kw), strides, pads, _ = geometry
    return dict(input_height=h, input_width=w, input_channels=cin, kernel_height=kh, kernel_width=kw,
                kernel_channels=cin, y_stride=strides[0], y_padding=pads[0], x_stride=strides[1], x_padding=pads[1],
                out_height=out_size(h, kh, strides[0], pads[0], pads[2]),
                out_width=out_size(w, kw, strides[1], pads[1], pads[3]), output_channels=cout,
                input_precision=PREC_ASYM8S, kernel_precision=PREC_SYM8S, dilation_height=1, dilation_width=1,
                out_data_format=0)


def depthwise_args(geometry, case, scratch) -> dict:
    h, w, cin, cout, (kh, kw), strides, pads, _ = geometry
    oh, ow, _ = case["out"].shape
    return dict(p_out=p8(case["out"]), p_kernel=p8(case["kernel"]), p_inp=p8(case["x"]), p_bias=p32(case["bias"]),
                input_height=h, input_width=w, input_channels=cin, kernel_height=kh, kernel_width=kw,
                channels_multiplier=cout // cin, x_stride=strides[1], y_stride=strides[0], x_padding=pads[1],
                y_padding=pads[0], out_height=oh, out_width=ow, input_zero_bias=-case["x_zp"],
                p_out_multiplier=p32(case["mult"]), p_out_shift=p32(case["shift"]), out_zero_bias=case["out_zp"],
                inp_data_format=0, out_data_format=0, p_scratch=scratch)


def depthwise_getsize_args(geometry) -> dict:
    h, w, cin, cout, (kh, kw), strides, pads, _ = geometry
    return dict(input_height=h, input_width=w, input_channels=cin, kernel_height=kh, kernel_width=kw,
                channels_multiplier=cout // cin, x_stride=strides[1], y_stride=strides[0], x_padding=pads[1],
                y_padding=pads[0], output_height=out_size(h, kh, strides[0], pads[0], pads[2]),
                output_width=out_size(w, kw, strides[1], pads[1], pads[3]), circ_buf_precision=PREC_ASYM8S,
                inp_data_format=0)


def align8(n: int) -> int:
    return (n + 7) // 8 * 8


@pytest.mark.parametrize("name", sorted(CONVOLUTIONS))
def test_conv2d_std(lib, name):
    geometry = CONVOLUTIONS[name]
    case = conv_case(sum(map(ord, name)), geometry, depthwise=False)
    size = call(lib.xa_nn_conv2d_std_getsize, conv_getsize_args(geometry))
    scratch = Scratch(size)  # not 8-byte aligned: the standard convolution aligns it itself
    status = call(lib.xa_nn_conv2d_std_per_chan_sym8sxasym8s, conv_args(geometry, case, scratch.pointer))
    assert status == OK
    np.testing.assert_array_equal(case["out"], case["expected"])
    assert_spread(case["out"])
    assert scratch.used()


@pytest.mark.parametrize("name", sorted(DEPTHWISE))
def test_conv2d_depthwise(lib, name):
    geometry = DEPTHWISE[name]
    case = conv_case(1000 + sum(map(ord, name)), geometry, depthwise=True)
    size = call(lib.xa_nn_conv2d_depthwise_getsize, depthwise_getsize_args(geometry))
    scratch = Scratch(size, misalign=0)
    status = call(lib.xa_nn_conv2d_depthwise_per_chan_sym8sxasym8s, depthwise_args(geometry, case, scratch.pointer))
    assert status == OK
    np.testing.assert_array_equal(case["out"], case["expected"])
    assert_spread(case["out"])
    assert scratch.used()


@pytest.mark.parametrize("depthwise", [False, True])
def test_conv_without_bias_and_aligned_scratch(lib, depthwise):
    geometry = DEPTHWISE["ch_mult2"] if depthwise else CONVOLUTIONS["3x3_pad1"]
    case = conv_case(77, geometry, depthwise, with_bias=False)
    if depthwise:
        size = call(lib.xa_nn_conv2d_depthwise_getsize, depthwise_getsize_args(geometry))
        scratch = Scratch(size, misalign=0)
        status = call(lib.xa_nn_conv2d_depthwise_per_chan_sym8sxasym8s, depthwise_args(geometry, case,
                                                                                        scratch.pointer))
    else:
        size = call(lib.xa_nn_conv2d_std_getsize, conv_getsize_args(geometry))
        scratch = Scratch(size, misalign=0)
        status = call(lib.xa_nn_conv2d_std_per_chan_sym8sxasym8s, conv_args(geometry, case, scratch.pointer))
    assert status == OK
    np.testing.assert_array_equal(case["out"], case["expected"])
    assert scratch.used()


def test_conv_outputs_saturate(lib):
    """An output scale too small for the accumulators: the outputs saturate to [-128, 127]."""
    geometry = CONVOLUTIONS["3x3_pad1"]
    case = conv_case(5, geometry, depthwise=False)
    case["mult"][:] = (1 << 31) - 1
    case["shift"][:] = 3
    size = call(lib.xa_nn_conv2d_std_getsize, conv_getsize_args(geometry))
    assert call(lib.xa_nn_conv2d_std_per_chan_sym8sxasym8s, conv_args(geometry, case, Scratch(size).pointer)) == OK
    assert case["out"].min() == -128 and case["out"].max() == 127


# ----------------------------------------------------------------------------- fully connected

FULLY_CONNECTED = {
    # name: (weight_depth, out_depth, bias)
    "vector": (40, 10, True),
    "long": (300, 17, True),
    "one_input": (1, 9, True),
    "no_bias": (31, 12, False),
}


def fc_case(seed: int, spec):
    depth, outputs, with_bias = spec
    case = fc_reference_case(seed, 1, depth, outputs, (-128, 128), with_bias=with_bias)
    out = np.zeros(outputs, np.int8)
    weights_t = np.ascontiguousarray(case["weights"].T)  # [out_depth][weight_depth]
    vector = np.ascontiguousarray(case["x"][0])
    bias = case["bias"]
    args = dict(p_out=p8(out), p_weight=p8(weights_t), p_inp=p8(vector), p_bias=p32(bias), weight_depth=depth,
                out_depth=outputs, input_zero_bias=-case["x_type"][1], out_multiplier=case["mult"],
                out_shift=case["shift"], out_zero_bias=case["out_type"][1])
    # the arrays behind the pointers stay referenced by the case
    return dict(args=args, out=out, expected=case["expected"][0], keep=(weights_t, vector, bias))


@pytest.mark.parametrize("name", sorted(FULLY_CONNECTED))
def test_fully_connected(lib, name):
    case = fc_case(sum(map(ord, name)), FULLY_CONNECTED[name])
    assert call(lib.xa_nn_fully_connected_sym8sxasym8s_asym8s, case["args"]) == OK
    np.testing.assert_array_equal(case["out"], case["expected"])
    if case["out"].size >= 10:
        assert len(np.unique(case["out"])) > 4


# ----------------------------------------------------------------------------- pooling

POOLS = {
    # name: (H, W, C, (KH, KW), strides (y, x), pads (t, l, b, r))
    "2x2_stride2": (8, 8, 5, (2, 2), (2, 2), (0, 0, 0, 0)),
    "3x3_stride2_same": (9, 10, 4, (3, 3), (2, 2), (1, 0, 1, 1)),
    "3x3_stride1_pad1": (6, 7, 3, (3, 3), (1, 1), (1, 1, 1, 1)),
    "global": (7, 5, 6, (7, 5), (1, 1), (0, 0, 0, 0)),
    "non_square": (6, 9, 4, (2, 3), (1, 2), (0, 1, 1, 1)),
    "non_square_strides": (9, 7, 2, (3, 2), (3, 1), (1, 0, 1, 1)),
    "valid_remainder": (7, 7, 3, (2, 2), (2, 2), (0, 0, 0, 0)),
}


def pool_args(spec, x, out, scratch) -> dict:
    h, w, c, (kh, kw), strides, pads = spec
    oh, ow, _ = out.shape
    return dict(p_out=p8(out), p_inp=p8(x), input_height=h, input_width=w, input_channels=c, kernel_height=kh,
                kernel_width=kw, x_stride=strides[1], y_stride=strides[0], x_padding=pads[1], y_padding=pads[0],
                out_height=oh, out_width=ow, inp_data_format=0, out_data_format=0, p_scratch=scratch)


def pool_getsize_args(spec, precision: int = PREC_8) -> dict:
    h, w, c, (kh, kw), strides, pads = spec
    return dict(input_channels=c, inp_precision=precision, out_precision=precision, input_height=h, input_width=w,
                kernel_height=kh, kernel_width=kw, x_stride=strides[1], y_stride=strides[0], x_padding=pads[1],
                y_padding=pads[0], out_height=out_size(h, kh, strides[0], pads[0], pads[2]),
                out_width=out_size(w, kw, strides[1], pads[1], pads[3]), inp_data_format=0, out_data_format=0)


def run_pool(lib, kind: str, spec, x, misalign: int = 0):
    h, w, c, (kh, kw), strides, pads = spec
    out = np.zeros((out_size(h, kh, strides[0], pads[0], pads[2]), out_size(w, kw, strides[1], pads[1], pads[3]), c),
                   np.int8)
    getsize = lib.xa_nn_maxpool_getsize if kind == "max" else lib.xa_nn_avgpool_getsize
    size = call(getsize, pool_getsize_args(spec))
    scratch = Scratch(size, misalign)
    function = lib.xa_nn_maxpool_8 if kind == "max" else lib.xa_nn_avgpool_8
    status = call(function, pool_args(spec, x, out, scratch.pointer))
    return status, out, scratch


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("name", sorted(POOLS))
def test_pool(lib, kind, name):
    spec = POOLS[name]
    rng = np.random.default_rng(sum(map(ord, name)) + (0 if kind == "max" else 100))
    x = levels(rng, *spec[:3])
    if kind == "max":
        expected = hwc(ref.max_pool(nchw(x), spec[3], spec[4], spec[5]))
    else:
        expected = hwc(ref.avg_pool(nchw(x), spec[3], spec[4], spec[5]))
    status, out, scratch = run_pool(lib, kind, spec, x)
    assert status == OK
    np.testing.assert_array_equal(out, expected)
    assert scratch.used()


def test_avgpool_rounds_half_away_from_zero(lib):
    """Window sums chosen so that the averages end in exactly .5, both signs."""
    spec = (2, 2, 4, (2, 2), (1, 1), (0, 0, 0, 0))
    x = np.array([[[1, -1, 5, -5], [0, 0, 0, 0]], [[1, -1, 0, 0], [0, 0, 1, -1]]], np.int8)  # sums 2, -2, 6, -6
    status, out, _ = run_pool(lib, "avg", spec, x)
    assert status == OK
    np.testing.assert_array_equal(out.ravel(), [1, -1, 2, -2])  # 0.5, -0.5, 1.5, -1.5
    np.testing.assert_array_equal(out, hwc(ref.avg_pool(nchw(x), (2, 2), (1, 1), (0, 0, 0, 0))))




# ----------------------------------------------------------------------------- activation clamp


def test_activation_min_max(lib):
    rng = np.random.default_rng(3)
    x = levels(rng, 500)
    for low, high in [(-128, 127), (0, 127), (-20, 90), (5, 5), (-128, -100)]:
        out = np.zeros_like(x)
        assert lib.xa_nn_vec_activation_min_max_8_8(p8(out), p8(x), low, high, x.size) == OK
        np.testing.assert_array_equal(out, np.clip(x, low, high))
    in_place = x.copy()  # both pointers are __restrict__ in NNLib: overlapping is refused
    assert lib.xa_nn_vec_activation_min_max_8_8(p8(in_place), p8(in_place), -3, 40, x.size) == BAD
    assert lib.xa_nn_vec_activation_min_max_8_8(p8(in_place[1:]), p8(in_place), -3, 40, x.size - 1) == BAD
    np.testing.assert_array_equal(in_place, x)
    assert lib.xa_nn_vec_activation_min_max_8_8(p8(in_place), p8(in_place), -3, 40, 0) == OK
    # bad arguments
    assert lib.xa_nn_vec_activation_min_max_8_8(p8(out), p8(x), 10, 5, x.size) == BAD
    assert lib.xa_nn_vec_activation_min_max_8_8(p8(out), p8(x), -129, 5, x.size) == BAD
    assert lib.xa_nn_vec_activation_min_max_8_8(p8(out), p8(x), 0, 128, x.size) == BAD
    assert lib.xa_nn_vec_activation_min_max_8_8(p8(out), p8(x), 0, 10, -1) == BAD
    assert lib.xa_nn_vec_activation_min_max_8_8(None, p8(x), 0, 10, x.size) == BAD
    assert lib.xa_nn_vec_activation_min_max_8_8(p8(out), None, 0, 10, x.size) == BAD


# ----------------------------------------------------------------------------- softmax


def run_softmax(lib, x: np.ndarray, input_scale: float, in_place: bool = False) -> np.ndarray:
    """The stand-in over each row of `x` (one call per row), with TFLite's parameters."""
    mult, shift, diff_min = ref.softmax_parameters(input_scale)
    length = x.shape[1]
    size = lib.get_softmax_scratch_size(PREC_ASYM8S, PREC_ASYM8S, length)
    assert size == align8(4 * length)
    out = x.copy() if in_place else np.zeros_like(x)
    for r in range(x.shape[0]):
        row_out = np.ascontiguousarray(out[r])
        row_in = row_out if in_place else np.ascontiguousarray(x[r])
        scratch = Scratch(size, misalign=0)
        status = lib.xa_nn_vec_softmax_asym8s_asym8s(p8(row_out), p8(row_in), diff_min, shift, mult, length,
                                                     scratch.pointer)
        if in_place:  # p_out and p_vec are __restrict__ in NNLib
            assert status == BAD and (row_out == x[r]).all()
            continue
        assert status == OK
        assert scratch.used()
        out[r] = row_out
    return out


@pytest.mark.parametrize("rows,length,input_scale", SOFTMAX_CASES)
def test_softmax(lib, rows, length, input_scale):
    x = softmax_rows(rows, length)
    np.testing.assert_array_equal(run_softmax(lib, x, input_scale), ref.softmax_s8(x, input_scale))


def test_softmax_in_place_is_refused(lib):
    """NNLib declares p_out and p_vec __restrict__: running in place is undefined there."""
    x = levels(np.random.default_rng(8), 3, 50)
    np.testing.assert_array_equal(run_softmax(lib, x, 0.07, in_place=True), x)


def test_softmax_every_difference(lib):
    """Rows [127, v, random] for every level v over a range of input scales: every input
    difference to the row maximum, with sums of two and three terms."""
    rng = np.random.default_rng(42)
    for input_scale in SOFTMAX_EVERY_DIFFERENCE_SCALES:
        x = every_difference_rows(rng)
        np.testing.assert_array_equal(run_softmax(lib, x, input_scale), ref.softmax_s8(x, input_scale),
                                      err_msg=f"input scale {input_scale}")


def test_softmax_below_diff_min(lib):
    """Large input scale: most entries fall below diff_min and give -128."""
    input_scale = 4.0
    _, _, diff_min = ref.softmax_parameters(input_scale)
    assert -20 < diff_min < 0
    x = np.array([[100, 99, 90, 50, -128, 100, 97]], np.int8)
    out = run_softmax(lib, x, input_scale)
    np.testing.assert_array_equal(out, ref.softmax_s8(x, input_scale))
    assert out[0, 4] == -128 and out[0, 3] == -128


def test_softmax_scratch_size_rule_and_rejects(lib):
    assert lib.get_softmax_scratch_size(PREC_ASYM8S, PREC_ASYM8S, 10) == 40
    assert lib.get_softmax_scratch_size(PREC_ASYM8S, PREC_ASYM8S, 1) == 8
    assert lib.get_softmax_scratch_size(PREC_ASYM8S, PREC_ASYM8S, 0) == BAD
    assert lib.get_softmax_scratch_size(PREC_SYM8S, PREC_ASYM8S, 10) == BAD
    x = levels(np.random.default_rng(0), 10)
    out = np.full_like(x, 7)
    mult, shift, diff_min = ref.softmax_parameters(0.1)
    scratch = Scratch(40, misalign=0)
    softmax = lib.xa_nn_vec_softmax_asym8s_asym8s
    assert softmax(p8(out), p8(x), diff_min, shift, mult, 10, None) == BAD  # scratch required
    assert softmax(p8(out), p8(x), diff_min, -1, mult, 10, scratch.pointer) == BAD
    assert softmax(p8(out), p8(x), diff_min, 31, mult, 10, scratch.pointer) == BAD
    assert softmax(p8(out), p8(x), diff_min, shift, -mult, 10, scratch.pointer) == BAD
    assert softmax(p8(out), p8(x), 1, shift, mult, 10, scratch.pointer) == BAD
    assert softmax(p8(out), p8(x), diff_min, shift, mult, 0, scratch.pointer) == BAD
    assert softmax(None, p8(x), diff_min, shift, mult, 10, scratch.pointer) == BAD
    assert softmax(p8(out), None, diff_min, shift, mult, 10, scratch.pointer) == BAD
    assert (out == 7).all() and (scratch.memory == SENTINEL).all()
    assert softmax(p8(out), p8(x), diff_min, shift, mult, 10, scratch.pointer) == OK
    assert scratch.used()


# ----------------------------------------------------------------------------- elementwise


def add_case(seed: int, activation: str | None = None, size: int = 257):
    case = add_reference_case(seed, activation, size)
    a, b, out_type = case["a"], case["b"], case["out_type"]
    assert case["a_shift"] <= 0 and case["b_shift"] <= 0 and case["out_shift"] <= 0
    out = np.zeros(size, np.int8)
    args = dict(p_out=p8(out), out_zero_bias=out_type[1], out_left_shift=case["out_shift"],
                out_multiplier=case["out_mult"], out_activation_min=case["low"], out_activation_max=case["high"],
                p_inp1=p8(a), inp1_zero_bias=-case["a_type"][1], inp1_left_shift=case["a_shift"],
                inp1_multiplier=case["a_mult"], p_inp2=p8(b), inp2_zero_bias=-case["b_type"][1],
                inp2_left_shift=case["b_shift"], inp2_multiplier=case["b_mult"], left_shift=ref.ADD_LEFT_SHIFT,
                num_elm=size)
    return dict(args=args, out=out, expected=case["expected"], a=a, b=b)


@pytest.mark.parametrize("activation", [None, "relu", "clip"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_elm_add(lib, seed, activation):
    case = add_case(seed, activation)
    assert call(lib.xa_nn_elm_add_asym8sxasym8s_asym8s, case["args"]) == OK
    np.testing.assert_array_equal(case["out"], case["expected"])
    assert_spread(case["out"])


@pytest.mark.parametrize("operand", ["a", "b"])
def test_elm_add_in_place_is_refused(lib, operand):
    """p_out, p_inp1 and p_inp2 are __restrict__ in NNLib."""
    case = add_case(9)
    before = case[operand].copy()
    assert call(lib.xa_nn_elm_add_asym8sxasym8s_asym8s, case["args"], p_out=p8(case[operand])) == BAD
    np.testing.assert_array_equal(case[operand], before)


def mul_case(seed: int, clamped: bool, size: int = 300):
    case = mul_reference_case(seed, clamped, size)
    a, b = case["a"], case["b"]
    out = np.zeros(size, np.int8)
    args = dict(p_out=p8(out), out_zero_bias=case["out_type"][1], out_shift=case["shift"], out_multiplier=case["mult"],
                out_activation_min=case["low"], out_activation_max=case["high"], p_inp1=p8(a),
                inp1_zero_bias=-case["a_type"][1], p_inp2=p8(b), inp2_zero_bias=-case["b_type"][1], num_elm=size)
    return dict(args=args, out=out, expected=case["expected"], a=a, b=b)


@pytest.mark.parametrize("clamped", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_elm_mul(lib, seed, clamped):
    case = mul_case(seed, clamped)
    assert call(lib.xa_nn_elm_mul_asym8sxasym8s_asym8s, case["args"]) == OK
    np.testing.assert_array_equal(case["out"], case["expected"])
    assert_spread(case["out"])
    for operand in ("a", "b"):  # in place is refused: p_out, p_inp1 and p_inp2 are __restrict__ in NNLib
        before = case[operand].copy()
        assert call(lib.xa_nn_elm_mul_asym8sxasym8s_asym8s, case["args"], p_out=p8(case[operand])) == BAD
        np.testing.assert_array_equal(case[operand], before)


# ----------------------------------------------------------------------------- scratch rules


@pytest.mark.parametrize("kind", ["std", "depthwise", "max", "avg"])
def test_scratch_is_required(lib, kind):
    """A NULL scratch is refused before anything is written."""
    if kind in ("std", "depthwise"):
        depthwise = kind == "depthwise"
        geometry = DEPTHWISE["ch_mult2"] if depthwise else CONVOLUTIONS["3x3_pad1"]
        case = conv_case(4, geometry, depthwise)
        case["out"][:] = 7
        function = lib.xa_nn_conv2d_depthwise_per_chan_sym8sxasym8s if depthwise else \
            lib.xa_nn_conv2d_std_per_chan_sym8sxasym8s
        args = (depthwise_args if depthwise else conv_args)(geometry, case, None)
        assert call(function, args) == BAD
        assert (case["out"] == 7).all()
    else:
        spec = POOLS["3x3_stride1_pad1"]
        x = levels(np.random.default_rng(1), *spec[:3])
        out = np.full((6, 7, 3), 7, np.int8)
        function = lib.xa_nn_maxpool_8 if kind == "max" else lib.xa_nn_avgpool_8
        assert call(function, pool_args(spec, x, out, None)) == BAD
        assert (out == 7).all()


def run_with_scratch(lib, kind: str, scratch: Scratch) -> int:
    """One kernel call of `kind` with the given scratch (fixed data)."""
    if kind in ("std", "depthwise"):
        depthwise = kind == "depthwise"
        geometry = DEPTHWISE["ch_mult2_stride2"] if depthwise else CONVOLUTIONS["non_square"]
        case = conv_case(11, geometry, depthwise)
        function = lib.xa_nn_conv2d_depthwise_per_chan_sym8sxasym8s if depthwise else \
            lib.xa_nn_conv2d_std_per_chan_sym8sxasym8s
        status = call(function, (depthwise_args if depthwise else conv_args)(geometry, case, scratch.pointer))
        if status == OK:
            np.testing.assert_array_equal(case["out"], case["expected"])
        return status
    if kind in ("max", "avg"):
        spec = POOLS["3x3_stride2_same"]
        x = levels(np.random.default_rng(12), *spec[:3])
        out = np.zeros((5, 5, 4), np.int8)
        return call(lib.xa_nn_maxpool_8 if kind == "max" else lib.xa_nn_avgpool_8, pool_args(spec, x, out,
                                                                                            scratch.pointer))
    x = levels(np.random.default_rng(13), 33)
    out = np.zeros_like(x)
    mult, shift, diff_min = ref.softmax_parameters(0.05)
    return lib.xa_nn_vec_softmax_asym8s_asym8s(p8(out), p8(x), diff_min, shift, mult, x.size, scratch.pointer)


def planned_size(lib, kind: str) -> int:
    if kind == "std":
        return call(lib.xa_nn_conv2d_std_getsize, conv_getsize_args(CONVOLUTIONS["non_square"]))
    if kind == "depthwise":
        return call(lib.xa_nn_conv2d_depthwise_getsize, depthwise_getsize_args(DEPTHWISE["ch_mult2_stride2"]))
    if kind in ("max", "avg"):
        getsize = lib.xa_nn_maxpool_getsize if kind == "max" else lib.xa_nn_avgpool_getsize
        return call(getsize, pool_getsize_args(POOLS["3x3_stride2_same"]))
    return lib.get_softmax_scratch_size(PREC_ASYM8S, PREC_ASYM8S, 33)


@pytest.mark.parametrize("kind,misalign", [("std", 0), ("std", 1), ("std", 4), ("std", 7), ("depthwise", 0),
                                          ("max", 0), ("avg", 0), ("softmax", 0)])
def test_scratch_fully_written(lib, kind, misalign):
    """Every planned byte is written and none outside: run twice with two fill patterns; a
    byte left unwritten keeps the fill in both runs (a written byte cannot equal both)."""
    size = planned_size(lib, kind)
    runs = []
    for fill in (SENTINEL, 0x54):
        scratch = Scratch(size, misalign, fill)
        assert run_with_scratch(lib, kind, scratch) == OK
        assert scratch.used()
        runs.append(scratch.region == fill)
    assert not (runs[0] & runs[1]).any(), np.flatnonzero(runs[0] & runs[1])


@pytest.mark.parametrize("kind", ["depthwise", "max", "avg", "softmax"])
def test_misaligned_scratch_is_refused(lib, kind):
    """NNLib's depthwise convolution and pools return -1 for a p_scratch that is not 8-byte
    aligned (XA_NNLIB_ARG_CHK_ALIGN); its softmax aligns it up with no slack in the size."""
    scratch = Scratch(planned_size(lib, kind) + 8, misalign=4)
    assert run_with_scratch(lib, kind, scratch) == BAD
    assert (scratch.memory == SENTINEL).all()


# ----------------------------------------------------------------------------- NNLib's own scratch sizes

NNLIB_SIZES = os.path.join(HIFI4_DIR, "nnlib_scratch_sizes.json")


def nnlib_rows() -> list[dict]:
    with open(NNLIB_SIZES) as f:
        return json.load(f)["rows"]


def test_the_size_table_spans_the_shapes_we_call():
    """The table holds every conv/pool/softmax call of LeNet, the test convnet and MobileNetV2
    and a spread of edge shapes, with refusals (-1) among them."""
    rows = nnlib_rows()
    functions = {r["function"] for r in rows}
    assert functions == {"xa_nn_conv2d_std_getsize", "xa_nn_conv2d_depthwise_getsize", "xa_nn_maxpool_getsize",
                         "xa_nn_avgpool_getsize", "get_softmax_scratch_size"}
    assert len(rows) >= 400 and sum(r["size"] == -1 for r in rows) >= 10
    assert {r["source"] for r in rows} >= {"edge", "mobilenet_v2", "lenet fusion=False", "convnet fusion=False"}
    lenet_conv1 = next(r for r in rows if r["source"] == "lenet fusion=False" and r["arguments"]["input_channels"] == 1)
    assert lenet_conv1["size"] == 2_621


@pytest.mark.parametrize("function", ["xa_nn_conv2d_std_getsize", "xa_nn_conv2d_depthwise_getsize",
                                      "xa_nn_maxpool_getsize", "xa_nn_avgpool_getsize", "get_softmax_scratch_size"])
def test_standin_getsize_equals_nnlib(lib, function):
    """The stand-in's getsize returns what NNLib's own getsize returned, on every row."""
    wrong = [(r["arguments"], r["size"], got) for r in nnlib_rows() if r["function"] == function
             if (got := call(getattr(lib, function), r["arguments"])) != r["size"]]
    assert not wrong, wrong[:5]


# ----------------------------------------------------------------------------- argument validation

BAD_CONV = [
    dict(out_data_format=1),
    dict(input_zero_bias=-128),
    dict(input_zero_bias=129),
    dict(out_zero_bias=128),
    dict(out_zero_bias=-129),
    dict(x_stride=0),
    dict(y_stride=0),
    dict(x_padding=-1),
    dict(input_channels=0),
    dict(out_channels=0),
    dict(kernel_height=0),
    dict(out_height=20),  # the last windows would lie entirely in the padding
    dict(out_height=6),  # smaller than the geometry gives for any far-side padding >= 0
    dict(y_padding=3),  # pad >= kernel: the first window lies entirely in the padding
    dict(out_width=0),
    dict(p_out=None),
    dict(p_inp=None),
    dict(p_kernel=None),
    dict(p_out_multiplier=None),
    dict(p_out_shift=None),
]


@pytest.mark.parametrize("override", BAD_CONV, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()))
def test_conv2d_std_rejects(lib, override):
    geometry = CONVOLUTIONS["3x3_pad1"]
    case = conv_case(9, geometry, depthwise=False)
    scratch = Scratch(4096)
    assert call(lib.xa_nn_conv2d_std_per_chan_sym8sxasym8s, conv_args(geometry, case, scratch.pointer),
                **override) == BAD
    assert (case["out"] == 0).all() and (scratch.memory == SENTINEL).all()


BAD_DEPTHWISE = [o for o in BAD_CONV if "out_channels" not in o and "p_inp" not in o and o != dict(out_height=6)] + [
    dict(out_height=5),  # input 7, 3x3, top pad 1: at least 6 rows
    dict(p_inp=None),
    dict(inp_data_format=1),
    dict(channels_multiplier=0),
]


@pytest.mark.parametrize("override", BAD_DEPTHWISE, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()))
def test_conv2d_depthwise_rejects(lib, override):
    geometry = DEPTHWISE["ch_mult2"]
    case = conv_case(9, geometry, depthwise=True)
    scratch = Scratch(4096)
    assert call(lib.xa_nn_conv2d_depthwise_per_chan_sym8sxasym8s, depthwise_args(geometry, case, scratch.pointer),
                **override) == BAD
    assert (case["out"] == 0).all() and (scratch.memory == SENTINEL).all()


@pytest.mark.parametrize("depthwise", [False, True])
def test_conv_rejects_bad_requantization(lib, depthwise):
    geometry = DEPTHWISE["ch_mult2"] if depthwise else CONVOLUTIONS["3x3_pad1"]
    function = lib.xa_nn_conv2d_depthwise_per_chan_sym8sxasym8s if depthwise else \
        lib.xa_nn_conv2d_std_per_chan_sym8sxasym8s
    make_args = depthwise_args if depthwise else conv_args
    for field, value in [("shift", 31), ("shift", -32), ("mult", -5)]:
        case = conv_case(9, geometry, depthwise)
        case[field][-1] = value  # the last channel: all channels are checked
        scratch = Scratch(4096)
        assert call(function, make_args(geometry, case, scratch.pointer)) == BAD, (field, value)


def test_fully_connected_rejects(lib):
    case = fc_case(3, FULLY_CONNECTED["vector"])
    args = case["args"]
    fc = lib.xa_nn_fully_connected_sym8sxasym8s_asym8s
    assert call(fc, args) == OK
    for override in [dict(weight_depth=0), dict(out_depth=0), dict(input_zero_bias=-128), dict(out_zero_bias=128),
                     dict(out_shift=31), dict(out_shift=-32), dict(out_multiplier=-1), dict(p_out=None),
                     dict(p_weight=None), dict(p_inp=None)]:
        assert call(fc, args, **override) == BAD, override
    assert call(fc, args, p_bias=None) == OK  # NULL bias = zero


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pools_reject(lib, kind):
    function = lib.xa_nn_maxpool_8 if kind == "max" else lib.xa_nn_avgpool_8
    x = levels(np.random.default_rng(0), 4, 4, 2)
    out = np.zeros((3, 3, 2), np.int8)
    scratch = Scratch(64, misalign=0)
    # a window entirely in the padding: in 4, kernel 2, stride 2, padding 2 -> output 3, first window empty
    spec = (4, 4, 2, (2, 2), (2, 2), (2, 2, 0, 0))
    assert call(function, pool_args(spec, x, out, scratch.pointer)) == BAD
    spec = (4, 4, 2, (2, 2), (2, 2), (0, 0, 0, 0))
    small_out = np.zeros((2, 2, 2), np.int8)
    good = pool_args(spec, x, small_out, scratch.pointer)
    assert call(function, good) == OK
    small_out[:] = 0
    scratch.memory[:] = SENTINEL
    for override in [dict(inp_data_format=1), dict(out_data_format=1), dict(x_stride=0), dict(y_padding=-1),
                     dict(out_height=5), dict(input_channels=0), dict(kernel_width=0), dict(p_out=None),
                     dict(p_inp=None)]:
        assert call(function, good, **override) == BAD, override
    assert (out == 0).all() and (small_out == 0).all() and (scratch.memory == SENTINEL).all()


def test_elementwise_reject(lib):
    add = lib.xa_nn_elm_add_asym8sxasym8s_asym8s
    add_data = add_case(0, size=8)  # keeps the arrays behind the pointers alive
    args = add_data["args"]
    assert call(add, args) == OK
    for override in [dict(left_shift=24), dict(left_shift=-1), dict(out_left_shift=-32), dict(inp1_left_shift=31),
                     dict(inp2_multiplier=-1), dict(out_zero_bias=128), dict(inp1_zero_bias=-128),
                     dict(inp2_zero_bias=129), dict(out_activation_min=10, out_activation_max=5),
                     dict(out_activation_min=-129), dict(num_elm=-1), dict(p_out=None), dict(p_inp2=None)]:
        assert call(add, args, **override) == BAD, override
    mul = lib.xa_nn_elm_mul_asym8sxasym8s_asym8s
    mul_data = mul_case(0, False, size=8)
    args = mul_data["args"]
    assert call(mul, args) == OK
    for override in [dict(out_shift=31), dict(out_multiplier=-1), dict(out_zero_bias=128), dict(inp1_zero_bias=-128),
                     dict(out_activation_max=128), dict(out_activation_min=1, out_activation_max=0), dict(num_elm=-1),
                     dict(p_inp1=None)]:
        assert call(mul, args, **override) == BAD, override
