"""Numpy semantics of the `glow` ops.

`glow-constant-fold` evaluates ops on constant inputs with these functions, and the unit
tests check the generated kernels against them on random data. The elementwise ops' semantics
are their facts' `numpy` functions (`glow.numpy_semantics()`); the structured ops' are here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from xdsl.ir import Operation

from glowmlir.dialects import glow
from glowmlir.dialects.weights import array_from_dense

activation = glow.apply_fused_activation
"""The fused activation of Convolution, FullyConnected or Add."""


def _windows(x: np.ndarray, kernel, strides, pads, dilations=(1, 1), pad_value=0.0) -> np.ndarray:
    """[N, C, OH, OW, KH, KW] windows of an NCHW tensor."""
    top, left, bottom, right = pads
    padded = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=pad_value)
    kh, kw = kernel
    dy, dx = dilations
    span = (dy * (kh - 1) + 1, dx * (kw - 1) + 1)
    windows = sliding_window_view(padded, span, axis=(2, 3))[:, :, ::strides[0], ::strides[1], ::dy, ::dx]
    return windows


def convolution(op: glow.ConvolutionOp, x, w, b, residual=None):
    group = op.group.value.data
    windows = _windows(x, w.shape[2:], op.strides.get_values(), op.pads.get_values(), op.dilations.get_values())
    n, c, oh, ow = windows.shape[:4]
    cg, og = c // group, w.shape[0] // group
    outputs = [np.einsum("ncyxhw,ochw->noyx", windows[:, g * cg:(g + 1) * cg], w[g * og:(g + 1) * og], optimize=True)
               for g in range(group)]
    out = np.concatenate(outputs, axis=1) + b.reshape(1, -1, 1, 1)
    out = activation(op, (out if residual is None else out + residual).astype(np.float32))
    if op.pool is None:
        return out
    kernel, strides, pads = op.pool_kernel.get_values(), op.pool_strides.get_values(), op.pool_pads.get_values()
    if op.pool.data == "max":
        return _windows(out, kernel, strides, pads, pad_value=-np.inf).max(axis=(4, 5))
    include_pad = op.pool_count_include_pad is not None
    return _average(out, kernel, strides, pads, include_pad)


def max_pool(op: glow.MaxPoolOp, x):
    windows = _windows(x, op.kernel.get_values(), op.strides.get_values(), op.pads.get_values(), pad_value=-np.inf)
    return windows.max(axis=(4, 5))


def avg_pool(op: glow.AvgPoolOp, x):
    return _average(x, op.kernel.get_values(), op.strides.get_values(), op.pads.get_values(),
                    op.count_include_pad is not None)


def _average(x, kernel, strides, pads, count_include_pad: bool):
    sums = _windows(x, kernel, strides, pads).sum(axis=(4, 5))
    if count_include_pad:
        return (sums / (kernel[0] * kernel[1])).astype(np.float32)
    counts = _windows(np.ones((1, 1) + x.shape[2:], np.float32), kernel, strides, pads).sum(axis=(4, 5))
    return (sums / counts).astype(np.float32)


def softmax(op: glow.SoftMaxOp, x):
    axis = op.axis.value.data
    shifted = x - x.max(axis=axis, keepdims=True)
    e = np.exp(shifted)
    if op.log is not None:
        return shifted - np.log(e.sum(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def batch_normalization(op: glow.BatchNormalizationOp, x, scale, bias, mean, var):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    factor = scale / np.sqrt(var + np.float32(op.epsilon.value.data))
    return ((x - mean.reshape(shape)) * factor.reshape(shape) + bias.reshape(shape)).astype(np.float32)


def slice_(op: glow.SliceOp, x):
    out = glow.shape_of(op.result)
    index = tuple(slice(s, s + (n - 1) * step + 1, step) for s, step, n in
                  zip(op.starts.get_values(), op.steps.get_values(), out))
    return x[index]


def pad(op: glow.PadOp, x):
    pads = op.pads.get_values()
    rank = x.ndim
    return np.pad(x, list(zip(pads[:rank], pads[rank:])), constant_values=op.value.value.data)


def local_response_normalization(op: glow.LocalResponseNormalizationOp, x):
    size = op.size.value.data
    squares = np.pad(x * x, ((0, 0), ((size - 1) // 2, size // 2), (0, 0), (0, 0)))
    sums = sliding_window_view(squares, size, axis=1).sum(axis=-1)
    scale = op.bias.value.data + op.alpha.value.data / size * sums
    return (x / scale ** op.beta.value.data).astype(np.float32)


_REDUCTIONS = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}


def resample(op: glow.ResampleOp, x: np.ndarray, taps: np.ndarray, weights: np.ndarray) -> np.ndarray:
    axis = op.axis.value.data
    gathered = np.take(x, taps, axis=axis)  # the axis becomes [output size, taps]
    factors = weights.reshape((1,) * axis + weights.shape + (1,) * (x.ndim - axis - 1))
    return np.sum(gathered * factors, axis=axis + 1, dtype=np.float32)


STRUCTURED: dict[type, Callable[..., np.ndarray]] = {
    glow.ConvolutionOp: convolution,
    glow.FullyConnectedOp: lambda op, x, w, b: activation(op, x @ w + b),
    glow.MatMulOp: lambda op, a, b: np.matmul(a, b),
    glow.MaxPoolOp: max_pool,
    glow.AvgPoolOp: avg_pool,
    glow.SoftMaxOp: softmax,
    glow.BatchNormalizationOp: batch_normalization,
    glow.LocalResponseNormalizationOp: local_response_normalization,
    glow.ReduceOp: lambda op, x: _REDUCTIONS[op.kind.data](x, axis=tuple(op.axes.get_values())),
    glow.ReshapeOp: lambda op, x: x.reshape(glow.shape_of(op.result)),
    glow.TransposeOp: lambda op, x: np.transpose(x, op.perm.get_values()),
    glow.ConcatOp: lambda op, *xs: np.concatenate(xs, axis=op.axis.value.data),
    glow.SliceOp: slice_,
    glow.PadOp: pad,
    glow.ResampleOp: resample,
}
"""The numpy semantics of the ops that are not elementwise."""


def evaluators(ops: Iterable[type] | None = None) -> dict[type, Callable[..., np.ndarray]]:
    """Op class -> numpy semantics `f(op, *inputs)`: the structured ops' and the elementwise
    facts' (over the glow dialect's ops, or `ops`)."""
    return STRUCTURED | glow.numpy_semantics(ops)


EVALUATORS = evaluators()
"""The ops `glow-constant-fold` evaluates."""


def evaluate(op: Operation, *inputs: np.ndarray) -> np.ndarray:
    """The float32 result of one glow compute op on numpy inputs."""
    result = EVALUATORS[type(op)](op, *inputs)
    return np.ascontiguousarray(result, dtype=np.float32).reshape(glow.shape_of(op.results[0]))


def run_function(function: glow.FunctionOp, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Interprets a whole `glow.function` (the reference for end-to-end tests of passes)."""
    values = {}
    outputs = {}
    for op in function.body.block.ops:
        if isinstance(op, glow.PlaceholderOp):
            values[op.result] = np.asarray(inputs[op.name_.data], np.float32).reshape(glow.shape_of(op.result))
        elif isinstance(op, glow.ConstantOp):
            values[op.result] = array_from_dense(op.value)
        elif isinstance(op, glow.SplatOp):
            values[op.result] = np.full(glow.shape_of(op.result), op.value.value.data, np.float32)
        elif isinstance(op, glow.SaveOp):
            outputs[op.name_.data] = values[op.input]
        else:
            values[op.results[0]] = evaluate(op, *(values[v] for v in op.operands))
    return outputs
