"""Cadence's HiFi 4 NN library (`xa_nn_*`), as glowmlir calls it for the RT685's DSP
(../shared/reference/hifi4-nnlib-api.md).

Same conventions as TFLite and CMSIS-NN: NHWC (`out_data_format` 0), OHWI filters,
depthwise filters [KH, KW, C], `input_zero_bias = -zero point`, `out_zero_bias = +zero
point`, per-channel multipliers and shifts. Every argument is a pointer or an int32, so
the only constants in the constant region are the multiplier/shift arrays. The kernels
have no activation clamp: a fused Relu/Clip is a second call,
`xa_nn_vec_activation_min_max_8_8`, from an intermediate buffer the first call writes into
the destination (not in place: NNLib declares both pointers `__restrict__`). Scratch sizes
are NNLib's own `*_getsize` rules (below), and a shape NNLib's getsize refuses keeps our
kernel.
"""

from __future__ import annotations

import numpy as np

from glowmlir.dialects import glow, glowll
from glowmlir.libraries import common
from glowmlir.libraries.common import (
    Call,
    ConvolutionGeometry,
    Declined,
    Intermediate,
    accumulator_bias,
    check_pool,
    element,
    elementwise_operands,
    is_depthwise,
    per_channel_requantization,
    per_tensor_weights,
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
"""NNLib's `ALIGNMENT`: the kernels want (or align) their scratch pointer at 8 bytes."""

POINTER_SIZE = 4
"""Bytes of a pointer on Xtensa: the state structs NNLib keeps at the start of its scratch
hold pointers, so their size is part of every scratch size."""

(PREC_8, PREC_16, PREC_F32, PREC_ASYM8U, PREC_ASYM8S, PREC_SYM8S, PREC_SYM16S,
 PREC_ASYM16S) = 8, 16, -1, -3, -4, -5, -8, -7
"""NNLib's precision codes (`xa_nnlib_prec_t`) that the getsize functions take."""

# The scratch-size rules below restate, in our words, what NNLib 4.1.0's own getsize
# functions compute (xa_nn_conv2d_std_circ_buf.c, xa_nn_conv2d_depthwise.c,
# xa_nn_circ_buf.c, xa_nn_maxpool.c, xa_nn_avgpool.c, xa_nn_softmax_asym8_asym8.c): the
# kernels keep a state struct and a circular buffer of input rows (convolutions) or rows of
# accumulators (pools) in the scratch. tests/support/hifi4/nnlib_scratch_sizes.json holds the
# sizes the library itself returned for 400 shapes; the tests require these functions to
# equal it on every row. NHWC (data format 0) only: the layout glowmlir passes.


def _round_up(size: int, multiple: int) -> int:
    return -(-size // multiple) * multiple


def _align(size: int) -> int:
    return _round_up(size, ALIGNMENT)


def _refused(function: str, why: str):
    raise Declined(f"NNLib's {function} refuses the shape ({why})")


def conv2d_std_scratch(in_h: int, in_w: int, in_c: int, k_h: int, k_w: int, out_c: int, stride_h: int, stride_w: int,
                       pad_top: int, pad_left: int, out_h: int, out_w: int, precision: int = PREC_ASYM8S,
                       kernel_channels: int | None = None) -> int:
    """`xa_nn_conv2d_std_getsize`: a state struct (six pointers), a circular buffer holding
    every padded input row for `k_w` columns with the channels padded to 4 (8- and 16-bit
    data) or 2 (float) and its size grown by whole columns to a multiple of 16 bytes, a bus
    width of slack, and a copy of the filter with padded channels when they are padded (not
    for 16-bit data). The library adds ALIGNMENT - 1 per part (not a round-up: its
    ALIGNED_SIZE in that file is `size + align - 1`). A height-1 input, kernel and output
    is planned as a width-1 one (the kernel transposes it)."""
    kernel_channels = in_c if kernel_channels is None else kernel_channels
    if (min(in_h, in_c, k_h, k_w, kernel_channels, stride_h, stride_w, out_h, out_w, out_c) <= 0
            or min(pad_top, pad_left) < 0):
        _refused("xa_nn_conv2d_std_getsize", "a size or stride < 1, or a negative padding")
    if in_c % kernel_channels or out_c % (in_c // kernel_channels):
        _refused("xa_nn_conv2d_std_getsize", "channels that do not divide into groups")
    element = {PREC_8: (1, 4), PREC_16: (2, 4), PREC_ASYM16S: (2, 4), PREC_SYM16S: (2, 4), PREC_F32: (4, 2),
               PREC_ASYM8U: (1, 4), PREC_ASYM8S: (1, 4)}.get(precision)
    if element is None:
        _refused("xa_nn_conv2d_std_getsize", f"input precision {precision}")
    size, channel_multiple = element
    if in_h == 1 and k_h == 1 and out_h == 1:  # rows are columns
        in_h, k_h, k_w, stride_h, pad_top, out_h = in_w, k_w, k_h, stride_w, pad_left, out_w
    state = 6 * POINTER_SIZE
    bottom_pad = max(0, k_h + (out_h - 1) * stride_h - (pad_top + in_h))
    padded_channels = _round_up(kernel_channels, channel_multiple)
    column = k_w * padded_channels * size
    circular = (pad_top + in_h + bottom_pad) * column
    while circular % 16:
        circular += column
    total = ALIGNMENT + (state + ALIGNMENT - 1) + (circular + ALIGNMENT - 1) + ALIGNMENT
    if precision != PREC_16 and padded_channels != kernel_channels:
        total += k_h * k_w * padded_channels * out_c * size + ALIGNMENT - 1
    return total


def conv2d_depthwise_scratch(in_h: int, in_w: int, in_c: int, k_h: int, k_w: int, multiplier: int, stride_h: int,
                             stride_w: int, pad_top: int, pad_left: int, out_h: int, out_w: int,
                             precision: int = PREC_ASYM8S) -> int:
    """`xa_nn_conv2d_depthwise_getsize` (NHWC): a state struct (three pointers, three int32
    and a pointer), a circular buffer of every input row the windows cover (at least the
    padded input's height) by `k_w` columns by the output channels padded to 4 (to 2 for
    float), and for 8/16-bit data a copy of the filter with its depth padded to 4; each
    part a multiple of ALIGNMENT."""
    if min(in_h, in_w, in_c, k_h, k_w, multiplier, stride_h, stride_w, out_h, out_w) <= 0 or min(pad_top, pad_left) < 0:
        _refused("xa_nn_conv2d_depthwise_getsize", "a size or stride < 1, or a negative padding")
    size = {PREC_8: 1, PREC_16: 2, PREC_SYM16S: 2, PREC_F32: 4, PREC_ASYM8U: 1, PREC_ASYM8S: 1,
            PREC_SYM8S: 1}.get(precision)
    if size is None:
        _refused("xa_nn_conv2d_depthwise_getsize", f"precision {precision}")
    state = _align(3 * POINTER_SIZE + 3 * 4 + POINTER_SIZE)
    rows = max(k_h + (out_h - 1) * stride_h, pad_top + in_h)
    channels = _round_up(in_c * multiplier, 2 if size == 4 else 4)
    kernel = 0 if size == 4 else _align(size * k_h * k_w * 4)
    return state + _align(size * rows * channels * k_w) + kernel


def _pool_row_scratch(function: str, in_w: int, k_w: int, stride_w: int, pad_left: int, out_w: int,
                      accumulator: int, state: int, even_pad: bool) -> int:
    """The one-channel pools: a state struct and two rows of accumulators as wide as the
    padded input row (a multiple of 4) plus a kernel width, rounded to 4."""
    row = max(k_w + (out_w - 1) * stride_w, (_round_up(pad_left, 2) if even_pad else pad_left) + in_w)
    return state + 2 * _round_up(_round_up(row, 4) + k_w, 4) * accumulator


def _check_pool(function: str, in_w: int, k_h: int, k_w: int, stride_h: int, stride_w: int, pad_left: int,
                out_h: int, out_w: int) -> None:
    if min(in_w, k_h, k_w, stride_h, stride_w, out_h, out_w) <= 0 or pad_left < 0 or k_w > in_w:
        _refused(function, "a size or stride < 1, a negative padding or a window wider than the input")


def maxpool_scratch(channels: int, in_w: int, k_h: int, k_w: int, stride_h: int, stride_w: int, pad_left: int,
                    out_h: int, out_w: int, precision: int = PREC_8) -> int:
    """`xa_nn_maxpool_getsize` (NHWC). One channel: a state struct (a pointer) and two rows of
    16-bit (8/16-bit data) or 32-bit accumulators. More channels: one int16 (int32 for
    float) input row of every channel plus one int16 per channel, each a multiple of
    ALIGNMENT; 0 for a precision it has no NHWC rule for."""
    function = "xa_nn_maxpool_getsize"
    if channels == 1:
        _check_pool(function, in_w, k_h, k_w, stride_h, stride_w, pad_left, out_h, out_w)
        accumulator = {PREC_8: 2, PREC_16: 2, PREC_F32: 4, PREC_ASYM8U: 4}.get(precision)
        if accumulator is None:
            _refused(function, f"precision {precision}")
        return _pool_row_scratch(function, in_w, k_w, stride_w, pad_left, out_w, accumulator,
                                 _align(POINTER_SIZE), even_pad=False)
    if precision == PREC_F32:
        return _align(channels * in_w * 4)
    if precision in (PREC_8, PREC_ASYM8U):
        return _align(channels * in_w * 2) + _align(channels * 2)
    if precision == PREC_16:
        return _align(channels * (in_w + 1) * 2)
    return 0


MAX_HEIGHT_16_BIT_ACCUMULATOR = 127
"""NNLib's average pool sums up to this many int8 rows in 16-bit accumulators."""


def avgpool_scratch(channels: int, in_w: int, k_h: int, k_w: int, stride_h: int, stride_w: int, pad_left: int,
                    out_h: int, out_w: int, precision: int = PREC_8) -> int:
    """`xa_nn_avgpool_getsize` (NHWC). One channel: a state struct (three pointers), the
    reciprocal window sizes of every output row and column (8/16-bit data) and two rows of
    int32 accumulators. More channels: the window-size tables (int32 per output row and
    column), an accumulator plane of one input row of every channel (int16 for 8-bit data
    and windows of at most 127 rows, else int32; float: two float planes and the window
    sizes of every output), one int32 per channel, and a zeroed row of the larger of an
    int8 input row and an accumulator per channel."""
    function = "xa_nn_avgpool_getsize"
    if precision != PREC_F32 and (k_h > 1024 or k_w > 1024):
        _refused(function, "a window over 1024 for fixed-point data")
    if channels == 1:
        _check_pool(function, in_w, k_h, k_w, stride_h, stride_w, pad_left, out_h, out_w)
        if precision not in (PREC_8, PREC_16, PREC_F32, PREC_ASYM8U):
            _refused(function, f"precision {precision}")
        reciprocals = 0 if precision == PREC_F32 else _align((out_h + out_w) * 4)
        return _pool_row_scratch(function, in_w, k_w, stride_w, pad_left, out_w, 4,
                                 _align(3 * POINTER_SIZE) + reciprocals, even_pad=True)
    plane = in_w * channels
    if precision == PREC_F32:
        return _align(2 * _align(4 * plane) + _align(4 * out_w * out_h))
    if precision in (PREC_8, PREC_ASYM8U):
        accumulator = 2 if k_h <= MAX_HEIGHT_16_BIT_ACCUMULATOR else 4
        zeros = max(plane, accumulator * channels)
    elif precision == PREC_16:
        accumulator, zeros = 4, max(2 * plane, 4 * channels)
    else:
        _refused(function, f"precision {precision}")
    return _align(_align(4 * out_h) + _align(4 * out_w) + _align(accumulator * plane) + _align(4 * channels) + zeros)


def softmax_scratch(length: int, precision: int = PREC_ASYM8S) -> int:
    """`get_softmax_scratch_size`: the int32 exponent of every element."""
    if length <= 0 or precision not in (PREC_8, PREC_16, 32, PREC_F32, PREC_ASYM8U, PREC_ASYM8S):
        _refused("get_softmax_scratch_size", f"length {length} or precision {precision}")
    return _align(4 * length)


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


def _with_clamp(op, call: Call) -> list[Call]:
    """`call`, then the fused activation as a second call if there is one (the kernels only
    saturate to int8): `call` then writes an intermediate buffer that the clamp reads, since
    `xa_nn_vec_activation_min_max_8_8` takes `__restrict__` pointers and so may not run in
    place."""
    low, high = activation_bounds(op, element(op.dest))
    if (low, high) == (-128, 127):
        return [call]
    unclamped = Intermediate(op.dest.type)
    call.buffers[0] = unclamped
    size = int(np.prod(op.dest.type.get_shape()))
    return [call, Call("xa_nn_vec_activation_min_max_8_8", [op.dest, unclamped], [], 0,
                       ["%b0", "%b1", f"int {low}", f"int {high}", f"int {size}"])]


def map_convolution(op: glowll.ConvolutionOp) -> list[Call]:
    check_convolution(op, op.dest)
    g = ConvolutionGeometry.of(op)
    multipliers, shifts = per_channel_requantization(op)
    zero_biases = [f"int {-element(op.input).offset}", "%c0", "%c1", f"int {element(op.dest).offset}"]
    geometry = [f"int {v}" for v in (g.in_h, g.in_w, g.in_c, g.k_h, g.k_w)]
    window = [f"int {v}" for v in (g.stride_w, g.stride_h, g.pad_left, g.pad_top, g.out_h, g.out_w)]
    constants = [("multipliers", multipliers), ("shifts", shifts)]
    window_hw = (g.stride_h, g.stride_w, g.pad_top, g.pad_left, g.out_h, g.out_w)
    if is_depthwise(op):  # the filter [C, KH, KW, 1] is stored as [KH, KW, C]
        scratch = conv2d_depthwise_scratch(g.in_h, g.in_w, g.in_c, g.k_h, g.k_w, g.out_c // g.in_c, *window_hw)
        call = Call("xa_nn_conv2d_depthwise_per_chan_sym8sxasym8s", [op.dest, op.input, op.filter, op.bias],
                    constants, scratch, ["%b0", "%b2", "%b1", "%b3", *geometry, f"int {g.out_c // g.in_c}", *window,
                                         *zero_biases, "int 0", "int 0", "%scratch_pointer"],
                    filter_permutation=(1, 2, 3, 0))
    else:
        scratch = conv2d_std_scratch(g.in_h, g.in_w, g.in_c, g.k_h, g.k_w, g.out_c, *window_hw)
        call = Call("xa_nn_conv2d_std_per_chan_sym8sxasym8s", [op.dest, op.input, op.filter, op.bias], constants,
                    scratch, ["%b0", "%b1", "%b2", "%b3", *geometry, f"int {g.out_c}", *window, *zero_biases, "int 0",
                              "%scratch_pointer"])
    return _with_clamp(op, call)


def map_fully_connected(op: glowll.FullyConnectedOp) -> list[Call]:
    require_int8([op.input, op.weights, op.bias, op.dest], op.bias)
    per_tensor_weights(element(op.weights))
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
    return _with_clamp(op, call)


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
    is_max = isinstance(op, glowll.MaxPoolOp)
    scratch = (maxpool_scratch if is_max else avgpool_scratch)(channels, in_w, k_h, k_w, s_h, s_w, pad_left,
                                                               out_h, out_w)
    return [Call("xa_nn_maxpool_8" if is_max else "xa_nn_avgpool_8", [op.dest, op.input], [], scratch,
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
