"""Arm CMSIS-NN's int8 ("s8") API, as glowmlir calls it (../shared/reference/cmsis-nn-api.md).

For each quantized `glowll` instruction, `map_instruction` either returns the call that
computes it — callee, C arguments, the constant structs and arrays it needs (weights in the
constant region), its scratch size — or the reason CMSIS-NN cannot. Every multiplier,
shift and clamp bound comes from `glowmlir.quantization.rescaling`, the same helpers our
own int8 kernels use, so a call and the kernel it replaces compute the same bits.

Conventions (TFLite's): NHWC activations, OHWI filters, depthwise filters [1, KH, KW, C],
FullyConnected weights [out][in] (what `glowll.fully_connected` already holds),
`input_offset = -input zero point`, `output_offset = +output zero point`, symmetric
weights, int32 bias with scale input x weight scale.

The library's contract differs between its builds: on a core with Helium (MVE, the M55)
its `*_get_buffer_size` functions ask for other scratch sizes, and `arm_fully_connected_s8`
reads precomputed kernel sums from its context buffer instead of the bias. The mappings
that depend on it take `helium` and follow the build the core gets (rules from CMSIS-NN's
`arm_*_get_buffer_sizes_s8.c`; tests/support/cmsis_nn/cmsis_nn_outputs.json holds what both
builds returned).
"""

from __future__ import annotations

from functools import partial

import numpy as np
from xdsl.ir import SSAValue

from glowmlir.dialects import glow, glowll
from glowmlir.dialects.weights import array_from_dense
from glowmlir.libraries import common
from glowmlir.libraries.common import (
    Call,
    ConvolutionGeometry,
    Declined,
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

INT32_STRUCTS: dict[str, tuple[str, ...]] = {
    "cmsis_nn_dims": ("n", "h", "w", "c"),
    "cmsis_nn_conv_params": ("input_offset", "output_offset", "stride.w", "stride.h", "padding.w", "padding.h",
                             "dilation.w", "dilation.h", "activation.min", "activation.max"),
    "cmsis_nn_dw_conv_params": ("input_offset", "output_offset", "ch_mult", "stride.w", "stride.h", "padding.w",
                                "padding.h", "dilation.w", "dilation.h", "activation.min", "activation.max"),
    "cmsis_nn_pool_params": ("stride.w", "stride.h", "padding.w", "padding.h", "activation.min", "activation.max"),
    "cmsis_nn_fc_params": ("input_offset", "filter_offset", "output_offset", "activation.min", "activation.max"),
    "cmsis_nn_per_tensor_quant_params": ("multiplier", "shift"),
}
"""The pointer-free argument structs, field by field in declaration order (nested tiles
flattened: every field is an int32_t, so the layout is the same on every ABI)."""

POINTER_STRUCTS: dict[str, tuple[tuple[str, str], ...]] = {
    "cmsis_nn_context": (("buf", "pointer"), ("size", "int32")),
    "cmsis_nn_per_channel_quant_params": (("multiplier", "pointer"), ("shift", "pointer")),
}
"""The structs holding pointers, built on the stack at each call (`context K`, `pointers K L`)."""


def struct_offsets(name: str, pointer_size: int) -> dict[str, int]:
    """Byte offset of each field, by C's layout rules (natural alignment)."""
    if name in INT32_STRUCTS:
        return {f: 4 * i for i, f in enumerate(INT32_STRUCTS[name])}
    offsets, offset = {}, 0
    for field_name, kind in POINTER_STRUCTS[name]:
        size = pointer_size if kind == "pointer" else 4
        offset = -(-offset // size) * size
        offsets[field_name] = offset
        offset += size
    return offsets


def struct_size(name: str, pointer_size: int) -> int:
    if name in INT32_STRUCTS:
        return 4 * len(INT32_STRUCTS[name])
    alignment = max(pointer_size if kind == "pointer" else 4 for _, kind in POINTER_STRUCTS[name])
    end = max(offset + (pointer_size if dict(POINTER_STRUCTS[name])[f] == "pointer" else 4)
              for f, offset in struct_offsets(name, pointer_size).items())
    return -(-end // alignment) * alignment


def pack(name: str, **values: int) -> np.ndarray:
    """A pointer-free struct as int32 words (fields named with `_` for `.`)."""
    fields = INT32_STRUCTS[name]
    missing = {f.replace(".", "_") for f in fields} - set(values)
    assert not missing, missing
    return np.array([values[f.replace(".", "_")] for f in fields], np.int32)


def dims(n: int, h: int, w: int, c: int) -> np.ndarray:
    return pack("cmsis_nn_dims", n=n, h=h, w=w, c=c)


# ----------------------------------------------------------------------------- mapping


def accepts(op) -> str | None:
    """For a `glow` op: None if CMSIS-NN will take it (once NHWC), else the reason it will not."""
    return common.accepts(op, check_convolution, check_pool)


def check_convolution(op, output: SSAValue) -> None:
    """What CMSIS-NN needs of a convolution, glow or glowll (raises Declined)."""
    common.check_convolution(op, output)
    if is_depthwise(op) and op.input.type.get_shape()[0] != 1:
        raise Declined("depthwise convolution of a batch > 1")


CH_IN_BLOCK_MVE = 124
"""CMSIS-NN's channels a step of the Helium depthwise kernel (arm_nnsupportfunctions.h)."""


def convolution_scratch(g: ConvolutionGeometry, helium: bool) -> int:
    """`arm_convolve_wrapper_s8_get_buffer_size` of the core's build (GCC): a 1x1 (unpadded,
    undilated, ungrouped) none; otherwise, on the DSP build, two int16 im2col columns of
    KH x KW x C_IN rounded up to 4; on the Helium build a 1 x N on one input row its
    padded int8 window (`arm_convolve_1_x_n_s8_get_buffer_size_mve`), else four int8 columns
    rounded up to 16 (`arm_convolve_s8_get_buffer_size_mve`)."""
    undilated = g.dilation_h == g.dilation_w == 1
    if (g.k_h, g.k_w) == (1, 1) and g.pad_top == g.pad_left == 0 and undilated and g.in_c == g.group_c:
        return 0
    taps = g.k_h * g.k_w * g.in_c
    if not helium:
        return 2 * (-(-taps // 4) * 4) * 2
    im2col = 4 * -(-taps // 16) * 16
    if not (g.in_h == 1 and g.k_h == 1 and g.dilation_w == 1 and g.stride_w * g.in_c % 4 == 0
            and g.in_c == g.group_c):
        return im2col
    asymmetric = ((g.out_w - 1) * g.stride_w + g.k_w - g.in_w) % 2
    right = max(1, -(-(g.pad_left + asymmetric) // g.stride_w)) if g.pad_left + asymmetric else 0
    left = max(1, -(-g.pad_left // g.stride_w)) if g.pad_left else 0
    if right + max(g.out_w - right - left, 0) + left != g.out_w:
        return im2col
    pad_right = right * g.in_c if asymmetric else g.pad_left * g.in_c
    return max(g.k_w * g.in_c + g.pad_left * g.in_c, (g.k_w - 1) * g.in_c + pad_right)


def depthwise_scratch(g: ConvolutionGeometry, helium: bool) -> int:
    """`arm_depthwise_conv_wrapper_s8_get_buffer_size` of the core's build (GCC, batch 1)."""
    undilated = g.dilation_h == g.dilation_w == 1
    if helium and g.in_c == 1 and g.out_c > 1:  # run as the convolution of a [C_OUT, KH, KW, 1] filter
        return convolution_scratch(g, True) + g.out_c * g.k_h * g.k_w
    if g.out_c != g.in_c or not undilated:
        return 0
    if helium:
        return 4 * CH_IN_BLOCK_MVE * g.k_h * g.k_w
    three_by_three = (g.k_h, g.k_w) == (3, 3) and g.pad_top <= 1 and g.pad_left <= 1
    return 0 if three_by_three else g.in_c * g.k_h * g.k_w * 2


def kernel_sums(weights: np.ndarray, bias: np.ndarray, input_offset: int) -> np.ndarray:
    """What the Helium build's `arm_fully_connected_s8` reads from its context, as the
    library's `arm_vector_sum_s8` makes it: per output row of the weights [out][in],
    bias + input_offset x the row's sum (int32, wrapping as the library's does)."""
    sums = bias.astype(np.int64) + input_offset * weights.astype(np.int64).sum(axis=1)
    return sums.astype(np.int32)


def constant(value: SSAValue) -> np.ndarray:
    """The data of a weight buffer (raises Declined for any other)."""
    owner = value.owner
    if not isinstance(owner, glowll.WeightOp) or owner.value is None:
        raise Declined("weights or bias not constant (the Helium build needs the kernel sums at compile time)")
    return array_from_dense(owner.value)


def map_fully_connected(op: glowll.FullyConnectedOp, helium: bool = False) -> Call:
    require_int8([op.input, op.weights, op.bias, op.dest], op.bias)
    weights = element(op.weights)
    per_tensor_weights(weights)
    symmetric_weights(weights)
    accumulator_bias(op, op.weights)
    (multiplier,), (shift,) = output_multipliers(element(op.input), weights, element(op.dest))
    low, high = activation_bounds(op, element(op.dest))
    (rows, depth), (columns, _) = op.input.type.get_shape(), op.weights.type.get_shape()
    params = pack("cmsis_nn_fc_params", input_offset=-element(op.input).offset, filter_offset=0,
                  output_offset=element(op.dest).offset, activation_min=low, activation_max=high)
    quant = pack("cmsis_nn_per_tensor_quant_params", multiplier=int(multiplier), shift=int(shift))
    constants = [("fc_params", params), ("quant_params", quant), ("input_dims", dims(rows, 1, 1, depth)),
                 ("filter_dims", dims(depth, 1, 1, columns)), ("bias_dims", dims(1, 1, 1, columns)),
                 ("output_dims", dims(rows, 1, 1, columns))]
    context = "%scratch"
    if helium:
        constants.append(("kernel_sums", kernel_sums(constant(op.weights), constant(op.bias),
                                                     -element(op.input).offset)))
        context = f"context %c{len(constants) - 1}"
    return Call("arm_fully_connected_s8", [op.dest, op.input, op.weights, op.bias], constants, 0,
                [context, "%c0", "%c1", "%c2", "%b1", "%c3", "%b2", "%c4", "%b3", "%c5", "%b0"])


def map_convolution(op: glowll.ConvolutionOp, helium: bool = False) -> Call:
    check_convolution(op, op.dest)
    g = ConvolutionGeometry.of(op)
    multipliers, shifts = per_channel_requantization(op)
    low, high = activation_bounds(op, element(op.dest))
    common = dict(input_offset=-element(op.input).offset, output_offset=element(op.dest).offset,
                  stride_w=g.stride_w, stride_h=g.stride_h, padding_w=g.pad_left, padding_h=g.pad_top,
                  dilation_w=g.dilation_w, dilation_h=g.dilation_h, activation_min=low, activation_max=high)
    constants = [("multipliers", multipliers), ("shifts", shifts), ("input_dims", dims(g.n, g.in_h, g.in_w, g.in_c)),
                 None, ("bias_dims", dims(1, 1, 1, g.out_c)), ("output_dims", dims(g.n, g.out_h, g.out_w, g.out_c))]
    if is_depthwise(op):  # the filter [C, KH, KW, 1] is stored as [1, KH, KW, C]
        constants[3] = ("filter_dims", dims(1, g.k_h, g.k_w, g.out_c))
        params = pack("cmsis_nn_dw_conv_params", ch_mult=g.out_c // g.in_c, **common)
        scratch = depthwise_scratch(g, helium)
        callee, permutation = "arm_depthwise_conv_wrapper_s8", (3, 1, 2, 0)
    else:
        constants[3] = ("filter_dims", dims(g.out_c, g.k_h, g.k_w, g.group_c))
        params = pack("cmsis_nn_conv_params", **common)
        scratch = convolution_scratch(g, helium)
        callee, permutation = "arm_convolve_wrapper_s8", None
    return Call(callee, [op.dest, op.input, op.filter, op.bias], [("conv_params", params), *constants], scratch,
                ["%scratch", "%c0", "pointers %c1 %c2", "%c3", "%b1", "%c4", "%b2", "%c5", "%b3", "%c6", "%b0"],
                filter_permutation=permutation)


def map_pool(op: glowll.MaxPoolOp | glowll.AvgPoolOp, helium: bool = False) -> Call:
    check_pool(op, op.dest)
    if not glow.is_nhwc(op):
        raise Declined("NCHW layout (the graph was not converted to NHWC here)")
    n, in_h, in_w, channels = op.input.type.get_shape()
    _, out_h, out_w, _ = op.dest.type.get_shape()
    (k_h, k_w), (s_h, s_w) = op.kernel.get_values(), op.strides.get_values()
    pad_top, pad_left = op.pads.get_values()[:2]
    low, high = element(op.dest).value_range
    params = pack("cmsis_nn_pool_params", stride_w=s_w, stride_h=s_h, padding_w=pad_left, padding_h=pad_top,
                  activation_min=low, activation_max=high)
    is_max = isinstance(op, glowll.MaxPoolOp)
    return Call("arm_max_pool_s8" if is_max else "arm_avgpool_s8", [op.dest, op.input],
                [("pool_params", params), ("input_dims", dims(n, in_h, in_w, channels)),
                 ("filter_dims", dims(1, k_h, k_w, 1)), ("output_dims", dims(n, out_h, out_w, channels))],
                0 if is_max or helium else channels * 4, ["%scratch", "%c0", "%c1", "%b1", "%c2", "%c3", "%b0"])


SOFTMAX_DEFINED_ROW_SIZE = 511
"""The longest row on which `arm_softmax_s8` is defined in C. Each entry adds at most 2^19 (an
exponent of 1.0 with 12 fractional bits) to the row's sum; once the sum reaches 2^28 the
final rounding shift is by 12 - 3 + 23 = 32 bits or more, undefined in C (GCC on a
Cortex-M gives 1 for the shifted-out quotient, so every entry is -127 instead of TFLite's
value, e.g. -128 for 1,000 equal entries). 511 entries can never reach 2^28."""


def map_softmax(op: glowll.SoftMaxOp) -> Call:
    require_int8([op.input, op.dest])
    shape = op.input.type.get_shape()
    if shape[-1] > SOFTMAX_DEFINED_ROW_SIZE:
        raise Declined(f"rows of {shape[-1]} (arm_softmax_s8 is undefined in C on rows of more than "
                       f"{SOFTMAX_DEFINED_ROW_SIZE} whose exponents sum to 2^28 or more)")
    multiplier, shift, diff_min = softmax_parameters(element(op.input))
    rows = int(np.prod(shape[:-1]))
    return Call("arm_softmax_s8", [op.dest, op.input], [], 0,
                ["%b1", f"int {rows}", f"int {shape[-1]}", f"int {multiplier}", f"int {shift}", f"int {diff_min}",
                 "%b0"], returns_void=True)


def map_elementwise(op: glowll.ElementwiseOp) -> Call:
    kind, first, second, out, low, high, size = elementwise_operands(op, "no s8 function for elementwise")
    if kind == "add":
        (m1, s1), (m2, s2), (mo, so) = add_multipliers(first, second, out)
        arguments = ["%b1", "%b2", f"int {-first.offset}", f"int {m1}", f"int {s1}", f"int {-second.offset}",
                     f"int {m2}", f"int {s2}", f"int {ADD_LEFT_SHIFT}", "%b0", f"int {out.offset}", f"int {mo}",
                     f"int {so}", f"int {low}", f"int {high}", f"int {size}"]
        return Call("arm_elementwise_add_s8", [op.dest, *op.inputs], [], 0, arguments)
    multiplier, shift = mul_multiplier(first, second, out)
    arguments = ["%b1", "%b2", f"int {-first.offset}", f"int {-second.offset}", "%b0", f"int {out.offset}",
                 f"int {multiplier}", f"int {shift}", f"int {low}", f"int {high}", f"int {size}"]
    return Call("arm_elementwise_mul_s8", [op.dest, *op.inputs], [], 0, arguments)


def mappings(helium: bool) -> dict:
    """MAPPINGS for the library's DSP (or plain) build, or with `helium` its Helium build."""
    return {kind: (partial(mapping, helium=True) if helium and mapping in HELIUM_DEPENDENT else mapping)
            for kind, mapping in MAPPINGS.items()}


HELIUM_DEPENDENT = (map_fully_connected, map_convolution, map_pool)
"""The mappings whose call depends on the library's build (they take `helium`)."""

MAPPINGS = {
    glowll.FullyConnectedOp: map_fully_connected,
    glowll.ConvolutionOp: map_convolution,
    glowll.MaxPoolOp: map_pool,
    glowll.AvgPoolOp: map_pool,
    glowll.SoftMaxOp: map_softmax,
    glowll.ElementwiseOp: map_elementwise,
}
