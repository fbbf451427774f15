"""Int32 lanes narrowed to int8 by a vector unit's saturating packs, in order.

A unit's packs (`vpackssdw`, `vpacksswb` on x86) narrow two vectors into one, saturating,
within each 128-bit lane; a backend names its own (AVX2's, AVX-512's) as the pair of LLVM
intrinsics this module calls, so the order of the lanes they leave, and the one permute that
puts them back, are written once.
"""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, VectorType, i8, i16, i32
from xdsl.ir import SSAValue

from glowmlir.lowering.kernel_builder import KernelBuilder

Packs = tuple[str, str]
"""The LLVM intrinsics of a unit's saturating packs: int32 to int16, int16 to int8."""


def saturated_bytes(b: KernelBuilder, quarters: list[SSAValue], packs: Packs) -> SSAValue:
    """Four int32 vectors saturated to int8 by `packs`, the first narrowing the first and
    second vector and the third and fourth, the second those two: in each 128-bit lane the
    lane's four lanes of the first vector, then the second's, the third's, the fourth's."""
    lanes = quarters[0].type.get_shape()[0]
    dwords, words = packs
    halves = [b.emit(llvm.CallIntrinsicOp(dwords, quarters[k:k + 2], [VectorType(i16, [2 * lanes])])) for k in (0, 2)]
    return b.emit(llvm.CallIntrinsicOp(words, halves, [VectorType(i8, [4 * lanes])]))


def ordered_bytes(b: KernelBuilder, quarters: list[SSAValue], packs: Packs) -> SSAValue:
    """Four int32 vectors (of 8 or 16 lanes) saturated to int8 by `packs` (`saturated_bytes`),
    then put in order, the first vector's lanes first, by one permute of the 4-byte runs
    (`vpermd`): three packs and a permute where narrowing each vector alone and joining them
    takes seven shuffles."""
    packed = saturated_bytes(b, quarters, packs)
    runs = quarters[0].type.get_shape()[0] // 4  # a vector's runs of 4 lanes, one a 128-bit lane
    order = [4 * (4 * (run % runs) + run // runs) + byte for run in range(4 * runs) for byte in range(4)]
    return b.emit(llvm.ShuffleVectorOp(packed, packed, DenseArrayBase.from_list(i32, order), packed.type))
