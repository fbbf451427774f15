"""Float to int8 quantization by a multiply, without a division an element
(`microkernel = "reciprocal-quantize"`: `glowll-select-arm-dsp-kernels` on cores with the DSP
extension and no Helium).

Glow's quantize is `nearbyint(f32(f32(x / scale) + offset))`, clamped (`quantized_kernels.
_quantize_float`): a `VDIV.F32` an element, 14 cycles on the Cortex-M4 and M7, the most of
the 19 the model's input quantize took on the M7. This kernel computes the same level from
the reciprocal:

* `fixed = (x * r + offset) * 2^10` rounded to an integer, in one float add: adding
  `offset + 1.5 * 2^13` to `x * r` (r = 1 / scale in f32) leaves the sum rounded to 2^-10 in
  the low mantissa bits (`math_approx.nearest_integer`'s way, ten fraction bits kept), and
  the bits less those of 1.5 * 2^13, saturated, are `fixed`: its level is `(fixed + 2^9) >> 10`.
* That is the reference's level wherever `fixed` is not within 2 of a half level (`fixed`
  mod 1024 outside 510..514): where |x / scale| < 2^12, x * r is within 2^-11 of x / scale
  (r and the product each within 2^-24 relative), the rounding to 2^-10 adds 2^-11, and the
  reference's own two roundings (the quotient, then the sum of at most 2^13) at most 2^-12
  each, so `fixed / 1024` is within 1.5 / 1024 of the reference's sum, and a sum at least
  3 / 1024 from every half level rounds the same way. Beyond 2^12 both sums are far past
  the int8 range and clamp to the same bound (`fixed` grows with x: the float's bits do,
  and a negative sum's bits saturate). Ties and the sums near them (some 0.5% of inputs)
  are quantized again the reference's way, dividing; NaN keeps its sign's bound, as the
  generic kernel's.

Four elements at a time, their levels stored, then the four quantized again where any is
near a half level (2% of blocks): no branch between the four, whose float multiply-adds
and moves to integer registers interleave (a branch after each element left them in one
chain of latencies: 18 cycles an element on the M7, about the division's).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import f32, i32
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import VerifyException

from glowmlir.dialects import glowll
from glowmlir.dialects.quant import UniformQuantizedType
from glowmlir.lowering.kernel_builder import KernelBuilder
from glowmlir.lowering.loop_skeletons import ViewOf, elementwise_views, merge_dimensions

FRACTION_BITS = 10
"""The fraction bits of `fixed`."""

GRID_MAGIC = 1.5 * 2 ** (23 - FRACTION_BITS)
"""Adding it to a float of magnitude below 2^12 rounds it to 2^-FRACTION_BITS, ties to even."""

UNFUSED = llvm.FastMathAttr(None)

BLOCK = 4
"""Elements quantized together, a block quantized again by dividing if any is near a half level."""

NEAR_HALF = 2
"""`fixed` within this of a half level (in 2^-FRACTION_BITS) is quantized again, dividing."""


def reciprocal(scale: float) -> float:
    """1 / scale as the f32 the kernel multiplies by."""
    return float(np.float32(1.0 / float(np.float32(scale))))


def estimated_levels(x: np.ndarray, scale: float, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's numbers in numpy on f32 `x`: (its level before the clamp, whether it
    quantizes the element again), for the tests."""
    x = np.asarray(x, np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        total = (x * np.float32(reciprocal(scale))) + np.float32(offset + GRID_MAGIC)
    bits = total.view(np.int32).astype(np.int64) - int(np.float32(GRID_MAGIC).view(np.int32))
    fixed = np.clip(bits, -2**31, 2**31 - 1)
    rare = ((fixed - (1 << (FRACTION_BITS - 1)) + NEAR_HALF) & ((1 << FRACTION_BITS) - 1)) <= 2 * NEAR_HALF
    return (fixed + (1 << (FRACTION_BITS - 1))) >> FRACTION_BITS, rare


def verify_reciprocal_quantize(op) -> None:
    if not (isinstance(op, glowll.ElementwiseOp) and op.kind.data == "quantize"
            and op.inputs[0].type.element_type == f32
            and isinstance(op.dest.type.element_type, UniformQuantizedType)
            and op.dest.type.element_type.bitwidth == 8):
        raise VerifyException(f"{op.name}: the reciprocal-quantize microkernel takes a quantize of f32 to int8")


def emit_elementwise(b: KernelBuilder, op: glowll.ElementwiseOp, view: ViewOf) -> None:
    """A float to int8 quantize (see the module doc)."""
    from glowmlir.lowering.quantized_kernels import _quantize_float  # the module that picks this one

    out_type: UniformQuantizedType = op.dest.type.element_type
    low, high = out_type.value_range
    dest, sources = elementwise_views(op, view)
    shape, (dest, source) = merge_dimensions(dest, sources)
    magic_bits = b.integer(int(np.float32(GRID_MAGIC).view(np.int32)))
    half, mask = 1 << (FRACTION_BITS - 1), (1 << FRACTION_BITS) - 1
    reciprocal_of_scale, shifted_offset = b.f32(reciprocal(out_type.scale)), b.f32(out_type.offset + GRID_MAGIC)
    block = BLOCK if shape[-1] % BLOCK == 0 else 1

    def store(level: SSAValue, indices: list) -> None:
        b.store(b.truncate(b.clamp(level, low, high), dest.element_type), dest, indices)

    with b.loops([*shape[:-1], shape[-1] // block]) as outer:
        elements = [[*outer[:-1], b.add(b.mul(outer[-1], block), j)] for j in range(block)]
        near = None
        for indices in elements:  # no branch between them: their multiplies and moves interleave
            # two roundings, as `estimated_levels` (no fused multiply-add: its numbers are as good)
            total = b.fadd(b.fmul(b.load(source, indices), reciprocal_of_scale, UNFUSED), shifted_offset, UNFUSED)
            fixed = b.emit(llvm.CallIntrinsicOp("llvm.ssub.sat.i32", [b.emit(llvm.BitcastOp(total, i32)),
                                                                      magic_bits], [i32]))
            store(b.shift_right(b.int_add(fixed, half), FRACTION_BITS), indices)
            near_half = b.int_compare("ule", b.int_and(b.int_add(b.int_sub(fixed, half), NEAR_HALF), mask),
                                      2 * NEAR_HALF)
            near = near_half if near is None else b.int_or(near, near_half)
        with b.when(near):  # rare: the block quantized again the reference's way
            for indices in elements:
                store(_quantize_float(b, b.load(source, indices), out_type), indices)
