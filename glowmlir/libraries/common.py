"""What the kernel libraries share: the call description, and the checks every library
makes of an instruction (int8 tensors, symmetric weights, an int32 bias in accumulator
units) before taking it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import SSAValue

from glowmlir.dialects import glow, glowll
from glowmlir.dialects.quant import UniformQuantizedType, is_quantized
from glowmlir.quantization.rescaling import activation_bounds, bias_multiplier, output_multipliers


@dataclass
class Call:
    """One library call: C arguments over buffers, constants and immediates.

    `arguments` name the instruction's buffers `%b<k>` (`buffers[k]`), the constants
    `%c<k>` (stored as weights), `%scratch` (a `cmsis_nn_context` of the scratch buffer),
    `context %c<k>` (one of a constant) and `%scratch_pointer` (a plain pointer to the
    scratch, or NULL); see
    `glowll.library_call` for the forms (`buffer`, `context`, `pointers`, `int`, `null`).
    """

    callee: str
    buffers: list[SSAValue | Intermediate] = field(default_factory=list)  # dest first
    constants: list[tuple[str, np.ndarray]] = field(default_factory=list)  # (name suffix, data) -> weights
    scratch: int = 0  # bytes of scratch the call asks for (its get-size function)
    arguments: list[str] = field(default_factory=list)
    filter_permutation: tuple[int, ...] | None = None  # buffers[2] is a weight to store permuted so
    returns_void: bool = False  # the callee has no status result


@dataclass(eq=False)
class Intermediate:
    """A buffer of `type` that one call of an instruction writes and a later call of the same
    instruction reads (e.g. a convolution's unclamped output), standing in `Call.buffers`;
    selection allocates it in the activations region, live between the two calls."""

    type: MemRefType


class Declined(Exception):
    """The library has no function for this instruction; the message says why."""


def element(value: SSAValue) -> UniformQuantizedType:
    return value.type.element_type


def require_int8(values: list[SSAValue], bias: SSAValue | None = None) -> None:
    for value in values:
        if not is_quantized(value.type):
            raise Declined("not quantized")
        if value.type.element_type.bitwidth != (32 if value is bias else 8):
            raise Declined("needs int8 tensors and an int32 bias")


def per_tensor_weights(weights: UniformQuantizedType) -> None:
    if weights.per_channel:
        raise Declined("weights with one scale per output (the library's fully connected kernel takes one scale)")


def symmetric_weights(weights: UniformQuantizedType) -> None:
    if weights.offset_array().any():
        raise Declined("weights are not symmetric (zero point 0); use -quantization-schema=symmetric "
                       "or -enable-channelwise")


def accumulator_bias(op, weights: SSAValue) -> None:
    if bias_multiplier(element(op.input), element(weights), element(op.bias)) is not None:
        raise Declined("the bias scale is not input scale x weight scale (use an Int32 bias)")


def is_depthwise(op) -> bool:
    """A convolution with one input channel per group (the libraries' depthwise functions)."""
    groups = op.group.value.data
    return groups > 1 and groups == (op.input.type.get_shape()[3 if glow.is_nhwc(op) else 1])


def check_convolution(op, output: SSAValue) -> None:
    """What every library needs of a convolution, glow or glowll (raises Declined)."""
    require_int8([op.input, op.filter, op.bias, output], op.bias)
    if op.pool is not None:
        raise Declined("fused pooling (our kernel never stores the full-resolution output; the library would)")
    if op.residual is not None:
        raise Declined("fused residual add")
    symmetric_weights(element(op.filter))
    accumulator_bias(op, op.filter)


def check_pool(op, output: SSAValue) -> None:
    require_int8([op.input, output])
    if (isinstance(op, glowll.AvgPoolOp | glow.AvgPoolOp) and op.count_include_pad is not None
            and any(op.pads.get_values())):
        raise Declined("average pooling that counts the padding")


def accepts(op, check_convolution: Callable, check_pool: Callable) -> str | None:
    """For a `glow` op: None if the library will take it (once NHWC), else the reason."""
    try:
        if isinstance(op, glow.ConvolutionOp):
            check_convolution(op, op.result)
        elif isinstance(op, glow.MaxPoolOp | glow.AvgPoolOp):
            check_pool(op, op.result)
        else:
            return "not a convolution or pool"
    except Declined as reason:
        return str(reason)
    return None


def per_channel_requantization(op) -> tuple[np.ndarray, np.ndarray]:
    """The output multipliers and shifts of a convolution, one per output channel."""
    multipliers, shifts = output_multipliers(element(op.input), element(op.filter), element(op.dest))
    channels = op.bias.type.get_shape()[0]
    return np.broadcast_to(multipliers, (channels,)).copy(), np.broadcast_to(shifts, (channels,)).copy()


def elementwise_operands(op: glowll.ElementwiseOp, no_function: str) -> tuple:
    """(kind, first, second and output types, clamp bounds, element count) of an int8 Add or
    Mul of same-shaped operands, which both libraries implement (raises Declined otherwise)."""
    kind = op.kind.data
    if kind not in ("add", "mul"):
        raise Declined(f"{no_function} \"{kind}\"")
    require_int8([*op.inputs, op.dest])
    if any(v.type.get_shape() != op.dest.type.get_shape() for v in op.inputs):
        raise Declined("broadcasting")
    first, second, out = (element(v) for v in (*op.inputs, op.dest))
    low, high = activation_bounds(op, out)
    return kind, first, second, out, low, high, int(np.prod(op.dest.type.get_shape()))


@dataclass(frozen=True)
class ConvolutionGeometry:
    """The sizes of an NHWC convolution as the libraries' arguments name them."""

    n: int
    in_h: int
    in_w: int
    in_c: int
    out_c: int
    k_h: int
    k_w: int
    group_c: int
    out_h: int
    out_w: int
    stride_h: int
    stride_w: int
    pad_top: int
    pad_left: int
    dilation_h: int
    dilation_w: int

    @staticmethod
    def of(op: glowll.ConvolutionOp) -> ConvolutionGeometry:
        """Raises Declined for an NCHW convolution (the graph was not converted here)."""
        if not glow.is_nhwc(op):
            raise Declined("NCHW layout (the graph was not converted to NHWC here)")
        n, in_h, in_w, in_c = op.input.type.get_shape()
        out_c, k_h, k_w, group_c = op.filter.type.get_shape()
        _, out_h, out_w, _ = op.dest.type.get_shape()
        return ConvolutionGeometry(n, in_h, in_w, in_c, out_c, k_h, k_w, group_c, out_h, out_w,
                                   *op.strides.get_values(), *op.pads.get_values()[:2], *op.dilations.get_values())
