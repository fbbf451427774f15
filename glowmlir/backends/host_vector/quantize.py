"""Float to int8 quantization on a host's vector unit (`microkernel = "vector-quantize-int8"`,
`glowll-select-vector-columns`): `BLOCK` levels a step.

Glow's quantize is `nearbyint(f32(f32(x / scale) + offset))`, clamped to the int8 range
(`quantized_kernels._quantize_float`). The generic kernel, vectorized by LLVM 8 floats a step,
rounds and converts by adding 1.5 * 2^23 and a saturating subtraction of its bits (on AVX2 an
add, a compare and a blend), and narrows each vector of 8 levels alone (an extract, two packs,
a store of 8 bytes). Here x is clamped first so that the sum is far inside int32
(`quantized_kernels.quantize_levels`: the same levels), rounded and converted by one
`vcvtps2dq`, and four vectors narrowed to one of 32 bytes by two saturating packs and a
permute: on the PP-OCR-cls-style net's 3x48x192 input (AMD Zen 3, A/B in one run) 5.79 µs ->
4.99 µs. The division stays: x r by a reciprocal and two FMAs correcting it (Markstein's
theorem, proved at compile time) cost 5.21 µs against 5.02 with the division in the same loop
(another run): a `vdivps` a vector of 8 is not the bound here (docs/quantization.md)."""

from __future__ import annotations

import math

from xdsl.dialects.builtin import VectorType, f32
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import VerifyException

from glowmlir.dialects import glowll
from glowmlir.dialects.quant import UniformQuantizedType
from glowmlir.lowering.kernel_builder import KernelBuilder
from glowmlir.lowering.loop_skeletons import ViewOf, elementwise_views, emit_strided_map, merge_dimensions
from glowmlir.lowering.vector_columns import load_vector, store_vector

BLOCK = 32
"""Levels quantized a step: four AVX2 vectors of singles, one of bytes."""


def takes_vector_quantize(op) -> bool:
    """A quantize of f32 to per-tensor int8 whose clamp bound (`quantize_bound`) is positive
    and finite (a scale of 0, or beyond 2^111, keeps the generic kernel)."""
    from glowmlir.lowering.quantized_kernels import quantize_bound

    if not (isinstance(op, glowll.ElementwiseOp) and op.kind.data == "quantize"
            and op.inputs[0].type.element_type == f32):
        return False
    element = op.dest.type.element_type
    return (isinstance(element, UniformQuantizedType) and element.bitwidth == 8 and not element.per_channel
            and 0 < quantize_bound(element) < math.inf)


def verify_vector_quantize(op) -> None:
    if not takes_vector_quantize(op):
        raise VerifyException(f"{op.name}: vector-quantize-int8 takes a quantize of f32 to per-tensor int8 "
                              "of a positive, finite clamp bound")


def emit_elementwise(b: KernelBuilder, op: glowll.ElementwiseOp, view: ViewOf) -> None:
    """A float to int8 quantize (see the module doc): `BLOCK` levels a step where the two
    buffers are contiguous, the rest one by one (the generic kernel's arithmetic)."""
    from glowmlir.lowering.quantized_kernels import _quantize_float, quantize_levels  # it imports the emitters

    out_type: UniformQuantizedType = op.dest.type.element_type
    low, high = out_type.value_range
    dest, sources = elementwise_views(op, view)

    def one(x: SSAValue) -> SSAValue:
        return b.truncate(b.clamp(_quantize_float(b, x, out_type), low, high), dest.element_type)

    shape, (dest, source) = merge_dimensions(dest, sources)
    if len(shape) != 1 or dest.strides[-1] != 1 or source.strides[-1] != 1:
        emit_strided_map(b, dest, [source], lambda v: one(v[0]))
        return
    blocks = shape[0] // BLOCK
    with b.loops([blocks]) as (block,):
        at = [b.mul(block, BLOCK)]
        levels = b.clamp(quantize_levels(b, load_vector(b, source, at, BLOCK), out_type), low, high)
        store_vector(b, b.truncate(levels, VectorType(dest.element_type, [BLOCK])), dest, at)
    if shape[0] % BLOCK:
        with b.loop(blocks * BLOCK, shape[0]) as rest:
            b.store(one(b.load(source, [rest.index])), dest, [rest.index])
