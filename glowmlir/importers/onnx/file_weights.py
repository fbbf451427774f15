"""An ONNX file's large weights read straight from the file, each once.

`onnx.load` reads the whole file and parses it: the weights are held twice (the file's
bytes, then the protobuf's copy of each `raw_data`), and the importer's arrays are views of
the protobuf's. Here the file is mapped and its protobuf wire format walked (ModelProto →
graph → initializer → raw_data, the field numbers of onnx.proto): each large initializer's
raw data is read (not through the mapping) into a `bytes` object of its own (the array a
view of it, as `numpy_helper.to_array`'s is of `raw_data`), the mapping's pages read are let
go as the walk goes, and what protobuf parses is the file without those raw data, a few
hundred kilobytes. The peak is the weights once.

Anything unusual (external data, groups, a length past the end, a second graph field, a type
other than the plain numeric ones) gives None: the caller reads the file with `onnx.load`,
which also words the errors of a damaged file.
"""

from __future__ import annotations

import math
import mmap
import os

import numpy as np
import onnx

LARGE_INITIALIZER_ELEMENTS = 1 << 14
"""Initializers this large are left out of what onnx's checker and shape inference see."""


_MODEL_GRAPH, _GRAPH_INITIALIZER = 7, 5
_TENSOR_DIMS, _TENSOR_DATA_TYPE, _TENSOR_NAME, _TENSOR_RAW_DATA, _TENSOR_DATA_LOCATION = 1, 2, 8, 9, 14
_LENGTH_DELIMITED = 2
_PLAIN_TYPES = {
    onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.DOUBLE: np.float64, onnx.TensorProto.FLOAT16: np.float16,
    onnx.TensorProto.INT8: np.int8, onnx.TensorProto.UINT8: np.uint8, onnx.TensorProto.INT16: np.int16,
    onnx.TensorProto.UINT16: np.uint16, onnx.TensorProto.INT32: np.int32, onnx.TensorProto.UINT32: np.uint32,
    onnx.TensorProto.INT64: np.int64, onnx.TensorProto.UINT64: np.uint64,
}
"""Element types whose raw data numpy reads as it is (little-endian, as onnx stores it)."""


class _Unusual(Exception):
    """The file is not the plain kind read here."""


def _varint(data, position: int, end: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if position >= end or shift > 63:
            raise _Unusual
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7


def _encoded_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _fields(data, start: int, end: int):
    """(field number, wire type, start of the field, start of its payload, end) of each field
    of the message data[start:end]."""
    position = start
    while position < end:
        key, payload = _varint(data, position, end)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, stop = _varint(data, payload, end)
        elif wire == 1:
            stop = payload + 8
        elif wire == 5:
            stop = payload + 4
        elif wire == _LENGTH_DELIMITED:
            length, payload = _varint(data, payload, end)
            stop = payload + length
        else:  # groups
            raise _Unusual
        if stop > end:
            raise _Unusual
        yield number, wire, position, payload, stop
        position = stop


def _dims(data, payload: int, stop: int, wire: int) -> list[int]:
    if wire == 0:
        return [_varint(data, payload, stop)[0]]
    dims, position = [], payload
    while position < stop:
        value, position = _varint(data, position, stop)
        dims.append(value)
    return dims


def _tensor_without_raw_data(data, start: int, end: int, read) -> tuple[bytes, str, np.ndarray] | None:
    """The TensorProto data[start:end] without its raw data, its name and its value as an
    array, if it is a large plain one; else None."""
    dims, data_type, name, raw, external = [], onnx.TensorProto.FLOAT, None, None, False
    for number, wire, field, payload, stop in _fields(data, start, end):
        if number == _TENSOR_DIMS:
            dims += _dims(data, payload, stop, wire)
        elif number == _TENSOR_DATA_TYPE and wire == 0:
            data_type = _varint(data, payload, stop)[0]
        elif number == _TENSOR_NAME and wire == _LENGTH_DELIMITED:
            try:
                name = bytes(data[payload:stop]).decode()
            except UnicodeDecodeError:
                raise _Unusual from None
        elif number == _TENSOR_RAW_DATA and wire == _LENGTH_DELIMITED:
            raw = (field, payload, stop)
        elif number == _TENSOR_DATA_LOCATION:
            external = True
    dtype = _PLAIN_TYPES.get(data_type)
    elements = math.prod(dims)
    if (raw is None or name is None or external or dtype is None or elements < LARGE_INITIALIZER_ELEMENTS
            or raw[2] - raw[1] != elements * np.dtype(dtype).itemsize):
        return None
    field, payload, stop = raw
    values = read(payload, stop)  # a bytes object of its own
    array = np.frombuffer(values, dtype).reshape(dims)
    return bytes(data[start:field]) + bytes(data[stop:end]), name, array


def _length_delimited(number: int, payload: bytes) -> bytes:
    return _encoded_varint(number << 3 | _LENGTH_DELIMITED) + _encoded_varint(len(payload)) + payload


def load_with_weights_apart(path: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray]] | None:
    """The model of the binary ONNX file `path` whose large initializers keep their names,
    types and shapes only, and their values as arrays by name; None if the file is not of
    the plain kind read here (see the module's docstring)."""
    with open(path, "rb") as file:
        try:
            data = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        except (ValueError, OSError):  # an empty file
            return None

        def read(start: int, stop: int) -> bytes:  # read, not mapped: the raw data never enter the resident set
            values = os.pread(file.fileno(), stop - start, start)
            if len(values) != stop - start:
                raise _Unusual
            return values

        def release(start: int, stop: int) -> None:  # the mapping's pages read so far leave the resident set
            first = start // mmap.PAGESIZE * mmap.PAGESIZE
            data.madvise(mmap.MADV_DONTNEED, first, min(len(data), stop) - first)

        with data:
            try:
                graphs = [f for f in _fields(data, 0, len(data)) if f[0] == _MODEL_GRAPH]
                if len(graphs) != 1 or graphs[0][1] != _LENGTH_DELIMITED:
                    return None
                _, _, graph_field, graph_payload, graph_end = graphs[0]
                graph, arrays = bytearray(), {}
                for number, wire, field, payload, stop in _fields(data, graph_payload, graph_end):
                    light = None
                    if number == _GRAPH_INITIALIZER and wire == _LENGTH_DELIMITED:
                        light = _tensor_without_raw_data(data, payload, stop, read)
                    if light is None:
                        graph += data[field:stop]
                    elif light[1] in arrays:
                        return None
                    else:
                        graph += _length_delimited(_GRAPH_INITIALIZER, light[0])
                        arrays[light[1]] = light[2]
                    release(field, stop)
                if not arrays:
                    return None
                text = data[:graph_field] + _length_delimited(_MODEL_GRAPH, bytes(graph)) + data[graph_end:]
            except _Unusual:
                return None
    try:
        model = onnx.ModelProto.FromString(text)
    except Exception:  # protobuf raises several unrelated types: onnx.load words the error
        return None
    initializers = model.graph.initializer
    if (sum(t.name in arrays for t in initializers) != len(arrays)
            or any(t.data_location == onnx.TensorProto.EXTERNAL for t in initializers)):
        return None
    return model, arrays
