"""The `glow` dialect: Glow's graph IR, with tensor semantics.

A network is a `glow.function` whose single block holds the graph: `glow.placeholder`
ops read the inputs, `glow.constant` ops hold the weights, compute ops (Convolution,
FullyConnected, pools, elementwise arithmetic, ...) produce new tensors, and `glow.save`
ops name the outputs. A network with state kept between calls (a streaming model's) reads
it with `glow.state` and gives the next call's with `glow.state_store`. Layouts are ONNX's:
NCHW activations, OIHW filters. FullyConnected takes its weights as [in, out], as Glow does.

Each compute op has one shape rule, a static `shape_rule(...)` of its operand shapes and
attribute values. Its builder (`__init__`, taking operands and attributes as Python values)
derives the result type from it, and its verifier checks the result type against it; the
result's element type is the (first) input's unless the builder is given `result_element`.

Facts that passes need about an op (its glowll elementwise kind, whether it can run in
place, whether a transpose sinks through it, Glow's node kind name, its numpy semantics,
...) are kept on the op class as `FACTS`; the query functions at the end of this module
(`elementwise_kinds()`, `in_place_kinds()`, `glow_kinds()`, ...) derive every table from them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    SymbolNameConstraint,
    TensorType,
    UnitAttr,
    f32,
    i1,
    i16,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Dialect, Operation, Region, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import IsolatedFromAbove, NoTerminator, OpTrait, Pure, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from glowmlir.dialects.quant import coarser_levels, is_quantized, storage_type
from glowmlir.dialects.weights import NamedWeightSyntax, array_from_dense

# ----------------------------------------------------------------------------- helpers


NODE_NAME = "name"
"""The attribute naming a compute op after the model node it came from (profiles key values
as `<name>:0`)."""
DEQUANTIZE_ON_USE = "dequantize_on_use"
"""On a `glow.dequantize` of an int8 constant whose every use is a float convolution's filter
or FullyConnected's weights (a hybrid model's, `glow-choose-hybrid-weights`): those ops read
the int8 levels and dequantize each as they read it; the dequantize computes nothing itself."""
KERNEL_CHOICE = "kernel_choice"
"""On a convolution `glow-choose-conv-pool-kernels` decided (`-use-cmsis`): who runs it and why
(its glowll instructions carry it too, for the kernel selection report)."""
MODEL_NAME = "model_name"
"""On a placeholder or save whose C-legal name differs from the model's: the model's name
(`Bundle.run` takes and gives tensors by it)."""
MODEL_QUANTIZATION = "model_quantization"
"""The quantized type a quantized model's file (ONNX QDQ) gives a value: on a float constant
the model stores as integers (`glow-quantize-from-model` quantizes it back to exactly those
levels), and on the `glow.quantize` of one of the model's QuantizeLinear nodes (the types
that pass gives the ops it encloses)."""


def ints(values: Sequence[int] | DenseArrayBase) -> DenseArrayBase:
    """An `array<i64: ...>` attribute (an attribute given is kept)."""
    if isinstance(values, DenseArrayBase):
        return values
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def f32_attr(value: float | FloatAttr) -> FloatAttr:
    """An f32 `FloatAttr` (an attribute given is kept)."""
    return value if isinstance(value, FloatAttr) else FloatAttr(float(value), f32)


def i64_attr(value: int | IntegerAttr) -> IntegerAttr:
    """An i64 `IntegerAttr` (an attribute given is kept)."""
    return value if isinstance(value, IntegerAttr) else IntegerAttr(int(value), i64)


def int_value(value: int | IntegerAttr) -> int:
    """The integer of an int or an `IntegerAttr`."""
    return value.value.data if isinstance(value, IntegerAttr) else int(value)


def int_values(values: Sequence[int] | DenseArrayBase) -> tuple[int, ...]:
    """The integers of a sequence or an `array<i64: ...>` attribute."""
    return tuple(values.get_values() if isinstance(values, DenseArrayBase) else (int(v) for v in values))


def shape_of(value: SSAValue) -> tuple[int, ...]:
    """The shape of a tensor (glow) or buffer (glowll) value."""
    assert isinstance(value.type, TensorType | MemRefType), value.type
    return tuple(value.type.get_shape())


def tensor(shape: Sequence[int], element_type: Attribute = f32) -> TensorType:
    return TensorType(element_type, list(shape))


def element_of(value: SSAValue) -> Attribute:
    """The element type of a tensor or buffer value."""
    return value.type.element_type


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """Numpy/ONNX multidirectional broadcasting; raises ValueError when incompatible."""
    return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))


def merged_loops(shape: Sequence[int], strides: Sequence[Sequence[int]]) -> tuple[list[int], list[list[int]]]:
    """`shape` with adjacent dimensions merged into one where each of the views of `strides`
    (element strides, one list a view) steps through both alike (contiguously, or broadcast
    along both), and each view's strides along the merged dimensions."""
    shape = list(shape) or [1]
    strides = [list(s) or [1] for s in strides]
    merged_shape, merged = [shape[0]], [[s[0]] for s in strides]
    for d in range(1, len(shape)):
        if all(s[d - 1] == s[d] * shape[d] for s in strides):
            merged_shape[-1] *= shape[d]
            for m, s in zip(merged, strides):
                m[-1] = s[d]
        else:
            merged_shape.append(shape[d])
            for m, s in zip(merged, strides):
                m.append(s[d])
    return merged_shape, merged


def broadcast_strides(shape: Sequence[int], strides: Sequence[int], dest_shape: Sequence[int]) -> list[int]:
    """The strides of a tensor of `shape` and `strides` seen with `dest_shape` (numpy
    broadcasting: 0 along a broadcast dimension)."""
    pad = len(dest_shape) - len(shape)
    return [0] * pad + [0 if size == 1 and full != 1 else stride
                        for size, stride, full in zip(shape, strides, dest_shape[pad:])]


def broadcast_loops(dest_shape: Sequence[int], input_shapes: Sequence[Sequence[int]]) -> list[int]:
    """The loops of an elementwise op over contiguous operands of `input_shapes` broadcast to
    `dest_shape`: `merged_loops` of their element strides."""
    def contiguous(shape: Sequence[int]) -> list[int]:
        return [int(np.prod(shape[d + 1:])) for d in range(len(shape))]

    strides = [broadcast_strides(shape, contiguous(shape), dest_shape) for shape in input_shapes]
    return merged_loops(dest_shape, [contiguous(dest_shape), *strides])[0]

def pooled_size(size: int, kernel: int, stride: int, pad_begin: int, pad_end: int, dilation: int = 1) -> int:
    """Output extent of a sliding window (floor rounding, as Glow and ONNX by default).

    Raises ValueError unless the window fits: a non-empty input, a positive kernel, stride
    and dilation, non-negative pads, and a (dilated) kernel no larger than the padded input."""
    if size < 1:
        raise ValueError(f"the input is empty (extent {size}) along a window axis")
    if min(kernel, stride, dilation) < 1 or min(pad_begin, pad_end) < 0:
        raise ValueError(f"kernel {kernel}, stride {stride} and dilation {dilation} must be positive "
                         f"and pads {pad_begin}, {pad_end} non-negative")
    span = dilation * (kernel - 1) + 1
    if span > size + pad_begin + pad_end:
        raise ValueError(f"the window ({span}) is larger than the padded input ({size} + {pad_begin} + {pad_end})")
    return (size + pad_begin + pad_end - span) // stride + 1


def window_sizes(spatial: Sequence[int], kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int],
                 dilations: Sequence[int] | None = None) -> tuple[int, ...]:
    """Output extents of a sliding window over 1 to 3 spatial axes; `pads` holds the begin of
    each axis, then the end of each (2-D: [top, left, bottom, right]). Raises ValueError
    unless there is one kernel, stride and dilation value per axis and the window fits."""
    rank = len(spatial)
    dilations = [1] * rank if dilations is None else dilations
    if not 1 <= rank <= 3 or any(len(v) != rank for v in (kernel, strides, dilations)) or len(pads) != 2 * rank:
        raise ValueError(f"a window over the spatial axes {list(spatial)} needs one kernel, stride and dilation "
                         f"value per axis and two pads (kernel {list(kernel)}, strides {list(strides)}, "
                         f"dilations {list(dilations)}, pads {list(pads)})")
    return tuple(pooled_size(size, k, s, pads[axis], pads[axis + rank], d)
                 for axis, (size, k, s, d) in enumerate(zip(spatial, kernel, strides, dilations)))


def pooled_shape(shape: Sequence[int], kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int],
                 dilations: Sequence[int] | None = None) -> tuple[int, ...]:
    """THE window rule (pools, convolutions, a convolution's fused pool): the [N, C, *out]
    output of an [N, C, *spatial] input under a window of `kernel` with `strides`, `dilations`
    and `pads` (`window_sizes`); ValueError when the window does not fit."""
    n, c, *spatial = shape
    return (n, c, *window_sizes(spatial, kernel, strides, pads, dilations))


def same_padding(size: int, kernel: int, stride: int, dilation: int = 1, upper: bool = True) -> tuple[int, int]:
    """THE SAME padding rule (TFLite's SAME, ONNX's SAME_UPPER and SAME_LOWER): the (begin, end)
    pads giving an output of ceil(size / stride); an odd total puts the extra pad at the end
    (`upper`, TFLite and SAME_UPPER) or at the beginning (SAME_LOWER)."""
    if min(kernel, stride, dilation) < 1:
        raise ValueError(f"kernel {kernel}, stride {stride} and dilation {dilation} must be positive")
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - size)
    small, large = total // 2, total - total // 2
    return (small, large) if upper else (large, small)


def same_pads(spatial: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
              dilations: Sequence[int] | None = None, upper: bool = True) -> list[int]:
    """`same_padding` on every spatial axis, as Glow's pads: the begin of each axis, then the
    end of each (2-D: [top, left, bottom, right])."""
    dilations = dilations if dilations is not None else [1] * len(spatial)
    pairs = [same_padding(s, k, st, d, upper) for s, k, st, d in zip(spatial, kernel, strides, dilations, strict=True)]
    return [begin for begin, _ in pairs] + [end for _, end in pairs]


def check_indices(indices: np.ndarray, size: int) -> None:
    """ONNX's rule for Gather and GatherElements: each index lies in [-size, size - 1]
    (negative ones count from the end); raises ValueError naming the first that does not."""
    outside = indices[(indices < -size) | (indices >= size)]
    if outside.size:
        raise ValueError(f"index {int(outside.flat[0])} is out of range for an axis of {size} "
                         f"(valid: {-size} to {size - 1})")


MAX_TENSOR_BYTES = (1 << 63) - 1
"""No address space (a 64-bit one at most) holds a larger tensor."""


def verify_static_shape(op: IRDLOperation) -> None:
    """Glow's tensors have static shapes: every result dimension is known and not negative,
    and the tensor fits a 64-bit address space."""
    for result in op.results:
        if not isinstance(result.type, TensorType):
            continue
        shape = result.type.get_shape()
        if any(d < 0 for d in shape):
            raise VerifyException(f"{op.name}: result type {result.type} has a dynamic or negative dimension")
        size = math.prod(shape) * storage_type(result.type.element_type).compile_time_size
        if size > MAX_TENSOR_BYTES:
            raise VerifyException(f"{op.name}: result of shape {list(shape)} has {size:,} bytes, more than a "
                                  f"64-bit address space holds")

# ----------------------------------------------------------------------------- enum attributes
#
# Closed sets are enums: an op's `.data` is a `StrEnum` member (equal to its string), and an
# unknown value is a parse error. In an op's assembly they read as a bare keyword
# (`activation relu`); elsewhere as `#glow<activation relu>`. glowll uses the same ones.


class Activation(StrEnum):
    """An activation that Convolution, FullyConnected and Add apply to their result."""

    RELU = "relu"
    CLIP = "clip"  # with clip_min and clip_max


class PoolKind(StrEnum):
    MAX = "max"
    AVG = "avg"


class Layout(StrEnum):
    """The layout of a convolution's or pool's activations (NCHW unless stated)."""

    NCHW = "NCHW"
    NHWC = "NHWC"  # NHWC activations, OHWI filter: what the kernel libraries take


class ComparisonPredicate(StrEnum):
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"


class ReduceKind(StrEnum):
    SUM = "sum"
    MEAN = "mean"
    MAX = "max"
    MIN = "min"
    PROD = "prod"


class ArgReduceKind(StrEnum):
    MAX = "max"
    MIN = "min"


class ScatterReduction(StrEnum):
    """How ScatterND combines an update with the element it lands on (ONNX's `reduction`)."""

    NONE = "none"
    ADD = "add"
    MUL = "mul"
    MAX = "max"
    MIN = "min"


@irdl_attr_definition
class ActivationAttr(EnumAttribute[Activation], SpacedOpaqueSyntaxAttribute):
    name = "glow.activation"


@irdl_attr_definition
class PoolKindAttr(EnumAttribute[PoolKind], SpacedOpaqueSyntaxAttribute):
    name = "glow.pool"


@irdl_attr_definition
class LayoutAttr(EnumAttribute[Layout], SpacedOpaqueSyntaxAttribute):
    name = "glow.layout"


@irdl_attr_definition
class ComparisonPredicateAttr(EnumAttribute[ComparisonPredicate], SpacedOpaqueSyntaxAttribute):
    name = "glow.predicate"


@irdl_attr_definition
class ReduceKindAttr(EnumAttribute[ReduceKind], SpacedOpaqueSyntaxAttribute):
    name = "glow.reduce_kind"


@irdl_attr_definition
class ScatterReductionAttr(EnumAttribute[ScatterReduction], SpacedOpaqueSyntaxAttribute):
    name = "glow.scatter_reduction"


@irdl_attr_definition
class ArgReduceKindAttr(EnumAttribute[ArgReduceKind], SpacedOpaqueSyntaxAttribute):
    name = "glow.arg_reduce_kind"


ENUM_ATTRIBUTES = [ActivationAttr, PoolKindAttr, LayoutAttr, ComparisonPredicateAttr, ReduceKindAttr,
                   ArgReduceKindAttr, ScatterReductionAttr]


def enum_attr(attr_type: type[EnumAttribute], value: str | StrEnum | EnumAttribute | None) -> EnumAttribute | None:
    """`value` (a string, an enum member or already the attribute) as an `attr_type`; None stays None.
    An unknown string raises ValueError."""
    if value is None or isinstance(value, attr_type):
        return value
    return attr_type(attr_type.enum_type(value))


def flags(**values: bool) -> dict[str, UnitAttr]:
    """The unit-attribute properties among `values` that are set: `flags(log=True)`."""
    return {name: UnitAttr() for name, value in values.items() if value}


NCHW_TO_NHWC = (0, 2, 3, 1)
NHWC_TO_NCHW = (0, 3, 1, 2)


def to_nhwc(shape: Sequence[int]) -> tuple[int, ...]:
    return tuple(shape[p] for p in NCHW_TO_NHWC)


def to_nchw(shape: Sequence[int]) -> tuple[int, ...]:
    return tuple(shape[p] for p in NHWC_TO_NCHW)


def is_nhwc(op: IRDLOperation) -> bool:
    layout = op.properties.get("layout")
    return layout is not None and layout.data == Layout.NHWC


# ----------------------------------------------------------------------------- op facts


@dataclass(frozen=True, kw_only=True)
class OpFacts:
    """What passes need to know about a glow op, kept on its class as `FACTS`.

    `glow_kind` is Glow's name for the node kind (as `-keep-original-precision-for-nodes`
    spells it; None where Glow has no node of its own); `quantizable` says that the op has
    integer kernels, so `glow-quantize` may give it quantized types; `keeps_input_quantization`:
    quantized, its result has its input's parameters (it only moves, selects or averages
    values: pools, reshape, transpose, slice, pad)."""

    glow_kind: str | None = None
    quantizable: bool = False
    keeps_input_quantization: bool = False
    glow_kind_of: Callable[[Operation], str] | None = None
    """Glow's kind where it depends on the op (a resample is ResizeNearest or ResizeBilinear
    by its taps); `glow_kind` is then the kind of the class (see `node_kind`)."""


@dataclass(frozen=True, kw_only=True)
class ElementwiseFacts(OpFacts):
    """The facts of an op that lowers to one `glowll.elementwise` of `kind` with `arity` sources
    (broadcast to the result's shape).

    `in_place`: the destination may share the first source's buffer (glowll-share-buffers);
    `layout_agnostic`: a transpose of all its operands sinks through it (glow-sink-transposes);
    `mixed_types`: the integer kernels emit it whatever the element type (operand and result
    types may differ, as compare, convert and select, or only integer/boolean semantics are
    defined); `required`: the glowll properties the kind cannot do without; `numpy`: the float
    reference semantics, `numpy(op, *inputs) -> array` (None: not evaluated at compile time);
    `float_kernel`: the f32 kernel's body for one element, `float_kernel(m, *sources) -> value`,
    where `m` is the lowering's `kernels.FloatMath` (f32 arithmetic, the approximations of exp,
    log, tanh..., the instruction's `alpha`/`beta`/`value`; None: no float kernel)."""

    kind: str
    arity: int
    in_place: bool = False
    layout_agnostic: bool = False
    mixed_types: bool = False
    required: tuple[str, ...] = ()
    numpy: Callable[..., np.ndarray] | None = None
    float_kernel: Callable[..., Any] | None = None


KINDS_WITHOUT_OP = (
    # lowered from glow.splat
    ElementwiseFacts(kind="splat", arity=0, required=("value",), glow_kind="Splat", float_kernel=lambda m: m.value()),
    # made by the lowering (copies into outputs)
    ElementwiseFacts(kind="copy", arity=1, in_place=True, float_kernel=lambda m, x: x),
)
"""The glowll elementwise kinds that no glow compute op lowers to as its own kind."""


def _param(op: Operation, name: str) -> float:
    return op.properties[name].value.data


def apply_fused_activation(op: Operation, x: np.ndarray) -> np.ndarray:
    """Numpy: the fused activation of a glow or glowll op (Convolution, FullyConnected, Add) on x."""
    kind = op.properties.get("activation")
    if kind is None:
        return x
    if kind.data == Activation.RELU:
        return np.maximum(x, 0)
    return np.clip(x, op.clip_min.value.data, op.clip_max.value.data)


# ----------------------------------------------------------------------------- shared property groups
#
# Plain (undecorated) classes whose property definitions IRDL takes over into every op
# deriving from them, here and in glowll: each group is declared once.


class FusedActivation:
    """The fused activation of an op's result: `activation relu`, or `activation clip` with
    `clip_min`/`clip_max` (glow.convolution, glow.fully_connected, glow.add and their glowll
    instructions). Build the properties with `fused_activation_properties`."""

    activation = opt_prop_def(ActivationAttr)
    clip_min = opt_prop_def(FloatAttr)
    clip_max = opt_prop_def(FloatAttr)

    def verify_activation(self) -> None:
        activation = self.properties.get("activation")
        if activation is not None and activation.data == Activation.CLIP and \
                ("clip_min" not in self.properties or "clip_max" not in self.properties):
            raise VerifyException(f"{self.name}: a clip activation needs clip_min and clip_max")

    def apply_activation(self, x: np.ndarray) -> np.ndarray:
        """Numpy: this op's fused activation applied to x."""
        return apply_fused_activation(self, x)


FusedActivationMixin = FusedActivation
"""The former name of `FusedActivation`."""


def fused_activation_properties(activation: Activation | str | ActivationAttr | None,
                                clip_min: float | FloatAttr | None = None,
                                clip_max: float | FloatAttr | None = None) -> dict[str, Attribute]:
    """The `FusedActivation` properties: none without an activation; a clip needs both bounds."""
    activation = enum_attr(ActivationAttr, activation)
    if activation is None or activation.data != Activation.CLIP:
        if clip_min is not None or clip_max is not None:
            raise ValueError("clip_min and clip_max go with a clip activation")
        return {} if activation is None else {"activation": activation}
    if clip_min is None or clip_max is None:
        raise ValueError("a clip activation needs clip_min and clip_max")
    return {"activation": activation, "clip_min": f32_attr(clip_min), "clip_max": f32_attr(clip_max)}


class LayoutProperty:
    """The optional `layout` of a convolution's or pool's activations: NHWC (with OHWI
    filters) for the kernel libraries; NCHW when absent."""

    layout = opt_prop_def(LayoutAttr)


def layout_value(layout: Layout | str | LayoutAttr | None) -> Layout | None:
    """The `Layout` of a builder's `layout` argument (None: NCHW, the default)."""
    layout = enum_attr(LayoutAttr, layout)
    return None if layout is None else layout.data


def layout_properties(layout: Layout | str | LayoutAttr | None) -> dict[str, Attribute]:
    """The `LayoutProperty` property: none for None (NCHW, the default)."""
    layout = enum_attr(LayoutAttr, layout)
    return {} if layout is None else {"layout": layout}


class PoolWindow:
    """A pool's window: `kernel` [KH, KW], `strides` [SH, SW] and `pads` (top, left,
    bottom, right) — glow.max_pool, glow.avg_pool and their glowll instructions."""

    kernel = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)  # top, left, bottom, right


def pool_window_properties(kernel: Sequence[int], strides: Sequence[int] = (1, 1),
                           pads: Sequence[int] = (0, 0, 0, 0)) -> dict[str, Attribute]:
    """The `PoolWindow` properties."""
    return {"kernel": ints(kernel), "strides": ints(strides), "pads": ints(pads)}


class ConvolutionWindow:
    """A convolution's window: `strides`, `pads` (the begin of each spatial axis, then the end
    of each; 2-D: top, left, bottom, right), `dilations` and `group` (glow.convolution,
    glow.conv_transpose and glowll.convolution)."""

    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase)
    group = prop_def(IntegerAttr, default_value=IntegerAttr(1, i64))


class FusedPool:
    """A pool window fused into a convolution's result (glow-fuse-conv-pool): `pool` ("max"
    or "avg") with `pool_kernel`, `pool_strides`, `pool_pads` and `pool_count_include_pad`.
    `pool_widening` = k (a quantized average): the pool averages the convolution's int8
    levels widened exactly to the result's int16 type (`quant.finer_levels`: each level x
    2^k), as an int8 average of a much finer profiled range is taken (`quantized_conversion._averaged`);
    the convolution's own levels are then of `convolved_element`'s type."""

    pool = opt_prop_def(PoolKindAttr)
    pool_kernel = opt_prop_def(DenseArrayBase)
    pool_strides = opt_prop_def(DenseArrayBase)
    pool_pads = opt_prop_def(DenseArrayBase)
    pool_count_include_pad = opt_prop_def(UnitAttr)
    pool_widening = opt_prop_def(IntegerAttr)

    def verify_pool_widening(self) -> None:
        """A widening pool is an average of int8 levels into an int16 result."""
        if self.pool_widening is None:
            return
        result = self.results[0] if self.results else self.operands[0]  # a glowll op's dest is its first operand
        if self.pool is None or self.pool.data != PoolKind.AVG or storage_type(element_of(result)) != i16:
            raise VerifyException(f"{self.name}: pool_widening belongs to an average pool of int16 result")


def fused_pool_properties(pool: PoolKind | str | PoolKindAttr | None, kernel: Sequence[int] | None = None,
                          strides: Sequence[int] | None = None, pads: Sequence[int] | None = None,
                          count_include_pad: bool = False, widening: int | IntegerAttr | None = None
                          ) -> dict[str, Attribute]:
    """The `FusedPool` properties: none without a pool; a pool needs its whole window."""
    pool = enum_attr(PoolKindAttr, pool)
    if pool is None:
        return {}
    if kernel is None or strides is None or pads is None:
        raise ValueError("a fused pool needs its kernel, strides and pads")
    return {"pool": pool, "pool_kernel": ints(kernel), "pool_strides": ints(strides), "pool_pads": ints(pads)} | \
        flags(pool_count_include_pad=count_include_pad) | \
        ({} if widening is None else {"pool_widening": i64_attr(widening)})


def convolved_element(op: IRDLOperation) -> Attribute:
    """The element type of a convolution's (glow or glowll) own outputs, before its fused
    pool or lookup table: a fused table's `lookup_input` (glowll-fuse-lookup-tables); else its
    result's, unless the pool widens them (`FusedPool.pool_widening`), then the int8 type the
    result's finer levels come from (`quant.coarser_levels`). FullyConnected has no pool: its
    result's, or its table's `lookup_input`."""
    result = op.results[0] if op.results else op.operands[0]  # a glowll op's dest is its first operand
    table_input = op.properties.get("lookup_input")  # a fused lookup table's input (`glowll.ConvolutionOp`)
    if table_input is not None:
        return table_input
    widening = op.properties.get("pool_widening")
    return element_of(result) if widening is None else coarser_levels(element_of(result), widening.value.data)


# ----------------------------------------------------------------------------- the compute op base


class KeywordPropertiesOnly(OpTrait):
    """Refuses an attribute named like one of the op's properties. A property the assembly
    format spells as a keyword (`activation relu`) is not read from the attribute dictionary:
    `{activation = #glow<activation relu>}` would be kept as an unrelated attribute, and the
    op would silently have no activation."""

    def verify(self, op: IRDLOperation) -> None:
        misplaced = sorted(set(op.attributes) & set(type(op).get_irdl_definition().properties))
        if misplaced:
            raise VerifyException(f"{op.name}: `{misplaced[0]}` is a property written in the op's syntax "
                                  f"(e.g. `{misplaced[0]} <value>` after the operands), not in the attribute "
                                  f"dictionary")


ElementLike = Attribute | TensorType | None
"""A builder's `result_element`: an element type, a tensor type (its element type is taken,
the shape is still derived), or None for the input's element type."""


def _element(result_element: ElementLike, default: Attribute) -> Attribute:
    if result_element is None:
        return default
    return result_element.element_type if isinstance(result_element, TensorType) else result_element


class GlowOp(IRDLOperation):
    """Base of the compute ops: the result type must equal the op's shape rule."""

    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure(), KeywordPropertiesOnly())
    FACTS: ClassVar[OpFacts] = OpFacts()

    def _build(self, operands: Sequence, shape: Sequence[int], element: Attribute,
               properties: dict[str, Attribute | None] | None = None) -> None:
        """Initializes the op with the result type `tensor<shape x element>` (properties that
        are None are left out)."""
        IRDLOperation.__init__(self, operands=list(operands), result_types=[tensor(shape, element)],
                               properties={k: v for k, v in (properties or {}).items() if v is not None})

    def infer_shape(self) -> tuple[int, ...]:  # pragma: no cover - overridden
        raise NotImplementedError

    def verify_(self) -> None:
        verify_static_shape(self)
        try:
            expected = tuple(self.infer_shape())
        except (ValueError, IndexError) as error:
            raise VerifyException(f"{self.name}: {error}") from error
        actual = shape_of(self.results[0])
        if actual != expected:
            raise VerifyException(f"{self.name}: result shape {list(actual)} does not match the inferred shape "
                                  f"{list(expected)}")


# ----------------------------------------------------------------------------- structure


@irdl_op_definition
class FunctionOp(IRDLOperation):
    """A network: one block of graph ops, no terminator (outputs are `glow.save` ops)."""

    name = "glow.function"
    sym_name = prop_def(SymbolNameConstraint())
    body = region_def("single_block")
    traits = traits_def(SymbolOpInterface(), NoTerminator(), IsolatedFromAbove())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym_name attr-dict-with-keyword $body"

    def __init__(self, name: str, body: Region):
        super().__init__(properties={"sym_name": StringAttr(name)}, regions=[body])


@irdl_op_definition
class PlaceholderOp(IRDLOperation):
    """A graph input, bound by the caller in the mutable region."""

    name = "glow.placeholder"
    name_ = prop_def(StringAttr, prop_name="name")
    result = result_def(TensorType)  # not Pure: an unused input stays part of the bundle's API
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$name attr-dict `:` type($result)"

    def __init__(self, name: str, result_type: TensorType):
        super().__init__(properties={"name": StringAttr(name)}, result_types=[result_type])

    def verify_(self) -> None:
        verify_static_shape(self)


class NamedTensorOp(NamedWeightSyntax, IRDLOperation):
    """A named tensor whose `value` the op holds (printed `elided` when large): a constant's,
    or a state's initial value."""

    name_ = prop_def(StringAttr, prop_name="name")
    value = opt_prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)

    def __init__(self, name: str, value: DenseIntOrFPElementsAttr, result_element: Attribute | None = None):
        """`result_element`: the element type of the result when it is not the value's (a
        quantized tensor holds its integers)."""
        result_type = value.type if result_element is None else tensor(value.type.get_shape(), result_element)
        super().__init__(properties={"name": StringAttr(name), "value": value}, result_types=[result_type])

    def verify_(self) -> None:
        verify_static_shape(self)
        if self.value is not None and tuple(self.value.get_shape()) != shape_of(self.result):
            raise VerifyException(f"{self.name} \"{self.name_.data}\": value shape does not match the result type")


@irdl_op_definition
class ConstantOp(NamedTensorOp):
    """A named constant tensor (a weight); large values print as `elided`."""

    name = "glow.constant"
    traits = traits_def(Pure())


@irdl_op_definition
class SplatOp(IRDLOperation):
    """A tensor whose elements all equal `value`."""

    name = "glow.splat"
    value = prop_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, value: float, result_type: TensorType):
        super().__init__(properties={"value": f32_attr(value)}, result_types=[result_type])

    def verify_(self) -> None:
        verify_static_shape(self)


class NamedStoreOp(IRDLOperation):
    """Writes a tensor to the storage named `name`."""

    input = operand_def(TensorType)
    name_ = prop_def(StringAttr, prop_name="name")
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input `as` $name attr-dict `:` type($input)"

    def __init__(self, input: SSAValue, name: str):
        super().__init__(operands=[input], properties={"name": StringAttr(name)})


@irdl_op_definition
class SaveOp(NamedStoreOp):
    """Writes a tensor to the output placeholder `name` (Glow's Save node)."""

    name = "glow.save"


@irdl_op_definition
class StateOp(NamedTensorOp):
    """State the network keeps between calls (a TFLite resource variable): its value when a
    call starts. `value` is the initial value, the one the first call starts from (and the
    first after a reset); the function's `glow.state_store` of the same name gives the one
    the next call starts from (with none, the state keeps its initial value). Not Pure: each
    is the call's own starting value."""

    name = "glow.state"


@irdl_op_definition
class StateStoreOp(NamedStoreOp):
    """Gives the `glow.state` named `name` the value the next call starts from (written when
    this call's computation is done: every read of the state sees the value it started with)."""

    name = "glow.state_store"

    def verify_(self) -> None:
        block = self.parent_block()
        if block is None:
            return
        name = self.name_.data
        states = [op for op in block.ops if isinstance(op, StateOp) and op.name_.data == name]
        if not states:
            raise VerifyException(f"glow.state_store: no glow.state \"{name}\" in the function")
        if states[0].result.type != self.input.type:
            raise VerifyException(f"glow.state_store: state \"{name}\" is {states[0].result.type}, the value "
                                  f"stored {self.input.type}")
        if sum(1 for op in block.ops if isinstance(op, StateStoreOp) and op.name_.data == name) > 1:
            raise VerifyException(f"glow.state_store: state \"{name}\" is stored more than once")


# ----------------------------------------------------------------------------- compute ops


@irdl_op_definition
class ConvolutionOp(GlowOp, ConvolutionWindow, FusedActivation, FusedPool, LayoutProperty):
    """2-D convolution, NCHW input, OIHW filter (I = C / group), bias [O]. Importers may also
    build 1-D ([N, C, L]) and 3-D ([N, C, D, H, W]) ones; the `glow-decompose-1d-windows` and
    `glow-decompose-3d-convolution` passes rewrite them as 2-D ones, the only ones lowered.

    `glow-fuse-conv-pool` may give it a `pool` window ("max" or "avg", with `pool_kernel`,
    `pool_strides`, `pool_pads`): the result is then the pooled convolution (with
    `pool_widening`, an int16 average of its int8 levels widened exactly: `FusedPool`).
    `glow-fuse-residual-add` may give it a `residual` operand added to its result (before
    the activation), as in ResNet blocks. With `layout NHWC`, input and result are NHWC and
    the filter OHWI (for the kernel libraries).
    """

    name = "glow.convolution"
    input = operand_def(TensorType)
    filter = operand_def(TensorType)
    bias = operand_def(TensorType)
    residual = opt_operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = ("$input `,` $filter `,` $bias (`residual` $residual^)? (`activation` $activation^)? "
                       "(`pool` $pool^)? (`layout` $layout^)? attr-dict `:` "
                       "functional-type(operands, results)")
    FACTS: ClassVar[OpFacts] = OpFacts(glow_kind="Convolution", quantizable=True)

    def __init__(self, input: SSAValue, filter: SSAValue, bias: SSAValue, *,
                 strides: Sequence[int] = (1, 1), pads: Sequence[int] = (0, 0, 0, 0),
                 dilations: Sequence[int] = (1, 1), group: int = 1,
                 activation: Activation | str | None = None, clip_min: float | None = None,
                 clip_max: float | None = None, residual: SSAValue | None = None,
                 pool: PoolKind | str | None = None, pool_kernel: Sequence[int] | None = None,
                 pool_strides: Sequence[int] | None = None, pool_pads: Sequence[int] | None = None,
                 pool_count_include_pad: bool = False, pool_widening: int | IntegerAttr | None = None,
                 layout: Layout | str | None = None, result_element: ElementLike = None):
        properties = ({"strides": ints(strides), "pads": ints(pads), "dilations": ints(dilations),
                       "group": i64_attr(group)} | fused_activation_properties(activation, clip_min, clip_max)
                      | fused_pool_properties(pool, pool_kernel, pool_strides, pool_pads, pool_count_include_pad,
                                              pool_widening)
                      | layout_properties(layout))
        pool_window = None if pool is None else (int_values(pool_kernel), int_values(pool_strides),
                                                 int_values(pool_pads))
        shape = self.result_shape(shape_of(input), shape_of(filter), int_values(strides), int_values(pads),
                                  int_values(dilations), int_value(group), layout=layout_value(layout),
                                  pool_window=pool_window)
        self._build([input, filter, bias, residual], shape,
                    _element(result_element, element_of(input)), properties)

    def builder_arguments(self) -> dict[str, object]:
        """This convolution's builder keyword arguments: `ConvolutionOp(x, w, b, **(
        conv.builder_arguments() | changes))` builds a changed copy (a fusion)."""
        return {"strides": self.strides, "pads": self.pads, "dilations": self.dilations, "group": self.group,
                "activation": self.activation, "clip_min": self.clip_min, "clip_max": self.clip_max,
                "residual": self.residual, "pool": self.pool, "pool_kernel": self.pool_kernel,
                "pool_strides": self.pool_strides, "pool_pads": self.pool_pads,
                "pool_count_include_pad": self.pool_count_include_pad is not None,
                "pool_widening": self.pool_widening, "layout": self.layout}

    @staticmethod
    def shape_rule(input_shape, filter_shape, strides, pads, dilations, group) -> tuple[int, ...]:
        """[N, O, *out] of an input [N, C, *spatial] and a filter [O, C / group, *kernel] (no
        fused pool)."""
        (n, c, *spatial), (o, i, *kernel) = input_shape, filter_shape
        if group < 1 or c != i * group or o % group:
            raise ValueError(f"filter {list(filter_shape)} does not fit input channels {c} with group {group}")
        return pooled_shape((n, o, *spatial), kernel, strides, pads, dilations)

    @staticmethod
    def result_shape(input_shape, filter_shape, strides, pads, dilations, group, *,
                     layout: Layout | str | None = None, pool_window=None) -> tuple[int, ...]:
        """The result shape: `shape_rule` in the op's layout, then the fused pool's window
        ((kernel, strides, pads), or None) if it has one."""
        nhwc = layout == Layout.NHWC
        if nhwc:  # NHWC input, OHWI filter: the same rule on the NCHW/OIHW views
            input_shape, filter_shape = to_nchw(input_shape), to_nchw(filter_shape)
        shape = ConvolutionOp.shape_rule(input_shape, filter_shape, strides, pads, dilations, group)
        if nhwc:
            if pool_window is not None:
                raise ValueError("an NHWC convolution has no fused pool")
            return to_nhwc(shape)
        return shape if pool_window is None else pooled_shape(shape, *pool_window)

    def convolution_shape(self) -> tuple[int, ...]:
        """The shape before the fused pooling, if any (NCHW)."""
        return convolution_shape(self)

    def infer_shape(self):
        return convolution_result_shape(self)

    def verify_(self) -> None:
        super().verify_()
        self.verify_activation()
        self.verify_pool_widening()
        if shape_of(self.bias) != (shape_of(self.filter)[0],):
            raise VerifyException("glow.convolution: bias must have one element per output channel")
        if self.residual is not None and (shape_of(self.residual) != shape_of(self.result) or self.pool is not None):
            raise VerifyException("glow.convolution: a residual must have the result's shape, and no pool")


def _convolution_operands(op: IRDLOperation):
    """The shape rule's arguments of a convolution (glow or glowll)."""
    packed = op.properties.get("filter_shape")  # a glowll filter packed for a microkernel
    filter_shape = shape_of(op.filter) if packed is None else tuple(packed.get_values())
    return (shape_of(op.input), filter_shape, op.strides.get_values(), op.pads.get_values(),
            op.dilations.get_values(), op.group.value.data)


def convolution_shape(op: IRDLOperation) -> tuple[int, ...]:
    """The NCHW shape of a convolution (`glow.convolution` or `glowll.convolution`) before
    its fused pooling, from its input, filter and window properties."""
    input_shape, filter_shape, *window = _convolution_operands(op)
    if is_nhwc(op):  # NHWC input, OHWI filter: the same rule on the NCHW/OIHW views
        input_shape, filter_shape = to_nchw(input_shape), to_nchw(filter_shape)
    return ConvolutionOp.shape_rule(input_shape, filter_shape, *window)


def pools_globally(op: IRDLOperation) -> bool:
    """A convolution (glow or glowll) whose fused pool takes its whole output plane to one
    element, unpadded."""
    return (op.pool is not None and tuple(op.pool_kernel.get_values()) == tuple(convolution_shape(op)[2:])
            and not any(op.pool_pads.get_values()))


def convolution_result_shape(op: IRDLOperation) -> tuple[int, ...]:
    """The result shape of a convolution (glow or glowll), pooled by its fused `pool` window
    if it has one."""
    pool_window = None if op.pool is None else (op.pool_kernel.get_values(), op.pool_strides.get_values(),
                                                op.pool_pads.get_values())
    layout = op.properties.get("layout")
    return ConvolutionOp.result_shape(*_convolution_operands(op), layout=None if layout is None else layout.data,
                                      pool_window=pool_window)


def pool_result_shape(op: IRDLOperation) -> tuple[int, ...]:
    """The result shape of a max or average pool (glow or glowll), NCHW or NHWC."""
    layout = op.properties.get("layout")
    return PoolOp.shape_rule(shape_of(op.input), op.kernel.get_values(), op.strides.get_values(),
                             op.pads.get_values(), None if layout is None else layout.data)


@irdl_op_definition
class ConvTransposeOp(GlowOp, ConvolutionWindow):
    """Transposed convolution (ONNX ConvTranspose) over 1 to 3 spatial axes: input [N, C, *spatial],
    filter [C, O / group, *kernel], bias [O]. An output extent is (size - 1) * stride + dilation
    * (kernel - 1) + 1 + output_padding - pad_begin - pad_end. Not lowered:
    `glow-decompose-conv-transpose` rewrites it as a `glow.convolution`."""

    name = "glow.conv_transpose"
    input = operand_def(TensorType)
    filter = operand_def(TensorType)
    bias = operand_def(TensorType)
    result = result_def(TensorType)
    output_padding = prop_def(DenseArrayBase)
    FACTS: ClassVar[OpFacts] = OpFacts()
    assembly_format = "$input `,` $filter `,` $bias attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue, filter: SSAValue, bias: SSAValue, *, strides: Sequence[int],
                 pads: Sequence[int], dilations: Sequence[int], output_padding: Sequence[int], group: int = 1,
                 result_element: ElementLike = None):
        shape = self.shape_rule(shape_of(input), shape_of(filter), int_values(strides), int_values(pads),
                                int_values(dilations), int_values(output_padding), int_value(group))
        self._build([input, filter, bias], shape, _element(result_element, element_of(input)),
                    {"strides": ints(strides), "pads": ints(pads), "dilations": ints(dilations),
                     "output_padding": ints(output_padding), "group": i64_attr(group)})

    @staticmethod
    def shape_rule(input_shape, filter_shape, strides, pads, dilations, output_padding, group) -> tuple[int, ...]:
        (n, c, *spatial), (c_in, per_group, *kernel) = input_shape, filter_shape
        rank = len(spatial)
        if group < 1 or c != c_in or c % group:
            raise ValueError(f"filter {list(filter_shape)} does not fit input channels {c} with group {group}")
        if not 1 <= rank <= 3 or any(len(v) != rank for v in (kernel, strides, dilations, output_padding)) \
                or len(pads) != 2 * rank:
            raise ValueError(f"a transposed window over the spatial axes {list(spatial)} needs one kernel, stride, "
                             f"dilation and output padding value per axis and two pads")
        if min(*strides, *dilations) < 1:
            raise ValueError(f"strides {list(strides)} and dilations {list(dilations)} must be positive")
        out = [(size - 1) * s + d * (k - 1) + 1 + extra - pads[axis] - pads[axis + rank]
               for axis, (size, k, s, d, extra) in enumerate(zip(spatial, kernel, strides, dilations, output_padding))]
        if min(out) < 1:
            raise ValueError(f"the pads {list(pads)} leave an empty output")
        return (n, per_group * group, *out)

    def infer_shape(self):
        return ConvTransposeOp.shape_rule(shape_of(self.input), shape_of(self.filter), self.strides.get_values(),
                                          self.pads.get_values(), self.dilations.get_values(),
                                          self.output_padding.get_values(), self.group.value.data)

    def verify_(self) -> None:
        super().verify_()
        if shape_of(self.bias) != (shape_of(self.result)[1],):
            raise VerifyException("glow.conv_transpose: bias must have one element per output channel")


@irdl_op_definition
class FullyConnectedOp(GlowOp, FusedActivation):
    """out[m, n] = sum_k input[m, k] * weights[k, n] + bias[n]."""

    name = "glow.fully_connected"
    input = operand_def(TensorType)
    weights = operand_def(TensorType)
    bias = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = ("$input `,` $weights `,` $bias (`activation` $activation^)? attr-dict `:` "
                       "functional-type(operands, results)")
    FACTS: ClassVar[OpFacts] = OpFacts(glow_kind="FullyConnected", quantizable=True)

    def __init__(self, input: SSAValue, weights: SSAValue, bias: SSAValue, *,
                 activation: Activation | str | None = None, clip_min: float | None = None,
                 clip_max: float | None = None, result_element: ElementLike = None):
        shape = self.shape_rule(shape_of(input), shape_of(weights), shape_of(bias))
        self._build([input, weights, bias], shape, _element(result_element, element_of(input)),
                    fused_activation_properties(activation, clip_min, clip_max))

    @staticmethod
    def shape_rule(input_shape, weights_shape, bias_shape) -> tuple[int, ...]:
        (m, k), (k2, n) = input_shape, weights_shape
        if k != k2 or tuple(bias_shape) != (n,):
            raise ValueError(f"input {[m, k]}, weights {[k2, n]} and bias {list(bias_shape)} do not fit")
        return (m, n)

    def infer_shape(self):
        return self.shape_rule(shape_of(self.input), shape_of(self.weights), shape_of(self.bias))

    def verify_(self) -> None:
        super().verify_()
        self.verify_activation()


@irdl_op_definition
class MatMulOp(GlowOp):
    """Batched matrix product with numpy broadcasting of the batch dimensions."""

    name = "glow.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"
    FACTS: ClassVar[OpFacts] = OpFacts(glow_kind="MatMul")

    def __init__(self, lhs: SSAValue, rhs: SSAValue, *, result_element: ElementLike = None):
        self._build([lhs, rhs], self.shape_rule(shape_of(lhs), shape_of(rhs)),
                    _element(result_element, element_of(lhs)))

    @staticmethod
    def shape_rule(a, b) -> tuple[int, ...]:
        a, b = tuple(a), tuple(b)
        if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
            raise ValueError(f"cannot multiply {list(a)} by {list(b)}")
        return broadcast_shapes(a[:-2], b[:-2]) + (a[-2], b[-1])

    def infer_shape(self):
        return self.shape_rule(shape_of(self.lhs), shape_of(self.rhs))


class PoolOp(GlowOp, PoolWindow, LayoutProperty):
    """A max or average pool: `PoolWindow` over an NCHW input (NHWC with `layout NHWC`): 2-D,
    or 1-D and 3-D as importers build them, which the `glow-decompose-1d-windows` and
    `glow-decompose-3d-pools` passes rewrite as 2-D ones."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = "$input (`layout` $layout^)? attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue, kernel: Sequence[int], strides: Sequence[int] = (1, 1),
                 pads: Sequence[int] = (0, 0, 0, 0), *, layout: Layout | str | None = None,
                 result_element: ElementLike = None, **flag_values: bool):
        shape = self.shape_rule(shape_of(input), int_values(kernel), int_values(strides), int_values(pads),
                                layout_value(layout))
        self._build([input], shape, _element(result_element, element_of(input)),
                    pool_window_properties(kernel, strides, pads) | layout_properties(layout) | flags(**flag_values))

    @staticmethod
    def shape_rule(input_shape, kernel, strides, pads, layout: Layout | str | None = None) -> tuple[int, ...]:
        """`pooled_shape` in the pool's layout."""
        if layout == Layout.NHWC:
            return to_nhwc(pooled_shape(to_nchw(input_shape), kernel, strides, pads))
        return pooled_shape(input_shape, kernel, strides, pads)

    def infer_shape(self):
        return pool_result_shape(self)


@irdl_op_definition
class MaxPoolOp(PoolOp):
    name = "glow.max_pool"
    FACTS: ClassVar[OpFacts] = OpFacts(glow_kind="MaxPool", quantizable=True, keeps_input_quantization=True)

    def __init__(self, input: SSAValue, kernel: Sequence[int], strides: Sequence[int] = (1, 1),
                 pads: Sequence[int] = (0, 0, 0, 0), *, layout: Layout | str | None = None,
                 result_element: ElementLike = None):
        super().__init__(input, kernel, strides, pads, layout=layout, result_element=result_element)


@irdl_op_definition
class AvgPoolOp(PoolOp):
    """Average pool; `count_include_pad` = divide by the whole window, pads included."""

    name = "glow.avg_pool"
    count_include_pad = opt_prop_def(UnitAttr)
    FACTS: ClassVar[OpFacts] = OpFacts(glow_kind="AvgPool", quantizable=True, keeps_input_quantization=True)

    def __init__(self, input: SSAValue, kernel: Sequence[int], strides: Sequence[int] = (1, 1),
                 pads: Sequence[int] = (0, 0, 0, 0), *, count_include_pad: bool = False,
                 layout: Layout | str | None = None, result_element: ElementLike = None):
        super().__init__(input, kernel, strides, pads, layout=layout, result_element=result_element,
                         count_include_pad=count_include_pad)


class UnaryOp(GlowOp):
    """One input; the result has its shape."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue, *, result_element: ElementLike = None):
        self._build([input], self.shape_rule(shape_of(input)), _element(result_element, element_of(input)))

    @staticmethod
    def shape_rule(input_shape) -> tuple[int, ...]:
        return tuple(input_shape)

    def infer_shape(self):
        return self.shape_rule(shape_of(self.input))


def _unary(kind: str, **facts) -> ElementwiseFacts:
    return ElementwiseFacts(kind=kind, arity=1, **facts)


def _binary(kind: str, **facts) -> ElementwiseFacts:
    return ElementwiseFacts(kind=kind, arity=2, **facts)


@irdl_op_definition
class ReluOp(UnaryOp):
    name = "glow.relu"
    FACTS: ClassVar[OpFacts] = _unary(
        "relu", in_place=True, layout_agnostic=True, quantizable=True, glow_kind="Relu",
        float_kernel=lambda m, x: m.clamp(x, "relu"),
        numpy=lambda op, x: np.maximum(x, 0))


@irdl_op_definition
class SigmoidOp(UnaryOp):
    name = "glow.sigmoid"
    FACTS: ClassVar[OpFacts] = _unary(
        "sigmoid", in_place=True, layout_agnostic=True, glow_kind="Sigmoid",
        float_kernel=lambda m, x: m.sigmoid(x),
        numpy=lambda op, x: 1 / (1 + np.exp(-x)))


@irdl_op_definition
class TanhOp(UnaryOp):
    name = "glow.tanh"
    FACTS: ClassVar[OpFacts] = _unary(
        "tanh", in_place=True, layout_agnostic=True, glow_kind="Tanh",
        float_kernel=lambda m, x: m.tanh(x),
        numpy=lambda op, x: np.tanh(x))


@irdl_op_definition
class ClipOp(UnaryOp):
    """min(max(x, `min`), `max`); lowered to the `clip` kind with `clip_min`/`clip_max`."""

    name = "glow.clip"
    min = prop_def(FloatAttr)
    max = prop_def(FloatAttr)
    FACTS: ClassVar[OpFacts] = _unary(
        "clip", in_place=True, layout_agnostic=True, quantizable=True, glow_kind="Clip",
        required=("clip_min", "clip_max"),
        float_kernel=lambda m, x: m.clamp(x, "clip"),
        numpy=lambda op, x: np.clip(x, op.min.value.data, op.max.value.data))

    def __init__(self, input: SSAValue, min: float, max: float, *, result_element: ElementLike = None):
        self._build([input], self.shape_rule(shape_of(input)), _element(result_element, element_of(input)),
                    {"min": f32_attr(min), "max": f32_attr(max)})


class ParametricUnaryOp(UnaryOp):
    """An elementwise function with optional `alpha`/`beta` parameters (ONNX's defaults are
    written in by the importer)."""

    alpha = opt_prop_def(FloatAttr)
    beta = opt_prop_def(FloatAttr)

    def __init__(self, input: SSAValue, alpha: float | None = None, beta: float | None = None, *,
                 result_element: ElementLike = None):
        self._build([input], self.shape_rule(shape_of(input)), _element(result_element, element_of(input)),
                    {"alpha": None if alpha is None else f32_attr(alpha),
                     "beta": None if beta is None else f32_attr(beta)})


@irdl_op_definition
class LeakyReluOp(ParametricUnaryOp):
    """x if x >= 0 else alpha * x."""

    name = "glow.leaky_relu"
    FACTS: ClassVar[OpFacts] = _unary(
        "leaky_relu", required=("alpha",), layout_agnostic=True, quantizable=True, glow_kind="LeakyRelu",
        float_kernel=lambda m, x: m.negative_scaled(x, m.mul(m.alpha(), x)),
        numpy=lambda op, x: np.where(x >= 0, x, _param(op, "alpha") * x))


@irdl_op_definition
class EluOp(ParametricUnaryOp):
    """x if x >= 0 else alpha * (e^x - 1)."""

    name = "glow.elu"
    FACTS: ClassVar[OpFacts] = _unary(
        "elu", required=("alpha",), glow_kind="Elu",
        float_kernel=lambda m, x: m.negative_scaled(x, m.mul(m.alpha(), m.sub(m.exp(x), m.f32(1.0)))),
        numpy=lambda op, x: np.where(x >= 0, x, _param(op, "alpha") * (np.exp(x) - 1)))


@irdl_op_definition
class SeluOp(ParametricUnaryOp):
    """beta (gamma) * (x if x > 0 else alpha * (e^x - 1))."""

    name = "glow.selu"
    FACTS: ClassVar[OpFacts] = _unary(
        "selu", required=("alpha", "beta"),
        float_kernel=lambda m, x: m.mul(m.beta(), m.negative_scaled(x, m.mul(m.alpha(), m.sub(m.exp(x), m.f32(1.0))))),
        numpy=lambda op, x: _param(op, "beta") * np.where(x > 0, x, _param(op, "alpha") * (np.exp(x) - 1)))


@irdl_op_definition
class HardSigmoidOp(ParametricUnaryOp):
    """max(0, min(1, alpha * x + beta))."""

    name = "glow.hard_sigmoid"
    FACTS: ClassVar[OpFacts] = _unary(
        "hard_sigmoid", required=("alpha", "beta"),
        float_kernel=lambda m, x: m.unit_clamp(m.add(m.mul(m.alpha(), x), m.beta())),
        numpy=lambda op, x: np.clip(_param(op, "alpha") * x + _param(op, "beta"), 0, 1))


@irdl_op_definition
class HardSwishOp(UnaryOp):
    """x * max(0, min(1, x / 6 + 1/2))."""

    name = "glow.hard_swish"
    FACTS: ClassVar[OpFacts] = _unary(
        "hard_swish", layout_agnostic=True, glow_kind="HardSwish",
        float_kernel=lambda m, x: m.mul(x, m.unit_clamp(m.add(m.mul(m.f32(1 / 6), x), m.f32(0.5)))),
        numpy=lambda op, x: x * np.clip(x / 6 + 0.5, 0, 1))


@irdl_op_definition
class ExpOp(UnaryOp):
    name = "glow.exp"
    FACTS: ClassVar[OpFacts] = _unary(
        "exp", layout_agnostic=True, glow_kind="Exp",
        float_kernel=lambda m, x: m.exp(x),
        numpy=lambda op, x: np.exp(x))


@irdl_op_definition
class NegOp(UnaryOp):
    name = "glow.neg"
    FACTS: ClassVar[OpFacts] = _unary(
        "neg", layout_agnostic=True, glow_kind="Neg",
        float_kernel=lambda m, x: m.sub(m.f32(0.0), x),
        numpy=lambda op, x: -x)


@irdl_op_definition
class SqrtOp(UnaryOp):
    name = "glow.sqrt"
    FACTS: ClassVar[OpFacts] = _unary(
        "sqrt", glow_kind="Sqrt",
        float_kernel=lambda m, x: m.sqrt(x),
        numpy=lambda op, x: np.sqrt(x))


@irdl_op_definition
class ReciprocalOp(UnaryOp):
    name = "glow.reciprocal"
    FACTS: ClassVar[OpFacts] = _unary(
        "reciprocal", glow_kind="Reciprocal",
        float_kernel=lambda m, x: m.div(m.f32(1.0), x),
        numpy=lambda op, x: 1 / x)


@irdl_op_definition
class LogOp(UnaryOp):
    """Natural logarithm."""

    name = "glow.log"
    FACTS: ClassVar[OpFacts] = _unary(
        "log", layout_agnostic=True, glow_kind="Log",
        float_kernel=lambda m, x: m.log(x),
        numpy=lambda op, x: np.log(x))


@irdl_op_definition
class SoftplusOp(UnaryOp):
    """log(1 + e^x)."""

    name = "glow.softplus"
    FACTS: ClassVar[OpFacts] = _unary(
        "softplus", glow_kind="SoftPlus",
        float_kernel=lambda m, x: m.softplus(x),
        numpy=lambda op, x: np.log1p(np.exp(x)))


@irdl_op_definition
class SoftsignOp(UnaryOp):
    """x / (1 + |x|)."""

    name = "glow.softsign"
    FACTS: ClassVar[OpFacts] = _unary(
        "softsign",
        float_kernel=lambda m, x: m.div(x, m.add(m.f32(1.0), m.max(x, m.sub(m.f32(0.0), x)))),
        numpy=lambda op, x: x / (1 + np.abs(x)))


@irdl_op_definition
class MishOp(UnaryOp):
    """x * tanh(softplus(x))."""

    name = "glow.mish"
    FACTS: ClassVar[OpFacts] = _unary(
        "mish",
        float_kernel=lambda m, x: m.mul(x, m.tanh(m.softplus(x))),
        numpy=lambda op, x: x * np.tanh(np.log1p(np.exp(x))))


@irdl_op_definition
class CeluOp(ParametricUnaryOp):
    """max(0, x) + min(0, alpha * (e^(x / alpha) - 1))."""

    name = "glow.celu"
    FACTS: ClassVar[OpFacts] = _unary(
        "celu", required=("alpha",),
        float_kernel=lambda m, x: m.add(m.max(x, m.f32(0.0)), m.min(m.f32(0.0), m.mul(
            m.alpha(), m.sub(m.exp(m.div(x, m.alpha())), m.f32(1.0))))),
        numpy=lambda op, x: np.maximum(x, 0) + np.minimum(
            0, _param(op, "alpha") * (np.exp(x / _param(op, "alpha")) - 1)))


@irdl_op_definition
class AbsOp(UnaryOp):
    name = "glow.abs"
    FACTS: ClassVar[OpFacts] = _unary(
        "abs", layout_agnostic=True, glow_kind="Abs",
        float_kernel=lambda m, x: m.max(x, m.sub(m.f32(0.0), x)),
        numpy=lambda op, x: np.abs(x))


def _math_function(kind: str, glow_kind: str, numpy) -> ElementwiseFacts:
    """The facts of a unary op computing one of math_approx's functions, named `kind` there
    (elementwise on one input: a transpose sinks through it)."""
    return _unary(kind, glow_kind=glow_kind, layout_agnostic=True, float_kernel=lambda m, x: m.function(kind, x),
                  numpy=lambda op, x: numpy(x))


@irdl_op_definition
class FloorOp(UnaryOp):
    name = "glow.floor"
    FACTS: ClassVar[OpFacts] = _math_function("floor", "Floor", np.floor)


@irdl_op_definition
class CeilOp(UnaryOp):
    name = "glow.ceil"
    FACTS: ClassVar[OpFacts] = _math_function("ceil", "Ceil", np.ceil)


@irdl_op_definition
class SignOp(UnaryOp):
    name = "glow.sign"
    FACTS: ClassVar[OpFacts] = _math_function("sign", "Sign", np.sign)


@irdl_op_definition
class SinOp(UnaryOp):
    name = "glow.sin"
    FACTS: ClassVar[OpFacts] = _math_function("sin", "Sin", np.sin)


@irdl_op_definition
class CosOp(UnaryOp):
    name = "glow.cos"
    FACTS: ClassVar[OpFacts] = _math_function("cos", "Cos", np.cos)


@irdl_op_definition
class AtanOp(UnaryOp):
    name = "glow.atan"
    FACTS: ClassVar[OpFacts] = _math_function("atan", "Atan", np.arctan)


@irdl_op_definition
class AsinOp(UnaryOp):
    name = "glow.asin"
    FACTS: ClassVar[OpFacts] = _math_function("asin", "Asin", np.arcsin)


@irdl_op_definition
class AcosOp(UnaryOp):
    name = "glow.acos"
    FACTS: ClassVar[OpFacts] = _math_function("acos", "Acos", np.arccos)


@irdl_op_definition
class ErfOp(UnaryOp):
    name = "glow.erf"
    FACTS: ClassVar[OpFacts] = _math_function("erf", "Erf", np.vectorize(math.erf, otypes=[np.float64]))


@irdl_op_definition
class SoftMaxOp(UnaryOp):
    """Softmax over one axis; with `log`, LogSoftmax."""

    name = "glow.softmax"
    axis = prop_def(IntegerAttr)
    log = opt_prop_def(UnitAttr)
    FACTS: ClassVar[OpFacts] = OpFacts(glow_kind="SoftMax", quantizable=True)

    def __init__(self, input: SSAValue, axis: int, *, log: bool = False, result_element: ElementLike = None):
        self._build([input], self.shape_rule(shape_of(input)), _element(result_element, element_of(input)),
                    {"axis": i64_attr(axis)} | flags(log=log))

    def verify_(self) -> None:
        super().verify_()
        if is_quantized(self.result.type) and (self.axis.value.data != len(shape_of(self.input)) - 1 or self.log):
            raise VerifyException("glow.softmax: a quantized softmax works on the last axis, without log")


@irdl_op_definition
class LocalResponseNormalizationOp(UnaryOp):
    """ONNX LRN across channels: x / (bias + alpha / size * sum of x^2 over `size` channels)^beta."""

    name = "glow.local_response_normalization"
    size = prop_def(IntegerAttr)
    alpha = prop_def(FloatAttr)
    beta = prop_def(FloatAttr)
    bias = prop_def(FloatAttr)
    FACTS: ClassVar[OpFacts] = OpFacts(glow_kind="LocalResponseNormalization")

    def __init__(self, input: SSAValue, size: int, alpha: float, beta: float, bias: float, *,
                 result_element: ElementLike = None):
        self._build([input], self.shape_rule(shape_of(input)), _element(result_element, element_of(input)),
                    {"size": i64_attr(size), "alpha": f32_attr(alpha), "beta": f32_attr(beta), "bias": f32_attr(bias)})


@irdl_op_definition
class BatchNormalizationOp(GlowOp):
    """Inference batch normalization over axis 1; folded into a Convolution when it follows one."""

    name = "glow.batch_normalization"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    mean = operand_def(TensorType)
    var = operand_def(TensorType)
    result = result_def(TensorType)
    epsilon = prop_def(FloatAttr)
    assembly_format = "$input `,` $scale `,` $bias `,` $mean `,` $var attr-dict `:` functional-type(operands, results)"
    FACTS: ClassVar[OpFacts] = OpFacts(glow_kind="BatchNormalization")

    def __init__(self, input: SSAValue, scale: SSAValue, bias: SSAValue, mean: SSAValue, var: SSAValue,
                 epsilon: float, *, result_element: ElementLike = None):
        shape = self.shape_rule(*(shape_of(v) for v in (input, scale, bias, mean, var)))
        self._build([input, scale, bias, mean, var], shape, _element(result_element, element_of(input)),
                    {"epsilon": f32_attr(epsilon)})

    @staticmethod
    def shape_rule(input_shape, *channel_shapes) -> tuple[int, ...]:
        """The input's shape; scale, bias, mean and var each [C]."""
        for shape in channel_shapes:
            if tuple(shape) != (input_shape[1],):
                raise ValueError("scale, bias, mean and var must have one element per channel")
        return tuple(input_shape)

    def infer_shape(self):
        return self.shape_rule(*(shape_of(v) for v in (self.input, self.scale, self.bias, self.mean, self.var)))


class BinaryOp(GlowOp):
    """Elementwise arithmetic with numpy/ONNX broadcasting."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue, *, result_element: ElementLike = None):
        self._build_binary(lhs, rhs, result_element)

    def _build_binary(self, lhs: SSAValue, rhs: SSAValue, result_element: ElementLike,
                      properties: dict[str, Attribute] | None = None) -> None:
        self._build([lhs, rhs], self.shape_rule(shape_of(lhs), shape_of(rhs)),
                    _element(result_element, element_of(lhs)), properties)

    @staticmethod
    def shape_rule(lhs_shape, rhs_shape) -> tuple[int, ...]:
        return broadcast_shapes(lhs_shape, rhs_shape)

    def infer_shape(self):
        return self.shape_rule(shape_of(self.lhs), shape_of(self.rhs))

    def verify_(self) -> None:
        super().verify_()
        lhs, rhs = (storage_type(v.type.element_type) for v in (self.lhs, self.rhs))
        if lhs != rhs:
            raise VerifyException(f"{self.name}: operands of different element types {lhs} and {rhs}")


@irdl_op_definition
class AddOp(BinaryOp, FusedActivation):
    name = "glow.add"
    assembly_format = "$lhs `,` $rhs (`activation` $activation^)? attr-dict `:` functional-type(operands, results)"
    FACTS: ClassVar[OpFacts] = _binary(
        "add", in_place=True, layout_agnostic=True, quantizable=True, glow_kind="Add",
        float_kernel=lambda m, lhs, rhs: m.add(lhs, rhs),
        numpy=lambda op, a, b: op.apply_activation(a + b))

    def __init__(self, lhs: SSAValue, rhs: SSAValue, *, activation: Activation | str | None = None,
                 clip_min: float | None = None, clip_max: float | None = None, result_element: ElementLike = None):
        self._build_binary(lhs, rhs, result_element, fused_activation_properties(activation, clip_min, clip_max))

    def verify_(self) -> None:
        super().verify_()
        self.verify_activation()


@irdl_op_definition
class SubOp(BinaryOp):
    name = "glow.sub"
    FACTS: ClassVar[OpFacts] = _binary(
        "sub", in_place=True, layout_agnostic=True, quantizable=True, glow_kind="Sub",
        float_kernel=lambda m, lhs, rhs: m.sub(lhs, rhs),
        numpy=lambda op, a, b: a - b)


@irdl_op_definition
class MulOp(BinaryOp):
    name = "glow.mul"
    FACTS: ClassVar[OpFacts] = _binary(
        "mul", in_place=True, layout_agnostic=True, quantizable=True, glow_kind="Mul",
        float_kernel=lambda m, lhs, rhs: m.mul(lhs, rhs),
        numpy=lambda op, a, b: a * b)


@irdl_op_definition
class DivOp(BinaryOp):
    name = "glow.div"
    FACTS: ClassVar[OpFacts] = _binary(
        "div", in_place=True, layout_agnostic=True, quantizable=True, glow_kind="Div",
        float_kernel=lambda m, lhs, rhs: m.div(lhs, rhs),
        numpy=lambda op, a, b: a / b)


@irdl_op_definition
class PowOp(BinaryOp):
    """lhs ^ rhs (floats), as C's powf."""

    name = "glow.pow"
    FACTS: ClassVar[OpFacts] = _binary(
        "pow", glow_kind="Pow",
        float_kernel=lambda m, lhs, rhs: m.pow(lhs, rhs))


@irdl_op_definition
class MaxOp(BinaryOp):
    name = "glow.max"
    FACTS: ClassVar[OpFacts] = _binary(
        "max", in_place=True, layout_agnostic=True, glow_kind="Max",
        float_kernel=lambda m, lhs, rhs: m.max(lhs, rhs),
        numpy=lambda op, a, b: np.maximum(a, b))


@irdl_op_definition
class MinOp(BinaryOp):
    name = "glow.min"
    FACTS: ClassVar[OpFacts] = _binary(
        "min", in_place=True, layout_agnostic=True, glow_kind="Min",
        float_kernel=lambda m, lhs, rhs: m.min(lhs, rhs),
        numpy=lambda op, a, b: np.minimum(a, b))


@irdl_op_definition
class PReluOp(BinaryOp):
    """lhs if lhs >= 0 else rhs * lhs (rhs: the slope, broadcast)."""

    name = "glow.prelu"
    FACTS: ClassVar[OpFacts] = _binary(
        "prelu", quantizable=True, glow_kind="PRelu",
        float_kernel=lambda m, x, slope: m.negative_scaled(x, m.mul(slope, x)),
        numpy=lambda op, x, slope: np.where(x >= 0, x, slope * x))


@irdl_op_definition
class ReduceOp(UnaryOp):
    """Reduces `axes` with `kind` ("sum", "mean", "max", "min", "prod"); the result type says whether
    the reduced dimensions are kept (as 1) or dropped."""

    name = "glow.reduce"
    kind = prop_def(ReduceKindAttr)
    axes = prop_def(DenseArrayBase)
    assembly_format = "$kind $input attr-dict `:` functional-type(operands, results)"
    FACTS: ClassVar[OpFacts] = OpFacts()  # no integer kernel: a spatial mean quantizes as an AvgPool

    def __init__(self, input: SSAValue, kind: ReduceKind | str, axes: Sequence[int], *, keep_dims: bool,
                 result_element: ElementLike = None):
        kind = enum_attr(ReduceKindAttr, kind)
        shape = self.shape_rule(shape_of(input), kind.data, int_values(axes), keep_dims)
        self._build([input], shape, _element(result_element, element_of(input)), {"kind": kind, "axes": ints(axes)})

    @staticmethod
    def shape_rule(input_shape, kind: str, axes: Sequence[int], keep_dims: bool) -> tuple[int, ...]:
        """The reduced axes kept as 1 (`keep_dims`) or dropped."""
        axes = set(axes)
        if not axes <= set(range(len(input_shape))):
            raise ValueError(f"cannot reduce axes {sorted(axes)} of {list(input_shape)} with \"{kind}\"")
        if keep_dims:
            return tuple(1 if d in axes else s for d, s in enumerate(input_shape))
        return tuple(s for d, s in enumerate(input_shape) if d not in axes)

    def infer_shape(self):
        shape, axes, kind = shape_of(self.input), self.axes.get_values(), self.kind.data
        kept, dropped = (self.shape_rule(shape, kind, axes, keep_dims) for keep_dims in (True, False))
        if shape_of(self.result) not in (kept, dropped):
            raise ValueError(f"result must be {list(kept)} or {list(dropped)}")
        return shape_of(self.result)


@irdl_op_definition
class ReshapeOp(UnaryOp):
    """Same elements, new shape (the result type)."""

    name = "glow.reshape"
    FACTS: ClassVar[OpFacts] = OpFacts(glow_kind="Reshape", quantizable=True, keeps_input_quantization=True)

    def __init__(self, input: SSAValue, shape: Sequence[int], *, result_element: ElementLike = None):
        self._build([input], self.shape_rule(shape_of(input), shape), _element(result_element, element_of(input)))

    @staticmethod
    def shape_rule(input_shape, shape) -> tuple[int, ...]:
        """`shape`, which must hold as many elements as the input."""
        if math.prod(input_shape) != math.prod(shape):
            raise ValueError("reshape must keep the number of elements")
        return tuple(int(d) for d in shape)

    def infer_shape(self):
        return self.shape_rule(shape_of(self.input), shape_of(self.result))


@irdl_op_definition
class TransposeOp(UnaryOp):
    name = "glow.transpose"
    perm = prop_def(DenseArrayBase)
    FACTS: ClassVar[OpFacts] = OpFacts(glow_kind="Transpose", quantizable=True, keeps_input_quantization=True)

    def __init__(self, input: SSAValue, perm: Sequence[int], *, result_element: ElementLike = None):
        self._build([input], self.shape_rule(shape_of(input), int_values(perm)),
                    _element(result_element, element_of(input)), {"perm": ints(perm)})

    @staticmethod
    def shape_rule(input_shape, perm) -> tuple[int, ...]:
        if sorted(perm) != list(range(len(input_shape))):
            raise ValueError(f"{list(perm)} is not a permutation of {len(input_shape)} dimensions")
        return tuple(input_shape[p] for p in perm)

    def infer_shape(self):
        return self.shape_rule(shape_of(self.input), self.perm.get_values())


OperationT = TypeVar("OperationT", bound=Operation)


def with_attributes_of(op: OperationT, source: Operation) -> OperationT:
    """`op` given `source`'s attributes (its node name, the profile key): for the op a rewrite
    puts in `source`'s place."""
    op.attributes.update(source.attributes)
    return op


def transpose(value: SSAValue, perm: Sequence[int]) -> TransposeOp:
    """A new (unattached) `glow.transpose` of `value` by `perm`."""
    return TransposeOp(value, perm)


@irdl_op_definition
class ConcatOp(GlowOp):
    name = "glow.concat"
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    assembly_format = "$inputs attr-dict `:` functional-type($inputs, results)"
    FACTS: ClassVar[OpFacts] = OpFacts(glow_kind="Concat", quantizable=True)

    def __init__(self, inputs: Sequence[SSAValue], axis: int, *, result_element: ElementLike = None):
        shape = self.shape_rule([shape_of(v) for v in inputs], int_value(axis))
        self._build([list(inputs)], shape, _element(result_element, element_of(inputs[0])), {"axis": i64_attr(axis)})

    @staticmethod
    def shape_rule(shapes, axis: int) -> tuple[int, ...]:
        shapes = [tuple(s) for s in shapes]
        for s in shapes:
            if len(s) != len(shapes[0]) or s[:axis] + s[axis + 1:] != shapes[0][:axis] + shapes[0][axis + 1:]:
                raise ValueError(f"inputs {[list(s) for s in shapes]} cannot be concatenated on axis {axis}")
        return shapes[0][:axis] + (sum(s[axis] for s in shapes),) + shapes[0][axis + 1:]

    def infer_shape(self):
        return self.shape_rule([shape_of(v) for v in self.inputs], self.axis.value.data)


@irdl_op_definition
class SliceOp(UnaryOp):
    """result[i] = input[starts + i * steps] (steps > 0)."""

    name = "glow.slice"
    starts = prop_def(DenseArrayBase)
    steps = prop_def(DenseArrayBase)
    FACTS: ClassVar[OpFacts] = OpFacts(glow_kind="Slice", quantizable=True, keeps_input_quantization=True)

    def __init__(self, input: SSAValue, starts: Sequence[int], sizes: Sequence[int],
                 steps: Sequence[int] | None = None, *, result_element: ElementLike = None):
        """`sizes`: the result's extent along each axis (not derivable from starts and steps)."""
        steps = [1] * len(int_values(starts)) if steps is None else steps
        shape = self.shape_rule(shape_of(input), int_values(starts), sizes, int_values(steps))
        self._build([input], shape, _element(result_element, element_of(input)),
                    {"starts": ints(starts), "steps": ints(steps)})

    @staticmethod
    def shape_rule(input_shape, starts, sizes, steps) -> tuple[int, ...]:
        """`sizes`, when every index they reach lies inside the input."""
        for size, start, step, n in zip(input_shape, starts, steps, sizes, strict=True):
            if step < 1 or start < 0 or n < 1 or start + (n - 1) * step >= size:
                raise ValueError(f"slice out of bounds of {list(input_shape)}")
        return tuple(int(n) for n in sizes)

    def infer_shape(self):
        return self.shape_rule(shape_of(self.input), self.starts.get_values(), shape_of(self.result),
                               self.steps.get_values())


@irdl_op_definition
class ResampleOp(GlowOp):
    """Resampling along `axis` (Resize, Upsample): output position j along the axis is
    `sum_t weights[j, t] * input[..., taps[j, t], ...]` (taps i32 and weights f32
    constants [out, T]; T = 1 for nearest, 2 for linear)."""

    name = "glow.resample"
    input = operand_def(TensorType)
    taps = operand_def(TensorType)
    weights = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    assembly_format = "$input `,` $taps `,` $weights attr-dict `:` functional-type(operands, results)"
    FACTS: ClassVar[OpFacts] = OpFacts(
        glow_kind="ResizeBilinear", quantizable=True,
        glow_kind_of=lambda op: "ResizeNearest" if shape_of(op.taps)[1] == 1 else "ResizeBilinear")

    def __init__(self, input: SSAValue, taps: SSAValue, weights: SSAValue, axis: int, *,
                 result_element: ElementLike = None):
        shape = self.shape_rule(shape_of(input), shape_of(taps), shape_of(weights), int_value(axis))
        self._build([input, taps, weights], shape, _element(result_element, element_of(input)),
                    {"axis": i64_attr(axis)})

    @staticmethod
    def shape_rule(input_shape, taps_shape, weights_shape, axis: int) -> tuple[int, ...]:
        shape, taps = list(input_shape), tuple(taps_shape)
        if len(taps) != 2 or tuple(weights_shape) != taps or not 0 <= axis < len(shape):
            raise ValueError("taps and weights must be [output size, taps per output] on an axis of the input")
        shape[axis] = taps[0]
        return tuple(shape)

    def infer_shape(self):
        return self.shape_rule(shape_of(self.input), shape_of(self.taps), shape_of(self.weights),
                               self.axis.value.data)


# ----------------------------------------------------------------------------- integer and boolean tensors
#
# Element types beyond f32: signless integers (i8 ... i64) are signed, `ui8` ... `ui64`
# unsigned, `i1` boolean (one byte in memory). The data movement ops, the arithmetic
# BinaryOps, Neg, Abs and Relu take them as they take f32; the ops below exist for them.

def is_integer(element_type: Attribute) -> bool:
    """An integer or boolean element type (not a quantized one)."""
    return isinstance(element_type, IntegerType)


@irdl_op_definition
class ConvertOp(UnaryOp):
    """Changes the element type (ONNX Cast): float to integer truncates toward zero, to
    boolean tests for non-zero; boolean becomes 0 or 1."""

    name = "glow.convert"
    FACTS: ClassVar[OpFacts] = _unary("convert", mixed_types=True, glow_kind="ConvertTo")

    def __init__(self, input: SSAValue, result_element: Attribute | TensorType):
        super().__init__(input, result_element=result_element)

    def verify_(self) -> None:
        super().verify_()
        if is_quantized(self.input.type) or is_quantized(self.result.type):
            raise VerifyException("glow.convert: quantized types change with glow.quantize / glow.dequantize")


@irdl_op_definition
class CompareOp(BinaryOp):
    """lhs `predicate` rhs, elementwise with broadcasting; the result is boolean (i1)."""

    name = "glow.compare"
    predicate = prop_def(ComparisonPredicateAttr)
    assembly_format = "$predicate $lhs `,` $rhs attr-dict `:` functional-type(operands, results)"
    FACTS: ClassVar[OpFacts] = _binary("compare", mixed_types=True, required=("predicate",))

    def __init__(self, lhs: SSAValue, rhs: SSAValue, predicate: ComparisonPredicate | str):
        self._build_binary(lhs, rhs, i1, {"predicate": enum_attr(ComparisonPredicateAttr, predicate)})

    def verify_(self) -> None:
        super().verify_()
        if self.result.type.element_type != i1:
            raise VerifyException("glow.compare: the result must be boolean (i1)")


@irdl_op_definition
class AndOp(BinaryOp):
    """Logical (booleans) or bitwise (integers) and."""

    name = "glow.and"
    FACTS: ClassVar[OpFacts] = _binary("and", mixed_types=True, glow_kind="And")


@irdl_op_definition
class OrOp(BinaryOp):
    name = "glow.or"
    FACTS: ClassVar[OpFacts] = _binary("or", mixed_types=True, glow_kind="Or")


@irdl_op_definition
class XorOp(BinaryOp):
    name = "glow.xor"
    FACTS: ClassVar[OpFacts] = _binary("xor", mixed_types=True, glow_kind="Xor")


class IndexedReadOp(GlowOp):
    """Reads `data` at positions along `axis` that integer `indices` give (negative ones
    count from the end)."""

    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    assembly_format = "$data `,` $indices attr-dict `:` functional-type(operands, results)"

    def __init__(self, data: SSAValue, indices: SSAValue, axis: int):
        shape = self.shape_rule(shape_of(data), shape_of(indices), int_value(axis))
        self._build([data, indices], shape, element_of(data), {"axis": i64_attr(axis)})

    def infer_shape(self):
        if not is_integer(self.indices.type.element_type):
            raise ValueError(self.INDICES_MESSAGE)
        return self.shape_rule(shape_of(self.data), shape_of(self.indices), self.axis.value.data)

    def verify_(self) -> None:
        super().verify_()
        source = self.indices.owner  # known indices must be in range (ONNX: an error); run-time ones cannot be checked
        if isinstance(source, ConstantOp) and source.value is not None:
            try:
                check_indices(array_from_dense(source.value), shape_of(self.data)[self.axis.value.data])
            except ValueError as error:
                raise VerifyException(f"{self.name}: {error}") from None


@irdl_op_definition
class GatherElementsOp(IndexedReadOp):
    """result[i] = data[i with its `axis` coordinate replaced by indices[i]] (ONNX
    GatherElements); the result has the indices' shape."""

    name = "glow.gather_elements"
    INDICES_MESSAGE: ClassVar[str] = "indices must be integers of the data's rank"
    FACTS: ClassVar[OpFacts] = OpFacts(glow_kind="GatherElements")

    @staticmethod
    def shape_rule(data_shape, indices_shape, axis: int) -> tuple[int, ...]:
        if len(data_shape) != len(indices_shape) or not 0 <= axis < len(data_shape):
            raise ValueError(GatherElementsOp.INDICES_MESSAGE)
        return tuple(indices_shape)


@irdl_op_definition
class ShiftLeftOp(BinaryOp):
    """Integers: lhs << rhs."""

    name = "glow.shift_left"
    FACTS: ClassVar[OpFacts] = _binary("shift_left")


@irdl_op_definition
class ShiftRightOp(BinaryOp):
    """Integers: lhs >> rhs (arithmetic for signed, logical for unsigned)."""

    name = "glow.shift_right"
    FACTS: ClassVar[OpFacts] = _binary("shift_right")


@irdl_op_definition
class ModOp(BinaryOp):
    """The remainder of lhs / rhs: with `fmod`, C's fmod (the sign of lhs, floats too);
    else Python's (the sign of rhs, integers)."""

    name = "glow.mod"
    fmod = opt_prop_def(UnitAttr)
    FACTS: ClassVar[OpFacts] = _binary("mod", glow_kind="Modulo")
    FLAG_FACTS: ClassVar[dict[str, ElementwiseFacts]] = {"fmod": _binary("fmod", mixed_types=True, glow_kind="Fmod")}

    def __init__(self, lhs: SSAValue, rhs: SSAValue, *, fmod: bool = False):
        self._build_binary(lhs, rhs, None, flags(fmod=fmod))


@irdl_op_definition
class NotOp(UnaryOp):
    """Logical (booleans) or bitwise (integers) not."""

    name = "glow.not"
    FACTS: ClassVar[OpFacts] = _unary("not", mixed_types=True, glow_kind="Not")


@irdl_op_definition
class SelectOp(GlowOp):
    """condition ? lhs : rhs (ONNX Where), the three broadcast together."""

    name = "glow.select"
    condition = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = "$condition `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)"
    FACTS: ClassVar[OpFacts] = ElementwiseFacts(kind="select", arity=3, mixed_types=True, glow_kind="Select")

    def __init__(self, condition: SSAValue, lhs: SSAValue, rhs: SSAValue, *, result_element: ElementLike = None):
        shape = self.shape_rule(shape_of(condition), shape_of(lhs), shape_of(rhs))
        self._build([condition, lhs, rhs], shape, _element(result_element, element_of(lhs)))

    @staticmethod
    def shape_rule(condition_shape, lhs_shape, rhs_shape) -> tuple[int, ...]:
        return broadcast_shapes(condition_shape, lhs_shape, rhs_shape)

    def infer_shape(self):
        if self.condition.type.element_type != i1:
            raise ValueError("the condition must be boolean")
        return self.shape_rule(shape_of(self.condition), shape_of(self.lhs), shape_of(self.rhs))


@irdl_op_definition
class ArgReduceOp(GlowOp):
    """The i64 index of the largest (`kind` = "max") or smallest element along `axis`; the
    first such index, or the last with `select_last_index`. The result type keeps the axis
    (as 1) or drops it."""

    name = "glow.arg_reduce"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    kind = prop_def(ArgReduceKindAttr)
    axis = prop_def(IntegerAttr)
    select_last_index = opt_prop_def(UnitAttr)
    assembly_format = "$kind $input attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue, kind: ArgReduceKind | str, axis: int, *, keep_dims: bool,
                 select_last_index: bool = False):
        kind = enum_attr(ArgReduceKindAttr, kind)
        shape = self.shape_rule(shape_of(input), kind.data, int_value(axis), keep_dims)
        self._build([input], shape, i64,
                    {"kind": kind, "axis": i64_attr(axis)} | flags(select_last_index=select_last_index))

    @staticmethod
    def shape_rule(input_shape, kind: str, axis: int, keep_dims: bool) -> tuple[int, ...]:
        """The axis kept as 1 (`keep_dims`) or dropped."""
        shape = tuple(input_shape)
        if not 0 <= axis < len(shape):
            raise ValueError(f"cannot take the arg{kind} of axis {axis} of {list(shape)}")
        return shape[:axis] + (1,) * keep_dims + shape[axis + 1:]

    def infer_shape(self):
        shape, axis, kind = shape_of(self.input), self.axis.value.data, self.kind.data
        kept = self.shape_rule(shape, kind, axis, True)
        if self.result.type.element_type != i64:
            raise ValueError("the result holds i64 indices")
        return kept if shape_of(self.result) == kept else self.shape_rule(shape, kind, axis, False)


@irdl_op_definition
class GatherOp(IndexedReadOp):
    """result = data indexed along `axis` by `indices`: shape data[:axis] + indices + data[axis + 1:]."""

    name = "glow.gather"
    INDICES_MESSAGE: ClassVar[str] = "indices must be integers indexing an axis of the data"
    FACTS: ClassVar[OpFacts] = OpFacts(glow_kind="Gather")

    @staticmethod
    def shape_rule(data_shape, indices_shape, axis: int) -> tuple[int, ...]:
        data = tuple(data_shape)
        if not 0 <= axis < len(data):
            raise ValueError(GatherOp.INDICES_MESSAGE)
        return data[:axis] + tuple(indices_shape) + data[axis + 1:]


LOOKUP_TABLE_SIZES = {8: 256, 16: 513}
"""The entries of an int lookup table by the input's storage bits."""


@irdl_op_definition
class IntLookupTableOp(GlowOp):
    """result[i] = table[input[i] - storage minimum] (Glow's IntLookupTable): a unary function of
    int8 data as a 256-entry table, computed at compile time from the input's and the result's
    quantization (`glow-quantize` builds it for ops with no integer kernel of their own). Of
    int16 data: a 513-entry table, interpolated (`quantization.lookup_tables`)."""

    name = "glow.int_lookup_table"
    input = operand_def(TensorType)
    table = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = "$input `,` $table attr-dict `:` functional-type(operands, results)"
    FACTS: ClassVar[OpFacts] = OpFacts(glow_kind="IntLookupTable")

    def __init__(self, input: SSAValue, table: SSAValue):
        self._build([input, table], shape_of(input), element_of(table))

    def infer_shape(self):
        storage = storage_type(element_of(self.input))
        if not is_quantized(self.input.type) or storage.width.data not in LOOKUP_TABLE_SIZES:
            raise ValueError("the input must be quantized int8 or int16")
        size = LOOKUP_TABLE_SIZES[storage.width.data]
        if shape_of(self.table) != (size,) or element_of(self.table) != element_of(self.result) \
                or storage_type(element_of(self.result)) != storage:
            raise ValueError(f"the table holds {size} values of the result's type, stored as the input")
        return shape_of(self.input)


@irdl_op_definition
class ScatterNDOp(GlowOp):
    """ONNX ScatterND: `data` with the slices `indices` names replaced by `updates` (or, with a
    `reduction`, combined with them), one update after the other. `indices` [..., q] index
    the first q axes of the data (negative ones count from the end); `updates` have shape
    indices[:-1] + data[q:]. An index outside the data writes nothing."""

    name = "glow.scatter_nd"
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    updates = operand_def(TensorType)
    result = result_def(TensorType)
    reduction = prop_def(ScatterReductionAttr)
    assembly_format = "$reduction $data `,` $indices `,` $updates attr-dict `:` functional-type(operands, results)"
    FACTS: ClassVar[OpFacts] = OpFacts(glow_kind="ScatterData")

    def __init__(self, data: SSAValue, indices: SSAValue, updates: SSAValue,
                 reduction: ScatterReduction | str = ScatterReduction.NONE):
        shape = self.shape_rule(shape_of(data), shape_of(indices), shape_of(updates))
        self._build([data, indices, updates], shape, element_of(data),
                    {"reduction": enum_attr(ScatterReductionAttr, reduction)})

    @staticmethod
    def shape_rule(data_shape, indices_shape, updates_shape) -> tuple[int, ...]:
        data, indices = tuple(data_shape), tuple(indices_shape)
        if not indices or not 1 <= indices[-1] <= len(data):
            raise ValueError(f"indices {list(indices)} must end in a count of 1 to {len(data)} data axes")
        expected = indices[:-1] + data[indices[-1]:]
        if tuple(updates_shape) != expected:
            raise ValueError(f"updates have shape {list(updates_shape)}, indices {list(indices)} into "
                             f"{list(data)} need {list(expected)}")
        return data

    def infer_shape(self):
        if not is_integer(self.indices.type.element_type):
            raise ValueError("indices must be integers")
        if element_of(self.updates) != element_of(self.data):
            raise ValueError("updates must have the data's element type")
        return self.shape_rule(shape_of(self.data), shape_of(self.indices), shape_of(self.updates))


# ----------------------------------------------------------------------------- quantization


class ConversionOp(UnaryOp):
    """Changes the element type, keeping the shape; see the `quant` dialect for the types."""

    SOURCE_QUANTIZED: ClassVar[bool]
    RESULT_QUANTIZED: ClassVar[bool]

    def __init__(self, input: SSAValue, result_element: Attribute | TensorType):
        """`result_element`: the result's (quantized or f32) element type, or a tensor type of it."""
        super().__init__(input, result_element=result_element)

    def verify_(self) -> None:
        super().verify_()
        for value, quantized in ((self.input, self.SOURCE_QUANTIZED), (self.result, self.RESULT_QUANTIZED)):
            if is_quantized(value.type) != quantized or (not quantized and value.type.element_type != f32):
                raise VerifyException(f"{self.name}: expected a {'quantized' if quantized else 'f32'} "
                                      f"{'input' if value is self.input else 'result'}")


@irdl_op_definition
class QuantizeOp(ConversionOp):
    """q = clip(round(x / scale + offset)), with the result type's scale and offset."""

    name = "glow.quantize"
    SOURCE_QUANTIZED: ClassVar[bool] = False
    RESULT_QUANTIZED: ClassVar[bool] = True
    FACTS: ClassVar[OpFacts] = _unary("quantize", layout_agnostic=True, glow_kind="Quantize")


@irdl_op_definition
class DequantizeOp(ConversionOp):
    """x = scale * (q - offset), with the input type's scale and offset."""

    name = "glow.dequantize"
    SOURCE_QUANTIZED: ClassVar[bool] = True
    RESULT_QUANTIZED: ClassVar[bool] = False
    FACTS: ClassVar[OpFacts] = _unary("dequantize", layout_agnostic=True, glow_kind="Dequantize")

    def __init__(self, input: SSAValue, result_element: Attribute | TensorType = f32):
        super().__init__(input, result_element)


@irdl_op_definition
class RescaleQuantizedOp(ConversionOp):
    """The same real values re-expressed with the result type's scale and offset."""

    name = "glow.rescale_quantized"
    SOURCE_QUANTIZED: ClassVar[bool] = True
    RESULT_QUANTIZED: ClassVar[bool] = True
    FACTS: ClassVar[OpFacts] = _unary("rescale_quantized", layout_agnostic=True, glow_kind="RescaleQuantized")


@irdl_op_definition
class PadOp(UnaryOp):
    """Constant padding: `pads` = begin of each dimension, then end of each dimension."""

    name = "glow.pad"
    pads = prop_def(DenseArrayBase)
    value = prop_def(FloatAttr, default_value=FloatAttr(0.0, f32))
    FACTS: ClassVar[OpFacts] = OpFacts(glow_kind="Pad", quantizable=True, keeps_input_quantization=True)

    def __init__(self, input: SSAValue, pads: Sequence[int], value: float = 0.0, *,
                 result_element: ElementLike = None):
        self._build([input], self.shape_rule(shape_of(input), int_values(pads)),
                    _element(result_element, element_of(input)), {"pads": ints(pads), "value": f32_attr(value)})

    @staticmethod
    def shape_rule(input_shape, pads) -> tuple[int, ...]:
        rank = len(input_shape)
        if len(pads) != 2 * rank or min(pads) < 0:
            raise ValueError("pads must hold 2 * rank non-negative values")
        return tuple(s + pads[d] + pads[d + rank] for d, s in enumerate(input_shape))

    def infer_shape(self):
        return self.shape_rule(shape_of(self.input), self.pads.get_values())



Glow = Dialect(
    "glow",
    [
        FunctionOp, PlaceholderOp, ConstantOp, SplatOp, SaveOp, StateOp, StateStoreOp,
        ConvolutionOp, FullyConnectedOp, MatMulOp, MaxPoolOp, AvgPoolOp,
        ConvTransposeOp,
        ReluOp, SigmoidOp, TanhOp, ClipOp, SoftMaxOp, BatchNormalizationOp, LocalResponseNormalizationOp,
        AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, PReluOp,
        LeakyReluOp, EluOp, SeluOp, HardSigmoidOp, HardSwishOp, ExpOp, NegOp, AbsOp,
        SqrtOp, ReciprocalOp, LogOp, SoftplusOp, SoftsignOp, MishOp, CeluOp,
        FloorOp, CeilOp, SignOp, SinOp, CosOp, AtanOp, AsinOp, AcosOp, ErfOp,
        ReduceOp, ReshapeOp, TransposeOp, ConcatOp, SliceOp, PadOp, ResampleOp,
        QuantizeOp, DequantizeOp, RescaleQuantizedOp,
        ConvertOp, CompareOp, AndOp, OrOp, XorOp, NotOp, SelectOp, ArgReduceOp, GatherOp,
        ShiftLeftOp, ShiftRightOp, ModOp, GatherElementsOp, ScatterNDOp, IntLookupTableOp,
    ],
    ENUM_ATTRIBUTES,
)


# ----------------------------------------------------------------------------- queries over the op facts
#
# Every table below is derived from the ops' `FACTS`: a new op class with facts appears in
# all of them. `ops` defaults to the glow dialect's operations; pass another collection
# (e.g. with a test-only op added) to derive the tables over it.

OpClasses = Iterable[type[Operation]] | None


def compute_ops(ops: OpClasses = None) -> tuple[type[GlowOp], ...]:
    """The compute op classes (those with `FACTS`), in dialect order."""
    ops = Glow.operations if ops is None else ops
    return tuple(op for op in ops if isinstance(getattr(op, "FACTS", None), OpFacts))


def elementwise_ops(ops: OpClasses = None) -> dict[type[GlowOp], str]:
    """Op class -> the glowll elementwise kind it lowers to (ModOp: "mod"; with its `fmod`
    flag it is "fmod", see `elementwise_kind`)."""
    return {op: op.FACTS.kind for op in compute_ops(ops) if isinstance(op.FACTS, ElementwiseFacts)}


def facts_of(op: Operation) -> OpFacts | None:
    """The facts of one op, honouring its flags (a `glow.mod` with `fmod` has the fmod kind's)."""
    facts = getattr(type(op), "FACTS", None)
    for flag, flagged in getattr(type(op), "FLAG_FACTS", {}).items():
        if flag in op.properties:
            return flagged
    return facts


def elementwise_kind(op: Operation) -> str | None:
    """The glowll elementwise kind an op lowers to (None: not an elementwise op)."""
    facts = facts_of(op)
    return facts.kind if isinstance(facts, ElementwiseFacts) else None


def elementwise_facts(ops: OpClasses = None) -> dict[str, ElementwiseFacts]:
    """Kind -> facts of every glowll elementwise kind: the ops' kinds, their flag variants,
    and the kinds without an op of their own (`KINDS_WITHOUT_OP`)."""
    table: dict[str, ElementwiseFacts] = {}
    for op in compute_ops(ops):
        for facts in (op.FACTS, *getattr(op, "FLAG_FACTS", {}).values()):
            if isinstance(facts, ElementwiseFacts):
                table[facts.kind] = facts
    return table | {facts.kind: facts for facts in KINDS_WITHOUT_OP}


def fused_activation_kinds(ops: OpClasses = None) -> tuple[str, ...]:
    """The elementwise kinds whose glow op carries a fused activation (`FusedActivation`)."""
    return tuple(kind for op, kind in elementwise_ops(ops).items() if issubclass(op, FusedActivation))


def elementwise_kinds(ops: OpClasses = None) -> dict[str, int]:
    """Kind -> number of sources, for every glowll elementwise kind."""
    return {kind: facts.arity for kind, facts in elementwise_facts(ops).items()}


def elementwise_required_properties(ops: OpClasses = None) -> dict[str, tuple[str, ...]]:
    """Kind -> the properties it cannot do without (kinds that need some)."""
    return {kind: facts.required for kind, facts in elementwise_facts(ops).items() if facts.required}


def glow_op_for_kind(kind: str, ops: OpClasses = None) -> type[GlowOp] | None:
    """The glow op that lowers to elementwise `kind` (ModOp for "mod" and "fmod"); None for
    the kinds without an op."""
    for op in compute_ops(ops):
        if any(isinstance(f, ElementwiseFacts) and f.kind == kind
               for f in (op.FACTS, *getattr(op, "FLAG_FACTS", {}).values())):
            return op
    return None


def in_place_kinds(ops: OpClasses = None) -> tuple[str, ...]:
    """The elementwise kinds whose destination may share their first source's buffer."""
    return tuple(kind for kind, facts in elementwise_facts(ops).items() if facts.in_place)


def mixed_type_kinds(ops: OpClasses = None) -> tuple[str, ...]:
    """The elementwise kinds the integer kernels emit whatever the element type."""
    return tuple(kind for kind, facts in elementwise_facts(ops).items() if facts.mixed_types)


def layout_agnostic_ops(ops: OpClasses = None) -> tuple[type[GlowOp], ...]:
    """The ops a transpose of all their operands sinks through."""
    return tuple(op for op in compute_ops(ops) if isinstance(op.FACTS, ElementwiseFacts) and op.FACTS.layout_agnostic)


def glow_kinds(ops: OpClasses = None) -> dict[type[GlowOp], str]:
    """The ops with integer kernels -> Glow's node kind names (what `glow-quantize` quantizes,
    and the names `-keep-original-precision-for-nodes` takes)."""
    return {op: op.FACTS.glow_kind for op in compute_ops(ops) if op.FACTS.quantizable}


def node_kind(op: Operation) -> str | None:
    """Glow's node kind of one op (as `-keep-original-precision-for-nodes` names it): its
    facts' `glow_kind_of(op)` if they have one, else their `glow_kind`."""
    facts = getattr(op, "FACTS", None)
    if facts is None:
        return None
    return facts.glow_kind_of(op) if facts.glow_kind_of is not None else facts.glow_kind


def input_quantization_ops(ops: OpClasses = None) -> tuple[type[GlowOp], ...]:
    """The ops whose quantized result keeps its input's parameters."""
    return tuple(op for op in compute_ops(ops) if op.FACTS.keeps_input_quantization)


def numpy_semantics(ops: OpClasses = None) -> dict[type[GlowOp], Callable[..., np.ndarray]]:
    """Op class -> its numpy reference semantics, for the elementwise ops that have one."""
    return {op: op.FACTS.numpy for op in compute_ops(ops)
            if isinstance(op.FACTS, ElementwiseFacts) and op.FACTS.numpy is not None}


def dequantized_on_use(value: SSAValue) -> SSAValue | None:
    """The int8 constant whose levels a convolution filter or FullyConnected weights `value`
    are, dequantized as they are read (`DEQUANTIZE_ON_USE`); None for any other value."""
    op = value.owner
    if (isinstance(op, DequantizeOp) and DEQUANTIZE_ON_USE in op.attributes and isinstance(op.input.owner, ConstantOp)
            and all(isinstance(use.operation, ConvolutionOp | FullyConnectedOp) and use.index == 1
                    for use in op.result.uses)):
        return op.input
    return None
