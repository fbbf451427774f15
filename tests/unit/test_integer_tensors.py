"""Integer and boolean tensors: ONNX Cast, comparisons, logical and bitwise ops, Where,
ArgMax/ArgMin, run-time Gather, integer arithmetic and data movement, each checked
element for element (and dtype) against onnxruntime on random data."""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T

import glowmlir
from glowmlir.errors import GlowError
from tests.support.models import onnxruntime_outputs
from tests.support.onnx_graphs import single_node_model

rng = np.random.default_rng(11)

DTYPES = {T.FLOAT: np.float32, T.BOOL: np.bool_, T.INT8: np.int8, T.INT16: np.int16, T.INT32: np.int32,
          T.INT64: np.int64, T.UINT8: np.uint8, T.UINT16: np.uint16, T.UINT32: np.uint32, T.UINT64: np.uint64}


def sample(shape, elem_type: int) -> np.ndarray:
    """Random data of an ONNX type: floats with a fractional part, integers over most of
    their range (so wrap-around and sign matter), booleans half true."""
    dtype = np.dtype(DTYPES[elem_type])
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "f":
        return (rng.standard_normal(shape) * 50).astype(dtype)
    info = np.iinfo(dtype)
    low, high = max(info.min, -1000), min(info.max, 1000)
    return rng.integers(low, high, shape, endpoint=True).astype(dtype)


def check_exact(tmp_path, op_type: str, inputs: dict[str, tuple[list[int], int]], opset: int = 13,
                feeds: dict[str, np.ndarray] | None = None, **attributes) -> None:
    model = single_node_model(op_type, {name: shape for name, (shape, _) in inputs.items()}, opset=opset,
                              input_types={name: elem for name, (_, elem) in inputs.items()}, **attributes)
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(model, path)
    feeds = feeds or {name: sample(shape, elem) for name, (shape, elem) in inputs.items()}
    expected = onnxruntime_outputs(model, feeds)["y"]
    actual = glowmlir.compile(path).run(feeds)["y"]
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("op_type", ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"])
@pytest.mark.parametrize("elem", [T.FLOAT, T.INT32, T.INT64, T.UINT8, T.UINT32])
def test_comparison(op_type, elem, tmp_path):
    shape = [3, 5]
    feeds = {"a": sample(shape, elem), "b": sample([5], elem)}
    feeds["b"][:2] = feeds["a"][0, :2]  # some equal pairs
    check_exact(tmp_path, op_type, {"a": (shape, elem), "b": ([5], elem)}, feeds=feeds)


@pytest.mark.parametrize("op_type,elem", [("And", T.BOOL), ("Or", T.BOOL), ("Xor", T.BOOL), ("BitwiseAnd", T.INT32),
                                          ("BitwiseOr", T.UINT8), ("BitwiseXor", T.INT64)])
def test_logical_and_bitwise(op_type, elem, tmp_path):
    check_exact(tmp_path, op_type, {"a": ([2, 3, 4], elem), "b": ([3, 1], elem)}, opset=18)


@pytest.mark.parametrize("op_type,elem", [("Not", T.BOOL), ("BitwiseNot", T.INT16), ("BitwiseNot", T.UINT8)])
def test_not(op_type, elem, tmp_path):
    check_exact(tmp_path, op_type, {"a": ([4, 6], elem)}, opset=18)


@pytest.mark.parametrize("elem", [T.FLOAT, T.INT64, T.UINT8])
def test_where_broadcasts_its_three_operands(elem, tmp_path):
    check_exact(tmp_path, "Where", {"c": ([2, 1, 4], T.BOOL), "a": ([3, 4], elem), "b": ([2, 3, 1], elem)})


@pytest.mark.parametrize("source", [T.FLOAT, T.INT8, T.INT32, T.INT64, T.UINT8, T.UINT16, T.BOOL])
@pytest.mark.parametrize("dest", [T.FLOAT, T.INT8, T.INT32, T.INT64, T.UINT8, T.UINT32, T.BOOL])
def test_cast(source, dest, tmp_path):
    feeds = {"x": sample([4, 5], source)}
    if source == T.FLOAT and dest not in (T.FLOAT, T.BOOL):  # in range: out-of-range casts are undefined
        info = np.iinfo(DTYPES[dest])
        feeds["x"] = np.clip(feeds["x"], max(info.min, -1e9), min(info.max, 1e9)).astype(np.float32)
    check_exact(tmp_path, "Cast", {"x": ([4, 5], source)}, feeds=feeds, to=dest)


@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div", "Max", "Min"])
@pytest.mark.parametrize("elem", [T.INT32, T.INT64, T.UINT8, T.INT8])
def test_integer_arithmetic(op_type, elem, tmp_path):
    """Wrap-around for the narrow types, C division (toward zero; unsigned for ui*)."""
    feeds = {"a": sample([3, 4], elem), "b": sample([4], elem)}
    if op_type == "Div":
        feeds["b"][feeds["b"] == 0] = 3
    check_exact(tmp_path, op_type, {"a": ([3, 4], elem), "b": ([4], elem)}, feeds=feeds, opset=14)


@pytest.mark.parametrize("op_type", ["Neg", "Abs", "Relu"])
def test_integer_unary(op_type, tmp_path):
    check_exact(tmp_path, op_type, {"x": ([5, 7], T.INT32)}, opset=14)


@pytest.mark.parametrize("op_type,attributes", [
    ("ArgMax", {}), ("ArgMax", {"axis": 1, "keepdims": 0}), ("ArgMin", {"axis": -1}),
    ("ArgMax", {"axis": 2, "select_last_index": 1}), ("ArgMin", {"axis": 0, "select_last_index": 1}),
])
@pytest.mark.parametrize("elem", [T.FLOAT, T.INT32, T.UINT8])
def test_arg_max_min(op_type, attributes, elem, tmp_path):
    feeds = {"x": (sample([3, 4, 5], elem) % 4).astype(DTYPES[elem])}  # many ties
    check_exact(tmp_path, op_type, {"x": ([3, 4, 5], elem)}, feeds=feeds, **attributes)


@pytest.mark.parametrize("axis,indices_shape", [(0, [2, 2]), (1, [3]), (2, [])])
@pytest.mark.parametrize("elem", [T.FLOAT, T.INT64, T.BOOL])
def test_gather_with_run_time_indices(axis, indices_shape, elem, tmp_path):
    data_shape = [4, 5, 6]
    size = data_shape[axis]
    feeds = {"data": sample(data_shape, elem),
             "indices": rng.integers(-size, size, indices_shape).astype(np.int64)}  # negative ones too
    check_exact(tmp_path, "Gather", {"data": (data_shape, elem), "indices": (indices_shape, T.INT64)}, feeds=feeds,
                axis=axis)


@pytest.mark.parametrize("op_type,extra", [
    ("Transpose", {"perm": [2, 0, 1]}), ("Concat", {"axis": 1}), ("Flatten", {"axis": 2}),
])
@pytest.mark.parametrize("elem", [T.INT64, T.UINT8, T.BOOL])
def test_data_movement(op_type, extra, elem, tmp_path):
    inputs = {"x": ([2, 3, 4], elem)} | ({"z": ([2, 2, 4], elem)} if op_type == "Concat" else {})
    check_exact(tmp_path, op_type, inputs, **extra)


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("elem", [T.UINT8, T.UINT32, T.UINT64])
def test_bit_shift(direction, elem, tmp_path):
    feeds = {"a": sample([3, 4], elem), "b": rng.integers(0, 8, [4]).astype(DTYPES[elem])}
    check_exact(tmp_path, "BitShift", {"a": ([3, 4], elem), "b": ([4], elem)}, feeds=feeds, direction=direction)


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_shift_by_amounts_outside_the_width(direction, tmp_path):
    """Every bit shifted out: 0, or the sign for an arithmetic right shift (ONNX's rule, where
    LLVM's would be poison)."""
    feeds = {"a": np.array([-8, 4, -1, 5], np.int32), "b": np.array([-1, 32, 64, 2], np.int32)}
    model = single_node_model("BitShift", {"a": [4], "b": [4]}, input_types={"a": T.INT32, "b": T.INT32},
                              opset=11, direction=direction)
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(model, path)
    expected = {"LEFT": [0, 0, 0, 20], "RIGHT": [-1, 0, -1, 1]}[direction]
    np.testing.assert_array_equal(glowmlir.compile(path).run(feeds)["y"], np.array(expected, np.int32))


def test_training_mode_dropout_is_refused(tmp_path):
    model = single_node_model("Dropout", {"x": [2, 3], "training": []}, {"ratio": np.float32(0.5)},
                              input_types={"training": T.BOOL}, opset=13)
    model.graph.node[0].input[:] = ["x", "ratio", "training"]
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(model, path)
    with pytest.raises(GlowError, match="training-mode Dropout is not supported"):
        glowmlir.compile(path)


@pytest.mark.parametrize("elem,fmod", [(T.INT32, 0), (T.INT64, 0), (T.INT8, 1), (T.UINT16, 0), (T.FLOAT, 1)])
def test_mod(elem, fmod, tmp_path):
    """fmod=0: the sign of the divisor (Python's %); fmod=1: the sign of the dividend (C's fmod)."""
    feeds = {"a": sample([3, 4], elem), "b": sample([4], elem)}
    feeds["b"][feeds["b"] == 0] = 7
    check_exact(tmp_path, "Mod", {"a": ([3, 4], elem), "b": ([4], elem)}, feeds=feeds, fmod=fmod)


@pytest.mark.parametrize("elem", [T.FLOAT16, T.DOUBLE])
def test_float16_and_double_are_computed_in_float32(elem, tmp_path):
    """Inputs convert to float32 on entry and outputs back on exit: the bundle's placeholders
    keep the model's types."""
    model = single_node_model("Mul", {"a": [3, 4], "b": [4]}, input_types={"a": elem, "b": elem})
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(model, path)
    dtype = np.float16 if elem == T.FLOAT16 else np.float64
    feeds = {"a": rng.standard_normal([3, 4]).astype(dtype), "b": rng.standard_normal([4]).astype(dtype)}
    bundle = glowmlir.compile(path)
    assert {p.name: p.dtype for p in bundle.layout.placeholders} == {"a": dtype, "b": dtype, "y": dtype}
    expected = (feeds["a"].astype(np.float32) * feeds["b"].astype(np.float32)).astype(dtype)
    np.testing.assert_array_equal(bundle.run(feeds)["y"], expected)


def test_integer_clip_and_pad(tmp_path):
    model = single_node_model("Clip", {"x": [4, 4]}, {"lo": np.int8(-20), "hi": np.int8(30)},
                              input_types={"x": T.INT8})
    path = os.path.join(tmp_path, "clip.onnx")
    onnx.save(model, path)
    x = sample([4, 4], T.INT8)
    np.testing.assert_array_equal(glowmlir.compile(path).run({"x": x})["y"], np.clip(x, -20, 30))
    model = single_node_model("Pad", {"x": [2, 3]}, {"pads": np.array([1, 0, 0, 2]), "value": np.int64(-7)},
                              input_types={"x": T.INT64})
    path = os.path.join(tmp_path, "pad.onnx")
    onnx.save(model, path)
    x = sample([2, 3], T.INT64)
    np.testing.assert_array_equal(glowmlir.compile(path).run({"x": x})["y"],
                                  np.pad(x, ((1, 0), (0, 2)), constant_values=-7))


def test_float_only_ops_name_the_integer_tensor(tmp_path):
    model = single_node_model("Sigmoid", {"x": [2, 2]}, input_types={"x": T.INT32})
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(model, path)
    with pytest.raises(GlowError, match=r'element type int32 of "x" is not supported by Sigmoid \(float only\)'):
        glowmlir.compile(path)


def test_unsupported_element_type_names_the_input(tmp_path):
    model = single_node_model("Identity", {"x": [2]}, input_types={"x": T.BFLOAT16})
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(model, path)
    with pytest.raises(GlowError, match=r'input "x": element type BFLOAT16 is not supported'):
        glowmlir.compile(path)


@pytest.mark.parametrize("axis,indices_shape", [(0, [2, 5]), (1, [4, 3])])
def test_gather_elements(axis, indices_shape, tmp_path):
    data_shape = [4, 5]
    feeds = {"data": sample(data_shape, T.FLOAT),
             "indices": rng.integers(-data_shape[axis], data_shape[axis], indices_shape).astype(np.int64)}
    check_exact(tmp_path, "GatherElements", {"data": (data_shape, T.FLOAT), "indices": (indices_shape, T.INT64)},
                feeds=feeds, axis=axis)


@pytest.mark.parametrize("axis", [0, -1])
def test_hardmax_marks_the_first_largest(axis, tmp_path):
    feeds = {"x": (sample([3, 4], T.INT8) % 3).astype(np.float32)}  # ties
    check_exact(tmp_path, "Hardmax", {"x": ([3, 4], T.FLOAT)}, feeds=feeds, axis=axis)


@pytest.mark.parametrize("op_type,attributes", [("IsNaN", {}), ("IsInf", {}), ("IsInf", {"detect_negative": 0}),
                                                ("IsInf", {"detect_positive": 0})])
def test_nan_and_infinity_tests(op_type, attributes, tmp_path):
    x = sample([4, 5], T.FLOAT)
    x[0, :3] = [np.nan, np.inf, -np.inf]
    check_exact(tmp_path, op_type, {"x": ([4, 5], T.FLOAT)}, feeds={"x": x}, opset=20, **attributes)


def test_pow_of_any_base(tmp_path):
    """C's powf: negative bases with integral exponents, NaN for fractional ones, zero bases."""
    model = single_node_model("Pow", {"base": [3, 4], "exponent": [3, 4]})
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(model, path)
    feeds = {"base": np.array([[2, -2, 0, 0], [0, -3, 4, 1.5], [-1.5, 9, -8, 0.5]], np.float32),
             "exponent": np.array([[3, 3, 2, 0], [-1, 2, 0.5, 2.5], [2, 0.5, 1 / 3, -2]], np.float32)}
    expected = onnxruntime_outputs(model, feeds)["y"]
    np.testing.assert_allclose(glowmlir.compile(path).run(feeds)["y"], expected, rtol=2e-6, equal_nan=True)
