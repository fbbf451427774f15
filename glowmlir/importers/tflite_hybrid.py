"""The input quantization of TFLite's hybrid kernels, as glow ops (`-tflite-hybrid-inputs=quantized`).

A hybrid CONV_2D, DEPTHWISE_CONV_2D or FULLY_CONNECTED (int8 weights, float activations) in
TFLite quantizes its float input to int8 as it runs, one scale per batch (per row of a
FULLY_CONNECTED), then multiplies integers (tensor_utils.cc):

    symmetric   SymmetricQuantizeFloats (per-tensor CONV_2D; FULLY_CONNECTED unless its
                `asymmetric_quantize_inputs`): m = max |x|, q = round(x x 127 / m),
                x' = q x m / 127;
    asymmetric  AsymmetricQuantizeFloats (the per-channel CONV_2D and DEPTHWISE_CONV_2D):
                lo = min(min x, 0), hi = max(max x, 0), s = (hi - lo) / 255,
                z = round(clamp(-128 - lo / s, -128, 127)), q = clamp(round(z + x / s), -128, 127),
                x' = (q - z) x s,

rounding half away from zero (`TfLiteRound`). The integer products of q with the weights'
levels, scaled back, are the float products of x' with the dequantized weights: the layer on
x' gives the interpreter's hybrid result up to float rounding. `quantized_like_hybrid_kernels`
builds x' from x with glow ops (a reduction and a few elementwise ops per layer).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.ir import Operation, SSAValue

from glowmlir.dialects import glow
from glowmlir.dialects.weights import dense_from_array
from glowmlir.names import UniqueNames

TINY = float(np.finfo(np.float32).tiny)
"""What a zero extent is raised to before dividing by it (an all-zero input stays zero)."""


def quantized_like_hybrid_kernels(add: Callable[[Operation], SSAValue], names: UniqueNames, x: SSAValue,
                                  asymmetric: bool, scalars: dict[tuple[float, int], SSAValue]) -> SSAValue:
    """`x` quantized per batch (its first dimension) and dequantized again, as TFLite's hybrid
    kernels quantize their input (module doc); `add` adds an op and gives its result, `names`
    names the scalar constants, `scalars` keeps them by (value, rank) for the next layers."""
    rank = len(glow.shape_of(x))
    axes = list(range(1, rank))

    def scalar(value: float) -> SSAValue:
        if (value, rank) not in scalars:
            scalars[value, rank] = add(glow.ConstantOp(names(f"hybrid_input_{value:g}"),
                                                       dense_from_array(np.full([1] * rank, value, np.float32))))
        return scalars[value, rank]

    def rounded(value: SSAValue) -> SSAValue:  # half away from zero
        half_up = add(glow.FloorOp(add(glow.AddOp(add(glow.AbsOp(value)), scalar(0.5)))))
        return add(glow.MulOp(add(glow.SignOp(value)), half_up))

    def reduced(value: SSAValue, kind: str) -> SSAValue:
        return add(glow.ReduceOp(value, kind, axes, keep_dims=True))

    if not asymmetric:
        extent = add(glow.MaxOp(reduced(add(glow.AbsOp(x)), "max"), scalar(TINY)))
        levels = rounded(add(glow.MulOp(x, add(glow.DivOp(scalar(127.0), extent)))))
        return add(glow.MulOp(levels, add(glow.DivOp(extent, scalar(127.0)))))
    low = add(glow.MinOp(reduced(x, "min"), scalar(0.0)))
    high = add(glow.MaxOp(reduced(x, "max"), scalar(0.0)))
    step = add(glow.MaxOp(add(glow.DivOp(add(glow.SubOp(high, low)), scalar(255.0))), scalar(TINY)))
    zero_point = rounded(add(glow.ClipOp(add(glow.SubOp(scalar(-128.0), add(glow.DivOp(low, step)))), -128.0, 127.0)))
    inverse = add(glow.DivOp(scalar(1.0), step))
    levels = add(glow.ClipOp(rounded(add(glow.AddOp(zero_point, add(glow.MulOp(x, inverse))))), -128.0, 127.0))
    return add(glow.MulOp(add(glow.SubOp(levels, zero_point)), step))
