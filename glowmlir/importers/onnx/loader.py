"""Reading an ONNX model and checking what onnx's checker lets through: the file, damaged
text, the user's input shapes and symbols, features the importer cannot honour; the
placeholder names of the graph's inputs and outputs."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence

import numpy as np
import onnx
from google.protobuf import text_format
from onnx import numpy_helper

from glowmlir.errors import GlowError
from glowmlir.importers.onnx.file_weights import LARGE_INITIALIZER_ELEMENTS, load_with_weights_apart
from glowmlir.importers.onnx.options import ModelInput, check_symbol
from glowmlir.names import UniqueNames


def load_onnx_model(path: str) -> onnx.ModelProto:
    """Read a binary `.onnx` or protobuf-text `.onnxtxt` model; errors name the file."""
    return load_onnx_model_and_weights(path, apart=False)[0]


def load_onnx_model_and_weights(path: str, apart: bool = True) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """`load_onnx_model`, the large initializers of a binary model read apart (with `apart`,
    see `file_weights`): the model, whose initializers named in the arrays returned have no
    data, and those arrays."""
    if not os.path.isfile(path):
        raise GlowError(f"-model: file \"{path}\" not found")
    if apart and not path.endswith(".onnxtxt"):
        read = load_with_weights_apart(path)
        if read is not None and (read[0].graph.node or read[0].graph.output):
            return read
    try:
        if path.endswith(".onnxtxt"):
            with open(path, encoding="utf-8") as f:
                model = text_format.Parse(f.read(), onnx.ModelProto())
        else:
            model = onnx.load(path)
    except onnx.checker.ValidationError as error:  # its external data file is missing or outside its directory
        raise GlowError(f"-model: \"{path}\": {one_line(str(error))}") from None
    except Exception as error:  # protobuf raises several unrelated types
        raise GlowError(f"-model: \"{path}\" is not an ONNX model ({type(error).__name__})") from None
    if not model.graph.node and not model.graph.output:
        raise GlowError(f"-model: \"{path}\" is not an ONNX model (no graph)")
    return model, {}


def check_text_fields(message, source: str) -> None:
    """Refuses a damaged protobuf model (ONNX, Caffe2) whose string fields (names, op types)
    are not UTF-8 text: protobuf hands such a field over as bytes. Bytes fields (weights'
    raw data) are not read: `ListFields` would copy them."""
    pending = [message]
    while pending:
        current = pending.pop()
        for field in current.DESCRIPTOR.fields:
            if field.type not in (field.TYPE_STRING, field.TYPE_MESSAGE):
                continue
            if field.is_repeated:
                values = getattr(current, field.name)
            elif current.HasField(field.name):
                values = [getattr(current, field.name)]
            else:
                continue
            if field.type == field.TYPE_STRING:
                damaged = next((v for v in values if not isinstance(v, str)), None)
                if damaged is not None:
                    raise GlowError(f"{source} is damaged: {field.name} {damaged[:40]!r} is not UTF-8 text")
            elif field.type == field.TYPE_MESSAGE:
                pending.extend(values)


def apply_input_settings(model: onnx.ModelProto, inputs: Sequence[ModelInput], symbols: dict[str, int],
                         set_aside: frozenset[str] = frozenset()) -> None:
    """Write `-model-input` shapes and `-onnx-define-symbol` values into the graph inputs
    (`set_aside`: initializers left out of `model`, see `without_large_initializers`)."""
    initializers = {t.name for t in model.graph.initializer} | set_aside
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


def repair_benign_omissions(model: onnx.ModelProto, network: str) -> None:
    """Fills in what older exporters leave out and onnxruntime (and Glow) load regardless, so
    onnx's checker judges only what matters: an empty graph name (the network's name is
    used), `value_info` entries without a type (dropped: shape inference recomputes them),
    graph outputs without a type (typed by shape inference), and, below IR version 4 (where
    every initializer must be a graph input), initializers not listed among the inputs."""
    graph = model.graph
    if not graph.name:
        graph.name = network
    typed = [v for v in graph.value_info if v.type.WhichOneof("value") is not None]
    if len(typed) != len(graph.value_info):
        del graph.value_info[:]
        graph.value_info.extend(typed)
    for output in graph.output:
        if output.type.WhichOneof("value") is None:
            output.type.tensor_type.SetInParent()
    if model.ir_version < 4:
        listed = {i.name for i in graph.input}
        for init in graph.initializer:
            if init.name not in listed:
                graph.input.append(onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))




def without_large_initializers(model: onnx.ModelProto, apart: frozenset[str] = frozenset()
                               ) -> tuple[onnx.ModelProto, frozenset[str]]:
    """The model for onnx's checker and shape inference, and the initializers left out of it.

    Both serialize the whole model and shape inference parses its result back (VGG-19's
    548 MB of weights: 4.5 s), but neither reads a weight's values: only small tensors
    (shapes, axes, slice bounds) are looked at. So an initializer of `LARGE_INITIALIZER_ELEMENTS`
    or more, plain raw data, is left out, declared a graph input of its type and shape
    instead (unless one already); `adopt_shapes` takes the results back. Without large
    initializers, the model itself. The initializers named in `apart` (their data read apart,
    see `load_onnx_model_and_weights`) are left out too."""
    graph = model.graph
    large = [t for t in graph.initializer if t.name in apart or (
        t.data_type != onnx.TensorProto.STRING and t.HasField("raw_data")
        and t.data_location != onnx.TensorProto.EXTERNAL and math.prod(t.dims) >= LARGE_INITIALIZER_ELEMENTS)]
    if not large:
        return model, frozenset()
    names = frozenset(t.name for t in large)
    light = onnx.ModelProto()
    for field, value in model.ListFields():
        if field.name != "graph":
            _copy_field(light, field, value)
    for field, value in graph.ListFields():
        if field.name == "initializer":
            light.graph.initializer.extend(t for t in value if t.name not in names)
        else:
            _copy_field(light.graph, field, value)
    listed = {i.name for i in graph.input}
    light.graph.input.extend(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                             for t in large if t.name not in listed)
    return light, names


def initializer_arrays(graph: onnx.GraphProto, apart: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """A graph's initializers as numpy arrays, by name (those in `apart` read already); one
    that cannot be read is a GlowError."""
    arrays = {}
    for init in graph.initializer:
        if apart and init.name in apart:
            arrays[init.name] = apart[init.name]
            continue
        try:
            arrays[init.name] = numpy_helper.to_array(init)
        except (ValueError, TypeError, KeyError) as error:  # onnx's checker does not read the data
            raise GlowError(f"initializer \"{init.name}\": its data cannot be read as data type "
                            f"{init.data_type}, shape {list(init.dims)} ({error!s})") from None
    return arrays


def weights_taken_out(model: onnx.ModelProto, apart: dict[str, np.ndarray] | None = None
                      ) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """The model's initializers as arrays (raw data read once, each array a view of its bytes,
    not a copy), and a copy of the model whose initializers keep their names, types and
    shapes only: once the caller drops the model it was given, the file's protobuf (the
    weights a second time) is freed, leaving the importer the arrays alone. `apart`: the
    arrays of initializers read apart already."""
    arrays = initializer_arrays(model.graph, apart)
    light = onnx.ModelProto()
    for field, value in model.ListFields():
        if field.name != "graph":
            _copy_field(light, field, value)
    for field, value in model.graph.ListFields():
        if field.name == "initializer":
            light.graph.initializer.extend(onnx.TensorProto(name=t.name, data_type=t.data_type, dims=t.dims)
                                           for t in value)
        else:
            _copy_field(light.graph, field, value)
    return light, arrays


def _copy_field(message, field, value) -> None:
    if field.is_repeated:
        getattr(message, field.name).extend(value)
    elif field.type == field.TYPE_MESSAGE:
        getattr(message, field.name).CopyFrom(value)
    else:
        setattr(message, field.name, value)


def adopt_shapes(model: onnx.ModelProto, shaped: onnx.ModelProto, set_aside: frozenset[str]) -> onnx.ModelProto:
    """`model` with the nodes, inputs, outputs and value infos of `shaped`, the result of shape
    inference on `without_large_initializers(model)` (the initializers `set_aside` are the
    model's again: not graph inputs unless they were)."""
    if shaped is model:
        return model
    graph, listed = model.graph, {i.name for i in model.graph.input}
    for name in ("node", "input", "output", "value_info"):
        field = getattr(graph, name)
        del field[:]
        values = getattr(shaped.graph, name)
        field.extend(v for v in values if name != "input" or v.name in listed or v.name not in set_aside)
    return model


def with_output_shape_fields(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model for onnx's checker: graph outputs whose shape or element type is unset
    (onnxruntime loads them; shape inference types them) get an empty shape field and a
    placeholder element type, which the checker insists on."""
    def unshaped(output: onnx.ValueInfoProto) -> bool:
        tensor = output.type.tensor_type
        return output.type.HasField("tensor_type") and (not tensor.HasField("shape") or not tensor.elem_type)

    if not any(map(unshaped, model.graph.output)):
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for output in filter(unshaped, copy.graph.output):
        output.type.tensor_type.shape.SetInParent()
        if not output.type.tensor_type.elem_type:
            output.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
    return copy


_CHECKER_NODE = re.compile(r"==> Context: Bad node spec for node\. Name: (\S*) OpType: (\S+)")


def one_line(message: str) -> str:
    """onnx's multi-line checker and inference messages on one line, the node named."""
    message = _CHECKER_NODE.sub(lambda m: f"(node \"{m[1]}\", op {m[2]})", message)
    return " ".join(message.split())


def check_model_features(model: onnx.ModelProto, source: str) -> None:
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
