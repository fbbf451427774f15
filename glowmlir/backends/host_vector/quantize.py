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
(another run).

With `reciprocal` (`#glowll.microkernel<"vector-quantize-int8", {reciprocal = r : f32}>`: AVX2
with FMA3, `glowll-select-vector-columns` on a scale `reciprocal_division` proves) the divider
is the bound (a `vdivps` of 8 singles every ~3.5 cycles on Zen 3), so of each block's four
vectors two are divided and two take the reciprocal and two FMAs (Markstein's correctly
rounded quotient, `quantization.reciprocal_division`), the divider and the FMA pipes
working side by side (`halved_levels`); x is clamped above only (NaN, -infinity and the
quotients below -2^16 convert to INT_MIN or below -128 by `vcvtps2dq`, defined on every
single, and saturate to -128 as Glow's level), and the 32 levels are narrowed by
`int8_depthwise.packed_bytes` (two packs and one `vpermd`, not LLVM's three `vpermq`s):
the PP-OCR-cls-style input 6.2-6.7 -> 4.0 µs at load 4 (a float Relu of it 3.6;
docs/quantization.md, "Stop 57")."""

from __future__ import annotations

import math

from xdsl.dialects import llvm
from xdsl.dialects.builtin import FloatAttr, VectorType, f32, i32
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import VerifyException

from glowmlir.dialects import glowll
from glowmlir.dialects.quant import UniformQuantizedType
from glowmlir.lowering.kernel_builder import KernelBuilder
from glowmlir.lowering.loop_skeletons import ViewOf, elementwise_views, emit_strided_map, merge_dimensions
from glowmlir.lowering.vector_columns import join, load_vector, store_vector
from glowmlir.quantization.reciprocal_division import ReciprocalDivision, reciprocal_division

BLOCK = 32
"""Levels quantized a step: four AVX2 vectors of singles, one of bytes."""
LANES = 8
"""Singles a vector of `halved_levels` (AVX2)."""


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


def proved_division(op) -> ReciprocalDivision | None:
    """The division by a quantize's scale by its reciprocal, where `reciprocal_division` proves it."""
    return reciprocal_division(op.dest.type.element_type.scale) if takes_vector_quantize(op) else None


def verify_vector_quantize(op) -> None:
    if not takes_vector_quantize(op):
        raise VerifyException(f"{op.name}: vector-quantize-int8 takes a quantize of f32 to per-tensor int8 "
                              "of a positive, finite clamp bound")
    reciprocal = op.microkernel.parameter("reciprocal")
    if reciprocal is None:
        return
    division = proved_division(op)
    if (not isinstance(reciprocal, FloatAttr) or reciprocal.type != f32 or division is None
            or reciprocal.value.data != division.reciprocal):
        raise VerifyException(f"{op.name}: vector-quantize-int8's reciprocal is the f32 RN(1 / scale) that "
                              "`reciprocal_division` proves for the quantize's scale")


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
    division = proved_division(op) if op.microkernel.parameter("reciprocal") is not None else None
    with b.loops([blocks]) as (block,):
        at = [b.mul(block, BLOCK)]
        if division is not None:
            store_vector(b, halved_levels(b, source, at[0], out_type, division), dest, at)
        else:
            levels = b.clamp(quantize_levels(b, load_vector(b, source, at, BLOCK), out_type), low, high)
            store_vector(b, b.truncate(levels, VectorType(dest.element_type, [BLOCK])), dest, at)
    if shape[0] % BLOCK:
        with b.loop(blocks * BLOCK, shape[0]) as rest:
            b.store(one(b.load(source, [rest.index])), dest, [rest.index])


def halved_levels(b: KernelBuilder, source, start, out_type: UniformQuantizedType,
                  division: ReciprocalDivision) -> SSAValue:
    """The `BLOCK` int8 levels of `source` from `start` (see the module doc): each vector of
    `LANES` singles clamped above to RN(2^16 scale) (`quantize_bound`; NaN passes), divided
    by the scale (the even vectors, `vdivps`) or by its reciprocal and two FMAs (the odd
    ones, `quantized_kernels.reciprocal_quotient`), the offset added, converted by
    `vcvtps2dq` (`llvm.x86.avx.cvt.ps2dq.256`: INT_MIN for NaN and beyond int32, where
    `fptosi` would be poison) and narrowed with saturation (`int8_depthwise.packed_bytes`)."""
    from glowmlir.backends.host_vector.int8_depthwise import packed_bytes
    from glowmlir.lowering.quantized_kernels import _quantized_sum, quantize_bound

    singles, levels_type = VectorType(f32, [LANES]), VectorType(i32, [LANES])
    high = b.splat(b.f32(quantize_bound(out_type)), singles)
    levels = []
    for k in range(BLOCK // LANES):
        x = load_vector(b, source, [b.add(start, k * LANES)], LANES)
        x = b.emit(llvm.SelectOp(b.emit(llvm.FCmpOp(x, high, "ogt")), high, x))
        total = _quantized_sum(b, x, out_type, division if k % 2 else None)
        levels.append(b.emit(llvm.CallIntrinsicOp("llvm.x86.avx.cvt.ps2dq.256", [total], [levels_type])))
    return packed_bytes(b, join(b, levels))
