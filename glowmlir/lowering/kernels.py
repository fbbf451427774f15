"""Loop nests for the `glowll` instructions, emitted in the `llvm` dialect.

Layout is NCHW. Every kernel keeps its innermost loop on a contiguous row of the
destination (the output width for convolution and pooling, the output features for
FullyConnected), so LLVM's loop vectorizer turns it into SIMD code; weights are loop
invariant scalars broadcast across that row, and `contract` lets LLVM use fma.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import llvm
from xdsl.ir import SSAValue

from glowmlir.dialects import glow, glowll
from glowmlir.lowering import math_approx
from glowmlir.lowering.kernel_builder import REASSOCIATE, Index, KernelBuilder, View

ViewOf = Callable[[SSAValue], View]
"""Maps a buffer SSA value of the instruction to a contiguous view of its memory."""


def _shape(value: SSAValue) -> tuple[int, ...]:
    return tuple(value.type.get_shape())


def _activation(b: KernelBuilder, op, value: SSAValue) -> SSAValue:
    """Applies the fused activation (`relu` or `clip`) of `op`, if any."""
    activation = op.properties.get("activation")
    if activation is None:
        return value
    if activation.data == "relu":
        return b.fmax(value, b.f32(0.0))
    value = b.fmax(value, b.f32(op.clip_min.value.data))
    return b.fmin(value, b.f32(op.clip_max.value.data))


def window_columns(b: KernelBuilder, kx: Index, in_width: int, out_width: int, stride: int, pad: int,
                    dilation: int) -> tuple[Index, Index, Index]:
    """For kernel column kx: the output columns [lo, hi) whose input column
    `x * stride + shift` falls inside the input, and that `shift`."""
    shift = b.sub(b.mul(kx, dilation), pad)
    lo = b.max(b.ceil_div(b.sub(0, shift), stride), 0)
    hi = b.min(b.max(b.ceil_div(b.sub(in_width, shift), stride), 0), out_width)
    return lo, hi, shift


def fill_row(b: KernelBuilder, row: View, prefix: Sequence[Index], width: int, value_at: Callable[[Index], SSAValue]):
    with b.loop(0, width) as x:
        b.store(value_at(x.index), row, [*prefix, x.index])


CHANNEL_BLOCKS = (4, 5, 6, 3, 2, 1)
"""Output channels computed together by a convolution: independent accumulator chains."""


@dataclass(frozen=True)
class Window:
    """A pooling window: kernel, strides, pads (top, left, bottom, right), averaging rule."""

    kernel: tuple[int, int]
    strides: tuple[int, int]
    pads: tuple[int, int, int, int]
    is_max: bool
    count_include_pad: bool = False

    @staticmethod
    def of_pool(op) -> Window:
        return Window(op.kernel.get_values(), op.strides.get_values(), op.pads.get_values(),
                      isinstance(op, glowll.MaxPoolOp), getattr(op, "count_include_pad", None) is not None)

    @staticmethod
    def of_fused_pool(op: glowll.ConvolutionOp) -> Window | None:
        if op.pool is None:
            return None
        return Window(op.pool_kernel.get_values(), op.pool_strides.get_values(), op.pool_pads.get_values(),
                      op.pool.data == "max", op.pool_count_include_pad is not None)


def _convolution_rows(b: KernelBuilder, op: glowll.ConvolutionOp, src: View, filt: View, bias: View, n: Index,
                      channels: list[Index], y: Index, rows: list[tuple[View, list[Index]]], out_w: int,
                      residual: View | None = None) -> None:
    """Convolution output row `y` of each of `channels` into `rows[j]` = (view, index prefix),
    starting from bias (+ the residual row)."""
    _, in_c, in_h, in_w = src.shape
    _, group_c, k_h, k_w = filt.shape
    sy, sx = op.strides.get_values()
    pt, pl, pb, _ = op.pads.get_values()
    dy, dx = op.dilations.get_values()
    out_per_group = filt.shape[0] // op.group.value.data
    for o, (row, prefix) in zip(channels, rows):
        bias_o = b.load(bias, [o])
        if residual is None:
            fill_row(b, row, prefix, out_w, lambda x: bias_o)
        else:
            fill_row(b, row, prefix, out_w, lambda x: b.fadd(bias_o, b.load(residual, [n, o, y, x])))
    first_channel = b.mul(b.div(channels[0], out_per_group), group_c) if op.group.value.data > 1 else 0
    with b.loop(0, group_c) as c, b.loop(0, k_h) as ky:
        in_y = b.sub(b.add(b.mul(y, sy), b.mul(ky.index, dy)), pt)
        with inside_rows(b, in_y, in_h, pt or pb):
            channel = b.add(first_channel, c.index)
            # Unrolled over the kernel columns: each column's valid output range is a constant.
            for kx in range(k_w):
                lo, hi, shift = window_columns(b, kx, in_w, out_w, sx, pl, dx)
                weights = [b.load(filt, [o, c.index, ky.index, kx]) for o in channels]
                with b.loop(lo, hi) as x:
                    pixel = b.load(src, [n, channel, in_y, b.add(b.mul(x.index, sx), shift)])
                    for (row, prefix), weight in zip(rows, weights):
                        total = b.fadd(b.load(row, [*prefix, x.index]), b.fmul(pixel, weight))
                        b.store(total, row, [*prefix, x.index])
    if op.activation is not None:
        for row, prefix in rows:
            fill_row(b, row, prefix, out_w, lambda x: _activation(b, op, b.load(row, [*prefix, x])))


def emit_convolution(b: KernelBuilder, op: glowll.ConvolutionOp, view: ViewOf) -> None:
    """Convolution, optionally followed by a fused pooling window.

    Fused, each pooled output row is reduced from the convolution rows under its window,
    computed one at a time into a small stack row: the full-resolution convolution output
    is never stored.
    """
    dest, src, filt, bias = view(op.dest), view(op.input), view(op.filter), view(op.bias)
    n_size, out_c, out_h, out_w = dest.shape
    out_per_group = out_c // op.group.value.data
    block = next(size for size in CHANNEL_BLOCKS if out_per_group % size == 0)
    pool = Window.of_fused_pool(op)
    if pool is None:
        with b.loops([n_size, out_c // block, out_h]) as (n, o_block, y):
            channels = [b.add(b.mul(o_block, block), j) for j in range(block)]
            _convolution_rows(b, op, src, filt, bias, n, channels, y, [(dest, [n, o, y]) for o in channels], out_w,
                              view(op.residual) if op.residual is not None else None)
        return
    conv_h, conv_w = glow.ConvolutionOp.shape_rule(
        src.shape, filt.shape, op.strides.get_values(), op.pads.get_values(), op.dilations.get_values(),
        op.group.value.data)[2:]
    scratch = View.contiguous(b.alloca(block * conv_w), (block, conv_w))
    with b.loops([n_size, out_c // block, out_h]) as (n, o_block, y):
        channels = [b.add(b.mul(o_block, block), j) for j in range(block)]
        start = b.f32(-np.inf if pool.is_max else 0.0)
        for o in channels:
            fill_row(b, dest, [n, o, y], out_w, lambda x: start)
        for wy in range(pool.kernel[0]):
            conv_y = b.sub(b.add(b.mul(y, pool.strides[0]), wy), pool.pads[0])
            with inside_rows(b, conv_y, conv_h, pool.pads[0] or pool.pads[2]):
                _convolution_rows(b, op, src, filt, bias, n, channels, conv_y,
                                  [(scratch, [j]) for j in range(block)], conv_w)
                for j, o in enumerate(channels):
                    pool_row(b, pool, dest, [n, o, y], scratch, [j], conv_w)
        if not pool.is_max:
            for o in channels:
                _finish_average(b, pool, dest, [n, o, y], (conv_h, conv_w))


def inside_rows(b: KernelBuilder, in_y: Index, in_h: int, padded: bool):
    """Guards code for input row `in_y`; without vertical padding every row is inside."""
    return b.when(b.in_range(in_y, in_h)) if padded else contextlib.nullcontext()


def pool_row(b: KernelBuilder, window: Window, dest: View, dest_prefix: list[Index], src: View,
              src_prefix: list[Index], in_w: int, combine: Callable | None = None) -> None:
    """Folds one input row into one output row, horizontally over the window, with
    `combine(dest element, input element)` (default: float max or sum)."""
    combine = combine or (b.fmax if window.is_max else b.fadd)
    out_w = dest.shape[-1]
    for kx in range(window.kernel[1]):
        lo, hi, shift = window_columns(b, kx, in_w, out_w, window.strides[1], window.pads[1], 1)
        with b.loop(lo, hi) as x:
            pixel = b.load(src, [*src_prefix, b.add(b.mul(x.index, window.strides[1]), shift)])
            b.store(combine(b.load(dest, [*dest_prefix, x.index]), pixel), dest, [*dest_prefix, x.index])


def emit_pool(b: KernelBuilder, op: glowll.MaxPoolOp | glowll.AvgPoolOp, view: ViewOf) -> None:
    dest, src = view(op.dest), view(op.input)
    window = Window.of_pool(op)
    n_size, channels, out_h, out_w = dest.shape
    in_h, in_w = src.shape[2:]
    with b.loops([n_size, channels, out_h]) as (n, c, y):
        start = b.f32(-np.inf if window.is_max else 0.0)
        fill_row(b, dest, [n, c, y], out_w, lambda x: start)
        with b.loop(0, window.kernel[0]) as ky:
            in_y = b.sub(b.add(b.mul(y, window.strides[0]), ky.index), window.pads[0])
            with inside_rows(b, in_y, in_h, window.pads[0] or window.pads[2]):
                pool_row(b, window, dest, [n, c, y], src, [n, c, in_y], in_w)
        if not window.is_max:
            _finish_average(b, window, dest, [n, c, y], (in_h, in_w))


def window_size(b: KernelBuilder, window: Window, y: Index, in_hw: tuple[int, int]) -> int | Callable[[Index], Index]:
    """How many input elements the averaging window of output row `y` divides by: an int
    when every window counts the same, else a function of the output column."""
    k_h, k_w = window.kernel
    sy, sx = window.strides
    pt, pl, pb, pr = window.pads
    if window.count_include_pad or not any((pt, pl, pb, pr)):
        return k_h * k_w
    in_h, in_w = in_hw
    top = b.sub(b.mul(y, sy), pt)
    rows = b.sub(b.min(b.add(top, k_h), in_h), b.max(top, 0))

    def size_at(x: Index) -> Index:
        left = b.sub(b.mul(x, sx), pl)
        return b.mul(rows, b.sub(b.min(b.add(left, k_w), in_w), b.max(left, 0)))

    return size_at


def _finish_average(b: KernelBuilder, window: Window, dest: View, prefix: list[Index], in_hw) -> None:
    """Divides the window sums of one output row by the window sizes."""
    size = window_size(b, window, prefix[2], in_hw)
    out_w = dest.shape[3]
    if isinstance(size, int):
        scale = b.f32(1.0 / size)
        fill_row(b, dest, prefix, out_w, lambda x: b.fmul(b.load(dest, [*prefix, x]), scale))
    else:
        fill_row(b, dest, prefix, out_w, lambda x: b.fdiv(b.load(dest, [*prefix, x]), b.to_f32(size(x))))


def emit_fully_connected(b: KernelBuilder, op: glowll.FullyConnectedOp, view: ViewOf) -> None:
    """Each output is one dot product over a contiguous weight row ([N, K] layout)."""
    dest, src, weights, bias = view(op.dest), view(op.input), view(op.weights), view(op.bias)
    rows, columns = dest.shape
    depth = src.shape[1]
    with b.loops([rows, columns]) as (m, n):
        with b.loop(0, depth, carried=[b.f32(0.0)]) as k:
            product = b.fmul(b.load(src, [m, k.index]), b.load(weights, [n, k.index]), REASSOCIATE)
            k.next(b.fadd(k.carried[0], product, REASSOCIATE))
        b.store(_activation(b, op, b.fadd(k.results[0], b.load(bias, [n]))), dest, [m, n])


def broadcast_view(source: View, shape: Sequence[int]) -> View:
    """`source` seen with `shape` (numpy broadcasting: stride 0 on broadcast dimensions)."""
    pad = len(shape) - len(source.shape)
    strides = [0] * pad + [0 if size == 1 and full != 1 else stride
                           for size, stride, full in zip(source.shape, source.strides, shape[pad:])]
    return source.reshaped(shape, strides)


def emit_matmul(b: KernelBuilder, op: glowll.MatMulOp, view: ViewOf) -> None:
    dest = view(op.dest)
    *batch, rows, columns = dest.shape
    lhs, rhs = view(op.lhs), view(op.rhs)
    depth = lhs.shape[-1]
    lhs = broadcast_view(lhs, [*batch, rows, depth])
    rhs = broadcast_view(rhs, [*batch, depth, columns])
    zero = b.f32(0.0)
    with b.loops([*batch, rows]) as outer:
        *bi, m = outer
        fill_row(b, dest, outer, columns, lambda n: zero)
        with b.loop(0, depth) as k:
            a = b.load(lhs, [*bi, m, k.index])
            with b.loop(0, columns) as n:
                total = b.fadd(b.load(dest, [*bi, m, n.index]), b.fmul(a, b.load(rhs, [*bi, k.index, n.index])))
                b.store(total, dest, [*bi, m, n.index])


def emit_strided_map(b: KernelBuilder, dest: View, sources: Sequence[View],
                     compute: Callable[[list[SSAValue]], SSAValue]) -> None:
    """dest[i] = compute(sources[i]) over dest's shape, for arbitrary strided views."""
    shape, views = _merge_dimensions(dest, sources)
    with b.loops(shape) as indices:
        values = [b.load(v, indices) for v in views[1:]]
        b.store(compute(values), views[0], indices)


def _merge_dimensions(dest: View, sources: Sequence[View]) -> tuple[list[int], list[View]]:
    """Collapses adjacent dimensions that are contiguous in every view into one loop."""
    views = [dest, *sources]
    shape = list(dest.shape) or [1]
    strides = [list(v.strides) or [1] for v in views]
    merged_shape, merged = [shape[0]], [[s[0]] for s in strides]
    for d in range(1, len(shape)):
        if all(s[d - 1] == s[d] * shape[d] for s in strides):
            merged_shape[-1] *= shape[d]
            for m, s in zip(merged, strides):
                m[-1] = s[d]
        else:
            merged_shape.append(shape[d])
            for m, s in zip(merged, strides):
                m.append(s[d])
    return merged_shape, [v.reshaped(merged_shape, m) for v, m in zip(views, merged)]


def emit_elementwise(b: KernelBuilder, op: glowll.ElementwiseOp, view: ViewOf) -> None:
    dest = view(op.dest)
    sources = [broadcast_view(view(v), dest.shape) for v in op.inputs]
    kind = op.kind.data
    one = b.f32(1.0) if kind in ("sigmoid", "tanh", "mish") else None

    alpha = op.alpha.value.data if op.alpha is not None else 0.0
    beta = op.beta.value.data if op.beta is not None else 0.0

    def sigmoid(x):
        return b.fdiv(one, b.fadd(one, math_approx.exp(b, b.fsub(b.f32(0.0), x))))

    def negative_scaled(x, scaled):
        """x where x >= 0, else `scaled`."""
        return b.emit(llvm.SelectOp(b.emit(llvm.FCmpOp(x, b.f32(0.0), "oge")), x, scaled))

    def unit_clamp(x):
        return b.fmin(b.fmax(x, b.f32(0.0)), b.f32(1.0))

    def softplus(x):
        """log(1 + e^x), as x + log(1 + e^-x) for large x so that e^x cannot overflow."""
        positive = b.emit(llvm.FCmpOp(x, b.f32(0.0), "ogt"))
        small = math_approx.log(b, b.fadd(b.f32(1.0), math_approx.exp(b, x)))
        large = b.fadd(x, math_approx.log(b, b.fadd(b.f32(1.0), math_approx.exp(b, b.fsub(b.f32(0.0), x)))))
        return b.emit(llvm.SelectOp(positive, large, small))

    def tanh(x):
        """tanh(x) = 2 * sigmoid(2x) - 1."""
        return b.fsub(b.fmul(b.f32(2.0), sigmoid(b.fadd(x, x))), b.f32(1.0))

    compute: dict[str, Callable[[list[SSAValue]], SSAValue]] = {
        "add": lambda v: b.fadd(*v), "sub": lambda v: b.fsub(*v), "mul": lambda v: b.fmul(*v),
        "div": lambda v: b.fdiv(*v), "max": lambda v: b.fmax(*v), "min": lambda v: b.fmin(*v),
        "pow": lambda v: math_approx.general_pow(b, *v),
        "relu": lambda v: b.fmax(v[0], b.f32(0.0)),
        "clip": lambda v: b.fmin(b.fmax(v[0], b.f32(op.clip_min.value.data)), b.f32(op.clip_max.value.data)),
        "sigmoid": lambda v: sigmoid(v[0]),
        "tanh": lambda v: tanh(v[0]),
        "prelu": lambda v: negative_scaled(v[0], b.fmul(v[1], v[0])),
        "leaky_relu": lambda v: negative_scaled(v[0], b.fmul(b.f32(alpha), v[0])),
        "elu": lambda v: negative_scaled(v[0], b.fmul(b.f32(alpha), b.fsub(math_approx.exp(b, v[0]), b.f32(1.0)))),
        "selu": lambda v: b.fmul(b.f32(beta), negative_scaled(
            v[0], b.fmul(b.f32(alpha), b.fsub(math_approx.exp(b, v[0]), b.f32(1.0))))),
        "hard_sigmoid": lambda v: unit_clamp(b.fadd(b.fmul(b.f32(alpha), v[0]), b.f32(beta))),
        "hard_swish": lambda v: b.fmul(v[0], unit_clamp(b.fadd(b.fmul(b.f32(1 / 6), v[0]), b.f32(0.5)))),
        "exp": lambda v: math_approx.exp(b, v[0]),
        "neg": lambda v: b.fsub(b.f32(0.0), v[0]),
        "abs": lambda v: b.fmax(v[0], b.fsub(b.f32(0.0), v[0])),
        "sqrt": lambda v: b.emit(llvm.FSqrtOp(v[0])),
        "reciprocal": lambda v: b.fdiv(b.f32(1.0), v[0]),
        "log": lambda v: math_approx.log(b, v[0]),
        "softplus": lambda v: softplus(v[0]),
        "softsign": lambda v: b.fdiv(v[0], b.fadd(b.f32(1.0), b.fmax(v[0], b.fsub(b.f32(0.0), v[0])))),
        "mish": lambda v: b.fmul(v[0], tanh(softplus(v[0]))),
        "celu": lambda v: b.fadd(b.fmax(v[0], b.f32(0.0)), b.fmin(b.f32(0.0), b.fmul(b.f32(alpha), b.fsub(
            math_approx.exp(b, b.fdiv(v[0], b.f32(alpha))), b.f32(1.0))))),
        "copy": lambda v: v[0],
        "splat": lambda v: b.f32(op.value.value.data),
    }
    operation = compute[kind]
    emit_strided_map(b, dest, sources, lambda v: _activation(b, op, operation(v)))


def emit_reduce(b: KernelBuilder, op: glowll.ReduceOp, view: ViewOf) -> None:
    """dest starts at the reduction's identity; every input element is folded into the dest
    element it projects to (dest seen with stride 0 on the reduced axes); mean divides last."""
    dest, src = view(op.dest), view(op.input)
    kind, axes = op.kind.data, set(op.axes.get_values())
    start = {"sum": 0.0, "mean": 0.0, "max": -np.inf, "min": np.inf}[kind]
    emit_strided_map(b, dest, [], lambda v: b.f32(start))
    projected = dest.reshaped(src.shape, [0 if d in axes else s for d, s in enumerate(dest.strides)])
    combine = {"sum": b.fadd, "mean": b.fadd, "max": b.fmax, "min": b.fmin}[kind]
    emit_strided_map(b, projected, [projected, src], lambda v: combine(v[0], v[1]))
    if kind == "mean":
        scale = b.f32(1.0 / int(np.prod([src.shape[a] for a in axes])))
        emit_strided_map(b, dest, [dest], lambda v: b.fmul(v[0], scale))


def emit_copy(b: KernelBuilder, op: glowll.CopyOp, view: ViewOf) -> None:
    dest, src = view(op.dest), view(op.input)
    size = int(np.prod(dest.shape))
    emit_strided_map(b, dest.reshaped((size,), (1,)), [src.reshaped((size,), (1,))],
                     lambda v: v[0])


def emit_transpose(b: KernelBuilder, op: glowll.TransposeOp, view: ViewOf) -> None:
    dest, src = view(op.dest), view(op.input)
    perm = op.perm.get_values()
    emit_strided_map(b, dest, [src.reshaped(dest.shape, [src.strides[p] for p in perm])],
                     lambda v: v[0])


def emit_insert_tensor(b: KernelBuilder, op: glowll.InsertTensorOp, view: ViewOf) -> None:
    dest, src = view(op.dest), view(op.input)
    start = dest.offset + sum(o * s for o, s in zip(op.offsets.get_values(), dest.strides))
    emit_strided_map(b, dest.reshaped(src.shape, dest.strides, start), [src], lambda v: v[0])


def emit_extract_tensor(b: KernelBuilder, op: glowll.ExtractTensorOp, view: ViewOf) -> None:
    dest, src = view(op.dest), view(op.input)
    start = src.offset + sum(o * s for o, s in zip(op.starts.get_values(), src.strides))
    strides = tuple(s * step for s, step in zip(src.strides, op.steps.get_values()))
    emit_strided_map(b, dest, [src.reshaped(dest.shape, strides, start)], lambda v: v[0])


def emit_softmax(b: KernelBuilder, op: glowll.SoftMaxOp, view: ViewOf) -> None:
    dest, src = view(op.dest), view(op.input)
    shape, axis = dest.shape, op.axis.value.data
    outer, size, inner = int(np.prod(shape[:axis])), shape[axis], int(np.prod(shape[axis + 1:]))
    dest = dest.reshaped((outer, size, inner), (size * inner, inner, 1))
    src = src.reshaped((outer, size, inner), (size * inner, inner, 1))
    with b.loops([outer, inner]) as (o, i):
        with b.loop(0, size, carried=[b.f32(-np.inf)]) as loop:
            loop.next(b.fmax(loop.carried[0], b.load(src, [o, loop.index, i])))
        (largest,) = loop.results
        with b.loop(0, size, carried=[b.f32(0.0)]) as loop:
            e = math_approx.exp(b, b.fsub(b.load(src, [o, loop.index, i]), largest))
            b.store(e, dest, [o, loop.index, i])
            loop.next(b.fadd(loop.carried[0], e, REASSOCIATE))
        (total,) = loop.results
        if op.log is not None:
            # log softmax: x - max - log(sum)
            shift = b.fadd(largest, math_approx.log(b, total))
            with b.loop(0, size) as a:
                b.store(b.fsub(b.load(src, [o, a.index, i]), shift), dest, [o, a.index, i])
        else:
            reciprocal = b.fdiv(b.f32(1.0), total)
            with b.loop(0, size) as a:
                b.store(b.fmul(b.load(dest, [o, a.index, i]), reciprocal), dest, [o, a.index, i])


def emit_local_response_normalization(b: KernelBuilder, op: glowll.LocalResponseNormalizationOp,
                                      view: ViewOf) -> None:
    """Per output row: sum the squares of the rows of the neighbouring channels into dest,
    then dest = x * (bias + alpha / size * sum) ^ -beta."""
    dest, src = view(op.dest), view(op.input)
    n_size, channels, height, width = dest.shape
    size = op.size.value.data
    alpha = op.alpha.value.data / size
    zero = b.f32(0.0)
    with b.loops([n_size, channels, height]) as (n, c, y):
        fill_row(b, dest, [n, c, y], width, lambda x: zero)
        first = b.max(b.sub(c, (size - 1) // 2), 0)
        last = b.min(b.add(c, size // 2 + 1), channels)
        with b.loop(first, last) as neighbour, b.loop(0, width) as x:
            value = b.load(src, [n, neighbour.index, y, x.index])
            total = b.fadd(b.load(dest, [n, c, y, x.index]), b.fmul(value, value))
            b.store(total, dest, [n, c, y, x.index])

        def normalize(x: Index) -> SSAValue:
            scale = b.fadd(b.f32(op.bias.value.data), b.fmul(b.f32(alpha), b.load(dest, [n, c, y, x])))
            return b.fmul(b.load(src, [n, c, y, x]), math_approx.pow(b, scale, b.f32(-op.beta.value.data)))

        fill_row(b, dest, [n, c, y], width, normalize)


def emit_resample(b: KernelBuilder, op: glowll.ResampleOp, view: ViewOf) -> None:
    """Per output position along the axis: its taps and weights, then a weighted sum of
    input rows over the contiguous inner dimensions."""
    dest, src, taps, weights = view(op.dest), view(op.input), view(op.taps), view(op.weights)
    axis = op.axis.value.data
    outer, inner = int(np.prod(dest.shape[:axis])), int(np.prod(dest.shape[axis + 1:]))
    out_size, in_size = dest.shape[axis], src.shape[axis]
    dest = dest.reshaped((outer, out_size, inner), (out_size * inner, inner, 1))
    src = src.reshaped((outer, in_size, inner), (in_size * inner, inner, 1))
    with b.loops([outer, out_size]) as (o, j):
        rows = [b.as_index(b.load(taps, [j, t])) for t in range(taps.shape[1])]
        factors = [b.load(weights, [j, t]) for t in range(weights.shape[1])]

        def value(i: Index) -> SSAValue:
            total = b.fmul(factors[0], b.load(src, [o, rows[0], i]))
            for row, factor in zip(rows[1:], factors[1:]):
                total = b.fadd(total, b.fmul(factor, b.load(src, [o, row, i])))
            return total

        with b.loop(0, inner) as i:
            b.store(value(i.index), dest, [o, j, i.index])


KERNELS: dict[type, Callable[[KernelBuilder, object, ViewOf], None]] = {
    glowll.ConvolutionOp: emit_convolution,
    glowll.FullyConnectedOp: emit_fully_connected,
    glowll.MatMulOp: emit_matmul,
    glowll.MaxPoolOp: emit_pool,
    glowll.AvgPoolOp: emit_pool,
    glowll.ElementwiseOp: emit_elementwise,
    glowll.SoftMaxOp: emit_softmax,
    glowll.LocalResponseNormalizationOp: emit_local_response_normalization,
    glowll.ReduceOp: emit_reduce,
    glowll.CopyOp: emit_copy,
    glowll.TransposeOp: emit_transpose,
    glowll.InsertTensorOp: emit_insert_tensor,
    glowll.ExtractTensorOp: emit_extract_tensor,
    glowll.ResampleOp: emit_resample,
}
"""The emitter of each instruction."""
