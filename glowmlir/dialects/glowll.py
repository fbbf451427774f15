"""The `glowll` dialect: Glow's low-level IR, with buffer semantics.

Every value is a buffer (a `memref`) that lives in one of the bundle's three memory
regions:

* `glowll.weight`      — the constant region (`constantWeight`), holding weights;
* `glowll.placeholder` — the mutable region (`mutableWeight`), the network's inputs and outputs
  (and its state, kept there between calls);
* `glowll.alloc`       — the activations region (`activations`), scratch for intermediates.

Each carries an `offset` (bytes from the start of its region) once memory is allocated.
Instructions read and write buffers and return nothing; by Glow's convention the
destination buffer comes first. A `glowll.function` records the three region sizes.

Every instruction's verifier checks what its kernel relies on: dest has the shape the
glow shape rule gives for its sources (a kernel would write outside a dest that is too
small), the properties its kind needs are there, and the element types it reads are the
ones it handles. Malformed IR is a `VerifyException` naming the op, never a crash later.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import SimpleNamespace
from typing import ClassVar, NoReturn

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    StringAttr,
    SymbolNameConstraint,
    UnitAttr,
    f32,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, Region, SpacedOpaqueSyntaxAttribute, SSAValue
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
from xdsl.irdl.operations import _OperandFieldDef
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, NoTerminator, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from glowmlir.backends import microkernel, microkernels_of
from glowmlir.dialects import glow
from glowmlir.dialects.quant import UniformQuantizedType, finer_levels, is_quantized, storage_type
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


# ----------------------------------------------------------------------------- building and checking properties


def _float(value: float | FloatAttr | None) -> FloatAttr | None:
    """An f32 attribute for a Python float; an attribute (or None) as it is."""
    return glow.f32_attr(value) if isinstance(value, int | float) else value


def _integer(value: int | IntegerAttr | None) -> IntegerAttr | None:
    return IntegerAttr(value, i64) if isinstance(value, int) else value


def _integers(values: Sequence[int] | DenseArrayBase | None) -> DenseArrayBase | None:
    return glow.ints(values) if values is not None and not isinstance(values, DenseArrayBase) else values


def _enum(attribute_type: type[EnumAttribute], value: StrEnum | EnumAttribute | None) -> EnumAttribute | None:
    return attribute_type(value) if isinstance(value, str) else value


def _flag(value: bool) -> UnitAttr | None:
    return UnitAttr() if value else None


def _fail(op: IRDLOperation, message: str) -> NoReturn:
    raise VerifyException(f"{op.name}: {message}")


def shape_of(op: IRDLOperation, buffer: SSAValue, role: str, rank: int | None = None) -> tuple[int, ...]:
    """The static shape of one of `op`'s buffers, of `rank` dimensions when given."""
    shape = glow.shape_of(buffer)
    if any(size < 0 for size in shape):
        _fail(op, f"{role} {buffer.type} has a dynamic or negative dimension")
    if rank is not None and len(shape) != rank:
        _fail(op, f"{role} must have {rank} dimensions, not {len(shape)}")
    return shape


def integers(op: IRDLOperation, name: str, count: int | None = None) -> tuple[int, ...]:
    """The values of the `array<i64: ...>` property `name`, `count` of them when given."""
    values = op.properties[name].get_values()
    if not all(isinstance(v, int) for v in values) or (count is not None and len(values) != count):
        _fail(op, f"{name} must hold {'' if count is None else f'{count} '}integers, not {list(values)}")
    return tuple(values)


def axis_of(op: IRDLOperation, axis: int, rank: int) -> int:
    if not 0 <= axis < rank:
        _fail(op, f"axis {axis} is not an axis of a rank-{rank} input")
    return axis


def same_storage(op: IRDLOperation, buffer: SSAValue, other: SSAValue, roles: str) -> None:
    """The kernel copies elements bit for bit from one to the other: they are stored alike."""
    first, second = (storage_type(v.type.element_type) for v in (buffer, other))
    if first != second:
        _fail(op, f"{roles} are stored as {first} and {second}; they must be stored alike")


class _AsGlowOp(SimpleNamespace):
    """A glowll instruction seen as the glow op `glow_op`: the instruction's operands and
    properties by name, `dest` as `result`, and the glow class's own attributes (its shape
    rule, messages) for the rest."""

    def __init__(self, op: IRDLOperation, glow_op: type[glow.GlowOp]):
        definition = type(op).get_irdl_definition()
        fields = {name: getattr(op, name) for name, _ in definition.operands}
        fields |= {name: getattr(op, name) for name in definition.accessor_names}
        super().__init__(**fields, result=op.dest, name=op.name, glow_op=glow_op)

    def __getattr__(self, name: str):
        return getattr(self.glow_op, name)


def glow_shape_rule(glow_op: type[glow.GlowOp]) -> Callable[[IRDLOperation], tuple[int, ...]]:
    """The shape rule of `glow_op` (its `infer_shape`), applied to a glowll instruction (some
    rules read `result`: Reduce and ArgReduce for kept or dropped axes, Slice for sizes)."""
    return lambda op: glow_op.infer_shape(_AsGlowOp(op, glow_op))


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

    def verify_(self) -> None:
        shape_of(self, self.buffer, "the buffer")
        if self.offset is not None and self.offset.value.data < 0:
            _fail(self, f"offset {self.offset.value.data} is negative")


@irdl_op_definition
class WeightOp(NamedWeightSyntax, BufferOp):
    """A constant buffer holding the named weight (printed `elided` when large)."""

    name = "glowll.weight"
    REGION: ClassVar[str] = "constant"
    name_ = prop_def(StringAttr, prop_name="name")
    value = opt_prop_def(DenseIntOrFPElementsAttr)

    def __init__(self, name: str, buffer_type: MemRefType, value: DenseIntOrFPElementsAttr | None = None):
        super().__init__(properties={"name": StringAttr(name), "value": value}, result_types=[buffer_type])

    def verify_(self) -> None:
        super().verify_()
        if self.value is not None and tuple(self.value.get_shape()) != glow.shape_of(self.buffer):
            _fail(self, f"\"{self.name_.data}\": value of shape {list(self.value.get_shape())} in a buffer of "
                        f"shape {list(glow.shape_of(self.buffer))}")


class PlaceholderKind(StrEnum):
    INPUT = "input"
    OUTPUT = "output"
    STATE = "state"  # kept between calls (`glow.state`); a `glowll.initialize_state` gives its first value


@irdl_attr_definition
class PlaceholderKindAttr(EnumAttribute[PlaceholderKind], SpacedOpaqueSyntaxAttribute):
    name = "glowll.placeholder_kind"


@irdl_op_definition
class PlaceholderOp(BufferOp):
    """A network input or output in the mutable region, or state kept there between calls."""

    name = "glowll.placeholder"
    REGION: ClassVar[str] = "mutable"
    kind = prop_def(PlaceholderKindAttr)
    name_ = prop_def(StringAttr, prop_name="name")
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$kind $name attr-dict `:` type($buffer)"
    traits = traits_def(glow.KeywordPropertiesOnly())

    def __init__(self, kind: PlaceholderKind, name: str | StringAttr, buffer_type: MemRefType):
        super().__init__(properties={"kind": PlaceholderKindAttr(kind),
                                     "name": StringAttr(name) if isinstance(name, str) else name},
                         result_types=[buffer_type])


@irdl_op_definition
class AllocOp(BufferOp):
    """A scratch buffer in the activations region."""

    name = "glowll.alloc"
    REGION: ClassVar[str] = "activations"
    live_range = opt_prop_def(DenseArrayBase)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict `:` type($buffer)"

    def __init__(self, buffer_type: MemRefType, attributes: dict[str, Attribute] | None = None):
        super().__init__(result_types=[buffer_type], attributes=attributes)

    def verify_(self) -> None:
        super().verify_()
        if self.live_range is not None:
            first, last = integers(self, "live_range", 2)
            if not 0 <= first <= last:
                _fail(self, f"live_range [{first}, {last}] is not a range of instructions")


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

    def __init__(self, source: SSAValue, buffer_type: MemRefType, offset: int = 0):
        super().__init__(operands=[source], properties={"offset": IntegerAttr(offset, i64)},
                         result_types=[buffer_type])

    def verify_(self) -> None:
        shape_of(self, self.source, "the source")
        shape_of(self, self.buffer, "the view")
        if self.source.type.element_type.compile_time_size != self.buffer.type.element_type.compile_time_size:
            _fail(self, "the view's elements and its source's differ in size (offsets count elements)")
        offset = self.offset.value.data
        if offset < 0 or offset + self.buffer.type.element_count() > self.source.type.element_count():
            _fail(self, "the view does not fit in its source")


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
    """Base of the instructions: the first operand, `dest`, is written; the others are read.

    IRDL collects a class's fields before its bases' ones, so `dest`, declared here, would
    come after the operands a subclass declares: each subclass that declares operands gets
    `dest` re-declared ahead of them (see `__init_subclass__`). Subclasses put their own
    rules in `verify_instruction`.
    """

    dest = operand_def(MemRefType)
    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(glow.KeywordPropertiesOnly())

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        own = {name: value for name, value in cls.__dict__.items() if isinstance(value, _OperandFieldDef)}
        if own and "dest" not in own:
            for name in own:  # re-added after `dest`, in their order (a class's dict keeps insertion order)
                delattr(cls, name)
            cls.dest = InstructionOp.__dict__["dest"]
            for name, value in own.items():
                setattr(cls, name, value)

    @property
    def sources(self) -> tuple[SSAValue, ...]:
        return tuple(self.operands[1:])

    def verify_(self) -> None:
        for index, operand in enumerate(self.operands):
            shape_of(self, operand, "dest" if index == 0 else f"operand {index}")
        try:
            self.verify_instruction()
        except (ValueError, IndexError, KeyError, TypeError, AttributeError, ZeroDivisionError) as error:
            # A rule tripping over a malformed op: still the op's error, not a crash.
            raise VerifyException(f"{self.name}: malformed ({type(error).__name__}: {error})") from None

    def verify_instruction(self) -> None:
        """The instruction's own rules (raise VerifyException)."""

    def expect_dest_shape(self, rule: Callable[[IRDLOperation], Sequence[int]]) -> None:
        """Refuses a dest whose shape is not what `rule` (a glow shape rule) gives: a kernel
        would write outside it, or leave part of it unwritten."""
        try:
            expected = tuple(rule(self))
        except (ValueError, IndexError) as error:
            raise VerifyException(f"{self.name}: {error}") from None
        if glow.shape_of(self.dest) != expected:
            raise VerifyException(f"{self.name}: dest has shape {list(glow.shape_of(self.dest))}, the operands "
                                  f"give {list(expected)}")


def _verify_window(op: IRDLOperation, kernel: str, strides: str, pads: str) -> None:
    """A 2-D window: two kernel sizes, two strides, four pads (top, left, bottom, right)."""
    integers(op, kernel, 2)
    integers(op, strides, 2)
    integers(op, pads, 4)


@irdl_attr_definition
class MicrokernelAttr(ParametrizedAttribute):
    """`#glowll.microkernel<"vector-columns">`: the kernel a backend's selection pass chose for an
    instruction, one a registered backend declares (`glowmlir.backends.Microkernel`), with the
    parameters that kernel alone takes, its backend's to define and verify
    (`#glowll.microkernel<"arm-dsp", {loop_pairs = 2 : i64}>`, `Microkernel.parameters`); the
    instruction's verifier asks the registry for it and runs its rules (`verify_microkernel`)."""

    name = "glowll.microkernel"
    kernel: StringAttr
    kernel_parameters: DictionaryAttr

    def __init__(self, kernel: str, parameters: Mapping[str, Attribute] | DictionaryAttr | None = None):
        if not isinstance(parameters, DictionaryAttr):
            parameters = DictionaryAttr(dict(parameters or {}))
        super().__init__(StringAttr(kernel), parameters)

    @property
    def data(self) -> str:
        """The kernel's name."""
        return self.kernel.data

    def parameter(self, name: str) -> Attribute | None:
        """The value of one of its parameters, None when it is not set."""
        return self.kernel_parameters.data.get(name)

    def with_parameter(self, name: str, value: Attribute) -> MicrokernelAttr:
        """The same kernel, with this parameter set."""
        return MicrokernelAttr(self.data, {**self.kernel_parameters.data, name: value})

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            kernel = StringAttr(parser.parse_str_literal())
            parameters = DictionaryAttr({})
            if parser.parse_optional_punctuation(",") is not None:
                parameters = parser.parse_attribute()
                if not isinstance(parameters, DictionaryAttr):
                    parser.raise_error("expected a dictionary of the microkernel's parameters")
            return (kernel, parameters)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_string_literal(self.kernel.data)
        if self.kernel_parameters.data:
            printer.print_string(", ")
            printer.print_attribute(self.kernel_parameters)
        printer.print_string(">")


TUNED_KERNEL = "tuned_kernel"
"""The discardable attribute `glowll-apply-tuned-kernels` puts on an instruction (`TunedKernelAttr`)."""

CODE_SIZE = "code_size"
"""The discardable attribute a selection pass puts on an instruction whose kernel is to be built size first
(`"optsize"` or `"minsize"`, a string): `lower-glowll-to-llvm` gives its function that LLVM
attribute (`transforms.flash_budget.choose_size_first`: the layers where the bytes it saves
cost the fewest cycles)."""


@irdl_attr_definition
class TunedKernelAttr(ParametrizedAttribute):
    """`#glowll.tuned_kernel<"arm-dsp", 1200, 3400>`: the kernel the autotuner measured fastest
    for an instruction (`glowmlir.autotune`; "generic": no backend's microkernel), its
    estimated cycles and the generic kernel's on the target's board (0: not measured). The
    selection pass of the backend that owns the kernel gives the instruction that kernel, where
    the budgets let it (`glowll-apply-tuned-kernels`)."""

    name = "glowll.tuned_kernel"
    kernel: StringAttr
    cycles: IntAttr
    generic_cycles: IntAttr

    def __init__(self, kernel: str, cycles: int, generic_cycles: int):
        super().__init__(StringAttr(kernel), IntAttr(cycles), IntAttr(generic_cycles))

    @property
    def data(self) -> str:
        """The kernel's name."""
        return self.kernel.data

    @property
    def saved_cycles(self) -> int:
        """Estimated cycles the kernel saves over the generic one (0: unknown)."""
        return max(self.generic_cycles.data - self.cycles.data, 0) if self.generic_cycles.data else 0

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            kernel = StringAttr(parser.parse_str_literal())
            parser.parse_punctuation(",")
            cycles = IntAttr(parser.parse_integer(allow_negative=False, allow_boolean=False))
            parser.parse_punctuation(",")
            return kernel, cycles, IntAttr(parser.parse_integer(allow_negative=False, allow_boolean=False))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_string_literal(self.kernel.data)
        printer.print_string(f", {self.cycles.data}, {self.generic_cycles.data}>")


def tuned_kernel(op: IRDLOperation) -> str:
    """The kernel the autotuner chose for an instruction ("" when none was)."""
    attribute = op.attributes.get(TUNED_KERNEL)
    return attribute.data if isinstance(attribute, TunedKernelAttr) else ""


QUANTIZED_INPUT = "quantized_input"
"""The microkernel parameter of a convolution whose kernel reads a float input and quantizes it
itself (`backends.host_vector.fold_input_quantize`): the int8 type it quantizes to."""


def input_element(op: IRDLOperation) -> Attribute:
    """The element type of an instruction's input levels: its input's, or that of the levels
    its kernel quantizes a float input to (its microkernel's `QUANTIZED_INPUT` parameter)."""
    microkernel = getattr(op, "microkernel", None)
    folded = microkernel.parameter(QUANTIZED_INPUT) if microkernel is not None else None
    return folded if folded is not None else op.input.type.element_type

BIAS_ROWS = "bias_rows"
"""The microkernel parameter (i64) of a convolution whose bias holds that many rows of one
element per output channel: a start for each class of output rows, which its kernel picks by
the row (its backend says which rows each is for)."""


def bias_rows(op: IRDLOperation) -> int | None:
    """The rows of a convolution's bias (`BIAS_ROWS`), None where it is one element a channel."""
    microkernel = getattr(op, "microkernel", None)
    rows = microkernel.parameter(BIAS_ROWS) if microkernel is not None else None
    return rows.value.data if rows is not None else None


def verify_microkernel(op: IRDLOperation) -> None:
    """A microkernel is registered by a backend (`glowmlir.backends`), runs its numbers (int8,
    also int16 of offset 0 where it says so, or f32), is a convolution's with its `vector_tile`
    where its tiles are the target's vectors, and meets its backend's rules (a packed filter's
    shape, a record's size)."""
    kernel = microkernel(op.microkernel.data)
    if kernel is None:
        known = [k.name for k in microkernels_of("glowll.convolution")]
        _fail(op, f"unknown microkernel \"{op.microkernel.data}\" (expected {', '.join(known)})")
    if stray := [name for name in op.microkernel.kernel_parameters.data if name not in kernel.parameters]:
        _fail(op, f"the {op.microkernel.data} microkernel takes no parameter {stray[0]}"
                  + (f" (it takes {', '.join(kernel.parameters)})" if kernel.parameters else ""))
    if op.name not in kernel.ops and not kernel.tiled:  # a tiled one's op is refused below
        _fail(op, f"the {op.microkernel.data} microkernel takes no {op.name}")
    numbers = f32 if kernel.numbers == "f32" else i8
    # a convolution's own outputs: before a widening pool (`glow.convolved_element`)
    elements = (glow.convolved_element(op), input_element(op))
    int16_data = (kernel.int16 and all(storage_type(e) == i16 for e in elements)
                  and input_element(op).offset == 0)
    if not int16_data and not all(storage_type(e) == numbers for e in elements):
        _fail(op, f"the {op.microkernel.data} microkernel takes {numbers} input and output"
                  + (" (or int16 of offset 0)" if kernel.int16 else ""))
    if kernel.tiled and (not isinstance(op, ConvolutionOp) or op.vector_tile is None):
        _fail(op, f"the {op.microkernel.data} microkernel is a convolution's, with its vector_tile "
                  "(lanes, accumulators)")
    if kernel.verify is not None:
        kernel.verify(op)


def packed_weights(op: IRDLOperation) -> bool:
    """A FullyConnected whose microkernel packs its weights (dest and input give their shape)."""
    kernel = microkernel(op.microkernel.data) if op.microkernel is not None else None
    return kernel is not None and kernel.packed_weights


def verify_kernel_of(op: IRDLOperation, what: str, numbers: str, kind: str | None = None, levels: bool = True
                     ) -> None:
    """An elementwise op's, softmax's or lookup table's microkernel: one registered for the op
    (and its `kind`), on int8 `numbers` (`levels`: the operands are quantized where that is asked;
    a quantize's input is f32), of its own parameters, meeting its backend's rules (`verify`)."""
    kernels = microkernels_of(op.name)
    kernel = next((k for k in kernels if k.name == op.microkernel.data), None)
    if (kernel is None or (kind is not None and kind not in kernel.elementwise_kinds) or not levels
            or not all(storage_type(v.type.element_type) == (f32 if kind == "quantize" and i else i8)
                       for i, v in enumerate(op.operands)
                   if v is not getattr(op, "gate_table", None))):  # a quantize's input: the f32 it quantizes
        takes = ("; ".join(f"{k.name}: {', '.join(k.elementwise_kinds)}" for k in kernels) if kind is not None
                 else ", ".join(k.name for k in kernels))
        _fail(op, f"the {op.microkernel.data} microkernel of {what} takes {numbers} ({takes})")
    if stray := [name for name in op.microkernel.kernel_parameters.data if name not in kernel.parameters]:
        _fail(op, f"the {op.microkernel.data} microkernel takes no parameter {stray[0]}")
    if kernel.verify is not None:
        kernel.verify(op)


def with_operands(op: IRDLOperation, **operands: SSAValue) -> IRDLOperation:
    """A new op like `op` (operands, properties, attributes) but for the named operands, set or
    replaced by name (an optional one too: its operand segment follows)."""
    values = {name: getattr(op, name) for name, _ in op.get_irdl_definition().operands} | operands
    properties = {k: v for k, v in op.properties.items() if k != "operandSegmentSizes"}
    return type(op).build(operands=list(values.values()), properties=properties, attributes=dict(op.attributes))


def verify_lookup_table(op: ConvolutionOp | FullyConnectedOp) -> None:
    """A fused `lookup_table` (glowll-fuse-lookup-tables): 256 int8 entries of dest's type, read
    at the level the op requantizes to, of `lookup_input` (an int8 type), less its minimum;
    no fused pool, and a microkernel only one that applies it (`Microkernel.lookup_tables`)."""
    table, levels = op.lookup_table, op.properties.get("lookup_input")
    if table is None:
        if levels is not None:
            _fail(op, "lookup_input without a lookup_table")
        return
    dest = op.dest.type.element_type
    if glow.shape_of(table) != (256,) or table.type.element_type != dest or storage_type(dest) != i8:
        _fail(op, "the lookup_table holds 256 int8 entries of dest's type")
    if not isinstance(levels, UniformQuantizedType) or storage_type(levels) != i8 or levels.per_channel:
        _fail(op, "a lookup_table needs its lookup_input, the int8 type it is indexed by")
    if getattr(op, "pool", None) is not None:
        _fail(op, "a lookup_table and a fused pool do not go together")
    if op.microkernel is not None and not microkernel(op.microkernel.data).applies_tables(op):
        _fail(op, f"the {op.microkernel.data} microkernel applies no lookup_table")


@irdl_op_definition
class ConvolutionOp(InstructionOp, glow.ConvolutionWindow, glow.FusedActivation, glow.FusedPool, glow.LayoutProperty):
    """dest[n, o, y, x] = act(bias[o] + sum input[n, c, y*s+ky*d-p, x*s+kx*d-p] * filter[o, c', ky, kx]),

    then pooled by a fused `pool` window ("max" or "avg") when one is set (a quantized
    average with `pool_widening` = k: of the int8 levels x 2^k, `glow.FusedPool`). With a
    `residual` buffer, residual[n, o, y, x] is added before the activation (it may be
    `dest` itself: the convolution then accumulates into it in place).

    Quantized with a per-channel filter, `requantization` is an i32 [2, O] weight: the
    multiplier of each output channel, then its shift (a third row, each channel's rounding
    terms, where the Arm DSP kernels requantize every channel at one shift:
    `arm_dsp.select_kernels.uniform_shift_table`). With a `lookup_table` (int8, 256 entries
    of dest's type; glowll-fuse-lookup-tables) each output is requantized to `lookup_input`'s
    type and clamped as it would be stored there, then dest gets its entry (`verify_lookup_table`).

    With `microkernel = "arm-dsp"` (glowll-select-arm-dsp-kernels) the int8 convolution runs
    on the Arm DSP extension, its filter packed as that kernel reads it (int16 pairs, see
    `backends.arm_dsp.layout.pack_filter`); with `microkernel = "arm-mve"` on Helium (vectors
    of output columns, `lowering.vector_layout.pack_filter`); `filter_shape` keeps the OIHW
    shape it had. With `microkernel = "vector-columns"` a float convolution runs on a host's
    vector unit, `vector_tile` = (lanes, accumulator registers) (glowll-select-vector-columns;
    `vector-depthwise`: (lanes, accumulators, rows of a tile); `vector-depthwise-int8`, an int8
    depthwise convolution on the same tiles, its filter int16 less its zero point;
    `vector-planes-int8`, one of small "same"-padded planes, each plane one tile: (lanes, vectors)).
    With `microkernel = "x86-vnni-depthwise"` an int8 depthwise convolution runs on AVX-512
    VNNI and VBMI, its filter the int8 levels as they are (the kernel makes a channel's words;
    `{rest_levels}`: some levels less their zero point leave int8), its bias folded for
    unsigned input (`{bias_rows = k}`: [k, O], a start for each class of output rows by their
    kernel rows in the padding). With
    `folded_input_offset` the bias holds `bias - input offset * sum of the channel's weights`,
    and the kernel multiplies the input levels as they are (a padded tap as the input offset).
    `narrow_requantization`: no accumulator shifted left by its requantization shift plus one
    leaves int32, so requantization is a single rounding high multiply (`requantize_narrow`).
    `float_step = array<f32: scale, offset, negative_offset>` (a host vector kernel's per-tensor
    int8 layer, `int8_kernel_selection.mark_float_step`): TFLite's output step is, on every
    accumulator the layer can reach, `rint(f32(acc) * scale + (acc < 0 ? negative_offset :
    offset))` (`quantization.float_steps`, proved at compile time), which the kernel computes
    instead of the integer step (`lowering.requantization.float_step_levels`); a fourth number
    1 (`FloatStep.fused`, on a target with fused multiply-adds): `rint(fma(f32(acc), scale, offset))`.
    `float_step_table = 0 : i64` (or `1`: fused), a per-channel layer's on a host vector kernel
    (`int8_kernel_selection.mark_channel_float_steps`): the `requantization` operand holds,
    as the bits of singles [3, output channels], each channel's scale, offset and negative
    offset of such a step, proved channel by channel, which the kernel loads and computes
    instead of the integer step.
    `bias_in_step` (with a `float_step`): the bias operand holds per channel the bits of a single
    c (`float_steps.fused_bias_offsets`, proved), the sums start at 0 and the level is
    `rint(fma(f32(sum), scale, c))` (`requantization.fused_step_levels`).
    `doubled_accumulators` (with it, on a kernel whose filter is packed less its zero point): it holds twice the
    levels less their zero point, so every sum is twice the accumulator, which the
    requantization multiplies as it is (the kernel doubles the bias).
    `wide_accumulators` (int16 data, set where an int32 sum could overflow:
    `quantization.rescaling.needs_wide_accumulators`): the sums are int64, requantized as
    CMSIS-NN's s16 kernels do (`requantize_wide`).
    Quantized, `parameters` may be an i32 weight of the layer's numbers (offsets, clamp bounds,
    per-tensor requantization: `quantization.rescaling.KernelParameters`), which the kernel
    then reads at run time instead of compiling them in (`glowll-quantization-records`).
    A microkernel's own parameters are its attribute's (`MicrokernelAttr`), defined and verified
    by its backend (e.g. `backends.arm_dsp.backend.PARAMETERS`).
    With `weight_scales` (a hybrid layer, `glow-choose-hybrid-weights`), input, output and
    bias are f32 and the filter holds symmetric int8 levels, each dequantized as the kernel
    reads it: filter[o, ...] x weight_scales[o] (an f32 [O] weight).
    `in_place` (glowll-convolve-in-place): dest is a view of the input's memory at the same
    offset, which the kernel overwrites as it goes; only a kernel whose microkernel says it
    stages what it still reads (`writes_over_input` in its emitters) is given it.
    """

    name = "glowll.convolution"
    input = operand_def(MemRefType)
    filter = operand_def(MemRefType)
    bias = operand_def(MemRefType)
    residual = opt_operand_def(MemRefType)
    requantization = opt_operand_def(MemRefType)
    weight_scales = opt_operand_def(MemRefType)
    parameters = opt_operand_def(MemRefType)
    lookup_table = opt_operand_def(MemRefType)
    lookup_input = opt_prop_def(Attribute)
    microkernel = opt_prop_def(MicrokernelAttr)
    filter_shape = opt_prop_def(DenseArrayBase)
    vector_tile = opt_prop_def(DenseArrayBase)
    folded_input_offset = opt_prop_def(UnitAttr)
    narrow_requantization = opt_prop_def(UnitAttr)
    doubled_accumulators = opt_prop_def(UnitAttr)
    float_step = opt_prop_def(DenseArrayBase)
    float_step_table = opt_prop_def(IntegerAttr)
    bias_in_step = opt_prop_def(UnitAttr)
    wide_accumulators = opt_prop_def(UnitAttr)
    in_place = opt_prop_def(UnitAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = ("$dest `,` $input `,` $filter `,` $bias (`residual` $residual^)? "
                       "(`requantization` $requantization^)? (`parameters` $parameters^)? "
                       "(`weight_scales` $weight_scales^)? "
                       "(`lookup` $lookup_table^)? (`activation` $activation^)? (`pool` $pool^)? "
                       "(`layout` $layout^)? attr-dict `:` type($dest) `,` type($input) `,` "
                       "type($filter) `,` type($bias) (`,` type($residual)^)? "
                       "(`requantization` type($requantization)^)? (`parameters` type($parameters)^)? "
                       "(`weight_scales` type($weight_scales)^)? (`lookup` type($lookup_table)^)?")

    POOL_WINDOW: ClassVar[tuple[str, ...]] = ("pool_kernel", "pool_strides", "pool_pads", "pool_count_include_pad",
                                              "pool_widening")

    def __init__(self, dest: SSAValue, input: SSAValue, filter: SSAValue, bias: SSAValue, *,
                 strides: Sequence[int] | DenseArrayBase, pads: Sequence[int] | DenseArrayBase,
                 dilations: Sequence[int] | DenseArrayBase, group: int | IntegerAttr = 1,
                 layout: glow.Layout | glow.LayoutAttr | None = None,
                 activation: glow.Activation | glow.ActivationAttr | None = None,
                 clip_min: float | FloatAttr | None = None, clip_max: float | FloatAttr | None = None,
                 pool: glow.PoolKind | glow.PoolKindAttr | None = None,
                 pool_kernel: Sequence[int] | DenseArrayBase | None = None,
                 pool_strides: Sequence[int] | DenseArrayBase | None = None,
                 pool_pads: Sequence[int] | DenseArrayBase | None = None, pool_count_include_pad: bool = False,
                 pool_widening: int | IntegerAttr | None = None, residual: SSAValue | None = None,
                 requantization: SSAValue | None = None, parameters: SSAValue | None = None,
                 weight_scales: SSAValue | None = None):
        properties = {"strides": _integers(strides), "pads": _integers(pads), "dilations": _integers(dilations),
                      "group": _integer(group), "layout": _enum(glow.LayoutAttr, layout),
                      **glow.fused_activation_properties(activation, clip_min, clip_max),
                      "pool": _enum(glow.PoolKindAttr, pool), "pool_kernel": _integers(pool_kernel),
                      "pool_strides": _integers(pool_strides), "pool_pads": _integers(pool_pads),
                      "pool_count_include_pad": _flag(pool_count_include_pad),
                      "pool_widening": _integer(pool_widening)}
        super().__init__(operands=[dest, input, filter, bias, residual, requantization, weight_scales, parameters,
                                   None], properties=properties)

    def verify_instruction(self) -> None:
        shape_of(self, self.input, "the input", 4)
        if self.microkernel is not None:
            verify_microkernel(self)
        else:
            shape_of(self, self.filter, "the filter", 4)
        _verify_window(self, "dilations", "strides", "pads")
        if self.pool is not None:
            missing = [name for name in self.POOL_WINDOW[:3] if name not in self.properties]
            if missing:
                _fail(self, f"a fused pool needs {', '.join(missing)}")
            _verify_window(self, *self.POOL_WINDOW[:3])
        elif stray := [name for name in self.POOL_WINDOW if name in self.properties]:
            _fail(self, f"{stray[0]} without a fused pool")
        self.expect_dest_shape(glow.convolution_result_shape)
        self.verify_activation()
        self.verify_pool_widening()
        rows = bias_rows(self)
        if glow.shape_of(self.bias) != (() if rows is None else (rows,)) + (glow.convolution_shape(self)[1],):
            _fail(self, "bias must have one element per output channel"
                        + ("" if rows is None else f", in each of its {rows} rows ({BIAS_ROWS})"))
        if self.residual is not None and glow.shape_of(self.residual) != glow.shape_of(self.dest):
            _fail(self, "the residual must have dest's shape")
        if self.requantization is not None and (
                self.requantization.type.element_type != i32
                or glow.shape_of(self.requantization) not in ((k, glow.convolution_shape(self)[1]) for k in (2, 3))):
            _fail(self, "requantization must be an i32 [2, output channels] buffer (multipliers, shifts; "
                  "a third row: rounding terms)")
        if self.float_step_table is not None and (
                self.requantization is None or glow.shape_of(self.requantization)[0] != 3
                or self.float_step_table.value.data not in (0, 1) or self.float_step is not None):
            _fail(self, "float_step_table (0, or 1: fused) takes a [3, output channels] requantization table "
                  "(scales, offsets, negative offsets) and no float_step")
        verify_parameters(self)
        verify_weight_scales(self, self.filter, glow.convolution_shape(self)[1])
        verify_lookup_table(self)
        if self.in_place is not None and root_buffer(self.dest) != root_buffer(self.input):
            _fail(self, "in_place: dest must be the input's memory (a view of it at the same offset)")


def dequantizes_weights(op: IRDLOperation) -> bool:
    """A float Convolution or FullyConnected whose int8 weights are dequantized as they are
    read (`weight_scales`), not a quantized instruction."""
    return getattr(op, "weight_scales", None) is not None


def verify_weight_scales(op: ConvolutionOp | FullyConnectedOp, weights: SSAValue, channels: int) -> None:
    """`weight_scales`: an f32 [output channels] buffer of a float instruction with symmetric
    int8 weights."""
    if op.weight_scales is None:
        return
    if op.weight_scales.type.element_type != f32 or glow.shape_of(op.weight_scales) != (channels,):
        _fail(op, f"weight_scales must be an f32 [{channels}] buffer (one scale per output channel)")
    element = weights.type.element_type
    if (not isinstance(element, UniformQuantizedType) or element.storage_type != i8 or element.offset_array().any()
            or any(v.type.element_type != f32 for v in (op.dest, op.input, op.bias)) or op.microkernel is not None):
        _fail(op, "weight_scales belong to a float instruction (f32 dest, input and bias) of symmetric int8 weights")


def verify_parameters(op: ConvolutionOp | FullyConnectedOp) -> None:
    """A `parameters` record is a 1-D i32 buffer of a quantized instruction."""
    if op.parameters is None:
        return
    if op.parameters.type.element_type != i32 or len(glow.shape_of(op.parameters)) != 1:
        _fail(op, "parameters must be a 1-D i32 buffer (the layer's quantization record)")
    if not is_quantized(op.dest.type):
        _fail(op, "parameters belong to a quantized instruction")


@irdl_op_definition
class FullyConnectedOp(InstructionOp, glow.FusedActivation):
    """dest[m, n] = act(bias[n] + sum_k input[m, k] * weights[n, k]).

    Unlike `glow.fully_connected`, weights are [out, in], so that each output reads one
    contiguous row. Quantized with one weight scale per output (axis 0), `requantization` is
    an i32 [2, out] weight: the multiplier of each output, then its shift; `parameters`,
    `wide_accumulators`, `weight_scales` (int8 weights dequantized as they are read) and a
    fused `lookup_table` as for a convolution.
    """

    name = "glowll.fully_connected"
    input = operand_def(MemRefType)
    weights = operand_def(MemRefType)
    bias = operand_def(MemRefType)
    requantization = opt_operand_def(MemRefType)
    weight_scales = opt_operand_def(MemRefType)
    parameters = opt_operand_def(MemRefType)
    lookup_table = opt_operand_def(MemRefType)
    lookup_input = opt_prop_def(Attribute)
    microkernel = opt_prop_def(MicrokernelAttr)
    folded_input_offset = opt_prop_def(UnitAttr)
    narrow_requantization = opt_prop_def(UnitAttr)
    wide_accumulators = opt_prop_def(UnitAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = ("$dest `,` $input `,` $weights `,` $bias (`requantization` $requantization^)? "
                       "(`parameters` $parameters^)? (`weight_scales` $weight_scales^)? (`lookup` $lookup_table^)? "
                       "(`activation` $activation^)? attr-dict `:` type($dest) `,` "
                       "type($input) `,` type($weights) `,` type($bias) (`requantization` type($requantization)^)? "
                       "(`parameters` type($parameters)^)? (`weight_scales` type($weight_scales)^)? "
                       "(`lookup` type($lookup_table)^)?")

    def __init__(self, dest: SSAValue, input: SSAValue, weights: SSAValue, bias: SSAValue, *,
                 activation: glow.Activation | glow.ActivationAttr | None = None,
                 clip_min: float | FloatAttr | None = None, clip_max: float | FloatAttr | None = None,
                 requantization: SSAValue | None = None, parameters: SSAValue | None = None,
                 weight_scales: SSAValue | None = None):
        super().__init__(operands=[dest, input, weights, bias, requantization, weight_scales, parameters, None],
                         properties=glow.fused_activation_properties(activation, clip_min, clip_max))

    def verify_instruction(self) -> None:
        self.verify_activation()
        if self.microkernel is not None:
            verify_microkernel(self)
        packed = packed_weights(self)
        (m, k) = shape_of(self, self.input, "the input", 2)
        n, k_weights = (glow.shape_of(self.dest)[1], k) if packed else shape_of(self, self.weights, "weights", 2)
        if k != k_weights or glow.shape_of(self.dest) != (m, n) or glow.shape_of(self.bias) != (n,):
            _fail(self, f"dest {list(glow.shape_of(self.dest))}, input [{m}, {k}], weights [{n}, {k_weights}] "
                        f"(out, in) and bias {list(glow.shape_of(self.bias))} do not fit")
        verify_parameters(self)
        verify_weight_scales(self, self.weights, n)
        verify_lookup_table(self)


@irdl_op_definition
class MatMulOp(InstructionOp):
    """Batched matrix product, batch dimensions broadcast."""

    name = "glowll.matmul"
    lhs = operand_def(MemRefType)
    rhs = operand_def(MemRefType)
    assembly_format = "$dest `,` $lhs `,` $rhs attr-dict `:` type(operands)"

    def __init__(self, dest: SSAValue, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[dest, lhs, rhs])

    def verify_instruction(self) -> None:
        self.expect_dest_shape(glow_shape_rule(glow.MatMulOp))


class PoolOp(InstructionOp, glow.PoolWindow, glow.LayoutProperty):
    """A max or average pool over a 2-D `kernel` window (NCHW, or NHWC with `layout NHWC`)."""

    input = operand_def(MemRefType)
    assembly_format = "$dest `,` $input (`layout` $layout^)? attr-dict `:` type(operands)"

    def __init__(self, dest: SSAValue, input: SSAValue, *, kernel: Sequence[int] | DenseArrayBase,
                 strides: Sequence[int] | DenseArrayBase, pads: Sequence[int] | DenseArrayBase,
                 layout: glow.Layout | glow.LayoutAttr | None = None, **flags: bool):
        super().__init__(operands=[dest, input],
                         properties={"kernel": _integers(kernel), "strides": _integers(strides),
                                     "pads": _integers(pads), **glow.flags(**flags),
                                     "layout": _enum(glow.LayoutAttr, layout)})

    def verify_instruction(self) -> None:
        shape_of(self, self.input, "the input", 4)
        _verify_window(self, "kernel", "strides", "pads")
        same_storage(self, self.dest, self.input, "dest and input")
        self.expect_dest_shape(glow.pool_result_shape)


@irdl_op_definition
class MaxPoolOp(PoolOp):
    name = "glowll.max_pool"

    def __init__(self, dest: SSAValue, input: SSAValue, *, kernel: Sequence[int] | DenseArrayBase,
                 strides: Sequence[int] | DenseArrayBase, pads: Sequence[int] | DenseArrayBase,
                 layout: glow.Layout | glow.LayoutAttr | None = None):
        super().__init__(dest, input, kernel=kernel, strides=strides, pads=pads, layout=layout)


@irdl_op_definition
class AvgPoolOp(PoolOp):
    """`count_include_pad`: divide by the whole window, pads included. `pool_widening` = k:
    the int8 input is averaged as its levels widened exactly to the int16 result's type
    (`quant.finer_levels`: each level x 2^k; `glowll-fold-pool-widening` folds the widening
    rescale into the pool, which sums the int8 levels and shifts the sum)."""

    name = "glowll.avg_pool"
    count_include_pad = opt_prop_def(UnitAttr)
    pool_widening = opt_prop_def(IntegerAttr)

    def verify_instruction(self) -> None:
        if self.pool_widening is None:
            super().verify_instruction()
            return
        shape_of(self, self.input, "the input", 4)
        _verify_window(self, "kernel", "strides", "pads")
        self.expect_dest_shape(glow.pool_result_shape)
        source, result = self.input.type.element_type, self.dest.type.element_type
        if not (isinstance(source, UniformQuantizedType) and storage_type(source) == i8 and not source.per_channel
                and result == finer_levels(source, self.pool_widening.value.data)):
            _fail(self, f"pool_widening = {self.pool_widening.value.data} averages int8 levels into their int16 "
                        "finer levels (quant.finer_levels)")

    def __init__(self, dest: SSAValue, input: SSAValue, *, kernel: Sequence[int] | DenseArrayBase,
                 strides: Sequence[int] | DenseArrayBase, pads: Sequence[int] | DenseArrayBase,
                 count_include_pad: bool = False, layout: glow.Layout | glow.LayoutAttr | None = None):
        super().__init__(dest, input, kernel=kernel, strides=strides, pads=pads, layout=layout,
                         count_include_pad=count_include_pad)


"""The properties a kind cannot do without (the kernels would read a missing one as 0)."""

FLOAT_FORM_PROPERTY = {"mul": "float_step", "add": "float_add", "sub": "float_add"}
"""The property holding an int8 elementwise kind's proved float form, where a kernel took it."""


@irdl_op_definition
class ElementwiseOp(InstructionOp, glow.FusedActivation):
    """dest = kind(sources...), sources broadcast to dest's shape (numpy rules).

    `splat` fills dest with `value`; `clip` uses `clip_min`/`clip_max`; `compare` its
    `predicate` (dest i1), `select` an i1 condition first; the parametric kinds their
    `alpha` (and `beta`); `add` may apply a fused `activation`.
    """

    name = "glowll.elementwise"
    inputs = var_operand_def(MemRefType)
    kind = prop_def(StringAttr)
    value = opt_prop_def(FloatAttr)
    alpha = opt_prop_def(FloatAttr)
    beta = opt_prop_def(FloatAttr)
    predicate = opt_prop_def(glow.ComparisonPredicateAttr)  # of `compare`
    microkernel = opt_prop_def(MicrokernelAttr)  # "arm-mve": an int8 add, sub or mul on Helium's vectors
    # an int8 mul's output step in singles, `array<f32: scale, offset, negative_offset>`
    # (`quantization.float_steps.FloatStep`, proved equal to TFLite's at compile time)
    float_step = opt_prop_def(DenseArrayBase)
    # an int8 add's or sub's float form, `array<f32: first_scale, second_scale, threshold,
    # offset, negative_offset>` (`quantization.float_steps.FloatAdd`, proved on every pair of levels)
    float_add = opt_prop_def(DenseArrayBase)
    # an int8 mul's by a gate fixed along x's runs, `array<f32: scale, offset, negative_offset>`:
    # one fma a level of coefficients computed a run from the gate's level
    # (`quantization.float_steps.FloatGate`, proved on every pair of levels)
    float_gate = opt_prop_def(DenseArrayBase)
    # an int8 mul's by a gate fixed along x's runs in int16 lanes, `array<i32: first, last>`: the
    # gate levels `gate_table` has a row of (k, nonnegative, negative, r) for, proved on every
    # pair (a backend's, e.g. `backends.host_vector.gate_products.Int16Gate`); beside a
    # `float_gate` a hybrid: rows the backend marks unproved take the float_gate, a run at a time
    int16_gate = opt_prop_def(DenseArrayBase)
    gate_table = opt_operand_def(MemRefType)  # with int16_gate: an i16 [last - first + 1, 4] weight
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = ("$dest (`,` $inputs^)? (`table` $gate_table^)? (`activation` $activation^)? "
                       "(`predicate` $predicate^)? attr-dict `:` type($dest) (`,` type($inputs)^)? "
                       "(`table` type($gate_table)^)?")

    def __init__(self, dest: SSAValue, sources: Sequence[SSAValue], kind: str, *,
                 value: float | FloatAttr | None = None, alpha: float | FloatAttr | None = None,
                 beta: float | FloatAttr | None = None,
                 activation: glow.Activation | glow.ActivationAttr | None = None,
                 clip_min: float | FloatAttr | None = None, clip_max: float | FloatAttr | None = None,
                 predicate: glow.ComparisonPredicate | glow.ComparisonPredicateAttr | None = None):
        # The clip kind's own bounds, or a fused activation's (add).
        bounds = {"clip_min": _float(clip_min), "clip_max": _float(clip_max)}
        properties = {"kind": StringAttr(kind), "value": _float(value),
                      **(bounds if activation is None else glow.fused_activation_properties(activation, clip_min,
                                                                                             clip_max)),
                      "alpha": _float(alpha), "beta": _float(beta),
                      "predicate": _enum(glow.ComparisonPredicateAttr, predicate)}
        super().__init__(operands=[dest, sources, None], properties=properties)

    def verify_instruction(self) -> None:
        # The kinds, their arities and properties come from the glow ops' facts.
        kind, facts = self.kind.data, glow.elementwise_facts().get(self.kind.data)
        if facts is None:
            _fail(self, f"unknown kind \"{kind}\"")
        if len(self.inputs) != facts.arity:
            _fail(self, f"\"{kind}\" takes {facts.arity} sources, not {len(self.inputs)}")
        for property_name in facts.required:
            if property_name not in self.properties:
                _fail(self, f"\"{kind}\" needs {property_name}")
        # A fused activation only where the glow op has one (glow-fuse-activations); any other
        # property is refused, since the kernel would ignore it.
        activation = ("activation", "clip_min", "clip_max") if kind in glow.fused_activation_kinds() else ()
        with_kernel = any(kind in kernel.elementwise_kinds for kernel in microkernels_of(self.name))
        step = ((FLOAT_FORM_PROPERTY[kind], *(("float_gate", "int16_gate") if kind == "mul" else ()))
                if kind in FLOAT_FORM_PROPERTY and self.microkernel is not None else ())
        allowed = {"kind", "operandSegmentSizes", *facts.required, *activation,
                   *(("microkernel",) if with_kernel else ()), *step}
        if stray := sorted(set(self.properties) - allowed):
            _fail(self, f"\"{kind}\" takes no {stray[0]}")
        if self.float_step is not None and (self.float_step.elt_type != f32
                                            or len(self.float_step.get_values()) not in (3, 4)):
            _fail(self, "a float_step is array<f32: scale, offset, negative_offset> (and 1 where fused)")
        if self.float_add is not None and (self.float_add.elt_type != f32
                                           or len(self.float_add.get_values()) not in (5, 6)):
            _fail(self, "a float_add is array<f32: first_scale, second_scale, threshold, offset, negative_offset> "
                  "(and 1 where fused)")
        if self.float_gate is not None and (self.float_gate.elt_type != f32 or len(self.float_gate.get_values()) != 3
                                            or self.float_step is not None):
            _fail(self, "a float_gate is array<f32: scale, offset, negative_offset>, not beside a float_step")
        if (self.int16_gate is None) != (self.gate_table is None):
            _fail(self, "an int16_gate and its gate_table go together")
        if self.int16_gate is not None:
            first, last = (*self.int16_gate.get_values(), None, None)[:2]
            if (self.int16_gate.elt_type != i32 or len(self.int16_gate.get_values()) != 2
                    or self.float_step is not None
                    or self.gate_table.type.element_type != i16
                    or glow.shape_of(self.gate_table) != (last - first + 1, 4)):
                _fail(self, "an int16_gate is array<i32: first, last>, alone or beside a float_gate (a hybrid), "
                            "its gate_table an i16 [last - first + 1, 4]")
        if self.microkernel is not None:
            verify_kernel_of(self, f"\"{kind}\"", "int8 operands", kind)
        self.expect_dest_shape(lambda op: glow.broadcast_shapes(glow.shape_of(op.dest), *map(glow.shape_of, op.inputs)))
        self.verify_activation()
        if kind == "compare" and self.dest.type.element_type != i1:
            _fail(self, "\"compare\" writes a boolean (i1) dest")
        if kind == "select" and self.inputs[0].type.element_type != i1:
            _fail(self, "\"select\" takes a boolean (i1) condition first")


@irdl_op_definition
class SoftMaxOp(InstructionOp):
    """Softmax over `axis`; with `log`, LogSoftmax. Quantized: the last axis, without log.
    With `microkernel = "arm-mve"` (glowll-select-arm-dsp-kernels on Helium) an int8 one
    runs on vectors; with "level-tables" (on the DSP extension without Helium) it takes its
    exps from a table of the 256 distances to the row maximum."""

    name = "glowll.softmax"
    input = operand_def(MemRefType)
    axis = prop_def(IntegerAttr)
    log = opt_prop_def(UnitAttr)
    microkernel = opt_prop_def(MicrokernelAttr)  # "arm-mve": an int8 softmax on Helium's vectors; "level-tables"
    assembly_format = "$dest `,` $input attr-dict `:` type(operands)"

    def __init__(self, dest: SSAValue, input: SSAValue, *, axis: int | IntegerAttr, log: bool = False):
        super().__init__(operands=[dest, input], properties={"axis": _integer(axis), **glow.flags(log=log)})

    def verify_instruction(self) -> None:
        self.expect_dest_shape(lambda op: glow.shape_of(op.input))
        rank = len(glow.shape_of(self.input))
        axis = axis_of(self, self.axis.value.data, rank)
        if is_quantized(self.dest.type) and (axis != rank - 1 or self.log is not None):
            _fail(self, "a quantized softmax works on the last axis, without log")
        if self.microkernel is not None:
            verify_kernel_of(self, "a softmax", "int8 levels", levels=all(is_quantized(v.type) for v in self.operands))


@irdl_op_definition
class LocalResponseNormalizationOp(InstructionOp):
    """See `glow.local_response_normalization` (NCHW, across channels)."""

    name = "glowll.local_response_normalization"
    input = operand_def(MemRefType)
    size = prop_def(IntegerAttr)
    alpha = prop_def(FloatAttr)
    beta = prop_def(FloatAttr)
    bias = prop_def(FloatAttr)
    assembly_format = "$dest `,` $input attr-dict `:` type(operands)"

    def __init__(self, dest: SSAValue, input: SSAValue, *, size: int | IntegerAttr, alpha: float | FloatAttr,
                 beta: float | FloatAttr, bias: float | FloatAttr):
        super().__init__(operands=[dest, input], properties={"size": _integer(size), "alpha": _float(alpha),
                                                             "beta": _float(beta), "bias": _float(bias)})

    def verify_instruction(self) -> None:
        shape_of(self, self.input, "the input", 4)
        self.expect_dest_shape(glow_shape_rule(glow.UnaryOp))
        if self.size.value.data < 1:
            _fail(self, f"size {self.size.value.data} is not positive")


@irdl_op_definition
class ReduceOp(InstructionOp):
    """dest = reduction (`kind`) of input over `axes`; dest has input's rank, 1 on `axes`."""

    name = "glowll.reduce"
    input = operand_def(MemRefType)
    kind = prop_def(glow.ReduceKindAttr)
    axes = prop_def(DenseArrayBase)
    assembly_format = "$kind $dest `,` $input attr-dict `:` type(operands)"

    def __init__(self, dest: SSAValue, input: SSAValue, *, kind: glow.ReduceKind | glow.ReduceKindAttr,
                 axes: Sequence[int] | DenseArrayBase):
        super().__init__(operands=[dest, input],
                         properties={"kind": _enum(glow.ReduceKindAttr, kind), "axes": _integers(axes)})

    def verify_instruction(self) -> None:
        axes, shape = integers(self, "axes"), glow.shape_of(self.input)
        if len(set(axes)) != len(axes):
            _fail(self, f"axes {list(axes)} repeat an axis")
        self.expect_dest_shape(glow_shape_rule(glow.ReduceOp))  # kept or dropped
        if len(glow.shape_of(self.dest)) != len(shape):
            _fail(self, "dest keeps the reduced axes (as 1)")


@irdl_op_definition
class ArgReduceOp(InstructionOp):
    """dest (i64, input's shape with 1 on `axis`) = index of the max/min (`kind`) along `axis`."""

    name = "glowll.arg_reduce"
    input = operand_def(MemRefType)
    kind = prop_def(glow.ArgReduceKindAttr)
    axis = prop_def(IntegerAttr)
    select_last_index = opt_prop_def(UnitAttr)
    assembly_format = "$kind $dest `,` $input attr-dict `:` type(operands)"

    def __init__(self, dest: SSAValue, input: SSAValue, *, kind: glow.ArgReduceKind | glow.ArgReduceKindAttr,
                 axis: int | IntegerAttr, select_last_index: bool = False):
        super().__init__(operands=[dest, input],
                         properties={"kind": _enum(glow.ArgReduceKindAttr, kind), "axis": _integer(axis),
                                     **glow.flags(select_last_index=select_last_index)})

    def verify_instruction(self) -> None:
        self.expect_dest_shape(glow_shape_rule(glow.ArgReduceOp))  # kept or dropped
        if len(glow.shape_of(self.dest)) != len(glow.shape_of(self.input)):
            _fail(self, "dest keeps the reduced axis (as 1)")


class IndexedReadOp(InstructionOp):
    """Reads `data` at positions along `axis` that integer `indices` give (negative ones
    count from the end)."""

    data = operand_def(MemRefType)
    indices = operand_def(MemRefType)
    axis = prop_def(IntegerAttr)
    assembly_format = "$dest `,` $data `,` $indices attr-dict `:` type(operands)"

    GLOW_RULE: ClassVar[Callable]  # the glow op's shape rule

    def __init__(self, dest: SSAValue, data: SSAValue, indices: SSAValue, *, axis: int | IntegerAttr):
        super().__init__(operands=[dest, data, indices], properties={"axis": _integer(axis)})

    def verify_instruction(self) -> None:
        self.expect_dest_shape(type(self).GLOW_RULE)  # integer indices, an axis of the data
        same_storage(self, self.dest, self.data, "dest and data")


@irdl_op_definition
class GatherOp(IndexedReadOp):
    """dest[pre, j..., post] = data[pre, indices[j...], post] along `axis`."""

    name = "glowll.gather"
    GLOW_RULE: ClassVar[Callable] = glow_shape_rule(glow.GatherOp)


@irdl_op_definition
class GatherElementsOp(IndexedReadOp):
    """dest[i] = data[i with its `axis` coordinate replaced by indices[i]]."""

    name = "glowll.gather_elements"
    GLOW_RULE: ClassVar[Callable] = glow_shape_rule(glow.GatherElementsOp)


@irdl_op_definition
class IntLookupTableOp(InstructionOp):
    """dest[i] = table[input[i] + 128]: see `glow.int_lookup_table`. With `microkernel =
    "x86-vbmi"` (glowll-select-x86-vnni-kernels{lookup_tables}), 64 levels at once by `vpermi2b`;
    with "vector-lookup-int8" (glowll-select-vector-columns), 32 or 64 by byte shuffles."""

    name = "glowll.int_lookup_table"
    input = operand_def(MemRefType)
    table = operand_def(MemRefType)
    microkernel = opt_prop_def(MicrokernelAttr)  # "x86-vbmi": 64 levels at once by vpermi2b
    assembly_format = "$dest `,` $input `,` $table attr-dict `:` type(operands)"

    def __init__(self, dest: SSAValue, input: SSAValue, table: SSAValue):
        super().__init__(operands=[dest, input, table])

    def verify_instruction(self) -> None:
        if self.microkernel is not None:
            verify_kernel_of(self, "a lookup table", "int8 levels and an int8 table")
        self.expect_dest_shape(glow_shape_rule(glow.IntLookupTableOp))


@irdl_op_definition
class ScatterNDOp(InstructionOp):
    """`glow.scatter_nd` on `dest`, which already holds the data: each update written over (or,
    with a `reduction`, combined with) the slice its index tuple names, in order; an index
    outside `dest` writes nothing."""

    name = "glowll.scatter_nd"
    indices = operand_def(MemRefType)
    updates = operand_def(MemRefType)
    reduction = prop_def(glow.ScatterReductionAttr)
    assembly_format = "$reduction $dest `,` $indices `,` $updates attr-dict `:` type(operands)"

    def __init__(self, dest: SSAValue, indices: SSAValue, updates: SSAValue, *,
                 reduction: glow.ScatterReduction | glow.ScatterReductionAttr):
        super().__init__(operands=[dest, indices, updates],
                         properties={"reduction": _enum(glow.ScatterReductionAttr, reduction)})

    def verify_instruction(self) -> None:
        try:
            glow.ScatterNDOp.shape_rule(glow.shape_of(self.dest), glow.shape_of(self.indices),
                                        glow.shape_of(self.updates))
        except ValueError as error:
            raise VerifyException(f"{self.name}: {error}") from None
        same_storage(self, self.dest, self.updates, "dest and updates")


@irdl_op_definition
class CopyOp(InstructionOp):
    """Copies the elements of `input` in row-major order (a reshape)."""

    name = "glowll.copy"
    input = operand_def(MemRefType)
    assembly_format = "$dest `,` $input attr-dict `:` type(operands)"

    def __init__(self, dest: SSAValue, input: SSAValue):
        super().__init__(operands=[dest, input])

    def verify_instruction(self) -> None:
        if self.dest.type.element_count() != self.input.type.element_count():
            _fail(self, f"dest has {self.dest.type.element_count()} elements, the input "
                        f"{self.input.type.element_count()}")
        same_storage(self, self.dest, self.input, "dest and input")


STATE_READY = 1
"""What the ready word of a network's state holds once the state is initialised (any other
value: the next call initialises it; the header's `<NAME>_RESET_STATE` writes 0)."""


@irdl_op_definition
class InitializeStateOp(InstructionOp):
    """Unless `ready` (an i32 [1] state placeholder) holds `STATE_READY`, dest (a state
    placeholder) takes its initial value: `initial`'s elements, or `fill` (a level, for
    quantized state) in every element. The instructions initialising a function's state come
    first; an `elementwise "splat"` of `STATE_READY` into `ready` follows them."""

    name = "glowll.initialize_state"
    ready = operand_def(MemRefType)
    initial = opt_operand_def(MemRefType)
    fill = opt_prop_def(FloatAttr)
    assembly_format = "$dest `,` $ready (`initial` $initial^)? attr-dict `:` type($dest) `,` type($ready) " \
                      "(`,` type($initial)^)?"

    def __init__(self, dest: SSAValue, ready: SSAValue, initial: SSAValue | None = None,
                 fill: float | FloatAttr | None = None):
        super().__init__(operands=[dest, ready, initial], properties={"fill": _float(fill)})

    def verify_instruction(self) -> None:
        if self.ready.type.element_type != i32 or glow.shape_of(self.ready) != (1,):
            _fail(self, f"the ready word must be memref<1xi32>, not {self.ready.type}")
        if (self.initial is None) == (self.fill is None):
            _fail(self, "give the initial value as one of `initial` (a buffer) and `fill`")
        if self.initial is not None:
            if glow.shape_of(self.initial) != glow.shape_of(self.dest):
                _fail(self, f"initial {self.initial.type} and dest {self.dest.type} differ in shape")
            same_storage(self, self.dest, self.initial, "dest and initial")


@irdl_op_definition
class TransposeOp(InstructionOp):
    name = "glowll.transpose"
    input = operand_def(MemRefType)
    perm = prop_def(DenseArrayBase)
    assembly_format = "$dest `,` $input attr-dict `:` type(operands)"

    def __init__(self, dest: SSAValue, input: SSAValue, *, perm: Sequence[int] | DenseArrayBase):
        super().__init__(operands=[dest, input], properties={"perm": _integers(perm)})

    def verify_instruction(self) -> None:
        self.expect_dest_shape(glow_shape_rule(glow.TransposeOp))
        same_storage(self, self.dest, self.input, "dest and input")


@irdl_op_definition
class InsertTensorOp(InstructionOp):
    """Writes `input` into dest at `offsets` (Concat, Pad)."""

    name = "glowll.insert_tensor"
    input = operand_def(MemRefType)
    offsets = prop_def(DenseArrayBase)
    assembly_format = "$dest `,` $input attr-dict `:` type(operands)"

    def __init__(self, dest: SSAValue, input: SSAValue, *, offsets: Sequence[int] | DenseArrayBase):
        super().__init__(operands=[dest, input], properties={"offsets": _integers(offsets)})

    def verify_instruction(self) -> None:
        dest, source, offsets = glow.shape_of(self.dest), glow.shape_of(self.input), integers(self, "offsets")
        if len(offsets) != len(dest) or len(source) != len(dest) or \
                any(o < 0 or o + s > d for o, s, d in zip(offsets, source, dest)):
            _fail(self, f"{list(source)} at offsets {list(offsets)} does not lie within dest {list(dest)}")
        same_storage(self, self.dest, self.input, "dest and input")


@irdl_op_definition
class ExtractTensorOp(InstructionOp):
    """dest[i] = input[starts + i * steps] (Slice)."""

    name = "glowll.extract_tensor"
    input = operand_def(MemRefType)
    starts = prop_def(DenseArrayBase)
    steps = prop_def(DenseArrayBase)
    assembly_format = "$dest `,` $input attr-dict `:` type(operands)"

    def __init__(self, dest: SSAValue, input: SSAValue, *, starts: Sequence[int] | DenseArrayBase,
                 steps: Sequence[int] | DenseArrayBase):
        super().__init__(operands=[dest, input], properties={"starts": _integers(starts), "steps": _integers(steps)})

    def verify_instruction(self) -> None:
        rank = len(glow.shape_of(self.input))
        integers(self, "starts", rank)
        integers(self, "steps", rank)
        if len(glow.shape_of(self.dest)) != rank:
            _fail(self, f"dest must have the input's {rank} dimensions")
        self.expect_dest_shape(glow_shape_rule(glow.SliceOp))  # within the input's bounds
        same_storage(self, self.dest, self.input, "dest and input")


@irdl_op_definition
class ResampleOp(InstructionOp):
    """See `glow.resample`: dest[..., j, ...] = sum_t weights[j, t] * input[..., taps[j, t], ...] along `axis`."""

    name = "glowll.resample"
    input = operand_def(MemRefType)
    taps = operand_def(MemRefType)
    weights = operand_def(MemRefType)
    axis = prop_def(IntegerAttr)
    assembly_format = "$dest `,` $input `,` $taps `,` $weights attr-dict `:` type(operands)"

    def __init__(self, dest: SSAValue, input: SSAValue, taps: SSAValue, weights: SSAValue, *,
                 axis: int | IntegerAttr):
        super().__init__(operands=[dest, input, taps, weights], properties={"axis": _integer(axis)})

    def verify_instruction(self) -> None:
        self.expect_dest_shape(glow_shape_rule(glow.ResampleOp))
        if not isinstance(self.taps.type.element_type, IntegerType):
            _fail(self, f"taps must be integers, not {self.taps.type.element_type}")


# ----------------------------------------------------------------------------- library calls


class LibraryArgument(ParametrizedAttribute):
    """One C argument of a `glowll.library_call`; `operands` are the operand indices it names."""

    POINTER: ClassVar[bool] = True  # a pointer argument (else an int32)

    @property
    def operands(self) -> tuple[int, ...]:
        return ()


def _parse_index(parser: AttrParser, none: bool = False) -> IntAttr | NoneAttr:
    if none and parser.parse_optional_keyword("none"):
        return NoneAttr()
    return IntAttr(parser.parse_integer(allow_negative=False, allow_boolean=False))


@irdl_attr_definition
class BufferArgument(LibraryArgument):
    """`#glowll.buffer<K>`: a pointer to operand K."""

    name = "glowll.buffer"
    operand: IntAttr

    def __init__(self, operand: int):
        super().__init__(IntAttr(operand))

    @property
    def operands(self) -> tuple[int, ...]:
        return (self.operand.data,)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return (_parse_index(parser),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.operand.data}>")


@irdl_attr_definition
class ContextArgument(LibraryArgument):
    """`#glowll.context<K>`: a pointer to a `{void *buf; int32_t size;}` for scratch operand K
    (CMSIS-NN's `cmsis_nn_context`); `#glowll.context<none>`: `{NULL, 0}`."""

    name = "glowll.context"
    operand: IntAttr | NoneAttr

    def __init__(self, operand: int | None):
        super().__init__(NoneAttr() if operand is None else IntAttr(operand))

    @property
    def operands(self) -> tuple[int, ...]:
        return () if isinstance(self.operand, NoneAttr) else (self.operand.data,)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return (_parse_index(parser, none=True),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{'none' if isinstance(self.operand, NoneAttr) else self.operand.data}>")


@irdl_attr_definition
class PointersArgument(LibraryArgument):
    """`#glowll.pointers<K, L>`: a pointer to a `{T *, T *}` struct of operands K and L
    (CMSIS-NN's per-channel quantization parameters)."""

    name = "glowll.pointers"
    first: IntAttr
    second: IntAttr

    def __init__(self, first: int, second: int):
        super().__init__(IntAttr(first), IntAttr(second))

    @property
    def operands(self) -> tuple[int, ...]:
        return self.first.data, self.second.data

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            first = _parse_index(parser)
            parser.parse_punctuation(",")
            return first, _parse_index(parser)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.first.data}, {self.second.data}>")


@irdl_attr_definition
class IntArgument(LibraryArgument):
    """`#glowll.int<V>`: the int32 value V."""

    name = "glowll.int"
    POINTER: ClassVar[bool] = False
    value: IntAttr

    def __init__(self, value: int):
        super().__init__(IntAttr(value))

    @property
    def fits(self) -> bool:
        """Whether the value is an int32 (the verifier of `glowll.library_call` asks)."""
        return -(1 << 31) <= self.value.data < (1 << 31)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            value = IntAttr(parser.parse_integer(allow_boolean=False))
        if not cls(value.data).fits:
            parser.raise_error(f"#glowll.int<{value.data}> does not fit an int32")
        return (value,)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.value.data}>")


@irdl_attr_definition
class NullArgument(LibraryArgument):
    """`#glowll.null`: a NULL pointer."""

    name = "glowll.null"

    def __init__(self):
        super().__init__()


LIBRARY_ARGUMENTS = [BufferArgument, ContextArgument, PointersArgument, IntArgument, NullArgument]


@irdl_op_definition
class LibraryCallOp(InstructionOp):
    """A call into a kernel library (CMSIS-NN, HiFi4 NNLib) standing for the instruction
    named in `replaces`: `int32_t callee(args...)`, a non-zero result being an error.

    `dest` and the other buffers are operands; `arguments` gives the C arguments in order,
    each a `LibraryArgument`: `#glowll.buffer<K>` (pointer to operand K),
    `#glowll.context<K>` (pointer to a `{void *buf; int32_t size;}` for scratch operand K,
    or `#glowll.context<none>`), `#glowll.pointers<K, L>` (pointer to a `{T *, T *}` struct
    of operands K and L), `#glowll.int<V>` (an int32 value), `#glowll.null`. Constant
    arguments (structs, multipliers, shifts) are weights among the operands. A callee
    marked `returns_void` returns nothing (success is then assumed).
    """

    name = "glowll.library_call"
    inputs = var_operand_def(MemRefType)
    callee = prop_def(StringAttr)
    arguments = prop_def(ArrayAttr)  # of LibraryArgument (checked by the verifier, which names the op)
    replaces = prop_def(StringAttr)
    returns_void = opt_prop_def(UnitAttr)  # a callee without a status (e.g. arm_softmax_s8)
    assembly_format = "$callee `(` $dest (`,` $inputs^)? `)` attr-dict `:` type(operands)"

    def __init__(self, callee: str, dest: SSAValue, inputs: Sequence[SSAValue], arguments: Sequence[LibraryArgument],
                 replaces: str, returns_void: bool = False):
        super().__init__(operands=[dest, inputs],
                         properties={"callee": StringAttr(callee), "replaces": StringAttr(replaces),
                                     "arguments": ArrayAttr(arguments), **glow.flags(returns_void=returns_void)})

    def verify_instruction(self) -> None:
        if not self.callee.data.isidentifier():
            _fail(self, f"callee \"{self.callee.data}\" is not a C function name")
        for argument in self.arguments:
            if not isinstance(argument, LibraryArgument):
                _fail(self, f"argument {argument} is not one of #glowll.buffer, context, pointers, int, null")
            if isinstance(argument, IntArgument) and not argument.fits:
                _fail(self, f"argument {argument} does not fit an int32")
            if any(index >= len(self.operands) for index in argument.operands):
                _fail(self, f"argument {argument} names no operand (there are {len(self.operands)})")


GlowLL = Dialect(
    "glowll",
    [
        FunctionOp, WeightOp, PlaceholderOp, AllocOp, TensorViewOp, InitializeStateOp,
        ConvolutionOp, FullyConnectedOp, MatMulOp, MaxPoolOp, AvgPoolOp,
        ElementwiseOp, SoftMaxOp, LocalResponseNormalizationOp, ReduceOp, ArgReduceOp, GatherOp, GatherElementsOp,
        ScatterNDOp, IntLookupTableOp, CopyOp, TransposeOp, InsertTensorOp, ExtractTensorOp, ResampleOp, LibraryCallOp,
    ],
    [PlaceholderKindAttr, MicrokernelAttr, TunedKernelAttr, *LIBRARY_ARGUMENTS],
)
