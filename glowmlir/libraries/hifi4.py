"""Cadence's HiFi 4 NN library (`xa_nn_*`), as glowmlir calls it for the RT685's DSP
(../shared/reference/hifi4-nnlib-api.md).

Same conventions as TFLite and CMSIS-NN: NHWC (`out_data_format` 0), OHWI filters,
depthwise filters [KH, KW, C], `input_zero_bias = -zero point`, `out_zero_bias = +zero
point`, per-channel multipliers and shifts. Every argument is a pointer or an int32, so
the only constants in the constant region are the multiplier/shift arrays. The kernels
have no activation clamp: a fused Relu/Clip is a second call,
`xa_nn_vec_activation_min_max_8_8`, in place. Scratch sizes follow the library's
`*_getsize` functions as modelled by our stand-ins (tests/support/hifi4).
"""

from __future__ import annotations

import numpy as np

from glowmlir.dialects import glow, glowll
from glowmlir.libraries import common
from glowmlir.libraries.common import (
    elementwise_operands,
    Call,
    ConvolutionGeometry,
    Declined,
    accumulator_bias,
    check_pool,
    element,
    is_depthwise,
    per_channel_requantization,
    require_int8,
    symmetric_weights,
)
from glowmlir.quantization.rescaling import (
    ADD_LEFT_SHIFT,
    activation_bounds,
    add_multipliers,
    mul_multiplier,
    output_multipliers,
    softmax_parameters,
)

ALIGNMENT = 8
"""The library aligns its scratch pointer to 8 bytes; every size includes that slack."""


def _align_up(size: int) -> int:
    return -(-size // ALIGNMENT) * ALIGNMENT


def conv2d_scratch(in_c: int, k_h: int, k_w: int) -> int:
    """xa_nn_conv2d_std_getsize and xa_nn_conv2d_depthwise_getsize: one int16 im2col patch."""
    return _align_up(in_c * k_h * k_w * 2) + ALIGNMENT


def pool_scratch(out_w: int, in_c: int) -> int:
    """xa_nn_maxpool_getsize / xa_nn_avgpool_getsize: one int32 row of accumulators."""
    return out_w * in_c * 4 + ALIGNMENT


def softmax_scratch(length: int) -> int:
    """get_softmax_scratch_size: one int32 per element."""
    return length * 4 + ALIGNMENT


def check_convolution(op, output) -> None:
    common.check_convolution(op, output)
    shape = op.input.type.get_shape()
    if shape[0] != 1:
        raise Declined("batch > 1 (the conv2d kernels take one image)")
    if list(op.dilations.get_values()) != [1, 1]:
        raise Declined("dilation")
    if op.group.value.data > 1 and not is_depthwise(op):
        raise Declined("grouped convolution that is not depthwise")


def accepts(op) -> str | None:
    """For a `glow` op: None if HiFi4 NNLib will take it (once NHWC), else the reason."""
    return common.accepts(op, check_convolution, check_pool)


def _clamp(op, dest_index: str = "%b0") -> list[Call]:
    """The fused activation as a second, in-place call (the kernels only saturate to int8)."""
    low, high = activation_bounds(op, element(op.dest))
    if (low, high) == (-128, 127):
        return []
    size = int(np.prod(op.dest.type.get_shape()))
    return [Call("xa_nn_vec_activation_min_max_8_8", [op.dest], [], 0,
                 [dest_index, dest_index, f"int {low}", f"int {high}", f"int {size}"])]


def map_convolution(op: glowll.ConvolutionOp) -> list[Call]:
    check_convolution(op, op.dest)
    g = ConvolutionGeometry.of(op)
    multipliers, shifts = per_channel_requantization(op)
    zero_biases = [f"int {-element(op.input).offset}", "%c0", "%c1", f"int {element(op.dest).offset}"]
    geometry = [f"int {v}" for v in (g.in_h, g.in_w, g.in_c, g.k_h, g.k_w)]
    window = [f"int {v}" for v in (g.stride_w, g.stride_h, g.pad_left, g.pad_top, g.out_h, g.out_w)]
    constants = [("multipliers", multipliers), ("shifts", shifts)]
    scratch = conv2d_scratch(g.in_c, g.k_h, g.k_w)
    if is_depthwise(op):  # the filter [C, KH, KW, 1] is stored as [KH, KW, C]
        call = Call("xa_nn_conv2d_depthwise_per_chan_sym8sxasym8s", [op.dest, op.input, op.filter, op.bias],
                    constants, scratch, ["%b0", "%b2", "%b1", "%b3", *geometry, f"int {g.out_c // g.in_c}", *window,
                                         *zero_biases, "int 0", "int 0", "%scratch_pointer"],
                    filter_permutation=(1, 2, 3, 0))
    else:
        call = Call("xa_nn_conv2d_std_per_chan_sym8sxasym8s", [op.dest, op.input, op.filter, op.bias], constants,
                    scratch, ["%b0", "%b1", "%b2", "%b3", *geometry, f"int {g.out_c}", *window, *zero_biases, "int 0",
                              "%scratch_pointer"])
    return [call, *_clamp(op)]


def map_fully_connected(op: glowll.FullyConnectedOp) -> list[Call]:
    require_int8([op.input, op.weights, op.bias, op.dest], op.bias)
    symmetric_weights(element(op.weights))
    accumulator_bias(op, op.weights)
    rows, depth = op.input.type.get_shape()
    if rows != 1:
        raise Declined("batch > 1 (the fully connected kernel takes one vector)")
    (multiplier,), (shift,) = output_multipliers(element(op.input), element(op.weights), element(op.dest))
    out_depth = op.weights.type.get_shape()[0]
    call = Call("xa_nn_fully_connected_sym8sxasym8s_asym8s", [op.dest, op.input, op.weights, op.bias], [], 0,
                ["%b0", "%b2", "%b1", "%b3", f"int {depth}", f"int {out_depth}", f"int {-element(op.input).offset}",
                 f"int {multiplier}", f"int {shift}", f"int {element(op.dest).offset}"])
    return [call, *_clamp(op)]


def map_pool(op: glowll.MaxPoolOp | glowll.AvgPoolOp) -> list[Call]:
    check_pool(op, op.dest)
    if not glow.is_nhwc(op):
        raise Declined("NCHW layout (the graph was not converted to NHWC here)")
    n, in_h, in_w, channels = op.input.type.get_shape()
    if n != 1:
        raise Declined("batch > 1")
    _, out_h, out_w, _ = op.dest.type.get_shape()
    (k_h, k_w), (s_h, s_w) = op.kernel.get_values(), op.strides.get_values()
    pad_top, pad_left = op.pads.get_values()[:2]
    callee = "xa_nn_maxpool_8" if isinstance(op, glowll.MaxPoolOp) else "xa_nn_avgpool_8"
    return [Call(callee, [op.dest, op.input], [], pool_scratch(out_w, channels),
                 ["%b0", "%b1", *(f"int {v}" for v in (in_h, in_w, channels, k_h, k_w, s_w, s_h, pad_left, pad_top,
                                                       out_h, out_w)), "int 0", "int 0", "%scratch_pointer"])]


def map_softmax(op: glowll.SoftMaxOp) -> list[Call]:
    require_int8([op.input, op.dest])
    shape = op.input.type.get_shape()
    if int(np.prod(shape[:-1])) != 1:
        raise Declined("more than one row (the kernel takes one vector)")
    multiplier, shift, diff_min = softmax_parameters(element(op.input))
    return [Call("xa_nn_vec_softmax_asym8s_asym8s", [op.dest, op.input], [], softmax_scratch(shape[-1]),
                 ["%b0", "%b1", f"int {diff_min}", f"int {shift}", f"int {multiplier}", f"int {shape[-1]}",
                  "%scratch_pointer"])]


def map_elementwise(op: glowll.ElementwiseOp) -> list[Call]:
    kind, first, second, out, low, high, size = elementwise_operands(op, "no function for elementwise")
    if kind == "add":
        (m1, s1), (m2, s2), (mo, so) = add_multipliers(first, second, out)
        arguments = ["%b0", f"int {out.offset}", f"int {so}", f"int {mo}", f"int {low}", f"int {high}",
                     "%b1", f"int {-first.offset}", f"int {s1}", f"int {m1}",
                     "%b2", f"int {-second.offset}", f"int {s2}", f"int {m2}", f"int {ADD_LEFT_SHIFT}", f"int {size}"]
        return [Call("xa_nn_elm_add_asym8sxasym8s_asym8s", [op.dest, *op.inputs], [], 0, arguments)]
    multiplier, shift = mul_multiplier(first, second, out)
    arguments = ["%b0", f"int {out.offset}", f"int {shift}", f"int {multiplier}", f"int {low}", f"int {high}",
                 "%b1", f"int {-first.offset}", "%b2", f"int {-second.offset}", f"int {size}"]
    return [Call("xa_nn_elm_mul_asym8sxasym8s_asym8s", [op.dest, *op.inputs], [], 0, arguments)]


MAPPINGS = {
    glowll.FullyConnectedOp: map_fully_connected,
    glowll.ConvolutionOp: map_convolution,
    glowll.MaxPoolOp: map_pool,
    glowll.AvgPoolOp: map_pool,
    glowll.SoftMaxOp: map_softmax,
    glowll.ElementwiseOp: map_elementwise,
}
