"""Int8 Add and Sub with a proved float form (`vector_elementwise.add_float_form`, the op's
`float_add` property) 32 levels a step as bytes on targets with AVX2's packs, 16 on NEON (the
kernel's `shuffles` parameter, `BYTE_STEP_SHUFFLES`; `#glowll.microkernel<"vector-elementwise-int8",
{shuffles = "avx2"}>`, set by `select_kernels.MarkFloatStep`); every other op of the kernel is
`lowering.vector_elementwise`'s (`emit_elementwise`).

A ymm of 32 levels is read as 8 words, each level's byte moved to the top of its word by a
shift and a mask (`byte_quarters`: f32 of it is the level times 2^24 exactly, the scales
divided by 2^24: the same singles, bit for bit, `float_add_levels`' `unit`), the four results
packed by `vpackssdw`, `vpacksswb` and one in-lane `vpshufb` (`in_level_order`), no
`vpmovsxbd` (two shuffle uops a vector of 8 on Zen 3, the int32 lanes' bottleneck). Where the
target has FMA3 and it is proved, the form is the fused one (`FloatAdd.fused`:
rint(fma(q1, a, fma(q2, b, c))), two `vfmadd`, no multiply, add or compare). llvm-mca
(znver3) a 32 levels: 19 cycles on int32 lanes, 12 as bytes, 8.3 as bytes fused; the residual
Adds went from 1.04-1.21x float to 0.90-0.95x (docs/quantization.md, stop 57).

A Mul with a proved float step (`float_step`) takes the same 32 levels a step
(`float_step_bytes`): each half of 16 widened to int16 words less the zero point, the exact
product's low and high words (`vpmullw`, `vpmulhw`) interleaved into int32 lanes, the float
step, the packs (which undo the interleaving) and one `vpermq`: 37 instructions a step, not
46 on int32 lanes (docs/quantization.md, stop 58).

On AArch64 (`shuffles = "neon"`) both take 16 levels a step (`neon_levels`): on int32 lanes
as the generic kernel's, but rounded by `fcvtns` and narrowed by `sqxtn` (the residual Add
32 x 2 x 96: 21,936 -> 16,168 instructions under qemu-aarch64; docs/quantization.md, stop 65)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, VectorType, i16, i32
from xdsl.ir import SSAValue

from glowmlir.backends.host_vector.gate_products import emit_int16_gate
from glowmlir.backends.host_vector.int8_depthwise import neon_nearest_levels, neon_saturated_bytes, saturated_bytes
from glowmlir.dialects import glowll
from glowmlir.lowering import vector_elementwise
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.requantization import float_step_levels
from glowmlir.lowering.vector_columns import in_runs, load_vector, store_vector
from glowmlir.lowering.vector_elementwise import float_add_levels
from glowmlir.quantization.float_steps import INT8_LEVELS, FloatStep

PACKED_SHUFFLES = ("avx2", "avx512bw")
"""The byte shuffles (`backends.host_vector.target.byte_shuffles`) of targets with AVX2's
packs: there an Add's or Sub's float form, and a Mul's float step, take `BYTE_LANES` levels a step (the kernel's
`shuffles` parameter, `emit_byte_steps`)."""
BYTE_LANES = 32
"""Levels a step of `emit_byte_steps` on AVX2's packs: a ymm register of int8."""
NEON_LANES = 16
"""Levels a step of `emit_byte_steps` on NEON (`shuffles` "neon", `neon_levels`): a register of int8."""
BYTE_STEP_SHUFFLES = (*PACKED_SHUFFLES, "neon")
"""The byte shuffles whose targets take an Add's float form and a Mul's float step as bytes
(the kernel's `shuffles` parameter, set by `select_kernels.MarkFloatStep`)."""
HIGH_BYTE = 1 << 24
"""A level's unit with its byte at the top of an int32 word (`byte_quarters`)."""


def byte_quarters(b: KernelBuilder, levels: SSAValue) -> list[SSAValue]:
    """`BYTE_LANES` int8 levels as four `<8 x i32>` vectors, the p-th holding level 4k + p
    (the word k's byte p) times `HIGH_BYTE`: the byte moved to the top of its word by a shift
    left and a mask of the top byte (the last byte a mask, the first a shift), no widening
    shuffle; f32 of each is exact (8 significant bits)."""
    words = b.bitcast(levels, VectorType(i32, [BYTE_LANES // 4]))
    top = b.int_value(-HIGH_BYTE, words.type)
    quarters = []
    for byte in range(4):
        moved = words if byte == 3 else b.shift_left(words, b.int_value(24 - 8 * byte, words.type))
        quarters.append(moved if byte == 0 else b.int_and(moved, top))
    return quarters


def in_level_order(b: KernelBuilder, packed: SSAValue) -> SSAValue:
    """The bytes `saturated_bytes` makes of four `byte_quarters` results back in level order:
    in each 128-bit half byte 4p + k holds level 4k + p of the half, a 4 x 4 transpose (one
    in-lane `vpshufb`)."""
    order = [16 * half + 4 * (byte % 4) + byte // 4 for half in range(BYTE_LANES // 16) for byte in range(16)]
    return b.emit(llvm.ShuffleVectorOp(packed, packed, DenseArrayBase.from_list(i32, order), packed.type))


def float_add_bytes(b: KernelBuilder, op: glowll.ElementwiseOp) -> Callable[[list[SSAValue]], SSAValue]:
    """An Add's or Sub's `BYTE_LANES` levels of two vectors of bytes: each vector's
    `byte_quarters` through `float_add_levels` (in units of `HIGH_BYTE`), saturated to int8 by
    `saturated_bytes`, put back in order (`in_level_order`)."""
    level = float_add_levels(b, op, HIGH_BYTE)

    def levels(sources: list[SSAValue]) -> SSAValue:
        quarters = [level(x, y) for x, y in zip(*(byte_quarters(b, source) for source in sources), strict=True)]
        return in_level_order(b, saturated_bytes(b, quarters))
    return levels


def float_step_bytes(b: KernelBuilder, op: glowll.ElementwiseOp) -> Callable[[list[SSAValue]], SSAValue]:
    """A Mul's `BYTE_LANES` levels of two vectors of bytes by its `float_step`: each 16-level
    half widened to int16 (`vpmovsxbw`), less its zero point (|d| <= 255), the product's low
    and high words (`vpmullw`, `vpmulhw`) interleaved within 128-bit halves into int32
    products (`vpunpcklwd`, `vpunpckhwd`: lane i of half l the level 8l + i, then 8l + 4 + i),
    each through `float_step_levels`, saturated to int8 by `saturated_bytes` (whose packs
    undo the interleaving: half l holds levels 8l..8l+7 of the first 16, then of the second),
    the two middle 8-byte runs swapped (`vpermq`). 37 vector instructions for 32 levels, not
    46 on int32 lanes (`vpmovsxbd`, the zero points, `vpmulld` a vector of 8)."""
    first, second = (v.type.element_type for v in op.inputs)
    step = FloatStep.of(op.float_step)
    half, words = BYTE_LANES // 2, VectorType(i16, [BYTE_LANES // 2])
    quarter = VectorType(i32, [BYTE_LANES // 4])

    def centred(levels: SSAValue, at: int, offset: int) -> SSAValue:
        part = b.emit(llvm.ShuffleVectorOp(levels, levels, DenseArrayBase.from_list(i32, list(range(at, at + half))),
                                           VectorType(levels.type.element_type, [half])))
        return b.int_sub(b.sign_extend(part, words), b.int_value(offset, words), no_signed_wrap=True)

    def products(x: SSAValue, y: SSAValue) -> list[SSAValue]:
        low = b.int_mul(x, y)
        high = b.emit(llvm.CallIntrinsicOp("llvm.x86.avx2.pmulh.w", [x, y], [words]))
        return [b.bitcast(b.emit(llvm.ShuffleVectorOp(low, high, DenseArrayBase.from_list(i32, [
            8 * lane + 4 * upper + i + part * half for lane in (0, 1) for i in range(4) for part in (0, 1)]), words)),
            quarter) for upper in (0, 1)]

    def levels(sources: list[SSAValue]) -> SSAValue:
        x, y = sources
        quarters = [float_step_levels(b, product, step)
                    for at in (0, half) for product in products(centred(x, at, first.offset),
                                                                centred(y, at, second.offset))]
        packed = saturated_bytes(b, quarters)
        order = [8 * run + byte for run in (0, 2, 1, 3) for byte in range(8)]
        return b.emit(llvm.ShuffleVectorOp(packed, packed, DenseArrayBase.from_list(i32, order), packed.type))
    return levels


def neon_levels(b: KernelBuilder, op: glowll.ElementwiseOp) -> Callable[[list[SSAValue]], SSAValue] | None:
    """An op's `NEON_LANES` levels in order of two registers of bytes on NEON: an Add's or
    Sub's `float_add` on the bytes widened to int32 lanes (LLVM's `tbl` of each byte to the
    top of its word and `scvtf` by 2^-24), a Mul's `float_step` on the product of the levels
    less their zero points in int16 (`smull`, `smull2` into int32), each rounded and converted
    by one `fcvtns` (`int8_depthwise.neon_nearest_levels`) and saturated to int8 by `sqxtn`
    (`neon_saturated_bytes`), where the lanes' generic form rounds by `frintx` and `fcvtzs`
    and clamps both bounds in int32; None for any other op."""
    lanes = VectorType(i32, [NEON_LANES])
    if getattr(op, "float_add", None) is not None:
        level = float_add_levels(b, op, nearest=neon_nearest_levels)
        return lambda sources: neon_saturated_bytes(b, level(*(b.sign_extend(x, lanes) for x in sources)))
    if getattr(op, "float_step", None) is None:
        return None
    step = FloatStep.of(op.float_step)
    words = VectorType(i16, [NEON_LANES])

    def centred(levels: SSAValue, source: SSAValue) -> SSAValue:  # |d| <= 255: int16, then int32
        offset = b.int_value(source.type.element_type.offset, words)
        return b.sign_extend(b.int_sub(b.sign_extend(levels, words), offset, no_signed_wrap=True), lanes)

    def levels(sources: list[SSAValue]) -> SSAValue:
        centred_levels = [centred(x, source) for x, source in zip(sources, op.inputs, strict=True)]
        return neon_saturated_bytes(b, float_step_levels(b, b.int_mul(*centred_levels), step, neon_nearest_levels))
    return levels


def byte_levels(b: KernelBuilder, op: glowll.ElementwiseOp) -> Callable[[list[SSAValue]], SSAValue] | None:
    """The `BYTE_LANES` levels in order of an op's two vectors of bytes (before a clamp
    narrower than int8): an Add's or Sub's `float_add` (`float_add_bytes`), a Mul's
    `float_step` (`float_step_bytes`); None for any other op."""
    if getattr(op, "float_add", None) is not None:
        return float_add_bytes(b, op)
    if getattr(op, "float_step", None) is not None:
        return float_step_bytes(b, op)
    return None


def emit_byte_steps(b: KernelBuilder, levels: Callable[[list[SSAValue]], SSAValue], step: int, shape: list[int],
                    views: list[View], bounds: tuple[int, int]) -> bool:
    """An Add or Sub with a `float_add`, or a Mul with a `float_step`, on a target with AVX2's
    packs or NEON: the merged views (`emit_elementwise`'s) `step` levels a step (the last run
    masked; a broadcast source's level splat as bytes once a run), each step's two vectors of
    bytes through `levels` (`byte_levels`, `neon_levels`), clamped to `bounds` where the
    activation is narrower than int8, stored."""
    *outer, inner = shape
    bytes_type = VectorType(views[0].element_type, [step])

    def vector_at(indices: list[Index], broadcast: dict[int, SSAValue], first: Index, count: int) -> None:
        loaded = None if count == step else [lane < count for lane in range(step)]
        sources = [broadcast[i] if i in broadcast else load_vector(b, source, [*indices, first], step, loaded)
                   for i, source in enumerate(views[1:])]
        packed = levels(sources)
        if tuple(bounds) != INT8_LEVELS:
            packed = b.clamp(packed, *(b.int_value(bound, bytes_type) for bound in bounds))
        store_vector(b, packed, views[0], [*indices, first], loaded)

    with b.loops(outer) as indices:
        broadcast = {i: b.splat(b.load(source, [*indices, 0]), bytes_type)
                     for i, source in enumerate(views[1:]) if source.strides[-1] == 0}
        in_runs(b, inner, step, functools.partial(vector_at, list(indices), broadcast))
    return True


def emit_elementwise(b: KernelBuilder, op: glowll.ElementwiseOp, view) -> None:
    """`vector_elementwise.emit_elementwise`, its contiguous runs by `emit_byte_steps` where
    the kernel's `shuffles` are `PACKED_SHUFFLES` (`byte_levels`) or "neon" (`neon_levels`)
    and the op has levels of bytes there, by `gate_products.emit_int16_gate` where it has an
    `int16_gate` (and its gate is along the merged runs)."""
    shuffles = op.microkernel.parameter("shuffles") if op.microkernel is not None else None
    levels, step = None, 0
    if shuffles is not None and shuffles.data in PACKED_SHUFFLES:
        levels, step = byte_levels(b, op), BYTE_LANES
    elif shuffles is not None and shuffles.data == "neon":
        levels, step = neon_levels(b, op), NEON_LANES
    contiguous = functools.partial(emit_byte_steps, b, levels, step) if levels is not None else None
    if getattr(op, "int16_gate", None) is not None:
        contiguous = functools.partial(emit_int16_gate, b, op, view(op.gate_table))
    vector_elementwise.emit_elementwise(b, op, view, contiguous)
