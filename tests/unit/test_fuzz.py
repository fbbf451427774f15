"""Fuzzing (issue 12): hypothesis draws small ONNX graphs from the ops, shapes and
attributes the importer supports, and damages model bytes.

Properties: a graph compiles to a bundle whose outputs match onnxruntime's, or gives a
one-line `GlowError`; a graph onnxruntime refuses is never compiled. Damaged model bytes
compile or give a one-line `GlowError`; nothing else escapes.

The examples are derandomized so that CI is repeatable; `GLOWMLIR_FUZZ_EXAMPLES=500
GLOWMLIR_FUZZ_RANDOM=1 pytest tests/unit/test_fuzz.py` explores further.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import onnx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

import glowmlir
from glowmlir.errors import GlowError
from tests.support.models import onnxruntime_outputs

EXAMPLES = int(os.environ.get("GLOWMLIR_FUZZ_EXAMPLES", "30"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=not os.environ.get("GLOWMLIR_FUZZ_RANDOM"),
                database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@dataclass
class GraphBuilder:
    """A chain of nodes from the input "x"; `shape` is the current tensor's (ONNX's rules)."""

    shape: list[int]
    nodes: list = field(default_factory=list)
    constants: dict = field(default_factory=dict)
    current: str = "x"

    def constant(self, array) -> str:
        name = f"c{len(self.constants)}"
        self.constants[name] = (np.asarray(array, np.float32) if np.asarray(array).dtype.kind == "f"
                                else np.asarray(array))
        return name

    def add(self, op_type: str, extra_inputs=(), shape=None, **attributes) -> None:
        output = f"t{len(self.nodes)}"
        self.nodes.append(helper.make_node(op_type, [self.current, *extra_inputs], [output],
                                           name=f"{op_type.lower()}{len(self.nodes)}", **attributes))
        self.current = output
        if shape is not None:
            self.shape = list(shape)

    def model(self) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, "fuzz", [helper.make_tensor_value_info("x", TensorProto.FLOAT, self.initial_shape)],
            [helper.make_tensor_value_info(self.current, TensorProto.FLOAT, None)],
            [numpy_helper.from_array(v, k) for k, v in self.constants.items()])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


UNARY = ["Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Softsign", "HardSwish", "Softplus", "Mish", "Selu"]
PARAMETRIC = {"LeakyRelu": ("alpha",), "Elu": ("alpha",), "Celu": ("alpha",), "HardSigmoid": ("alpha", "beta")}
BINARY = ["Add", "Sub", "Mul", "Div", "Max", "Min", "PRelu"]


def unary(draw, g: GraphBuilder) -> None:
    g.add(draw(st.sampled_from(UNARY)))


def parametric(draw, g: GraphBuilder) -> None:
    op_type = draw(st.sampled_from(sorted(PARAMETRIC)))
    g.add(op_type, **{a: draw(st.floats(0.05, 1.5)) for a in PARAMETRIC[op_type]})


def clip(draw, g: GraphBuilder) -> None:
    low = draw(st.floats(-2, 0.5))
    g.add("Clip", [g.constant(low), g.constant(low + draw(st.floats(0, 3)))])


def binary(draw, g: GraphBuilder) -> None:
    """With a constant whose shape broadcasts against the tensor (a suffix, some dims 1)."""
    rank = draw(st.integers(0, len(g.shape)))
    shape = [d if draw(st.booleans()) else 1 for d in g.shape[len(g.shape) - rank:]]
    op_type = draw(st.sampled_from(BINARY))
    rng = np.random.default_rng(draw(st.integers(0, 1000)))
    value = rng.uniform(0.5, 2.0, shape) * rng.choice([-1, 1], shape) if op_type == "Div" else rng.normal(size=shape)
    g.add(op_type, [g.constant(np.asarray(value, np.float32))])


def _window(draw, g: GraphBuilder, max_kernel: int = 3):
    kernel = [draw(st.integers(1, max_kernel)) for _ in range(2)]
    strides = [draw(st.integers(1, 2)) for _ in range(2)]
    pads = [draw(st.integers(0, k - 1)) for k in kernel * 2]
    return kernel, strides, pads


def _spatial(size: int, kernel: int, stride: int, begin: int, end: int, dilation: int = 1, ceil: bool = False) -> int:
    span = size + begin + end - dilation * (kernel - 1) - 1
    return (-(-span // stride) if ceil else span // stride) + 1


def conv(draw, g: GraphBuilder) -> None:
    n, c, h, w = g.shape
    depthwise = draw(st.booleans())
    group = c if depthwise else 1
    out = c * draw(st.integers(1, 2)) if depthwise else draw(st.integers(1, 4))
    kernel, strides, pads = _window(draw, g)
    dilations = [draw(st.integers(1, 2)) for _ in range(2)]
    rng = np.random.default_rng(draw(st.integers(0, 1000)))
    inputs = [g.constant(rng.normal(size=(out, c // group, *kernel)).astype(np.float32))]
    if draw(st.booleans()):
        inputs.append(g.constant(rng.normal(size=out).astype(np.float32)))
    shape = [n, out, *(_spatial(s, k, st_, pads[i], pads[i + 2], d)
                       for i, (s, k, st_, d) in enumerate(zip((h, w), kernel, strides, dilations)))]
    g.add("Conv", inputs, shape, kernel_shape=kernel, strides=strides, pads=pads, dilations=dilations, group=group)


def pool(draw, g: GraphBuilder) -> None:
    n, c, h, w = g.shape
    op_type = draw(st.sampled_from(["MaxPool", "AveragePool"]))
    kernel, strides, pads = _window(draw, g)
    ceil = draw(st.booleans())
    extra = {"count_include_pad": int(draw(st.booleans()))} if op_type == "AveragePool" else {}
    shape = [n, c, *(_spatial(s, k, st_, pads[i], pads[i + 2], ceil=ceil)
                     for i, (s, k, st_) in enumerate(zip((h, w), kernel, strides)))]
    g.add(op_type, (), shape, kernel_shape=kernel, strides=strides, pads=pads, ceil_mode=int(ceil), **extra)


def global_pool(draw, g: GraphBuilder) -> None:
    g.add(draw(st.sampled_from(["GlobalAveragePool", "GlobalMaxPool"])), (), g.shape[:2] + [1, 1])


def batch_norm(draw, g: GraphBuilder) -> None:
    rng = np.random.default_rng(draw(st.integers(0, 1000)))
    c = g.shape[1]
    parameters = [rng.uniform(0.5, 1.5, c), rng.normal(size=c), rng.normal(size=c), rng.uniform(0.5, 1.5, c)]
    g.add("BatchNormalization", [g.constant(p.astype(np.float32)) for p in parameters],
          epsilon=draw(st.floats(1e-5, 1e-2)))


def lrn(draw, g: GraphBuilder) -> None:
    g.add("LRN", size=draw(st.sampled_from([1, 3, 5])), alpha=draw(st.floats(1e-4, 1e-2)),
          beta=draw(st.floats(0.5, 0.9)), bias=draw(st.floats(1.0, 2.0)))


def softmax(draw, g: GraphBuilder) -> None:
    g.add(draw(st.sampled_from(["Softmax", "LogSoftmax"])), axis=draw(st.integers(-len(g.shape), len(g.shape) - 1)))


def transpose(draw, g: GraphBuilder) -> None:
    perm = draw(st.permutations(range(len(g.shape))))
    g.add("Transpose", (), [g.shape[p] for p in perm], perm=list(perm))


def concat(draw, g: GraphBuilder) -> None:
    axis = draw(st.integers(0, len(g.shape) - 1))
    other = list(g.shape)
    other[axis] = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 1000)))
    shape = list(g.shape)
    shape[axis] += other[axis]
    g.add("Concat", [g.constant(rng.normal(size=other).astype(np.float32))], shape, axis=axis)


def pad(draw, g: GraphBuilder) -> None:
    mode = draw(st.sampled_from(["constant", "reflect", "edge"]))
    pads = [0, 0, *(draw(st.integers(0, 2)) for _ in range(2)), 0, 0, *(draw(st.integers(0, 2)) for _ in range(2))]
    shape = [d + pads[i] + pads[i + 4] for i, d in enumerate(g.shape)]
    g.add("Pad", [g.constant(np.array(pads, np.int64))], shape, mode=mode)


def reduce(draw, g: GraphBuilder) -> None:
    axes = sorted(draw(st.sets(st.integers(0, len(g.shape) - 1), min_size=1)))
    keep = draw(st.booleans())
    shape = [1 if i in axes else d for i, d in enumerate(g.shape)] if keep else \
        [d for i, d in enumerate(g.shape) if i not in axes]
    op_type = draw(st.sampled_from(["ReduceMean", "ReduceMax", "ReduceSum", "ReduceMin"]))
    if op_type == "ReduceSum":  # its axes are an input since opset 13
        g.add(op_type, [g.constant(np.array(axes, np.int64))], shape, keepdims=int(keep))
    else:
        g.add(op_type, (), shape, axes=axes, keepdims=int(keep))


def slice_(draw, g: GraphBuilder) -> None:
    axis = draw(st.integers(0, len(g.shape) - 1))
    size = g.shape[axis]
    start = draw(st.integers(0, max(size - 1, 0)))
    end = draw(st.integers(start + 1, size + 1))
    step = draw(st.integers(1, 2))
    shape = list(g.shape)
    shape[axis] = len(range(start, min(end, size), step))
    g.add("Slice", [g.constant(np.array(v, np.int64)) for v in ([start], [end], [axis], [step])], shape)


def classifier(draw, g: GraphBuilder) -> None:
    """Flatten, then Gemm (optionally with a transposed filter)."""
    g.add("Flatten", (), [g.shape[0], int(np.prod(g.shape[1:]))], axis=1)
    units = draw(st.integers(1, 6))
    trans_b = draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 1000)))
    weight = rng.normal(size=(units, g.shape[1]) if trans_b else (g.shape[1], units)).astype(np.float32)
    g.add("Gemm", [g.constant(weight), g.constant(rng.normal(size=units).astype(np.float32))], [g.shape[0], units],
          transB=int(trans_b), alpha=draw(st.floats(0.5, 2.0)))


def matmul(draw, g: GraphBuilder) -> None:
    units = draw(st.integers(1, 5))
    rng = np.random.default_rng(draw(st.integers(0, 1000)))
    g.add("MatMul", [g.constant(rng.normal(size=(g.shape[-1], units)).astype(np.float32))], g.shape[:-1] + [units])


def gather(draw, g: GraphBuilder) -> None:
    axis = draw(st.integers(0, len(g.shape) - 1))
    size = g.shape[axis]
    indices = draw(st.lists(st.integers(-size, size - 1), min_size=1, max_size=4))
    shape = g.shape[:axis] + [len(indices)] + g.shape[axis + 1:]
    g.add("Gather", [g.constant(np.array(indices, np.int64))], shape, axis=axis)


def reshape(draw, g: GraphBuilder) -> None:
    """To (first dim, -1), or with a unit axis inserted."""
    if draw(st.booleans()) and len(g.shape) >= 2:
        shape = [g.shape[0], int(np.prod(g.shape[1:]))]
        g.add("Reshape", [g.constant(np.array([g.shape[0], -1], np.int64))], shape)
    else:
        axis = draw(st.integers(0, len(g.shape)))
        g.add("Unsqueeze", [g.constant(np.array([axis], np.int64))], g.shape[:axis] + [1] + g.shape[axis:])


def resize(draw, g: GraphBuilder) -> None:
    scale = draw(st.sampled_from([1, 2, 3]))
    g.add("Resize", ["", g.constant(np.array([1, 1, scale, scale], np.float32))],
          g.shape[:2] + [d * scale for d in g.shape[2:]], mode="nearest")


def layer_norm(draw, g: GraphBuilder) -> None:
    rng = np.random.default_rng(draw(st.integers(0, 1000)))
    g.add("LayerNormalization", [g.constant(rng.uniform(0.5, 1.5, g.shape[-1]).astype(np.float32)),
                                 g.constant(rng.normal(size=g.shape[-1]).astype(np.float32))], axis=-1)


SCALAR = [unary, parametric, clip, binary]
ANY_RANK = [*SCALAR, softmax, transpose, reduce, slice_, concat, matmul, gather, reshape, layer_norm]
RANK_4 = [conv, conv, pool, global_pool, batch_norm, lrn, pad, classifier, resize]


@st.composite
def graphs(draw) -> GraphBuilder:
    shape = [1, draw(st.integers(1, 4)), draw(st.integers(1, 9)), draw(st.integers(1, 9))]
    g = GraphBuilder(list(shape))
    g.initial_shape = shape
    for _ in range(draw(st.integers(1, 5))):
        layers = SCALAR if not g.shape else ANY_RANK + (RANK_4 if len(g.shape) == 4 else [])
        draw(st.sampled_from(layers))(draw, g)
        if not all(d > 0 for d in g.shape):  # a shape the ONNX rules call invalid: both must refuse it
            break
    return g


def compile_or_error(path: str):
    """The bundle, or the GlowError's one-line message."""
    try:
        return glowmlir.compile(path)
    except GlowError as error:
        assert "\n" not in str(error)
        return str(error)


OUTCOMES: Counter = Counter()


def test_random_graphs_match_onnxruntime_or_are_refused(tmp_path_factory):
    """The property is only as strong as the share of graphs that reach a bundle: at least
    half of them must compile (and match); the rest exercise the refusals."""
    OUTCOMES.clear()
    check_random_graph(tmp_path_factory)
    print(dict(OUTCOMES))
    assert OUTCOMES["compiled and matched"] >= EXAMPLES // 2, dict(OUTCOMES)


@FUZZ
@given(g=graphs(), seed=st.integers(0, 2**16))
def check_random_graph(tmp_path_factory, g, seed):
    model = g.model()
    path = str(tmp_path_factory.mktemp("fuzz") / "model.onnx")
    onnx.save(model, path)
    x = np.random.default_rng(seed).normal(size=g.initial_shape).astype(np.float32)
    try:
        expected = onnxruntime_outputs(model, {"x": x})
    except Exception as error:  # noqa: BLE001 - onnxruntime refuses it: so must we
        OUTCOMES["onnxruntime refuses"] += 1
        result = compile_or_error(path)
        assert isinstance(result, str), f"compiled a graph onnxruntime refuses ({str(error)[:200]})"
        return
    result = compile_or_error(path)
    if isinstance(result, str):
        OUTCOMES["refused: " + result.split(": ", 1)[-1][:120]] += 1
        return
    (value,) = expected.values()
    actual = result.run(x=x)[g.current].reshape(value.shape)
    scale = max(float(np.abs(value).max()) if value.size else 0.0, 1.0)
    np.testing.assert_allclose(actual, value, atol=2e-5 * scale, rtol=1e-4, err_msg=str(g.nodes))
    OUTCOMES["compiled and matched"] += 1


SMALL_MODEL = None


def small_model_bytes() -> bytes:
    global SMALL_MODEL
    if SMALL_MODEL is None:
        g = GraphBuilder([1, 2, 6, 6])
        g.initial_shape = [1, 2, 6, 6]
        rng = np.random.default_rng(0)
        g.add("Conv", [g.constant(rng.normal(size=(3, 2, 3, 3)).astype(np.float32))], [1, 3, 4, 4], kernel_shape=[3, 3])
        g.add("Relu")
        g.add("MaxPool", (), [1, 3, 2, 2], kernel_shape=[2, 2], strides=[2, 2])
        g.add("Flatten", (), [1, 12])
        g.add("Gemm", [g.constant(rng.normal(size=(12, 4)).astype(np.float32))], [1, 4])
        g.add("Softmax", axis=1)
        SMALL_MODEL = g.model().SerializeToString()
    return SMALL_MODEL


DAMAGED: Counter = Counter()


def test_damaged_model_bytes_compile_or_give_a_glow_error(tmp_path_factory):
    """A damaged model either gives a one-line GlowError or compiles; one that compiles and
    that onnxruntime also runs gives onnxruntime's outputs (NaN where it has NaN: flipped
    exponent bits make infinite weights). Enough of the damaged models must compile and be
    compared for the property to say something."""
    DAMAGED.clear()
    check_damaged_model(tmp_path_factory)
    print(dict(DAMAGED))
    assert DAMAGED["compiled, matched onnxruntime"] >= max(1, EXAMPLES // 10), dict(DAMAGED)  # 7 of 30 today


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 7)), min_size=1, max_size=4),
       truncate=st.one_of(st.none(), st.integers(0, 10**6)))
def check_damaged_model(tmp_path_factory, flips, truncate):
    data = bytearray(small_model_bytes())
    for position, bit in flips:
        data[position % len(data)] ^= 1 << bit
    if truncate is not None:
        data = data[:truncate % len(data)]
    path = str(tmp_path_factory.mktemp("damaged") / "model.onnx")
    with open(path, "wb") as f:
        f.write(bytes(data))
    result = compile_or_error(path)
    if isinstance(result, str):
        DAMAGED["refused"] += 1
        return
    import onnxruntime as ort

    try:
        session = ort.InferenceSession(bytes(data), providers=["CPUExecutionProvider"])
        feeds = {i.name: np.random.default_rng(0).normal(scale=0.1, size=i.shape).astype(np.float32)
                 for i in session.get_inputs()}  # small: the softmax does not saturate
        expected = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    except Exception:  # noqa: BLE001 - onnxruntime refuses what we compiled (e.g. an attribute we ignore)
        DAMAGED["compiled, onnxruntime refuses"] += 1
        return
    actual = result.run(feeds)
    for name, value in expected.items():
        finite = np.abs(value[np.isfinite(value)])
        scale = max(float(finite.max()) if finite.size else 0.0, 1.0)
        np.testing.assert_allclose(actual[name].reshape(value.shape), value, atol=2e-5 * scale, rtol=1e-4,
                                   equal_nan=True, err_msg=name)
    DAMAGED["compiled, matched onnxruntime"] += 1
