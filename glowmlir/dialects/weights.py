"""Weight data attached to IR ops, and how it is printed.

`glow.constant` and `glowll.weight` both carry a tensor of weights. In memory the data is
a `DenseIntOrFPElementsAttr` built straight from bytes (cheap, numpy reads it back without
a copy). In IR text, weights larger than `ELIDE_LIMIT` elements are printed as the keyword
`elided`, so ResNet-50 prints as a readable page, not as megabytes of hex. `glow-opt
--weights-file=F` saves the elided data to an `.npz` side file and loads it back on parse.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
    f16,
    f32,
    f64,
)
from xdsl.ir import Attribute, Operation
from xdsl.parser import Parser
from xdsl.printer import Printer

from glowmlir.errors import GlowError

ELIDE_LIMIT = 16
"""Weights with more elements than this are printed as `elided`."""

_print_all_weights = False


@contextlib.contextmanager
def printing_all_weights() -> Iterator[None]:
    """Within this context, weights are printed in full (for exact round trips)."""
    global _print_all_weights
    previous, _print_all_weights = _print_all_weights, True
    try:
        yield
    finally:
        _print_all_weights = previous


def numpy_dtype(element_type: Attribute) -> type:
    """The numpy dtype of an element type: f32 (f16 and f64 at a graph's boundary), i1
    (bool), signless (signed) and unsigned integers; a quantized type's storage integers."""
    if isinstance(element_type, Float32Type | Float16Type | Float64Type):
        return np.dtype(f"float{element_type.bitwidth}").type
    element_type = getattr(element_type, "storage_type", element_type)  # quantized: its integers
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        if width == 1:
            return np.bool_
        if width in (8, 16, 32, 64):
            unsigned = element_type.signedness.data == Signedness.UNSIGNED
            return np.dtype(f"{'u' if unsigned else ''}int{width}").type
    raise ValueError(f"unsupported element type {element_type}")


def element_type_of(dtype: np.dtype) -> Attribute:
    """The element type of a numpy dtype (the inverse of `numpy_dtype`)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f" and dtype.itemsize in (2, 4, 8):
        return {2: f16, 4: f32, 8: f64}[dtype.itemsize]
    if dtype == np.bool_:
        return IntegerType(1)
    if dtype.kind in "iu" and dtype.itemsize in (1, 2, 4, 8):
        return IntegerType(8 * dtype.itemsize, Signedness.UNSIGNED if dtype.kind == "u" else Signedness.SIGNLESS)
    raise ValueError(f"unsupported numpy dtype {dtype}")


def dense_from_array(array: np.ndarray) -> DenseIntOrFPElementsAttr:
    """Wrap a numpy array as a dense attribute without going through Python lists. An array
    that is all of a `bytes` object (an ONNX or TFLite file's weights, read by `np.frombuffer`)
    shares it: no copy."""
    array = np.asarray(array)
    if not array.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
        array = array.copy(order="C")
    tensor_type = TensorType(element_type_of(array.dtype), array.shape)
    return DenseIntOrFPElementsAttr(tensor_type, BytesAttr(bytes_of(array)))


def bytes_of(array: np.ndarray) -> bytes:
    """The bytes of a C-contiguous array: the `bytes` object it views, when it views all of
    one (in native byte order), else a copy."""
    base = array.base
    while isinstance(base, np.ndarray):
        base = base.base
    if (type(base) is bytes and len(base) == array.nbytes and array.dtype.isnative
            and array.__array_interface__["data"][0] == np.frombuffer(base, np.uint8).__array_interface__["data"][0]):
        return base
    return array.tobytes()


def transposed(matrix: np.ndarray, tile: int = 256) -> np.ndarray:
    """The transpose of a 2-D array, C-contiguous, copied tile by tile: numpy's own copy of a
    transposed view strides through memory (VGG-19's 25088 x 4096 FC weights: 1.4 s, this 0.3 s)."""
    rows, columns = matrix.shape
    result = np.empty((columns, rows), matrix.dtype)
    for i in range(0, rows, tile):
        for j in range(0, columns, tile):
            result[j:j + tile, i:i + tile] = matrix[i:i + tile, j:j + tile].T
    return result


def release_weights(op: Operation) -> None:
    """Lets an erased constant-like op's weights go now: an erased op and its results are a
    reference cycle, which only the cyclic collector frees, and it is paused while compiling
    (a pass replacing every filter would hold the weights twice until its stage ends)."""
    op.properties.pop("value", None)


def array_from_dense(value: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The numpy view of a dense attribute (read only, no copy)."""
    dtype = numpy_dtype(value.get_element_type())
    return np.frombuffer(value.data.data, dtype).reshape(value.get_shape())


def print_named_weight(op: Operation, printer: Printer) -> None:
    """`"name" [elided] {attrs} : type`, shared by the constant-like ops of both dialects.

    Small weights stay in the attribute dictionary as a `dense<...>` literal; large ones
    are replaced by the keyword `elided`.
    """
    value = op.properties.get("value")
    printer.print_string(" ")
    printer.print_attribute(op.properties["name"])
    shown = {k: v for k, v in op.properties.items() if k != "name"}
    if value is None or (len(value) > ELIDE_LIMIT and not _print_all_weights):
        printer.print_string(" elided")
        shown.pop("value", None)
    printer.print_op_attributes(shown | op.attributes)
    printer.print_string(" : ")
    printer.print_attribute(op.results[0].type)


def parse_named_weight(parser: Parser, property_names) -> tuple[dict[str, Attribute], dict[str, Attribute], Attribute]:
    """Parse the form printed by `print_named_weight`; returns (the entries that are the op's
    properties, named in `property_names`; its other attributes; the result type)."""
    properties: dict[str, Attribute] = {"name": StringAttr(parser.parse_str_literal("weight name"))}
    parser.parse_optional_keyword("elided")
    attributes = parser.parse_optional_attr_dict()
    properties |= {k: v for k, v in attributes.items() if k in property_names}
    parser.parse_punctuation(":")
    return properties, {k: v for k, v in attributes.items() if k not in property_names}, parser.parse_type()


class NamedWeightSyntax:
    """Custom syntax of the constant-like ops (`glow.constant`, `glowll.weight`)."""

    def print(self, printer: Printer) -> None:
        print_named_weight(self, printer)

    @classmethod
    def parse(cls, parser: Parser):
        properties, attributes, result_type = parse_named_weight(parser, cls.get_irdl_definition().properties)
        return cls.create(properties=properties, attributes=attributes, result_types=[result_type])


def save_weights(module: Operation, path: str) -> None:
    """Write every weight of `module` to an .npz side file, keyed by weight name."""
    arrays = {op.properties["name"].data: array_from_dense(op.properties["value"])
              for op in module.walk() if "value" in op.properties and "name" in op.properties}
    np.savez(path, **arrays)


def load_weights(module: Operation, path: str) -> None:
    """Fill the elided weights of `module` from an .npz side file written by `save_weights`.
    A file that is not such an archive, or an array whose shape or element type is not its
    weight's, is a GlowError naming the file and the weight."""
    try:
        arrays = np.load(path, allow_pickle=False)
        if not isinstance(arrays, np.lib.npyio.NpzFile):
            raise ValueError("an .npy array, not an .npz archive")
    except (OSError, ValueError, EOFError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise GlowError(f"weights file \"{path}\": not a readable .npz archive ({reason})") from None
    with arrays:
        for op in module.walk():
            if "name" in op.properties and "value" not in op.properties and hasattr(op, "value"):
                name = op.properties["name"].data
                if name not in arrays:
                    continue
                try:
                    array = arrays[name]
                except (OSError, ValueError, EOFError) as error:
                    raise GlowError(f"weights file \"{path}\": weight \"{name}\" cannot be read ({error})") from None
                declared = op.results[0].type
                if (tuple(array.shape) != tuple(declared.get_shape())
                        or array.dtype != np.dtype(numpy_dtype(declared.element_type))):
                    raise GlowError(f"weights file \"{path}\": weight \"{name}\" is {array.dtype}"
                                    f"{list(array.shape)}, the IR declares {declared}")
                op.properties["value"] = dense_from_array(array)
