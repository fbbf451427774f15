"""ONNX importer: an `.onnx` or `.onnxtxt` model becomes a `glow.function`.

The model is checked with onnx's checker and shaped with onnx's shape inference after the
user's `-model-input` and `-onnx-define-symbol` settings are applied. Initializers and
every node whose inputs are all known at compile time (Constant, Shape, ConstantOfShape,
Gather on shapes, ...) are evaluated at import with onnx's reference evaluator, so the
graph that reaches the `glow` dialect holds only the computation on the inputs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from google.protobuf import text_format
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from xdsl.dialects.builtin import ModuleOp, StringAttr, f16, f32, f64, i1, i8, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from glowmlir.dialects import glow
from glowmlir.dialects.quant import UniformQuantizedType
from glowmlir.dialects.weights import dense_from_array, element_type_of, numpy_dtype
from glowmlir.errors import GlowError
from glowmlir.names import UniqueNames, legalize_name

ANY_ELEMENT_TYPE = frozenset({
    "Identity", "Dropout", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Slice", "Split",
    "Expand", "Gather", "Pad", "Cast", "CastLike", "Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Neg", "Abs",
    "Relu", "Clip", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Not",
    "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "Where", "ArgMax", "ArgMin", "BitShift", "Mod", "Trilu",
    "Shape", "Size", "GatherElements", "IsNaN", "IsInf",
})
"""The ops imported for integer and boolean tensors as well as float32 ones."""


def compute_element(element: Attribute) -> Attribute:
    """The element type a tensor is computed in: float16 and double ones in float32."""
    return f32 if element in (f16, f64) else element


def onnx_element_type(elem_type: int, what: str) -> Attribute:
    """The glow element type of an ONNX tensor type (float32, float16, double, integers, bool)."""
    name = onnx.TensorProto.DataType.Name(elem_type)
    try:
        return element_type_of(helper.tensor_dtype_to_np_dtype(elem_type))
    except (ValueError, KeyError, TypeError):
        raise GlowError(f"{what}: element type {name} is not supported "
                        f"(float32, float16, double, integers of 8 to 64 bits and bool)") from None


def like(value: SSAValue, shape: Sequence[int]) -> glow.TensorType:
    """A tensor type of `shape` with `value`'s element type."""
    return glow.tensor(shape, value.type.element_type)


# ----------------------------------------------------------------------------- options


INT64_MAX = 2**63 - 1
"""The largest dimension an ONNX shape can hold."""


def parse_integer(text: str) -> int:
    """A decimal integer in ASCII digits, with an optional sign (Python's `int` also takes
    other scripts' digits and underscores); raises ValueError otherwise."""
    if not re.fullmatch(r"[+-]?[0-9]+", text.strip()):
        raise ValueError(f"\"{text}\" is not an integer")
    return int(text)


@dataclass(frozen=True)
class ModelInput:
    """One `-model-input=name,type,[d0,d1,...]` option (`int8q` adds `scale,offset` before the shape)."""

    name: str
    element_type: str
    shape: tuple[int, ...]
    scale: float | None = None
    offset: int | None = None

    @staticmethod
    def parse(spec: str) -> ModelInput:
        """Glow's forms: `name`, `name,float,[dims]`, `name,int8q,scale,offset,[dims]`."""
        bad = GlowError(f"-model-input=\"{spec}\": expected name,float,[d0,d1,...] or name,int8q,scale,offset,[d0,...]")
        if "," not in spec:
            if not spec:
                raise bad
            return ModelInput(spec, "float", (1,))
        if "[" not in spec or not spec.endswith("]"):
            raise bad
        head, dims = spec[:spec.index("[")].rstrip(","), spec[spec.index("["):]
        name, element_type, *quantization = head.split(",")
        if element_type not in ("float", "int8q"):
            raise GlowError(f"-model-input=\"{spec}\": element type \"{element_type}\" is not supported "
                            f"(use float or int8q)")
        if not name or len(quantization) != (2 if element_type == "int8q" else 0):
            raise bad
        try:
            shape = tuple(parse_integer(d) for d in dims[1:-1].split(",") if d.strip())
            scale, offset = (float(quantization[0]), parse_integer(quantization[1])) if quantization else (None, None)
        except ValueError:
            raise bad from None
        if not shape or not all(1 <= d <= INT64_MAX for d in shape):
            raise GlowError(f"-model-input=\"{spec}\": dimensions must be positive integers below 2^63")
        if scale is not None and not (np.isfinite(np.float32(scale)) and np.float32(scale) > 0 and -128 <= offset <= 127):
            raise GlowError(f"-model-input=\"{spec}\": int8q needs a finite positive scale (in float32) "
                            f"and an offset in [-128, 127]")
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


# ----------------------------------------------------------------------------- loading


def load_onnx_model(path: str) -> onnx.ModelProto:
    """Read a binary `.onnx` or protobuf-text `.onnxtxt` model; errors name the file."""
    if not os.path.isfile(path):
        raise GlowError(f"-model: file \"{path}\" not found")
    try:
        if path.endswith(".onnxtxt"):
            with open(path, encoding="utf-8") as f:
                return text_format.Parse(f.read(), onnx.ModelProto())
        model = onnx.load(path)
    except onnx.checker.ValidationError as error:  # its external data file is missing or outside its directory
        raise GlowError(f"-model: \"{path}\": {_one_line(str(error))}") from None
    except Exception as error:  # protobuf raises several unrelated types
        raise GlowError(f"-model: \"{path}\" is not an ONNX model ({type(error).__name__})") from None
    if not model.graph.node and not model.graph.output:
        raise GlowError(f"-model: \"{path}\" is not an ONNX model (no graph)")
    return model


def check_text_fields(message, source: str) -> None:
    """Refuses a damaged protobuf model (ONNX, Caffe2) whose string fields (names, op types)
    are not UTF-8 text: protobuf hands such a field over as bytes."""
    pending = [message]
    while pending:
        for field, value in pending.pop().ListFields():
            values = value if field.is_repeated else [value]
            if field.type == field.TYPE_STRING:
                damaged = next((v for v in values if not isinstance(v, str)), None)
                if damaged is not None:
                    raise GlowError(f"{source} is damaged: {field.name} {damaged[:40]!r} is not UTF-8 text")
            elif field.type == field.TYPE_MESSAGE:
                pending.extend(values)


def _apply_input_settings(model: onnx.ModelProto, inputs: Sequence[ModelInput], symbols: dict[str, int]) -> None:
    """Write `-model-input` shapes and `-onnx-define-symbol` values into the graph inputs."""
    initializers = {t.name for t in model.graph.initializer}
    graph_inputs = {i.name: i for i in model.graph.input if i.name not in initializers}
    for spec in inputs:
        if spec.name not in graph_inputs:
            raise GlowError(f"-model-input: the model has no input \"{spec.name}\" (inputs: {', '.join(graph_inputs)})")
        dims = graph_inputs[spec.name].type.tensor_type.shape.dim
        del dims[:]
        for size in spec.shape:
            dims.add().dim_value = size
    if inputs or symbols:
        # Shapes recorded downstream of the inputs are stale now: let shape inference redo them.
        del model.graph.value_info[:]
        for output in model.graph.output:
            output.type.tensor_type.ClearField("shape")
    for symbol, value in symbols.items():
        check_symbol(symbol, value)
    for name, value_info in graph_inputs.items():
        how = f"set the input's shape with -model-input={name},float,[d0,d1,...]"
        dims = value_info.type.tensor_type.shape.dim
        for dim in dims:
            if dim.HasField("dim_param"):
                if dim.dim_param not in symbols:
                    raise GlowError(f"input \"{name}\" has the undefined symbolic dimension \"{dim.dim_param}\": "
                                    f"set it with -onnx-define-symbol={dim.dim_param},<value>")
                dim.dim_value = int(symbols[dim.dim_param])
        check_input_shape(name, [dim.dim_value if dim.HasField("dim_value") else None for dim in dims], how,
                          allow_empty=_only_its_type_is_read(model.graph, name))


_TYPE_ONLY_OPERANDS = {("CastLike", 1), ("Shape", 0), ("Size", 0)}
"""Operands of which only the type and shape are read: an empty tensor is well-defined there."""


def _only_its_type_is_read(graph: onnx.GraphProto, name: str) -> bool:
    """Whether every use of the tensor `name` reads only its type and shape."""
    return name not in {o.name for o in graph.output} and all(
        (node.op_type, position) in _TYPE_ONLY_OPERANDS
        for node in graph.node for position, operand in enumerate(node.input) if operand == name)


def check_input_shape(name: str, shape: Sequence[int | None], how: str = "", allow_empty: bool = False) -> None:
    """Every dimension of the graph input `name` is known (not None) and positive (or 0 with
    `allow_empty`); `how` tells the user how to set the shape."""
    for axis, size in enumerate(shape):
        if size is None:
            problem = "has no value"
        elif size == 0 and not allow_empty:
            problem = "is 0 (an empty input is not supported)"
        elif size < 0:
            problem = f"is {size}"
        else:
            continue
        raise GlowError(f"input \"{name}\": dimension {axis} {problem}" + (f": {how}" if how else ""))


def placeholder_names(graph: onnx.GraphProto, names: UniqueNames | None = None) -> dict[str, str]:
    """The bundle's placeholder name of each graph output and input: C-legal, unique (a
    clash gets Glow's `__1` suffix), outputs named first. Other storage named later by
    `names` gets a suffix on a clash with these."""
    names = UniqueNames() if names is None else names
    initializers = {t.name for t in graph.initializer}
    result = {o.name: names(o.name) for o in graph.output}
    for graph_input in graph.input:
        if graph_input.name not in initializers and graph_input.name not in result:
            result[graph_input.name] = names(graph_input.name)
    return result


# ----------------------------------------------------------------------------- importer


def verified(op: Operation, error: Callable[[str], GlowError]) -> Operation:
    """`op` once its verifier accepts it; otherwise `error(message)` (an importer's error
    naming the model node at fault) is raised."""
    try:
        op.verify()
    except VerifyException as exception:
        raise error(str(exception).splitlines()[0]) from None
    return op


Value = SSAValue | np.ndarray
NodeImporter = Callable[["OnnxImporter", onnx.NodeProto, dict], list[Value]]
_NODE_IMPORTERS: dict[str, NodeImporter] = {}


def imports(*op_types: str):
    """Registers the function that turns ONNX nodes of these types into glow ops."""

    def register(function: NodeImporter) -> NodeImporter:
        for op_type in op_types:
            _NODE_IMPORTERS[op_type] = function
        return function

    return register


class OnnxImporter:
    """Walks the ONNX graph in order, building the ops of one `glow.function`."""

    def __init__(self, model: onnx.ModelProto, inputs: Sequence[ModelInput] = ()):
        self.model = model
        self.quantized_inputs = {spec.name: spec for spec in inputs if spec.element_type == "int8q"}
        self.set_by_option = {spec.name for spec in inputs}
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
        self.block = Block()
        self.values: dict[str, Value] = {}
        self.names = UniqueNames()
        self.constants: dict[str, SSAValue] = {}
        self.node: onnx.NodeProto | None = None
        self.place = "graph outputs"  # what errors name when no node is being imported

    # --- building

    def add(self, op: Operation) -> SSAValue:
        self.block.add_op(verified(op, self.error))
        return op.results[0] if op.results else None

    def where(self) -> str:
        node = self.node
        if node is None:
            return self.place
        return f"node \"{node.name or node.output[0]}\" ({node.op_type}, opset {self.opset})"

    def error(self, message: str) -> GlowError:
        return GlowError(f"{self.where()}: {message}")

    def tensor(self, onnx_name: str) -> SSAValue:
        """The SSA value of an ONNX tensor; compile-time arrays become `glow.constant`s."""
        value = self.values[onnx_name]
        if isinstance(value, SSAValue):
            return value
        if onnx_name not in self.constants:
            array = value.astype(np.float32) if value.dtype.kind == "f" else value
            try:
                dense = dense_from_array(array)
            except ValueError:
                where = f"output \"{onnx_name}\"" if self.node is None else self.where()
                raise GlowError(f"{where}: tensor \"{onnx_name}\" of type {array.dtype} is not supported") from None
            self.constants[onnx_name] = self.add(glow.ConstantOp(self.names(onnx_name), dense))
        return self.constants[onnx_name]

    def constant(self, name: str, array: np.ndarray) -> SSAValue:
        return self.add(glow.ConstantOp(self.names(name), dense_from_array(np.asarray(array, np.float32))))

    def known(self, onnx_name: str) -> np.ndarray | None:
        """The compile-time value of an ONNX tensor, or None if it is computed at run time."""
        value = self.values.get(onnx_name) if onnx_name else None
        return value if isinstance(value, np.ndarray) else None

    def required_known(self, onnx_name: str, what: str) -> np.ndarray:
        value = self.known(onnx_name)
        if value is None:
            raise self.error(f"{what} (\"{onnx_name}\") must be a constant")
        return value

    # --- the walk

    def run(self, name: str) -> ModuleOp:
        graph = self.model.graph
        placeholders = placeholder_names(graph, self.names)
        for init in graph.initializer:
            try:
                self.values[init.name] = numpy_helper.to_array(init)
            except (ValueError, TypeError, KeyError) as error:  # onnx's checker does not read the data
                raise GlowError(f"initializer \"{init.name}\": its data cannot be read as data type "
                                f"{init.data_type}, shape {list(init.dims)} ({error!s})") from None
        for graph_input in graph.input:
            if graph_input.name in self.values:
                continue
            tensor_type = graph_input.type.tensor_type
            element = onnx_element_type(tensor_type.elem_type, f"input \"{graph_input.name}\"")
            shape = [d.dim_value for d in tensor_type.shape.dim]
            quantized = self.quantized_inputs.get(graph_input.name)
            self.place = f"input \"{graph_input.name}\"" + (" (set by -model-input)" if graph_input.name in
                                                              self.set_by_option else "")
            if quantized is None:
                placeholder = self.add(glow.PlaceholderOp(placeholders[graph_input.name], glow.tensor(shape, element)))
                self.values[graph_input.name] = self.converted(placeholder, compute_element(element))
            else:  # an int8 input: the float graph sees its dequantized values
                placeholder = self.add(glow.PlaceholderOp(placeholders[graph_input.name], glow.tensor(
                    shape, UniformQuantizedType(i8, quantized.scale, quantized.offset))))
                self.values[graph_input.name] = self.add(glow.DequantizeOp.create(
                    operands=[placeholder], result_types=[glow.tensor(shape)]))
        for node in graph.node:
            self.node = node
            self.import_node(node)
        self.node, self.place = None, "graph outputs"
        for graph_output in graph.output:
            source = self.tensor(graph_output.name)
            if source.type.element_type == f32:  # a float16 or double output is computed in float32
                source = self.converted(source, onnx_element_type(graph_output.type.tensor_type.elem_type,
                                                                  f"output \"{graph_output.name}\""))
            self.add(glow.SaveOp(source, placeholders[graph_output.name]))
        return ModuleOp([glow.FunctionOp(name, Region(self.block))])

    def import_node(self, node: onnx.NodeProto) -> None:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        attrs = {k: v.decode(errors="replace") if isinstance(v, bytes) else v for k, v in attrs.items()}
        if node.domain not in ("", "ai.onnx"):
            raise self.error(f"unsupported op domain \"{node.domain}\"")
        inputs = [self.known(i) for i in node.input]
        if all(v is not None or not name for v, name in zip(inputs, node.input)) and node.op_type != "Dropout":
            outputs = self.fold(node)
        elif node.op_type in _NODE_IMPORTERS:
            self.check_element_types(node)
            try:
                outputs = _NODE_IMPORTERS[node.op_type](self, node, attrs)
            except GlowError:
                raise
            except ValueError as error:  # a shape rule (glow.py, numpy broadcasting) refusing the operands
                raise self.error(str(error)) from None
        else:
            raise self.error(f"unsupported op type \"{node.op_type}\"")
        for name, value in zip(node.output, outputs):
            if name:
                self.values[name] = value
        self.name_results(node, outputs)

    def converted(self, value: SSAValue, element: Attribute) -> SSAValue:
        """`value` with the element type `element` (a `glow.convert` unless it has it)."""
        if value.type.element_type == element:
            return value
        return self.add(glow.ConvertOp.create(operands=[value], result_types=[glow.tensor(glow.shape_of(value), element)]))

    def check_element_types(self, node: onnx.NodeProto) -> None:
        """Only the ops in `ANY_ELEMENT_TYPE` take run-time integer or boolean data. The data
        is the first input (onnx's type check binds the others of its type to it); other
        run-time inputs are parameters (axes, pads, ...) each importer asks to be constant."""
        if node.op_type in ANY_ELEMENT_TYPE or not node.input:
            return
        value = self.values.get(node.input[0])
        if isinstance(value, SSAValue) and value.type.element_type != f32:
            dtype = np.dtype(numpy_dtype(value.type.element_type)).name
            raise self.error(f"element type {dtype} of \"{node.input[0]}\" is not supported by {node.op_type} "
                             f"(float only)")

    def name_results(self, node: onnx.NodeProto, outputs: list[Value]) -> None:
        """Gives the op computing each output Glow's node name (the ONNX node's name, else its
        first output's), unique among all names: profiles key values as `<name>:0`."""
        for value in outputs:
            op = value.owner if isinstance(value, SSAValue) else None
            if isinstance(op, Operation) and not isinstance(op, glow.PlaceholderOp | glow.ConstantOp) \
                    and glow.NODE_NAME not in op.attributes:
                op.attributes[glow.NODE_NAME] = StringAttr(self.names(node.name or node.output[0]))

    def fold(self, node: onnx.NodeProto) -> list[np.ndarray]:
        """Evaluates a node on compile-time inputs with onnx's reference evaluator."""
        feeds = {name: self.values[name] for name in node.input if name}
        try:
            graph = helper.make_graph([node], "fold", [helper.make_value_info(name, onnx.TypeProto()) for name in feeds],
                                      [helper.make_value_info(name, onnx.TypeProto()) for name in node.output])
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
            evaluator = ReferenceEvaluator(model)
            return [np.asarray(v) for v in evaluator.run(None, feeds)]
        except Exception as error:
            raise self.error(f"cannot evaluate constant node: {error}") from None


def import_onnx(path: str, inputs: Sequence[ModelInput] = (), symbols: dict[str, int] | None = None,
                name: str | None = None) -> ModuleOp:
    """Load, check, shape and import an ONNX model file into a module holding one `glow.function`."""
    network = name or legalize_name(os.path.splitext(os.path.basename(path))[0])
    return import_onnx_model(load_onnx_model(path), network, f"\"{path}\"", inputs, symbols)


def import_onnx_model(model: onnx.ModelProto, network: str, source: str, inputs: Sequence[ModelInput] = (),
                      symbols: dict[str, int] | None = None) -> ModuleOp:
    """Check, shape and import an in-memory ONNX model (the Caffe2 importer builds one);
    `source` names the model in errors."""
    _check_model_features(model, source)
    try:
        onnx.checker.check_model(_with_output_shape_fields(model))
        _apply_input_settings(model, inputs, symbols or {})
        model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    except onnx.checker.ValidationError as error:  # a message over several lines
        raise GlowError(f"{source} fails onnx's checks: {_one_line(str(error))}") from None
    except onnx.shape_inference.InferenceError as error:  # one line per node: the first is the cause
        raise GlowError(f"{source} fails onnx's checks: {str(error).strip().splitlines()[0]}") from None
    except UnicodeDecodeError:  # onnx's message quotes a damaged name
        raise GlowError(f"{source} fails onnx's checks: a name in the model is not UTF-8 text") from None
    module = OnnxImporter(model, inputs).run(network)
    verify_imported(module, source)
    return module


def _with_output_shape_fields(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model for onnx's checker: graph outputs whose shape is unset (onnxruntime loads
    them; shape inference types them) get an empty shape field, which the checker insists on."""
    def unshaped(output: onnx.ValueInfoProto) -> bool:
        return output.type.HasField("tensor_type") and not output.type.tensor_type.HasField("shape")

    if not any(map(unshaped, model.graph.output)):
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for output in filter(unshaped, copy.graph.output):
        output.type.tensor_type.shape.SetInParent()
    return copy


_CHECKER_NODE = re.compile(r"==> Context: Bad node spec for node\. Name: (\S*) OpType: (\S+)")


def _one_line(message: str) -> str:
    """onnx's multi-line checker and inference messages on one line, the node named."""
    message = _CHECKER_NODE.sub(lambda m: f"(node \"{m[1]}\", op {m[2]})", message)
    return " ".join(message.split())


def _check_model_features(model: onnx.ModelProto, source: str) -> None:
    """What onnx's checker lets through but the importer cannot honour."""
    newest = onnx.defs.onnx_opset_version()
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx") and opset.version > newest:
            raise GlowError(f"{source}: opset {opset.version} is newer than the newest this onnx knows ({newest})")
    check_text_fields(model, source)
    if not model.graph.output:
        raise GlowError(f"{source}: the graph has no outputs, so there is nothing to compute")
    for node in model.graph.node:
        if node.domain in ("", "ai.onnx") and not onnx.defs.has(node.op_type):
            name = node.name or (node.output[0] if node.output else "")
            raise GlowError(f"{source}: node \"{name}\": unsupported op type \"{node.op_type}\" "
                            f"(no ONNX operator has this name)")
    initializers = {t.name for t in model.graph.initializer}
    inputs = {i.name for i in model.graph.input if i.name not in initializers}
    passed_through = next((o.name for o in model.graph.output if o.name in inputs), None)
    if passed_through is not None:
        raise GlowError(f"{source}: graph output \"{passed_through}\" is also a graph input; a bundle placeholder "
                        f"is one or the other (add an Identity node to copy it)")
    if model.graph.sparse_initializer:
        raise GlowError(f"{source}: sparse initializer \"{model.graph.sparse_initializer[0].values.name}\" "
                        f"is not supported")


def verify_imported(module: ModuleOp, source: str) -> None:
    """Every importer ends here: a shape rule the importer did not foresee is a one-line error."""
    try:
        module.verify()
    except VerifyException as error:
        raise GlowError(f"{source}: the imported graph does not verify: {str(error).splitlines()[0]}") from None


# ----------------------------------------------------------------------------- node importers


def _window_pads(importer: OnnxImporter, attrs: dict, spatial: Sequence[int], kernel: Sequence[int],
                 strides: Sequence[int], dilations: Sequence[int]) -> list[int]:
    """ONNX `pads`/`auto_pad` as the begin of each spatial axis, then its end (2-D: [top, left,
    bottom, right])."""
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad in ("NOTSET", "VALID"):
        pads = list(attrs.get("pads", [0] * (2 * len(spatial)))) if auto_pad == "NOTSET" else [0] * (2 * len(spatial))
        if len(pads) != 2 * len(spatial):
            raise importer.error(f"pads {pads} do not give a begin and an end for {len(spatial)} spatial axes")
        return pads
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise importer.error(f"unknown auto_pad \"{auto_pad}\"")
    begin, end = [], []
    for size, k, s, d in zip(spatial, kernel, strides, dilations):
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small, large = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else large)
        end.append(large if auto_pad == "SAME_UPPER" else small)
    return begin + end


_WINDOW_ATTRIBUTES = {"kernel_shape": 1, "strides": 1, "dilations": 1, "output_padding": 0}
"""Window attributes of a 1-D node, and the value their added leading dimension takes."""


def one_dimensional_as_two(build: NodeImporter) -> NodeImporter:
    """Lets a 2-D window importer (Conv, pools) take a 1-D node: tensors [N, C, L] are seen as
    [N, C, 1, L] (a filter [O, I, K] as [O, I, 1, K]), window attributes get a unit first
    dimension, pads [b, e] become [0, b, 0, e], and the result is reshaped back."""

    def build_1d_or_2d(importer: OnnxImporter, node, attrs):
        x = importer.tensor(node.input[0])
        if len(glow.shape_of(x)) != 3:
            return build(importer, node, attrs)
        inputs = list(node.input)
        for index, name in enumerate(inputs[:2]):
            if index == 1 and not name:
                continue
            wide = f"{name}__2d"
            known = importer.known(name)
            if known is not None:
                importer.values[wide] = known.reshape(known.shape[:2] + (1,) + known.shape[2:])
            else:
                shape = glow.shape_of(importer.tensor(name))
                importer.values[wide] = _reshape_to(importer, importer.tensor(name), shape[:2] + (1,) + shape[2:])
            inputs[index] = wide
            if node.op_type not in ("Conv", "ConvTranspose"):
                break
        attrs = dict(attrs)
        for key, unit in _WINDOW_ATTRIBUTES.items():
            if key in attrs:
                attrs[key] = [unit, *attrs[key]]
        if "pads" in attrs:
            attrs["pads"] = [0, attrs["pads"][0], 0, attrs["pads"][1]]
        wide_node = helper.make_node(node.op_type, inputs, list(node.output), name=node.name)
        results = build(importer, wide_node, attrs)
        return [_reshape_to(importer, r, glow.shape_of(r)[:2] + glow.shape_of(r)[3:]) for r in results]

    return build_1d_or_2d


def three_dimensional_pools_as_two(build: NodeImporter) -> NodeImporter:
    """Lets a 2-D pool importer take a 3-D node. Max and average pooling are separable (an
    average's in-bounds count is the product of the per-axis counts): pool H and W over
    [N, C*D, H, W], then D over [N, C, D, H'*W'] with a [kd, 1] window."""

    def pool(importer: OnnxImporter, node, attrs, value: SSAValue, step: int) -> SSAValue:
        name = f"{node.output[0]}__3d{step}"
        importer.values[name] = value
        return build(importer, helper.make_node(node.op_type, [name], [node.output[0]], name=node.name), attrs)[0]

    def build_any(importer: OnnxImporter, node, attrs):
        x = importer.tensor(node.input[0])
        shape = glow.shape_of(x)
        if len(shape) != 5:
            return build(importer, node, attrs)
        n, c, d, h, w = shape
        if node.op_type.startswith("Global"):
            return [_reshape_to(importer, pool(importer, node, attrs, _reshape_to(importer, x, (n, c, d, h * w)), 0),
                                (n, c, 1, 1, 1))]
        kernel, strides = list(attrs["kernel_shape"]), list(attrs.get("strides", [1] * 3))
        dilations = list(attrs.get("dilations", [1] * 3))
        pads = _window_pads(importer, attrs, shape[2:], kernel, strides, dilations)
        common = {k: v for k, v in attrs.items() if k in ("ceil_mode", "count_include_pad")}
        planes = pool(importer, node, common | {"kernel_shape": kernel[1:], "strides": strides[1:],
                                                "dilations": dilations[1:], "pads": [*pads[1:3], *pads[4:6]]},
                      _reshape_to(importer, x, (n, c * d, h, w)), 0)
        height, width = glow.shape_of(planes)[2:]
        depth = pool(importer, node, common | {"kernel_shape": [kernel[0], 1], "strides": [strides[0], 1],
                                               "dilations": [dilations[0], 1], "pads": [pads[0], 0, pads[3], 0]},
                     _reshape_to(importer, planes, (n, c, d, height * width)), 1)
        return [_reshape_to(importer, depth, (n, c, glow.shape_of(depth)[2], height, width))]

    return build_any


def three_dimensional_convolution_as_two(build: NodeImporter) -> NodeImporter:
    """Lets the 2-D Conv importer take a 3-D node: with the depth planes as a batch, one 2-D
    convolution per depth tap kd of the filter (W[:, :, kd]) runs over every plane of the
    depth-padded input; output plane z sums, over kd, plane z * stride + kd * dilation of the
    kd-th result."""

    def build_any(importer: OnnxImporter, node, attrs):
        x = importer.tensor(node.input[0])
        shape = glow.shape_of(x)
        if len(shape) != 5:
            return build(importer, node, attrs)
        n, c, d, h, w = shape
        weights = importer.required_known(node.input[1], "the 3-D filter").astype(np.float32)
        _check_kernel_shape(importer, attrs, weights.shape[2:])
        k_d = weights.shape[2]
        strides, dilations = list(attrs.get("strides", [1] * 3)), list(attrs.get("dilations", [1] * 3))
        pads = _window_pads(importer, attrs, shape[2:], weights.shape[2:], strides, dilations)
        padded = _zero_pad(importer, x, [0, 0, pads[0], 0, 0], [0, 0, pads[3], 0, 0])
        depth = glow.shape_of(padded)[2]
        planes = _reshape_to(importer, importer.add(glow.transpose(padded, [0, 2, 1, 3, 4])), (n * depth, c, h, w))
        out_depth = glow.pooled_size(d, k_d, strides[0], pads[0], pads[3], dilations[0])
        plane_attrs = {k: v for k, v in attrs.items() if k in ("group",)} | {
            "strides": strides[1:], "dilations": dilations[1:], "pads": [*pads[1:3], *pads[4:6]]}
        total = None
        for tap in range(k_d):
            name = f"{node.output[0]}__tap{tap}"
            importer.values[f"{name}_w"] = weights[:, :, tap]
            importer.values[f"{name}_x"] = planes
            inputs = [f"{name}_x", f"{name}_w"] + ([node.input[2]] if tap == 0 and len(node.input) > 2 else [])
            result = build(importer, helper.make_node("Conv", inputs, [name], name=node.name), plane_attrs)[0]
            _, out_c, out_h, out_w = glow.shape_of(result)
            result = _reshape_to(importer, result, (n, depth, out_c, out_h, out_w))
            start = tap * dilations[0]
            sliced = importer.add(glow.SliceOp.create(
                operands=[result], result_types=[glow.tensor((n, out_depth, out_c, out_h, out_w))],
                properties={"starts": glow.ints([0, start, 0, 0, 0]), "steps": glow.ints([1, strides[0], 1, 1, 1])}))
            total = sliced if total is None else _binary(importer, glow.AddOp, total, sliced)
        return [importer.add(glow.transpose(total, [0, 2, 1, 3, 4]))]

    return build_any


@imports("Conv")
@three_dimensional_convolution_as_two
@one_dimensional_as_two
def _conv(importer: OnnxImporter, node, attrs):
    x, w = importer.tensor(node.input[0]), importer.tensor(node.input[1])
    x_shape, w_shape = glow.shape_of(x), glow.shape_of(w)
    if len(x_shape) != 4:
        raise importer.error(f"only 1-D, 2-D and 3-D convolution are supported (input {list(x_shape)})")
    _check_kernel_shape(importer, attrs, w_shape[2:])
    strides = list(attrs.get("strides", [1, 1]))
    dilations = list(attrs.get("dilations", [1, 1]))
    pads = _window_pads(importer, attrs, x_shape[2:], w_shape[2:], strides, dilations)
    group = attrs.get("group", 1)
    if len(node.input) > 2 and node.input[2]:
        bias = importer.tensor(node.input[2])
    else:
        bias = importer.constant(f"{node.output[0]}_bias", np.zeros(w_shape[0], np.float32))
    shape = glow.ConvolutionOp.shape_rule(x_shape, w_shape, strides, pads, dilations, group)
    op = glow.ConvolutionOp.create(
        operands=[x, w, bias], result_types=[glow.tensor(shape)],
        properties={"strides": glow.ints(strides), "pads": glow.ints(pads), "dilations": glow.ints(dilations),
                    "group": glow.IntegerAttr(group, glow.i64)})
    return [importer.add(op)]


def _check_kernel_shape(importer: OnnxImporter, attrs: dict, filter_window: Sequence[int]) -> None:
    """A Conv's or ConvTranspose's `kernel_shape` attribute, if given, is its filter's window."""
    if "kernel_shape" in attrs and list(attrs["kernel_shape"]) != list(filter_window):
        raise importer.error(f"kernel_shape {list(attrs['kernel_shape'])} disagrees with the filter's window "
                             f"{list(filter_window)}")


def _zero_pad(importer: OnnxImporter, x: SSAValue, begin: Sequence[int], end: Sequence[int]) -> SSAValue:
    """Zero padding (negative amounts crop)."""
    shape = glow.shape_of(x)
    if any(b < 0 for b in begin) or any(e < 0 for e in end):
        starts = [max(0, -b) for b in begin]
        sizes = [s - max(0, -b) - max(0, -e) for s, b, e in zip(shape, begin, end)]
        x = importer.add(glow.SliceOp.create(operands=[x], result_types=[glow.tensor(sizes)],
                                             properties={"starts": glow.ints(starts), "steps": glow.ints([1] * len(shape))}))
        begin, end, shape = [max(0, b) for b in begin], [max(0, e) for e in end], tuple(sizes)
    if not any(begin) and not any(end):
        return x
    out = [s + b + e for s, b, e in zip(shape, begin, end)]
    return importer.add(glow.PadOp.create(operands=[x], result_types=[glow.tensor(out)],
                                          properties={"pads": glow.ints([*begin, *end]), "value": glow.f32_attr(0.0)}))


@imports("ConvTranspose")
@one_dimensional_as_two
def _conv_transpose(importer: OnnxImporter, node, attrs):
    """A transposed convolution is a convolution (flipped kernel, in/out channels swapped,
    stride 1) over the input with (stride - 1) zeros between its pixels, padded by
    dilation * (kernel - 1) minus the transposed convolution's own pads. The filter may be
    computed at run time."""
    x = importer.tensor(node.input[0])
    w_shape = glow.shape_of(importer.tensor(node.input[1]))
    x_shape = glow.shape_of(x)
    _check_kernel_shape(importer, attrs, w_shape[2:])
    if len(x_shape) != 4 or "output_shape" in attrs or attrs.get("auto_pad", "NOTSET") != "NOTSET":
        raise importer.error("only 1-D and 2-D ConvTranspose with explicit pads are supported")
    strides, dilations = list(attrs.get("strides", [1, 1])), list(attrs.get("dilations", [1, 1]))
    pads, output_padding = list(attrs.get("pads", [0] * 4)), list(attrs.get("output_padding", [0, 0]))
    group = attrs.get("group", 1)
    n, c, h, width = x_shape
    # Zeros between pixels: [n,c,h,w] -> [n,c,h,1,w,1] -> pad -> [n,c,h,s,w,s] -> [n,c,h*s,w*s], crop the tail.
    if strides != [1, 1]:
        grid = _reshape_to(importer, x, (n, c, h, 1, width, 1))
        grid = _zero_pad(importer, grid, [0] * 6, [0, 0, 0, strides[0] - 1, 0, strides[1] - 1])
        x = _reshape_to(importer, grid, (n, c, h * strides[0], width * strides[1]))
        x = _zero_pad(importer, x, [0] * 4, [0, 0, 1 - strides[0], 1 - strides[1]])
    k_h, k_w = w_shape[2:]
    begin = [dilations[0] * (k_h - 1) - pads[0], dilations[1] * (k_w - 1) - pads[1]]
    end = [dilations[0] * (k_h - 1) - pads[2] + output_padding[0], dilations[1] * (k_w - 1) - pads[3] + output_padding[1]]
    x = _zero_pad(importer, x, [0, 0, *begin], [0, 0, *end])
    filter_ = _transposed_filter(importer, node.input[1], group)
    flipped_shape = glow.shape_of(filter_)
    bias = importer.tensor(node.input[2]) if len(node.input) > 2 and node.input[2] else \
        importer.constant(f"{node.output[0]}_bias", np.zeros(flipped_shape[0], np.float32))
    shape = glow.ConvolutionOp.shape_rule(glow.shape_of(x), flipped_shape, [1, 1], [0, 0, 0, 0], dilations, group)
    op = glow.ConvolutionOp.create(
        operands=[x, filter_, bias], result_types=[glow.tensor(shape)],
        properties={"strides": glow.ints([1, 1]), "pads": glow.ints([0, 0, 0, 0]), "dilations": glow.ints(dilations),
                    "group": glow.IntegerAttr(group, glow.i64)})
    return [importer.add(op)]


def _transposed_filter(importer: OnnxImporter, name: str, group: int) -> SSAValue:
    """A ConvTranspose filter [C_in, C_out/g, kh, kw] as the equivalent convolution's
    [C_out, C_in/g, kh, kw]: in and out channels swapped within each group, the window
    flipped. Computed here for a constant filter, else by ops at run time."""
    known = importer.known(name)
    if known is not None:
        w = known.astype(np.float32)
        per_group = w.shape[0] // group
        flipped = np.concatenate([w[g * per_group:(g + 1) * per_group].transpose(1, 0, 2, 3)[:, :, ::-1, ::-1]
                                  for g in range(group)], axis=0)
        return importer.constant(f"{name}_flipped", np.ascontiguousarray(flipped))
    w = importer.tensor(name)
    c_in, out_per_group, k_h, k_w = glow.shape_of(w)
    grouped = _reshape_to(importer, w, (group, c_in // group, out_per_group, k_h, k_w))
    swapped = importer.add(glow.transpose(grouped, [0, 2, 1, 3, 4]))
    w = _reshape_to(importer, swapped, (group * out_per_group, c_in // group, k_h, k_w))
    for axis, size in ((2, k_h), (3, k_w)):  # reverse the window: a resampling by reversed taps
        if size > 1:
            shape = glow.shape_of(w)
            taps = importer.add(glow.ConstantOp(importer.names(f"{name}_reversed{axis}"),
                                                dense_from_array(np.arange(size - 1, -1, -1, dtype=np.int32)[:, None])))
            ones = importer.constant(f"{name}_ones{axis}", np.ones((size, 1), np.float32))
            w = importer.add(glow.ResampleOp.create(operands=[w, taps, ones], result_types=[glow.tensor(shape)],
                                                    properties={"axis": glow.IntegerAttr(axis, glow.i64)}))
    return w


def _pool(importer: OnnxImporter, node, attrs, op_type, kernel, strides, pads, **extra):
    x = importer.tensor(node.input[0])
    n, c, h, w = glow.shape_of(x)
    properties = {"kernel": glow.ints(kernel), "strides": glow.ints(strides), "pads": glow.ints(pads)} | extra
    shape = (n, c, glow.pooled_size(h, kernel[0], strides[0], pads[0], pads[2]),
             glow.pooled_size(w, kernel[1], strides[1], pads[1], pads[3]))
    return [importer.add(op_type.create(operands=[x], result_types=[glow.tensor(shape)], properties=properties))]


@imports("MaxPool", "AveragePool")
@three_dimensional_pools_as_two
@one_dimensional_as_two
def _max_avg_pool(importer: OnnxImporter, node, attrs):
    if len(node.output) > 1 and node.output[1]:
        raise importer.error("the Indices output of MaxPool is not supported")
    x_shape = glow.shape_of(importer.tensor(node.input[0]))
    kernel = list(attrs["kernel_shape"])
    if len(kernel) != 2 or len(x_shape) != 4:
        raise importer.error("only 1-D, 2-D and 3-D pooling are supported")
    strides = list(attrs.get("strides", [1, 1]))
    if any(d != 1 for d in attrs.get("dilations", [1, 1])):
        raise importer.error("dilated pooling is not supported")
    pads = _window_pads(importer, attrs, x_shape[2:], kernel, strides, [1, 1])
    if attrs.get("ceil_mode", 0):
        # Extend the end padding so that floor rounding gives ceil's extent, except for a
        # last window that would start in the end padding (ONNX drops that one).
        for axis in range(2):
            size, k, s = x_shape[2 + axis], kernel[axis], strides[axis]
            out = -(-(size + pads[axis] + pads[axis + 2] - k) // s) + 1
            if (out - 1) * s >= size + pads[axis]:
                out -= 1
            pads[axis + 2] = max(pads[axis + 2], (out - 1) * s + k - size - pads[axis])
        if node.op_type == "AveragePool" and attrs.get("count_include_pad", 0):
            raise importer.error("ceil_mode with count_include_pad is not supported")
    if node.op_type == "MaxPool":
        return _pool(importer, node, attrs, glow.MaxPoolOp, kernel, strides, pads)
    return _pool(importer, node, attrs, glow.AvgPoolOp, kernel, strides, pads,
                 **glow.flags(count_include_pad=bool(attrs.get("count_include_pad", 0))))


@imports("GlobalAveragePool", "GlobalMaxPool")
@three_dimensional_pools_as_two
@one_dimensional_as_two
def _global_pool(importer: OnnxImporter, node, attrs):
    x_shape = glow.shape_of(importer.tensor(node.input[0]))
    if len(x_shape) != 4:
        raise importer.error("only 1-D, 2-D and 3-D pooling are supported")
    op_type = glow.AvgPoolOp if node.op_type == "GlobalAveragePool" else glow.MaxPoolOp
    return _pool(importer, node, attrs, op_type, list(x_shape[2:]), [1, 1], [0, 0, 0, 0])


def _unary_value(importer: OnnxImporter, op_type, x: SSAValue, **properties) -> SSAValue:
    """An elementwise op of x (same type)."""
    return importer.add(op_type.create(operands=[x], result_types=[x.type], properties=properties))


def _unary(op_type, **properties):
    def build(importer: OnnxImporter, node, attrs):
        return [_unary_value(importer, op_type, importer.tensor(node.input[0]), **properties)]

    return build


imports("Relu")(_unary(glow.ReluOp))
imports("HardSwish")(_unary(glow.HardSwishOp))
imports("Exp")(_unary(glow.ExpOp))
imports("Neg")(_unary(glow.NegOp))
imports("Abs")(_unary(glow.AbsOp))
imports("Sqrt")(_unary(glow.SqrtOp))
imports("Reciprocal")(_unary(glow.ReciprocalOp))
imports("Log")(_unary(glow.LogOp))
imports("Softplus")(_unary(glow.SoftplusOp))
imports("Softsign")(_unary(glow.SoftsignOp))
imports("Mish")(_unary(glow.MishOp))


def _parametric(op_type, **defaults):
    """An elementwise op whose ONNX attributes (with ONNX's defaults) become alpha/beta."""

    def build(importer: OnnxImporter, node, attrs):
        properties = {ours: glow.f32_attr(attrs.get(onnx_name, default))
                      for ours, (onnx_name, default) in defaults.items()}
        return _unary(op_type, **properties)(importer, node, attrs)

    return build


imports("LeakyRelu")(_parametric(glow.LeakyReluOp, alpha=("alpha", 0.01)))
imports("Elu")(_parametric(glow.EluOp, alpha=("alpha", 1.0)))
imports("Selu")(_parametric(glow.SeluOp, alpha=("alpha", 1.67326319217681884765625),
                            beta=("gamma", 1.05070102214813232421875)))
imports("HardSigmoid")(_parametric(glow.HardSigmoidOp, alpha=("alpha", 0.2), beta=("beta", 0.5)))
imports("Celu")(_parametric(glow.CeluOp, alpha=("alpha", 1.0)))
imports("Sigmoid")(_unary(glow.SigmoidOp))
imports("Tanh")(_unary(glow.TanhOp))


@imports("Identity", "Dropout")
def _identity(importer: OnnxImporter, node, attrs):
    if node.op_type == "Dropout" and len(node.input) > 2 and node.input[2]:
        training = importer.known(node.input[2])
        if training is None or training.any():
            raise importer.error("training-mode Dropout is not supported (inference only)")
    value = importer.values[node.input[0]]
    shape = value.shape if isinstance(value, np.ndarray) else glow.shape_of(value)
    return [value, np.ones(shape, bool)]  # at inference Dropout keeps everything


@imports("Clip")
def _clip(importer: OnnxImporter, node, attrs):
    if importer.opset < 11:
        low, high = attrs.get("min", -np.inf), attrs.get("max", np.inf)
    else:
        low = importer.required_known(node.input[1], "min") if len(node.input) > 1 and node.input[1] else -np.inf
        high = importer.required_known(node.input[2], "max") if len(node.input) > 2 and node.input[2] else np.inf
    low, high = float(low), float(high)
    if low == 0.0 and high == np.inf:
        return _unary(glow.ReluOp)(importer, node, attrs)
    return _unary(glow.ClipOp, min=glow.f32_attr(low), max=glow.f32_attr(high))(importer, node, attrs)


def _reshape_to(importer: OnnxImporter, x: SSAValue, shape: Sequence[int]) -> SSAValue:
    if glow.shape_of(x) == tuple(shape):
        return x
    return importer.add(glow.ReshapeOp.create(operands=[x], result_types=[like(x, shape)]))


@imports("Softmax", "LogSoftmax")
def _softmax(importer: OnnxImporter, node, attrs):
    x = importer.tensor(node.input[0])
    shape = glow.shape_of(x)
    log = glow.flags(log=node.op_type == "LogSoftmax")
    axis = attrs.get("axis", 1 if importer.opset < 13 else -1) % len(shape)
    if importer.opset < 13:
        # Before opset 13 the input is coerced to 2-D at `axis`.
        rows, columns = int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))
        flat = _reshape_to(importer, x, (rows, columns))
        op = glow.SoftMaxOp.create(operands=[flat], result_types=[flat.type],
                                   properties={"axis": glow.IntegerAttr(1, glow.i64)} | log)
        return [_reshape_to(importer, importer.add(op), shape)]
    op = glow.SoftMaxOp.create(operands=[x], result_types=[x.type],
                               properties={"axis": glow.IntegerAttr(axis, glow.i64)} | log)
    return [importer.add(op)]


@imports("LRN")
def _lrn(importer: OnnxImporter, node, attrs):
    x = importer.tensor(node.input[0])
    if len(glow.shape_of(x)) != 4:
        raise importer.error("only 4-D LRN is supported")
    properties = {"size": glow.IntegerAttr(attrs["size"], glow.i64), "alpha": glow.f32_attr(attrs.get("alpha", 1e-4)),
                  "beta": glow.f32_attr(attrs.get("beta", 0.75)), "bias": glow.f32_attr(attrs.get("bias", 1.0))}
    op = glow.LocalResponseNormalizationOp.create(operands=[x], result_types=[x.type], properties=properties)
    return [importer.add(op)]


@imports("BatchNormalization")
def _batch_norm(importer: OnnxImporter, node, attrs):
    if len([o for o in node.output if o]) > 1:
        raise importer.error("training-mode BatchNormalization is not supported")
    for name, what in zip(node.input[1:5], ("scale", "bias", "mean", "var")):
        importer.required_known(name, what)
    operands = [importer.tensor(name) for name in node.input[:5]]
    op = glow.BatchNormalizationOp.create(operands=operands, result_types=[operands[0].type],
                                          properties={"epsilon": glow.f32_attr(attrs.get("epsilon", 1e-5))})
    return [importer.add(op)]


_BINARY = {"Add": glow.AddOp, "Sub": glow.SubOp, "Mul": glow.MulOp, "Div": glow.DivOp,
           "Max": glow.MaxOp, "Min": glow.MinOp, "Sum": glow.AddOp, "Mean": glow.AddOp, "PRelu": glow.PReluOp}


def _binary(importer: OnnxImporter, op_type, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
    shape = glow.broadcast_shapes(glow.shape_of(lhs), glow.shape_of(rhs))
    return importer.add(op_type.create(operands=[lhs, rhs], result_types=[like(lhs, shape)]))


@imports(*_BINARY)
def _elementwise(importer: OnnxImporter, node, attrs):
    if importer.opset < 7 and attrs.get("broadcast"):
        raise importer.error("legacy broadcast (opset < 7) is not supported")
    values = [importer.tensor(name) for name in node.input]
    if node.op_type == "PRelu":
        # a 1-D slope of one value per channel applies along axis 1 (PyTorch's exports)
        x_shape, slope_shape = glow.shape_of(values[0]), glow.shape_of(values[1])
        if len(slope_shape) == 1 and len(x_shape) > 2 and slope_shape[0] == x_shape[1] != x_shape[-1]:
            values[1] = _reshape_to(importer, values[1], (slope_shape[0],) + (1,) * (len(x_shape) - 2))
    result = values[0]
    for value in values[1:]:
        result = _binary(importer, _BINARY[node.op_type], result, value)
    if node.op_type == "Mean" and len(values) > 1:
        count = importer.add(glow.SplatOp(1.0 / len(values), glow.tensor([1])))
        result = _binary(importer, glow.MulOp, result, count)
    return [result]


@imports("Gemm")
def _gemm(importer: OnnxImporter, node, attrs):
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    a = importer.tensor(node.input[0])
    if attrs.get("transA", 0):
        a = importer.add(glow.transpose(a, [1, 0]))
    b = importer.known(node.input[1])
    has_c = len(node.input) > 2 and node.input[2]
    c = importer.known(node.input[2]) if has_c else None
    if b is None or (has_c and c is None):  # weights computed at run time
        return [_gemm_at_run_time(importer, node, attrs, a)]
    b = (b.T if attrs.get("transB", 0) else b) * np.float32(alpha)
    m, n = glow.shape_of(a)[0], b.shape[1]
    c = np.broadcast_to(np.asarray(np.zeros(n) if c is None else c, np.float32) * np.float32(beta), (m, n))
    if m > 1 and not (c == c[0]).all():  # FullyConnected's bias is one row
        return [_gemm_at_run_time(importer, node, attrs, a)]
    weights = importer.constant(node.input[1], b)
    bias = importer.constant(node.input[2] if len(node.input) > 2 and node.input[2] else f"{node.output[0]}_bias", c[0])
    op = glow.FullyConnectedOp.create(operands=[a, weights, bias], result_types=[glow.tensor((m, n))])
    return [importer.add(op)]


def _gemm_at_run_time(importer: OnnxImporter, node, attrs, a: SSAValue) -> SSAValue:
    """alpha * A B + beta * C with B (or a per-row C) computed at run time: a MatMul, a
    transpose of B if asked, and broadcasting Mul/Add."""
    b = importer.tensor(node.input[1])
    if attrs.get("transB", 0):
        b = importer.add(glow.transpose(b, [1, 0]))
    product = importer.add(glow.MatMulOp.create(
        operands=[a, b], result_types=[glow.tensor((glow.shape_of(a)[0], glow.shape_of(b)[1]))]))
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    if alpha != 1.0:
        product = _binary(importer, glow.MulOp, product, importer.constant(f"{node.output[0]}_alpha", np.float32(alpha)))
    if len(node.input) > 2 and node.input[2]:
        c = importer.tensor(node.input[2])
        if beta != 1.0:
            c = _binary(importer, glow.MulOp, c, importer.constant(f"{node.output[0]}_beta", np.float32(beta)))
        product = _binary(importer, glow.AddOp, product, c)
    return product


@imports("MatMul")
def _matmul(importer: OnnxImporter, node, attrs):
    a = importer.tensor(node.input[0])
    b = importer.known(node.input[1])
    if b is not None and b.ndim == 2 and len(glow.shape_of(a)) == 2:
        weights = importer.constant(node.input[1], b)
        bias = importer.constant(f"{node.output[0]}_bias", np.zeros(b.shape[1], np.float32))
        op = glow.FullyConnectedOp.create(operands=[a, weights, bias],
                                          result_types=[glow.tensor((glow.shape_of(a)[0], b.shape[1]))])
        return [importer.add(op)]
    rhs = importer.tensor(node.input[1])
    a_shape, b_shape = glow.shape_of(a), glow.shape_of(rhs)
    if len(a_shape) < 2 or len(b_shape) < 2:
        raise importer.error("MatMul of 1-D tensors is not supported")
    shape = glow.broadcast_shapes(a_shape[:-2], b_shape[:-2]) + (a_shape[-2], b_shape[-1])
    return [importer.add(glow.MatMulOp.create(operands=[a, rhs], result_types=[glow.tensor(shape)]))]


@imports("Reshape")
def _reshape(importer: OnnxImporter, node, attrs):
    x = importer.tensor(node.input[0])
    target = attrs["shape"] if importer.opset < 5 else importer.required_known(node.input[1], "the shape")
    in_shape = glow.shape_of(x)
    shape = [in_shape[i] if d == 0 and not attrs.get("allowzero", 0) else int(d) for i, d in enumerate(target)]
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1]))
        shape[shape.index(-1)] = int(np.prod(in_shape)) // max(known, 1)
    if int(np.prod(shape)) != int(np.prod(in_shape)):
        raise importer.error(f"cannot reshape {list(in_shape)} to {list(target)}")
    return [_reshape_to(importer, x, shape)]


@imports("Flatten")
def _flatten(importer: OnnxImporter, node, attrs):
    x = importer.tensor(node.input[0])
    shape = glow.shape_of(x)
    axis = attrs.get("axis", 1)
    axis = axis + len(shape) if axis < 0 else axis
    return [_reshape_to(importer, x, (int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))))]


@imports("Squeeze", "Unsqueeze")
def _squeeze(importer: OnnxImporter, node, attrs):
    x = importer.tensor(node.input[0])
    shape = list(glow.shape_of(x))
    if importer.opset < 13:
        axes = attrs.get("axes")
    else:
        axes = importer.required_known(node.input[1], "axes") if len(node.input) > 1 and node.input[1] else None
    if node.op_type == "Squeeze":
        axes = [a % len(shape) for a in axes] if axes is not None else [i for i, d in enumerate(shape) if d == 1]
        new_shape = [d for i, d in enumerate(shape) if i not in axes]
    else:
        rank = len(shape) + len(axes)
        new_shape = shape
        for axis in sorted(int(a) % rank for a in axes):
            new_shape.insert(axis, 1)
    return [_reshape_to(importer, x, new_shape)]


@imports("Transpose")
def _transpose(importer: OnnxImporter, node, attrs):
    x = importer.tensor(node.input[0])
    shape = glow.shape_of(x)
    return [importer.add(glow.transpose(x, list(attrs.get("perm", range(len(shape) - 1, -1, -1)))))]


@imports("Concat")
def _concat(importer: OnnxImporter, node, attrs):
    values = [importer.tensor(name) for name in node.input]
    return [_concat_values(importer, values, attrs["axis"] % len(glow.shape_of(values[0])))]


@imports("Slice")
def _slice(importer: OnnxImporter, node, attrs):
    x = importer.tensor(node.input[0])
    shape = glow.shape_of(x)

    def operand(index, what):
        return importer.required_known(node.input[index], what) if len(node.input) > index and node.input[index] else None

    if importer.opset < 10:
        starts, ends, axes, steps = attrs["starts"], attrs["ends"], attrs.get("axes"), None
    else:
        starts, ends, axes, steps = operand(1, "starts"), operand(2, "ends"), operand(3, "axes"), operand(4, "steps")
    axes = list(range(len(starts))) if axes is None else [int(a) % len(shape) for a in axes]
    steps = [1] * len(starts) if steps is None else [int(s) for s in steps]
    begin, step, out = [0] * len(shape), [1] * len(shape), list(shape)
    for axis, start, end, s in zip(axes, starts, ends, steps):
        if s < 1:
            raise importer.error("Slice with a negative step is not supported")
        size = shape[axis]
        start, end = (int(v) + size if v < 0 else int(v) for v in (max(start, -size), max(end, -size - 1)))
        start, end = min(max(start, 0), size), min(max(end, 0), size)
        begin[axis], step[axis], out[axis] = start, s, max(0, -(-(end - start) // s))
    if 0 in out:
        raise importer.error("Slice produces an empty tensor")
    op = glow.SliceOp.create(operands=[x], result_types=[like(x, out)],
                             properties={"starts": glow.ints(begin), "steps": glow.ints(step)})
    return [importer.add(op)]


def _slice_axis(importer: OnnxImporter, x: SSAValue, axis: int, start: int, stop: int) -> SSAValue:
    """x[..., start:stop, ...] along `axis` (step 1)."""
    shape = list(glow.shape_of(x))
    starts = [0] * len(shape)
    starts[axis], shape[axis] = start, stop - start
    return importer.add(glow.SliceOp.create(operands=[x], result_types=[like(x, shape)],
                                            properties={"starts": glow.ints(starts), "steps": glow.ints([1] * len(shape))}))


def _concat_values(importer: OnnxImporter, pieces: list[SSAValue], axis: int) -> SSAValue:
    shape = list(glow.shape_of(pieces[0]))
    shape[axis] = sum(glow.shape_of(p)[axis] for p in pieces)
    return importer.add(glow.ConcatOp.create(operands=pieces, result_types=[like(pieces[0], shape)],
                                             properties={"axis": glow.IntegerAttr(axis, glow.i64)}))


def _pad_by_copies(importer: OnnxImporter, x: SSAValue, pads: list[int], mode: str) -> SSAValue:
    """Edge, reflect and wrap padding as a Concat of slices of the input, axis by axis."""
    rank = len(glow.shape_of(x))
    for axis in range(rank):
        begin, end = pads[axis], pads[axis + rank]
        size = glow.shape_of(x)[axis]
        if not begin and not end:
            continue
        if mode == "reflect" and max(begin, end) >= size:
            raise importer.error(f"reflect padding of {max(begin, end)} needs more than {size} elements")
        if mode == "wrap":
            left = [_slice_axis(importer, x, axis, size - begin, size)] if begin else []
            right = [_slice_axis(importer, x, axis, 0, end)] if end else []
        else:  # one element per padded position: the edge, or its mirror image
            left_index = (lambda k: 0) if mode == "edge" else (lambda k: begin - k)
            right_index = (lambda k: size - 1) if mode == "edge" else (lambda k: size - 2 - k)
            left = [_slice_axis(importer, x, axis, left_index(k), left_index(k) + 1) for k in range(begin)]
            right = [_slice_axis(importer, x, axis, right_index(k), right_index(k) + 1) for k in range(end)]
        x = _concat_values(importer, [*left, x, *right], axis)
    return x


@imports("Pad")
def _pad(importer: OnnxImporter, node, attrs):
    x = importer.tensor(node.input[0])
    shape = glow.shape_of(x)
    mode = attrs.get("mode", "constant")
    if mode not in ("constant", "edge", "reflect", "wrap"):
        raise importer.error(f"Pad mode \"{mode}\" is not supported")
    if importer.opset < 11:
        pads, value = list(attrs["pads"]), attrs.get("value", 0.0)
    else:
        pads = [int(p) for p in importer.required_known(node.input[1], "pads")]
        value = importer.known(node.input[2]) if len(node.input) > 2 and node.input[2] else 0.0
        if len(node.input) > 3 and node.input[3]:
            raise importer.error("Pad with axes is not supported")
    if min(pads) < 0:
        raise importer.error("negative pads are not supported")
    if mode != "constant":
        return [_pad_by_copies(importer, x, pads, mode)]
    rank = len(shape)
    out = [s + pads[d] + pads[d + rank] for d, s in enumerate(shape)]
    op = glow.PadOp.create(operands=[x], result_types=[like(x, out)],
                           properties={"pads": glow.ints(pads), "value": glow.f32_attr(float(np.asarray(value).reshape(-1)[0]))})
    return [importer.add(op)]


_COORDINATE_TRANSFORMS = {
    "half_pixel": lambda x, scale, out, size: (x + 0.5) / scale - 0.5,
    "pytorch_half_pixel": lambda x, scale, out, size: (x + 0.5) / scale - 0.5 if out > 1 else 0.0 * x,
    "align_corners": lambda x, scale, out, size: x * (size - 1) / (out - 1) if out > 1 else 0.0 * x,
    "asymmetric": lambda x, scale, out, size: x / scale,
    "half_pixel_symmetric": lambda x, scale, out, size:
        size / 2 * (1 - out / (size * scale)) + (x + 0.5) / scale - 0.5,
}
"""ONNX Resize's coordinate_transformation_mode: output coordinate -> input coordinate."""

_NEAREST_MODES = {
    "round_prefer_floor": lambda x: np.where(x - np.floor(x) == 0.5, np.floor(x), np.round(x)),
    "round_prefer_ceil": lambda x: np.where(x - np.floor(x) == 0.5, np.ceil(x), np.round(x)),
    "floor": np.floor,
    "ceil": np.ceil,
}


def _resample_axis(importer: OnnxImporter, x: SSAValue, axis: int, out: int, scale: float, mode: str,
                   transform: str, nearest_mode: str) -> SSAValue:
    """One axis of a Resize: the taps and weights of each output position, computed here."""
    size = glow.shape_of(x)[axis]
    position = _COORDINATE_TRANSFORMS[transform](np.arange(out, dtype=np.float64), scale, out, size)
    if mode == "nearest":
        taps = np.clip(_NEAREST_MODES[nearest_mode](position), 0, size - 1).astype(np.int32)[:, None]
        weights = np.ones_like(taps, np.float32)
    else:  # linear, clamped to the edge as onnxruntime does
        position = np.clip(position, 0, size - 1)
        low = np.floor(position)
        fraction = (position - low).astype(np.float32)
        taps = np.stack([low, np.minimum(low + 1, size - 1)], axis=1).astype(np.int32)
        weights = np.stack([1 - fraction, fraction], axis=1).astype(np.float32)
    if out == size and taps.shape[1] == 1 and (taps[:, 0] == np.arange(size)).all():
        return x  # this axis does not change
    shape = list(glow.shape_of(x))
    shape[axis] = out
    name = importer.node.name or importer.node.output[0]
    taps_constant = importer.add(glow.ConstantOp(importer.names(f"{name}_taps{axis}"), dense_from_array(taps)))
    weights_constant = importer.constant(f"{name}_weights{axis}", weights)
    return importer.add(glow.ResampleOp.create(operands=[x, taps_constant, weights_constant],
                                               result_types=[glow.tensor(shape)],
                                               properties={"axis": glow.IntegerAttr(axis, glow.i64)}))


@imports("Resize", "Upsample")
def _resize(importer: OnnxImporter, node, attrs):
    """Nearest or linear resizing with constant scales or sizes, one axis at a time."""
    x = importer.tensor(node.input[0])
    shape = glow.shape_of(x)
    mode = attrs.get("mode", "nearest")
    if mode not in ("nearest", "linear"):
        raise importer.error(f"Resize mode \"{mode}\" is not supported (nearest, linear)")
    if node.op_type == "Upsample":  # the deprecated op: asymmetric coordinates, floor
        transform, nearest_mode = "asymmetric", "floor"
        scales = attrs.get("scales") if importer.opset < 9 else importer.required_known(node.input[1], "scales")
        sizes = None
    else:
        transform = attrs.get("coordinate_transformation_mode", "half_pixel")
        nearest_mode = attrs.get("nearest_mode", "round_prefer_floor")
        if transform not in _COORDINATE_TRANSFORMS or attrs.get("antialias", 0) or "axes" in attrs:
            raise importer.error(f"Resize with coordinate_transformation_mode \"{transform}\", antialias or axes "
                                 "is not supported")
        inputs = list(node.input) + [""] * (4 - len(node.input))
        scales = importer.known(inputs[2]) if importer.opset >= 11 else importer.known(inputs[1])
        sizes = importer.known(inputs[3]) if inputs[3] else None
        if (scales is None or scales.size == 0) and sizes is None:
            raise importer.error("Resize needs constant scales or sizes")
    if sizes is not None and len(sizes):
        outputs = [int(v) for v in sizes]
        scales = [o / s for o, s in zip(outputs, shape)]
    else:
        scales = [float(v) for v in np.asarray(scales).reshape(-1)]
        outputs = [int(np.floor(s * f)) for s, f in zip(shape, scales)]
    if len(outputs) != len(shape):
        raise importer.error(f"Resize needs one scale or size per dimension of {list(shape)}")
    for axis, (out, scale) in enumerate(zip(outputs, scales)):
        x = _resample_axis(importer, x, axis, out, scale, mode, transform, nearest_mode)
    return [x]


@imports("Split")
def _split(importer: OnnxImporter, node, attrs):
    """Split becomes one Slice per output."""
    x = importer.tensor(node.input[0])
    shape = glow.shape_of(x)
    axis = attrs.get("axis", 0) % len(shape)
    outputs = [o for o in node.output]
    if importer.opset < 13 and "split" in attrs:
        sizes = list(attrs["split"])
    elif importer.opset >= 13 and len(node.input) > 1 and node.input[1]:
        sizes = [int(v) for v in importer.required_known(node.input[1], "split")]
    else:
        parts = attrs.get("num_outputs", len(outputs))
        chunk = -(-shape[axis] // parts)
        sizes = [min(chunk, shape[axis] - i * chunk) for i in range(parts)]
    if sum(sizes) != shape[axis] or len(sizes) != len(outputs):
        raise importer.error(f"split sizes {sizes} do not divide axis {axis} of {list(shape)}")
    if 0 in sizes:
        raise importer.error("Split into an empty part is not supported")
    results, start = [], 0
    for size in sizes:
        results.append(_slice_axis(importer, x, axis, start, start + size))
        start += size
    return results


_COMPOSITE_REDUCTIONS = {
    # op: (applied to each element, reduction, applied to the result)
    "ReduceL1": (lambda importer, x: _unary_value(importer, glow.AbsOp, x), "sum", None),
    "ReduceL2": (lambda importer, x: _binary(importer, glow.MulOp, x, x), "sum",
                 lambda importer, x: _unary_value(importer, glow.SqrtOp, x)),
    "ReduceSumSquare": (lambda importer, x: _binary(importer, glow.MulOp, x, x), "sum", None),
    "ReduceLogSum": (None, "sum", lambda importer, x: _unary_value(importer, glow.LogOp, x)),
}


@imports("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceLogSumExp", *_COMPOSITE_REDUCTIONS)
def _reduce(importer: OnnxImporter, node, attrs):
    """The reductions glow.reduce has, and those built around one: L1, L2, SumSquare,
    LogSum, and LogSumExp as max + log(sum(exp(x - max)))."""
    x = importer.tensor(node.input[0])
    shape = glow.shape_of(x)
    axes_from_input = node.op_type == "ReduceSum" and importer.opset >= 13 or importer.opset >= 18
    if axes_from_input:
        axes = importer.known(node.input[1]) if len(node.input) > 1 and node.input[1] else None
        if len(node.input) > 1 and node.input[1] and axes is None:
            raise importer.error("axes must be a constant")
    else:
        axes = attrs.get("axes")
    if axes is None or len(axes) == 0:
        if attrs.get("noop_with_empty_axes", 0):
            return [x]
        axes = range(len(shape))
    axes = sorted({int(a) % len(shape) for a in axes})
    keep = attrs.get("keepdims", 1)
    out = [1 if d in axes else s for d, s in enumerate(shape)] if keep else [s for d, s in enumerate(shape) if d not in axes]
    if node.op_type == "ReduceLogSumExp":
        largest = _reduce_axes(importer, x, "max", axes)
        exponentials = _unary_value(importer, glow.ExpOp, _binary(importer, glow.SubOp, x, largest))
        logarithm = _unary_value(importer, glow.LogOp, _reduce_axes(importer, exponentials, "sum", axes))
        return [_reshape_to(importer, _binary(importer, glow.AddOp, logarithm, largest), out)]
    before, kind, after = _COMPOSITE_REDUCTIONS.get(node.op_type, (None, node.op_type.removeprefix("Reduce").lower(),
                                                                   None))
    reduced = _reduce_axes(importer, before(importer, x) if before else x, kind, axes, out)
    return [after(importer, reduced) if after else reduced]


def _reduce_axes(importer: OnnxImporter, x: SSAValue, kind: str, axes: Sequence[int],
                 shape: Sequence[int] | None = None) -> SSAValue:
    """glow.reduce of `axes`; the result keeps them as 1 unless `shape` says otherwise."""
    if shape is None:
        shape = [1 if d in axes else s for d, s in enumerate(glow.shape_of(x))]
    return importer.add(glow.ReduceOp.create(operands=[x], result_types=[glow.tensor(shape)],
                                             properties={"kind": glow.ReduceKindAttr(glow.ReduceKind(kind)), "axes": glow.ints(axes)}))


@imports("LayerNormalization", "RMSNormalization")
def _normalization(importer: OnnxImporter, node, attrs):
    """(x - mean) / sqrt(variance + epsilon) * scale + bias over the axes from `axis` on
    (RMSNormalization: x / sqrt(mean(x^2) + epsilon) * scale), from reductions, Sqrt and
    elementwise arithmetic."""
    x = importer.tensor(node.input[0])
    rank = len(glow.shape_of(x))
    axes = list(range(attrs.get("axis", -1) % rank, rank))
    centered = mean = x
    if node.op_type == "LayerNormalization":
        mean = _reduce_axes(importer, x, "mean", axes)
        centered = _binary(importer, glow.SubOp, x, mean)
    variance = _reduce_axes(importer, _binary(importer, glow.MulOp, centered, centered), "mean", axes)
    epsilon = importer.constant(f"{node.output[0]}_epsilon", np.float32(attrs.get("epsilon", 1e-5)))
    deviation = importer.add(glow.SqrtOp.create(operands=[_binary(importer, glow.AddOp, variance, epsilon)],
                                                result_types=[variance.type]))
    y = _binary(importer, glow.MulOp, _binary(importer, glow.DivOp, centered, deviation),
                importer.tensor(node.input[1]))
    if len(node.input) > 2 and node.input[2]:
        y = _binary(importer, glow.AddOp, y, importer.tensor(node.input[2]))
    if len(node.output) == 1:
        return [y]
    inverse = importer.add(glow.ReciprocalOp.create(operands=[deviation], result_types=[deviation.type]))
    return [y, mean, inverse]  # LayerNormalization's optional Mean and InvStdDev


@imports("Cast", "CastLike")
def _cast(importer: OnnxImporter, node, attrs):
    """A `glow.convert` between float32, integer and boolean tensors (none if the type stays)."""
    x = importer.tensor(node.input[0])
    if node.op_type == "CastLike":
        target = importer.values[node.input[1]]
        element = element_of_dtype(importer, target.dtype) if isinstance(target, np.ndarray) else \
            target.type.element_type
    else:
        element = onnx_element_type(attrs["to"], importer.where())
    return [importer.converted(x, compute_element(element))]


def element_of_dtype(importer: OnnxImporter, dtype) -> Attribute:
    try:
        return element_type_of(dtype)
    except ValueError:
        raise importer.error(f"element type {np.dtype(dtype).name} is not supported") from None


_PREDICATES = {"Equal": "eq", "Less": "lt", "LessOrEqual": "le", "Greater": "gt", "GreaterOrEqual": "ge"}


def _compare_values(importer: OnnxImporter, predicate: str, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
    shape = glow.broadcast_shapes(glow.shape_of(lhs), glow.shape_of(rhs))
    return importer.add(glow.CompareOp.create(operands=[lhs, rhs], result_types=[glow.tensor(shape, i1)],
                                              properties={"predicate": glow.ComparisonPredicateAttr(glow.ComparisonPredicate(predicate))}))


@imports(*_PREDICATES)
def _compare(importer: OnnxImporter, node, attrs):
    lhs, rhs = importer.tensor(node.input[0]), importer.tensor(node.input[1])
    return [_compare_values(importer, _PREDICATES[node.op_type], lhs, rhs)]


_LOGICAL = {"And": glow.AndOp, "Or": glow.OrOp, "Xor": glow.XorOp,
            "BitwiseAnd": glow.AndOp, "BitwiseOr": glow.OrOp, "BitwiseXor": glow.XorOp}


@imports(*_LOGICAL)
def _logical(importer: OnnxImporter, node, attrs):
    return [_binary(importer, _LOGICAL[node.op_type], importer.tensor(node.input[0]), importer.tensor(node.input[1]))]


imports("Not", "BitwiseNot")(_unary(glow.NotOp))


@imports("Pow")
def _pow(importer: OnnxImporter, node, attrs):
    """Float bases; an integer exponent is converted to float."""
    base, exponent = importer.tensor(node.input[0]), importer.tensor(node.input[1])
    return [_binary(importer, glow.PowOp, base, importer.converted(exponent, f32))]


@imports("BitShift")
def _bit_shift(importer: OnnxImporter, node, attrs):
    op_type = glow.ShiftLeftOp if attrs["direction"] == "LEFT" else glow.ShiftRightOp
    return [_binary(importer, op_type, importer.tensor(node.input[0]), importer.tensor(node.input[1]))]


@imports("Mod")
def _mod(importer: OnnxImporter, node, attrs):
    lhs, rhs = importer.tensor(node.input[0]), importer.tensor(node.input[1])
    fmod = attrs.get("fmod", 0)
    if not fmod and lhs.type.element_type == f32:
        raise importer.error("Mod of floats needs fmod=1")
    shape = glow.broadcast_shapes(glow.shape_of(lhs), glow.shape_of(rhs))
    return [importer.add(glow.ModOp.create(operands=[lhs, rhs], result_types=[like(lhs, shape)],
                                           properties=glow.flags(fmod=bool(fmod))))]


@imports("Trilu")
def _trilu(importer: OnnxImporter, node, attrs):
    """The upper (or lower) triangle of the last two dimensions: a select with a constant mask."""
    x = importer.tensor(node.input[0])
    k = int(importer.required_known(node.input[1], "k")) if len(node.input) > 1 and node.input[1] else 0
    rows, columns = glow.shape_of(x)[-2:]
    diagonal = np.arange(columns)[None, :] - np.arange(rows)[:, None]
    mask = diagonal >= k if attrs.get("upper", 1) else diagonal <= k
    kept = importer.add(glow.ConstantOp(importer.names(f"{node.output[0]}_mask"), dense_from_array(mask)))
    zeros = importer.add(glow.SplatOp(0.0, like(x, [1])))
    return [importer.add(glow.SelectOp.create(operands=[kept, x, zeros], result_types=[x.type]))]


@imports("Where")
def _where(importer: OnnxImporter, node, attrs):
    condition, lhs, rhs = (importer.tensor(name) for name in node.input)
    shape = glow.broadcast_shapes(*(glow.shape_of(v) for v in (condition, lhs, rhs)))
    return [importer.add(glow.SelectOp.create(operands=[condition, lhs, rhs], result_types=[like(lhs, shape)]))]


def _arg_reduce_value(importer: OnnxImporter, x: SSAValue, kind: str, axis: int, keep: bool = True,
                      select_last_index: int = 0) -> SSAValue:
    """The i64 index of the max/min (`kind`) along `axis` of x, keeping that axis as 1 or not."""
    shape = list(glow.shape_of(x))
    out = shape[:axis] + ([1] if keep else []) + shape[axis + 1:]
    properties = {"kind": glow.ArgReduceKindAttr(glow.ArgReduceKind(kind)), "axis": glow.IntegerAttr(axis, i64)} | \
        glow.flags(select_last_index=bool(select_last_index))
    return importer.add(glow.ArgReduceOp.create(operands=[x], result_types=[glow.tensor(out, i64)],
                                                properties=properties))


@imports("ArgMax", "ArgMin")
def _arg_reduce(importer: OnnxImporter, node, attrs):
    x = importer.tensor(node.input[0])
    return [_arg_reduce_value(importer, x, "max" if node.op_type == "ArgMax" else "min",
                              attrs.get("axis", 0) % len(glow.shape_of(x)), bool(attrs.get("keepdims", 1)),
                              attrs.get("select_last_index", 0))]


@imports("Expand")
def _expand(importer: OnnxImporter, node, attrs):
    x = importer.tensor(node.input[0])
    target = importer.required_known(node.input[1], "the shape")
    shape = glow.broadcast_shapes(glow.shape_of(x), [int(d) for d in target])
    if shape == glow.shape_of(x):
        return [x]
    zeros = importer.add(glow.SplatOp(0.0, like(x, shape)))
    combine = glow.OrOp if x.type.element_type == i1 else glow.AddOp  # booleans: or with false
    return [_binary(importer, combine, x, zeros)]


@imports("Gather")
def _gather(importer: OnnxImporter, node, attrs):
    """Gather with constant indices: one Slice per index, concatenated; with run-time
    indices, a `glow.gather`."""
    x = importer.tensor(node.input[0])
    shape = glow.shape_of(x)
    axis = attrs.get("axis", 0) % len(shape)
    indices = importer.known(node.input[1])
    if indices is None:
        index_value = importer.tensor(node.input[1])
        result_shape = list(shape[:axis]) + list(glow.shape_of(index_value)) + list(shape[axis + 1:])
        return [importer.add(glow.GatherOp.create(operands=[x, index_value], result_types=[like(x, result_shape)],
                                                  properties={"axis": glow.IntegerAttr(axis, i64)}))]
    glow.check_indices(indices, shape[axis])
    if indices.size == 0:
        raise importer.error("no indices: the result would be an empty tensor, which a bundle cannot hold")
    flat = [int(i) % shape[axis] for i in indices.reshape(-1)]
    pieces = [_slice_axis(importer, x, axis, index, index + 1) for index in flat]
    gathered = pieces[0] if len(pieces) == 1 else _concat_values(importer, pieces, axis)
    result_shape = list(shape[:axis]) + list(indices.shape) + list(shape[axis + 1:])
    return [_reshape_to(importer, gathered, result_shape)]


@imports("Size")
def _size(importer: OnnxImporter, node, attrs):
    return [np.array(int(np.prod(glow.shape_of(importer.tensor(node.input[0])))), np.int64)]


@imports("Hardmax")
def _hardmax(importer: OnnxImporter, node, attrs):
    """1 at the first largest element along `axis`, 0 elsewhere: ArgMax compared with the
    positions along the axis."""
    x = importer.tensor(node.input[0])
    shape = glow.shape_of(x)
    axis = attrs.get("axis", -1 if importer.opset >= 13 else 1) % len(shape)
    if importer.opset < 13 and axis != len(shape) - 1:
        raise importer.error("Hardmax before opset 13 is supported on the last axis only")
    largest = _arg_reduce_value(importer, x, "max", axis)
    positions = np.arange(shape[axis], dtype=np.int64).reshape([-1 if d == axis else 1 for d in range(len(shape))])
    position = importer.add(glow.ConstantOp(importer.names(f"{node.output[0]}_positions"), dense_from_array(positions)))
    return [importer.converted(_compare_values(importer, "eq", largest, position), f32)]


@imports("IsNaN", "IsInf")
def _is_nan_or_inf(importer: OnnxImporter, node, attrs):
    """IsNaN: x != x; IsInf: x == +inf or x == -inf (as `detect_positive/negative` ask)."""
    x = importer.tensor(node.input[0])
    if node.op_type == "IsNaN":
        return [_compare_values(importer, "ne", x, x)]
    tests = [_compare_values(importer, "eq", x, importer.add(glow.SplatOp(sign * np.inf, glow.tensor([1]))))
             for sign, attribute in ((1, "detect_positive"), (-1, "detect_negative")) if attrs.get(attribute, 1)]
    if not tests:  # detects neither infinity: all false
        return [importer.add(glow.SplatOp(0.0, glow.tensor(glow.shape_of(x), i1)))]
    return [tests[0] if len(tests) == 1 else _binary(importer, glow.OrOp, *tests)]


@imports("GatherElements")
def _gather_elements(importer: OnnxImporter, node, attrs):
    x, indices = importer.tensor(node.input[0]), importer.tensor(node.input[1])
    axis = attrs.get("axis", 0) % len(glow.shape_of(x))
    return [importer.add(glow.GatherElementsOp.create(operands=[x, indices],
                                                      result_types=[like(x, glow.shape_of(indices))],
                                                      properties={"axis": glow.IntegerAttr(axis, i64)}))]


@imports("Shape")
def _shape(importer: OnnxImporter, node, attrs):
    shape = np.array(glow.shape_of(importer.tensor(node.input[0])), np.int64)
    start, end = attrs.get("start", 0), attrs.get("end", len(shape))
    return [shape[start:end]]
