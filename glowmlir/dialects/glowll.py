"""The `glowll` dialect: Glow's low-level IR, with buffer semantics.

Every value is a buffer (a `memref`) that lives in one of the bundle's three memory
regions:

* `glowll.weight`      — the constant region (`constantWeight`), holding weights;
* `glowll.placeholder` — the mutable region (`mutableWeight`), the network's inputs and outputs;
* `glowll.alloc`       — the activations region (`activations`), scratch for intermediates.

Each carries an `offset` (bytes from the start of its region) once memory is allocated.
Instructions read and write buffers and return nothing; by Glow's convention the
destination buffer comes first. A `glowll.function` records the three region sizes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    MemRefType,
    StringAttr,
    SymbolNameConstraint,
    UnitAttr,
    i32,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Dialect, Region, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
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
from xdsl.traits import IsolatedFromAbove, NoTerminator, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from glowmlir.dialects import glow
from glowmlir.dialects.weights import NamedWeightSyntax

REGIONS = ("constant", "mutable", "activations")


@irdl_op_definition
class FunctionOp(IRDLOperation):
    """The network's instructions in schedule order, plus the sizes of the three regions."""

    name = "glowll.function"
    sym_name = prop_def(SymbolNameConstraint())
    constant_size = opt_prop_def(IntegerAttr)
    mutable_size = opt_prop_def(IntegerAttr)
    activations_size = opt_prop_def(IntegerAttr)
    activations_lower_bound = opt_prop_def(IntegerAttr)
    allocation_strategy = opt_prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(SymbolOpInterface(), NoTerminator(), IsolatedFromAbove())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym_name attr-dict-with-keyword $body"

    def __init__(self, name: str, body: Region):
        super().__init__(properties={"sym_name": StringAttr(name)}, regions=[body])


# ----------------------------------------------------------------------------- buffers


def byte_size(memref: MemRefType) -> int:
    """The bytes of a buffer of this type."""
    return memref.element_count() * memref.element_type.compile_time_size


class BufferOp(IRDLOperation):
    """Defines a buffer in one region; `offset` is set by memory allocation."""

    REGION: ClassVar[str]
    offset = opt_prop_def(IntegerAttr)
    buffer = result_def(MemRefType)

    @property
    def byte_size(self) -> int:
        return byte_size(self.buffer.type)


@irdl_op_definition
class WeightOp(NamedWeightSyntax, BufferOp):
    """A constant buffer holding the named weight (printed `elided` when large)."""

    name = "glowll.weight"
    REGION: ClassVar[str] = "constant"
    name_ = prop_def(StringAttr, prop_name="name")
    value = opt_prop_def(DenseIntOrFPElementsAttr)



class PlaceholderKind(StrEnum):
    INPUT = "input"
    OUTPUT = "output"


@irdl_attr_definition
class PlaceholderKindAttr(EnumAttribute[PlaceholderKind], SpacedOpaqueSyntaxAttribute):
    name = "glowll.placeholder_kind"


@irdl_op_definition
class PlaceholderOp(BufferOp):
    """A network input or output in the mutable region."""

    name = "glowll.placeholder"
    REGION: ClassVar[str] = "mutable"
    kind = prop_def(PlaceholderKindAttr)
    name_ = prop_def(StringAttr, prop_name="name")
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$kind $name attr-dict `:` type($buffer)"
    traits = traits_def(glow.KeywordPropertiesOnly())


@irdl_op_definition
class AllocOp(BufferOp):
    """A scratch buffer in the activations region."""

    name = "glowll.alloc"
    REGION: ClassVar[str] = "activations"
    live_range = opt_prop_def(DenseArrayBase)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict `:` type($buffer)"


@irdl_op_definition
class TensorViewOp(IRDLOperation):
    """Another shape over `source`'s memory, from element `offset` on: no buffer, no copy.

    Reshapes are views; so are the slices of a Concat that its producers write in place.
    """

    name = "glowll.tensorview"
    source = operand_def(MemRefType)
    offset = prop_def(IntegerAttr)
    buffer = result_def(MemRefType)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$source attr-dict `:` type($source) `->` type($buffer)"

    def verify_(self) -> None:
        if self.offset.value.data < 0 or self.offset.value.data + self.buffer.type.element_count() > \
                self.source.type.element_count():
            raise VerifyException("glowll.tensorview: the view does not fit in its source")


def root_buffer(buffer: SSAValue) -> tuple[BufferOp, int]:
    """The buffer that owns `buffer`'s memory, and `buffer`'s element offset inside it."""
    offset = 0
    while isinstance(view := buffer.owner, TensorViewOp):
        offset += view.offset.value.data
        buffer = view.source
    assert isinstance(buffer.owner, BufferOp), buffer.owner
    return buffer.owner, offset


# ----------------------------------------------------------------------------- instructions


class InstructionOp(IRDLOperation):
    """Base of the instructions: the first operand, `dest`, is written; the others are read."""

    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(glow.KeywordPropertiesOnly())

    @property
    def sources(self) -> tuple[SSAValue, ...]:
        return tuple(self.operands[1:])

    def expect_dest_shape(self, rule: Callable[[IRDLOperation], Sequence[int]]) -> None:
        """Refuses a dest whose shape is not what `rule` (a glow shape rule) gives: a kernel
        would write outside it, or leave part of it unwritten."""
        try:
            expected = tuple(rule(self))
        except ValueError as error:
            raise VerifyException(f"{self.name}: {error}") from None
        if glow.shape_of(self.dest) != expected:
            raise VerifyException(f"{self.name}: dest has shape {list(glow.shape_of(self.dest))}, the operands "
                                  f"give {list(expected)}")


@irdl_op_definition
class ConvolutionOp(InstructionOp):
    """dest[n, o, y, x] = act(bias[o] + sum input[n, c, y*s+ky*d-p, x*s+kx*d-p] * filter[o, c', ky, kx]),

    then pooled by a fused `pool` window ("max" or "avg") when one is set. With a
    `residual` buffer, residual[n, o, y, x] is added before the activation (it may be
    `dest` itself: the convolution then accumulates into it in place).

    Quantized with a per-channel filter, `requantization` is an i32 [2, O] weight: the
    multiplier of each output channel, then its shift.
    """

    name = "glowll.convolution"
    dest = operand_def(MemRefType)
    input = operand_def(MemRefType)
    filter = operand_def(MemRefType)
    bias = operand_def(MemRefType)
    residual = opt_operand_def(MemRefType)
    requantization = opt_operand_def(MemRefType)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase)
    group = prop_def(IntegerAttr)
    activation = opt_prop_def(glow.ActivationAttr)
    clip_min = opt_prop_def(FloatAttr)
    clip_max = opt_prop_def(FloatAttr)
    pool = opt_prop_def(glow.PoolKindAttr)
    pool_kernel = opt_prop_def(DenseArrayBase)
    pool_strides = opt_prop_def(DenseArrayBase)
    pool_pads = opt_prop_def(DenseArrayBase)
    pool_count_include_pad = opt_prop_def(UnitAttr)
    layout = opt_prop_def(glow.LayoutAttr)  # NHWC: NHWC buffers and OHWI filter (kernel libraries only)
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = ("$dest `,` $input `,` $filter `,` $bias (`residual` $residual^)? "
                       "(`requantization` $requantization^)? (`activation` $activation^)? (`pool` $pool^)? "
                       "(`layout` $layout^)? attr-dict `:` type($dest) `,` type($input) `,` "
                       "type($filter) `,` type($bias) (`,` type($residual)^)? (`requantization` type($requantization)^)?")

    def verify_(self) -> None:
        self.expect_dest_shape(glow.convolution_result_shape)
        glow.FusedActivationMixin.verify_activation(self)
        if glow.shape_of(self.bias) != (glow.convolution_shape(self)[1],):
            raise VerifyException("glowll.convolution: bias must have one element per output channel")
        if self.residual is not None and glow.shape_of(self.residual) != glow.shape_of(self.dest):
            raise VerifyException("glowll.convolution: the residual must have dest's shape")

    @staticmethod
    def from_buffers(operands: list[SSAValue], properties: dict, residual: SSAValue | None = None,
              requantization: SSAValue | None = None) -> ConvolutionOp:
        """From dest, input, filter, bias and the optional residual and requantization buffers."""
        optional = [v for v in (residual, requantization) if v is not None]
        sizes = DenseArrayBase.from_list(i32, [1, 1, 1, 1, int(residual is not None), int(requantization is not None)])
        return ConvolutionOp.create(operands=[*operands, *optional],
                                    properties=properties | {"operandSegmentSizes": sizes})


@irdl_op_definition
class FullyConnectedOp(InstructionOp):
    """dest[m, n] = act(bias[n] + sum_k input[m, k] * weights[n, k]).

    Unlike `glow.fully_connected`, weights are [out, in], so that each output reads one
    contiguous row.
    """

    name = "glowll.fully_connected"
    dest = operand_def(MemRefType)
    input = operand_def(MemRefType)
    weights = operand_def(MemRefType)
    bias = operand_def(MemRefType)
    activation = opt_prop_def(glow.ActivationAttr)
    clip_min = opt_prop_def(FloatAttr)
    clip_max = opt_prop_def(FloatAttr)
    assembly_format = "$dest `,` $input `,` $weights `,` $bias (`activation` $activation^)? attr-dict `:` type(operands)"

    def verify_(self) -> None:
        glow.FusedActivationMixin.verify_activation(self)
        (m, k), (n, k_weights) = glow.shape_of(self.input), glow.shape_of(self.weights)
        if k != k_weights or glow.shape_of(self.dest) != (m, n) or glow.shape_of(self.bias) != (n,):
            raise VerifyException(f"glowll.fully_connected: dest {list(glow.shape_of(self.dest))}, input [{m}, {k}], "
                                  f"weights [{n}, {k_weights}] (out, in) and bias {list(glow.shape_of(self.bias))} "
                                  f"do not fit")


@irdl_op_definition
class MatMulOp(InstructionOp):
    """Batched matrix product, batch dimensions broadcast."""

    name = "glowll.matmul"
    dest = operand_def(MemRefType)
    lhs = operand_def(MemRefType)
    rhs = operand_def(MemRefType)
    assembly_format = "$dest `,` $lhs `,` $rhs attr-dict `:` type(operands)"


@irdl_op_definition
class MaxPoolOp(InstructionOp):
    name = "glowll.max_pool"
    dest = operand_def(MemRefType)
    input = operand_def(MemRefType)
    kernel = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    layout = opt_prop_def(glow.LayoutAttr)
    assembly_format = "$dest `,` $input (`layout` $layout^)? attr-dict `:` type(operands)"

    def verify_(self) -> None:
        self.expect_dest_shape(glow.pool_result_shape)


@irdl_op_definition
class AvgPoolOp(InstructionOp):
    name = "glowll.avg_pool"
    dest = operand_def(MemRefType)
    input = operand_def(MemRefType)
    kernel = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    layout = opt_prop_def(glow.LayoutAttr)
    count_include_pad = opt_prop_def(UnitAttr)
    assembly_format = "$dest `,` $input (`layout` $layout^)? attr-dict `:` type(operands)"

    def verify_(self) -> None:
        self.expect_dest_shape(glow.pool_result_shape)


ELEMENTWISE_KINDS = {
    # kind: number of sources
    "add": 2, "sub": 2, "mul": 2, "div": 2, "pow": 2, "max": 2, "min": 2, "prelu": 2,
    "relu": 1, "clip": 1, "sigmoid": 1, "tanh": 1, "leaky_relu": 1, "elu": 1, "selu": 1, "hard_sigmoid": 1,
    "hard_swish": 1, "exp": 1, "neg": 1, "abs": 1, "sqrt": 1, "reciprocal": 1, "log": 1, "softplus": 1,
    "softsign": 1, "mish": 1, "celu": 1, "copy": 1, "splat": 0,
    "quantize": 1, "dequantize": 1, "rescale_quantized": 1,
    "convert": 1, "compare": 2, "and": 2, "or": 2, "xor": 2, "not": 1, "select": 3,
    "shift_left": 2, "shift_right": 2, "mod": 2, "fmod": 2,
}


ELEMENTWISE_PROPERTIES = {"clip": ("clip_min", "clip_max"), "splat": ("value",), "compare": ("predicate",)}
"""The properties a kind cannot do without."""


@irdl_op_definition
class ElementwiseOp(InstructionOp):
    """dest = kind(sources...), sources broadcast to dest's shape (numpy rules).

    `splat` fills dest with `value`; `clip` uses `clip_min`/`clip_max`; `add` may apply a
    fused `activation`.
    """

    name = "glowll.elementwise"
    dest = operand_def(MemRefType)
    inputs = var_operand_def(MemRefType)
    kind = prop_def(StringAttr)
    value = opt_prop_def(FloatAttr)
    alpha = opt_prop_def(FloatAttr)
    beta = opt_prop_def(FloatAttr)
    activation = opt_prop_def(glow.ActivationAttr)
    clip_min = opt_prop_def(FloatAttr)
    clip_max = opt_prop_def(FloatAttr)
    predicate = opt_prop_def(glow.ComparisonPredicateAttr)  # of `compare`
    assembly_format = ("$dest (`,` $inputs^)? (`activation` $activation^)? (`predicate` $predicate^)? attr-dict "
                       "`:` type(operands)")

    def verify_(self) -> None:
        kind = self.kind.data
        if kind not in ELEMENTWISE_KINDS:
            raise VerifyException(f"glowll.elementwise: unknown kind \"{kind}\"")
        if len(self.inputs) != ELEMENTWISE_KINDS[kind]:
            raise VerifyException(f"glowll.elementwise: \"{kind}\" takes {ELEMENTWISE_KINDS[kind]} sources")
        self.expect_dest_shape(lambda op: glow.broadcast_shapes(glow.shape_of(op.dest), *map(glow.shape_of, op.inputs)))
        glow.FusedActivationMixin.verify_activation(self)
        for property_name in ELEMENTWISE_PROPERTIES.get(kind, ()):
            if property_name not in self.properties:
                raise VerifyException(f"glowll.elementwise: \"{kind}\" needs {property_name}")


@irdl_op_definition
class SoftMaxOp(InstructionOp):
    name = "glowll.softmax"
    dest = operand_def(MemRefType)
    input = operand_def(MemRefType)
    axis = prop_def(IntegerAttr)
    log = opt_prop_def(UnitAttr)
    assembly_format = "$dest `,` $input attr-dict `:` type(operands)"

    def verify_(self) -> None:
        self.expect_dest_shape(lambda op: glow.shape_of(op.input))
        if not 0 <= self.axis.value.data < len(glow.shape_of(self.input)):
            raise VerifyException(f"glowll.softmax: axis {self.axis.value.data} is not an axis of the input")


@irdl_op_definition
class LocalResponseNormalizationOp(InstructionOp):
    """See `glow.local_response_normalization` (NCHW, across channels)."""

    name = "glowll.local_response_normalization"
    dest = operand_def(MemRefType)
    input = operand_def(MemRefType)
    size = prop_def(IntegerAttr)
    alpha = prop_def(FloatAttr)
    beta = prop_def(FloatAttr)
    bias = prop_def(FloatAttr)
    assembly_format = "$dest `,` $input attr-dict `:` type(operands)"


@irdl_op_definition
class ReduceOp(InstructionOp):
    """dest = reduction (`kind`) of input over `axes`; dest has input's rank, 1 on `axes`."""

    name = "glowll.reduce"
    dest = operand_def(MemRefType)
    input = operand_def(MemRefType)
    kind = prop_def(glow.ReduceKindAttr)
    axes = prop_def(DenseArrayBase)
    assembly_format = "$kind $dest `,` $input attr-dict `:` type(operands)"


@irdl_op_definition
class ArgReduceOp(InstructionOp):
    """dest (i64, input's shape with 1 on `axis`) = index of the max/min (`kind`) along `axis`."""

    name = "glowll.arg_reduce"
    dest = operand_def(MemRefType)
    input = operand_def(MemRefType)
    kind = prop_def(glow.ArgReduceKindAttr)
    axis = prop_def(IntegerAttr)
    select_last_index = opt_prop_def(UnitAttr)
    assembly_format = "$kind $dest `,` $input attr-dict `:` type(operands)"


class IndexedReadOp(InstructionOp):
    """Reads `data` at positions along `axis` that integer `indices` give (negative ones
    count from the end)."""

    dest = operand_def(MemRefType)
    data = operand_def(MemRefType)
    indices = operand_def(MemRefType)
    axis = prop_def(IntegerAttr)
    assembly_format = "$dest `,` $data `,` $indices attr-dict `:` type(operands)"


@irdl_op_definition
class GatherOp(IndexedReadOp):
    """dest[pre, j..., post] = data[pre, indices[j...], post] along `axis`."""

    name = "glowll.gather"


@irdl_op_definition
class GatherElementsOp(IndexedReadOp):
    """dest[i] = data[i with its `axis` coordinate replaced by indices[i]]."""

    name = "glowll.gather_elements"


@irdl_op_definition
class CopyOp(InstructionOp):
    """Copies the elements of `input` in row-major order (a reshape)."""

    name = "glowll.copy"
    dest = operand_def(MemRefType)
    input = operand_def(MemRefType)
    assembly_format = "$dest `,` $input attr-dict `:` type(operands)"

    def verify_(self) -> None:
        if self.dest.type.element_count() != self.input.type.element_count():
            raise VerifyException(f"glowll.copy: dest has {self.dest.type.element_count()} elements, the input "
                                  f"{self.input.type.element_count()}")


@irdl_op_definition
class TransposeOp(InstructionOp):
    name = "glowll.transpose"
    dest = operand_def(MemRefType)
    input = operand_def(MemRefType)
    perm = prop_def(DenseArrayBase)
    assembly_format = "$dest `,` $input attr-dict `:` type(operands)"

    def verify_(self) -> None:
        shape, perm = glow.shape_of(self.input), self.perm.get_values()
        if sorted(perm) != list(range(len(shape))):
            raise VerifyException(f"glowll.transpose: perm {list(perm)} is not a permutation of {len(shape)} axes")
        self.expect_dest_shape(lambda op: [shape[p] for p in perm])


@irdl_op_definition
class InsertTensorOp(InstructionOp):
    """Writes `input` into dest at `offsets` (Concat, Pad)."""

    name = "glowll.insert_tensor"
    dest = operand_def(MemRefType)
    input = operand_def(MemRefType)
    offsets = prop_def(DenseArrayBase)
    assembly_format = "$dest `,` $input attr-dict `:` type(operands)"

    def verify_(self) -> None:
        dest, source, offsets = glow.shape_of(self.dest), glow.shape_of(self.input), self.offsets.get_values()
        if len(offsets) != len(dest) or len(source) != len(dest) or \
                any(o < 0 or o + s > d for o, s, d in zip(offsets, source, dest)):
            raise VerifyException(f"glowll.insert_tensor: {list(source)} at offsets {list(offsets)} does not lie "
                                  f"within dest {list(dest)}")


@irdl_op_definition
class ExtractTensorOp(InstructionOp):
    """dest[i] = input[starts + i * steps] (Slice)."""

    name = "glowll.extract_tensor"
    dest = operand_def(MemRefType)
    input = operand_def(MemRefType)
    starts = prop_def(DenseArrayBase)
    steps = prop_def(DenseArrayBase)
    assembly_format = "$dest `,` $input attr-dict `:` type(operands)"


@irdl_op_definition
class ResampleOp(InstructionOp):
    """See `glow.resample`: dest[..., j, ...] = sum_t weights[j, t] * input[..., taps[j, t], ...] along `axis`."""

    name = "glowll.resample"
    dest = operand_def(MemRefType)
    input = operand_def(MemRefType)
    taps = operand_def(MemRefType)
    weights = operand_def(MemRefType)
    axis = prop_def(IntegerAttr)
    assembly_format = "$dest `,` $input `,` $taps `,` $weights attr-dict `:` type(operands)"


LIBRARY_ARGUMENT_FORMS = ("buffer", "context", "pointers", "int", "null")


@irdl_op_definition
class LibraryCallOp(InstructionOp):
    """A call into a kernel library (CMSIS-NN, HiFi4 NNLib) standing for the instruction
    named in `replaces`: `int32_t callee(args...)`, a non-zero result being an error.

    `dest` and the other buffers are operands; `arguments` gives the C arguments in order,
    each a string: `buffer K` (pointer to operand K), `context K` (pointer to a
    `{void *buf; int32_t size;}` for scratch operand K, or `context none`), `pointers K L`
    (pointer to a `{T *, T *}` struct of operands K and L), `int V` (an int32 value),
    `null`. Constant arguments (structs, multipliers, shifts) are weights among the operands.
    A callee marked `returns_void` returns nothing (success is then assumed).
    """

    name = "glowll.library_call"
    dest = operand_def(MemRefType)
    inputs = var_operand_def(MemRefType)
    callee = prop_def(StringAttr)
    arguments = prop_def(ArrayAttr)
    replaces = prop_def(StringAttr)
    returns_void = opt_prop_def(UnitAttr)  # a callee without a status (e.g. arm_softmax_s8)
    assembly_format = "$callee `(` $dest (`,` $inputs^)? `)` attr-dict `:` type(operands)"

    def verify_(self) -> None:
        for argument in self.arguments.data:
            words = argument.data.split()
            if not words or words[0] not in LIBRARY_ARGUMENT_FORMS:
                raise VerifyException(f"glowll.library_call: bad argument \"{argument.data}\"")
            for word in words[1:]:
                if words[0] in ("buffer", "context", "pointers") and word != "none" and \
                        not 0 <= int(word) < len(self.operands):
                    raise VerifyException(f"glowll.library_call: argument \"{argument.data}\" names no operand")


GlowLL = Dialect(
    "glowll",
    [
        FunctionOp, WeightOp, PlaceholderOp, AllocOp, TensorViewOp,
        ConvolutionOp, FullyConnectedOp, MatMulOp, MaxPoolOp, AvgPoolOp,
        ElementwiseOp, SoftMaxOp, LocalResponseNormalizationOp, ReduceOp, ArgReduceOp, GatherOp, GatherElementsOp, CopyOp, TransposeOp, InsertTensorOp, ExtractTensorOp,
        ResampleOp, LibraryCallOp,
    ],
    [PlaceholderKindAttr],
)
