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
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import ViewOf, elementwise_views, emit_strided_map, merge_dimensions
from glowmlir.lowering.vector_columns import join, load_vector, store_vector
from glowmlir.quantization.reciprocal_division import ReciprocalDivision, reciprocal_division

BLOCK = 32
"""Levels quantized a step: four AVX2 vectors of singles, one of bytes."""
LANES = 8
"""Singles a vector of `halved_levels` (AVX2)."""


def takes_quantized_levels(element) -> bool:
    """Levels `halved_levels` and `quantize_levels` quantize to: per-tensor int8 of a positive,
    finite clamp bound (`quantize_bound`; a scale of 0, or beyond 2^111, keeps the generic kernel)."""
    from glowmlir.lowering.quantized_kernels import quantize_bound

    return (isinstance(element, UniformQuantizedType) and element.bitwidth == 8 and not element.per_channel
            and 0 < quantize_bound(element) < math.inf)


def takes_vector_quantize(op) -> bool:
    """A quantize of f32 to per-tensor int8 levels `takes_quantized_levels`."""
    return (isinstance(op, glowll.ElementwiseOp) and op.kind.data == "quantize"
            and op.inputs[0].type.element_type == f32 and takes_quantized_levels(op.dest.type.element_type))


def proved_division(op) -> ReciprocalDivision | None:
    """The division by a quantize's scale by its reciprocal, where `reciprocal_division` proves it."""
    return reciprocal_division(op.dest.type.element_type.scale) if takes_vector_quantize(op) else None


def verify_reciprocal(op, levels: UniformQuantizedType) -> None:
    """A kernel's `reciprocal` parameter, where set, is the one `reciprocal_division` proves
    for the scale of the `levels` it quantizes to."""
    reciprocal = op.microkernel.parameter("reciprocal")
    if reciprocal is None:
        return
    division = reciprocal_division(levels.scale)
    if (not isinstance(reciprocal, FloatAttr) or reciprocal.type != f32 or division is None
            or reciprocal.value.data != division.reciprocal):
        raise VerifyException(f"{op.name}: {op.microkernel.data}'s reciprocal is the f32 RN(1 / scale) that "
                              "`reciprocal_division` proves for the quantize's scale")


def verify_vector_quantize(op) -> None:
    if not takes_vector_quantize(op):
        raise VerifyException(f"{op.name}: vector-quantize-int8 takes a quantize of f32 to per-tensor int8 "
                              "of a positive, finite clamp bound")
    verify_reciprocal(op, op.dest.type.element_type)


def kernel_division(op, levels: UniformQuantizedType) -> ReciprocalDivision | None:
    """The reciprocal division a kernel quantizing to `levels` was given (its `reciprocal`), or None."""
    return reciprocal_division(levels.scale) if op.microkernel.parameter("reciprocal") is not None else None


def emit_elementwise(b: KernelBuilder, op: glowll.ElementwiseOp, view: ViewOf) -> None:
    """A float to int8 quantize (see the module doc): `BLOCK` levels a step where the two
    buffers are contiguous (`quantize_run`), else one by one (the generic kernel's arithmetic)."""
    out_type: UniformQuantizedType = op.dest.type.element_type
    dest, sources = elementwise_views(op, view)
    shape, (dest, source) = merge_dimensions(dest, sources)
    if len(shape) != 1 or dest.strides[-1] != 1 or source.strides[-1] != 1:
        emit_strided_map(b, dest, [source], lambda v: quantized_level(b, v[0], out_type, dest.element_type))
        return
    quantize_run(b, dest, [], source, [], shape[0], out_type, kernel_division(op, out_type))


def quantized_level(b: KernelBuilder, x: SSAValue, out_type: UniformQuantizedType, storage) -> SSAValue:
    """One single's level (the generic kernel's arithmetic), of the `storage` type."""
    from glowmlir.lowering.quantized_kernels import _quantize_float  # it imports the emitters

    low, high = out_type.value_range
    return b.truncate(b.clamp(_quantize_float(b, x, out_type), low, high), storage)


def quantize_run(b: KernelBuilder, dest: View, dest_at: list[Index], source: View, source_at: list[Index],
                 length: int, out_type: UniformQuantizedType, division: ReciprocalDivision | None) -> None:
    """The levels of `length` consecutive singles of `source` from `source_at` (its indices but
    the last, which runs from 0) into `dest` from `dest_at`: `BLOCK` a step (`halved_levels`
    with `division`, else `quantize_levels`' vectors), the rest one by one."""
    from glowmlir.lowering.quantized_kernels import quantize_levels

    low, high = out_type.value_range
    blocks = length // BLOCK
    with b.loops([blocks]) as (block,):
        start = b.mul(block, BLOCK)
        if division is not None:
            levels = halved_levels(b, source, [*source_at, start], out_type, division)
        else:
            levels = b.truncate(b.clamp(quantize_levels(b, load_vector(b, source, [*source_at, start], BLOCK),
                                                        out_type), low, high),
                                VectorType(dest.element_type, [BLOCK]))
        store_vector(b, levels, dest, [*dest_at, start])
    if length % BLOCK:
        with b.loop(blocks * BLOCK, length) as rest:
            level = quantized_level(b, b.load(source, [*source_at, rest.index]), out_type, dest.element_type)
            b.store(level, dest, [*dest_at, rest.index])


def halved_levels(b: KernelBuilder, source: View, at: list[Index], out_type: UniformQuantizedType,
                  division: ReciprocalDivision) -> SSAValue:
    """The `BLOCK` int8 levels of `source` from `at` (its last index the first single's; see
    the module doc): each vector of `LANES` singles clamped above to RN(2^16 scale)
    (`quantize_bound`; NaN passes), divided by the scale (the even vectors, `vdivps`) or by
    its reciprocal and two FMAs (the odd ones, `quantized_kernels.reciprocal_quotient`), the offset added, converted by
    `vcvtps2dq` (`llvm.x86.avx.cvt.ps2dq.256`: INT_MIN for NaN and beyond int32, where
    `fptosi` would be poison) and narrowed with saturation (`int8_depthwise.packed_bytes`)."""
    from glowmlir.backends.host_vector.int8_depthwise import packed_bytes
    from glowmlir.lowering.quantized_kernels import _quantized_sum, quantize_bound

    singles, levels_type = VectorType(f32, [LANES]), VectorType(i32, [LANES])
    high = b.splat(b.f32(quantize_bound(out_type)), singles)
    levels = []
    for k in range(BLOCK // LANES):
        x = load_vector(b, source, [*at[:-1], b.add(at[-1], k * LANES)], LANES)
        x = b.emit(llvm.SelectOp(b.emit(llvm.FCmpOp(x, high, "ogt")), high, x))
        total = _quantized_sum(b, x, out_type, division if k % 2 else None)
        levels.append(b.emit(llvm.CallIntrinsicOp("llvm.x86.avx.cvt.ps2dq.256", [total], [levels_type])))
    return packed_bytes(b, join(b, levels))
