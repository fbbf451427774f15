"""The `quant` dialect: the quantized element type, spelled as in MLIR's quant dialect.

    !quant.uniform<i8:f32, 0.0235294:-128>          one scale and offset for the tensor
    !quant.uniform<i8:f32:0, {0.01:0, 0.02:0}>      one per index of dimension 0 (per channel)

An integer `q` of the storage type (i8, i16, i32; i64 for the bias of an int16 layer whose
accumulator units are too fine for i32) stands for the real value
`scale * (q - offset)`; Glow calls the zero point "offset". Tensors and memrefs of this
type are what the quantization passes produce; kernels read the scale and offset from
their operands' types. Scales are float32 values, printed with the fewest digits that
read back to the same float32.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    FixedBitwidthType,
    FloatData,
    IntAttr,
    IntegerType,
    Signedness,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from glowmlir.quantization.params import round_to_float32

STORAGE_TYPES = {"Int8": i8, "Int16": i16, "Int32": i32, "Int64": i64}
"""Glow's precision names and their storage types (Int64 only for biases of int16 data, as
TFLite's 16x8 scheme and CMSIS-NN's s16 kernels keep them: `quantized_conversion._quantized_bias`)."""


def _format_scale(value: float) -> str:
    """Shortest float32 round trip, always with a decimal point (MLIR's float literal)."""
    mantissa, exponent = np.format_float_scientific(np.float32(value), unique=True, trim="-").split("e")
    return f"{mantissa if '.' in mantissa else mantissa + '.0'}e{exponent}"


@irdl_attr_definition
class UniformQuantizedType(ParametrizedAttribute, FixedBitwidthType, TypeAttribute):
    """Integers of `storage_type` standing for `scale * (q - offset)`; `axis` = -1 for one
    scale/offset per tensor, else the dimension whose indices each have their own."""

    name = "quant.uniform"
    storage_type: IntegerType
    scales: ArrayAttr[FloatData]
    offsets: ArrayAttr[IntAttr]
    axis: IntAttr

    def __init__(self, storage_type: IntegerType, scales: Sequence[float] | float, offsets: Sequence[int] | int,
                 axis: int = -1):
        if axis < 0:
            scales, offsets = [scales], [offsets]
        super().__init__(storage_type, ArrayAttr([FloatData(round_to_float32(s)) for s in scales]),
                         ArrayAttr([IntAttr(int(o)) for o in offsets]), IntAttr(axis))

    # ----------------------------------------------------------------- access

    @property
    def bitwidth(self) -> int:
        return self.storage_type.width.data

    @property
    def compile_time_size(self) -> int:
        return self.bitwidth // 8

    @property
    def per_channel(self) -> bool:
        return self.axis.data >= 0

    @property
    def scale(self) -> float:
        """The scale of a per-tensor type."""
        assert not self.per_channel, "per-channel type has no single scale"
        return self.scales.data[0].data

    @property
    def offset(self) -> int:
        assert not self.per_channel, "per-channel type has no single offset"
        return self.offsets.data[0].data

    def scale_array(self) -> np.ndarray:
        return np.array([s.data for s in self.scales.data], np.float32)

    def offset_array(self) -> np.ndarray:
        return np.array([o.data for o in self.offsets.data], np.int32)

    def with_storage_type(self, storage_type: IntegerType) -> UniformQuantizedType:
        """The same scales, offsets and axis in another storage type."""
        return UniformQuantizedType.new([storage_type, self.scales, self.offsets, self.axis])

    @property
    def value_range(self) -> tuple[int, int]:
        """The storage type's integer range (Glow restricts i32 to +-2^29 for biases)."""
        bits = self.bitwidth
        if bits == 32:
            return -(1 << 29), (1 << 29) - 1
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def verify(self) -> None:
        if self.storage_type.width.data not in (8, 16, 32, 64):
            raise VerifyException("quant.uniform: storage type must be i8, i16, i32 or i64")
        if len(self.scales.data) != len(self.offsets.data) or not self.scales.data:
            raise VerifyException("quant.uniform: one offset per scale")
        if not self.per_channel and len(self.scales.data) != 1:
            raise VerifyException("quant.uniform: a per-tensor type has one scale")
        if any(not s.data > 0 for s in self.scales.data):
            raise VerifyException("quant.uniform: scales must be positive")
        low, high = self.value_range
        if any(not low <= o.data <= high for o in self.offsets.data):
            raise VerifyException(f"quant.uniform: offsets must lie in [{low}, {high}]")

    # ----------------------------------------------------------------- syntax

    def print_parameters(self, printer: Printer) -> None:
        pairs = [f"{_format_scale(s.data)}:{o.data}" for s, o in zip(self.scales.data, self.offsets.data)]
        if self.per_channel:
            printer.print_string(f"<i{self.bitwidth}:f32:{self.axis.data}, {{{', '.join(pairs)}}}>")
        else:
            printer.print_string(f"<i{self.bitwidth}:f32, {pairs[0]}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        parser.parse_punctuation("<")
        storage = parser.parse_type()
        if not isinstance(storage, IntegerType):
            parser.raise_error("expected an integer storage type")
        parser.parse_punctuation(":")
        parser.parse_keyword("f32")
        axis = -1
        if parser.parse_optional_punctuation(":"):
            axis = parser.parse_integer(allow_boolean=False, allow_negative=False)
        parser.parse_punctuation(",")

        def pair() -> tuple[float, int]:
            scale = parser.parse_float()
            parser.parse_punctuation(":")
            return scale, parser.parse_integer(allow_boolean=False)

        if axis >= 0:
            pairs = parser.parse_comma_separated_list(parser.Delimiter.BRACES, pair)
        else:
            pairs = [pair()]
        parser.parse_punctuation(">")
        return (storage, ArrayAttr([FloatData(round_to_float32(s)) for s, _ in pairs]),
                ArrayAttr([IntAttr(o) for _, o in pairs]), IntAttr(axis))


def is_quantized(value_type: Attribute) -> bool:
    """Whether a tensor or memref type has a quantized element type."""
    return isinstance(getattr(value_type, "element_type", None), UniformQuantizedType)


def storage_type(element_type: Attribute) -> Attribute:
    """How elements of this type are stored in memory, as LLVM sees them: a quantized type's
    integer type, a boolean as a byte, an unsigned integer as the signless one of its width."""
    if isinstance(element_type, UniformQuantizedType):
        return element_type.storage_type
    if isinstance(element_type, IntegerType) and (element_type.width.data == 1
                                                   or element_type.signedness.data != Signedness.SIGNLESS):
        return IntegerType(max(8, element_type.width.data))
    return element_type


def stored_as(element_type: UniformQuantizedType, storage: Attribute, centred: bool = False) -> UniformQuantizedType:
    """The same scales (per tensor or per channel) stored as `storage`; `centred`: the levels
    less their zero points, so every zero point 0."""
    if element_type.per_channel:
        offsets = element_type.offset_array().tolist()
        return UniformQuantizedType(storage, element_type.scale_array().tolist(),
                                    [0] * len(offsets) if centred else offsets, element_type.axis.data)
    return UniformQuantizedType(storage, element_type.scale, 0 if centred else element_type.offset)


def finer_levels(element: UniformQuantizedType, bits: int) -> UniformQuantizedType:
    """A per-tensor int8 type's levels in int16 with `bits` more fractional bits (scale /
    2^bits, offset x 2^bits): its level L is the int16 level L x 2^bits, exactly."""
    return UniformQuantizedType(i16, element.scale / 2 ** bits, element.offset << bits)


def coarser_levels(element: UniformQuantizedType, bits: int) -> UniformQuantizedType:
    """The int8 type whose `finer_levels(., bits)` is `element`."""
    return UniformQuantizedType(i8, element.scale * 2 ** bits, element.offset >> bits)


def is_quantized_instruction(op: Operation) -> bool:
    """Whether an instruction reads or writes a quantized buffer (the kernel libraries and the
    quantized kernels take exactly these); not a float one whose int8 weights it dequantizes as
    it reads them (`weight_scales`: `glowll.dequantizes_weights`)."""
    if getattr(op, "weight_scales", None) is not None:
        return False
    return any(is_quantized(v.type) for v in op.operands)


Quant = Dialect("quant", [], [UniformQuantizedType])
