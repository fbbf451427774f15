"""The ONNX importer's options: `-model-input` and `-onnx-define-symbol`."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import onnx

from glowmlir.errors import GlowError

INT64_MAX = 2**63 - 1
"""The largest dimension an ONNX shape can hold."""


def parse_integer(text: str) -> int:
    """A decimal integer in ASCII digits, with an optional sign (Python's `int` also takes
    other scripts' digits and underscores); raises ValueError otherwise."""
    if not re.fullmatch(r"[+-]?[0-9]+", text.strip()):
        raise ValueError(f"\"{text}\" is not an integer")
    return int(text)


ELEMENT_TYPES = {"float": onnx.TensorProto.FLOAT, "float16": onnx.TensorProto.FLOAT16,
                 "int32": onnx.TensorProto.INT32, "int64": onnx.TensorProto.INT64, "bool": onnx.TensorProto.BOOL}
"""`-model-input` element types as Glow's loader spells them, and their ONNX types."""

QUANTIZED_TYPES = {"int8q": np.int8, "uint8q": np.uint8, "int16q": np.int16, "int32q": np.int32}
"""Quantized `-model-input` types (`name,<type>,scale,offset,[dims]`) and their storage: the
value stands for `scale * (q - offset)`. `uint8q` is NXP's eIQ spelling; Glow has the others."""


@dataclass(frozen=True)
class ModelInput:
    """One `-model-input=name,type,[d0,d1,...]` option (a quantized type adds `scale,offset`
    before the shape)."""

    name: str
    element_type: str
    shape: tuple[int, ...]
    scale: float | None = None
    offset: int | None = None

    @property
    def storage(self) -> np.dtype | None:
        """The integer storage of a quantized input, else None."""
        return np.dtype(QUANTIZED_TYPES[self.element_type]) if self.element_type in QUANTIZED_TYPES else None

    @staticmethod
    def parse(spec: str) -> ModelInput:
        """Glow's forms: `name`, `name,<type>,[dims]`, `name,<quantized type>,scale,offset,[dims]`."""
        bad = GlowError(f"-model-input=\"{spec}\": expected name,float,[d0,d1,...] or name,int8q,scale,offset,[d0,...]")
        if "," not in spec:
            if not spec:
                raise bad
            return ModelInput(spec, "float", (1,))
        if "[" not in spec or not spec.endswith("]"):
            raise bad
        head, dims = spec[:spec.index("[")].rstrip(","), spec[spec.index("["):]
        name, element_type, *quantization = head.split(",")
        if element_type not in ELEMENT_TYPES and element_type not in QUANTIZED_TYPES:
            unsupported = " (bfloat16 has no kernels here: use float16 or float)" if element_type == "bfloat16" else ""
            raise GlowError(f"-model-input=\"{spec}\": element type \"{element_type}\" is not supported{unsupported} "
                            f"(one of {', '.join([*ELEMENT_TYPES, *QUANTIZED_TYPES])})")
        if not name or len(quantization) != (2 if element_type in QUANTIZED_TYPES else 0):
            raise bad
        try:
            shape = tuple(parse_integer(d) for d in dims[1:-1].split(",") if d.strip())
            scale, offset = (float(quantization[0]), parse_integer(quantization[1])) if quantization else (None, None)
        except ValueError:
            raise bad from None
        if not shape or not all(1 <= d <= INT64_MAX for d in shape):
            raise GlowError(f"-model-input=\"{spec}\": dimensions must be positive integers below 2^63")
        if scale is not None:
            limits = np.iinfo(QUANTIZED_TYPES[element_type])
            if not (np.isfinite(np.float32(scale)) and np.float32(scale) > 0 and limits.min <= offset <= limits.max):
                raise GlowError(f"-model-input=\"{spec}\": {element_type} needs a finite positive scale (in float32) "
                                f"and an offset in [{limits.min}, {limits.max}]")
        return ModelInput(name, element_type, shape, scale, offset)


def parse_define_symbol(spec: str) -> tuple[str, int]:
    """One `-onnx-define-symbol=name,value` option."""
    parts = spec.split(",")
    try:
        if len(parts) != 2 or not parts[0]:
            raise ValueError
        symbol, value = parts[0], parse_integer(parts[1])
    except ValueError:
        raise GlowError(f"-onnx-define-symbol=\"{spec}\": expected symbol,positive-integer") from None
    check_symbol(symbol, value)
    return symbol, value


def check_symbol(symbol: object, value: object) -> None:
    """A symbolic dimension's value (`-onnx-define-symbol`, the API's `symbols`) is a positive int."""
    if not isinstance(symbol, str) or not symbol:
        raise GlowError(f"-onnx-define-symbol: symbol {symbol!r} is not a name")
    if not isinstance(value, int | np.integer) or isinstance(value, bool) or not 1 <= value <= INT64_MAX:
        raise GlowError(f"-onnx-define-symbol: symbol \"{symbol}\" has the value {value!r}: "
                        f"expected a positive integer")
