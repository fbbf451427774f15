"""Int8 Add, Sub and Mul on a vector unit's int32 lanes, broadcasting as the generic map does
(`microkernel = "vector-elementwise-int8"` on a host's vector unit, `"x86-avx512"` where the
AVX-512 VNNI kernels run): the views' dimensions merged, the innermost in vectors of
`LANES` levels (the last run masked), a source broadcast along it (stride 0: a
squeeze-and-excitation block's channel scale) one level in every lane, the generic kernel's
arithmetic (`quantized_kernels.binary_level`, each requantization its value's bound) on the
lanes, clamped and narrowed. Views whose innermost stride is another take the generic map,
level by level. 16 lanes: a zmm register of int32, two ymm, four xmm or NEON registers; LLVM
splits the vector to the target's width."""

from __future__ import annotations

import functools

from xdsl.dialects import llvm
from xdsl.dialects.builtin import VectorType, i32
from xdsl.ir import SSAValue

from glowmlir.dialects import glowll
from glowmlir.lowering import loop_skeletons
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.vector_columns import in_runs, load_vector, store_vector
from glowmlir.quantization.rescaling import activation_bounds

LANES = 16
"""Levels a step computes, as int32 lanes."""
VECTOR = VectorType(i32, [LANES])
KINDS = ("add", "sub", "mul")
"""The kinds the kernel takes (operands int8, of one shape or broadcast)."""


def emit_elementwise(b: KernelBuilder, op: glowll.ElementwiseOp, view) -> None:
    from glowmlir.lowering.quantized_kernels import binary_level  # (that module imports the emitters)

    dest, sources = loop_skeletons.elementwise_views(op, view)
    shape, views = loop_skeletons.merge_dimensions(dest, sources)
    level = binary_level(b, op)
    low, high = activation_bounds(op, op.dest.type.element_type)
    storage = dest.element_type
    if views[0].strides[-1] != 1 or any(v.strides[-1] not in (0, 1) for v in views[1:]):
        loop_skeletons.emit_strided_map(b, dest, sources, lambda v: b.truncate(
            b.clamp(level(*map(b.sign_extend, v)), low, high), storage))
        return
    *outer, inner = shape

    def levels(source: View, at: list[Index], loaded: list[bool] | None) -> SSAValue:
        if source.strides[-1] == 0:
            return b.splat(b.sign_extend(b.load(source, at)), VECTOR)
        return b.emit(llvm.SExtOp(load_vector(b, source, at, LANES, loaded), VECTOR))

    def vector_at(indices: list[Index], first: Index, count: int) -> None:
        loaded = None if count == LANES else [lane < count for lane in range(LANES)]
        value = level(*(levels(source, [*indices, first], loaded) for source in views[1:]))
        clamped = b.clamp(value, b.int_value(low, VECTOR), b.int_value(high, VECTOR))
        store_vector(b, b.truncate(clamped, VectorType(storage, [LANES])), views[0], [*indices, first], loaded)

    with b.loops(outer) as indices:
        in_runs(b, inner, LANES, functools.partial(vector_at, list(indices)))
