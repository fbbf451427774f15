"""`relu` and `clip`: the one definition of the clamp they apply, for every kind of kernel.

`relu` clamps to [0, +inf) and `clip` to [clip_min, clip_max]. An instruction applies one
either as its elementwise `kind` or fused, as its `activation` property (convolution, fully
connected, an elementwise add). Float and integer kernels clamp with their own maximum and
minimum (`clamp`); quantized kernels narrow the clamp range of their levels to the
interval (`quantization.rescaling.activation_bounds`).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Operation, SSAValue

Interval = tuple[float | None, float | None]
"""[low, high] in real numbers; None is an open side."""

UNBOUNDED: Interval = (None, None)

ACTIVATIONS = ("relu", "clip")


def clamp_interval(op: Operation, activation: str | None) -> Interval:
    """The interval `activation` (relu, clip or None) of `op` clamps to; clip's bounds are op's."""
    if activation is None:
        return UNBOUNDED
    if activation == "relu":
        return 0.0, None
    if activation == "clip":
        return op.clip_min.value.data, op.clip_max.value.data
    raise ValueError(f"{op.name}: unknown activation \"{activation}\"")


def fused_activation(op: Operation) -> str | None:
    """The `activation` property of op: relu, clip or None."""
    activation = op.properties.get("activation")
    return activation.data if activation is not None else None


def activation_of(op: Operation) -> str | None:
    """The relu or clip op applies to its result: its fused activation, else its elementwise kind."""
    kind = op.properties.get("kind")
    if fused_activation(op) is not None or kind is None:
        return fused_activation(op)
    return kind.data if kind.data in ACTIVATIONS else None


def clamp(value: SSAValue, interval: Interval, maximum: Callable, minimum: Callable,
          constant: Callable[[float], SSAValue]) -> SSAValue:
    """`min(max(value, low), high)`, skipping an open side, with the arithmetic's own
    `maximum(a, b)`, `minimum(a, b)` and `constant(real)`."""
    low, high = interval
    if low is not None:
        value = maximum(value, constant(low))
    if high is not None:
        value = minimum(value, constant(high))
    return value
