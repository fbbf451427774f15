"""The `glow` dialect: Glow's graph IR, with tensor semantics.

A network is a `glow.function` whose single block holds the graph: `glow.placeholder`
ops read the inputs, `glow.constant` ops hold the weights, compute ops (Convolution,
FullyConnected, pools, elementwise arithmetic, ...) produce new tensors, and `glow.save`
ops name the outputs. Layouts are ONNX's: NCHW activations, OIHW filters. FullyConnected
takes its weights as [in, out], as Glow does.

Every compute op checks its result type against the shape rule in its `infer_shape`,
which the importer also uses to build ops.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar


import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    SymbolNameConstraint,
    IntegerType,
    MemRefType,
    TensorType,
    UnitAttr,
    f32,
    i1,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Dialect, Region, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    ParsePropInAttrDict,
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

from glowmlir.dialects.quant import is_quantized, storage_type
from glowmlir.dialects.weights import NamedWeightSyntax, array_from_dense

# ----------------------------------------------------------------------------- helpers


NODE_NAME = "name"
"""The attribute naming a compute op after the model node it came from (profiles key values
as `<name>:0`)."""


def ints(values: Sequence[int]) -> DenseArrayBase:
    """An `array<i64: ...>` attribute."""
    return DenseArrayBase.from_list(i64, list(values))


def f32_attr(value: float) -> FloatAttr:
    return FloatAttr(float(value), f32)


def shape_of(value: SSAValue) -> tuple[int, ...]:
    """The shape of a tensor (glow) or buffer (glowll) value."""
    assert isinstance(value.type, TensorType | MemRefType), value.type
    return tuple(value.type.get_shape())


def tensor(shape: Sequence[int], element_type: Attribute = f32) -> TensorType:
    return TensorType(element_type, list(shape))


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """Numpy/ONNX multidirectional broadcasting; raises ValueError when incompatible."""
    return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))


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


class ArgReduceKind(StrEnum):
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
class ArgReduceKindAttr(EnumAttribute[ArgReduceKind], SpacedOpaqueSyntaxAttribute):
    name = "glow.arg_reduce_kind"


ENUM_ATTRIBUTES = [ActivationAttr, PoolKindAttr, LayoutAttr, ComparisonPredicateAttr, ReduceKindAttr,
                   ArgReduceKindAttr]


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


class GlowOp(IRDLOperation):
    """Base of the compute ops: the result type must equal the op's shape rule."""

    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure(), KeywordPropertiesOnly())

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
            raise VerifyException(f"{self.name}: result shape {list(actual)} does not match the inferred shape {list(expected)}")


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


@irdl_op_definition
class ConstantOp(NamedWeightSyntax, IRDLOperation):
    """A named constant tensor (a weight); large values print as `elided`."""

    name = "glow.constant"
    name_ = prop_def(StringAttr, prop_name="name")
    value = opt_prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, name: str, value: DenseIntOrFPElementsAttr):
        super().__init__(properties={"name": StringAttr(name), "value": value}, result_types=[value.type])


    def verify_(self) -> None:
        verify_static_shape(self)
        if self.value is not None and tuple(self.value.get_shape()) != shape_of(self.result):
            raise VerifyException(f"glow.constant \"{self.name_.data}\": value shape does not match the result type")


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


@irdl_op_definition
class SaveOp(IRDLOperation):
    """Writes a tensor to the output placeholder `name` (Glow's Save node)."""

    name = "glow.save"
    input = operand_def(TensorType)
    name_ = prop_def(StringAttr, prop_name="name")
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input `as` $name attr-dict `:` type($input)"

    def __init__(self, input: SSAValue, name: str):
        super().__init__(operands=[input], properties={"name": StringAttr(name)})


# ----------------------------------------------------------------------------- compute ops

class FusedActivationMixin:
    """`activation relu` or `activation clip` (with `clip_min`/`clip_max`) on the result."""

    def verify_activation(self) -> None:
        activation = self.properties.get("activation")
        if activation is not None and activation.data == Activation.CLIP and \
                ("clip_min" not in self.properties or "clip_max" not in self.properties):
            raise VerifyException(f"{self.name}: a clip activation needs clip_min and clip_max")


POOL_PROPERTIES = ("pool", "pool_kernel", "pool_strides", "pool_pads", "pool_count_include_pad")
"""The properties of a pool window fused into a convolution (`glow-fuse-conv-pool`)."""


@irdl_op_definition
class ConvolutionOp(GlowOp, FusedActivationMixin):
    """2-D convolution, NCHW input, OIHW filter (I = C / group), bias [O]. Importers may also
    build 1-D ([N, C, L]) and 3-D ([N, C, D, H, W]) ones; the `glow-decompose-1d-windows` and
    `glow-decompose-3d-convolution` passes rewrite them as 2-D ones, the only ones lowered.

    `glow-fuse-conv-pool` may give it a `pool` window ("max" or "avg", with `pool_kernel`,
    `pool_strides`, `pool_pads`): the result is then the pooled convolution.
    `glow-fuse-residual-add` may give it a `residual` operand added to its result (before
    the activation), as in ResNet blocks.
    """

    name = "glow.convolution"
    layout = opt_prop_def(LayoutAttr)  # NHWC: NHWC input and result, OHWI filter (for kernel libraries)
    input = operand_def(TensorType)
    filter = operand_def(TensorType)
    bias = operand_def(TensorType)
    residual = opt_operand_def(TensorType)
    result = result_def(TensorType)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)  # top, left, bottom, right
    dilations = prop_def(DenseArrayBase)
    group = prop_def(IntegerAttr, default_value=IntegerAttr(1, i64))
    activation = opt_prop_def(ActivationAttr)
    clip_min = opt_prop_def(FloatAttr)
    clip_max = opt_prop_def(FloatAttr)
    pool = opt_prop_def(PoolKindAttr)
    pool_kernel = opt_prop_def(DenseArrayBase)
    pool_strides = opt_prop_def(DenseArrayBase)
    pool_pads = opt_prop_def(DenseArrayBase)
    pool_count_include_pad = opt_prop_def(UnitAttr)
    assembly_format = ("$input `,` $filter `,` $bias (`residual` $residual^)? (`activation` $activation^)? "
                       "(`pool` $pool^)? (`layout` $layout^)? attr-dict `:` "
                       "functional-type(operands, results)")

    @staticmethod
    def shape_rule(input_shape, filter_shape, strides, pads, dilations, group) -> tuple[int, ...]:
        """[N, O, *out] of an input [N, C, *spatial] and a filter [O, C / group, *kernel]."""
        (n, c, *spatial), (o, i, *kernel) = input_shape, filter_shape
        if group < 1 or c != i * group or o % group:
            raise ValueError(f"filter {list(filter_shape)} does not fit input channels {c} with group {group}")
        return (n, o, *window_sizes(spatial, kernel, strides, pads, dilations))

    def convolution_shape(self) -> tuple[int, ...]:
        """The shape before the fused pooling, if any (NCHW)."""
        return convolution_shape(self)

    def infer_shape(self):
        return convolution_result_shape(self)

    def verify_(self) -> None:
        super().verify_()
        self.verify_activation()
        if shape_of(self.bias) != (shape_of(self.filter)[0],):
            raise VerifyException("glow.convolution: bias must have one element per output channel")
        if self.residual is not None and (shape_of(self.residual) != shape_of(self.result) or self.pool is not None):
            raise VerifyException("glow.convolution: a residual must have the result's shape, and no pool")


def convolution_shape(op: IRDLOperation) -> tuple[int, ...]:
    """The NCHW shape of a convolution (`glow.convolution` or `glowll.convolution`) before
    its fused pooling, from its input, filter and window properties."""
    input_shape, filter_shape = shape_of(op.input), shape_of(op.filter)
    if is_nhwc(op):  # NHWC input, OHWI filter: the same rule on the NCHW/OIHW views
        input_shape, filter_shape = to_nchw(input_shape), to_nchw(filter_shape)
    return ConvolutionOp.shape_rule(input_shape, filter_shape, op.strides.get_values(), op.pads.get_values(),
                                    op.dilations.get_values(), op.group.value.data)


def convolution_result_shape(op: IRDLOperation) -> tuple[int, ...]:
    """The result shape of a convolution, pooled by its fused `pool` window if it has one."""
    shape = convolution_shape(op)
    if is_nhwc(op):
        if op.pool is not None:
            raise ValueError("an NHWC convolution has no fused pool")
        return to_nhwc(shape)
    if op.pool is None:
        return shape
    k, s, p = op.pool_kernel.get_values(), op.pool_strides.get_values(), op.pool_pads.get_values()
    return (*shape[:2], *window_sizes(shape[2:], k, s, p))


def pool_result_shape(op: IRDLOperation) -> tuple[int, ...]:
    """The result shape of a max or average pool (glow or glowll), NCHW or NHWC."""
    nhwc = is_nhwc(op)
    n, c, *spatial = to_nchw(shape_of(op.input)) if nhwc else shape_of(op.input)
    shape = (n, c, *window_sizes(spatial, op.kernel.get_values(), op.strides.get_values(), op.pads.get_values()))
    return to_nhwc(shape) if nhwc else shape


@irdl_op_definition
class ConvTransposeOp(GlowOp):
    """Transposed convolution (ONNX ConvTranspose) over 1 to 3 spatial axes: input [N, C, *spatial],
    filter [C, O / group, *kernel], bias [O]. An output extent is (size - 1) * stride + dilation
    * (kernel - 1) + 1 + output_padding - pad_begin - pad_end. Not lowered:
    `glow-decompose-conv-transpose` rewrites it as a `glow.convolution`."""

    name = "glow.conv_transpose"
    input = operand_def(TensorType)
    filter = operand_def(TensorType)
    bias = operand_def(TensorType)
    result = result_def(TensorType)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)  # the begin of each spatial axis, then the end of each
    dilations = prop_def(DenseArrayBase)
    output_padding = prop_def(DenseArrayBase)
    group = prop_def(IntegerAttr, default_value=IntegerAttr(1, i64))
    assembly_format = "$input `,` $filter `,` $bias attr-dict `:` functional-type(operands, results)"

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
class FullyConnectedOp(GlowOp, FusedActivationMixin):
    """out[m, n] = sum_k input[m, k] * weights[k, n] + bias[n]."""

    name = "glow.fully_connected"
    input = operand_def(TensorType)
    weights = operand_def(TensorType)
    bias = operand_def(TensorType)
    result = result_def(TensorType)
    activation = opt_prop_def(ActivationAttr)
    clip_min = opt_prop_def(FloatAttr)
    clip_max = opt_prop_def(FloatAttr)
    assembly_format = ("$input `,` $weights `,` $bias (`activation` $activation^)? attr-dict `:` "
                       "functional-type(operands, results)")

    def infer_shape(self):
        (m, k), (k2, n) = shape_of(self.input), shape_of(self.weights)
        if k != k2 or shape_of(self.bias) != (n,):
            raise ValueError(f"input {[m, k]}, weights {[k2, n]} and bias {list(shape_of(self.bias))} do not fit")
        return (m, n)

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

    def infer_shape(self):
        a, b = shape_of(self.lhs), shape_of(self.rhs)
        if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
            raise ValueError(f"cannot multiply {list(a)} by {list(b)}")
        return broadcast_shapes(a[:-2], b[:-2]) + (a[-2], b[-1])


class PoolOp(GlowOp):
    """A max or average pool: 2-D (NCHW), or 1-D and 3-D as importers build them, which the
    `glow-decompose-1d-windows` and `glow-decompose-3d-pools` passes rewrite as 2-D ones."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    kernel = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)  # top, left, bottom, right
    layout = opt_prop_def(LayoutAttr)  # NHWC (for kernel libraries); NCHW otherwise
    assembly_format = "$input (`layout` $layout^)? attr-dict `:` functional-type(operands, results)"

    def infer_shape(self):
        return pool_result_shape(self)


@irdl_op_definition
class MaxPoolOp(PoolOp):
    name = "glow.max_pool"


@irdl_op_definition
class AvgPoolOp(PoolOp):
    """Average pool; `count_include_pad` = divide by the whole window, pads included."""

    name = "glow.avg_pool"
    count_include_pad = opt_prop_def(UnitAttr)


class UnaryOp(GlowOp):
    input = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def infer_shape(self):
        return shape_of(self.input)


@irdl_op_definition
class ReluOp(UnaryOp):
    name = "glow.relu"


@irdl_op_definition
class SigmoidOp(UnaryOp):
    name = "glow.sigmoid"


@irdl_op_definition
class TanhOp(UnaryOp):
    name = "glow.tanh"


@irdl_op_definition
class ClipOp(UnaryOp):
    name = "glow.clip"
    min = prop_def(FloatAttr)
    max = prop_def(FloatAttr)


class ParametricUnaryOp(UnaryOp):
    """An elementwise function with optional `alpha`/`beta` parameters (ONNX's defaults are
    written in by the importer)."""

    alpha = opt_prop_def(FloatAttr)
    beta = opt_prop_def(FloatAttr)


@irdl_op_definition
class LeakyReluOp(ParametricUnaryOp):
    """x if x >= 0 else alpha * x."""

    name = "glow.leaky_relu"


@irdl_op_definition
class EluOp(ParametricUnaryOp):
    """x if x >= 0 else alpha * (e^x - 1)."""

    name = "glow.elu"


@irdl_op_definition
class SeluOp(ParametricUnaryOp):
    """beta (gamma) * (x if x > 0 else alpha * (e^x - 1))."""

    name = "glow.selu"


@irdl_op_definition
class HardSigmoidOp(ParametricUnaryOp):
    """max(0, min(1, alpha * x + beta))."""

    name = "glow.hard_sigmoid"


@irdl_op_definition
class HardSwishOp(UnaryOp):
    """x * max(0, min(1, x / 6 + 1/2))."""

    name = "glow.hard_swish"


@irdl_op_definition
class ExpOp(UnaryOp):
    name = "glow.exp"


@irdl_op_definition
class NegOp(UnaryOp):
    name = "glow.neg"


@irdl_op_definition
class SqrtOp(UnaryOp):
    name = "glow.sqrt"


@irdl_op_definition
class ReciprocalOp(UnaryOp):
    name = "glow.reciprocal"


@irdl_op_definition
class LogOp(UnaryOp):
    """Natural logarithm."""

    name = "glow.log"


@irdl_op_definition
class SoftplusOp(UnaryOp):
    """log(1 + e^x)."""

    name = "glow.softplus"


@irdl_op_definition
class SoftsignOp(UnaryOp):
    """x / (1 + |x|)."""

    name = "glow.softsign"


@irdl_op_definition
class MishOp(UnaryOp):
    """x * tanh(softplus(x))."""

    name = "glow.mish"


@irdl_op_definition
class CeluOp(ParametricUnaryOp):
    """max(0, x) + min(0, alpha * (e^(x / alpha) - 1))."""

    name = "glow.celu"


@irdl_op_definition
class AbsOp(UnaryOp):
    name = "glow.abs"


@irdl_op_definition
class SoftMaxOp(UnaryOp):
    """Softmax over one axis; with `log`, LogSoftmax."""

    name = "glow.softmax"
    axis = prop_def(IntegerAttr)
    log = opt_prop_def(UnitAttr)

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

    def infer_shape(self):
        shape = shape_of(self.input)
        for operand in (self.scale, self.bias, self.mean, self.var):
            if shape_of(operand) != (shape[1],):
                raise ValueError("scale, bias, mean and var must have one element per channel")
        return shape


class BinaryOp(GlowOp):
    """Elementwise arithmetic with numpy/ONNX broadcasting."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def infer_shape(self):
        return broadcast_shapes(shape_of(self.lhs), shape_of(self.rhs))

    def verify_(self) -> None:
        super().verify_()
        lhs, rhs = (storage_type(v.type.element_type) for v in (self.lhs, self.rhs))
        if lhs != rhs:
            raise VerifyException(f"{self.name}: operands of different element types {lhs} and {rhs}")


@irdl_op_definition
class AddOp(BinaryOp, FusedActivationMixin):
    name = "glow.add"
    activation = opt_prop_def(ActivationAttr)
    clip_min = opt_prop_def(FloatAttr)
    clip_max = opt_prop_def(FloatAttr)
    assembly_format = "$lhs `,` $rhs (`activation` $activation^)? attr-dict `:` functional-type(operands, results)"

    def verify_(self) -> None:
        super().verify_()
        self.verify_activation()


@irdl_op_definition
class SubOp(BinaryOp):
    name = "glow.sub"


@irdl_op_definition
class MulOp(BinaryOp):
    name = "glow.mul"


@irdl_op_definition
class DivOp(BinaryOp):
    name = "glow.div"


@irdl_op_definition
class PowOp(BinaryOp):
    """lhs ^ rhs (floats), as C's powf."""

    name = "glow.pow"


@irdl_op_definition
class MaxOp(BinaryOp):
    name = "glow.max"


@irdl_op_definition
class MinOp(BinaryOp):
    name = "glow.min"


@irdl_op_definition
class PReluOp(BinaryOp):
    """lhs if lhs >= 0 else rhs * lhs (rhs: the slope, broadcast)."""

    name = "glow.prelu"


@irdl_op_definition
class ReduceOp(UnaryOp):
    """Reduces `axes` with `kind` ("sum", "mean", "max", "min"); the result type says whether
    the reduced dimensions are kept (as 1) or dropped."""

    name = "glow.reduce"
    kind = prop_def(ReduceKindAttr)
    axes = prop_def(DenseArrayBase)
    assembly_format = "$kind $input attr-dict `:` functional-type(operands, results)"

    def infer_shape(self):
        shape, axes = shape_of(self.input), set(self.axes.get_values())
        if not axes <= set(range(len(shape))):
            raise ValueError(f"cannot reduce axes {sorted(axes)} of {list(shape)} with \"{self.kind.data}\"")
        kept = tuple(1 if d in axes else s for d, s in enumerate(shape))
        dropped = tuple(s for d, s in enumerate(shape) if d not in axes)
        if shape_of(self.result) not in (kept, dropped):
            raise ValueError(f"result must be {list(kept)} or {list(dropped)}")
        return shape_of(self.result)


@irdl_op_definition
class ReshapeOp(UnaryOp):
    """Same elements, new shape (the result type)."""

    name = "glow.reshape"

    def infer_shape(self):
        if int(np.prod(shape_of(self.input))) != int(np.prod(shape_of(self.result))):
            raise ValueError("reshape must keep the number of elements")
        return shape_of(self.result)


@irdl_op_definition
class TransposeOp(UnaryOp):
    name = "glow.transpose"
    perm = prop_def(DenseArrayBase)

    def infer_shape(self):
        shape, perm = shape_of(self.input), self.perm.get_values()
        if sorted(perm) != list(range(len(shape))):
            raise ValueError(f"{list(perm)} is not a permutation of {len(shape)} dimensions")
        return tuple(shape[p] for p in perm)


def transpose(value: SSAValue, perm: Sequence[int]) -> TransposeOp:
    """A new (unattached) `glow.transpose` of `value` by `perm`."""
    shape = shape_of(value)
    return TransposeOp.create(operands=[value], properties={"perm": ints(perm)},
                              result_types=[tensor([shape[p] for p in perm], value.type.element_type)])


@irdl_op_definition
class ConcatOp(GlowOp):
    name = "glow.concat"
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    assembly_format = "$inputs attr-dict `:` functional-type($inputs, results)"

    def infer_shape(self):
        shapes = [shape_of(v) for v in self.inputs]
        axis = self.axis.value.data
        for s in shapes:
            if len(s) != len(shapes[0]) or s[:axis] + s[axis + 1:] != shapes[0][:axis] + shapes[0][axis + 1:]:
                raise ValueError(f"inputs {[list(s) for s in shapes]} cannot be concatenated on axis {axis}")
        return shapes[0][:axis] + (sum(s[axis] for s in shapes),) + shapes[0][axis + 1:]


@irdl_op_definition
class SliceOp(UnaryOp):
    """result[i] = input[starts + i * steps] (steps > 0)."""

    name = "glow.slice"
    starts = prop_def(DenseArrayBase)
    steps = prop_def(DenseArrayBase)

    def infer_shape(self):
        shape, out = shape_of(self.input), shape_of(self.result)
        for size, start, step, n in zip(shape, self.starts.get_values(), self.steps.get_values(), out, strict=True):
            if step < 1 or start < 0 or n < 1 or start + (n - 1) * step >= size:
                raise ValueError(f"slice out of bounds of {list(shape)}")
        return out


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

    def infer_shape(self):
        shape, axis = list(shape_of(self.input)), self.axis.value.data
        taps = shape_of(self.taps)
        if len(taps) != 2 or shape_of(self.weights) != taps or not 0 <= axis < len(shape):
            raise ValueError("taps and weights must be [output size, taps per output] on an axis of the input")
        shape[axis] = taps[0]
        return tuple(shape)


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

    def verify_(self) -> None:
        super().verify_()
        if self.result.type.element_type != i1:
            raise VerifyException("glow.compare: the result must be boolean (i1)")


@irdl_op_definition
class AndOp(BinaryOp):
    """Logical (booleans) or bitwise (integers) and."""

    name = "glow.and"


@irdl_op_definition
class OrOp(BinaryOp):
    name = "glow.or"


@irdl_op_definition
class XorOp(BinaryOp):
    name = "glow.xor"


class IndexedReadOp(GlowOp):
    """Reads `data` at positions along `axis` that integer `indices` give (negative ones
    count from the end)."""

    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    assembly_format = "$data `,` $indices attr-dict `:` functional-type(operands, results)"

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

    def infer_shape(self):
        data, indices, axis = shape_of(self.data), shape_of(self.indices), self.axis.value.data
        if not is_integer(self.indices.type.element_type) or len(data) != len(indices) or not 0 <= axis < len(data):
            raise ValueError("indices must be integers of the data's rank")
        return indices


@irdl_op_definition
class ShiftLeftOp(BinaryOp):
    """Integers: lhs << rhs."""

    name = "glow.shift_left"


@irdl_op_definition
class ShiftRightOp(BinaryOp):
    """Integers: lhs >> rhs (arithmetic for signed, logical for unsigned)."""

    name = "glow.shift_right"


@irdl_op_definition
class ModOp(BinaryOp):
    """The remainder of lhs / rhs: with `fmod`, C's fmod (the sign of lhs, floats too);
    else Python's (the sign of rhs, integers)."""

    name = "glow.mod"
    fmod = opt_prop_def(UnitAttr)


@irdl_op_definition
class NotOp(UnaryOp):
    """Logical (booleans) or bitwise (integers) not."""

    name = "glow.not"


@irdl_op_definition
class SelectOp(GlowOp):
    """condition ? lhs : rhs (ONNX Where), the three broadcast together."""

    name = "glow.select"
    condition = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = "$condition `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def infer_shape(self):
        if self.condition.type.element_type != i1:
            raise ValueError("the condition must be boolean")
        return broadcast_shapes(shape_of(self.condition), shape_of(self.lhs), shape_of(self.rhs))


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

    def infer_shape(self):
        shape, axis = shape_of(self.input), self.axis.value.data
        if not 0 <= axis < len(shape):
            raise ValueError(f"cannot take the arg{self.kind.data} of axis {axis} of {list(shape)}")
        if self.result.type.element_type != i64:
            raise ValueError("the result holds i64 indices")
        kept, dropped = shape[:axis] + (1,) + shape[axis + 1:], shape[:axis] + shape[axis + 1:]
        return kept if shape_of(self.result) == kept else dropped


@irdl_op_definition
class GatherOp(IndexedReadOp):
    """result = data indexed along `axis` by `indices`: shape data[:axis] + indices + data[axis + 1:]."""

    name = "glow.gather"

    def infer_shape(self):
        data, axis = shape_of(self.data), self.axis.value.data
        if not is_integer(self.indices.type.element_type) or not 0 <= axis < len(data):
            raise ValueError("indices must be integers indexing an axis of the data")
        return data[:axis] + shape_of(self.indices) + data[axis + 1:]


# ----------------------------------------------------------------------------- quantization


class ConversionOp(UnaryOp):
    """Changes the element type, keeping the shape; see the `quant` dialect for the types."""

    SOURCE_QUANTIZED: ClassVar[bool]
    RESULT_QUANTIZED: ClassVar[bool]

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


@irdl_op_definition
class DequantizeOp(ConversionOp):
    """x = scale * (q - offset), with the input type's scale and offset."""

    name = "glow.dequantize"
    SOURCE_QUANTIZED: ClassVar[bool] = True
    RESULT_QUANTIZED: ClassVar[bool] = False


@irdl_op_definition
class RescaleQuantizedOp(ConversionOp):
    """The same real values re-expressed with the result type's scale and offset."""

    name = "glow.rescale_quantized"
    SOURCE_QUANTIZED: ClassVar[bool] = True
    RESULT_QUANTIZED: ClassVar[bool] = True


@irdl_op_definition
class PadOp(UnaryOp):
    """Constant padding: `pads` = begin of each dimension, then end of each dimension."""

    name = "glow.pad"
    pads = prop_def(DenseArrayBase)
    value = prop_def(FloatAttr, default_value=FloatAttr(0.0, f32))

    def infer_shape(self):
        shape, pads = shape_of(self.input), self.pads.get_values()
        rank = len(shape)
        if len(pads) != 2 * rank or min(pads) < 0:
            raise ValueError("pads must hold 2 * rank non-negative values")
        return tuple(s + pads[d] + pads[d + rank] for d, s in enumerate(shape))



Glow = Dialect(
    "glow",
    [
        FunctionOp, PlaceholderOp, ConstantOp, SplatOp, SaveOp,
        ConvolutionOp, FullyConnectedOp, MatMulOp, MaxPoolOp, AvgPoolOp,
        ConvTransposeOp,
        ReluOp, SigmoidOp, TanhOp, ClipOp, SoftMaxOp, BatchNormalizationOp, LocalResponseNormalizationOp,
        AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, PReluOp,
        LeakyReluOp, EluOp, SeluOp, HardSigmoidOp, HardSwishOp, ExpOp, NegOp, AbsOp,
        SqrtOp, ReciprocalOp, LogOp, SoftplusOp, SoftsignOp, MishOp, CeluOp,
        ReduceOp, ReshapeOp, TransposeOp, ConcatOp, SliceOp, PadOp, ResampleOp,
        QuantizeOp, DequantizeOp, RescaleQuantizedOp,
        ConvertOp, CompareOp, AndOp, OrOp, XorOp, NotOp, SelectOp, ArgReduceOp, GatherOp,
        ShiftLeftOp, ShiftRightOp, ModOp, GatherElementsOp,
    ],
    ENUM_ATTRIBUTES,
)
