"""Float kernels: the f32 arithmetic of the shared loop skeletons, and the float-only kernels.

Layout is NCHW. Convolution, pooling, FullyConnected and the strided map are the skeletons of
`loop_skeletons` run with `FloatArithmetic`: f32 sums accumulated in place in the
destination rows, weights loop-invariant scalars broadcast across a row, `contract` so that
LLVM may use fma (a dot product also `reassoc`, so that it vectorizes). MatMul, softmax,
reductions, local response normalization and resampling are written here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import f32
from xdsl.ir import Attribute, SSAValue

from glowmlir.backends import microkernel
from glowmlir.dialects import glow, glowll
from glowmlir.lowering import loop_skeletons, math_approx
from glowmlir.lowering.activations import UNBOUNDED, Interval, clamp, clamp_interval, fused_activation
from glowmlir.lowering.kernel_builder import REASSOCIATE, Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import (
    ArithmeticDomain,
    Row,
    StoredElement,
    ViewOf,
    Window,
    broadcast_view,
    elementwise_views,
    emit_strided_map,
    fill_row,
    row,
    window_size,
)


def clamp_f32(b: KernelBuilder, value: SSAValue, interval: Interval) -> SSAValue:
    """A float clamped to a relu/clip interval."""
    return clamp(value, interval, b.fmax, b.fmin, b.f32)


class FloatArithmetic(ArithmeticDomain):
    """f32 everywhere: convolution and pooling accumulate in the destination rows (a fused
    pooling window's convolution rows in one stack row per channel), the fused relu/clip
    is applied in place, averages multiply by 1/size (or divide at the borders)."""

    bias_after_products = True

    def __init__(self, b: KernelBuilder, op: glowll.InstructionOp):
        super().__init__(b)
        self.activation = clamp_interval(op, fused_activation(op))

    def accumulator_rows(self, count: int, width: int) -> None:
        return None

    def zero(self) -> SSAValue:
        return self.b.f32(0.0)

    def bias(self, bias: View, channel: Index) -> SSAValue:
        return self.b.load(bias, [channel])

    def input(self, view: View, indices: Sequence[Index]) -> SSAValue:
        return self.b.load(view, indices)

    weight = input

    def add(self, total: SSAValue, value: SSAValue) -> SSAValue:
        return self.b.fadd(total, value)

    def multiply_accumulate(self, total: SSAValue, x: SSAValue, w: SSAValue, reduction: bool = False) -> SSAValue:
        if reduction:
            return self.b.fadd(total, self.b.fmul(x, w, REASSOCIATE), REASSOCIATE)
        return self.b.fadd(total, self.b.fmul(x, w))

    def output(self, channel: Index, storage: Attribute) -> StoredElement | None:
        if self.activation == UNBOUNDED:
            return None
        return lambda value: clamp_f32(self.b, value, self.activation)

    def convolution_rows_to_pool(self, count: int, width: int) -> View:
        return View.contiguous(self.b.alloca(count * width), (count, width))

    def pool_rows(self, count: int, width: int) -> None:
        return None

    def pool_start(self, window: Window) -> SSAValue:
        return self.b.f32(-np.inf if window.is_max else 0.0)

    def pool_combine(self, window: Window) -> Callable[[SSAValue, SSAValue], SSAValue]:
        return self.b.fmax if window.is_max else self.b.fadd

    def finish_pool_row(self, window: Window, pooled: Row, dest: Row, y: Index, in_hw: tuple[int, int]) -> None:
        """Maxima are already in place; sums are divided by the window sizes."""
        if window.is_max:
            return
        b = self.b
        size = window_size(b, window, y, in_hw)
        width = dest.view.shape[-1]
        if isinstance(size, int):
            scale = b.f32(1.0 / size)
            fill_row(b, dest, width, lambda x: b.fmul(b.load(pooled.view, pooled.at(x)), scale))
        else:
            fill_row(b, dest, width, lambda x: b.fdiv(b.load(pooled.view, pooled.at(x)), b.to_f32(size(x))))


class DequantizingArithmetic(FloatArithmetic):
    """f32 arithmetic on int8 weights dequantized as they are read (a hybrid layer's,
    `weight_scales`): weight[o, ...] = level x scale[o], o the output channel (the weights'
    first index)."""

    def __init__(self, b: KernelBuilder, op: glowll.ConvolutionOp | glowll.FullyConnectedOp, scales: View):
        super().__init__(b, op)
        self.scales = scales

    def weight(self, view: View, indices: Sequence[Index]) -> SSAValue:
        return self.b.fmul(self.b.to_f32(self.b.load(view, indices)), self.b.load(self.scales, [indices[0]]))


def float_arithmetic(b: KernelBuilder, op: glowll.ConvolutionOp | glowll.FullyConnectedOp,
                     view: ViewOf) -> FloatArithmetic:
    if op.weight_scales is not None:
        return DequantizingArithmetic(b, op, view(op.weight_scales))
    return FloatArithmetic(b, op)


def emit_convolution(b: KernelBuilder, op: glowll.ConvolutionOp, view: ViewOf) -> None:
    if op.microkernel is not None:  # the filter is packed as its microkernel reads it
        microkernel(op.microkernel.data).emitters().emit_convolution(b, FloatArithmetic(b, op), op, view)
        return
    loop_skeletons.emit_convolution(b, float_arithmetic(b, op, view), op, view)


def emit_pool(b: KernelBuilder, op: glowll.MaxPoolOp | glowll.AvgPoolOp, view: ViewOf) -> None:
    loop_skeletons.emit_pool(b, FloatArithmetic(b, op), op, view)


def emit_fully_connected(b: KernelBuilder, op: glowll.FullyConnectedOp, view: ViewOf) -> None:
    loop_skeletons.emit_fully_connected(b, float_arithmetic(b, op, view), op, view)


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
        fill_row(b, row(dest, *outer), columns, lambda n: zero)
        with b.loop(0, depth) as k:
            a = b.load(lhs, [*bi, m, k.index])
            with b.loop(0, columns) as n:
                total = b.fadd(b.load(dest, [*bi, m, n.index]), b.fmul(a, b.load(rhs, [*bi, k.index, n.index])))
                b.store(total, dest, [*bi, m, n.index])


class FloatMath:
    """What an op's `float_kernel` (in its facts, `glow.ElementwiseFacts`) computes with: the
    kernel builder's f32 arithmetic, math_approx's approximations, and the instruction's
    parameters."""

    def __init__(self, b: KernelBuilder, op: glowll.ElementwiseOp):
        self.b, self.op = b, op

    def f32(self, value: float) -> SSAValue:
        return self.b.f32(value)

    def _parameter(self, name: str) -> SSAValue:
        value = getattr(self.op, name)
        return self.b.f32(value.value.data if value is not None else 0.0)

    def alpha(self) -> SSAValue:
        return self._parameter("alpha")

    def beta(self) -> SSAValue:
        return self._parameter("beta")

    def value(self) -> SSAValue:
        return self._parameter("value")

    def add(self, x: SSAValue, y: SSAValue) -> SSAValue:
        return self.b.fadd(x, y)

    def sub(self, x: SSAValue, y: SSAValue) -> SSAValue:
        return self.b.fsub(x, y)

    def mul(self, x: SSAValue, y: SSAValue) -> SSAValue:
        return self.b.fmul(x, y)

    def div(self, x: SSAValue, y: SSAValue) -> SSAValue:
        return self.b.fdiv(x, y)

    def max(self, x: SSAValue, y: SSAValue) -> SSAValue:
        return self.b.fmax(x, y)

    def min(self, x: SSAValue, y: SSAValue) -> SSAValue:
        return self.b.fmin(x, y)

    def sqrt(self, x: SSAValue) -> SSAValue:
        return self.b.emit(llvm.FSqrtOp(x))

    def exp(self, x: SSAValue) -> SSAValue:
        return math_approx.exp(self.b, x)

    def log(self, x: SSAValue) -> SSAValue:
        return math_approx.log(self.b, x)

    def pow(self, x: SSAValue, y: SSAValue) -> SSAValue:
        return math_approx.general_pow(self.b, x, y)

    def function(self, name: str, x: SSAValue) -> SSAValue:
        """One of math_approx's functions of one argument by name ("floor", "sin", "erf", ...)."""
        return getattr(math_approx, name)(self.b, x)

    def clamp(self, x: SSAValue, activation: str) -> SSAValue:
        """x clamped as the `relu` or `clip` (clip_min, clip_max) of the instruction."""
        return clamp_f32(self.b, x, clamp_interval(self.op, activation))

    def unit_clamp(self, x: SSAValue) -> SSAValue:
        return self.min(self.max(x, self.f32(0.0)), self.f32(1.0))

    def negative_scaled(self, x: SSAValue, scaled: SSAValue) -> SSAValue:
        """x where x >= 0, else `scaled`."""
        return self.b.emit(llvm.SelectOp(self.b.emit(llvm.FCmpOp(x, self.f32(0.0), "oge")), x, scaled))

    def sigmoid(self, x: SSAValue) -> SSAValue:
        one = self.f32(1.0)
        return self.div(one, self.add(one, self.exp(self.sub(self.f32(0.0), x))))

    def tanh(self, x: SSAValue) -> SSAValue:
        """tanh(x) = 2 * sigmoid(2x) - 1."""
        return self.sub(self.mul(self.f32(2.0), self.sigmoid(self.add(x, x))), self.f32(1.0))

    def softplus(self, x: SSAValue) -> SSAValue:
        """log(1 + e^x), as x + log(1 + e^-x) for large x so that e^x cannot overflow."""
        positive = self.b.emit(llvm.FCmpOp(x, self.f32(0.0), "ogt"))
        small = self.log(self.add(self.f32(1.0), self.exp(x)))
        large = self.add(x, self.log(self.add(self.f32(1.0), self.exp(self.sub(self.f32(0.0), x)))))
        return self.b.emit(llvm.SelectOp(positive, large, small))


def emit_elementwise(b: KernelBuilder, op: glowll.ElementwiseOp, view: ViewOf) -> None:
    """The kind's `float_kernel` (from the glow op's facts) over every element, then the fused
    activation."""
    dest, sources = elementwise_views(op, view)
    facts = glow.elementwise_facts().get(op.kind.data)
    if facts is None or facts.float_kernel is None:
        raise NotImplementedError(f"glowll.elementwise \"{op.kind.data}\" has no float kernel")
    math, activation = FloatMath(b, op), clamp_interval(op, fused_activation(op))
    emit_strided_map(b, dest, sources, lambda v: clamp_f32(b, facts.float_kernel(math, *v), activation))


def emit_reduce(b: KernelBuilder, op: glowll.ReduceOp, view: ViewOf) -> None:
    """dest starts at the reduction's identity; every input element is folded into the dest
    element it projects to (dest seen with stride 0 on the reduced axes); mean divides last."""
    dest, src = view(op.dest), view(op.input)
    kind, axes = op.kind.data, set(op.axes.get_values())
    start = {"sum": 0.0, "mean": 0.0, "max": -np.inf, "min": np.inf, "prod": 1.0}[kind]
    emit_strided_map(b, dest, [], lambda v: b.f32(start))
    projected = dest.reshaped(src.shape, [0 if d in axes else s for d, s in enumerate(dest.strides)])
    combine = {"sum": b.fadd, "mean": b.fadd, "max": b.fmax, "min": b.fmin, "prod": b.fmul}[kind]
    emit_strided_map(b, projected, [projected, src], lambda v: combine(v[0], v[1]))
    if kind == "mean":
        scale = b.f32(1.0 / int(np.prod([src.shape[a] for a in axes])))
        emit_strided_map(b, dest, [dest], lambda v: b.fmul(v[0], scale))


def emit_copy(b: KernelBuilder, op: glowll.CopyOp, view: ViewOf) -> None:
    dest, src = view(op.dest), view(op.input)
    size = int(np.prod(dest.shape))
    emit_strided_map(b, dest.reshaped((size,), (1,)), [src.reshaped((size,), (1,))],
                     lambda v: v[0])


def emit_initialize_state(b: KernelBuilder, op: glowll.InitializeStateOp, view: ViewOf) -> None:
    """dest = initial (or fill) unless the ready word holds `glowll.STATE_READY`."""
    dest, ready = view(op.dest), view(op.ready)
    size = int(np.prod(dest.shape))
    flat = dest.reshaped((size,), (1,))
    with b.when(b.int_compare("ne", b.load(ready, [0]), b.integer(glowll.STATE_READY))):
        if op.initial is not None:
            emit_strided_map(b, flat, [view(op.initial).reshaped((size,), (1,))], lambda v: v[0])
        else:
            fill = op.fill.value.data
            value = b.f32(fill) if dest.element_type == f32 else b.integer(int(fill), dest.element_type)
            emit_strided_map(b, flat, [], lambda v: value)


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
        fill_row(b, row(dest, n, c, y), width, lambda x: zero)
        first = b.max(b.sub(c, (size - 1) // 2), 0)
        last = b.min(b.add(c, size // 2 + 1), channels)
        with b.loop(first, last) as neighbour, b.loop(0, width) as x:
            value = b.load(src, [n, neighbour.index, y, x.index])
            total = b.fadd(b.load(dest, [n, c, y, x.index]), b.fmul(value, value))
            b.store(total, dest, [n, c, y, x.index])

        def normalize(x: Index) -> SSAValue:
            scale = b.fadd(b.f32(op.bias.value.data), b.fmul(b.f32(alpha), b.load(dest, [n, c, y, x])))
            return b.fmul(b.load(src, [n, c, y, x]), math_approx.pow(b, scale, b.f32(-op.beta.value.data)))

        fill_row(b, row(dest, n, c, y), width, normalize)


def emit_resample(b: KernelBuilder, op: glowll.ResampleOp, view: ViewOf,
                  weighted_sum: Callable[[list[tuple[SSAValue, SSAValue]]], SSAValue] | None = None) -> None:
    """Per output position along the axis: its taps and weights, then a weighted sum of
    input rows over the contiguous inner dimensions: `weighted_sum([(weight, tap value),
    ...])` gives the stored value (default: the f32 sum of products)."""
    dest, src, taps, weights = view(op.dest), view(op.input), view(op.taps), view(op.weights)
    axis = op.axis.value.data
    outer, inner = int(np.prod(dest.shape[:axis])), int(np.prod(dest.shape[axis + 1:]))
    out_size, in_size = dest.shape[axis], src.shape[axis]
    dest = dest.reshaped((outer, out_size, inner), (out_size * inner, inner, 1))
    src = src.reshaped((outer, in_size, inner), (in_size * inner, inner, 1))

    def float_sum(terms: list[tuple[SSAValue, SSAValue]]) -> SSAValue:
        total = b.fmul(*terms[0])
        for factor, value in terms[1:]:
            total = b.fadd(total, b.fmul(factor, value))
        return total

    weighted_sum = weighted_sum or float_sum
    with b.loops([outer, out_size]) as (o, j):
        rows = [b.as_index(b.load(taps, [j, t])) for t in range(taps.shape[1])]
        factors = [b.load(weights, [j, t]) for t in range(weights.shape[1])]
        with b.loop(0, inner) as i:
            terms = [(factor, b.load(src, [o, row, i.index])) for row, factor in zip(rows, factors)]
            b.store(weighted_sum(terms), dest, [o, j, i.index])


KERNELS: dict[type, Callable[[KernelBuilder, object, ViewOf], None]] = {
    glowll.InitializeStateOp: emit_initialize_state,
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
