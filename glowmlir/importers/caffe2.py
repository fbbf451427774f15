"""Caffe2 importer: a `predict_net` + `init_net` pair becomes a `glow.function`.

The pair is translated into an in-memory ONNX model (opset 13) that the ONNX importer then
checks, shapes and imports, so no lowering is duplicated here:

* `init_net`'s fill ops (GivenTensorFill, ConstantFill, ...) become initializers;
* every `external_input` of `predict_net` that `init_net` does not fill is a graph input whose
  shape must come from `-model-input` (Caffe2 nets do not record shapes);
* each `predict_net` op becomes one or a few ONNX nodes (a translator per op type in
  `_TRANSLATORS`); the node computing the op's result carries the Caffe2 op's name (its first
  output's if unnamed, as Glow names nodes), helper nodes that name plus `/<part>`;
* `external_output`s are the graph outputs, under their own names.

Caffe2 nets reuse blob names (in-place `Relu`, `Dropout`, ...) where ONNX wants each tensor
defined once: the last write of a blob gets the blob's name, earlier writes fresh ones.
Each emitted node is shape-inferred at once with onnx's per-node inference, so translators
that depend on shapes (legacy broadcast, FC with `axis`, Softmax, Concat's split_info) know
them. The messages of `caffe2.proto` are described in `caffe2_schema`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import ModuleOp

from glowmlir.errors import GlowError
from glowmlir.importers import caffe2_schema
from glowmlir.importers.onnx import ModelInput, check_text_fields, import_onnx_model
from glowmlir.importers.onnx.glow_names import CAFFE2_GLOW_NAME, CAFFE2_PRODUCER

OPSET = 13

# ----------------------------------------------------------------------------- loading

_NET_FILES = ("predict_net", "init_net")


def model_files(paths: Sequence[str]) -> tuple[str, str]:
    """(predict_net, init_net) paths: a directory's `predict_net.pb`/`init_net.pb` (or `.pbtxt`),
    or the two paths given."""
    if len(paths) == 2:
        return paths[0], paths[1]
    directory = paths[0]

    def in_directory(stem: str) -> str:
        text = os.path.join(directory, f"{stem}.pbtxt")
        return text if os.path.isfile(text) else os.path.join(directory, f"{stem}.pb")

    predict_net, init_net = (in_directory(stem) for stem in _NET_FILES)
    return predict_net, init_net


def load_net(path: str):
    """A NetDef from a binary `.pb` or protobuf text `.pbtxt` file; errors name the file."""
    if not os.path.isfile(path):
        raise GlowError(f"-model: file \"{path}\" not found")
    try:
        if ".pbtxt" in os.path.basename(path):  # Glow's test for text format
            with open(path, encoding="utf-8") as f:
                net = caffe2_schema.parse_text(f.read())
        else:
            with open(path, "rb") as f:
                net = caffe2_schema.parse_binary(f.read())
    except Exception as error:  # protobuf raises several unrelated types
        raise GlowError(f"-model: \"{path}\" is not a Caffe2 NetDef ({type(error).__name__})") from None
    check_text_fields(net, f"-model: \"{path}\"")
    return net


# ----------------------------------------------------------------------------- one Caffe2 op


class Op:
    """A Caffe2 OperatorDef with typed access to its arguments; errors name the op."""

    def __init__(self, proto, index: int):
        self.proto = proto
        self.index = index  # position in its net
        self.type = proto.type
        self.name = proto.name or (proto.output[0] if proto.output else proto.type)
        self.inputs = list(proto.input)
        self.outputs = list(proto.output)
        self.arguments = {argument.name: argument for argument in proto.arg}

    def error(self, message: str) -> GlowError:
        return GlowError(f"Caffe2 op \"{self.name}\" ({self.type}): {message}")

    @contextmanager
    def reported(self) -> Iterator[None]:
        """Any other failure while handling this op (a malformed argument, a missing output)
        becomes a one-line error naming it."""
        try:
            yield
        except GlowError:
            raise
        except Exception as error:
            detail = (str(error).strip().splitlines() or [""])[0]
            raise self.error(f"cannot be imported ({type(error).__name__}: {detail})") from None

    def has(self, name: str) -> bool:
        return name in self.arguments

    def int(self, name: str, default: int | None = None) -> int:
        argument = self.arguments.get(name)
        if argument is None:
            if default is None:
                raise self.error(f"argument \"{name}\" is required")
            return default
        if not argument.HasField("i"):
            raise self.error(f"argument \"{name}\" must be an integer")
        return int(argument.i)

    def float(self, name: str, default: float | None = None) -> float:
        argument = self.arguments.get(name)
        if argument is None:
            if default is None:
                raise self.error(f"argument \"{name}\" is required")
            return default
        if not (argument.HasField("f") or argument.HasField("i")):
            raise self.error(f"argument \"{name}\" must be a number")
        return float(argument.f if argument.HasField("f") else argument.i)

    def ints(self, name: str) -> list[int]:
        argument = self.arguments[name]
        if argument.HasField("f") or argument.floats or argument.HasField("s") or argument.strings:
            raise self.error(f"argument \"{name}\" must be integers")
        return [int(argument.i)] if argument.HasField("i") else [int(v) for v in argument.ints]

    def floats(self, name: str) -> list[float]:
        argument = self.arguments[name]
        return [float(argument.f)] if argument.HasField("f") else [float(v) for v in argument.floats]

    def string(self, name: str, default: str) -> str:
        argument = self.arguments.get(name)
        return argument.s.decode(errors="replace") if argument is not None else default

    def require(self, name: str, supported: int, default: int, why: str) -> None:
        """An integer argument that must have one value here."""
        value = self.int(name, default)
        if value != supported:
            raise self.error(f"argument {name}={value} is not supported ({why})")

    def require_nchw(self) -> None:
        order = self.string("order", "NCHW")
        if order != "NCHW":
            raise self.error(f"argument order=\"{order}\" is not supported (NCHW only)")


# ----------------------------------------------------------------------------- weights (init_net)

# caffe2.TensorProto.DataType values of ConstantFill's `dtype`
_DTYPES = {1: np.float32, 2: np.int32, 5: np.bool_, 10: np.int64, 13: np.float32}

_GIVEN_TENSOR_FILLS = {"GivenTensorFill": ("floats", np.float32), "GivenTensorDoubleFill": ("floats", np.float32),
                       "GivenTensorIntFill": ("ints", np.int32), "GivenTensorInt64Fill": ("ints", np.int64),
                       "GivenTensorBoolFill": ("ints", np.bool_)}
FILL_OPS = (*_GIVEN_TENSOR_FILLS, "ConstantFill")


def fill_value(op: Op) -> np.ndarray:
    """The tensor a fill op writes to its output."""
    if op.inputs:
        raise op.error("fill ops with inputs (input_as_shape) are not supported")
    shape = op.ints("shape") if op.has("shape") else None
    if op.type == "ConstantFill":
        return _constant_fill(op, shape or [])
    field, dtype = _GIVEN_TENSOR_FILLS[op.type]
    values = np.array(op.ints("values") if field == "ints" else op.floats("values"), dtype) \
        if op.has("values") else np.zeros(0, dtype)
    shape = [values.size] if shape is None else shape
    if int(np.prod(shape)) != values.size:
        raise op.error(f"argument shape={shape} does not hold the {values.size} values")
    return values.reshape(shape)


def _constant_fill(op: Op, shape: list[int]) -> np.ndarray:
    """ConstantFill: `dtype` (a TensorProto.DataType), else the type of `value` (float by default)."""
    value = op.arguments.get("value")
    if op.has("dtype"):
        dtype_code = op.int("dtype")
        if dtype_code not in _DTYPES:
            raise op.error(f"argument dtype={dtype_code} is not supported (FLOAT, INT32, BOOL, INT64 or DOUBLE)")
        dtype = _DTYPES[dtype_code]
    else:
        dtype = np.int64 if value is not None and value.HasField("i") else np.float32
    number = 0 if value is None else (value.i if value.HasField("i") else value.f)
    return np.full(shape, number, dtype)


def load_weights(init_net) -> dict[str, np.ndarray]:
    weights = {}
    for index, proto in enumerate(init_net.op):
        op = Op(proto, index)
        if op.type.startswith("Int8"):
            raise _quantized_op_error(op)
        if op.type not in FILL_OPS:
            raise op.error(f"unsupported op type \"{op.type}\" in init_net (supported fills: {', '.join(FILL_OPS)})")
        if not op.outputs:
            raise op.error("a fill op needs an output")
        with op.reported():
            weights[op.outputs[0]] = fill_value(op)
    return weights


def _quantized_op_error(op: Op) -> GlowError:
    return op.error(f"unsupported op type \"{op.type}\": quantized Caffe2 ops are not imported; "
                    f"import the float model and quantize it with -load-profile")


# ----------------------------------------------------------------------------- the translation


class NetTranslator:
    """Builds the ONNX graph of a predict_net, one Caffe2 op at a time."""

    def __init__(self, predict_net, weights: dict[str, np.ndarray], inputs: Sequence[ModelInput]):
        self.net = predict_net
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: dict[str, np.ndarray] = {}
        self.types: dict[str, onnx.TypeProto] = {}  # every ONNX tensor's type and shape
        self.current: dict[str, str] = {}  # Caffe2 blob -> the ONNX tensor holding its latest value
        self.taken: set[str] = _all_blob_names(predict_net) | set(weights)
        self.last_writes, self.read_writes = _write_analysis(predict_net)
        self.graph_inputs = self._declare_inputs(weights, inputs)
        self.given = set(weights) | {value_info.name for value_info in self.graph_inputs}  # named before any op
        self.pending: dict[str, str] = {}

    # --- names

    def fresh(self, base: str) -> str:
        candidate, k = base, 1
        while candidate in self.taken:
            candidate, k = f"{base}_{k}", k + 1
        self.taken.add(candidate)
        return candidate

    def input(self, op: Op, index: int) -> str:
        """The ONNX tensor holding input `index` of `op`."""
        if index >= len(op.inputs) or not op.inputs[index]:
            raise op.error(f"input {index} is missing")
        blob = op.inputs[index]
        if blob not in self.current:
            raise op.error(f"input \"{blob}\" is not computed by an earlier op, filled by init_net "
                           f"or given by -model-input")
        return self.current[blob]

    def has_input(self, op: Op, index: int) -> bool:
        return index < len(op.inputs) and bool(op.inputs[index])

    def output(self, op: Op, index: int) -> str:
        """The ONNX name for output `index` of `op`: the blob's own name for its last write,
        else a fresh one. The blob points to it once the op is translated."""
        blob = op.outputs[index]
        is_last = self.last_writes.get(blob) == (op.index, index)
        name = blob if is_last and blob not in self.given else self.fresh(f"{blob}_{op.index}")
        self.pending[blob] = name
        return name

    def output_is_used(self, op: Op, index: int) -> bool:
        return index < len(op.outputs) and (op.index, index) in self.read_writes

    def require_unused(self, op: Op, index: int, what: str) -> None:
        if self.output_is_used(op, index):
            raise op.error(f"output {index} ({what}, \"{op.outputs[index]}\") is used; it is not computed at inference")

    # --- building

    def node(self, op: Op, onnx_type: str, inputs: Sequence[str], output: str | None = None,
             part: str | None = None, glow_part: str | None = None, **attributes) -> str:
        """Adds one ONNX node for `op` and returns its output. The node computing the op's
        result carries the op's name; a helper node (`part` given) that name plus `/part`,
        and writes a fresh tensor unless `output` is given. The doc_string gives the name of
        Glow's node for it: the op's name, plus `.<glow_part>` for the helper nodes Glow's
        Caffe2 loader makes too (`ip1.reshape2D`)."""
        name = op.name if part is None else f"{op.name}/{part}"
        output = output or self.fresh(name)
        glow_name = op.name if part is None else f"{op.name}.{glow_part or part}"
        node = helper.make_node(onnx_type, list(inputs), [output], name=name, doc_string=CAFFE2_GLOW_NAME + glow_name,
                                **attributes)
        self._infer(op, node)
        self.nodes.append(node)
        return output

    def constant(self, op: Op, part: str, array: np.ndarray, name: str | None = None) -> str:
        """An initializer made for `op` (`name` if given, else `<op name>/<part>`)."""
        name = name or self.fresh(f"{op.name}/{part}")
        self._add_initializer(name, np.asarray(array))
        return name

    def int64s(self, op: Op, part: str, values: Sequence[int]) -> str:
        return self.constant(op, part, np.array(values, np.int64))

    def shape(self, op: Op, tensor: str) -> tuple[int, ...]:
        tensor_type = self.types[tensor].tensor_type if tensor in self.types else None
        if tensor_type is None or not tensor_type.HasField("shape") or \
                any(not d.HasField("dim_value") for d in tensor_type.shape.dim):
            raise op.error(f"the shape of \"{tensor}\" is not known")
        return tuple(d.dim_value for d in tensor_type.shape.dim)

    def _add_initializer(self, name: str, array: np.ndarray) -> None:
        self.initializers[name] = array
        self.types[name] = helper.make_tensor_type_proto(helper.np_dtype_to_tensor_dtype(array.dtype), array.shape)

    def _infer(self, op: Op, node: onnx.NodeProto) -> None:
        """Record the node's output types with onnx's shape inference of this one node."""
        input_types = {name: self.types[name] for name in node.input if name in self.types}
        known = {name: numpy_helper.from_array(self.initializers[name], name) for name in node.input
                 if name in self.initializers and self.initializers[name].dtype.kind in "iub"}
        try:
            outputs = onnx.shape_inference.infer_node_outputs(
                onnx.defs.get_schema(node.op_type, OPSET), node, input_types, known,
                opset_imports=[helper.make_opsetid("", OPSET)])
        except Exception as error:  # onnx raises InferenceError and others
            raise op.error(f"{node.op_type}: {str(error).strip().splitlines()[0]}") from None
        self.types.update(outputs)

    # --- the walk

    def _declare_inputs(self, weights: dict[str, np.ndarray], inputs: Sequence[ModelInput]) -> list:
        for name, array in weights.items():
            self._add_initializer(name, array)
            self.current[name] = name
        needed = [blob for blob in self.net.external_input if blob not in weights]
        given = {spec.name: spec for spec in inputs}
        for spec in inputs:
            if spec.name not in needed:
                raise GlowError(f"-model-input: the model has no input \"{spec.name}\" "
                                f"(inputs: {', '.join(needed) or 'none'})")
        graph_inputs = []
        for blob in dict.fromkeys(needed):
            if blob not in given:
                raise GlowError(f"input \"{blob}\" of the Caffe2 model needs its shape: "
                                f"give it with -model-input={blob},float,[d0,d1,...]")
            graph_inputs.append(helper.make_tensor_value_info(blob, TensorProto.FLOAT, given[blob].shape))
            self.types[blob] = graph_inputs[-1].type
            self.current[blob] = blob
        return graph_inputs

    def translate(self, network: str) -> onnx.ModelProto:
        for index, proto in enumerate(self.net.op):
            op = Op(proto, index)
            translate_op = _TRANSLATORS.get(op.type)
            if translate_op is None:
                raise _quantized_op_error(op) if op.type.startswith("Int8") else \
                    op.error(f"unsupported op type \"{op.type}\"")
            self.pending = {}
            with op.reported():
                translate_op(self, op)
            self.current.update(self.pending)
        if not self.net.external_output:
            raise GlowError("the Caffe2 predict_net has no external_output")
        outputs = []
        for blob in self.net.external_output:
            if self.current.get(blob) != blob or blob in self.given:
                raise GlowError(f"external_output \"{blob}\" is not computed by an op of predict_net")
            outputs.append(helper.make_value_info(blob, self.types[blob]))
        initializers = [numpy_helper.from_array(array, name) for name, array in self.initializers.items()]
        graph = helper.make_graph(self.nodes, network, self.graph_inputs, outputs, initializers)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8,
                                 producer_name=CAFFE2_PRODUCER)


def _all_blob_names(net) -> set[str]:
    names = set(net.external_input) | set(net.external_output)
    for op in net.op:
        names.update(op.input)
        names.update(op.output)
    return names


def _write_analysis(net) -> tuple[dict[str, tuple[int, int]], set[tuple[int, int]]]:
    """The last write (op index, output index) of every blob, and the writes whose value is
    read (by a later op, or as an external output)."""
    latest: dict[str, tuple[int, int]] = {}
    read: set[tuple[int, int]] = set()
    for op_index, op in enumerate(net.op):
        read.update(latest[blob] for blob in op.input if blob in latest)
        latest.update({blob: (op_index, output_index) for output_index, blob in enumerate(op.output) if blob})
    read.update(latest[blob] for blob in net.external_output if blob in latest)
    return latest, read


# ----------------------------------------------------------------------------- translators

Translator = Callable[[NetTranslator, Op], None]
_TRANSLATORS: dict[str, Translator] = {}


def translates(*op_types: str):
    """Registers the function that turns Caffe2 ops of these types into ONNX nodes."""

    def register(function: Translator) -> Translator:
        for op_type in op_types:
            _TRANSLATORS[op_type] = function
        return function

    return register


@translates(*FILL_OPS)
def _fill(net: NetTranslator, op: Op) -> None:
    """A fill op inside predict_net: a constant like init_net's."""
    net.constant(op, "", fill_value(op), name=net.output(op, 0))


# --- windows: Conv, ConvTranspose, pools

def window_sizes(op: Op, name: str, rank: int, default: int) -> list[int]:
    """A per-axis window argument in any of Caffe2's forms: `name` (all axes), `names`
    (one per axis), or `name_h` and `name_w` (2-D)."""
    if op.has(name):
        return [op.int(name)] * rank
    if op.has(f"{name}s"):
        sizes = op.ints(f"{name}s")
        if len(sizes) != rank:
            raise op.error(f"argument {name}s={sizes} should have {rank} values")
        return sizes
    if op.has(f"{name}_h") or op.has(f"{name}_w"):
        if rank != 2:
            raise op.error(f"arguments {name}_h/{name}_w are for 2-D windows, not {rank}-D")
        return [op.int(f"{name}_h", default), op.int(f"{name}_w", default)]
    return [default] * rank


_PAD_SIDES = ("pad_t", "pad_l", "pad_b", "pad_r")  # Caffe2's `pads` order: begins, then ends
_LEGACY_PADDING = {0: None, 1: "VALID", 2: "SAME_UPPER"}  # caffe2_legacy.proto's NOTSET, VALID, SAME


def window_pads(op: Op, rank: int) -> dict:
    """ONNX `pads` (the begin of each spatial axis, then its end, as Caffe2's `pads`) or
    `auto_pad` for `legacy_pad`."""
    legacy = op.int("legacy_pad", 0)
    if legacy not in _LEGACY_PADDING:
        raise op.error(f"argument legacy_pad={legacy} is not supported (CAFFE_LEGACY_POOLING rounds up; "
                       f"NOTSET, VALID and SAME are supported)")
    if _LEGACY_PADDING[legacy]:
        return {"auto_pad": _LEGACY_PADDING[legacy]}
    if op.has("pad"):
        return {"pads": [op.int("pad")] * (2 * rank)}
    if op.has("pads"):
        pads = op.ints("pads")
        if len(pads) != 2 * rank:
            raise op.error(f"argument pads={pads} should have {2 * rank} values (begins, then ends)")
        return {"pads": pads}
    if any(op.has(side) for side in _PAD_SIDES):
        if rank != 2:
            raise op.error(f"arguments pad_t/pad_l/pad_b/pad_r are for 2-D windows, not {rank}-D")
        return {"pads": [op.int(side, 0) for side in _PAD_SIDES]}
    return {"pads": [0] * (2 * rank)}


def has_kernel(op: Op) -> bool:
    return any(op.has(name) for name in ("kernel", "kernels", "kernel_h", "kernel_w"))


def window_attributes(op: Op, rank: int, dilated: bool = True) -> dict:
    """ONNX kernel_shape (if given), strides, pads and dilations of a Caffe2 window op."""
    attributes = {"strides": window_sizes(op, "stride", rank, 1), **window_pads(op, rank)}
    if has_kernel(op):
        attributes["kernel_shape"] = window_sizes(op, "kernel", rank, 0)
    if dilated:
        attributes["dilations"] = window_sizes(op, "dilation", rank, 1)
    return attributes


@translates("Conv", "Conv1D", "Conv2D", "Conv3D", "ConvTranspose")
def _convolution(net: NetTranslator, op: Op) -> None:
    """Conv: X [N, C, ...], W [M, C/group, k...], optional bias [M]; ConvTranspose:
    W [C, M/group, k...] and `adj` (ONNX output_padding)."""
    op.require_nchw()
    x, w = net.input(op, 0), net.input(op, 1)
    filter_shape = net.shape(op, w)
    rank = len(filter_shape) - 2
    transposed = op.type == "ConvTranspose"
    attributes = window_attributes(op, rank, dilated=not transposed)
    if list(attributes.get("kernel_shape", filter_shape[2:])) != list(filter_shape[2:]):
        raise op.error(f"kernel {attributes['kernel_shape']} differs from the filter's {list(filter_shape[2:])}")
    attributes["group"] = op.int("group", 1)
    if transposed:
        attributes["output_padding"] = window_sizes(op, "adj", rank, 0)
    inputs = [x, w] + ([net.input(op, 2)] if net.has_input(op, 2) else [])
    net.node(op, "ConvTranspose" if transposed else "Conv", inputs, net.output(op, 0), **attributes)


_POOLS = {"MaxPool": "MaxPool", "AveragePool": "AveragePool"}


@translates(*(f"{pool}{suffix}" for pool in _POOLS for suffix in ("", "1D", "2D", "3D")))
def _pool(net: NetTranslator, op: Op) -> None:
    """MaxPool/AveragePool; `global_pooling` pools the whole plane; Caffe2's AveragePool
    excludes padding from the count unless `count_include_pad`."""
    op.require_nchw()
    kind = next(onnx_type for prefix, onnx_type in _POOLS.items() if op.type.startswith(prefix))
    x = net.input(op, 0)
    if op.int("global_pooling", 0):
        net.node(op, f"Global{kind}", [x], net.output(op, 0))
        return
    if not has_kernel(op):
        raise op.error("argument kernel (or kernels, or kernel_h and kernel_w) is required without global_pooling")
    attributes = window_attributes(op, len(net.shape(op, x)) - 2)
    if kind == "AveragePool":
        attributes["count_include_pad"] = op.int("count_include_pad", 0)
        if any(d != 1 for d in attributes.pop("dilations")):  # ONNX AveragePool has none before opset 19
            raise op.error("dilated AveragePool is not supported")
    net.node(op, kind, [x], net.output(op, 0), **attributes)


# --- fully connected

@translates("FC", "FCTransposed")
def _fully_connected(net: NetTranslator, op: Op) -> None:
    """Y = flatten(X, axis) . flatten(W, axis_w)^T + b, shaped X.shape[:axis] + [N].
    FC's W is [N, K]; FCTransposed's is [K, N]."""
    x, w, bias = net.input(op, 0), net.input(op, 1), net.input(op, 2)
    x_shape, w_shape = net.shape(op, x), net.shape(op, w)
    axis, axis_w = op.int("axis", 1) % len(x_shape), op.int("axis_w", 1) % len(w_shape)
    flat_x = x if (len(x_shape), axis) == (2, 1) else \
        net.node(op, "Flatten", [x], part="flatten", glow_part="reshape2D", axis=axis)
    flat_w = w if (len(w_shape), axis_w) == (2, 1) else \
        net.node(op, "Flatten", [w], part="flatten_weights", axis=axis_w)
    transposed = op.type == "FCTransposed"
    if axis == 1:
        net.node(op, "Gemm", [flat_x, flat_w, bias], net.output(op, 0), transB=int(not transposed))
        return
    product = net.node(op, "Gemm", [flat_x, flat_w, bias], net.fresh(f"{op.name}/gemm"), transB=int(not transposed))
    n = net.shape(op, product)[1]
    shape = net.int64s(op, "shape", [*x_shape[:axis], n])
    net.node(op, "Reshape", [product, shape], net.output(op, 0), part="reshape")


# --- elementwise

_UNARY = {"Relu": "Relu", "Sigmoid": "Sigmoid", "Tanh": "Tanh", "Exp": "Exp", "Log": "Log", "Sqrt": "Sqrt",
          "Abs": "Abs", "Negative": "Neg", "Softsign": "Softsign", "Softplus": "Softplus"}
_IDENTITIES = ("Copy", "Alias", "StopGradient", "EnsureCPUOutput", "Identity")


@translates(*_UNARY)
def _unary(net: NetTranslator, op: Op) -> None:
    net.node(op, _UNARY[op.type], [net.input(op, 0)], net.output(op, 0))


@translates(*_IDENTITIES)
def _identity(net: NetTranslator, op: Op) -> None:
    net.node(op, "Identity", [net.input(op, 0)], net.output(op, 0))


@translates("LeakyRelu")
def _leaky_relu(net: NetTranslator, op: Op) -> None:
    net.node(op, "LeakyRelu", [net.input(op, 0)], net.output(op, 0), alpha=op.float("alpha", 0.01))


@translates("Clip")
def _clip(net: NetTranslator, op: Op) -> None:
    bounds = [net.constant(op, side, np.float32(op.float(side))) if op.has(side) else "" for side in ("min", "max")]
    net.node(op, "Clip", [net.input(op, 0), *bounds], net.output(op, 0))


@translates("Scale")
def _scale(net: NetTranslator, op: Op) -> None:
    factor = net.constant(op, "scale", np.float32(op.float("scale", 1.0)))
    net.node(op, "Mul", [net.input(op, 0), factor], net.output(op, 0))


@translates("Sum")
def _sum(net: NetTranslator, op: Op) -> None:
    inputs = [net.input(op, i) for i in range(len(op.inputs))]
    net.node(op, "Sum" if len(inputs) > 1 else "Identity", inputs, net.output(op, 0))


@translates("Add", "Sub", "Mul", "Div")
def _arithmetic(net: NetTranslator, op: Op) -> None:
    """With `broadcast=1`, Caffe2's legacy broadcast: B's dims match A's starting at `axis`
    (default: B matches A's trailing dims), so B gets trailing unit dims for numpy
    broadcasting. Without it both shapes must be equal."""
    a, b = net.input(op, 0), net.input(op, 1)
    a_shape, b_shape = net.shape(op, a), net.shape(op, b)
    if op.int("broadcast", 0):
        axis = op.int("axis", -1)
        axis = len(a_shape) - len(b_shape) if axis == -1 else axis
        if not 0 <= axis <= len(a_shape) - len(b_shape):
            raise op.error(f"argument axis={axis} does not place B {list(b_shape)} inside A {list(a_shape)}")
        trailing = len(a_shape) - axis - len(b_shape)
        if trailing:
            b_shape = (*b_shape, *[1] * trailing)
            b = net.node(op, "Reshape", [b, net.int64s(op, "broadcast_shape", b_shape)], part="broadcast")
        aligned = (1,) * (len(a_shape) - len(b_shape)) + tuple(b_shape)
        if any(db not in (1, da) for da, db in zip(a_shape, aligned)):
            raise op.error(f"B {list(b_shape)} does not broadcast to A {list(a_shape)} at axis {axis}")
    elif a_shape != b_shape:
        raise op.error(f"operand shapes {list(a_shape)} and {list(b_shape)} differ "
                       f"(set broadcast=1 for Caffe2's broadcasting)")
    net.node(op, op.type, [a, b], net.output(op, 0))


# --- normalization and softmax

@translates("SpatialBN")
def _spatial_batch_norm(net: NetTranslator, op: Op) -> None:
    """Inference SpatialBN: inputs X, scale, bias, mean, var (ONNX's order)."""
    op.require_nchw()
    op.require("is_test", 1, 0, "only inference SpatialBN, is_test=1, is supported")
    for index, what in enumerate(("running mean", "running variance", "saved mean", "saved inverse std"), 1):
        net.require_unused(op, index, what)
    inputs = [net.input(op, i) for i in range(5)]
    net.node(op, "BatchNormalization", inputs, net.output(op, 0), epsilon=op.float("epsilon", 1e-5))


@translates("Dropout")
def _dropout(net: NetTranslator, op: Op) -> None:
    op.require("is_test", 1, 0, "only inference Dropout, is_test=1, is supported")
    net.require_unused(op, 1, "mask")
    net.node(op, "Identity", [net.input(op, 0)], net.output(op, 0))


@translates("LRN")
def _lrn(net: NetTranslator, op: Op) -> None:
    """Caffe2's LRN divides by (bias + alpha/size * sum of squares)^beta over `size` channels,
    as ONNX's does."""
    op.require_nchw()
    net.require_unused(op, 1, "scale")
    net.node(op, "LRN", [net.input(op, 0)], net.output(op, 0), size=op.int("size"),
             alpha=op.float("alpha", 0.0), beta=op.float("beta", 0.0), bias=op.float("bias", 1.0))


@translates("Softmax")
def _softmax(net: NetTranslator, op: Op) -> None:
    """Caffe2's Softmax coerces X to 2-D at `axis` (default 1): a Softmax over the last axis
    of the flattened X, reshaped back."""
    x = net.input(op, 0)
    shape = net.shape(op, x)
    axis = op.int("axis", 1) % len(shape)
    if axis == len(shape) - 1:
        net.node(op, "Softmax", [x], net.output(op, 0), axis=-1)
        return
    flat = net.node(op, "Flatten", [x], part="flatten", glow_part="reshapeInput", axis=axis)
    probabilities = net.node(op, "Softmax", [flat], net.fresh(f"{op.name}/softmax"), axis=-1)
    net.node(op, "Reshape", [probabilities, net.int64s(op, "shape", shape)], net.output(op, 0), part="reshape",
             glow_part="reshapeOutput")


# --- shapes

@translates("Concat")
def _concat(net: NetTranslator, op: Op) -> None:
    """Concat along `axis` (else the channel of `order`); `add_axis` stacks on a new axis.
    Output 1, split_info, is each input's extent along the axis: a constant."""
    inputs = [net.input(op, i) for i in range(len(op.inputs))]
    shapes = [net.shape(op, name) for name in inputs]
    order = op.string("order", "NCHW")
    if not op.has("axis") and order not in ("NCHW", "NHWC"):
        raise op.error(f"argument order=\"{order}\" is not supported (NCHW or NHWC)")
    axis = op.int("axis", 1 if order == "NCHW" else 3)
    if op.int("add_axis", 0):
        axis %= len(shapes[0]) + 1
        inputs = [net.node(op, "Unsqueeze", [name, net.int64s(op, "axes", [axis])], part=f"add_axis{i}")
                  for i, name in enumerate(inputs)]
        split_info = [1] * len(inputs)
    else:
        axis %= len(shapes[0])
        split_info = [shape[axis] for shape in shapes]
    net.node(op, "Concat", inputs, net.output(op, 0), axis=axis)
    if len(op.outputs) > 1 and op.outputs[1]:
        net.constant(op, "split_info", np.array(split_info, np.int32), name=net.output(op, 1))


@translates("Reshape")
def _reshape(net: NetTranslator, op: Op) -> None:
    """The new shape comes from argument `shape` or a constant second input (0 keeps a dim,
    -1 is inferred). Output 1, old_shape, is the input's shape: a constant."""
    x = net.input(op, 0)
    if op.has("shape"):
        shape = net.int64s(op, "shape", op.ints("shape"))
    elif net.has_input(op, 1) and net.input(op, 1) in net.initializers:
        shape = net.int64s(op, "shape", net.initializers[net.input(op, 1)].astype(np.int64).reshape(-1))
    else:
        raise op.error("the new shape must be argument shape or a constant second input")
    old_shape = net.shape(op, x)
    net.node(op, "Reshape", [x, shape], net.output(op, 0))
    if len(op.outputs) > 1 and op.outputs[1]:
        net.constant(op, "old_shape", np.array(old_shape, np.int64), name=net.output(op, 1))


@translates("Flatten")
def _flatten(net: NetTranslator, op: Op) -> None:
    net.node(op, "Flatten", [net.input(op, 0)], net.output(op, 0), axis=op.int("axis", 1))


@translates("FlattenToVec")
def _flatten_to_vector(net: NetTranslator, op: Op) -> None:
    net.node(op, "Reshape", [net.input(op, 0), net.int64s(op, "shape", [-1])], net.output(op, 0))


@translates("Transpose")
def _transpose(net: NetTranslator, op: Op) -> None:
    x = net.input(op, 0)
    axes = op.ints("axes") if op.has("axes") else list(reversed(range(len(net.shape(op, x)))))
    net.node(op, "Transpose", [x], net.output(op, 0), perm=axes)


@translates("Squeeze", "ExpandDims")
def _squeeze_or_expand(net: NetTranslator, op: Op) -> None:
    """Squeeze removes the unit axes `dims`; ExpandDims inserts unit axes at `dims` (positions
    in the result, as ONNX's Unsqueeze)."""
    if not op.has("dims"):
        raise op.error("argument dims is required")
    dims = net.int64s(op, "dims", sorted(op.ints("dims")))
    onnx_type = "Squeeze" if op.type == "Squeeze" else "Unsqueeze"
    net.node(op, onnx_type, [net.input(op, 0), dims], net.output(op, 0))


# ----------------------------------------------------------------------------- entry point


def caffe2_to_onnx(predict_net, init_net, inputs: Sequence[ModelInput], network: str) -> onnx.ModelProto:
    """The ONNX model computing what the Caffe2 net pair computes."""
    if not predict_net.op:
        raise GlowError("the Caffe2 predict_net has no ops")
    return NetTranslator(predict_net, load_weights(init_net), inputs).translate(network)


def import_caffe2(paths: Sequence[str], inputs: Sequence[ModelInput], network: str) -> ModuleOp:
    """Import a Caffe2 model: a directory holding predict_net and init_net, or their two paths."""
    predict_path, init_path = model_files(paths)
    predict_net, init_net = load_net(predict_path), load_net(init_path)
    model = caffe2_to_onnx(predict_net, init_net, inputs, network)
    return import_onnx_model(model, network, f"Caffe2 model \"{predict_path}\"", inputs)
