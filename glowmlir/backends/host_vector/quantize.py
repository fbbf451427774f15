"""Float to int8 quantization without a division an element (`microkernel = "fma-quantize"`:
`glowll-select-vector-columns` on a target with fused multiply-adds).

Glow's quantize is `nearbyint(f32(f32(x / scale) + offset))`, clamped (`quantized_kernels.
_quantize_float`): on AVX2 a `vdivps` a vector of 8, the most of the step. Here x / scale is
`quantized_kernels.reciprocal_quotient`: a multiply by RN(1 / scale) and two FMAs, the
quotient the division rounds (Markstein's theorem, checked at compile time for the scale on
every significand: `quantization.reciprocal_division`), the rest as before. A scale the
check refuses keeps the generic kernel (`reciprocal_division` gives None: the pass does not
select this one). The levels are converted a vector at a time (`vcvtps2dq` on AVX2: the
clamped quotient is far inside int32) and `BLOCK` a step, so that LLVM narrows four vectors
of int32 levels to one of 32 bytes by two saturating packs (each vector of 8 narrowed alone
took an extract, two packs and a store of 8 bytes)."""

from __future__ import annotations

from xdsl.dialects.builtin import VectorType, f32
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import VerifyException

from glowmlir.dialects import glowll
from glowmlir.dialects.quant import UniformQuantizedType
from glowmlir.lowering.kernel_builder import KernelBuilder
from glowmlir.lowering.loop_skeletons import ViewOf, elementwise_views, emit_strided_map, merge_dimensions
from glowmlir.lowering.vector_columns import load_vector, store_vector
from glowmlir.quantization.reciprocal_division import ReciprocalDivision, reciprocal_division

BLOCK = 32
"""Elements quantized a step: four AVX2 vectors of singles, one of bytes."""


def division_of(op) -> ReciprocalDivision | None:
    """The proved division of a quantize of f32 to per-tensor int8, else None."""
    if not (isinstance(op, glowll.ElementwiseOp) and op.kind.data == "quantize"
            and op.inputs[0].type.element_type == f32):
        return None
    element = op.dest.type.element_type
    if not isinstance(element, UniformQuantizedType) or element.bitwidth != 8 or element.per_channel:
        return None
    return reciprocal_division(element.scale)


def verify_fma_quantize(op) -> None:
    if division_of(op) is None:
        raise VerifyException(f"{op.name}: the fma-quantize microkernel takes a quantize of f32 to per-tensor int8 "
                              "whose scale `reciprocal_division` proves")


def emit_elementwise(b: KernelBuilder, op: glowll.ElementwiseOp, view: ViewOf) -> None:
    """A float to int8 quantize (see the module doc): `BLOCK` elements a step where the two
    buffers are contiguous, the rest one by one."""
    from glowmlir.lowering.quantized_kernels import _quantize_float  # that module imports the emitters

    out_type: UniformQuantizedType = op.dest.type.element_type
    low, high = out_type.value_range
    division = division_of(op)
    dest, sources = elementwise_views(op, view)

    def level(x: SSAValue, storage) -> SSAValue:
        return b.truncate(b.clamp(_quantize_float(b, x, out_type, division), low, high), storage)

    shape, (dest, source) = merge_dimensions(dest, sources)
    if len(shape) != 1 or dest.strides[-1] != 1 or source.strides[-1] != 1:
        emit_strided_map(b, dest, [source], lambda v: level(v[0], dest.element_type))
        return
    blocks = shape[0] // BLOCK
    with b.loops([blocks]) as (block,):
        at = [b.mul(block, BLOCK)]
        store_vector(b, level(load_vector(b, source, at, BLOCK), VectorType(dest.element_type, [BLOCK])), dest, at)
    if shape[0] % BLOCK:
        with b.loop(blocks * BLOCK, shape[0]) as rest:
            b.store(level(b.load(source, [rest.index]), dest.element_type), dest, [rest.index])
