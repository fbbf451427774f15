"""The inline exp/log/pow approximations, checked against numpy over their whole range."""

from __future__ import annotations

import os

import numpy as np
import onnx

import glowmlir
from tests.support.onnx_graphs import single_node_model


def run_unary(op_type: str, x: np.ndarray, tmp_path, **extra) -> np.ndarray:
    model = single_node_model(op_type, {"x": list(x.shape)}, **extra)
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(model, path)
    return glowmlir.compile(path).run(x=x)["y"]


def test_exp_through_softmax_of_two(tmp_path):
    """softmax([x, 0]) = e^x / (e^x + 1): exercises exp over [-87, 88]."""
    x = np.linspace(-87.0, 88.0, 40001, dtype=np.float32)
    pairs = np.stack([x, np.zeros_like(x)], axis=1)
    actual = run_unary("Softmax", pairs, tmp_path, axis=1)[:, 0]
    expected = 1.0 / (1.0 + np.exp(-x.astype(np.float64)))
    np.testing.assert_allclose(actual, expected, rtol=6e-7, atol=1e-37)


def test_sigmoid_and_tanh_bounds(tmp_path):
    x = np.linspace(-30.0, 30.0, 20001, dtype=np.float32).reshape(1, -1)
    np.testing.assert_allclose(run_unary("Sigmoid", x, tmp_path), 1 / (1 + np.exp(-x.astype(np.float64))),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(run_unary("Tanh", x, tmp_path), np.tanh(x.astype(np.float64)), atol=5e-7)


def test_log_and_pow_through_lrn(tmp_path):
    """LRN with size 1: y = x / (bias + alpha x^2)^beta, so (bias + alpha x^2) spans 1 .. 1e12."""
    x = np.geomspace(1e-3, 1e6, 4000, dtype=np.float32).reshape(1, 1, 1, -1)
    actual = run_unary("LRN", x, tmp_path, size=1, alpha=1.0, beta=0.75, bias=1.0)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(actual, x64 / (1 + x64 * x64) ** 0.75, rtol=3e-6)


def test_exp_keeps_nan_and_infinities(tmp_path):
    """A NaN is not clamped into range: Exp and a Softmax row holding one give NaN, as
    onnxruntime does; infinities saturate (below -87, within 2e-38 of 0)."""
    x = np.array([[np.nan, 0.0, 1.0, -np.inf, np.inf, -100.0]], np.float32)
    actual = run_unary("Exp", x, tmp_path)
    assert np.isnan(actual[0, 0]) and not np.isnan(actual[0, 1:]).any()
    np.testing.assert_allclose(actual[0, 1:3], np.exp(x[0, 1:3]), rtol=6e-7)
    assert 0.0 <= actual[0, 3] < 2e-38 and 0.0 <= actual[0, 5] < 2e-38 and actual[0, 4] > 1e38
    assert np.isnan(run_unary("Softmax", x[:, :3], tmp_path, axis=1)).all()


def test_log_outside_the_positive_numbers_is_ieee(tmp_path):
    """Log of a negative number or NaN is NaN, of 0 is -inf, of +inf is +inf, as in onnxruntime
    (it used to give finite numbers); the positive range keeps its accuracy."""
    import onnxruntime

    x = np.array([[-1.0, -1e-30, -np.inf, np.nan, 0.0, -0.0, np.inf, 1e-3, 1.0, 2.5, 3e38]], np.float32)
    actual = run_unary("Log", x, tmp_path)
    session = onnxruntime.InferenceSession(single_node_model("Log", {"x": list(x.shape)}).SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    expected = session.run(None, {"x": x})[0]
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected))
    assert np.isnan(actual[0, :4]).all()
    assert actual[0, 4] == actual[0, 5] == -np.inf and actual[0, 6] == np.inf
    np.testing.assert_allclose(actual[0, 7:], np.log(x[0, 7:].astype(np.float64)), atol=3e-7, rtol=1e-7)


def _erf(x: np.ndarray) -> np.ndarray:
    import math

    return np.vectorize(math.erf)(x.astype(np.float64))


def test_trigonometric_and_erf_bounds(tmp_path):
    """The bounds math_approx states: sin/cos below 1e-7 for |x| <= 1e4, atan below 2e-7,
    asin/acos below 3e-7 on [-1, 1] and NaN outside it, erf below 3e-7 (and relative near 0)."""
    wide = np.linspace(-1e4, 1e4, 100001, dtype=np.float32).reshape(1, -1)
    for op_type, function in (("Sin", np.sin), ("Cos", np.cos)):
        np.testing.assert_allclose(run_unary(op_type, wide, tmp_path), function(wide.astype(np.float64)), atol=1e-7)
    x = np.linspace(-50, 50, 100001, dtype=np.float32).reshape(1, -1)
    np.testing.assert_allclose(run_unary("Atan", x, tmp_path), np.arctan(x.astype(np.float64)), atol=2e-7)
    np.testing.assert_allclose(run_unary("Erf", x, tmp_path), _erf(x), atol=3e-7)
    tiny = np.linspace(-0.01, 0.01, 2001, dtype=np.float32).reshape(1, -1)
    np.testing.assert_allclose(run_unary("Erf", tiny, tmp_path), _erf(tiny), rtol=3e-7)
    unit = np.linspace(-1, 1, 100001, dtype=np.float32).reshape(1, -1)
    for op_type, function in (("Asin", np.arcsin), ("Acos", np.arccos)):
        np.testing.assert_allclose(run_unary(op_type, unit, tmp_path), function(unit.astype(np.float64)), atol=3e-7)
        outside = run_unary(op_type, np.array([[1.5, -1.01, np.nan, np.inf]], np.float32), tmp_path)
        assert np.isnan(outside).all()
    edges = np.array([[np.inf, -np.inf, np.nan, 0.0]], np.float32)
    np.testing.assert_array_equal(run_unary("Erf", edges, tmp_path), [[1.0, -1.0, np.nan, 0.0]])
    np.testing.assert_allclose(run_unary("Atan", edges, tmp_path), [[np.pi / 2, -np.pi / 2, np.nan, 0.0]], rtol=1e-7)


def test_floor_ceil_sign_are_exact(tmp_path):
    x = np.concatenate([np.linspace(-100, 100, 20001), [-0.0, 0.0, 1e9, -1e9, np.inf, -np.inf, np.nan,
                                                       2 ** 23 - 0.5, -(2 ** 23) + 0.5, 0.5, -0.5, 2.5, -2.5]])
    x = x.astype(np.float32).reshape(1, -1)
    for op_type, function in (("Floor", np.floor), ("Ceil", np.ceil), ("Sign", np.sign)):
        np.testing.assert_array_equal(run_unary(op_type, x, tmp_path), function(x), err_msg=op_type)
