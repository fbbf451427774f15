"""TFLite importer: a `.tflite` flatbuffer becomes a `glow.function` (Glow's TFLiteModelLoader).

The file is read with the `tflite` package (the generated flatbuffer accessors of TFLite's
schema). Float models import as float graphs. Int8 models keep the file's own quantization:
every tensor's scale and zero point become its `!quant.uniform` element type, so no profile
is needed, and ops with integer kernels (Conv2D, DepthwiseConv2D, FullyConnected with a
per-tensor filter, the pools, Add, Mul, the ReLUs, Concatenation, Softmax, and the data
movement ops) are built quantized. Any other op runs in float between a `glow.dequantize`
of its inputs and a `glow.quantize` of its outputs. UINT8 tensors become INT8 ones with
the zero point moved by -128 (Glow's default `-tflite-uint8-to-int8`).

TFLite is NHWC; Glow's Convolution and pools are NCHW. Each becomes its NCHW form between a
transpose in and a transpose out, and the importer remembers the NCHW value behind every
transposed one, so a chain of convolutions, pools, pads, activations and concatenations
transposes only at its ends (Glow's loader leaves that to its graph optimizer).

Resource variables (a streaming model's state: VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE,
with CALL_ONCE running an initialisation subgraph) become `glow.state`: a variable read
before the call assigns it is the state the call starts from, initialised with the value
the CALL_ONCE subgraph assigns it (a constant); its last value assigned is stored for the
next call (`glow.state_store`).

Quantized graph inputs and outputs stay quantized (the header gives their scale and
offset) unless `-tflite-float-inputs` / `-tflite-float-outputs` ask for float ones.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import tflite
from xdsl.dialects.builtin import Attribute, ModuleOp, StringAttr, f32, i8, i32, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from glowmlir.dialects import glow
from glowmlir.dialects.quant import STORAGE_TYPES, UniformQuantizedType, finer_levels, is_quantized
from glowmlir.dialects.weights import dense_from_array
from glowmlir.errors import GlowError
from glowmlir.importers.onnx import check_input_shape, keep_model_names, verified, verify_imported
from glowmlir.importers.tflite_hybrid import quantized_like_hybrid_kernels
from glowmlir.importers.tflite_sparsity import densified
from glowmlir.names import UniqueNames
from glowmlir.quantization.params import dequantize_as
from glowmlir.quantization.rescaling import FINER_LEVEL_BITS, RESAMPLE_FRACTION_BITS, bias_scales, quantize_level


def quantized_element(element: Attribute) -> bool:
    return isinstance(element, UniformQuantizedType)


OPERATOR_NAMES = {value: name for name, value in vars(tflite.BuiltinOperator).items() if name.isupper()}
TENSOR_TYPES = {value: name for name, value in vars(tflite.TensorType).items() if name.isupper()}
_NUMPY_TYPES = {"FLOAT32": np.float32, "FLOAT16": np.float16, "INT32": np.int32, "UINT8": np.uint8,
                "INT64": np.int64, "INT8": np.int8, "INT16": np.int16, "BOOL": np.bool_, "INT4": np.int8}
"""The numpy type a tensor's elements are read as (INT4: two to a byte, widened to int8 levels)."""

TO_NCHW, TO_NHWC = (0, 3, 1, 2), (0, 2, 3, 1)
NHWC_AXIS_IN_NCHW = (0, 2, 3, 1)
"""Where each NHWC dimension sits in the NCHW form."""

FUSED_ACTIVATIONS = {0: None, 1: ("relu", 0.0, None), 2: ("clip", -1.0, 1.0), 3: ("clip", 0.0, 6.0)}
"""TFLite's ActivationFunctionType: NONE, RELU, RELU_N1_TO_1, RELU6 (TANH and SIGN_BIT are not supported)."""


# ----------------------------------------------------------------------------- tensors


@dataclass
class TensorInfo:
    """One TFLite tensor: its shape, element type (f32 or quantized) and, for a constant, its data."""

    index: int
    name: str
    shape: tuple[int, ...]
    type_name: str
    element: Attribute
    data: np.ndarray | None

    @property
    def quantized(self) -> bool:
        return quantized_element(self.element)

    def float_data(self) -> np.ndarray:
        """A constant's real values (dequantized if it is quantized)."""
        return dequantize_as(self.data, self.element) if self.quantized else self.data.astype(np.float32)

    def as_float(self) -> TensorInfo:
        """This constant as f32 real values."""
        return replace(self, data=self.float_data(), element=f32)


def _element_type(tensor, type_name: str, where: str) -> Attribute:
    quantization = tensor.Quantization()
    scales = quantization.ScaleAsNumpy() if quantization is not None and quantization.ScaleLength() else None
    if scales is None:
        return f32 if type_name in ("FLOAT32", "FLOAT16") else {"INT32": i32, "INT64": i64}.get(type_name, i8)
    if type_name not in ("INT8", "UINT8", "INT32", "INT4"):
        raise GlowError(f"{where}: quantized type {type_name} is not supported (INT8, INT4 and UINT8, and INT32 "
                        f"biases)")
    offsets = (quantization.ZeroPointAsNumpy() if quantization.ZeroPointLength() else np.zeros_like(scales)).astype(int)
    if type_name == "UINT8":
        offsets = offsets - 128
    storage = i32 if type_name == "INT32" else i8
    try:
        if len(scales) == 1:
            return UniformQuantizedType(storage, float(scales[0]), int(offsets[0]))
        return UniformQuantizedType(storage, [float(s) for s in scales], [int(o) for o in offsets],
                                    quantization.QuantizedDimension())
    except VerifyException as error:  # the type's own rules: positive scales, offsets in range
        raise GlowError(f"{where}: {error}") from None


def _tensor_data(model, raw: bytes, tensor, type_name: str, shape: tuple[int, ...]) -> np.ndarray | None:
    buffer = model.Buffers(tensor.Buffer())
    if buffer is None:
        return None
    if buffer.Offset() > 1:  # a model over 2 GB keeps its data after the flatbuffer
        if buffer.Offset() + buffer.Size() > len(raw):
            raise ValueError(f"its data ({buffer.Size()} bytes at {buffer.Offset()}) lies past the file's end")
        data = np.frombuffer(raw, np.uint8, buffer.Size(), buffer.Offset())
    elif buffer.DataLength():
        data = buffer.DataAsNumpy()
    else:
        return None
    if type_name == "INT4":
        if tensor.Sparsity() is not None:
            raise ValueError("sparse INT4 data is not supported")
        array = _unpacked_int4(data, int(np.prod(shape)))
    else:
        itemsize = np.dtype(_NUMPY_TYPES[type_name]).itemsize
        if data.size % itemsize:
            raise ValueError(f"{data.size} bytes of data are not a whole number of {type_name} elements")
        array = np.frombuffer(data.tobytes(), _NUMPY_TYPES[type_name])
    if tensor.Sparsity() is not None:  # sparse weights (read by a DENSIFY): made dense here
        array = densified(array, shape, tensor.Sparsity())
    elif array.size != int(np.prod(shape)):
        raise ValueError(f"{array.size} elements of data for the shape {list(shape)}")
    array = array.reshape(shape)
    if type_name == "UINT8":
        return (array.astype(np.int16) - 128).astype(np.int8)
    return array.astype(np.float32) if type_name == "FLOAT16" else array


def _unpacked_int4(data: np.ndarray, count: int) -> np.ndarray:
    """INT4 data as int8 levels in [-8, 7]: two to a byte, the first in the low nibble
    (TFLite's `UnpackDenseInt4IntoInt8`)."""
    if data.size != (count + 1) // 2:
        raise ValueError(f"{data.size} bytes of data are not {count} INT4 elements (two to a byte)")
    nibbles = np.stack([data & 0xF, data >> 4], axis=-1).reshape(-1)[:count].astype(np.int8)
    return np.where(nibbles > 7, nibbles - 16, nibbles).astype(np.int8)


def load_tflite_model(path: str):
    """The flatbuffer's root `Model` and the file's bytes; errors name the file."""
    if not os.path.isfile(path):
        raise GlowError(f"-model: file \"{path}\" not found")
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8 or raw[4:8] != b"TFL3":
        raise GlowError(f"-model: \"{path}\" is not a TFLite model (no TFL3 identifier)")
    try:
        model = tflite.Model.GetRootAsModel(raw, 0)
        if model.SubgraphsLength() < 1:
            raise ValueError("no subgraph")
    except Exception as error:  # a damaged flatbuffer raises several unrelated types
        raise GlowError(f"-model: \"{path}\" is not a readable TFLite model ({type(error).__name__})") from None
    return model, raw


# ----------------------------------------------------------------------------- the importer

OperatorImporter = Callable[["TFLiteImporter", object], list[SSAValue]]


@dataclass(frozen=True)
class OperatorRule:
    build: OperatorImporter
    int8: Callable[["TFLiteImporter", object], bool] | bool  # whether it runs quantized when its tensors are


_OPERATORS: dict[str, OperatorRule] = {}


def operator(*names: str, int8: Callable | bool = False):
    """Registers the function that imports TFLite operators `names`; `int8` says when a
    quantized operator keeps integer types (else it runs in float between conversions)."""

    def register(build: OperatorImporter) -> OperatorImporter:
        for name in names:
            _OPERATORS[name] = OperatorRule(build, int8)
        return build

    return register


VARIABLE_OPERATORS = ("VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "CALL_ONCE")
"""The resource-variable operators (`TFLiteImporter.import_variable_operator`)."""


@dataclass
class Variable:
    """A resource variable, known by its VAR_HANDLE's (container, shared name)."""

    name: str
    initial: TensorInfo | None = None  # the constant the CALL_ONCE subgraph assigns it
    state: SSAValue | None = None  # its `glow.state`: the value the call starts with, when the call reads it
    value: SSAValue | None = None  # its value at this point of the call (None: not read nor assigned yet)
    assigned: TensorInfo | None = None  # the tensor last assigned to it in this call


class TFLiteImporter:
    """Walks the main subgraph's operators in order, building one `glow.function`."""

    def __init__(self, model, raw: bytes, path: str, float_inputs: bool, float_outputs: bool,
                 hybrid_inputs: str = "float"):
        self.model, self.path, self.raw = model, path, raw
        self.hybrid_inputs = hybrid_inputs  # "quantized": hybrid layers' inputs as TFLite's kernels quantize them
        self.hybrid_scalars: dict = {}  # the constants of that quantization, shared by the layers
        self.graph = model.Subgraphs(0)
        self.float_inputs, self.float_outputs = float_inputs, float_outputs
        self.tensors = [self._tensor_info(raw, self.graph, i) for i in range(self.graph.TensorsLength())]
        self.variables: dict[tuple[str, str], Variable] = {}
        self.handles: dict[int, Variable] = {}  # a main-subgraph RESOURCE tensor's variable
        self.block = Block()
        self.names = UniqueNames()
        self.values: dict[int, SSAValue] = {}
        self.nchw_of: dict[SSAValue, SSAValue] = {}
        self.dequantized: dict[SSAValue, SSAValue] = {}
        self.op = None
        self.op_index = -1
        self.in_float = False  # importing a quantized operator in float
        self.io_names: dict[str, str] = {}  # graph inputs' and outputs' names: the model's -> the bundle's

    def _tensor_info(self, raw: bytes, graph, index: int) -> TensorInfo:
        tensor = graph.Tensors(index)
        name = tensor.Name().decode() if tensor.Name() else f"tensor_{index}"
        type_name = TENSOR_TYPES.get(tensor.Type(), str(tensor.Type()))
        shape = tuple(int(d) for d in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ()
        if type_name == "RESOURCE":  # a resource variable's handle: no data of its own
            return TensorInfo(index, name, shape, type_name, i32, None)
        if type_name not in _NUMPY_TYPES:
            raise GlowError(f"\"{self.path}\": tensor \"{name}\" has the unsupported type {type_name}")
        element = _element_type(tensor, type_name, f"tensor \"{name}\"")
        if quantized_element(element) and element.per_channel and (
                element.axis.data >= len(shape) or len(element.scale_array()) != shape[element.axis.data]):
            raise GlowError(f"\"{self.path}\": tensor \"{name}\" has {len(element.scale_array())} scales on "
                            f"dimension {element.axis.data} of its shape {list(shape)}")
        try:
            data = _tensor_data(self.model, raw, tensor, type_name, shape)
        except ValueError as error:
            raise GlowError(f"\"{self.path}\": tensor \"{name}\": {error}") from None
        return TensorInfo(index, name, shape, type_name, element, data)

    def tensor(self, index: int) -> TensorInfo:
        """The tensor at `index` of the subgraph (an index past its tensors: a damaged file)."""
        if not 0 <= index < len(self.tensors):
            raise GlowError(f"\"{self.path}\" is damaged: tensor index {index} is out of range "
                            f"(the subgraph has {len(self.tensors)})")
        return self.tensors[index]

    # ----------------------------------------------------------------- building

    def add(self, op: Operation) -> SSAValue:
        self.block.add_op(verified(op, self.error))
        return op.results[0] if op.results else None

    def error(self, message: str) -> GlowError:
        name = self.operator_name(self.op) if self.op is not None else ""
        output = self.tensor(self.op.Outputs(0)).name if self.op is not None and self.op.OutputsLength() else ""
        return GlowError(f"TFLite operator {self.op_index} ({name}, output \"{output}\"): {message}")

    def info(self, position: int) -> TensorInfo | None:
        """The operator's input at `position` (None: an omitted optional input)."""
        if position >= self.op.InputsLength() or self.op.Inputs(position) < 0:
            return None
        return self.tensor(self.op.Inputs(position))

    def output_info(self, position: int = 0) -> TensorInfo:
        return self.tensor(self.op.Outputs(position))

    def constant_data(self, position: int, what: str) -> np.ndarray:
        """A compile-time input: its values (real values when quantized)."""
        info = self.info(position)
        if info is None or info.data is None:
            raise self.error(f"the {what} must be a constant")
        return info.float_data() if info.quantized else info.data

    def constant_value(self, info: TensorInfo) -> SSAValue:
        """A `glow.constant` of a constant tensor in its element type (its real values when
        the operator runs in float)."""
        if self.in_float and info.quantized:
            info = info.as_float()
        if not info.quantized and info.element != f32:
            raise self.error(f"tensor \"{info.name}\" of type {info.type_name} is used in float computation")
        data = info.data if info.quantized else info.data.astype(np.float32)
        return self.add(glow.ConstantOp(self.names(info.name), dense_from_array(data),
                                        result_element=info.element if info.quantized else None))

    def input(self, position: int) -> SSAValue:
        """The value of an operator input, dequantized when the operator runs in float."""
        info = self.info(position)
        if info is None:
            raise self.error(f"input {position} is missing")
        if info.index not in self.values:
            if info.data is None:
                raise self.error(f"input \"{info.name}\" is neither computed before nor a constant")
            self.values[info.index] = self.constant_value(info)
        value = self.values[info.index]
        if self.in_float and is_quantized(value.type):
            return self.dequantize(value)
        return value

    def dequantize(self, value: SSAValue) -> SSAValue:
        if value not in self.dequantized:
            self.dequantized[value] = self.add(glow.DequantizeOp(value))
            if value in self.nchw_of:
                self.nchw_of[self.dequantized[value]] = self.dequantize(self.nchw_of[value])
        return self.dequantized[value]

    def output_element(self, position: int = 0) -> Attribute:
        return f32 if self.in_float else self.output_info(position).element

    def converted(self, value: SSAValue, element: Attribute) -> SSAValue:
        """`value` in `element`: unchanged, rescaled, quantized or dequantized."""
        if value.type.element_type == element:
            return value
        if not quantized_element(element):
            return self.dequantize(value)
        conversion = glow.RescaleQuantizedOp if is_quantized(value.type) else glow.QuantizeOp
        result = self.add(conversion(value, element))
        if value in self.nchw_of:
            self.nchw_of[result] = self.converted(self.nchw_of[value], element)
        return result

    # ----------------------------------------------------------------- layout

    def nchw(self, value: SSAValue) -> SSAValue:
        """The NCHW form of a 4-D NHWC value (the one it was transposed from, if any)."""
        if value not in self.nchw_of:
            self.nchw_of[value] = self.add(glow.transpose(value, TO_NCHW))
        return self.nchw_of[value]

    def from_nchw(self, value: SSAValue) -> SSAValue:
        """The NHWC form of an NCHW result (remembering where it came from)."""
        nhwc = self.add(glow.transpose(value, TO_NHWC))
        self.nchw_of[nhwc] = value
        return nhwc

    def has_nchw(self, value: SSAValue) -> bool:
        return value in self.nchw_of

    # ----------------------------------------------------------------- the walk

    def operator_name(self, op) -> str:
        code = self.model.OperatorCodes(op.OpcodeIndex())
        number = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if number == tflite.BuiltinOperator.CUSTOM:
            return f"CUSTOM:{code.CustomCode().decode() if code.CustomCode() else '?'}"
        return OPERATOR_NAMES.get(number, str(number))

    def run(self, network: str, model_inputs: Sequence) -> ModuleOp:
        graph = self.graph
        inputs = [self.tensor(graph.Inputs(i)) for i in range(graph.InputsLength())]
        outputs = [self.tensor(graph.Outputs(i)) for i in range(graph.OutputsLength())]
        if not outputs:
            raise GlowError(f"\"{self.path}\": the main subgraph has no outputs")
        _check_model_inputs(inputs, model_inputs)
        output_names = {info.index: self.names(info.name) for info in outputs}
        self.io_names.update({info.name: output_names[info.index] for info in outputs})
        for info in inputs:
            self.values[info.index] = self.placeholder(info)
        folded = self.fold_constant_operators()
        for index in range(graph.OperatorsLength()):
            if index in folded:
                continue
            self.op, self.op_index = graph.Operators(index), index
            if self.operator_name(self.op) in VARIABLE_OPERATORS:
                self.import_variable_operator()
            else:
                self.import_operator()
        self.op = None
        self.store_variables()
        for info in outputs:
            if info.index not in self.values and info.data is not None:  # a folded constant
                self.values[info.index] = self.constant_value(info)
            if info.index not in self.values:
                raise GlowError(f"\"{self.path}\": output \"{info.name}\" is not computed by any operator")
            value = self.values[info.index]
            if self.float_outputs and is_quantized(value.type):
                value = self.dequantize(value)
            self.add(glow.SaveOp(value, output_names[info.index]))
        keep_model_names(self.block, self.io_names)
        return ModuleOp([glow.FunctionOp(network, Region(self.block))])

    # ----------------------------------------------------------------- resource variables

    def variable(self, op) -> Variable:
        """The variable a VAR_HANDLE (`op`) names, by its container and shared name."""
        table = op.BuiltinOptions()
        options = tflite.VarHandleOptions()
        if table is not None:
            options.Init(table.Bytes, table.Pos)
        container = options.Container().decode() if table is not None and options.Container() else ""
        shared = options.SharedName().decode() if table is not None and options.SharedName() else ""
        if not shared:
            raise self.error("a VAR_HANDLE needs a shared_name (the variable it names)")
        return self.variables.setdefault((container, shared), Variable(shared))

    def handle(self, position: int) -> Variable:
        """The variable of the operator's RESOURCE input at `position` (its VAR_HANDLE's)."""
        info = self.info(position)
        if info is None or info.index not in self.handles:
            raise self.error(f"input {position} is not a RESOURCE tensor a VAR_HANDLE made")
        return self.handles[info.index]

    def import_variable_operator(self) -> None:
        """VAR_HANDLE names a variable; READ_VARIABLE gives its value (the `glow.state` the call
        starts from, if the call has not assigned it yet); ASSIGN_VARIABLE gives it a value;
        CALL_ONCE runs an initialisation subgraph, which gives variables their initial values."""
        name = self.operator_name(self.op)
        if name == "VAR_HANDLE":
            output = self.output_info() if self.op.OutputsLength() == 1 else None
            if output is None or output.type_name != "RESOURCE":
                raise self.error("a VAR_HANDLE gives one RESOURCE tensor")
            self.handles[output.index] = self.variable(self.op)
        elif name == "CALL_ONCE":
            table = self.op.BuiltinOptions()
            if table is None:
                raise self.error("missing CallOnceOptions")
            options = tflite.CallOnceOptions()
            options.Init(table.Bytes, table.Pos)
            self.initialize_variables(options.InitSubgraphIndex())
        elif name == "READ_VARIABLE":
            variable, output = self.handle(0), self.output_info()
            if variable.value is None:
                if variable.initial is None:
                    raise self.error(f"variable \"{variable.name}\" is read before any value is given to it "
                                     f"(no CALL_ONCE initialises it)")
                variable.state = variable.value = self.state(variable)
            self._check_variable_type(variable, output, "read as")
            self.values[output.index] = variable.value
        else:  # ASSIGN_VARIABLE
            variable, value = self.handle(0), self.info(1)
            if value is None:
                raise self.error("input 1 (the value) is missing")
            self._check_variable_type(variable, value, "assigned")
            variable.value, variable.assigned = self.input(1), value

    def _check_variable_type(self, variable: Variable, info: TensorInfo, how: str) -> None:
        """TFLite copies a variable's bytes as they are: a value read or assigned must be of
        its type and shape (another quantization would reinterpret the levels)."""
        known = variable.initial or variable.assigned
        if known is not None and (known.element, known.shape) != (info.element, info.shape):
            raise self.error(f"variable \"{variable.name}\" holds {known.type_name} {list(known.shape)} "
                             f"{known.element}; tensor \"{info.name}\" {how} it is {info.type_name} "
                             f"{list(info.shape)} {info.element}")
        if info.element != f32 and not info.quantized:
            raise self.error(f"variable \"{variable.name}\" of type {info.type_name}: only float and quantized "
                             f"variables are supported")
        self._check_not_per_channel(info)
        if not info.shape or 0 in info.shape:
            raise self.error(f"variable \"{variable.name}\" has the shape {list(info.shape)} (a tensor of at "
                             f"least one element and one dimension is supported)")

    def state(self, variable: Variable) -> SSAValue:
        """The `glow.state` of a variable: its value when the call starts, initially its CALL_ONCE value."""
        initial = variable.initial
        data = initial.data if initial.quantized else initial.data.astype(np.float32)
        return self.add(glow.StateOp(self.names(variable.name), dense_from_array(data),
                                     result_element=initial.element if initial.quantized else None))

    def initialize_variables(self, index: int) -> None:
        """The initial values a CALL_ONCE's subgraph `index` assigns (VAR_HANDLE and ASSIGN_VARIABLE
        of constants; it runs once, before anything else reads them)."""
        if not 0 < index < self.model.SubgraphsLength():
            raise self.error(f"init subgraph {index} is not a subgraph of the model (it has "
                             f"{self.model.SubgraphsLength()})")
        graph = self.model.Subgraphs(index)
        if graph.InputsLength() or graph.OutputsLength():
            raise self.error(f"init subgraph {index} has inputs or outputs (TFLite's CALL_ONCE takes none)")
        tensors = [self._tensor_info(self.raw, graph, i) for i in range(graph.TensorsLength())]

        def tensor(op, position: int) -> TensorInfo:
            number = op.Inputs(position) if position < op.InputsLength() else -1
            if not 0 <= number < len(tensors):
                raise GlowError(f"{where}: input {position} is not a tensor of the subgraph")
            return tensors[number]

        handles: dict[int, Variable] = {}
        for number in range(graph.OperatorsLength()):
            op = graph.Operators(number)
            name = self.operator_name(op)
            where = f"TFLite subgraph {index} (CALL_ONCE's) operator {number} ({name})"
            if name == "VAR_HANDLE" and op.OutputsLength() == 1:
                handles[op.Outputs(0)] = self.variable(op)
            elif name == "ASSIGN_VARIABLE" and op.InputsLength() == 2:
                handle, value = tensor(op, 0), tensor(op, 1)
                if handle.index not in handles:
                    raise GlowError(f"{where}: input 0 is not a RESOURCE tensor a VAR_HANDLE made")
                variable = handles[handle.index]
                if value.data is None:
                    raise GlowError(f"{where}: the initial value of variable \"{variable.name}\" is not a constant "
                                    f"(only constant initial values are supported)")
                if variable.value is not None:
                    raise GlowError(f"{where}: variable \"{variable.name}\" is initialised after the main "
                                    f"subgraph used it")
                variable.initial = value
            else:
                raise GlowError(f"{where}: an initialisation subgraph may only give variables constant values "
                                f"(VAR_HANDLE, ASSIGN_VARIABLE)")

    def store_variables(self) -> None:
        """The value each variable the call started from ends the call with: the next call's."""
        for variable in self.variables.values():
            if variable.state is not None and variable.value is not variable.state:
                self.add(glow.StateStoreOp(variable.value, variable.state.owner.name_.data))

    def fold_constant_operators(self) -> set[int]:
        """The operators computed here, at compile time: a DEQUANTIZE of a constant (float16
        weights, or int8 ones in front of a float operator) and a DENSIFY (sparse weights, made
        dense when read). Their outputs become constants, read wherever a constant is read
        (filters, biases, shapes); the indices of those operators are returned, to be skipped."""
        folded = set()
        for index in range(self.graph.OperatorsLength()):
            op = self.graph.Operators(index)
            name = self.operator_name(op)
            if name not in ("DEQUANTIZE", "DENSIFY") or op.InputsLength() != 1 or op.OutputsLength() != 1:
                continue
            self.op, self.op_index = op, index
            source, target = self.info(0), self.output_info()
            if source is None or source.data is None or target.data is not None or target.index in self.values:
                continue
            if source.shape != target.shape:
                raise self.error(f"the output's shape {list(target.shape)} is not its input's {list(source.shape)}")
            if name == "DEQUANTIZE":
                if target.element != f32:
                    raise self.error(f"a DEQUANTIZE of a constant must give FLOAT32, not {target.type_name}")
                if source.element == f32 and source.type_name != "FLOAT16":
                    raise self.error(f"input \"{source.name}\" ({source.type_name}) is neither float16 nor quantized")
                self._check_quantized(source)
                data = source.float_data()
            else:
                if (source.type_name, source.element) != (target.type_name, target.element):
                    raise self.error("a DENSIFY keeps its input's type")
                data = source.data
            self.tensors[target.index] = replace(target, data=data)
            folded.add(index)
        self.op, self.op_index = None, -1
        return folded

    def _check_quantized(self, info: TensorInfo) -> None:
        """An integer tensor read as numbers (not as indices or shapes) needs a scale."""
        if info.type_name in ("INT8", "INT4", "UINT8", "INT16") and not info.quantized:
            raise self.error(f"tensor \"{info.name}\" ({info.type_name}) has no quantization parameters "
                             f"(scale, zero point)")

    def _check_not_per_channel(self, info: TensorInfo) -> None:
        """Only constants (weights) are quantized per channel in TFLite."""
        if info.quantized and info.element.per_channel:
            message = f"tensor \"{info.name}\" is quantized per channel, which only weights can be"
            raise self.error(message) if self.op is not None else GlowError(f"\"{self.path}\": {message}")

    def placeholder(self, info: TensorInfo) -> SSAValue:
        check_input_shape(info.name, info.shape)
        self._check_not_per_channel(info)
        if info.element != f32 and not info.quantized:
            raise GlowError(f"input \"{info.name}\": element type {info.type_name} is not supported "
                            f"(float or quantized int8 only)")
        name = self.io_names[info.name] = self.names(info.name)
        if info.quantized and self.float_inputs:
            value = self.add(glow.PlaceholderOp(name, glow.tensor(info.shape)))
            return self.converted(value, info.element)
        return self.add(glow.PlaceholderOp(name, glow.tensor(info.shape, info.element)))

    def import_operator(self) -> None:
        name = self.operator_name(self.op)
        rule = _OPERATORS.get(name)
        if rule is None:
            raise self.error(f"unsupported operator \"{name}\"")
        infos = [self.info(i) for i in range(self.op.InputsLength())] + \
                [self.output_info(i) for i in range(self.op.OutputsLength())]
        infos = [info for info in infos if info is not None]
        for info in infos:
            self._check_quantized(info)
        for position in range(self.op.OutputsLength()):
            self._check_not_per_channel(self.output_info(position))
        quantized = any(info.quantized for info in infos)
        # A float tensor among quantized ones (a hybrid model's float activations with int8
        # weights, a float bias) runs the operator in float, its quantized constants dequantized.
        hybrid = quantized and any(info.element == f32 for info in infos)
        self.in_float = quantized and (hybrid or not (rule.int8 if isinstance(rule.int8, bool)
                                                      else rule.int8(self, self.op)))
        try:
            results = rule.build(self, self.op)
        except GlowError:
            raise
        except ValueError as error:  # a shape rule (glow.py) refusing the operands
            raise self.error(str(error)) from None
        self.in_float = False
        for position, value in enumerate(results):
            info = self.output_info(position)
            value = self.converted(value, info.element)
            op = (self.nchw_of[value] if value in self.nchw_of else value).owner  # the compute op, not its transpose
            if isinstance(op, Operation) and not isinstance(op, glow.PlaceholderOp | glow.ConstantOp) \
                    and glow.NODE_NAME not in op.attributes:
                op.attributes[glow.NODE_NAME] = StringAttr(self.names(info.name))
            self.values[info.index] = value

    def options(self, table_class):
        """The operator's builtin options as `table_class` (e.g. tflite.Conv2DOptions)."""
        table = self.op.BuiltinOptions()
        options = table_class()
        if table is None:
            raise self.error(f"missing {table_class.__name__}")
        options.Init(table.Bytes, table.Pos)
        return options


def _check_model_inputs(inputs: Sequence[TensorInfo], model_inputs: Sequence) -> None:
    """`-model-input` for TFLite may only restate an input (Glow: the shape must match the model's)."""
    by_name = {info.name: info for info in inputs}
    for spec in model_inputs:
        info = by_name.get(spec.name)
        if info is None:
            raise GlowError(f"-model-input: the model has no input \"{spec.name}\" (inputs: {', '.join(by_name)})")
        if tuple(spec.shape) != info.shape:
            raise GlowError(f"-model-input: input \"{spec.name}\" has shape {list(info.shape)} in the model, "
                            f"not {list(spec.shape)}")


def import_tflite(path: str, options, network: str) -> ModuleOp:
    """Load and import a TFLite model file (`options`: an `importers.ImportOptions`)."""
    model, raw = load_tflite_model(path)
    try:
        importer = TFLiteImporter(model, raw, path, options.tflite_float_inputs, options.tflite_float_outputs,
                                  options.tflite_hybrid_inputs)
        module = importer.run(network, options.model_inputs)
    except GlowError:
        raise
    except (struct.error, TypeError, IndexError, ValueError, UnicodeDecodeError) as error:
        if not isinstance(error, UnicodeDecodeError) and not _raised_by_flatbuffers(error):
            raise
        raise GlowError(f"-model: \"{path}\" is damaged: reading it failed ({type(error).__name__}: "
                        f"{str(error)[:80]})") from None
    verify_imported(module, f"\"{path}\"")
    return module


def _raised_by_flatbuffers(error: BaseException) -> bool:
    """Whether `error` comes from reading the flatbuffer (whose reads are lazy and unchecked:
    a damaged offset fails wherever the importer first follows it)."""
    frame = error.__traceback__
    while frame.tb_next is not None:
        frame = frame.tb_next
    return frame.tb_frame.f_globals.get("__name__", "").split(".")[0] in ("flatbuffers", "tflite")


# ----------------------------------------------------------------------------- helpers


def _window_pads(importer: TFLiteImporter, padding: int, spatial: Sequence[int], kernel: Sequence[int],
                 strides: Sequence[int], dilations: Sequence[int] = (1, 1)) -> list[int]:
    """Glow's pads (top, left, bottom, right) of a TFLite SAME (the extra pad at the end) or
    VALID window."""
    if padding == tflite.Padding.VALID:
        return [0, 0, 0, 0]
    if padding != tflite.Padding.SAME:
        raise importer.error(f"padding {padding} is not supported")
    if min(*strides, *dilations) < 1:
        raise importer.error(f"strides {list(strides)} and dilations {list(dilations)} must be positive")
    return glow.same_pads(spatial, kernel, strides, dilations, upper=True)


def _fused_activation(importer: TFLiteImporter, code: int) -> dict:
    """The builder arguments of a fused activation (`activation`, `clip_min`, `clip_max`;
    empty for NONE)."""
    if code not in FUSED_ACTIVATIONS:
        raise importer.error(f"fused activation {code} (TANH or SIGN_BIT) is not supported")
    activation = FUSED_ACTIVATIONS[code]
    if activation is None:
        return {}
    kind, low, high = activation
    if kind == "relu":
        return {"activation": glow.Activation.RELU}
    return {"activation": glow.Activation.CLIP, "clip_min": low, "clip_max": high}


def _apply_activation(importer: TFLiteImporter, value: SSAValue, code: int) -> SSAValue:
    """A fused activation of an op that has none of its own, as a separate Relu or Clip."""
    activation = _fused_activation(importer, code)
    if not activation:
        return value
    if activation["activation"] == glow.Activation.RELU:
        return _layout_preserving(importer, value, glow.ReluOp)
    return _layout_preserving(importer, value, lambda x: glow.ClipOp(x, activation["clip_min"], activation["clip_max"]))


def _layout_preserving(importer: TFLiteImporter, value: SSAValue, build: Callable[[SSAValue], Operation]) -> SSAValue:
    """Adds the elementwise op `build(value)`; it runs on the NCHW form when `value` has one."""
    if importer.has_nchw(value):
        return importer.from_nchw(importer.add(build(importer.nchw(value))))
    return importer.add(build(value))


def _weights(importer: TFLiteImporter, position: int, perm: Sequence[int], what: str) -> SSAValue:
    """A constant filter or weight matrix, permuted (a per-channel axis moves with it)."""
    info = importer.info(position)
    if info is None or info.data is None:
        raise importer.error(f"the {what} must be a constant")
    data = np.ascontiguousarray(np.transpose(info.data, perm))
    element = info.element
    if quantized_element(element) and element.per_channel and not importer.in_float \
            and element.offset_array().any():
        raise importer.error(f"the {what} \"{info.name}\" is quantized per channel with nonzero zero points "
                             f"(TFLite's int8 weights are symmetric)")
    if quantized_element(element) and element.per_channel:
        element = UniformQuantizedType(element.storage_type, element.scale_array().tolist(),
                                       element.offset_array().tolist(), list(perm).index(element.axis.data))
    if importer.in_float and quantized_element(element) and element.storage_type == i8 \
            and not element.offset_array().any():
        # A hybrid layer's symmetric int8 weights: kept, behind a dequantize that
        # glow-choose-hybrid-weights computes at compile time or leaves to the kernel.
        levels = importer.add(glow.ConstantOp(importer.names(info.name), dense_from_array(data),
                                              result_element=element))
        return importer.dequantize(levels)
    return importer.constant_value(replace(info, shape=data.shape, element=element, data=data))


def _bias(importer: TFLiteImporter, position: int | None, channels: int, x: SSAValue, weights: SSAValue) -> SSAValue:
    """The bias (zeros if omitted); quantized, its scale is input scale x weight scale, as TFLite adds it."""
    info = importer.info(position) if position is not None else None
    quantized = is_quantized(weights.type)
    if info is None:
        info = TensorInfo(-1, "bias", (channels,), "INT32", i32, np.zeros(channels, np.int32))
    elif info.data is None:
        raise importer.error("the bias must be a constant")
    if not quantized:
        return importer.constant_value(info.as_float())
    weight_type = weights.type.element_type
    scales = bias_scales(x.type.element_type, weight_type)
    if not (scales > 0).all() or not np.isfinite(scales).all():
        raise importer.error(f"the bias scale (input scale x weight scale) is {scales.min():g}, not a positive "
                             f"float32")
    element = (UniformQuantizedType(i32, scales.tolist(), [0] * scales.size, 0) if weight_type.per_channel
               else UniformQuantizedType(i32, float(scales[0]), 0))
    return importer.constant_value(replace(info, data=info.data.astype(np.int32), element=element))


def _hybrid_input(importer: TFLiteImporter, x: SSAValue, asymmetric: bool) -> SSAValue:
    """The input `x` of a hybrid layer (a float input, quantized weights at position 1): with
    `-tflite-hybrid-inputs=quantized`, quantized per batch (per row of `x`) as TFLite's hybrid
    kernels quantize it (`tflite_hybrid`); otherwise as it is."""
    source, weights = importer.info(0), importer.info(1)
    if importer.hybrid_inputs != "quantized" or source.element != f32 or weights is None or not weights.quantized:
        return x
    return quantized_like_hybrid_kernels(importer.add, importer.names, x, asymmetric, importer.hybrid_scalars)


def _per_tensor_weights(position: int):
    """int8 predicate: the kernel wants one scale for the weights at `position`."""
    def per_tensor(importer: TFLiteImporter, op) -> bool:
        info = importer.info(position)
        return info is None or not (info.quantized and info.element.per_channel)

    return per_tensor


# ----------------------------------------------------------------------------- operators


def _convolution(importer: TFLiteImporter, options, filter_perm: Sequence[int], group_of: Callable[[int, int], int]):
    # TFLite's per-channel hybrid convolutions quantize their input with a zero point
    filter_info = importer.info(1)
    per_channel = filter_info is not None and filter_info.quantized and filter_info.element.per_channel
    x = _hybrid_input(importer, importer.nchw(importer.input(0)), asymmetric=per_channel)
    _, c, h, w = glow.shape_of(x)
    weights = _weights(importer, 1, filter_perm, "filter")
    o, _, kh, kw = glow.shape_of(weights)
    strides, dilations = [options.StrideH(), options.StrideW()], [options.DilationHFactor(), options.DilationWFactor()]
    pads = _window_pads(importer, options.Padding(), (h, w), (kh, kw), strides, dilations)
    group = group_of(c, glow.shape_of(weights)[1])
    bias = _bias(importer, 2, o, x, weights)
    op = glow.ConvolutionOp(x, weights, bias, strides=strides, pads=pads, dilations=dilations, group=group,
                            result_element=importer.output_element(),
                            **_fused_activation(importer, options.FusedActivationFunction()))
    return [importer.from_nchw(importer.add(op))]


@operator("CONV_2D", int8=True)
def _conv_2d(importer: TFLiteImporter, op):
    def group(channels: int, filter_channels: int) -> int:
        if channels % filter_channels:
            raise importer.error(f"filter depth {filter_channels} does not divide the {channels} input channels")
        return channels // filter_channels

    return _convolution(importer, importer.options(tflite.Conv2DOptions), (0, 3, 1, 2), group)


@operator("DEPTHWISE_CONV_2D", int8=True)
def _depthwise_conv_2d(importer: TFLiteImporter, op):
    # Filter [1, KH, KW, C x M] -> [C x M, 1, KH, KW]: one group per input channel.
    return _convolution(importer, importer.options(tflite.DepthwiseConv2DOptions), (3, 0, 1, 2),
                        lambda channels, _: channels)


@operator("FULLY_CONNECTED", int8=_per_tensor_weights(1))
def _fully_connected(importer: TFLiteImporter, op):
    options = importer.options(tflite.FullyConnectedOptions)
    if options.WeightsFormat() != 0:
        raise importer.error("shuffled weights are not supported")
    x = importer.input(0)
    weights = _weights(importer, 1, (1, 0), "weight matrix")  # [O, I] -> [I, O]
    depth, units = glow.shape_of(weights)
    rows = int(np.prod(glow.shape_of(x))) // depth
    flat = _hybrid_input(importer, _reshaped(importer, x, (rows, depth)), options.AsymmetricQuantizeInputs())
    bias = _bias(importer, 2, units, x, weights)
    fc = glow.FullyConnectedOp(flat, weights, bias, result_element=importer.output_element(),
                               **_fused_activation(importer, options.FusedActivationFunction()))
    result = importer.add(fc)
    return [_reshaped(importer, result, importer.output_info().shape)]


def _reshaped(importer: TFLiteImporter, value: SSAValue, shape: Sequence[int]) -> SSAValue:
    if glow.shape_of(value) == tuple(shape):
        return value
    return importer.add(glow.ReshapeOp(value, shape))


@operator("MAX_POOL_2D", "AVERAGE_POOL_2D", int8=True)
def _pool(importer: TFLiteImporter, op):
    options = importer.options(tflite.Pool2DOptions)
    x = importer.nchw(importer.input(0))
    kernel, strides = [options.FilterHeight(), options.FilterWidth()], [options.StrideH(), options.StrideW()]
    pads = _window_pads(importer, options.Padding(), glow.shape_of(x)[2:], kernel, strides)
    maximum = importer.operator_name(op) == "MAX_POOL_2D"
    pooled = _pool_nchw(importer, x, glow.MaxPoolOp if maximum else glow.AvgPoolOp, kernel, strides, pads)
    return [_apply_activation(importer, importer.from_nchw(pooled), options.FusedActivationFunction())]


def _pool_nchw(importer: TFLiteImporter, x: SSAValue, op_type, kernel, strides, pads) -> SSAValue:
    """A pool of an NCHW value; it keeps its input's type (TFLite's rule for int8 pools)."""
    return importer.add(op_type(x, kernel, strides, pads))


_BINARY = {"ADD": glow.AddOp, "SUB": glow.SubOp, "MUL": glow.MulOp, "DIV": glow.DivOp,
           "MAXIMUM": glow.MaxOp, "MINIMUM": glow.MinOp}
_BINARY_OPTIONS = {"ADD": tflite.AddOptions, "SUB": tflite.SubOptions, "MUL": tflite.MulOptions,
                   "DIV": tflite.DivOptions}


@operator(*_BINARY, int8=lambda importer, op: importer.operator_name(op) in ("ADD", "MUL"))
def _binary(importer: TFLiteImporter, op):
    name = importer.operator_name(op)
    lhs, rhs = importer.input(0), importer.input(1)
    activation = importer.options(_BINARY_OPTIONS[name]).FusedActivationFunction() if name in _BINARY_OPTIONS else 0
    element = importer.output_element()
    if importer.has_nchw(lhs) and importer.has_nchw(rhs) and glow.shape_of(lhs) == glow.shape_of(rhs):
        result = importer.from_nchw(importer.add(_BINARY[name](importer.nchw(lhs), importer.nchw(rhs),
                                                               result_element=element)))
    else:
        result = importer.add(_BINARY[name](lhs, rhs, result_element=element))
    return [_apply_activation(importer, result, activation)]


_UNARY = {"RELU": glow.ReluOp, "LOGISTIC": glow.SigmoidOp, "TANH": glow.TanhOp, "HARD_SWISH": glow.HardSwishOp,
          "EXP": glow.ExpOp, "ABS": glow.AbsOp, "NEG": glow.NegOp, "SQRT": glow.SqrtOp, "LOG": glow.LogOp,
          "FLOOR": glow.FloorOp, "SIN": glow.SinOp, "COS": glow.CosOp,
          "ELU": lambda x, result_element=None: glow.EluOp(x, 1.0, result_element=result_element)}  # alpha 1
_CLIPS = {"RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0), "RELU_0_TO_1": (0.0, 1.0)}


@operator(*_UNARY, *_CLIPS, "LEAKY_RELU", "RSQRT",
          int8=lambda importer, op: importer.operator_name(op) in ("RELU", "LEAKY_RELU", *_CLIPS))
def _elementwise_unary(importer: TFLiteImporter, op):
    name = importer.operator_name(op)
    x = importer.input(0)
    element = importer.output_element()
    if name in _CLIPS:
        low, high = _CLIPS[name]
        return [_layout_preserving(importer, x, lambda v: glow.ClipOp(v, low, high, result_element=element))]
    if name == "LEAKY_RELU":
        alpha = importer.options(tflite.LeakyReluOptions).Alpha()
        return [_layout_preserving(importer, x, lambda v: glow.LeakyReluOp(v, alpha, result_element=element))]
    if name == "RSQRT":
        root = _layout_preserving(importer, x, lambda v: glow.SqrtOp(v, result_element=element))
        return [_layout_preserving(importer, root, lambda v: glow.ReciprocalOp(v, result_element=element))]
    return [_layout_preserving(importer, x, lambda v: _UNARY[name](v, result_element=element))]


@operator("PRELU")
def _prelu(importer: TFLiteImporter, op):
    return [importer.add(glow.PReluOp(importer.input(0), importer.input(1), result_element=glow.f32))]


def _softmax_int8(importer: TFLiteImporter, op) -> bool:
    output = importer.output_info().element
    return (importer.operator_name(op) == "SOFTMAX" and importer.options(tflite.SoftmaxOptions).Beta() == 1.0
            and quantized_element(output) and not output.per_channel
            and (output.scale, output.offset) == (1 / 256, -128))


@operator("SOFTMAX", "LOG_SOFTMAX", int8=_softmax_int8)
def _softmax(importer: TFLiteImporter, op):
    x = importer.input(0)
    log = importer.operator_name(op) == "LOG_SOFTMAX"
    if not log:
        beta = importer.options(tflite.SoftmaxOptions).Beta()
        if beta != 1.0:  # float: the inputs are scaled by beta first
            scale = importer.add(glow.SplatOp(beta, x.type))
            x = importer.add(glow.MulOp(x, scale))
    return [importer.add(glow.SoftMaxOp(x, len(glow.shape_of(x)) - 1, log=log,
                                        result_element=importer.output_element()))]


@operator("RESHAPE", "SQUEEZE", "EXPAND_DIMS", int8=True)
def _reshape(importer: TFLiteImporter, op):
    x = importer.input(0)
    return [_reshaped(importer, x, importer.output_info().shape)]


@operator("CONCATENATION", int8=True)
def _concatenation(importer: TFLiteImporter, op):
    options = importer.options(tflite.ConcatenationOptions)
    element = importer.output_element()
    values = [importer.converted(importer.input(i), element) for i in range(op.InputsLength())]
    rank = len(glow.shape_of(values[0]))
    axis = options.Axis() % rank
    in_nchw = rank == 4 and all(importer.has_nchw(v) for v in values)
    if in_nchw:
        values, axis = [importer.nchw(v) for v in values], NHWC_AXIS_IN_NCHW[axis]
    result = importer.add(glow.ConcatOp(values, axis, result_element=element))
    if in_nchw:
        result = importer.from_nchw(result)
    return [_apply_activation(importer, result, options.FusedActivationFunction())]


_REDUCERS = {"MEAN": "mean", "SUM": "sum", "REDUCE_MAX": "max", "REDUCE_MIN": "min"}


def _spatial_mean_int8(importer: TFLiteImporter, op) -> bool:
    """A MEAN over H and W of an int8 NHWC tensor is an average pool, which has an int8 kernel;
    it keeps its input's parameters (another output scale would round twice: float is closer)."""
    x, axes = importer.info(0), importer.info(1)
    return (importer.operator_name(op) == "MEAN" and len(x.shape) == 4 and axes is not None and axes.data is not None
            and sorted(int(a) % 4 for a in axes.data.ravel()) == [1, 2] and x.element == importer.output_info().element)


@operator(*_REDUCERS, int8=_spatial_mean_int8)
def _reduce(importer: TFLiteImporter, op):
    x = importer.input(0)
    rank = len(glow.shape_of(x))
    axes = sorted({int(a) % rank for a in importer.constant_data(1, "axes").ravel()})
    name = importer.operator_name(op)
    if name == "MEAN" and rank == 4 and axes == [1, 2]:  # a global average pool
        nchw = importer.nchw(x)
        pooled = _pool_nchw(importer, nchw, glow.AvgPoolOp, glow.shape_of(nchw)[2:], [1, 1], [0, 0, 0, 0])
        return [_reshaped(importer, importer.from_nchw(pooled), importer.output_info().shape)]
    keep_dims = len(importer.output_info().shape) == rank
    return [importer.add(glow.ReduceOp(x, _REDUCERS[name], axes, keep_dims=keep_dims,
                                       result_element=importer.output_element()))]


@operator("PAD", "PADV2", int8=True)
def _pad(importer: TFLiteImporter, op):
    x = importer.input(0)
    rank = len(glow.shape_of(x))
    paddings = importer.constant_data(1, "paddings").astype(int).reshape(rank, 2)
    value = 0.0
    if importer.operator_name(op) == "PADV2" and importer.info(2) is not None:
        value = float(importer.constant_data(2, "constant value").ravel()[0])
    if is_quantized(x.type):  # the pad value in the quantized domain: real 0 is the zero point
        value = float(quantize_level(value, x.type.element_type))
    begin, end = list(paddings[:, 0]), list(paddings[:, 1])
    source, from_nchw = x, False
    if rank == 4 and importer.has_nchw(x):
        source, from_nchw = importer.nchw(x), True
        begin, end = [begin[a] for a in TO_NCHW], [end[a] for a in TO_NCHW]
    result = importer.add(glow.PadOp(source, [int(b) for b in begin] + [int(e) for e in end], value))
    return [importer.from_nchw(result) if from_nchw else result]


@operator("TRANSPOSE", int8=True)
def _transpose(importer: TFLiteImporter, op):
    perm = [int(p) for p in importer.constant_data(1, "permutation").ravel()]
    return [importer.add(glow.transpose(importer.input(0), perm))]


@operator("SLICE", int8=True)
def _slice(importer: TFLiteImporter, op):
    x = importer.input(0)
    begin = [int(b) for b in importer.constant_data(1, "begin").ravel()]
    return [importer.add(glow.SliceOp(x, begin, importer.output_info().shape))]


@operator("QUANTIZE", "DEQUANTIZE", int8=True)
def _quantize(importer: TFLiteImporter, op):
    info = importer.info(0)
    if info is None:
        raise importer.error("input 0 is missing")
    if info.index not in importer.values and info.data is not None:  # e.g. float16 or int8 weights
        importer.values[info.index] = importer.constant_value(info.as_float())
    return [importer.converted(importer.input(0), importer.output_info().element)]


# ----------------------------------------------------------------------------- resizing


def _bilinear_taps(size: int, out: int, align_corners: bool, half_pixel_centers: bool,
                   integer: bool) -> tuple[np.ndarray, np.ndarray]:
    """The two taps and weights of each output position of TFLite's RESIZE_BILINEAR along one
    axis: in float32 as its float kernel computes them, or in tenths of 2^10 as its integer
    kernel does (`ComputeInterpolationValuesInteger`), so an int8 resize weighs as TFLite's."""
    position = np.arange(out, dtype=np.int64)
    if integer:
        scale = ((1 << 10) * (size - 1) + (out - 1) // 2) // (out - 1) if align_corners and out > 1 \
            else ((1 << 10) * size + out // 2) // out
        scaled = position * scale + (scale // 2 - (1 << 9) if half_pixel_centers else 0)
        low = np.maximum(scaled // (1 << 10), 0)
        high = np.minimum((scaled + (1 << 10) - 1) // (1 << 10), size - 1)
        fraction = (scaled - (1 << 10) * low).astype(np.float64) / (1 << 10)
    else:
        scale = np.float32((size - 1) / (out - 1) if align_corners and out > 1 else size / out)
        scaled = (position.astype(np.float32) + np.float32(0.5)) * scale - np.float32(0.5) if half_pixel_centers \
            else position.astype(np.float32) * scale
        floor = np.floor(scaled)
        low = np.maximum(floor, 0).astype(np.int64)
        high = np.minimum(np.ceil(scaled), size - 1).astype(np.int64)
        fraction = (scaled - floor).astype(np.float64)
    taps = np.stack([low, high], axis=1).astype(np.int32)
    weights = np.stack([1 - fraction, fraction], axis=1).astype(np.float32)
    return taps, weights


def _nearest_taps(size: int, out: int, align_corners: bool, half_pixel_centers: bool) -> np.ndarray:
    """TFLite's RESIZE_NEAREST_NEIGHBOR source index of each output position (`GetNearestNeighbor`)."""
    scale = np.float32((size - 1) / (out - 1) if align_corners and out > 1 else size / out)
    scaled = (np.arange(out, dtype=np.float32) + np.float32(0.5 if half_pixel_centers else 0.0)) * scale
    floor = np.floor(scaled)
    index = np.where(scaled - floor >= 0.5, floor + 1, floor) if align_corners else floor  # std::round
    return np.clip(index.astype(np.int64), 0, size - 1)[:, None].astype(np.int32)


def _resampled(importer: TFLiteImporter, value: SSAValue, axis: int, taps: np.ndarray, weights: np.ndarray,
               element: Attribute | None = None) -> SSAValue:
    """A `glow.resample` of `value` along `axis`; for a quantized value its weights are Q1.14
    int16 levels, as the quantizer gives a Resize's (`RESAMPLE_FRACTION_BITS`)."""
    name = importer.output_info().name
    taps_value = importer.add(glow.ConstantOp(importer.names(f"{name}_taps{axis}"), dense_from_array(taps)))
    weights_type = None
    if is_quantized(value.type):
        weights = np.round(weights.astype(np.float64) * (1 << RESAMPLE_FRACTION_BITS)).astype(np.int16)
        weights_type = UniformQuantizedType(STORAGE_TYPES["Int16"], 2.0 ** -RESAMPLE_FRACTION_BITS, 0)
    weights_value = importer.add(glow.ConstantOp(importer.names(f"{name}_weights{axis}"), dense_from_array(weights),
                                                 result_element=weights_type))
    return importer.add(glow.ResampleOp(value, taps_value, weights_value, axis, result_element=element))


@operator("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR", int8=True)
def _resize(importer: TFLiteImporter, op):
    """One `glow.resample` per resized axis (H, then W), on the NCHW form when there is one."""
    bilinear = importer.operator_name(op) == "RESIZE_BILINEAR"
    options = importer.options(tflite.ResizeBilinearOptions if bilinear else tflite.ResizeNearestNeighborOptions)
    align_corners, half_pixel_centers = bool(options.AlignCorners()), bool(options.HalfPixelCenters())
    if align_corners and half_pixel_centers:
        raise importer.error("align_corners and half_pixel_centers cannot both be set")
    x = importer.input(0)
    shape = glow.shape_of(x)
    if len(shape) != 4:
        raise importer.error(f"the input must be 4-D (NHWC), not {list(shape)}")
    sizes = [int(s) for s in importer.constant_data(1, "size").ravel()]
    if len(sizes) != 2 or min(sizes) < 1:
        raise importer.error(f"the size {sizes} must be two positive extents")
    in_nchw = importer.has_nchw(x)
    source, axes = (importer.nchw(x), (2, 3)) if in_nchw else (x, (1, 2))
    value = source
    integer = is_quantized(x.type)
    resampled = []
    for axis, size, out in zip(axes, shape[1:3], sizes, strict=True):
        if bilinear:
            taps, weights = _bilinear_taps(size, out, align_corners, half_pixel_centers, integer)
        else:
            taps = _nearest_taps(size, out, align_corners, half_pixel_centers)
            weights = np.ones(taps.shape, np.float32)
        if not (out == size and (taps[:, 0] == np.arange(size)).all() and (weights[:, 0] == 1).all()):
            resampled.append((axis, taps, weights))
    for position, (axis, taps, weights) in enumerate(resampled):
        element = None  # a bilinear's first int8 axis keeps finer int16 levels, to round once at the end
        if integer and bilinear and position < len(resampled) - 1:
            element = finer_levels(x.type.element_type, FINER_LEVEL_BITS)
        value = _resampled(importer, value, axis, taps, weights, element)
    if value is source:
        return [x]
    return [importer.from_nchw(value) if in_nchw else value]


# ----------------------------------------------------------------------------- selection and rearrangement


def _strided_selection(importer: TFLiteImporter, shape: Sequence[int]) -> tuple[list[range], list[int]]:
    """STRIDED_SLICE's selection as one `range` of indices per input axis, and the output
    shape (TFLite's strided_slice_logic with its five masks and `offset`)."""
    options = importer.options(tflite.StridedSliceOptions)
    begin = [int(v) for v in importer.constant_data(1, "begin").ravel()]
    end = [int(v) for v in importer.constant_data(2, "end").ravel()]
    strides = [int(v) for v in importer.constant_data(3, "strides").ravel()] if importer.info(3) is not None \
        else [1] * len(begin)
    if not len(begin) == len(end) == len(strides):
        raise importer.error(f"begin {begin}, end {end} and strides {strides} differ in length")
    if 0 in strides:
        raise importer.error(f"strides {strides} must not be 0")
    bit = lambda mask, i: bool(mask >> i & 1)  # noqa: E731
    ellipsis, new_axis, shrink = options.EllipsisMask(), options.NewAxisMask(), options.ShrinkAxisMask()
    if bin(ellipsis).count("1") > 1:
        raise importer.error("more than one ellipsis")
    selected = sum(1 for i in range(len(begin)) if not bit(new_axis, i) and not bit(ellipsis, i))
    selection: list[range] = []
    output: list[int] = []
    axis = 0
    for i in range(len(begin)):
        if bit(ellipsis, i):
            for _ in range(len(shape) - selected):
                selection.append(range(shape[axis]))
                output.append(shape[axis])
                axis += 1
            continue
        if bit(new_axis, i):
            output.append(1)
            continue
        if axis >= len(shape):
            raise importer.error(f"the slice has more axes than the input's {list(shape)}")
        size = shape[axis]
        if bit(shrink, i):
            index = begin[i] + size if begin[i] < 0 else begin[i]
            if not 0 <= index < size:
                raise importer.error(f"index {begin[i]} is outside axis {axis} of {list(shape)}")
            selection.append(range(index, index + 1))
        else:
            start = None if bit(options.BeginMask(), i) else begin[i]
            stop = None if bit(options.EndMask(), i) else (begin[i] + end[i] if options.Offset() else end[i])
            selection.append(range(size)[slice(start, stop, strides[i])])
            output.append(len(selection[-1]))
        axis += 1
    for rest in shape[axis:]:
        selection.append(range(rest))
        output.append(rest)
    return selection, output


@operator("STRIDED_SLICE", int8=True)
def _strided_slice(importer: TFLiteImporter, op):
    """A `glow.slice` (positive steps) of the selected indices, a one-tap resample reversing
    the axes taken backwards, and a reshape for the axes shrunk or added."""
    x = importer.input(0)
    selection, output = _strided_selection(importer, glow.shape_of(x))
    if any(len(r) == 0 for r in selection):
        raise importer.error("the slice selects nothing")
    forward = [r if r.step > 0 else r[::-1] for r in selection]
    value = x
    if any(r != range(size) for r, size in zip(forward, glow.shape_of(x), strict=True)):
        value = importer.add(glow.SliceOp(x, [r.start for r in forward], [len(r) for r in forward],
                                          [r.step if len(r) > 1 else 1 for r in forward]))
    for axis, r in enumerate(selection):
        if r.step < 0 and len(r) > 1:  # reversed: a resample taking one tap, weight 1, from the far end
            taps = np.arange(len(r) - 1, -1, -1, dtype=np.int32)[:, None]
            value = _resampled(importer, value, axis, taps, np.ones(taps.shape, np.float32))
    return [_reshaped(importer, value, output)]


@operator("SPLIT", "SPLIT_V", int8=True)
def _split(importer: TFLiteImporter, op):
    """SPLIT (axis, value; equal parts) and SPLIT_V (value, sizes, axis; one size may be -1):
    a `glow.slice` per output."""
    split_v = importer.operator_name(op) == "SPLIT_V"
    x = importer.input(0 if split_v else 1)
    shape = glow.shape_of(x)
    axis_data = importer.constant_data(2 if split_v else 0, "axis").ravel()
    if axis_data.size != 1 or not -len(shape) <= int(axis_data[0]) < len(shape):
        raise importer.error(f"axis {axis_data.tolist()} is not one axis of {list(shape)}")
    axis = int(axis_data[0]) % len(shape)
    parts = op.OutputsLength()
    if split_v:
        sizes = [int(s) for s in importer.constant_data(1, "size_splits").ravel()]
        if sizes.count(-1) == 1:
            sizes[sizes.index(-1)] = shape[axis] - (sum(sizes) + 1)
    else:
        if shape[axis] % max(parts, 1):
            raise importer.error(f"{parts} parts do not divide axis {axis} of {list(shape)}")
        sizes = [shape[axis] // parts] * parts
    if len(sizes) != parts or min(sizes) < 1 or sum(sizes) != shape[axis]:
        raise importer.error(f"sizes {sizes} do not split axis {axis} ({shape[axis]}) into {parts} outputs")
    results, start = [], 0
    for size in sizes:
        starts, extents = [0] * len(shape), list(shape)
        starts[axis], extents[axis] = start, size
        results.append(importer.add(glow.SliceOp(x, starts, extents)))
        start += size
    return results


@operator("DEPTH_TO_SPACE", "SPACE_TO_DEPTH", int8=True)
def _depth_to_space(importer: TFLiteImporter, op):
    """NHWC, depth in (row in block, column in block, channel) order as TFLite arranges it: a
    6-D reshape, a transpose and a reshape."""
    to_space = importer.operator_name(op) == "DEPTH_TO_SPACE"
    options = importer.options(tflite.DepthToSpaceOptions if to_space else tflite.SpaceToDepthOptions)
    block = options.BlockSize()
    x = importer.input(0)
    shape = glow.shape_of(x)
    if len(shape) != 4 or block < 1:
        raise importer.error(f"block size {block} of a {list(shape)} input (4-D NHWC)")
    n, h, w, c = shape
    if to_space:
        if c % (block * block):
            raise importer.error(f"depth {c} is not a multiple of the block size {block} squared")
        blocks = _reshaped(importer, x, (n, h, w, block, block, c // (block * block)))
    else:
        if h % block or w % block:
            raise importer.error(f"height {h} and width {w} are not multiples of the block size {block}")
        blocks = _reshaped(importer, x, (n, h // block, block, w // block, block, c))
    moved = importer.add(glow.transpose(blocks, (0, 1, 3, 2, 4, 5)))
    return [_reshaped(importer, moved, importer.output_info().shape)]


# ----------------------------------------------------------------------------- transposed convolution


def _transposed_convolution(importer: TFLiteImporter, x: SSAValue, weights_position: int,
                            bias_position: int | None, padding: int, strides: Sequence[int]) -> SSAValue:
    """TFLite's transposed convolution (filter [O, KH, KW, I]) to the output tensor's shape,
    its SAME padding as TFLite computes it from the output size."""
    x = importer.nchw(x)
    weights = _weights(importer, weights_position, (3, 0, 1, 2), "filter")  # -> [I, O, KH, KW]
    _, o, kh, kw = glow.shape_of(weights)
    out_h, out_w = importer.output_info().shape[1:3]
    if min(strides) < 1:
        raise importer.error(f"strides {list(strides)} must be positive")
    begin, end, extra = [], [], []
    for size, out, kernel, stride in zip(glow.shape_of(x)[2:], (out_h, out_w), (kh, kw), strides, strict=True):
        full = (size - 1) * stride + kernel
        if padding == tflite.Padding.SAME:
            total = max((-(-out // stride) - 1) * stride + kernel - out, 0)
        elif padding == tflite.Padding.VALID:
            total = 0
        else:
            raise importer.error(f"padding {padding} is not supported")
        before = total // 2
        after = full - before - out
        begin.append(before)
        end.append(max(after, 0))
        extra.append(max(-after, 0))
    bias = _bias(importer, bias_position, o, x, weights)
    result = importer.add(glow.ConvTransposeOp(x, weights, bias, strides=list(strides), pads=begin + end,
                                               dilations=[1, 1], output_padding=extra,
                                               result_element=importer.output_element()))
    return importer.from_nchw(result)


@operator("TRANSPOSE_CONV")
def _transpose_conv(importer: TFLiteImporter, op):
    """Inputs: output shape, filter, input, optional bias."""
    options = importer.options(tflite.TransposeConvOptions)
    result = _transposed_convolution(importer, importer.input(2), 1, 3 if importer.info(3) is not None else None,
                                     options.Padding(), [options.StrideH(), options.StrideW()])
    return [_apply_activation(importer, result, options.FusedActivationFunction())]


@operator("CUSTOM:Convolution2DTransposeBias")
def _convolution_2d_transpose_bias(importer: TFLiteImporter, op):
    """MediaPipe's segmentation models' custom operator: a transposed convolution with bias;
    its custom options are a `TfLiteTransposeConvParams` (padding 1 SAME / 2 VALID, stride
    width, stride height, as int32)."""
    options = op.CustomOptionsAsNumpy() if op.CustomOptionsLength() else np.zeros(0, np.uint8)
    if options.size < 12:
        raise importer.error(f"{options.size} bytes of custom options (a padding and two strides: 12)")
    padding, stride_w, stride_h = np.frombuffer(options.tobytes()[:12], "<i4")
    if padding not in (1, 2):
        raise importer.error(f"padding {padding} is not supported (1 SAME, 2 VALID)")
    tflite_padding = tflite.Padding.SAME if padding == 1 else tflite.Padding.VALID
    return [_transposed_convolution(importer, importer.input(0), 1, 2, tflite_padding, [int(stride_h), int(stride_w)])]


@operator("SQUARE", "SQUARED_DIFFERENCE", "ADD_N")
def _arithmetic_forms(importer: TFLiteImporter, op):
    """x·x, (a − b)², and a sum of n inputs, from glow's Mul, Sub and Add (in float)."""
    name = importer.operator_name(op)
    if name == "ADD_N":
        total = importer.input(0)
        for position in range(1, op.InputsLength()):
            total = importer.add(glow.AddOp(total, importer.input(position)))
        return [total]
    difference = importer.input(0) if name == "SQUARE" else \
        importer.add(glow.SubOp(importer.input(0), importer.input(1)))
    return [importer.add(glow.MulOp(difference, difference))]


@operator("PACK", "UNPACK", int8=True)
def _pack(importer: TFLiteImporter, op):
    """PACK: the inputs, each given a unit axis, concatenated along it; UNPACK: a slice per
    output along the axis, the axis then dropped."""
    if importer.operator_name(op) == "PACK":
        options = importer.options(tflite.PackOptions)
        element = importer.output_element()
        values = [importer.converted(importer.input(i), element) for i in range(op.InputsLength())]
        shape = list(glow.shape_of(values[0]))
        axis = options.Axis() % (len(shape) + 1)
        expanded = [_reshaped(importer, v, shape[:axis] + [1] + shape[axis:]) for v in values]
        return [importer.add(glow.ConcatOp(expanded, axis, result_element=element))]
    options = importer.options(tflite.UnpackOptions)
    x = importer.input(0)
    shape = list(glow.shape_of(x))
    axis = options.Axis() % len(shape)
    if op.OutputsLength() != shape[axis]:
        raise importer.error(f"{op.OutputsLength()} outputs for axis {axis} of {shape}")
    results = []
    for index in range(shape[axis]):
        starts, sizes = [0] * len(shape), list(shape)
        starts[axis], sizes[axis] = index, 1
        part = importer.add(glow.SliceOp(x, starts, sizes))
        results.append(_reshaped(importer, part, shape[:axis] + shape[axis + 1:]))
    return results
