"""TFLite models for the tests: a small flatbuffer writer, a reference runner, and a few nets.

Three layers, each usable on its own:

* `ModelBuilder` writes a one-subgraph TFLite flatbuffer with the `tflite` package's
  generated builder functions: tensors (inputs, constants, intermediates), builtin
  operators with their options table given as snake_case fields, graph outputs.
* `run_reference` runs a model in ai-edge-litert with TFLite's *reference* kernels
  (`OpResolverType.BUILTIN_REF`, no XNNPACK), inputs and outputs by tensor name.
  `run_reference_float` does the same with float data, quantizing int8 inputs and
  dequantizing int8 outputs with the tensors' own (scale, zero_point).
* `Net` describes a float model once (layer helpers that pick random He-scaled weights
  and infer shapes); `build(net, quantized, float_io)` emits it either as a float32
  model or, following the TFLite int8 spec, as an int8 model whose activation
  parameters come from running the float model on a few random calibration inputs.
  The model constructors (`conv_net`, `mobilenet_block`, `elementwise_net`, `lenet`,
  `float_io_net`) are written on top of it, so a model's float and int8 forms come
  from one description.

Int8 rules (TFLite's quantization spec, what its converter emits):
  activations asymmetric int8, scale/zero point from the observed range widened to
  include 0; CONV_2D filters symmetric per channel on axis 0 (OHWI), DEPTHWISE_CONV_2D
  on axis 3 (1HWC), FULLY_CONNECTED weights symmetric per tensor; biases int32 with
  scale input_scale * weight_scale (per channel) and zero point 0; SOFTMAX and LOGISTIC
  outputs (1/256, -128), TANH (1/128, 0); ops that only move or select values (pools,
  RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE, PAD, CONCATENATION, MAXIMUM, MINIMUM) share
  one (scale, zero_point) between their inputs and output (the reference int8
  CONCATENATION refuses anything else); shapes, axes, permutations and paddings stay
  int32 constants.

Example::

    from tests.support import tflite_models as tm

    b = tm.ModelBuilder()
    x = b.input("x", [1, 4, 4, 2])
    w = b.constant("w", np.ones([3, 1, 1, 2], np.float32))
    bias = b.constant("bias", np.zeros([3], np.float32))
    y = b.tensor("y", [1, 4, 4, 3])
    b.op("CONV_2D", [x, w, bias], [y], "Conv2DOptions", padding="SAME", stride_w=1, stride_h=1,
         fused_activation_function="RELU")
    b.output(y)
    out = tm.run_reference(b.finish(), {"x": np.ones([1, 4, 4, 2], np.float32)})["y"]

    float_model, int8_model = tm.conv_net(False), tm.conv_net(True)
    inputs = tm.random_inputs(float_model, seed=1)          # {"input": float32 array}
    expected = tm.run_reference(float_model, inputs)["output"]
    got = tm.run_reference_float(int8_model, inputs)["output"]   # dequantized
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

import flatbuffers
import numpy as np
import tflite
from ai_edge_litert.interpreter import Interpreter, OpResolverType

from tests.support.tflite_micro import run_micro  # re-exported: TFLite Micro, the int8 oracle

__all__ = [
    "ModelBuilder", "run_reference", "run_reference_float", "run_micro", "random_inputs", "quantize", "dequantize",
    "Net", "calibrate", "emit", "build", "conv_net", "mobilenet_block", "elementwise_net", "lenet", "float_io_net",
    "MODELS", "ELEMENTWISE_INT8_SKIPPED",
]

# --------------------------------------------------------------------------------------
# The flatbuffer writer
# --------------------------------------------------------------------------------------

DTYPES = {
    "float32": (tflite.TensorType.FLOAT32, np.float32),
    "float16": (tflite.TensorType.FLOAT16, np.float16),
    "int8": (tflite.TensorType.INT8, np.int8),
    "int16": (tflite.TensorType.INT16, np.int16),
    "uint8": (tflite.TensorType.UINT8, np.uint8),
    "int32": (tflite.TensorType.INT32, np.int32),
    "int64": (tflite.TensorType.INT64, np.int64),
    "resource": (tflite.TensorType.RESOURCE, None),  # a resource variable's handle (VAR_HANDLE's output)
    "int4": (tflite.TensorType.INT4, None),  # written by `ModelBuilder.int4_constant`, two to a byte
}

# Enum types of options fields, for fields given by member name ("SAME", "RELU6", ...).
_FIELD_ENUMS = {
    "padding": tflite.Padding,
    "fused_activation_function": tflite.ActivationFunctionType,
    "weights_format": tflite.FullyConnectedOptionsWeightsFormat,
    "mode": tflite.MirrorPadMode,
}


def _module(name: str):
    # `tflite.X` is the class X (the package star-imports every module), so import the module.
    return importlib.import_module(f"tflite.{name}")


def _camel(snake: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in snake.split("_"))


def _enum_value(field_name: str, value):
    if not isinstance(value, str):
        return value
    enum = _FIELD_ENUMS.get(field_name)
    if enum is None or not hasattr(enum, value):
        raise ValueError(f"no enum member {value!r} for options field {field_name!r}")
    return getattr(enum, value)


@dataclass
class _Tensor:
    name: str
    shape: list[int]
    dtype: str
    buffer: int
    quant: tuple | None  # (scales float32[], zero_points int64[], axis)
    sparsity: tuple | None = None  # (traversal order, block map, levels): see `sparse_constant`


@dataclass
class _Op:
    opcode: str
    inputs: list[int]
    outputs: list[int]
    options: str | None
    fields: dict
    custom_options: bytes | None = None  # a CUSTOM operator's options; its opcode is "CUSTOM:<name>"


def _normalize_quant(quant) -> tuple | None:
    """(scale, zp) per tensor or (scales, zero_points, axis) per channel -> arrays + axis."""
    if quant is None:
        return None
    if len(quant) == 3:
        scales, zero_points, axis = quant
    elif len(quant) == 2:
        (scales, zero_points), axis = quant, 0
    else:
        raise ValueError(f"quant must be (scale, zero_point) or (scales, zero_points, axis), not {quant!r}")
    scales = np.atleast_1d(np.asarray(scales, np.float32))
    zero_points = np.atleast_1d(np.asarray(zero_points, np.int64))
    if zero_points.size == 1 and scales.size > 1:
        zero_points = np.full(scales.shape, zero_points[0], np.int64)
    if scales.shape != zero_points.shape or scales.ndim != 1:
        raise ValueError(f"quant scales {scales.shape} and zero points {zero_points.shape} do not match")
    return scales, zero_points, int(axis)


class ModelBuilder:
    """Collects one subgraph's tensors and operators, then writes the flatbuffer.

    Tensor-making methods return the tensor's index, to be used in `op` and `output`.
    Non-constant tensors point at buffer 0, the empty buffer TFLite requires first.
    """

    def __init__(self, description: str = "glowmlir test model", name: str = "main"):
        self.description, self.name = description, name
        self._tensors: list[_Tensor] = []
        self._buffers: list[bytes] = [b""]
        self._ops: list[_Op] = []
        self._inputs: list[int] = []
        self._outputs: list[int] = []
        self._subgraphs: list[ModelBuilder] = []

    def subgraph(self, name: str) -> ModelBuilder:
        """Another subgraph of this model (numbered 1, 2, ... in the order made; e.g. the one a
        CALL_ONCE runs): its own tensors, operators, inputs and outputs, the model's buffers."""
        child = ModelBuilder(self.description, name)
        child._buffers = self._buffers
        self._subgraphs.append(child)
        return child

    # -- graph building ----------------------------------------------------------------

    def _add_tensor(self, name, shape, dtype, quant, buffer=0) -> int:
        if dtype not in DTYPES:
            raise ValueError(f"unsupported dtype {dtype!r}; one of {sorted(DTYPES)}")
        if any(t.name == name for t in self._tensors):
            raise ValueError(f"duplicate tensor name {name!r}")
        self._tensors.append(_Tensor(name, [int(d) for d in shape], dtype, buffer, _normalize_quant(quant)))
        return len(self._tensors) - 1

    def input(self, name: str, shape, dtype: str = "float32", quant=None) -> int:
        index = self._add_tensor(name, shape, dtype, quant)
        self._inputs.append(index)
        return index

    def constant(self, name: str, array: np.ndarray, quant=None) -> int:
        array = np.asarray(array)
        dtype = next((k for k, (_, np_type) in DTYPES.items() if array.dtype == np_type), None)
        if dtype is None:
            raise ValueError(f"unsupported constant dtype {array.dtype}")
        self._buffers.append(np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes())
        return self._add_tensor(name, array.shape, dtype, quant, buffer=len(self._buffers) - 1)

    def int4_constant(self, name: str, levels: np.ndarray, quant=None) -> int:
        """A constant of INT4 `levels` (int8 values in [-8, 7]), stored two to a byte, the
        first in the low nibble (TFLite's `PackInt8IntoDenseInt4`)."""
        levels = np.asarray(levels, np.int8)
        if levels.min(initial=0) < -8 or levels.max(initial=0) > 7:
            raise ValueError("INT4 levels lie in [-8, 7]")
        nibbles = (levels.reshape(-1).astype(np.uint8) & 0xF)
        if nibbles.size % 2:
            nibbles = np.append(nibbles, np.uint8(0))
        self._buffers.append((nibbles[0::2] | (nibbles[1::2] << 4)).astype(np.uint8).tobytes())
        return self._add_tensor(name, levels.shape, "int4", quant, buffer=len(self._buffers) - 1)

    def sparse_constant(self, name: str, array: np.ndarray, formats, block: tuple[int, int] | None = None,
                        quant=None) -> int:
        """A constant stored sparse, as TFLite's converter writes pruned weights (read by a
        DENSIFY): `formats` gives each traversed dimension "dense" or "csr" (the original
        dimensions in order, then the block's); `block` = (dimension, size) splits one
        dimension into blocks of `size`. Only the values the traversal keeps are stored."""
        array = np.asarray(array)
        rank = array.ndim
        expanded, block_map = array, []
        if block is not None:
            dimension, size = block
            shape = list(array.shape)
            expanded = array.reshape(shape[:dimension] + [shape[dimension] // size, size] + shape[dimension + 1:])
            expanded = np.moveaxis(expanded, dimension + 1, -1)
            block_map = [dimension]
        if len(formats) != expanded.ndim:
            raise ValueError(f"{len(formats)} formats for {expanded.ndim} traversed dimensions")
        nodes, levels = [expanded], []
        for level_format in formats:
            size = nodes[0].shape[0]
            if level_format == "dense":
                nodes = [node[i] for node in nodes for i in range(size)]
                levels.append(("dense", size))
                continue
            segments, indices, children = [0], [], []
            for node in nodes:
                for i in range(size):
                    if np.any(node[i] != 0):
                        indices.append(i)
                        children.append(node[i])
                segments.append(len(indices))
            nodes = children
            levels.append(("csr", size, segments, indices))
        values = np.array(nodes, array.dtype).reshape(-1)
        self._buffers.append(values.astype(values.dtype.newbyteorder("<")).tobytes())
        index = self._add_tensor(name, array.shape, next(k for k, (_, t) in DTYPES.items() if array.dtype == t),
                                 quant, buffer=len(self._buffers) - 1)
        self._tensors[index].sparsity = (list(range(rank + len(block_map))), block_map, levels)
        return index

    def tensor(self, name: str, shape, dtype: str = "float32", quant=None) -> int:
        return self._add_tensor(name, shape, dtype, quant)

    def op(self, opcode: str, inputs, outputs, options: str | None = None, **fields) -> None:
        if not hasattr(tflite.BuiltinOperator, opcode):
            raise ValueError(f"unknown builtin operator {opcode!r}")
        if options is not None and not hasattr(_module("BuiltinOptions").BuiltinOptions, options):
            raise ValueError(f"unknown builtin options table {options!r}")
        if fields and options is None:
            raise ValueError(f"{opcode}: fields {sorted(fields)} given without an options table")
        for index in [*inputs, *outputs]:
            if not -1 <= index < len(self._tensors):
                raise ValueError(f"{opcode}: no tensor {index}")
        self._ops.append(_Op(opcode, [int(i) for i in inputs], [int(i) for i in outputs], options, fields))

    def custom_op(self, name: str, inputs, outputs, options: bytes = b"") -> None:
        """A CUSTOM operator `name` (e.g. MediaPipe's "Convolution2DTransposeBias") with raw options."""
        self._ops.append(_Op(f"CUSTOM:{name}", [int(i) for i in inputs], [int(i) for i in outputs], None, {},
                             bytes(options)))

    def output(self, index: int) -> None:
        self._outputs.append(int(index))

    # -- serialization -----------------------------------------------------------------

    def finish(self) -> bytes:
        fb = flatbuffers.Builder(1024)
        buffers = [self._write_buffer(fb, data) for data in self._buffers]
        graphs = [self, *self._subgraphs]
        opcodes = list(dict.fromkeys(op.opcode for graph in graphs for op in graph._ops))
        subgraphs = [graph._write_subgraph(fb, opcodes) for graph in graphs]

        codes = [self._write_opcode(fb, opcode) for opcode in opcodes]
        m = _module("Model")
        codes_vec = _offsets(fb, m.ModelStartOperatorCodesVector, codes)
        subgraphs_vec = _offsets(fb, m.ModelStartSubgraphsVector, subgraphs)
        buffers_vec = _offsets(fb, m.ModelStartBuffersVector, buffers)
        description = fb.CreateString(self.description)
        m.ModelStart(fb)
        m.ModelAddVersion(fb, 3)
        m.ModelAddOperatorCodes(fb, codes_vec)
        m.ModelAddSubgraphs(fb, subgraphs_vec)
        m.ModelAddDescription(fb, description)
        m.ModelAddBuffers(fb, buffers_vec)
        model = m.ModelEnd(fb)
        fb.Finish(model, file_identifier=b"TFL3")
        return bytes(fb.Output())

    def _write_subgraph(self, fb, opcodes: list[str]) -> int:
        tensors = [self._write_tensor(fb, t) for t in self._tensors]
        operators = [self._write_operator(fb, op, opcodes.index(op.opcode)) for op in self._ops]
        sg = _module("SubGraph")
        tensors_vec = _offsets(fb, sg.SubGraphStartTensorsVector, tensors)
        inputs_vec = _numpy_vector(fb, self._inputs, np.int32)
        outputs_vec = _numpy_vector(fb, self._outputs, np.int32)
        operators_vec = _offsets(fb, sg.SubGraphStartOperatorsVector, operators)
        name = fb.CreateString(self.name)
        sg.SubGraphStart(fb)
        sg.SubGraphAddTensors(fb, tensors_vec)
        sg.SubGraphAddInputs(fb, inputs_vec)
        sg.SubGraphAddOutputs(fb, outputs_vec)
        sg.SubGraphAddOperators(fb, operators_vec)
        sg.SubGraphAddName(fb, name)
        return sg.SubGraphEnd(fb)

    @staticmethod
    def _write_buffer(fb, data: bytes) -> int:
        mod = _module("Buffer")
        vec = None
        if data:
            fb.StartVector(1, len(data), 16)  # 16-byte aligned, as TFLite's converter does
            fb.head -= len(data)
            fb.Bytes[fb.head:fb.head + len(data)] = data
            fb.vectorNumElems = len(data)
            vec = fb.EndVector()
        mod.BufferStart(fb)
        if vec is not None:
            mod.BufferAddData(fb, vec)
        return mod.BufferEnd(fb)

    @staticmethod
    def _write_tensor(fb, t: _Tensor) -> int:
        mod = _module("Tensor")
        quant = None
        if t.quant is not None:
            q = _module("QuantizationParameters")
            scales, zero_points, axis = t.quant
            scale_vec = fb.CreateNumpyVector(scales)
            zp_vec = fb.CreateNumpyVector(zero_points)
            q.QuantizationParametersStart(fb)
            q.QuantizationParametersAddScale(fb, scale_vec)
            q.QuantizationParametersAddZeroPoint(fb, zp_vec)
            q.QuantizationParametersAddQuantizedDimension(fb, axis)
            quant = q.QuantizationParametersEnd(fb)
        sparsity = _write_sparsity(fb, *t.sparsity) if t.sparsity is not None else None
        name = fb.CreateString(t.name)
        shape = _numpy_vector(fb, t.shape, np.int32)
        mod.TensorStart(fb)
        mod.TensorAddShape(fb, shape)
        mod.TensorAddType(fb, DTYPES[t.dtype][0])
        mod.TensorAddBuffer(fb, t.buffer)
        mod.TensorAddName(fb, name)
        if quant is not None:
            mod.TensorAddQuantization(fb, quant)
        if sparsity is not None:
            mod.TensorAddSparsity(fb, sparsity)
        return mod.TensorEnd(fb)

    @staticmethod
    def _write_options(fb, options: str, fields: dict) -> int:
        mod = _module(options)
        setters = []
        for name, value in fields.items():  # vectors first: no nesting inside a table
            add = getattr(mod, f"{options}Add{_camel(name)}", None)
            if add is None:
                raise ValueError(f"{options} has no field {name!r}")
            if isinstance(value, (list, tuple, np.ndarray)):
                value = _numpy_vector(fb, value, np.int32)
            elif isinstance(value, str) and name not in _FIELD_ENUMS:  # a string field (VarHandleOptions')
                value = fb.CreateString(value)
            setters.append((add, _enum_value(name, value)))
        getattr(mod, f"{options}Start")(fb)
        for add, value in setters:
            add(fb, value)
        return getattr(mod, f"{options}End")(fb)

    def _write_operator(self, fb, op: _Op, opcode_index: int) -> int:
        mod = _module("Operator")
        options = self._write_options(fb, op.options, op.fields) if op.options else None
        inputs = _numpy_vector(fb, op.inputs, np.int32)
        outputs = _numpy_vector(fb, op.outputs, np.int32)
        custom = fb.CreateNumpyVector(np.frombuffer(op.custom_options, np.uint8)) if op.custom_options else None
        mod.OperatorStart(fb)
        mod.OperatorAddOpcodeIndex(fb, opcode_index)
        mod.OperatorAddInputs(fb, inputs)
        mod.OperatorAddOutputs(fb, outputs)
        if custom is not None:
            mod.OperatorAddCustomOptions(fb, custom)
        if options is not None:
            mod.OperatorAddBuiltinOptionsType(fb, getattr(_module("BuiltinOptions").BuiltinOptions, op.options))
            mod.OperatorAddBuiltinOptions(fb, options)
        return mod.OperatorEnd(fb)

    @staticmethod
    def _write_opcode(fb, opcode: str) -> int:
        mod = _module("OperatorCode")
        custom = fb.CreateString(opcode.split(":", 1)[1]) if opcode.startswith("CUSTOM:") else None
        code = getattr(tflite.BuiltinOperator, opcode.split(":", 1)[0])
        mod.OperatorCodeStart(fb)
        if custom is not None:
            mod.OperatorCodeAddCustomCode(fb, custom)
        mod.OperatorCodeAddDeprecatedBuiltinCode(fb, min(code, 127))
        mod.OperatorCodeAddBuiltinCode(fb, code)
        mod.OperatorCodeAddVersion(fb, 1)
        return mod.OperatorCodeEnd(fb)


def _write_sparsity(fb, order, block_map, levels) -> int:
    """A SparsityParameters table; CSR levels index with Int32Vector tables."""
    vector = _module("Int32Vector")
    metadata = _module("DimensionMetadata")
    written = []
    for level in levels:
        if level[0] == "dense":
            metadata.DimensionMetadataStart(fb)
            metadata.DimensionMetadataAddFormat(fb, tflite.DimensionType.DENSE)
            metadata.DimensionMetadataAddDenseSize(fb, level[1])
            written.append(metadata.DimensionMetadataEnd(fb))
            continue
        tables = []
        for values in level[2:]:
            values_vec = _numpy_vector(fb, values, np.int32)
            vector.Int32VectorStart(fb)
            vector.Int32VectorAddValues(fb, values_vec)
            tables.append(vector.Int32VectorEnd(fb))
        metadata.DimensionMetadataStart(fb)
        metadata.DimensionMetadataAddFormat(fb, tflite.DimensionType.SPARSE_CSR)
        metadata.DimensionMetadataAddDenseSize(fb, level[1])
        metadata.DimensionMetadataAddArraySegmentsType(fb, tflite.SparseIndexVector.Int32Vector)
        metadata.DimensionMetadataAddArraySegments(fb, tables[0])
        metadata.DimensionMetadataAddArrayIndicesType(fb, tflite.SparseIndexVector.Int32Vector)
        metadata.DimensionMetadataAddArrayIndices(fb, tables[1])
        written.append(metadata.DimensionMetadataEnd(fb))
    parameters = _module("SparsityParameters")
    order_vec = _numpy_vector(fb, order, np.int32)
    block_vec = _numpy_vector(fb, block_map, np.int32) if block_map else None
    levels_vec = _offsets(fb, parameters.SparsityParametersStartDimMetadataVector, written)
    parameters.SparsityParametersStart(fb)
    parameters.SparsityParametersAddTraversalOrder(fb, order_vec)
    if block_vec is not None:
        parameters.SparsityParametersAddBlockMap(fb, block_vec)
    parameters.SparsityParametersAddDimMetadata(fb, levels_vec)
    return parameters.SparsityParametersEnd(fb)


def _numpy_vector(fb, values, dtype) -> int:
    return fb.CreateNumpyVector(np.asarray(values, dtype).reshape(-1))


def _offsets(fb, start_vector, offsets) -> int:
    start_vector(fb, len(offsets))
    for offset in reversed(offsets):
        fb.PrependUOffsetTRelative(offset)
    return fb.EndVector()


# --------------------------------------------------------------------------------------
# The reference runner
# --------------------------------------------------------------------------------------

def _interpreter(model: bytes) -> Interpreter:
    interp = Interpreter(model_content=bytes(model), experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    interp.allocate_tensors()
    return interp


def run_reference(model: bytes, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run `model` with TFLite's reference kernels; inputs and outputs by tensor name.

    Input arrays must already have the input tensor's dtype (no silent float -> int8 casts).
    """
    return _run(_interpreter(model), inputs)


def _run(interp: Interpreter, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    details = {d["name"]: d for d in interp.get_input_details()}
    if set(inputs) != set(details):
        raise ValueError(f"model inputs are {sorted(details)}, got {sorted(inputs)}")
    for name, value in inputs.items():
        d = details[name]
        value = np.asarray(value)
        if value.dtype != d["dtype"]:
            raise TypeError(f"input {name!r} is {np.dtype(d['dtype']).name}, got {value.dtype.name}")
        interp.set_tensor(d["index"], value.reshape(d["shape"]))
    interp.invoke()
    return {d["name"]: interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()}


def quantize(x: np.ndarray, scale: float, zero_point: int, dtype=np.int8) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.clip(np.round(np.asarray(x, np.float64) / scale) + zero_point, info.min, info.max).astype(dtype)


def dequantize(q: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    return ((np.asarray(q, np.int64) - zero_point) * np.float64(scale)).astype(np.float32)


def run_reference_float(model: bytes, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """`run_reference` with float32 data: integer inputs are quantized and integer outputs
    dequantized with their tensor's (scale, zero_point)."""
    interp = _interpreter(model)
    feed = {}
    for d in interp.get_input_details():
        value = np.asarray(inputs[d["name"]], np.float32)
        if np.issubdtype(d["dtype"], np.integer):
            scale, zero_point = d["quantization"]
            value = quantize(value, scale, zero_point, d["dtype"])
        feed[d["name"]] = value
    outputs = _run(interp, feed)
    result = {}
    for d in interp.get_output_details():
        value = outputs[d["name"]]
        if np.issubdtype(value.dtype, np.integer) and d["quantization"][0] != 0:
            value = dequantize(value, *d["quantization"])
        result[d["name"]] = value.astype(np.float32)
    return result


def random_inputs(model: bytes, seed: int = 0, low: float = -1.0, high: float = 1.0,
                  as_float: bool = False) -> dict[str, np.ndarray]:
    """Uniform [low, high) data for every model input, in the input's own dtype (int8
    inputs get the quantized values) unless `as_float`, by tensor name."""
    rng = np.random.default_rng(seed)
    result = {}
    for d in _interpreter(model).get_input_details():
        value = rng.uniform(low, high, d["shape"]).astype(np.float32)
        if np.issubdtype(d["dtype"], np.integer) and not as_float:
            value = quantize(value, *d["quantization"], d["dtype"])
        result[d["name"]] = value
    return result


# --------------------------------------------------------------------------------------
# Model descriptions: one float graph, emitted as float32 or int8
# --------------------------------------------------------------------------------------

FIXED_OUTPUT_PARAMS = {
    "SOFTMAX": (1.0 / 256, -128),
    "LOGISTIC": (1.0 / 256, -128),
    "TANH": (1.0 / 128, 0),
}
# Ops whose int8 inputs and output share one (scale, zero_point).
SHARED_PARAMS_OPS = {
    "MAX_POOL_2D", "AVERAGE_POOL_2D", "RESHAPE", "SQUEEZE", "EXPAND_DIMS", "TRANSPOSE", "PAD",
    "CONCATENATION", "MAXIMUM", "MINIMUM",
}


@dataclass
class _NetOp:
    opcode: str
    inputs: list[str | None]
    output: str
    options: str | None
    fields: dict


@dataclass
class _Const:
    array: np.ndarray
    kind: str                   # "weight" | "bias" | "value" | "int"
    axis: int | None = None     # weights: per-channel axis, None for per-tensor
    of: tuple = ()              # biases: (input tensor, weight tensor)


@dataclass
class Net:
    """A float model description. Layer helpers return the output tensor's name."""

    seed: int = 0
    shapes: dict[str, list[int]] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)
    consts: dict[str, _Const] = field(default_factory=dict)
    ops: list[_NetOp] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)

    def __post_init__(self):
        self.rng = np.random.default_rng(self.seed)
        self._counts: dict[str, int] = {}

    # -- basics -------------------------------------------------------------------------

    def _name(self, base: str, name: str | None) -> str:
        auto = False
        while name is None or (auto and name in self.shapes):  # base_0, base_1, ... not yet taken
            auto = True
            self._counts[base] = self._counts.get(base, -1) + 1
            name = f"{base}_{self._counts[base]}"
        if name in self.shapes:
            raise ValueError(f"duplicate tensor name {name!r}")
        return name

    def input(self, name: str, shape) -> str:
        self.shapes[self._name("input", name)] = list(shape)
        self.inputs.append(name)
        return name

    def output(self, name: str) -> None:
        self.outputs.append(name)

    def const(self, base: str, array, kind: str = "value", **info) -> str:
        name = self._name(base, None)
        array = np.asarray(array, np.int32 if kind == "int" else np.float32)
        self.shapes[name] = list(array.shape)
        self.consts[name] = _Const(array, kind, **info)
        return name

    def op(self, opcode, inputs, shape, options=None, name=None, **fields) -> str:
        out = self._name(opcode.lower(), name)
        self.shapes[out] = [int(d) for d in shape]
        self.ops.append(_NetOp(opcode, list(inputs), out, options, fields))
        return out

    # -- layers -------------------------------------------------------------------------

    @staticmethod
    def _spatial(size, kernel, stride, padding):
        return -(-size // stride) if padding == "SAME" else (size - kernel) // stride + 1

    def _init(self, shape, fan_in, activation):
        """Normal weights, He-scaled (variance 2/fan_in) before a ReLU-like activation,
        LeCun-scaled (1/fan_in) before none, so activations stay O(1) through the net."""
        gain = 1.0 if activation == "NONE" else 2.0
        return self.rng.normal(0.0, np.sqrt(gain / fan_in), shape)

    def _bias(self, x, w, n):
        return self.const("bias", self.rng.uniform(-0.1, 0.1, n), "bias", of=(x, w))

    def conv2d(self, x, channels, kernel, stride=1, padding="SAME", activation="NONE", name=None):
        n, h, w_, c = self.shapes[x]
        w = self.const("filter", self._init([channels, kernel, kernel, c], kernel * kernel * c, activation),
                       "weight", axis=0)
        b = self._bias(x, w, channels)
        shape = [n, self._spatial(h, kernel, stride, padding), self._spatial(w_, kernel, stride, padding), channels]
        return self.op("CONV_2D", [x, w, b], shape, "Conv2DOptions", name, padding=padding, stride_w=stride,
                       stride_h=stride, fused_activation_function=activation)

    def depthwise_conv2d(self, x, kernel, stride=1, padding="SAME", activation="NONE", depth_multiplier=1,
                         name=None):
        n, h, w_, c = self.shapes[x]
        channels = c * depth_multiplier
        w = self.const("depthwise_filter", self._init([1, kernel, kernel, channels], kernel * kernel, activation),
                       "weight", axis=3)
        b = self._bias(x, w, channels)
        shape = [n, self._spatial(h, kernel, stride, padding), self._spatial(w_, kernel, stride, padding), channels]
        return self.op("DEPTHWISE_CONV_2D", [x, w, b], shape, "DepthwiseConv2DOptions", name, padding=padding,
                       stride_w=stride, stride_h=stride, depth_multiplier=depth_multiplier,
                       fused_activation_function=activation)

    def fully_connected(self, x, units, activation="NONE", name=None):
        batch, features = self.shapes[x]
        w = self.const("weights", self._init([units, features], features, activation), "weight")
        b = self._bias(x, w, units)
        return self.op("FULLY_CONNECTED", [x, w, b], [batch, units], "FullyConnectedOptions", name,
                       fused_activation_function=activation)

    def _binary(self, opcode, options, a, b, name, **fields):
        shape = np.broadcast_shapes(tuple(self.shapes[a]), tuple(self.shapes[b]))
        return self.op(opcode, [a, b], shape, options, name, **fields)

    def add(self, a, b, activation="NONE", name=None):
        return self._binary("ADD", "AddOptions", a, b, name, fused_activation_function=activation)

    def sub(self, a, b, activation="NONE", name=None):
        return self._binary("SUB", "SubOptions", a, b, name, fused_activation_function=activation)

    def mul(self, a, b, activation="NONE", name=None):
        return self._binary("MUL", "MulOptions", a, b, name, fused_activation_function=activation)

    def maximum(self, a, b, name=None):
        return self._binary("MAXIMUM", "MaximumMinimumOptions", a, b, name)

    def minimum(self, a, b, name=None):
        return self._binary("MINIMUM", "MaximumMinimumOptions", a, b, name)

    def _pool(self, opcode, x, size, stride, padding, name):
        n, h, w, c = self.shapes[x]
        shape = [n, self._spatial(h, size, stride, padding), self._spatial(w, size, stride, padding), c]
        return self.op(opcode, [x], shape, "Pool2DOptions", name, padding=padding, stride_w=stride,
                       stride_h=stride, filter_width=size, filter_height=size)

    def max_pool(self, x, size, stride, padding="VALID", name=None):
        return self._pool("MAX_POOL_2D", x, size, stride, padding, name)

    def avg_pool(self, x, size, stride, padding="VALID", name=None):
        return self._pool("AVERAGE_POOL_2D", x, size, stride, padding, name)

    def reshape(self, x, shape, name=None):
        shape = list(shape)
        if -1 in shape:
            known = int(np.prod([d for d in shape if d != -1]))
            shape[shape.index(-1)] = int(np.prod(self.shapes[x])) // known
        return self.op("RESHAPE", [x, self.const("shape", shape, "int")], shape, "ReshapeOptions", name,
                       new_shape=shape)

    def softmax(self, x, beta=1.0, name=None):
        return self.op("SOFTMAX", [x], self.shapes[x], "SoftmaxOptions", name, beta=beta)

    def mean(self, x, axes, keep_dims=False, name=None):
        shape = [1 if i in axes else d for i, d in enumerate(self.shapes[x]) if keep_dims or i not in axes]
        return self.op("MEAN", [x, self.const("axes", axes, "int")], shape, "ReducerOptions", name,
                       keep_dims=keep_dims)

    def pad(self, x, paddings, name=None):
        shape = [d + lo + hi for d, (lo, hi) in zip(self.shapes[x], paddings)]
        return self.op("PAD", [x, self.const("paddings", paddings, "int")], shape, "PadOptions", name)

    def concat(self, xs, axis, name=None):
        shape = list(self.shapes[xs[0]])
        shape[axis] = sum(self.shapes[x][axis] for x in xs)
        return self.op("CONCATENATION", xs, shape, "ConcatenationOptions", name, axis=axis,
                       fused_activation_function="NONE")

    def transpose(self, x, perm, name=None):
        shape = [self.shapes[x][p] for p in perm]
        return self.op("TRANSPOSE", [x, self.const("perm", perm, "int")], shape, "TransposeOptions", name)

    def squeeze(self, x, dims, name=None):
        shape = [d for i, d in enumerate(self.shapes[x]) if i not in dims]
        return self.op("SQUEEZE", [x], shape, "SqueezeOptions", name, squeeze_dims=dims)

    def expand_dims(self, x, axis, name=None):
        shape = list(self.shapes[x])
        shape.insert(axis, 1)
        return self.op("EXPAND_DIMS", [x, self.const("axis", [axis], "int")], shape, "ExpandDimsOptions", name)

    def unary(self, opcode, x, options=None, name=None, **fields):
        """LOGISTIC, TANH, RELU, RELU6, LEAKY_RELU (LeakyReluOptions, alpha), HARD_SWISH, ..."""
        return self.op(opcode, [x], self.shapes[x], options, name, **fields)

    # -- data ---------------------------------------------------------------------------

    def sample_inputs(self, rng, low=-1.0, high=1.0) -> dict[str, np.ndarray]:
        return {name: rng.uniform(low, high, self.shapes[name]).astype(np.float32) for name in self.inputs}


def _activation_inputs(net: Net, op: _NetOp) -> list[str]:
    return [t for t in op.inputs if t is not None and t not in net.consts]


def _params_from_range(lo: float, hi: float) -> tuple[float, int]:
    """Asymmetric int8 (scale, zero_point) of the range [lo, hi], widened to include 0."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if hi - lo < 1e-8:
        hi = lo + 1e-8
    scale = float(np.float32((hi - lo) / 255.0))
    zero_point = int(np.clip(np.round(-128 - lo / scale), -128, 127))
    return scale, zero_point


def _weight_scales(w: np.ndarray, axis: int | None) -> np.ndarray:
    """Symmetric int8 scales: max |w| / 127, per channel along `axis` or per tensor."""
    if axis is None:
        amax = np.abs(w).max(keepdims=True).reshape(1)
    else:
        amax = np.abs(np.moveaxis(w, axis, 0)).reshape(w.shape[axis], -1).max(axis=1)
    return (np.maximum(amax, 1e-8) / 127.0).astype(np.float32)


def calibrate(net: Net, samples: int = 256) -> dict[str, tuple[float, int]]:
    """Int8 (scale, zero_point) of every activation and float value constant of `net`.

    Runs the float model (every op output made a graph output) on `samples` random
    inputs; shared-parameter ops merge their tensors' ranges, fixed-output ops win.
    """
    observe = _interpreter(emit(net, "float", observe_all=True))
    rng = np.random.default_rng(net.seed + 1_000_003)
    ranges: dict[str, list[float]] = {}
    for _ in range(samples):
        inputs = net.sample_inputs(rng)
        for name, value in {**inputs, **_run(observe, inputs)}.items():
            lo, hi = ranges.get(name, (np.inf, -np.inf))
            ranges[name] = [min(lo, float(value.min())), max(hi, float(value.max()))]

    # Union-find over the tensors that must share parameters.
    parent = {name: name for name in ranges}

    def root(t):
        while parent[t] != t:
            t = parent[t]
        return t

    fixed = {}
    for op in net.ops:
        if op.opcode in SHARED_PARAMS_OPS:
            for t in _activation_inputs(net, op):
                parent[root(t)] = root(op.output)
        if op.opcode in FIXED_OUTPUT_PARAMS:
            fixed[op.output] = FIXED_OUTPUT_PARAMS[op.opcode]

    groups: dict[str, list[str]] = {}
    for name in ranges:
        groups.setdefault(root(name), []).append(name)
    params = {}
    for members in groups.values():
        pinned = {fixed[m] for m in members if m in fixed}
        if len(pinned) > 1:
            raise ValueError(f"tensors {members} must share int8 parameters but have fixed {pinned}")
        if pinned:
            group_params = pinned.pop()
        else:
            group_params = _params_from_range(min(ranges[m][0] for m in members), max(ranges[m][1] for m in members))
        params.update({m: group_params for m in members})
    for name, c in net.consts.items():
        if c.kind == "value":
            params[name] = _params_from_range(c.array.min(), c.array.max())
    return params


def _emit_const(b: ModelBuilder, net: Net, name: str, params, weight_scales) -> int:
    c = net.consts[name]
    if c.kind == "int" or params is None:
        return b.constant(name, c.array)
    if c.kind == "weight":
        scales = _weight_scales(c.array, c.axis)
        weight_scales[name] = scales
        shape = [1] * c.array.ndim
        if c.axis is not None:
            shape[c.axis] = -1
        q = np.clip(np.round(c.array / scales.reshape(shape)), -127, 127).astype(np.int8)
        quant = (scales, np.zeros(scales.shape, np.int64), c.axis) if c.axis is not None else (scales[0], 0)
        return b.constant(name, q, quant)
    if c.kind == "bias":
        x, w = c.of
        scales = (np.float64(params[x][0]) * weight_scales[w].astype(np.float64)).astype(np.float32)
        q = np.round(c.array / np.broadcast_to(scales, c.array.shape).astype(np.float64)).astype(np.int32)
        quant = (scales, np.zeros(scales.shape, np.int64), 0) if scales.size > 1 else (scales[0], 0)
        return b.constant(name, q, quant)
    return b.constant(name, quantize(c.array, *params[name]), params[name])  # "value"


def emit(net: Net, mode: str = "float", params=None, observe_all: bool = False) -> bytes:
    """The flatbuffer of `net`: mode "float", "int8", or "int8_float_io" (float32 graph
    inputs and outputs, QUANTIZE after each input and DEQUANTIZE before each output).
    `observe_all` (float only) also makes every op output a graph output."""
    if mode not in ("float", "int8", "int8_float_io"):
        raise ValueError(f"unknown mode {mode!r}")
    quantized = mode != "float"
    if quantized and params is None:
        params = calibrate(net)
    b = ModelBuilder()
    index: dict[str, int] = {}
    weight_scales: dict[str, np.ndarray] = {}

    def activation(name, shape, params_of):
        if quantized:
            return b.tensor(name, shape, "int8", params[params_of])
        return b.tensor(name, shape)

    for name in net.inputs:
        shape = net.shapes[name]
        if mode == "int8_float_io":
            f = b.input(name, shape)
            index[name] = b.tensor(f"{name}_int8", shape, "int8", params[name])
            b.op("QUANTIZE", [f], [index[name]], "QuantizeOptions")
        else:
            index[name] = b.input(name, shape, "int8", params[name]) if quantized else b.input(name, shape)

    for op in net.ops:
        inputs = []
        for t in op.inputs:
            if t is None:
                inputs.append(-1)
                continue
            if t not in index:
                index[t] = _emit_const(b, net, t, params if quantized else None, weight_scales)
            inputs.append(index[t])
        out_name = f"{op.output}_int8" if mode == "int8_float_io" and op.output in net.outputs else op.output
        index[op.output] = activation(out_name, net.shapes[op.output], op.output)
        b.op(op.opcode, inputs, [index[op.output]], op.options, **op.fields)

    for name in net.outputs:
        if mode == "int8_float_io":
            f = b.tensor(name, net.shapes[name])
            b.op("DEQUANTIZE", [index[name]], [f], "DequantizeOptions")
            b.output(f)
        else:
            b.output(index[name])
    if observe_all:
        for op in net.ops:
            if op.output not in net.outputs:
                b.output(index[op.output])
    return b.finish()


def build(net: Net, quantized: bool = False, float_io: bool = False) -> bytes:
    """`net` as a float32 model, an int8 model, or (float_io) int8 with float32 I/O."""
    if not quantized:
        return emit(net, "float")
    return emit(net, "int8_float_io" if float_io else "int8")


# --------------------------------------------------------------------------------------
# The models
# --------------------------------------------------------------------------------------

def conv_net_description(seed: int = 0) -> Net:
    net = Net(seed)
    x = net.input("input", [1, 16, 16, 3])
    x = net.conv2d(x, 8, 3, 1, "SAME", "RELU")
    dw = net.depthwise_conv2d(x, 3, 2, "SAME", "RELU6")             # [1, 8, 8, 8]
    main = net.conv2d(dw, 16, 1, 1, "VALID")
    branch = net.conv2d(dw, 16, 1, 1, "VALID")
    x = net.add(main, branch)
    x = net.max_pool(x, 2, 2, "VALID")                              # [1, 4, 4, 16]
    x = net.avg_pool(x, 3, 1, "SAME")
    x = net.reshape(x, [1, -1])                                     # [1, 256]
    x = net.fully_connected(x, 10)
    net.output(net.softmax(x, 1.0, name="output"))
    return net


def mobilenet_block_description(seed: int = 0) -> Net:
    net = Net(seed)
    x = net.input("input", [1, 16, 16, 8])
    x = net.pad(x, [[0, 0], [0, 1], [0, 1], [0, 0]])                # [1, 17, 17, 8]
    x = net.depthwise_conv2d(x, 3, 2, "VALID", depth_multiplier=2)  # [1, 8, 8, 16]
    x = net.conv2d(x, 32, 1, 1, "VALID", "RELU6")
    x = net.mean(x, [1, 2], keep_dims=False)                        # [1, 32]
    x = net.fully_connected(x, 10)
    net.output(net.softmax(x, 1.0, name="output"))
    return net


# Ops of elementwise_net left out of its int8 form because the reference kernels refuse them.
ELEMENTWISE_INT8_SKIPPED: tuple[str, ...] = ()


def elementwise_net_description(seed: int = 0) -> Net:
    """Two outputs: "output" [1, 8, 4, 6] (activations, MAXIMUM/MINIMUM, concatenation,
    transpose, squeeze/expand) and "gate" [1, 4, 6, 4] (LOGISTIC(.) * TANH(.))."""
    net = Net(seed)
    x = net.input("input", [1, 4, 6, 4])
    scaled = net.mul(x, net.const("channel_scale", net.rng.uniform(1.0, 4.0, [4])))  # per-channel broadcast
    hs = net.unary("HARD_SWISH", x, "HardSwishOptions")
    diff = net.sub(scaled, hs)
    relu = net.unary("RELU", diff)
    leaky = net.unary("LEAKY_RELU", diff, "LeakyReluOptions", alpha=0.2)
    relu6 = net.unary("RELU6", scaled)
    high = net.maximum(relu, leaky)
    low = net.minimum(relu6, hs)
    x = net.concat([high, low], axis=3)                              # [1, 4, 6, 8]
    x = net.transpose(x, [0, 3, 1, 2])                               # [1, 8, 4, 6]
    x = net.squeeze(x, [0])                                          # [8, 4, 6]
    net.output(net.expand_dims(x, 0, name="output"))                 # [1, 8, 4, 6]
    gate = net.mul(net.unary("LOGISTIC", diff), net.unary("TANH", scaled), name="gate")
    net.output(gate)
    return net


def lenet_description(seed: int = 0) -> Net:
    net = Net(seed)
    x = net.input("input", [1, 28, 28, 1])
    x = net.conv2d(x, 20, 5, 1, "VALID")                            # [1, 24, 24, 20]
    x = net.max_pool(x, 2, 2)                                        # [1, 12, 12, 20]
    x = net.conv2d(x, 50, 5, 1, "VALID")                            # [1, 8, 8, 50]
    x = net.max_pool(x, 2, 2)                                        # [1, 4, 4, 50]
    x = net.reshape(x, [1, -1])                                     # [1, 800]
    x = net.fully_connected(x, 500, "RELU")
    x = net.fully_connected(x, 10)
    net.output(net.softmax(x, 1.0, name="output"))
    return net


def resnet8_description(seed: int = 0, size: int = 32) -> Net:
    """MLPerf Tiny's image classification architecture (ResNet-8 on CIFAR-10: a 16-channel stem,
    three residual stacks of 16, 32 and 64 channels, the last two strided with a 1x1 shortcut,
    an 8x8 average pool and a 10-way classifier), random weights, on `size` x `size` images: the
    reference model's layers and weights (77,360 int8 filter levels) on fewer pixels."""
    net = Net(seed)
    x = net.conv2d(net.input("input", [1, size, size, 3]), 16, 3, 1, "SAME", "RELU")
    for channels, stride in ((16, 1), (32, 2), (64, 2)):
        y = net.conv2d(x, channels, 3, stride, "SAME", "RELU")
        y = net.conv2d(y, channels, 3, 1, "SAME")
        shortcut = x if stride == 1 else net.conv2d(x, channels, 1, stride, "VALID")
        x = net.add(y, shortcut, "RELU")
    x = net.reshape(net.avg_pool(x, size // 4, size // 4), [1, 64])
    net.output(net.softmax(net.fully_connected(x, 10), 1.0, name="output"))
    return net


def ds_cnn_description(seed: int = 0) -> Net:
    """MLPerf Tiny's keyword spotting architecture (DS-CNN: a 64-channel strided stem on 49 x 10
    MFCC features, four depthwise-separable blocks of 64 channels, a global average and a
    12-way classifier), random weights; the stem 4x4 where the reference's is 10x4."""
    net = Net(seed)
    x = net.conv2d(net.input("input", [1, 49, 10, 1]), 64, 4, 2, "SAME", "RELU")
    for _ in range(4):
        x = net.depthwise_conv2d(x, 3, 1, "SAME", "RELU")
        x = net.conv2d(x, 64, 1, 1, "VALID", "RELU")
    x = net.mean(x, [1, 2], keep_dims=False)
    net.output(net.softmax(net.fully_connected(x, 12), 1.0, name="output"))
    return net


def conv_net(quantized: bool = False, seed: int = 0, float_io: bool = False) -> bytes:
    """[1,16,16,3] -> conv/depthwise/residual add/pools/reshape/FC -> softmax [1,10] "output"."""
    return build(conv_net_description(seed), quantized, float_io)


def mobilenet_block(quantized: bool = False, seed: int = 0, float_io: bool = False) -> bytes:
    """[1,16,16,8] -> PAD, depthwise x2 stride 2, 1x1 conv RELU6, MEAN, FC -> softmax [1,10]."""
    return build(mobilenet_block_description(seed), quantized, float_io)


def elementwise_net(quantized: bool = False, seed: int = 0, float_io: bool = False) -> bytes:
    """[1,4,6,4] -> elementwise ops; outputs "output" [1,8,4,6] and "gate" [1,4,6,4]."""
    return build(elementwise_net_description(seed), quantized, float_io)


def lenet(quantized: bool = False, seed: int = 0, float_io: bool = False) -> bytes:
    """LeNet-5 on [1,28,28,1] -> softmax [1,10] "output"."""
    return build(lenet_description(seed), quantized, float_io)


def float_io_net(seed: int = 0) -> bytes:
    """The int8 conv_net with float32 I/O: QUANTIZE -> int8 body -> DEQUANTIZE."""
    return conv_net(True, seed, float_io=True)


# name -> (description, output shapes) of every model; constructors above are build() of these.
MODELS = {
    "conv_net": (conv_net_description, {"output": [1, 10]}),
    "mobilenet_block": (mobilenet_block_description, {"output": [1, 10]}),
    "elementwise_net": (elementwise_net_description, {"output": [1, 8, 4, 6], "gate": [1, 4, 6, 4]}),
    "lenet": (lenet_description, {"output": [1, 10]}),
}
