"""The campaign's cases: what a new user might feed the tools, and what a correct compiler does.

A case writes its files into its own work directory (`setup`), then runs one tool on them
(`glow-compile`, `glow-opt`, `glow-profile` as subprocesses, or a Python API call in a
child process). `expect` says what a correct compiler does:

    error    a clean failure: non-zero exit, one line `<tool>: error: ...` (for the API a
             `GlowError`), naming what `contains` lists, and no output left behind;
    success  exit 0; a bundle's header compiles (`cc -fsyntax-only` through a main.c that
             includes it), and with `verify` the outputs match the reference
             ("onnxruntime": the model `model.onnx`, compiled again through the Python API
             with `verify_options`; "tflite": TFLite's reference kernels on `model.tflite`;
             "offsets": the header's placeholder offsets lie inside the region and no LLVM IR
             address is negative: for bundles too big to run);
    either   a clean error or a correct success: only for inputs where both are right
             (random bit flips that may leave a valid model, C keywords as names, which
             may be legalized or refused). `note` says why.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper

from tests.campaign import models as m

EXPECTATIONS = ("error", "success", "either")


class Work:
    """A case's work directory; the bundle goes to `out`."""

    def __init__(self, directory: str):
        self.dir = directory

    def path(self, *parts: str) -> str:
        return os.path.join(self.dir, *parts)

    @property
    def out(self) -> str:
        return self.path("out")

    def write(self, name: str, data: bytes | str) -> str:
        path = self.path(name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        return path

    def onnx(self, model: onnx.ModelProto, name: str = "model.onnx") -> str:
        return self.write(name, model.SerializeToString())


@dataclass(frozen=True)
class Case:
    name: str  # "<category>/<slug>", unique
    tool: str  # glow-compile, glow-opt, glow-profile or api
    setup: Callable[[Work], list[str]]  # writes the inputs; the tool's arguments (api: ignored)
    expect: str
    contains: tuple[str, ...] = ()
    call: Callable[[Work], object] | None = None  # the API call (tool "api"), run in a child process
    verify: str | None = None  # None, "onnxruntime", "tflite" or "offsets"
    verify_options: dict = field(default_factory=dict)  # API keywords equal to the case's CLI options
    outputs: tuple[str, ...] = ("out",)  # paths in the work directory that a failure must not leave
    note: str = ""

    def __post_init__(self):
        assert self.expect in EXPECTATIONS, self.name

    @property
    def category(self) -> str:
        return self.name.split("/", 1)[0]


def formatted(options, work: Work) -> list[str]:
    return [option.replace("{work}", work.dir) for option in options]


def model_from(builder, name: str = "model.onnx"):
    """A setup step writing `builder()` (an ONNX model, or bytes) to `name`; returns its path."""
    def write(work: Work) -> str:
        value = builder()
        if isinstance(value, onnx.ModelProto):
            return work.onnx(value, name)
        return work.write(name, value)
    return write


RELU = model_from(m.unary_model)
CONVNET = model_from(m.small_convnet)


HUGE_NOTE = ("8-16 TB tensors fit a 64-bit address space: a bundle whose header states the size, or a refusal "
             "(tensors past 2^63 bytes are refused, naming the node)")

def compile_case(name: str, model, *options: str, expect: str = "error", contains=(), verify=None,
                 verify_options=None, outputs=("out",), note: str = "") -> Case:
    """`glow-compile -model=<model> -emit-bundle=<work>/out <options>`; `model` is a setup step
    returning the model path(s), or a fixed path; `{work}` in options is the work directory."""
    def setup(work: Work) -> list[str]:
        paths = model(work) if callable(model) else model
        paths = [paths] if isinstance(paths, str) else paths
        return [*(f"-model={p}" for p in paths), f"-emit-bundle={work.out}", *formatted(options, work)]
    return Case(name, "glow-compile", setup, expect, tuple(contains), verify=verify,
                verify_options=verify_options or {}, outputs=tuple(outputs), note=note)


def graph_case(name: str, builder, *options: str, expect: str = "error", contains=(), note: str = "", **kw) -> Case:
    """A compile of the ONNX model `builder()`; a success is checked against onnxruntime."""
    verify = kw.pop("verify", "onnxruntime" if expect != "error" else None)
    return compile_case(name, model_from(builder), *options, expect=expect, contains=contains, verify=verify,
                        note=note, **kw)


# ============================================================================= files


def _missing_dir(work: Work) -> str:
    return work.path("no", "such", "dir", "model.onnx")


def _directory(contents: dict[str, bytes]):
    def setup(work: Work) -> str:
        os.makedirs(work.path("modeldir"), exist_ok=True)
        for file_name, data in contents.items():
            work.write(os.path.join("modeldir", file_name), data)
        return work.path("modeldir")
    return setup


def _caffe2_pair(mutate=None, which: str = "predict_net.pb"):
    def setup(work: Work) -> list[str]:
        directory = m.write_caffe2(work.path("c2"))
        if mutate:
            path = os.path.join(directory, which)
            with open(path, "rb") as f:
                data = f.read()
            with open(path, "wb") as f:
                f.write(mutate(data))
        return [os.path.join(directory, "predict_net.pb"), os.path.join(directory, "init_net.pb")]
    return setup


def _symlink_loop(work: Work) -> str:
    path = work.path("loop.onnx")
    os.symlink(path, path)
    return path


def _external_data(location: str):
    def build() -> onnx.ModelProto:
        model = m.single_op_model("Add", {"x": [1, 4]}, {"c": np.ones((1, 4), np.float32)})
        initializer = model.graph.initializer[0]
        initializer.ClearField("raw_data")
        del initializer.float_data[:]
        initializer.data_location = TensorProto.EXTERNAL
        initializer.external_data.add(key="location", value=location)
        return model
    return build


def _external_data_valid(work: Work) -> str:
    model = m.single_op_model("Add", {"x": [1, 4]}, {"c": np.arange(4, dtype=np.float32).reshape(1, 4)})
    onnx.save_model(model, work.path("model.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.data", size_threshold=0)
    return work.path("model.onnx")


def _onnxtxt(model_builder, damage=None):
    def setup(work: Work) -> str:
        from google.protobuf import text_format

        text = text_format.MessageToString(model_builder())
        work.onnx(model_builder())  # model.onnx, for the onnxruntime check
        return work.write("model.onnxtxt", damage(text) if damage else text)
    return setup


def _with_model_too(builder, file_name: str, transform):
    """Writes the intact model as model.onnx (the reference) and `transform(bytes)` as `file_name`."""
    def setup(work: Work) -> str:
        data = work.onnx(builder()) and builder().SerializeToString()
        return work.write(file_name, transform(data))
    return setup


TFLITE_MUTANTS_ONCE_TRACEBACKS = (48, 85, 208, 326, 453)
"""Mutants of `tflite_int8_model` that were tracebacks: a QUANTIZE with its input index
damaged, per-channel weights with nonzero zero points, a buffer offset past the file, a
FULLY_CONNECTED without weights, a bias scale that underflows float32."""


def file_cases() -> list[Case]:
    convnet = m.small_convnet().SerializeToString()
    tflite = m.tflite_model()
    cases = [
        compile_case("files/missing-onnx", lambda w: w.path("missing.onnx"), contains=["missing.onnx"]),
        compile_case("files/missing-tflite", lambda w: w.path("missing.tflite"), contains=["missing.tflite"]),
        compile_case("files/missing-no-extension", lambda w: w.path("missing"), contains=["missing"]),
        compile_case("files/missing-directory", _missing_dir, contains=["model.onnx"]),
        compile_case("files/empty-path", "", contains=["-model"]),
        compile_case("files/dev-null", "/dev/null", contains=["/dev/null"]),
        compile_case("files/symlink-loop", _symlink_loop, contains=["loop.onnx"]),
    ]
    for extension in ("onnx", "tflite", "onnxtxt", "pb", "pbtxt", "bin"):
        cases.append(compile_case(f"files/empty-{extension}", model_from(lambda: b"", f"model.{extension}"),
                                  contains=[f"model.{extension}"]))
    cases += [
        compile_case("files/empty-directory", _directory({}), contains=["modeldir"]),
        compile_case("files/directory-of-text", _directory({"readme.txt": b"hello"}), contains=["modeldir"]),
        compile_case("files/caffe2-directory-without-init-net",
                     _directory({"predict_net.pb": m.caffe2_ops()[0].SerializeToString()}),
                     "-model-input=x,float,[1,4]", contains=["init_net"]),
        compile_case("files/caffe2-directory-without-predict-net",
                     _directory({"init_net.pb": m.caffe2_ops()[1].SerializeToString()}),
                     "-model-input=x,float,[1,4]", contains=["predict_net"]),
        compile_case("files/directory-named-onnx", lambda w: os.makedirs(w.path("dir.onnx")) or w.path("dir.onnx"),
                     contains=["dir.onnx"]),
    ]
    for number, (extension, text) in enumerate([("onnx", "this is not a protobuf\n"),
                                                ("tflite", "this is not a flatbuffer\n"),
                                                ("onnxtxt", "graph { node { op_type: \"Relu\" input: \"x\" "),
                                                ("onnxtxt", "ir_version: 8 graph { bogus_field: 3 }"),
                                                ("onnx", '{"graph": {"node": []}}'), ("pbtxt", "op { type: ")]):
        slug = f"text-as-{extension}-{number}"
        cases.append(compile_case(f"files/{slug}", model_from(lambda t=text: t.encode(), f"model.{extension}"),
                                  contains=[f"model.{extension}"]))
    for seed in range(3):
        noise = np.random.default_rng(seed).bytes(4096)
        for extension in ("onnx", "tflite"):
            cases.append(compile_case(f"files/random-bytes-{extension}-{seed}",
                                      model_from(lambda n=noise: n, f"model.{extension}"),
                                      contains=[f"model.{extension}"]))
    # Bit flips aimed at strings and tags: these cannot leave a valid model.
    for text in (b"Conv", b"Relu", b"MaxPool", b"Softmax", b"Gemm"):
        cases.append(compile_case(f"files/onnx-invalid-utf8-op-type-{text.decode()}",
                                  model_from(lambda t=text: m.flip_in_string(convnet, t)),
                                  note="an op_type that is not UTF-8 cannot name a known operator"))
    for text in (b"w1", b"data", b"prob"):
        cases.append(compile_case(f"files/onnx-invalid-utf8-name-{text.decode()}",
                                  _with_model_too(m.small_convnet, "mutated.onnx",
                                                  lambda d, t=text: m.flip_in_string(d, t)),
                                  expect="either", verify="onnxruntime-mutated",
                                  note="a name that is not UTF-8: a clean error, or a bundle matching onnxruntime"))
    for text, bit in ((b"Conv", 0), (b"Relu", 1)):
        cases.append(compile_case(f"files/onnx-op-type-renamed-{text.decode()}-bit{bit}",
                                  model_from(lambda t=text, b=bit: m.flip_in_string(convnet, t, b)),
                                  contains=[{b"Conv": "Bonv", b"Relu": "Pelu"}[text]],
                                  note="Conv→Bonv, Relu→Pelu: unknown operators, named"))
    for seed in range(14):
        flips = 1 if seed < 8 else 8
        cases.append(compile_case(f"files/onnx-bit-flip-{seed}-x{flips}",
                                  _with_model_too(m.small_convnet, "mutated.onnx",
                                                  lambda d, s=seed, f=flips: m.bit_flipped(d, s, f)),
                                  expect="either", verify="onnxruntime-mutated",
                                  note="a random flip may leave a valid model: then it must match onnxruntime"))
    for seed in range(10):
        cases.append(compile_case(f"files/tflite-bit-flip-{seed}",
                                  model_from(lambda s=seed: m.bit_flipped(tflite, s, 1 + s % 3), "model.tflite"),
                                  expect="either", verify="tflite",
                                  note="a random flip may leave a valid model: then it must match TFLite's kernels"))
    tflite_int8 = m.tflite_int8_model()
    for seed in [*range(40), *TFLITE_MUTANTS_ONCE_TRACEBACKS]:
        cases.append(compile_case(f"files/tflite-int8-mutant-{seed}",
                                  model_from(lambda s=seed: m.tflite_mutant(tflite_int8, s), "model.tflite"),
                                  expect="either", verify="tflite-int8",
                                  note="bytes of an int8 model changed (a bit, a word such as an offset or a "
                                       "length, a run zeroed, a byte): a clean error or TFLite's numbers"))
    for fraction in (0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99):
        cases.append(compile_case(f"files/onnx-truncated-{fraction}",
                                  model_from(lambda f=fraction: m.truncated(convnet, f)), contains=["model.onnx"]))
    for fraction in (0.1, 0.5, 0.9):
        cases.append(compile_case(f"files/tflite-truncated-{fraction}",
                                  model_from(lambda f=fraction: m.truncated(tflite, f), "model.tflite"),
                                  contains=["model.tflite"]))
    for which in ("predict_net.pb", "init_net.pb"):
        short = which.split("_")[0]
        cases.append(compile_case(f"files/caffe2-{short}-truncated", _caffe2_pair(lambda d: m.truncated(d, 0.5), which),
                                  "-model-input=x,float,[1,4]", contains=[which]))
        cases.append(compile_case(f"files/caffe2-{short}-garbage",
                                  _caffe2_pair(lambda d: b"\xff\xfe garbage" * 9, which),
                                  "-model-input=x,float,[1,4]", contains=[which]))
        for seed in range(4):
            cases.append(compile_case(f"files/caffe2-{short}-bit-flip-{seed}",
                                      _caffe2_pair(lambda d, s=seed: m.bit_flipped(d, s, 2), which),
                                      "-model-input=x,float,[1,4]", expect="either",
                                      note="a flip may leave a valid net: then only the header is checked"))
    cases += [
        compile_case("files/caffe2-pair-swapped", lambda w: list(reversed(_caffe2_pair()(w))),
                     "-model-input=x,float,[1,4]", contains=["init_net"],
                     note="weights given first: Glow takes the net then the weights"),
        compile_case("files/caffe2-without-model-input", _caffe2_pair(), contains=["x"]),
        compile_case("files/caffe2-valid", _caffe2_pair(), "-model-input=x,float,[1,4]", expect="success"),
        compile_case("files/onnx-as-tflite", model_from(lambda: convnet, "model.tflite"), contains=["model.tflite"]),
        compile_case("files/tflite-as-onnx", model_from(lambda: tflite, "model.onnx"), contains=["model.onnx"]),
        compile_case("files/onnx-as-onnxtxt", model_from(lambda: convnet, "model.onnxtxt"), contains=["model.onnxtxt"]),
        compile_case("files/onnx-as-pb", model_from(lambda: convnet, "model.pb"), expect="success",
                     note="as Glow's loader: one model file that is not .tflite is read as ONNX, "
                          "whatever its extension"),
        compile_case("files/tflite-as-pb", model_from(lambda: tflite, "model.pb"), contains=["model.pb"]),
        compile_case("files/onnx-with-txt-extension", _with_model_too(m.small_convnet, "model.txt", lambda d: d),
                     expect="either", verify="onnxruntime",
                     note="Glow picks the importer by extension: refusing .txt or reading it as ONNX are both fine"),
        compile_case("files/onnx-uppercase-extension", _with_model_too(m.small_convnet, "MODEL.ONNX", lambda d: d),
                     expect="either", verify="onnxruntime"),
        compile_case("files/onnx-no-extension", _with_model_too(m.small_convnet, "model", lambda d: d),
                     expect="either", verify="onnxruntime"),
        compile_case("files/two-onnx-models", lambda w: [CONVNET(w), w.onnx(m.unary_model(), "b.onnx")],
                     contains=["-model"]),
        compile_case("files/three-models", lambda w: [RELU(w)] * 3, contains=["-model"]),
        compile_case("files/path-with-spaces-and-unicode",
                     lambda w: [CONVNET(w), w.onnx(m.small_convnet(), "mödel dir é.onnx")][1],
                     expect="success", verify="onnxruntime"),
        compile_case("files/onnxtxt-valid", _onnxtxt(m.small_convnet), expect="success", verify="onnxruntime"),
        compile_case("files/onnxtxt-truncated", _onnxtxt(m.small_convnet, lambda t: t[: len(t) // 2]),
                     contains=["model.onnxtxt"]),
        compile_case("files/onnxtxt-non-utf8", model_from(lambda: b"ir_version: 8\n\xff\xfe\xfd", "model.onnxtxt"),
                     contains=["model.onnxtxt"]),
        compile_case("files/onnxtxt-negative-element-type",
                     _onnxtxt(m.small_convnet, lambda t: t.replace("elem_type: 1", "elem_type: -7", 1)),
                     contains=["-7", "not an ONNX data type"], note="was a ValueError traceback"),
        compile_case("files/external-data-missing", model_from(_external_data("weights.data")),
                     contains=["weights.data"]),
        compile_case("files/external-data-escapes-directory", model_from(_external_data("../../../../etc/passwd")),
                     contains=["passwd"], note="onnx itself refuses locations outside the model's directory"),
        compile_case("files/external-data-valid", _external_data_valid, expect="success", verify="onnxruntime"),
    ]
    return cases


# ============================================================================= graphs


def _node(op_type, inputs, outputs, name="", **attributes):
    return helper.make_node(op_type, inputs, outputs, name=name or None, **attributes)


def _x(shape=(1, 4)):
    return [m.tensor("x", list(shape))]


def _raw_attribute(op_type, attribute, shape=(1, 3, 8, 8), **extra):
    """A node whose attribute is built by hand (any type, any value)."""
    def build():
        node = helper.make_node(op_type, ["x", *extra.get("inputs", [])], ["y"])
        node.attribute.append(attribute)
        inits = [m.constant(n, v) for n, v in extra.get("initializers", {}).items()]
        return m.graph_model([node], _x(shape), ["y"], inits)
    return build


def _conv_weights(filter_shape=(4, 3, 3, 3)):
    return {"inputs": ["w"], "initializers": {"w": np.ones(filter_shape, np.float32)}}


def _chain(length: int, op_type: str = "Relu"):
    def build():
        nodes, previous = [], "x"
        for index in range(length):
            output = "y" if index == length - 1 else f"t{index}"
            inputs = [previous] if op_type == "Relu" else [previous, "x"]
            nodes.append(_node(op_type, inputs, [output], name=f"n{index}"))
            previous = output
        return m.graph_model(nodes, _x((1, 8)), [m.tensor("y", [1, 8])], infer=False)
    return build


def _wide(op_type: str, count: int, axis=None):
    def build():
        inputs = [m.tensor(f"x{i}", [1, 2]) for i in range(count)]
        attributes = {} if axis is None else {"axis": axis}
        node = _node(op_type, [f"x{i}" for i in range(count)], ["y"], **attributes)
        return m.graph_model([node], inputs, ["y"])
    return build


def _sparse_initializer():
    values = m.constant("c_values", np.array([1.0, 2.0], np.float32))
    indices = m.constant("c_indices", np.array([1, 3], np.int64))
    sparse = helper.make_sparse_tensor(values, indices, [1, 4])
    sparse.values.name = "c"
    model = m.graph_model([_node("Add", ["x", "c"], ["y"])], _x(), ["y"])
    model.graph.sparse_initializer.append(sparse)
    return model


def _untyped_input():
    model = m.unary_model()
    model.graph.input[0].ClearField("type")
    return model


def _wrong_size_raw_data():
    model = m.single_op_model("Add", {"x": [1, 4]}, {"c": np.ones((1, 4), np.float32)})
    model.graph.initializer[0].raw_data = b"\0" * 7
    return model


def _initializer_type(data_type):
    def build():
        model = m.single_op_model("Add", {"x": [1, 4]}, {"c": np.ones((1, 4), np.float32)})
        model.graph.initializer[0].data_type = data_type
        return model
    return build


def _two_graph_outputs_same_name():
    model = m.unary_model()
    model.graph.output.append(model.graph.output[0])
    return model


def _function_op():
    """A node calling a model-local function (ONNX functions, opset 18)."""
    function = helper.make_function("local", "MyRelu", ["a"], ["b"], [_node("Relu", ["a"], ["b"])],
                                    [helper.make_opsetid("", 18)])
    graph = helper.make_graph([helper.make_node("MyRelu", ["x"], ["y"], domain="local")], "g", _x(),
                              [m.tensor("y", [1, 4])])
    return helper.make_model(graph, functions=[function], ir_version=8,
                             opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("local", 1)])


def _if_node():
    then_graph = helper.make_graph([_node("Relu", ["x"], ["t"])], "then", [], [m.tensor("t", [1, 4])])
    else_graph = helper.make_graph([_node("Neg", ["x"], ["e"])], "else", [], [m.tensor("e", [1, 4])])
    node = _node("If", ["cond"], ["y"], then_branch=then_graph, else_branch=else_graph)
    return m.graph_model([node], [m.tensor("cond", [], TensorProto.BOOL), *_x()], [m.tensor("y", [1, 4])], infer=False)


def graph_cases() -> list[Case]:
    G = graph_case
    relu = lambda inputs, outputs, name="": _node("Relu", inputs, outputs, name)  # noqa: E731
    cases = [
        G("graphs/dangling-node-input", lambda: m.graph_model([relu(["nowhere"], ["y"], "r")], _x(), ["y"]),
          contains=["nowhere"]),
        G("graphs/dangling-add-input", lambda: m.graph_model([_node("Add", ["x", "ghost"], ["y"], "a")], _x(), ["y"]),
          contains=["ghost"]),
        G("graphs/output-never-produced", lambda: m.graph_model([relu(["x"], ["t"])], _x(), [m.tensor("y", [1, 4])]),
          contains=["y"]),
        G("graphs/input-missing-from-graph-inputs",
          lambda: m.graph_model([_node("Add", ["x", "z"], ["y"], "a")], _x(), ["y"]), contains=["z"]),
        G("graphs/no-outputs", lambda: m.graph_model([relu(["x"], ["y"])], _x(), []), contains=["output"]),
        G("graphs/no-nodes-output-is-input", lambda: m.graph_model([], _x(), [m.tensor("x", [1, 4])]),
          expect="either", note="a graph whose output is its input: an identity bundle or a clean refusal"),
        G("graphs/no-inputs-constant-output", lambda: m.graph_model([_node("Relu", ["c"], ["y"])], [], ["y"],
                                                                    [m.constant("c", np.array([[-1, 2]], np.float32))]),
          expect="success"),
        G("graphs/empty-op-type", lambda: m.graph_model([_node("", ["x"], ["y"], "blank")], _x(), ["y"]),
          contains=["blank"]),
        G("graphs/unknown-op", lambda: m.graph_model([_node("FooBar", ["x"], ["y"], "foo")], _x(), ["y"]),
          contains=["FooBar", "unsupported"]),
        G("graphs/custom-domain-op", lambda: m.graph_model([helper.make_node("Relu", ["x"], ["y"], domain="com.acme")],
                                                           _x(), ["y"]), contains=["com.acme"]),
        G("graphs/onnx-ml-op",
          lambda: m.graph_model([helper.make_node("Normalizer", ["x"], ["y"], domain="ai.onnx.ml")], _x(), ["y"]),
          contains=["Normalizer"]),
        G("graphs/if-control-flow", _if_node, contains=["If"]),
        G("graphs/local-function", _function_op, contains=["MyRelu"]),
        G("graphs/cycle-two-nodes",
          lambda: m.graph_model([_node("Add", ["x", "b"], ["a"], "n1"), relu(["a"], ["b"], "n2"),
                                 relu(["b"], ["y"], "n3")], _x(), [m.tensor("y", [1, 4])], infer=False),
          contains=["cycle"]),
        G("graphs/self-loop",
          lambda: m.graph_model([_node("Add", ["x", "y"], ["y"], "selfish")], _x(), [m.tensor("y", [1, 4])],
                                infer=False), contains=["selfish"]),
        G("graphs/duplicate-output-names",
          lambda: m.graph_model([relu(["x"], ["y"], "a"), _node("Neg", ["x"], ["y"], "b")],
                                _x(), [m.tensor("y", [1, 4])], infer=False), contains=["y"]),
        G("graphs/duplicate-input-names",
          lambda: m.graph_model([relu(["x"], ["y"])], [*_x(), m.tensor("x", [2, 2])], ["y"]), contains=["x"]),
        G("graphs/duplicate-initializer-names", lambda: m.graph_model(
            [_node("Add", ["x", "c"], ["y"])], _x(), ["y"], [m.constant("c", np.ones((1, 4), np.float32)),
                                                             m.constant("c", np.zeros((1, 4), np.float32))]),
          contains=["c"]),
        G("graphs/input-shadowed-by-initializer", lambda: m.graph_model(
            [_node("Add", ["x", "c"], ["y"])], [*_x(), m.tensor("c", [1, 4])], ["y"],
            [m.constant("c", np.ones((1, 4), np.float32))]),
          expect="success",
          note="ONNX: an initializer that is also an input is the input's default; Glow takes the constant"),
        G("graphs/node-output-shadows-input",
          lambda: m.graph_model([relu(["x"], ["x"], "r")], _x(), [m.tensor("x", [1, 4])], infer=False), contains=["x"]),
        G("graphs/same-graph-output-twice", _two_graph_outputs_same_name, expect="either",
          note="an output listed twice: one output, or a clean refusal"),
        G("graphs/opset-99", lambda: m.single_op_model("Relu", {"x": [1, 4]}, opset=99), contains=["99"]),
        G("graphs/opset-0", lambda: m.single_op_model("Relu", {"x": [1, 4]}, opset=0), contains=["opset"]),
        G("graphs/no-opset-import",
          lambda: m.graph_model([relu(["x"], ["y"])], _x(), [m.tensor("y", [1, 4])], opset=None), contains=["opset"]),
        G("graphs/ir-version-99", lambda: m.graph_model([relu(["x"], ["y"])], _x(), ["y"], ir_version=99),
          expect="either", note="a newer IR version with nothing new in it: onnx loads it; refusing it is fine too"),
        G("graphs/sparse-initializer", _sparse_initializer, contains=["sparse"],
          note="sparse initializers are valid ONNX; a clean 'unsupported' error is what we expect here"),
        G("graphs/untyped-input", _untyped_input, contains=["x"]),
        G("graphs/initializer-raw-data-wrong-size", _wrong_size_raw_data, contains=["c"]),
        G("graphs/initializer-undefined-type", _initializer_type(TensorProto.UNDEFINED), contains=["c"]),
        G("graphs/initializer-string-type", _initializer_type(TensorProto.STRING), contains=["c"]),
        G("graphs/initializer-complex-type", _initializer_type(TensorProto.COMPLEX64), contains=["c"]),
        G("graphs/string-input",
          lambda: m.graph_model([_node("Identity", ["x"], ["y"])], [m.tensor("x", [2], TensorProto.STRING)], ["y"]),
          contains=["x"]),
        G("graphs/add-float-and-int64", lambda: m.graph_model([_node("Add", ["x", "i"], ["y"], "mixed")],
                                                              [*_x(), m.tensor("i", [1, 4], TensorProto.INT64)], ["y"]),
          contains=["mixed"]),
        G("graphs/conv-on-int64",
          lambda: m.graph_model([_node("Conv", ["x", "w"], ["y"], "c")],
                                [m.tensor("x", [1, 3, 8, 8], TensorProto.INT64)], ["y"],
                                [m.constant("w", np.ones((4, 3, 3, 3), np.int64))]), contains=["c"]),
        G("graphs/conv-channel-mismatch", lambda: m.conv_model((1, 3, 8, 8), (4, 5, 3, 3)), contains=["Conv"]),
        G("graphs/conv-group-mismatch", lambda: m.conv_model((1, 4, 8, 8), (4, 1, 3, 3), group=3), contains=["Conv"]),
        G("graphs/conv-group-zero", lambda: m.conv_model((1, 4, 8, 8), (4, 1, 3, 3), group=0), contains=["group"]),
        G("graphs/conv-rank3-filter", lambda: m.conv_model((1, 3, 8, 8), (4, 3, 3)), contains=["Conv"]),
        G("graphs/conv-bias-wrong-length", lambda: m.single_op_model("Conv", {"x": [1, 3, 8, 8]}, {
            "w": np.ones((4, 3, 3, 3), np.float32), "b": np.ones(7, np.float32)}), contains=["Conv"]),
        G("graphs/gemm-inner-mismatch",
          lambda: m.single_op_model("Gemm", {"x": [2, 3]}, {"w": np.ones((4, 5), np.float32)}), contains=["Gemm"]),
        G("graphs/matmul-mismatch",
          lambda: m.single_op_model("MatMul", {"x": [2, 3]}, {"w": np.ones((4, 5), np.float32)}), contains=["MatMul"]),
        G("graphs/add-not-broadcastable", lambda: m.single_op_model("Add", {"x": [2, 3], "z": [4, 5]}),
          contains=["Add"]),
        G("graphs/concat-rank-mismatch", lambda: m.single_op_model("Concat", {"x": [2, 3], "z": [2, 3, 1]}, axis=0),
          contains=["Concat"]),
        G("graphs/concat-no-axis", lambda: m.single_op_model("Concat", {"x": [2, 3], "z": [2, 3]}), contains=["axis"]),
        G("graphs/concat-axis-out-of-range", lambda: m.single_op_model("Concat", {"x": [2, 3], "z": [2, 3]}, axis=5),
          contains=["axis"]),
        G("graphs/softmax-axis-out-of-range",
          lambda: m.single_op_model("Softmax", {"x": [2, 3]}, axis=4), contains=["axis"]),
        G("graphs/flatten-axis-out-of-range",
          lambda: m.single_op_model("Flatten", {"x": [2, 3]}, axis=-7), contains=["axis"]),
        G("graphs/transpose-perm-duplicate", lambda: m.single_op_model("Transpose", {"x": [2, 3]}, perm=[0, 0]),
          contains=["perm"]),
        G("graphs/transpose-perm-wrong-length", lambda: m.single_op_model("Transpose", {"x": [2, 3]}, perm=[1, 0, 2]),
          contains=["perm"]),
        G("graphs/reshape-two-minus-ones",
          lambda: m.single_op_model("Reshape", {"x": [2, 6]}, {"s": np.array([-1, -1], np.int64)}),
          contains=["Reshape"]),
        G("graphs/reshape-size-mismatch",
          lambda: m.single_op_model("Reshape", {"x": [2, 6]}, {"s": np.array([5, 5], np.int64)}), contains=["Reshape"]),
        G("graphs/reshape-runtime-shape",
          lambda: m.single_op_model("Reshape", {"x": [2, 6], "s": [2]}), contains=["Reshape"],
          note="a shape computed at run time: not compilable ahead of time"),
        G("graphs/split-sizes-dont-sum",
          lambda: m.graph_model([_node("Split", ["x", "s"], ["a", "b"], "sp", axis=1)],
                                _x((2, 6)), ["a", "b"], [m.constant("s", np.array([2, 2], np.int64))]),
          contains=["sp"]),
        G("graphs/chain-2000-relu", _chain(2000), expect="success"),
        G("graphs/chain-2000-add", _chain(2000, "Add"), expect="success"),
        G("graphs/sum-1000-inputs", _wide("Sum", 1000), expect="success"),
        G("graphs/concat-1000-inputs", _wide("Concat", 1000, axis=1), expect="success"),
        G("graphs/max-300-inputs", _wide("Max", 300), expect="success"),
        G("graphs/sum-one-input", _wide("Sum", 1), expect="success"),
        G("graphs/sum-no-inputs",
          lambda: m.graph_model([_node("Sum", [], ["y"], "s")], _x(), [m.tensor("y", [1, 4])], infer=False),
          contains=["Sum"]),
        G("graphs/node-with-too-many-inputs",
          lambda: m.graph_model([_node("Relu", ["x", "x"], ["y"], "r2")], _x(), [m.tensor("y", [1, 4])], infer=False),
          contains=["r2"]),
        G("graphs/node-with-no-outputs",
          lambda: m.graph_model([_node("Relu", ["x"], [], "r0"), _node("Neg", ["x"], ["y"])], _x(), ["y"]),
          expect="either", note="a node whose result nobody reads: dead code to drop, or a clean refusal"),
        G("graphs/dropout-training-mode", lambda: m.graph_model(
            [_node("Dropout", ["x", "r", "t"], ["y"], "drop")], _x(), ["y"],
            [m.constant("r", np.array(0.5, np.float32)), m.constant("t", np.array(True))]), contains=["drop"]),
        G("graphs/batchnorm-wrong-param-length", lambda: m.single_op_model("BatchNormalization", {"x": [1, 3, 4, 4]}, {
            n: np.ones(5, np.float32) for n in ("s", "b", "mean", "var")}), contains=["BatchNormalization"]),
    ]
    # Wrong attribute types: every one a clean error naming the attribute.
    wrong = [
        ("conv-strides-float", "Conv", helper.make_attribute("strides", [1.5, 1.5]), "strides", _conv_weights()),
        ("conv-strides-string", "Conv", helper.make_attribute("strides", "2,2"), "strides", _conv_weights()),
        ("conv-kernel-shape-int", "Conv", helper.make_attribute("kernel_shape", 3), "kernel_shape", _conv_weights()),
        ("conv-pads-tensor", "Conv", helper.make_attribute("pads", m.constant("p", np.zeros(4, np.int64))), "pads",
         _conv_weights()),
        ("conv-group-float", "Conv", helper.make_attribute("group", 1.0), "group", _conv_weights()),
        ("conv-auto-pad-garbage", "Conv", helper.make_attribute("auto_pad", "SOMETIMES"), "auto_pad", _conv_weights()),
        ("conv-dilations-zero", "Conv", helper.make_attribute("dilations", [0, 0]), "dilations", _conv_weights()),
        ("conv-strides-zero", "Conv", helper.make_attribute("strides", [0, 0]), "strides", _conv_weights()),
        ("conv-strides-negative", "Conv", helper.make_attribute("strides", [-1, -1]), "strides", _conv_weights()),
        ("conv-pads-negative", "Conv", helper.make_attribute("pads", [-1, -1, -1, -1]), "pads", _conv_weights()),
        ("conv-pads-wrong-length", "Conv", helper.make_attribute("pads", [1, 1]), "pads", _conv_weights()),
        ("maxpool-kernel-missing-values", "MaxPool", helper.make_attribute("kernel_shape", [2]), "kernel_shape", {}),
        ("maxpool-kernel-float", "MaxPool", helper.make_attribute("kernel_shape", [2.0, 2.0]), "kernel_shape", {}),
        ("maxpool-kernel-zero", "MaxPool", helper.make_attribute("kernel_shape", [0, 0]), "kernel_shape", {}),
        ("maxpool-kernel-negative", "MaxPool", helper.make_attribute("kernel_shape", [-2, -2]), "kernel_shape", {}),
        ("averagepool-ceil-mode-string", "AveragePool", helper.make_attribute("ceil_mode", "yes"), "ceil_mode", {}),
        ("softmax-axis-float", "Softmax", helper.make_attribute("axis", 1.0), "axis", {}),
        ("softmax-axis-ints", "Softmax", helper.make_attribute("axis", [1]), "axis", {}),
        ("leakyrelu-alpha-string", "LeakyRelu", helper.make_attribute("alpha", "0.1"), "alpha", {}),
        ("elu-alpha-ints", "Elu", helper.make_attribute("alpha", [1, 2]), "alpha", {}),
        ("transpose-perm-floats", "Transpose", helper.make_attribute("perm", [0.0, 1.0, 2.0, 3.0]), "perm", {}),
        ("transpose-perm-out-of-range", "Transpose", helper.make_attribute("perm", [0, 1, 2, 9]), "perm", {}),
        ("flatten-axis-string", "Flatten", helper.make_attribute("axis", "one"), "axis", {}),
        ("lrn-size-missing-but-alpha", "LRN", helper.make_attribute("alpha", 0.1), "size", {}),
        ("unknown-attribute", "Relu", helper.make_attribute("frobnicate", 1), "frobnicate", {}),
    ]
    for slug, op_type, attribute, fragment, extra in wrong:
        expect, note = "error", ""
        if slug == "unknown-attribute":
            expect, note = "either", "onnx's checker refuses unknown attributes; ignoring one is what onnxruntime does"
        cases.append(G(f"graphs/attr-{slug}", _raw_attribute(op_type, attribute, **extra), expect=expect,
                       contains=[fragment] if expect == "error" else [], note=note))
    return cases


# ============================================================================= shapes


def _dims_model(dims, op_type="Relu"):
    """Input x with the given dims (ints, None for a dimension with neither value nor name)."""
    def build():
        model = m.graph_model([_node(op_type, ["x"], ["y"])], _x((1, 4)), [m.tensor("y", None)], infer=False)
        shape = model.graph.input[0].type.tensor_type.shape
        del shape.dim[:]
        for d in dims:
            dim = shape.dim.add()
            if isinstance(d, int):
                dim.dim_value = d
            elif isinstance(d, str):
                dim.dim_param = d
        return model
    return build


def _offset_model(first: int, second: int = 16):
    """Inputs x0[first], x1[second] (float), y = Relu(x1): x1 lands at byte offset 4 * first."""
    def build():
        return m.graph_model([_node("Relu", ["x1"], ["y"])], [m.tensor("x0", [first]), m.tensor("x1", [second])],
                             [m.tensor("y", [second])], infer=False)
    return build


def _gather(indices, data_shape=(4, 3), axis=0):
    return lambda: m.single_op_model("Gather", {"x": list(data_shape)}, {"i": np.array(indices, np.int64)}, axis=axis)


def _op_with_constant_shape(op_type, shape_input, x_shape=(1, 4), **attributes):
    return lambda: m.single_op_model(op_type, {"x": list(x_shape)}, {"s": np.array(shape_input, np.int64)},
                                     **attributes)


def shape_cases() -> list[Case]:
    G = graph_case
    cases = []
    for slug, dims, fragment in [("minus-one", [-1, 4], "x"), ("minus-five", [1, -5], "x"), ("zero", [0, 4], "x"),
                                 ("all-zero", [0, 0], "x"), ("unset", [1, None], "x"),
                                 ("symbolic-undefined", ["N", 4], "N"),
                                 ("rank-zero-with-dim-zero", [0], "x"), ("huge-2e40", [1 << 40, 4], "x"),
                                 ("int64-max", [(1 << 63) - 1], "x"), ("2e62-floats", [1 << 62], "x"),
                                 ("product-overflows-int64", [1 << 32, 1 << 32], "x"),
                                 ("past-2e31-elements", [1 << 31, 2], "x")]:
        if slug in ("huge-2e40", "past-2e31-elements"):  # 16 TB, 16 GB: a 64-bit host addresses them
            cases.append(G(f"shapes/input-dim-{slug}", _dims_model(dims), expect="either", verify=None, note=HUGE_NOTE))
        else:
            cases.append(G(f"shapes/input-dim-{slug}", _dims_model(dims), contains=[fragment]))
    return cases + _shape_cases_rest()


def _shape_cases_rest() -> list[Case]:
    G = graph_case
    cases = [
        G("shapes/input-scalar", _dims_model([]), expect="success", note="a rank-0 input is valid ONNX"),
        G("shapes/input-rank-6", _dims_model([1, 2, 1, 2, 1, 2]), expect="success"),
        G("shapes/input-rank-9", _dims_model([1] * 9), expect="either",
          note="Glow caps ranks at 6: a clean refusal is fine"),
        G("shapes/input-symbolic-defined", _dims_model(["N", 4]), "-onnx-define-symbol=N,3", expect="success",
          verify_options={"symbols": {"N": 3}}),
        G("shapes/maxpool-kernel-16-on-8",
          lambda: m.single_op_model("MaxPool", {"x": [1, 3, 8, 8]}, kernel_shape=[16, 16]), contains=["MaxPool"]),
        G("shapes/averagepool-kernel-9-on-8",
          lambda: m.single_op_model("AveragePool", {"x": [1, 3, 8, 8]}, kernel_shape=[9, 9]), contains=["AveragePool"]),
        G("shapes/maxpool-kernel-9-padded-to-fit",
          lambda: m.single_op_model("MaxPool", {"x": [1, 3, 8, 8]}, kernel_shape=[9, 9], pads=[1, 1, 1, 1]),
          expect="success"),
        G("shapes/conv-kernel-9-on-8", lambda: m.conv_model((1, 3, 8, 8), (4, 3, 9, 9)), contains=["Conv"]),
        G("shapes/conv-kernel-16-on-8", lambda: m.conv_model((1, 3, 8, 8), (4, 3, 16, 16)), contains=["Conv"]),
        G("shapes/conv-empty-input", lambda: m.conv_model((1, 3, 0, 8), (4, 3, 3, 3)), contains=["x"]),
        G("shapes/conv-kernel-attr-disagrees", lambda: m.conv_model((1, 3, 8, 8), (4, 3, 3, 3), kernel_shape=[5, 5]),
          contains=["kernel_shape"]),
        G("shapes/conv-dilated-kernel-too-large", lambda: m.conv_model((1, 3, 8, 8), (4, 3, 3, 3), dilations=[4, 4]),
          contains=["Conv"]),
        G("shapes/conv-stride-larger-than-input", lambda: m.conv_model((1, 3, 8, 8), (4, 3, 3, 3), strides=[20, 20]),
          expect="success", note="one output pixel: valid"),
        G("shapes/conv-kernel-equals-input", lambda: m.conv_model((1, 3, 8, 8), (4, 3, 8, 8)), expect="success"),
        G("shapes/conv-huge-padding",
          lambda: m.conv_model((1, 3, 8, 8), (4, 3, 3, 3), pads=[1 << 31] * 4), contains=["Conv"]),
        G("shapes/conv-1d", lambda: m.conv_model((1, 3, 8), (4, 3, 3)), expect="either",
          note="1-D convolution: supported or cleanly refused"),
        G("shapes/conv-3d", lambda: m.conv_model((1, 3, 4, 4, 4), (4, 3, 3, 3, 3)), expect="either"),
        G("shapes/gather-index-10-of-4", _gather([10]), contains=["Gather"]),
        G("shapes/gather-index-minus-9-of-4", _gather([-9]), contains=["Gather"]),
        G("shapes/gather-index-4-of-4", _gather([0, 4]), contains=["Gather"]),
        G("shapes/gather-index-int64-max", _gather([(1 << 63) - 1]), contains=["Gather"]),
        G("shapes/gather-index-minus-1", _gather([-1, 0]), expect="success"),
        G("shapes/gather-axis-out-of-range", _gather([0], axis=3), contains=["axis"]),
        G("shapes/gather-axis-1-index-3-of-3", _gather([3], axis=1), contains=["Gather"]),
        G("shapes/gather-empty-indices", _gather(np.zeros((0,), np.int64)), expect="either",
          note="an empty result: a clean refusal or an empty output"),
        G("shapes/slice-starts-past-end", lambda: m.single_op_model("Slice", {"x": [4, 6]}, {
            "st": np.array([10], np.int64), "en": np.array([20], np.int64), "ax": np.array([1], np.int64)}),
          expect="either", note="ONNX clamps: an empty slice; refusing an empty tensor is fine"),
        G("shapes/slice-clamped-end", lambda: m.single_op_model("Slice", {"x": [4, 6]}, {
            "st": np.array([1], np.int64), "en": np.array([1 << 62], np.int64), "ax": np.array([1], np.int64)}),
          expect="success"),
        G("shapes/slice-step-zero", lambda: m.single_op_model("Slice", {"x": [4, 6]}, {
            "st": np.array([0], np.int64), "en": np.array([4], np.int64), "ax": np.array([1], np.int64),
            "sp": np.array([0], np.int64)}), contains=["Slice"]),
        G("shapes/reshape-negative-dim", _op_with_constant_shape("Reshape", [-2, 2]), contains=["Reshape"]),
        G("shapes/reshape-to-huge", _op_with_constant_shape("Reshape", [1 << 40, 1 << 40]), contains=["Reshape"]),
        G("shapes/expand-huge", _op_with_constant_shape("Expand", [1 << 20, 1 << 20, 4]), contains=["Expand"],
          expect="either", verify=None,
          note=HUGE_NOTE),
        G("shapes/expand-incompatible", _op_with_constant_shape("Expand", [3, 5]), contains=["Expand"]),
        G("shapes/tile-huge", _op_with_constant_shape("Tile", [1 << 31, 1 << 31]), contains=["Tile"]),
        G("shapes/tile-negative", _op_with_constant_shape("Tile", [-1, 2]), contains=["Tile"]),
        G("shapes/constantofshape-huge", lambda: m.graph_model(
            [_node("ConstantOfShape", ["s"], ["c"]), _node("Add", ["c", "x"], ["y"])], _x((1, 4)),
            [m.tensor("y", None)], [m.constant("s", np.array([1 << 40, 4], np.int64))], infer=False),
          contains=["ConstantOfShape"]),
        G("shapes/constantofshape-negative", lambda: m.graph_model(
            [_node("ConstantOfShape", ["s"], ["c"]), _node("Add", ["c", "x"], ["y"])], _x((1, 4)),
            [m.tensor("y", None)], [m.constant("s", np.array([-3, 4], np.int64))], infer=False),
          contains=["ConstantOfShape"]),
        G("shapes/pad-huge",
          lambda: m.single_op_model("Pad", {"x": [1, 4]}, {"p": np.array([0, 1 << 40, 0, 1 << 40], np.int64)}),
          contains=["Pad"], expect="either", verify=None,
          note=HUGE_NOTE),
        G("shapes/pad-negative-past-size",
          lambda: m.single_op_model("Pad", {"x": [1, 4]}, {"p": np.array([0, -3, 0, -3], np.int64)}), contains=["Pad"]),
        G("shapes/resize-scale-huge", lambda: m.graph_model(
            [_node("Resize", ["x", "", "sc"], ["y"], mode="nearest")], _x((1, 1, 2, 2)), [m.tensor("y", None)],
            [m.constant("sc", np.array([1, 1, 1e6, 1e6], np.float32))], infer=False), contains=["Resize"],
          expect="either", verify=None,
          note=HUGE_NOTE),
        G("shapes/matmul-zero-inner",
          lambda: m.single_op_model("MatMul", {"x": [2, 0]}, {"w": np.ones((0, 3), np.float32)}), contains=["x"]),
        G("shapes/topk-k-larger-than-axis",
          lambda: m.graph_model([_node("TopK", ["x", "k"], ["y", "i"], "tk")], _x((1, 4)), ["y", "i"],
                                [m.constant("k", np.array([9], np.int64))]), contains=["tk"]),
        G("shapes/depthtospace-not-divisible",
          lambda: m.single_op_model("DepthToSpace", {"x": [1, 3, 2, 2]}, blocksize=2), contains=["DepthToSpace"]),
        G("shapes/model-input-overrides-to-huge", m.unary_model, "-model-input=x,float,[1099511627776,4]",
          contains=["x"], expect="either", verify=None,
          note=HUGE_NOTE),
        G("shapes/model-input-rank-change", m.unary_model, "-model-input=x,float,[2,2]", expect="success",
          verify=None, note="Glow lets -model-input re-shape an input; a Relu accepts any shape"),
        # Offsets past 2^31 and 2^32 in the mutable region: compile only (the region is 2-4 GB), and
        # check the header's offsets and the LLVM IR's addresses instead of running it.
        compile_case("shapes/offset-past-2e31-host", model_from(_offset_model(537_000_000)), "-dump-llvm-ir",
                     expect="success", verify="offsets",
                     note="x1 at byte 2,148,000,000: a 64-bit host addresses it; "
                          "checked on the header and IR, not run"),
        compile_case("shapes/offset-past-2e32-host", model_from(_offset_model(1_100_000_000)), "-dump-llvm-ir",
                     expect="success", verify="offsets",
                     note="x1 at byte 4,400,000,000: checked on the header and IR, not run"),
        compile_case("shapes/offset-past-2e32-cortex-m7", model_from(_offset_model(1_100_000_000)), "-mcpu=cortex-m7",
                     contains=["x0"], note="a 4.4 GB region cannot be addressed by a 32-bit target"),
        compile_case("shapes/offset-past-2e31-cortex-m7", model_from(_offset_model(537_000_000)), "-mcpu=cortex-m7",
                     "-dump-llvm-ir", expect="either", verify="offsets",
                     note="2.15 GB fits a 32-bit address space: refused or correct offsets (checked, not run)"),
        compile_case("shapes/bytes-past-2e63", model_from(_offset_model(1 << 62)), contains=["x0"]),
        compile_case("shapes/offset-past-2e31-riscv32", model_from(_offset_model(1_100_000_000)), "-mcpu=rv32imc",
                     contains=["x0"]),
    ]
    return cases


# ============================================================================= options


C_NAMES = ["int", "struct", "return", "if", "default", "_Bool", "main", "memcpy", "GLOW_SUCCESS", "void", "while",
           "static", "restrict", "inline", "NULL", "uint8_t", "GLOW_MEM_ALIGN", "printf", "errno", "__func__"]

GLOW_COMPILE_VALUE_OPTIONS = {
    # option: garbage values (each an error); "" is tried for every option
    "backend": ["Interpreter", "cpu", "OpenCL"],
    "bundle-api": ["shared", "STATIC"],
    "board": ["esp32", "IMXRT1060"],
    "ram-size": ["abc", "-1", "1e999", "99999999999999999999999999999K", "512G", "nan", "inf", "1.5.2"],
    "flash-size": ["abc", "-4M", "1e400"],
    "target": ["garbage", "mips-unknown-linux-gnu", "x86_64-unknown-linux-gnu-extra-parts", "sparc-sun-solaris"],
    "mcpu": ["garbage", "cortex-m99", "skylake", "cortex-m7 "],
    "mattr": ["garbage,,,", "+nonexistent", "-", ",,,"],
    "float-abi": ["medium", "HARD"],
    "relocation-model": ["dynamic-no-pic", "ropi"],
    "code-model": ["tiny", "kernel"],
    "opt-level": ["O4", "3", "-O2", "Ofast"],
    "model-input": [",", "x,float,[]", "x,float,[0]", "x,float,[-1,4]", "x,float,[abc]", "x,int8q,inf,0,[1,4]",
                    "x,int8q,nan,0,[1,4]", "x,int8q,1,300,[1,4]", "x,int8q,-1,0,[1,4]", "x,double,[1,4]",
                    "nosuch,float,[1,4]", "x,float,[1,4", "x,float,[99999999999999999999]", "x,float,[1e9,1e9]",
                    "x,float,[٣,4]", "x,int8q,0.1,0,[9223372036854775807,9223372036854775807]"],
    "onnx-define-symbol": ["N", "N,", "N,0", "N,-3", "N,abc", "N,٣", "N,1e3", "N,99999999999999999999", ",4", "N,4,5",
                           "N,4.0", "N, 4x"],
    "load-profile": ["missing.yaml"],
    "quantization-schema": ["bogus"],
    "quantization-precision": ["Int4", "Int64"],
    "quantization-precision-bias": ["Int64", "Int4"],
    "quantization-calibration": ["magic"],
    "keep-original-precision-for-nodes": ["NoSuchKind"],
    "network-name": [],
    "dump-graph-DAG": [],
    "memory-report": [],
    "emit-bundle": [],
}

BOOLEAN = ["reuse-activation-memory-allocations", "memory-fusion", "use-hifi4", "use-cmsis", "enable-channelwise",
           "convert-placeholders", "assert-all-nodes-quantized", "tflite-float-inputs", "tflite-float-outputs"]

PROFILE_NEEDED = ("quantization-schema", "quantization-precision", "quantization-precision-bias",
                  "quantization-calibration", "keep-original-precision-for-nodes")


def _profile(work: Work) -> str:
    """A valid profile of the Relu model (Glow's format, as glow-profile writes it)."""
    from glowmlir.compiler import CompileOptions
    from glowmlir.profiling import Profiler
    from glowmlir.quantization.profile import write_profile

    profiler = Profiler.for_model(RELU(work), CompileOptions())
    for _ in profiler.run([{"x": np.linspace(-1, 1, 4, dtype=np.float32).reshape(1, 4)}]):
        pass
    write_profile(work.path("profile.yaml"), profiler.profile)
    return work.path("profile.yaml")


def _relu_and(*extra_files: tuple[str, str | bytes]):
    def setup(work: Work) -> str:
        for file_name, data in extra_files:
            work.write(file_name, data)
        return RELU(work)
    return setup


def _symbolic_relu(work: Work) -> str:
    return work.onnx(_dims_model(["N", 4])())


def _named_io(inputs: list[str], outputs: list[str]):
    """Add/Relu over inputs with the given names; outputs the given names."""
    def build():
        nodes, current = [], inputs[0]
        for index, name in enumerate(inputs[1:]):
            nodes.append(_node("Add", [current, name], [f"s{index}"]))
            current = f"s{index}"
        for name in outputs:
            nodes.append(_node("Relu", [current], [name]))
        return m.graph_model(nodes, [m.tensor(n, [1, 4]) for n in inputs], [m.tensor(n, [1, 4]) for n in outputs],
                             infer=False)
    return build


def option_cases() -> list[Case]:
    C = compile_case
    cases = []
    for option, values in GLOW_COMPILE_VALUE_OPTIONS.items():
        model = _symbolic_relu if option == "onnx-define-symbol" else RELU
        if option in PROFILE_NEEDED:
            model = _relu_and(("profile.yaml", ""))
        for index, value in enumerate(["", *values]):
            options = [f"-{option}={value}"]
            if option in PROFILE_NEEDED:
                options.append("-load-profile={work}/good.yaml")
            if option == "emit-bundle":
                continue  # tried below: emit-bundle is set by compile_case
            slug = f"{option}-{'empty' if value == '' else index}"
            setup = model
            if option in PROFILE_NEEDED:
                setup = lambda w: (_profile(w), os.rename(w.path("profile.yaml"), w.path("good.yaml")), RELU(w))[2]  # noqa: E731
            outputs = ("out",) + ((value,) if option in ("dump-graph-DAG", "memory-report") and value else ())
            cases.append(C(f"options/{slug}", setup, *options, contains=[option], outputs=outputs,
                           note=f"-{option}={value!r}"))
    for option in BOOLEAN:
        for index, value in enumerate(["", "maybe", "2", "yes please"]):
            cases.append(C(f"options/{option}-bool-{index}", RELU, f"-{option}={value}", contains=[option]))
    for name in C_NAMES:
        cases.append(C(f"options/network-name-c-{name}", CONVNET, f"-network-name={name}", expect="either",
                       verify="onnxruntime", verify_options={"network_name": name},
                       note="a C keyword or reserved name: legalized (header must compile) or refused"))
    odd_names = {"600-chars": "n" * 600, "spaces": "my net", "dash": "my-net", "digit-first": "1net",
                 "unicode": "réseau", "slash": "a/b", "dotdot": "..", "dot": ".", "newline": "a\nb", "quote": 'a"b',
                 "backslash": "a\\b", "only-underscores": "__", "star": "*"}
    for slug, name in odd_names.items():
        cases.append(C(f"options/network-name-{slug}", CONVNET, f"-network-name={name}", expect="either",
                       verify="onnxruntime", verify_options={"network_name": name},
                       note="legalized to an identifier and a file name (header compiles) or refused"))
    io_names = {
        "legalize-collision": (["a.b", "a_b"], ["y"]), "input-output-collide": (["x"], ["x_"]),
        "size-macro-collision": (["x"], ["CONSTANT_MEM_SIZE"]), "c-keyword-input": (["int"], ["return"]),
        "mem-align-name": (["MEM_ALIGN"], ["y"]), "digit-names": (["1"], ["2"]),
        "long-names": (["i" * 600], ["o" * 600]), "empty-like": (["_"], ["__"]), "case-collision": (["X"], ["x"]),
        "unicode-collision": (["é"], ["è"]),
    }
    for slug, (inputs, outputs) in io_names.items():
        cases.append(compile_case(f"options/io-names-{slug}", model_from(_named_io(inputs, outputs)),
                                  "-network-name=net", expect="either", verify="onnxruntime",
                                  verify_options={"network_name": "net"},
                                  note="names whose C macros would collide: made distinct (header must compile) "
                                       "or refused"))
    # Unwritable outputs: each failure leaves nothing, neither the bundle nor the report.
    unwritable = {"proc": "/proc/glowmlir-campaign.{ext}", "directory": "{work}",
                  "under-a-file": "{work}/model.onnx/x.{ext}", "dev-full": "/dev/full"}
    for option, ext in (("memory-report", "json"), ("dump-graph-DAG", "dot")):
        cases.append(C(f"options/{option}-into-missing-directories", RELU, f"-{option}={{work}}/no/such/x.{ext}",
                       expect="success", note="missing directories are made, as for -emit-bundle"))
        for slug, path in unwritable.items():
            path = path.format(ext=ext, work="{work}")
            outputs = ("out",) + ((path.replace("{work}/", ""),) if path.startswith("{work}/") else ())
            cases.append(C(f"options/{option}-unwritable-{slug}", RELU, f"-{option}={path}", contains=[option],
                           outputs=outputs))
        cases.append(C(f"options/{option}-empty-path", RELU, f"-{option}=", contains=[option]))
    for slug, path in {"proc": "/proc/glowmlir-bundle", "existing-file": "{work}/model.onnx",
                       "under-a-file": "{work}/model.onnx/b", "empty": "", "dev-null": "/dev/null"}.items():
        cases.append(Case(f"options/emit-bundle-{slug}", "glow-compile",
                          lambda w, p=path: [f"-model={RELU(w)}", f"-emit-bundle={p.replace('{work}', w.dir)}"],
                          "error", ("emit-bundle",) if slug == "empty" else ()))
    cases += [
        C("options/dag-then-require-fit-fails", RELU, "-dump-graph-DAG={work}/g.dot", "-ram-size=1", "-require-fit",
          contains=["fit"], outputs=("out", "g.dot"), note="the DAG must not be left behind by a later failure"),
        C("options/report-then-require-fit-fails", RELU, "-memory-report={work}/r.json", "-flash-size=1",
          "-require-fit", contains=["fit"], outputs=("out", "r.json")),
        C("options/require-fit-without-sizes", RELU, "-require-fit", contains=["require-fit"]),
        C("options/ram-size-zero-require-fit", RELU, "-ram-size=0", "-require-fit", contains=["fit"]),
        C("options/unknown-option", RELU, "-frobnicate=1", contains=["frobnicate"]),
        C("options/unknown-flag", RELU, "-frobnicate", contains=["frobnicate"]),
        C("options/stray-positional", RELU, "stray.onnx", contains=["stray"]),
        Case("options/no-model", "glow-compile", lambda w: [f"-emit-bundle={w.out}"], "error", ("model",)),
        Case("options/no-emit-bundle", "glow-compile", lambda w: [f"-model={RELU(w)}"], "error", ("emit-bundle",)),
        Case("options/no-arguments", "glow-compile", lambda w: [], "error"),
        C("options/model-input-twice", RELU, "-model-input=x,float,[1,4]", "-model-input=x,float,[2,4]",
          contains=["x"]),
        C("options/define-symbol-twice", _symbolic_relu, "-onnx-define-symbol=N,2", "-onnx-define-symbol=N,3",
          contains=["N"]),
        C("options/define-symbol-on-tflite", model_from(m.tflite_model, "model.tflite"), "-onnx-define-symbol=N,2",
          contains=["onnx-define-symbol"]),
        C("options/tflite-float-inputs-on-onnx", RELU, "-tflite-float-inputs", contains=["tflite-float-inputs"]),
        C("options/use-cmsis-float-model", RELU, "-use-cmsis", "-mcpu=cortex-m7", contains=["use-cmsis"]),
        C("options/use-cmsis-and-use-hifi4", RELU, "-use-cmsis", "-use-hifi4", contains=["use-cmsis"]),
        C("options/enable-channelwise-without-profile", RELU, "-enable-channelwise", contains=["load-profile"]),
        C("options/target-thumb-mcpu-skylake", RELU, "-target=thumbv7em-none-eabihf", "-mcpu=skylake",
          contains=["skylake"]),
        C("options/target-x86-mcpu-cortex-m7", RELU, "-target=x86_64-unknown-linux-gnu", "-mcpu=cortex-m7",
          contains=["cortex-m7"]),
        C("options/target-riscv-mcpu-cortex-m4", RELU, "-target=riscv32-unknown-none-elf", "-mcpu=cortex-m4",
          contains=["cortex-m4"]),
        C("options/target-aarch64-mcpu-rv32imc", RELU, "-target=aarch64-unknown-linux-gnu", "-mcpu=rv32imc",
          contains=["rv32imc"]),
        C("options/mattr-dsp-on-x86", RELU, "-mattr=+dsp", contains=["dsp"]),
        C("options/mattr-avx512-on-cortex-m4", RELU, "-mcpu=cortex-m4", "-mattr=+avx512f", contains=["avx512f"]),
        C("options/float-abi-hard-on-cortex-m3", RELU, "-mcpu=cortex-m3", "-float-abi=hard", contains=["float-abi"],
          note="hard float without an FPU"),
        C("options/board-and-unknown-ram", RELU, "-board=imxrt1060", "-ram-size=zz", contains=["ram-size"]),
        C("options/valid-cortex-m0plus", RELU, "-mcpu=cortex-m0+", expect="success"),
        C("options/valid-thumb-target", RELU, "-target=thumbv7em-none-eabihf", expect="success"),
        C("options/valid-mattr-sse2-host", RELU, "-target=x86_64-unknown-linux-gnu", "-mattr=+sse2", expect="success",
          verify="onnxruntime"),
        C("options/valid-float-abi-soft-cortex-m4", RELU, "-mcpu=cortex-m4", "-float-abi=soft", expect="success"),
        C("options/valid-opt-level-Oz", RELU, "-opt-level=Oz", expect="success", verify="onnxruntime"),
        C("options/valid-dynamic-api", CONVNET, "-bundle-api=dynamic", expect="success", verify="onnxruntime",
          verify_options={"bundle_api": "dynamic"}),
        C("options/valid-reports", CONVNET, "-memory-report={work}/r.json", "-dump-graph-DAG={work}/g.dot",
          "-board=imxrt1060", expect="success", verify="onnxruntime"),
        C("options/target-arch-only", RELU, "-target=x86_64", expect="success", verify=None,
          note="LLVM completes a bare architecture to a triple"),
        C("options/target-riscv64", RELU, "-target=riscv64-unknown-elf", expect="success", verify=None),
        C("options/valid-profile", lambda w: (_profile(w), RELU(w))[1], "-load-profile={work}/profile.yaml",
          expect="success", verify=None),
        C("options/valid-define-symbol", _symbolic_relu, "-onnx-define-symbol=N,2", expect="success",
          verify="onnxruntime", verify_options={"symbols": {"N": 2}}),
        C("options/glow-spelling-double-dash", RELU, "--opt-level", "O2", expect="success"),
    ]
    bad_profiles = {
        "empty-file": "", "garbage": "::: not yaml [", "directory": None, "not-a-list": "a: 1\n",
        "other-model": "---\n"
                       "- nodeOutputName: nosuch\n  scale: 0.1\n  offset: 0\n  min: 0\n  max: 1\n  histogram: [1]\n",
        "nan-range": "---\n"
                     "- nodeOutputName: x\n  scale: .nan\n  offset: 0\n  min: .nan\n  max: .nan\n  histogram: [1]\n"
                     "- nodeOutputName: y\n  scale: .nan\n  offset: 0\n  min: .nan\n  max: .nan\n  histogram: [1]\n",
        "min-above-max": "---\n- nodeOutputName: x\n  scale: 0.01\n  offset: 0\n  min: 5\n  max: -5\n  histogram: [1]\n"
                         "- nodeOutputName: y\n  scale: 0.01\n  offset: 0\n  min: 5\n  max: -5\n  histogram: [1]\n",
        "string-min": "---\n- nodeOutputName: x\n  scale: 0.01\n  offset: 0\n  min: low\n  max: 1\n  histogram: [1]\n",
        "binary": "\x00\x01\x02\xff",
    }
    for slug, text in bad_profiles.items():
        def setup(w, t=text):
            if t is None:
                os.makedirs(w.path("profile.yaml"))
            else:
                w.write("profile.yaml", t.encode("latin-1"))
            return RELU(w)
        cases.append(C(f"options/load-profile-{slug}", setup, "-load-profile={work}/profile.yaml",
                       contains=["profile"]))
    return cases


# ============================================================================= glow-opt


GOOD_GLOW = """glow.function @net {
  %x = glow.placeholder "x" : tensor<2x3xf32>
  %r = glow.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  glow.save %r as "y" : tensor<2x3xf32>
}
"""

ELIDED_GLOW = """glow.function @net {
  %x = glow.placeholder "x" : tensor<2x3xf32>
  %w = glow.constant "w" {value = dense_resource<elided> : tensor<3x4xf32>} : tensor<3x4xf32>
  %b = glow.constant "b" {value = dense<0.5> : tensor<4xf32>} : tensor<4xf32>
  %fc = glow.fully_connected %x, %w, %b : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  glow.save %fc as "y" : tensor<2x4xf32>
}
"""


def opt_case(name: str, source: str | bytes | None, *arguments: str, expect="error", contains=(),
             file_name="input.mlir", outputs=(), note="", extra_files=()) -> Case:
    """`glow-opt <work>/<file_name> <arguments>`; `source=None` writes no file."""
    def setup(work: Work) -> list[str]:
        for extra_name, data in extra_files:
            work.write(extra_name, data)
        if source is not None:
            work.write(file_name, source)
        return [work.path(file_name), *formatted(arguments, work)]
    return Case(name, "glow-opt", setup, expect, tuple(contains), outputs=tuple(outputs), note=note)


def opt_cases() -> list[Case]:
    opt = opt_case
    bad_sources = {
        "empty": "", "garbage": "this is not MLIR", "binary": b"\x00\xff\xfe\x01" * 16, "unterminated": GOOD_GLOW[:-3],
        "unknown-op": GOOD_GLOW.replace("glow.relu", "glow.frobnicate"),
        "unknown-dialect": GOOD_GLOW.replace("glow.relu", "acme.relu"),
        "undefined-value": GOOD_GLOW.replace("glow.relu %x", "glow.relu %nope"),
        "type-mismatch": GOOD_GLOW.replace("-> tensor<2x3xf32>", "-> tensor<3x2xf32>"),
        "wrong-element-type": GOOD_GLOW.replace("-> tensor<2x3xf32>", "-> tensor<2x3xi32>"),
        "redefined-value": GOOD_GLOW.replace("%r =", "%x ="),
        "bad-attribute": GOOD_GLOW.replace('"x"', "42"),
        "missing-type": GOOD_GLOW.replace(" : tensor<2x3xf32>\n  %r", "\n  %r"),
        "negative-dim": GOOD_GLOW.replace("2x3", "-2x3"),
        "huge-dim": GOOD_GLOW.replace("2x3", "99999999999999999999999x3"),
        "dynamic-dim": GOOD_GLOW.replace("2x3", "?x3"),
        "non-utf8": b"glow.function @net {\n  \xff\xfe\n}\n",
        "two-functions": GOOD_GLOW + GOOD_GLOW,
        "function-without-save": GOOD_GLOW.replace('  glow.save %r as "y" : tensor<2x3xf32>\n', ""),
        "deep-nesting": "builtin.module {" * 2000 + "}" * 2000,
        "fc-bad-shapes": ELIDED_GLOW.replace("dense_resource<elided>", "dense<1.0>").replace(
            "tensor<3x4xf32>} : tensor<3x4xf32>", "tensor<5x4xf32>} : tensor<5x4xf32>"),
    }
    cases = []
    for slug, source in bad_sources.items():
        expect = "error"
        note = ""
        if slug in ("two-functions", "function-without-save"):
            expect, note = "either", "printing such IR back is fine; a verifier refusal too"
        if slug == "deep-nesting":
            note = "2,000 nested modules: a clean error (or success), never a RecursionError"
            expect = "either"
        cases.append(opt(f"glow-opt/source-{slug}", source, expect=expect, note=note,
                         contains=["input.mlir"] if expect == "error" else ()))
    for slug, source in {"type-mismatch": bad_sources["type-mismatch"],
                         "undefined-value": bad_sources["undefined-value"],
                         "fc-bad-shapes": bad_sources["fc-bad-shapes"]}.items():
        cases.append(opt(f"glow-opt/lowered-{slug}", source, "-p", "lower-glow-to-glowll,glowll-allocate-memory",
                         contains=["input.mlir"]))
    passes = ["glow-constant-fold", "glow-fold-batchnorm", "glow-fuse-activations",
              "glow-convert-to-nhwc{library=cmsis-nn}", "glow-schedule-for-memory", "lower-glow-to-glowll",
              "glowll-share-buffers", "glowll-liveness"]
    for name in passes:
        cases.append(opt(f"glow-opt/pass-{name}-on-valid", GOOD_GLOW, "-p", name, expect="success"))
    cases += [
        opt("glow-opt/missing-file", None, contains=["input.mlir"]),
        opt("glow-opt/directory", None, contains=["input.mlir"], extra_files=[("input.mlir/x", "")]),
        opt("glow-opt/unknown-pass", GOOD_GLOW, "-p", "glow-frobnicate", contains=["glow-frobnicate"]),
        opt("glow-opt/empty-pass-name", GOOD_GLOW, "-p", ",", contains=["-p"]),
        opt("glow-opt/pass-bad-argument", GOOD_GLOW, "-p", "glow-fold-batchnorm{frob=1}", contains=["frob"]),
        opt("glow-opt/pass-unterminated-argument", GOOD_GLOW, "-p", "glow-fold-batchnorm{",
            contains=["glow-fold-batchnorm"]),
        opt("glow-opt/quantize-missing-profile", GOOD_GLOW, "-p", "glow-quantize{profile=\"{work}/missing.yaml\"}",
            contains=["missing.yaml"]),
        opt("glow-opt/quantize-garbage-profile", GOOD_GLOW, "-p", "glow-quantize{profile=\"{work}/p.yaml\"}",
            contains=["p.yaml"], extra_files=[("p.yaml", "::: [")]),
        opt("glow-opt/quantize-no-profile", GOOD_GLOW, "-p", "glow-quantize", contains=["profile"]),
        opt("glow-opt/allocate-bad-argument-type", GOOD_GLOW, "-p",
            "lower-glow-to-glowll,glowll-allocate-memory{reuse=maybe}", contains=["maybe"]),
        opt("glow-opt/llvm-target-on-glow", GOOD_GLOW, "-t", "llvm", contains=["llvm"]),
        opt("glow-opt/unknown-target", GOOD_GLOW, "-t", "frobnicate", contains=["frobnicate"]),
        opt("glow-opt/lower-to-llvm-on-glow", GOOD_GLOW, "-p", "lower-glowll-to-llvm", expect="either",
            note="nothing to lower at the glow level: a no-op or a clean refusal"),
        opt("glow-opt/unwritable-output", GOOD_GLOW, "-o", "/proc/glowmlir-campaign.mlir",
            contains=["glowmlir-campaign"]),
        opt("glow-opt/output-is-directory", GOOD_GLOW, "-o", "{work}", contains=[]),
        opt("glow-opt/weights-file-garbage", GOOD_GLOW, "--weights-file={work}/w.npz", contains=["w.npz"],
            extra_files=[("w.npz", b"not a zip file")]),
        opt("glow-opt/weights-file-directory", GOOD_GLOW, "--weights-file={work}/wdir", contains=["wdir"],
            extra_files=[("wdir/x", "")]),
        opt("glow-opt/weights-file-wrong-shape", ELIDED_GLOW, "--weights-file={work}/w.npz", contains=["w"],
            extra_files=[("w.npz", _npz({"w": np.ones((2, 2), np.float32)}))]),
        opt("glow-opt/elided-without-weights", ELIDED_GLOW, "-p", "glow-constant-fold", contains=["elided"]),
        opt("glow-opt/weights-file-unwritable", GOOD_GLOW, "--weights-file=/proc/glowmlir-w.npz",
            contains=["glowmlir-w.npz"]),
        opt("glow-opt/onnx-missing", None, file_name="model.onnx", contains=["model.onnx"]),
        opt("glow-opt/onnx-garbage", "not onnx", file_name="model.onnx", contains=["model.onnx"]),
        opt("glow-opt/onnx-empty", "", file_name="model.onnx", contains=["model.onnx"]),
        opt("glow-opt/onnx-unknown-op", m.graph_model([_node("FooBar", ["x"], ["y"])], _x(), ["y"]).SerializeToString(),
            file_name="model.onnx", contains=["FooBar"]),
        opt("glow-opt/onnx-bad-model-input", m.unary_model().SerializeToString(), "--model-input=x,float,[-1]",
            file_name="model.onnx", contains=["model-input"]),
        opt("glow-opt/onnx-bad-define-symbol", m.unary_model().SerializeToString(), "--onnx-define-symbol=N,-3",
            file_name="model.onnx", contains=["N"]),
        opt("glow-opt/tflite-garbage", "garbage", file_name="model.tflite", contains=["model.tflite"]),
        opt("glow-opt/unknown-extension", GOOD_GLOW, file_name="input.xyz", contains=["xyz"]),
        opt("glow-opt/unknown-option", GOOD_GLOW, "--frobnicate", contains=["frobnicate"]),
        opt("glow-opt/onnx-valid", m.unary_model().SerializeToString(), file_name="model.onnx", expect="success"),
        opt("glow-opt/full-lowering-valid", GOOD_GLOW,
            "-p", "lower-glow-to-glowll,glowll-allocate-memory,lower-glowll-to-llvm", "-t", "llvm", expect="success"),
        opt("glow-opt/valid-weights-roundtrip", ELIDED_GLOW.replace("dense_resource<elided>", "dense<1.0>"),
            "--weights-file={work}/w.npz", expect="success"),
    ]
    return cases


def _npz(arrays: dict) -> bytes:
    import io

    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


# ============================================================================= glow-profile


def profile_case(name: str, files: dict, *arguments: str, expect="error", contains=(), outputs=("profile.yaml",),
                 model=None, note="") -> Case:
    """`glow-profile -model=<relu [1,4]> -dump-profile=<work>/profile.yaml <arguments>`."""
    def setup(work: Work) -> list[str]:
        for file_name, data in files.items():
            if data is None:
                os.makedirs(work.path(file_name), exist_ok=True)
            else:
                work.write(file_name, data)
        path = (model or RELU)(work)
        dump = [a for a in arguments if a.startswith("-dump-profile")]
        return [f"-model={path}", *([] if dump else [f"-dump-profile={work.path('profile.yaml')}"]),
                *formatted([a for a in arguments], work)]
    return Case(name, "glow-profile", setup, expect, tuple(contains), outputs=tuple(outputs), note=note)


def _png(work_file="img.png", size=(8, 8), mode="RGB"):
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new(mode, size).save(buffer, format="PNG")
    return buffer.getvalue()


def profile_cases() -> list[Case]:
    P = profile_case
    good = _npz({"x": np.random.default_rng(0).standard_normal((3, 1, 4)).astype(np.float32)})
    npz_x = {"data.npz": good}
    conv_model = lambda w: w.onnx(m.conv_model((1, 3, 8, 8), (4, 3, 3, 3)))  # noqa: E731
    cases = [
        P("glow-profile/no-inputs", {}, contains=["calibration"]),
        P("glow-profile/missing-model", npz_x, "{work}/data.npz", model=lambda w: w.path("missing.onnx"),
          contains=["missing.onnx"]),
        P("glow-profile/garbage-model", npz_x, "{work}/data.npz", model=model_from(lambda: b"junk"),
          contains=["model.onnx"]),
        P("glow-profile/garbage-npz", {"data.npz": b"not a zip"}, "{work}/data.npz", contains=["data.npz"]),
        P("glow-profile/empty-npz", {"data.npz": b""}, "{work}/data.npz", contains=["data.npz"]),
        P("glow-profile/npz-no-arrays", {"data.npz": _npz({})}, "{work}/data.npz", contains=["data.npz"]),
        P("glow-profile/npz-wrong-key", {"data.npz": _npz({"nosuch": np.zeros((1, 4), np.float32)})}, "{work}/data.npz",
          contains=["nosuch"]),
        P("glow-profile/npz-wrong-shape", {"data.npz": _npz({"x": np.zeros((2, 5), np.float32)})}, "{work}/data.npz",
          contains=["x"]),
        P("glow-profile/npz-strings", {"data.npz": _npz({"x": np.array([["a", "b", "c", "d"]])})}, "{work}/data.npz",
          contains=["x"]),
        P("glow-profile/npz-object-array", {"data.npz": _npz({"x": np.array([{"a": 1}], dtype=object)})},
          "{work}/data.npz", contains=["data.npz"]),
        P("glow-profile/npz-nan-values", {"data.npz": _npz({"x": np.full((1, 4), np.nan, np.float32)})},
          "{work}/data.npz", contains=["x"], note="a NaN calibration input gives a NaN range: refuse it"),
        P("glow-profile/npz-inf-values", {"data.npz": _npz({"x": np.full((1, 4), np.inf, np.float32)})},
          "{work}/data.npz", contains=["x"]),
        P("glow-profile/npz-empty-batch", {"data.npz": _npz({"x": np.zeros((0, 1, 4), np.float32)})}, "{work}/data.npz",
          contains=["x"]),
        P("glow-profile/npy-garbage", {"data.npy": b"\x93NUMPY garbage"}, "{work}/data.npy", contains=["data.npy"]),
        P("glow-profile/npy-missing", {}, "{work}/missing.npy", contains=["missing.npy"]),
        P("glow-profile/npy-named-unknown-input", {"data.npy": _npy(np.zeros((1, 4), np.float32))},
          "nosuch={work}/data.npy", contains=["nosuch"]),
        P("glow-profile/image-garbage", {"img.png": b"not a png"}, "{work}/img.png", model=conv_model,
          contains=["img.png"]),
        P("glow-profile/image-empty-dir", {"imgs": None}, "{work}/imgs", model=conv_model, contains=["imgs"]),
        P("glow-profile/image-wrong-size", {"img.png": _png(size=(5, 7))}, "{work}/img.png", model=conv_model,
          expect="either", note="image-classifier resizes? Glow refuses a size mismatch: either is fine"),
        P("glow-profile/image-into-rank2-model", {"img.png": _png()}, "{work}/img.png", contains=["img.png", "[1,4]"]),
        P("glow-profile/histogram-bins-zero", npz_x, "{work}/data.npz", "-num-histogram-bins=0",
          contains=["num-histogram-bins"]),
        P("glow-profile/histogram-bins-negative", npz_x, "{work}/data.npz", "-num-histogram-bins=-5",
          contains=["num-histogram-bins"]),
        P("glow-profile/histogram-bins-1e9", npz_x, "{work}/data.npz", "-num-histogram-bins=1000000000",
          contains=["num-histogram-bins"], note="8 GB of histograms per value: refuse rather than exhaust memory"),
        P("glow-profile/histogram-bins-float", npz_x, "{work}/data.npz", "-num-histogram-bins=1e9",
          contains=["num-histogram-bins"]),
        P("glow-profile/histogram-bins-empty", npz_x, "{work}/data.npz", "-num-histogram-bins=",
          contains=["num-histogram-bins"]),
        P("glow-profile/image-mode-garbage", {"img.png": _png()}, "{work}/img.png", "-image-mode=0to7",
          model=conv_model, contains=["image-mode"]),
        P("glow-profile/image-layout-garbage", {"img.png": _png()}, "{work}/img.png", "-image-layout=NCWH",
          model=conv_model, contains=["image-layout"]),
        P("glow-profile/channel-order-garbage", {"img.png": _png()}, "{work}/img.png", "-image-channel-order=GBR",
          model=conv_model, contains=["image-channel-order"]),
        P("glow-profile/mean-garbage", {"img.png": _png()}, "{work}/img.png", "-mean=a,b,c", model=conv_model,
          contains=["mean"]),
        P("glow-profile/mean-wrong-count", {"img.png": _png()}, "{work}/img.png", "-mean=1,2", model=conv_model,
          contains=["mean"]),
        P("glow-profile/stddev-zero", {"img.png": _png()}, "{work}/img.png", "-stddev=0,0,0", model=conv_model,
          contains=["stddev"]),
        P("glow-profile/stddev-negative", {"img.png": _png()}, "{work}/img.png", "-stddev=-1,1,1", model=conv_model,
          contains=["stddev"]),
        P("glow-profile/model-input-bad", npz_x, "{work}/data.npz", "-model-input=x,float,[0]",
          contains=["model-input"]),
        P("glow-profile/define-symbol-bad", npz_x, "{work}/data.npz", "-onnx-define-symbol=N,-1", contains=["N"]),
        P("glow-profile/dump-profile-unwritable", npz_x, "{work}/data.npz", "-dump-profile=/proc/glowmlir.yaml",
          contains=["glowmlir.yaml"], outputs=()),
        P("glow-profile/dump-profile-directory", npz_x, "{work}/data.npz", "-dump-profile={work}", contains=[]),
        P("glow-profile/dump-profile-empty", npz_x, "{work}/data.npz", "-dump-profile=", contains=["dump-profile"]),
        P("glow-profile/dump-profile-missing-dir", npz_x, "{work}/data.npz", "-dump-profile={work}/no/p.yaml",
          contains=["p.yaml"], outputs=("no",)),
        P("glow-profile/unsupported-op-model", npz_x, "{work}/data.npz",
          model=model_from(lambda: m.graph_model([_node("FooBar", ["x"], ["y"])], _x(), ["y"])), contains=["FooBar"]),
        P("glow-profile/valid-npz", npz_x, "{work}/data.npz", expect="success"),
        P("glow-profile/valid-image", {"img.png": _png()}, "{work}/img.png", "-image-mode=0to1", model=conv_model,
          expect="success"),
        P("glow-profile/valid-rawbin-dataset", {"ds/a.bin": np.zeros((1, 4), np.float32).tobytes()},
          "-input-dataset=x,rawbin,dir,{work}/ds", expect="success"),
    ]
    datasets = {
        "empty": "", "name-only": "x", "no-source": "x,rawbin", "bad-format": "x,bogus,dir,{work}/ds",
        "bad-source": "x,rawbin,cloud,{work}/ds", "missing-dir": "x,rawbin,dir,{work}/nope",
        "missing-list": "x,rawbin,file,{work}/nope.txt", "empty-option": "x,rawbin,dir,,",
        "too-many-options": "x,rawbin,dir,{work}/ds,{work}/ds", "unknown-input": "nosuch,rawbin,dir,{work}/ds",
        "rawbin-wrong-size": "x,rawbin,dir,{work}/short", "rawtxt-garbage": "x,rawtxt,dir,{work}/txt",
        "list-names-missing-files": "x,rawbin,file,{work}/list.txt",
        "empty-dir": "x,rawbin,dir,{work}/emptyds",
    }
    files = {"ds/a.bin": np.zeros((1, 4), np.float32).tobytes(), "short/a.bin": b"\0" * 7,
             "txt/a.txt": "one two three four", "list.txt": "gone1.bin\ngone2.bin\n", "emptyds": None}
    for slug, spec in datasets.items():
        fragment = "nosuch" if slug == "unknown-input" else "input-dataset"
        cases.append(P(f"glow-profile/dataset-{slug}", files, f"-input-dataset={spec}", contains=[fragment]))
    return cases


def _npy(array) -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


# ============================================================================= Python API


def _api():
    import glowmlir

    return glowmlir


def api_case(name: str, call, expect: str = "error", contains=(), setup=None, verify=None, verify_options=None,
             note="") -> Case:
    """`call(work)` in a child process; `setup` writes the files (default: model.onnx, the conv net)."""
    def prepare(work: Work) -> list[str]:
        (setup or CONVNET)(work)
        return []
    return Case(name, "api", prepare, expect, tuple(contains), call=call, verify=verify,
                verify_options=verify_options or {}, note=note)


def _model(work: Work) -> str:
    return work.path("model.onnx")


def _compile(**options):
    return lambda w: _api().compile(_model(w), **options)


def _run_with(inputs):
    def call(work: Work):
        bundle = _api().compile(_model(work))
        return bundle.run(inputs(work) if callable(inputs) else inputs)
    return call


def api_cases() -> list[Case]:
    import pathlib

    A = api_case
    good = np.zeros((1, 3, 32, 32), np.float32)
    cases = [
        A("api/compile-none", lambda w: _api().compile(None), contains=["model"]),
        A("api/compile-int", lambda w: _api().compile(123), contains=["model"]),
        A("api/compile-bytes-content", lambda w: _api().compile(open(_model(w), "rb").read()), contains=["model"]),
        A("api/compile-empty-string", lambda w: _api().compile(""), contains=["model"]),
        A("api/compile-empty-list", lambda w: _api().compile([]), contains=["model"]),
        A("api/compile-three-paths", lambda w: _api().compile([_model(w)] * 3), contains=["model"]),
        A("api/compile-list-of-none", lambda w: _api().compile([None]), contains=["model"]),
        A("api/compile-dict", lambda w: _api().compile({"model": _model(w)}), contains=["model"]),
        A("api/compile-missing-file", lambda w: _api().compile(w.path("missing.onnx")), contains=["missing.onnx"]),
        A("api/compile-directory", lambda w: _api().compile(w.dir), contains=[]),
        A("api/compile-path", lambda w: _api().compile(pathlib.Path(_model(w))), expect="success", verify="onnxruntime",
          note="os.PathLike is accepted"),
        A("api/compile-pure-path-list", lambda w: _api().compile([pathlib.Path(_model(w))]), expect="success",
          verify="onnxruntime"),
        A("api/unknown-keyword", _compile(frobnicate=1), contains=["frobnicate"]),
        A("api/misspelled-keyword", _compile(networkname="x"), contains=["networkname"]),
        A("api/network-name-int", _compile(network_name=1), contains=["network_name"]),
        A("api/network-name-empty", _compile(network_name=""), contains=["network"]),
        A("api/network-name-bytes", _compile(network_name=b"net"), contains=["network_name"]),
        A("api/target-string", _compile(target="thumbv7em-none-eabihf"), expect="success",
          note="a triple (or a -mcpu preset) as a string is a target, as in test_api_arguments"),
        A("api/target-none", _compile(target=None), contains=["target"]),
        A("api/model-inputs-string", _compile(model_inputs="data,float,[1,3,32,32]"), contains=["model_inputs"]),
        A("api/model-inputs-tuple-of-str", _compile(model_inputs=[("data", "float", [1, 3, 32, 32])]),
          contains=["model_inputs"]),
        A("api/model-inputs-none", _compile(model_inputs=None), expect="either",
          note="None for 'no inputs overridden': accepted or a clean refusal"),
        A("api/symbols-negative", _compile(symbols={"N": -3}), contains=["N"]),
        A("api/symbols-zero", _compile(symbols={"N": 0}), contains=["N"]),
        A("api/symbols-string-value", _compile(symbols={"N": "x"}), contains=["N"]),
        A("api/symbols-float-value", _compile(symbols={"N": 4.0}), contains=["N"]),
        A("api/symbols-bool-value", _compile(symbols={"N": True}), contains=["N"]),
        A("api/symbols-int-key", _compile(symbols={1: 4}), contains=["symbol"]),
        A("api/symbols-string", _compile(symbols="N=4"), contains=["symbols"]),
        A("api/symbols-list", _compile(symbols=[("N", 4)]), contains=["symbols"]),
        A("api/bundle-api-garbage", _compile(bundle_api="shared"), contains=["bundle"]),
        A("api/bundle-api-none", _compile(bundle_api=None), contains=["bundle"]),
        A("api/reuse-activations-string", _compile(reuse_activations="no"), contains=["reuse_activations"]),
        A("api/memory-fusion-int", _compile(memory_fusion=2), contains=["memory_fusion"]),
        A("api/kernel-library-garbage", _compile(kernel_library="mkl"), contains=["kernel_library"]),
        A("api/kernel-library-float-model", _compile(kernel_library="cmsis-nn"), contains=["cmsis"]),
        A("api/quantization-string", _compile(quantization="int8"), contains=["quantization"]),
        A("api/positional-options", lambda w: _api().compile(_model(w), "net"), contains=[]),
        A("api/run-unknown-input", _run_with({"nosuch": good}), contains=["nosuch"]),
        A("api/run-wrong-size", _run_with({"data": np.zeros((1, 3, 8, 8), np.float32)}), contains=["data"]),
        A("api/run-wrong-rank-same-size", _run_with({"data": np.zeros(3 * 32 * 32, np.float32)}), expect="either",
          note="the same element count in another shape: accepted (numpy-style) or refused"),
        A("api/run-strings", _run_with({"data": np.full((1, 3, 32, 32), "a")}), contains=["data"]),
        A("api/run-none-value", _run_with({"data": None}), contains=["data"]),
        A("api/run-not-a-dict", _run_with([good]), contains=[]),
        A("api/run-output-name-as-input", _run_with({"prob": np.zeros((1, 10), np.float32)}), contains=["prob"]),
        A("api/run-non-host-bundle", lambda w: _api().compile(_model(w), target=_cortex_m7()).run({"data": good}),
          contains=["host"]),
        A("api/save-unwritable", lambda w: _api().compile(_model(w)).save("/proc/glowmlir-api"),
          contains=["glowmlir-api"]),
        A("api/save-onto-file", lambda w: _api().compile(_model(w)).save(_model(w)), contains=["model.onnx"]),
        A("api/save-none", lambda w: _api().compile(_model(w)).save(None), contains=[]),
        A("api/compile-options-object", lambda w: _api().compile(_model(w), options=_api().CompileOptions()),
          contains=["options"]),
        A("api/valid-plain", _compile(), expect="success", verify="onnxruntime"),
        A("api/valid-symbols", lambda w: _api().compile(_model(w), symbols={"N": 2}), setup=_symbolic_relu,
          expect="success", verify="onnxruntime", verify_options={"symbols": {"N": 2}}),
    ]
    return cases


def _cortex_m7():
    from glowmlir.targets import resolve_target

    return resolve_target(mcpu="cortex-m7")


def all_cases() -> list[Case]:
    cases = [*file_cases(), *graph_cases(), *shape_cases(), *option_cases(), *opt_cases(), *profile_cases(),
             *api_cases()]
    names = [case.name for case in cases]
    duplicates = {name for name in names if names.count(name) > 1}
    assert not duplicates, f"duplicate case names: {sorted(duplicates)}"
    return cases
