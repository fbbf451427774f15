"""The ONNX importer proper: `OnnxImporter` walks the graph, folding nodes whose inputs are
all known at compile time and handing every other node to the function registered for its
op type with `@imports` (one module per op family in this package)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper
from xdsl.dialects.builtin import IntegerType, ModuleOp, StringAttr, f16, f32, f64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from glowmlir.dialects import glow
from glowmlir.dialects.quant import UniformQuantizedType, is_quantized
from glowmlir.dialects.weights import dense_from_array, element_type_of, numpy_dtype
from glowmlir.errors import GlowError, GlowWarning
from glowmlir.importers.onnx.glow_names import GlowLoaderNames
from glowmlir.importers.onnx.loader import (
    adopt_shapes,
    apply_input_settings,
    check_model_features,
    initializer_arrays,
    load_onnx_model_and_weights,
    one_line,
    placeholder_names,
    repair_benign_omissions,
    weights_taken_out,
    with_output_shape_fields,
    without_large_initializers,
)
from glowmlir.importers.onnx.options import ELEMENT_TYPES, ModelInput
from glowmlir.names import UniqueNames, legalize_name
from glowmlir.quantization.glow_names import PROFILE_NAME

ANY_ELEMENT_TYPE = frozenset({
    "Identity", "Dropout", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Slice", "Split",
    "Expand", "Gather", "Pad", "Cast", "CastLike", "Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Neg", "Abs",
    "Relu", "Clip", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Not",
    "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "Where", "ArgMax", "ArgMin", "BitShift", "Mod", "Trilu",
    "Shape", "Size", "GatherElements", "ScatterND", "IsNaN", "IsInf", "DequantizeLinear", "Loop", "If",
    # the QOperator form's ops, whose data is quantized (see quantization.py)
    "QLinearConv", "QLinearMatMul", "QGemm", "QLinearAdd", "QLinearMul", "QLinearGlobalAveragePool",
    "QLinearAveragePool", "QLinearSigmoid", "QLinearLeakyRelu", "QLinearSoftmax", "QLinearConcat",
})
"""The ops imported for integer and boolean tensors as well as float32 ones."""


def compute_element(element: Attribute) -> Attribute:
    """The element type a tensor is computed in: float16 and double ones in float32."""
    return f32 if element in (f16, f64) else element


def onnx_element_type(elem_type: int, what: str) -> Attribute:
    """The glow element type of an ONNX tensor type (float32, float16, double, integers, bool)."""
    try:
        name = onnx.TensorProto.DataType.Name(elem_type)
    except ValueError:  # a number no DataType has (a damaged or hand-written model)
        raise GlowError(f"{what}: element type {elem_type} is not an ONNX data type") from None
    try:
        return element_type_of(helper.tensor_dtype_to_np_dtype(elem_type))
    except (ValueError, KeyError, TypeError):
        raise GlowError(f"{what}: element type {name} is not supported "
                        f"(float32, float16, double, integers of 8 to 64 bits and bool)") from None


def keep_model_names(block: Block, legal_names: dict[str, str]) -> None:
    """Records the model's own name of each graph input and output that C needed renamed
    (`legal_names`: the model's name -> the bundle's) on its placeholder and save, so that
    `Bundle.run` and glow-run still take and give it, and announces the renaming with one
    GlowWarning."""
    model_names = {legal: original for original, legal in legal_names.items() if legal != original}
    if not model_names:
        return
    for op in block.ops:
        if isinstance(op, glow.PlaceholderOp | glow.SaveOp) and op.name_.data in model_names:
            op.attributes[glow.MODEL_NAME] = StringAttr(model_names[op.name_.data])
    renamed = ", ".join(f"\"{original}\" as \"{legal}\"" for legal, original in model_names.items())
    warnings.warn(GlowWarning(f"names C cannot take are changed in the bundle: {renamed} (Bundle.run and glow-run "
                              f"take the model's names too)"), stacklevel=2)


def verified(op: Operation, error: Callable[[str], GlowError]) -> Operation:
    """`op` once its verifier accepts it; otherwise `error(message)` (an importer's error
    naming the model node at fault) is raised."""
    try:
        op.verify()
    except VerifyException as exception:
        raise error(str(exception).splitlines()[0]) from None
    return op


Value = SSAValue | np.ndarray
_NOT_FOLDED = frozenset({"Dropout", "Loop", "If", "DequantizeLinear"})
"""Imported even when their inputs are all known: Dropout (its mask), Loop (its body may read
run-time values of the enclosing graph; it is unrolled, folding what it can), If (likewise) and
DequantizeLinear (it folds its weights itself, remembering their quantized type)."""
NodeImporter = Callable[["OnnxImporter", onnx.NodeProto, dict], list[Value]]
_NODE_IMPORTERS: dict[tuple[str, str], NodeImporter] = {}


def imports(*op_types: str, domain: str = ""):
    """Registers the function that turns ONNX nodes of these types (of the standard domain, or
    `domain`, e.g. onnxruntime's "com.microsoft") into glow ops."""

    def register(function: NodeImporter) -> NodeImporter:
        for op_type in op_types:
            _NODE_IMPORTERS[(domain, op_type)] = function
        return function

    return register


class OnnxImporter:
    """Walks the ONNX graph in order, building the ops of one `glow.function`."""

    def __init__(self, model: onnx.ModelProto, inputs: Sequence[ModelInput] = (),
                 weights: dict[str, np.ndarray] | None = None):
        self.model = model
        self.weights = weights  # the initializers' values, when taken out of `model` (see `weights_taken_out`)
        self.typed_inputs = {spec.name: spec for spec in inputs if spec.element_type != "float"}
        self.set_by_option = {spec.name for spec in inputs}
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
        self.block = Block()
        self.values: dict[str, Value] = {}
        self.names = UniqueNames()
        self.glow_names = GlowLoaderNames(model)
        self.named: list[tuple[Operation, int]] = []  # (op, node index) for Glow's names
        self.constants: dict[str, SSAValue] = {}
        self.model_quantization: dict[str, Attribute] = {}  # weights' quantized types, by ONNX name (QDQ)
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
            array = value.astype(np.float32, copy=False) if value.dtype.kind == "f" else value
            try:
                dense = dense_from_array(array)
            except ValueError:
                where = f"output \"{onnx_name}\"" if self.node is None else self.where()
                raise GlowError(f"{where}: tensor \"{onnx_name}\" of type {array.dtype} is not supported") from None
            self.constants[onnx_name] = self.constant(onnx_name, array, self.model_quantization.get(onnx_name),
                                                      dense)
        return self.constants[onnx_name]

    def constant(self, name: str, array: np.ndarray, quantization: Attribute | None = None,
                 dense: Attribute | None = None) -> SSAValue:
        """A new float (or `dense`'s) constant; `quantization`: the quantized type the model's
        file gives these weights (QDQ), kept for `glow-quantize-from-model`."""
        op = glow.ConstantOp(self.names(name), dense or dense_from_array(np.asarray(array, np.float32)))
        if quantization is not None:
            op.attributes[glow.MODEL_QUANTIZATION] = quantization
        return self.add(op)

    def axis(self, value: int, rank: int, what: str = "axis", past_the_end: bool = False) -> int:
        """A node's axis attribute as a non-negative axis of a rank-`rank` tensor (negative ones
        count from the end; `past_the_end` also allows `rank`, as Flatten does)."""
        limit = rank + 1 if past_the_end else rank
        if not -rank <= int(value) < limit:
            raise self.error(f"{what} {value} is out of range for a rank-{rank} tensor "
                             f"(valid: {-rank} to {limit - 1})")
        return int(value) if value >= 0 else int(value) + rank

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
        self.values.update(self.weights if self.weights is not None else initializer_arrays(graph))
        self.weights = None
        for graph_input in graph.input:
            if graph_input.name in self.values:
                continue
            tensor_type = graph_input.type.tensor_type
            element = onnx_element_type(tensor_type.elem_type, f"input \"{graph_input.name}\"")
            shape = [d.dim_value for d in tensor_type.shape.dim]
            spec = self.typed_inputs.get(graph_input.name)
            self.place = f"input \"{graph_input.name}\"" + (" (set by -model-input)" if graph_input.name in
                                                              self.set_by_option else "")
            if spec is None:
                placeholder = self.add(glow.PlaceholderOp(placeholders[graph_input.name], glow.tensor(shape, element)))
                self.values[graph_input.name] = self.converted(placeholder, compute_element(element))
            else:
                value = self.typed_input(placeholders[graph_input.name], shape, spec)
                self.values[graph_input.name] = self.converted(value, compute_element(element))
        for index, node in enumerate(graph.node):
            self.node = node
            self.glow_names.load(index, node, self.rank)
            self.import_node(node, index)
        self.node, self.place = None, "graph outputs"
        self.record_glow_names()
        for graph_output in graph.output:
            source = self.tensor(graph_output.name)
            declared = graph_output.type.tensor_type.elem_type  # 0 where neither the file nor inference tells
            if source.type.element_type == f32 and declared:  # a float16 or double output is computed in float32
                source = self.converted(source, onnx_element_type(declared, f"output \"{graph_output.name}\""))
            self.add(glow.SaveOp(source, placeholders[graph_output.name]))
        keep_model_names(self.block, placeholders)
        return ModuleOp([glow.FunctionOp(name, Region(self.block))])

    def import_subgraph(self, graph: onnx.GraphProto, inputs: Sequence[Value]) -> list[Value]:
        """The values of a subgraph's outputs (a Loop body's, an If branch's) with its inputs
        bound to `inputs`: its nodes are imported into the function as the graph's are, seeing
        the enclosing graph's values; its own names are forgotten afterwards."""
        outer_values, outer_constants, outer_node = dict(self.values), dict(self.constants), self.node
        for init in graph.initializer:
            self.values[init.name] = numpy_helper.to_array(init)
        for graph_input, value in zip(graph.input, inputs):
            self.values[graph_input.name] = value
        for node in graph.node:
            self.node = node
            self.import_node(node)
        results = [self.values[output.name] for output in graph.output]
        self.values, self.constants, self.node = outer_values, outer_constants, outer_node
        return results

    def import_node(self, node: onnx.NodeProto, index: int | None = None) -> None:
        """Imports one node; `index` is its place in the main graph (None in a subgraph)."""
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        attrs = {k: v.decode(errors="replace") if isinstance(v, bytes) else v for k, v in attrs.items()}
        domain = "" if node.domain == "ai.onnx" else node.domain
        if domain and domain not in {registered for registered, _ in _NODE_IMPORTERS}:
            raise self.error(f"unsupported op domain \"{node.domain}\"")
        inputs = [self.known(i) for i in node.input]
        if all(v is not None or not name for v, name in zip(inputs, node.input)) and node.op_type not in _NOT_FOLDED:
            outputs = self.fold(node)
        elif (domain, node.op_type) in _NODE_IMPORTERS:
            build = _NODE_IMPORTERS[(domain, node.op_type)]
            if self.runs_in_float(node):
                build = self.in_float(build)
            else:
                self.check_element_types(node)
            try:
                outputs = build(self, node, attrs)
            except GlowError:
                raise
            except ValueError as error:  # a shape rule (glow.py, numpy broadcasting) refusing the operands
                raise self.error(str(error)) from None
        else:
            raise self.error(f"unsupported op type \"{node.op_type}\"")
        for name, value in zip(node.output, outputs):
            if name:
                self.values[name] = value
        self.name_results(node, outputs, index)

    def typed_input(self, name: str, shape: Sequence[int], spec: ModelInput) -> SSAValue:
        """The placeholder of a `-model-input` with an element type other than `float`, as the
        value the graph computes with (converted to the model's type by the caller). A
        quantized input stands for `scale * (q - offset)`: with signed storage a quantized type
        the quantizer can keep integer; `uint8q` data is converted and scaled in float."""
        if spec.storage is None:
            dtype = helper.tensor_dtype_to_np_dtype(ELEMENT_TYPES[spec.element_type])
            return self.add(glow.PlaceholderOp(name, glow.tensor(shape, element_type_of(dtype))))
        if spec.storage.kind == "i":
            storage = IntegerType(8 * spec.storage.itemsize)
            placeholder = self.add(glow.PlaceholderOp(name, glow.tensor(
                shape, UniformQuantizedType(storage, spec.scale, spec.offset))))
            return self.add(glow.DequantizeOp(placeholder))
        placeholder = self.add(glow.PlaceholderOp(name, glow.tensor(shape, element_type_of(spec.storage))))
        centred = self.add(glow.SubOp(self.converted(placeholder, f32), self.constant(f"{name}_offset",
                                                                                         np.float32(spec.offset))))
        return self.add(glow.MulOp(centred, self.constant(f"{name}_scale", np.float32(spec.scale))))

    def converted(self, value: SSAValue, element: Attribute) -> SSAValue:
        """`value` with the element type `element` (a `glow.convert` unless it has it)."""
        if value.type.element_type == element:
            return value
        return self.add(glow.ConvertOp(value, element))

    def runs_in_float(self, node: onnx.NodeProto) -> bool:
        """Whether the node reads quantized data (in a QOperator model: MaxPool on int8) but
        has no integer semantics of its own in ONNX."""
        value = self.values.get(node.input[0]) if node.input else None
        return node.op_type not in ANY_ELEMENT_TYPE and isinstance(value, SSAValue) and is_quantized(value.type)

    @staticmethod
    def in_float(build: NodeImporter) -> NodeImporter:
        """`build` run on the dequantized inputs, its float results quantized to the first
        input's type: the float op between a dequantize and a quantize, which
        `glow-quantize-from-model` turns back into the op on quantized data."""

        def build_in_float(importer: OnnxImporter, node: onnx.NodeProto, attrs: dict) -> list[Value]:
            values = importer.values
            element = values[node.input[0]].type.element_type
            quantized = {name: values[name] for name in node.input
                         if isinstance(values.get(name), SSAValue) and is_quantized(values[name].type)}
            for name, value in quantized.items():
                values[name] = importer.add(glow.DequantizeOp(value))
            try:
                outputs = build(importer, node, attrs)
            finally:
                values.update(quantized)
            return [importer.add(model_quantize(v, element)) if isinstance(v, SSAValue)
                    and v.type.element_type == f32 else v for v in outputs]

        return build_in_float

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

    def name_results(self, node: onnx.NodeProto, outputs: list[Value], index: int | None) -> None:
        """Gives the op computing each output Glow's node name (the ONNX node's name, else its
        first output's), unique among all names: profiles key values as `<name>:0`."""
        for position, value in enumerate(outputs):
            op = value.owner if isinstance(value, SSAValue) else None
            if isinstance(op, Operation) and not isinstance(op, glow.PlaceholderOp | glow.ConstantOp) \
                    and glow.NODE_NAME not in op.attributes:
                op.attributes[glow.NODE_NAME] = StringAttr(self.names(node.name or node.output[0]))
                if position == 0 and index is not None:
                    self.named.append((op, index))

    def record_glow_names(self) -> None:
        """Gives each named op whose Glow node name differs from its own that name as
        `PROFILE_NAME` (the key of its entry in a profile Glow wrote)."""
        glow_names = self.glow_names.finish()
        for op, index in self.named:
            if glow_names[index] != op.attributes[glow.NODE_NAME].data:
                op.attributes[PROFILE_NAME] = StringAttr(glow_names[index])

    def rank(self, onnx_name: str) -> int | None:
        """The rank of an ONNX tensor imported so far (None if unknown)."""
        value = self.values.get(onnx_name)
        if isinstance(value, np.ndarray):
            return value.ndim
        return len(value.type.get_shape()) if isinstance(value, SSAValue) else None

    def fold(self, node: onnx.NodeProto) -> list[np.ndarray]:
        """Evaluates a node on compile-time inputs with onnx's reference evaluator."""
        # onnx's reference evaluator imported here, when a model has a node to fold: its ops are
        # 20 MB and a third of a second to import
        from onnx.reference import ReferenceEvaluator

        from glowmlir.importers.onnx import reference_ops

        feeds = {name: self.values[name] for name in node.input if name}
        try:
            graph = helper.make_graph([node], "fold",
                                      [helper.make_value_info(name, onnx.TypeProto()) for name in feeds],
                                      [helper.make_value_info(name, onnx.TypeProto()) for name in node.output])
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
            evaluator = ReferenceEvaluator(model, new_ops=reference_ops.REPLACEMENTS)
            return [np.asarray(v) for v in evaluator.run(None, feeds)]
        except Exception as error:
            raise self.error(f"cannot evaluate constant node: {error}") from None


def model_quantize(value: SSAValue, element: Attribute) -> glow.QuantizeOp:
    """A `glow.quantize` the model states (a QuantizeLinear), marked as the model's with
    `glow.MODEL_QUANTIZATION` for `glow-quantize-from-model`."""
    quantize = glow.QuantizeOp(value, element)
    quantize.attributes[glow.MODEL_QUANTIZATION] = element
    return quantize


def import_onnx(path: str, inputs: Sequence[ModelInput] = (), symbols: dict[str, int] | None = None,
                name: str | None = None) -> ModuleOp:
    """Load, check, shape and import an ONNX model file into a module holding one `glow.function`."""
    network = name or legalize_name(os.path.splitext(os.path.basename(path))[0])
    model, weights = load_onnx_model_and_weights(path)
    return import_onnx_model(model, network, f"\"{path}\"", inputs, symbols, weights)


def import_onnx_model(model: onnx.ModelProto, network: str, source: str, inputs: Sequence[ModelInput] = (),
                      symbols: dict[str, int] | None = None, weights: dict[str, np.ndarray] | None = None
                      ) -> ModuleOp:
    """Check, shape and import an in-memory ONNX model (the Caffe2 importer builds one);
    `source` names the model in errors; `weights`: the values of the initializers read apart
    (see `load_onnx_model_and_weights`)."""
    repair_benign_omissions(model, network)
    check_model_features(model, source)
    # the weights are not serialized to onnx's C++
    light, set_aside = without_large_initializers(model, frozenset(weights or ()))
    try:
        onnx.checker.check_model(with_output_shape_fields(light))
        apply_input_settings(light, inputs, symbols or {}, set_aside)
        # A helper, not a judge: where onnx's inference gives up or disagrees with a shape the
        # file states, the importer's own shape rules decide (as onnxruntime's do).
        model = adopt_shapes(model, onnx.shape_inference.infer_shapes(light, strict_mode=False), set_aside)
    except onnx.checker.ValidationError as error:  # a message over several lines
        raise GlowError(f"{source} fails onnx's checks: {one_line(str(error))}") from None
    except onnx.shape_inference.InferenceError as error:  # one line per node: the first is the cause
        raise GlowError(f"{source} fails onnx's checks: {str(error).strip().splitlines()[0]}") from None
    except UnicodeDecodeError:  # onnx's message quotes a damaged name
        raise GlowError(f"{source} fails onnx's checks: a name in the model is not UTF-8 text") from None
    model, weights = weights_taken_out(model, weights)  # the file's protobuf freed, unless the caller keeps it
    module = OnnxImporter(model, inputs, weights).run(network)
    verify_imported(module, source)
    return module


def verify_imported(module: ModuleOp, source: str) -> None:
    """Every importer ends here: a shape rule the importer did not foresee is a one-line error."""
    try:
        module.verify()
    except VerifyException as error:
        raise GlowError(f"{source}: the imported graph does not verify: {str(error).splitlines()[0]}") from None


def element_of_dtype(importer: OnnxImporter, dtype) -> Attribute:
    try:
        return element_type_of(dtype)
    except ValueError:
        raise importer.error(f"element type {np.dtype(dtype).name} is not supported") from None
