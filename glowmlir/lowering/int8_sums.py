"""Pieces of the int8 kernels of every backend: the levels they read as they are, and where a
FullyConnected's int32 sum starts when the selection pass folded the input offset into its bias
(`folded_input_offset`)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from glowmlir.dialects import glowll
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View, is_zero
from glowmlir.lowering.loop_skeletons import ArithmeticDomain


def level(b: KernelBuilder, view: View, indices: Sequence[Index]) -> SSAValue:
    """An int8 (int16) level as it is, widened to i32."""
    return b.sign_extend(b.load(view, indices))


def weight_offset_correction(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.FullyConnectedOp, src: View,
                              m: Index) -> SSAValue | None:
    """With the input offset folded, sum x * (w - w_offset) = sum x * w - w_offset * sum x:
    `w_offset * sum x` of input row m, once per row (None when there is nothing to subtract)."""
    if op.folded_input_offset is None or is_zero(domain.weight_offset):
        return None
    with b.loop(0, src.shape[1], carried=[b.integer(0)]) as k:
        k.next(b.int_add(k.carried[0], level(b, src, [m, k.index])))
    return b.int_mul(k.results[0], domain.weight_offset)


def start(b: KernelBuilder, domain: ArithmeticDomain, bias: View, n: Index, correction: SSAValue | None) -> SSAValue:
    """Where output n's sum starts: its bias, less the row's weight-offset correction."""
    start = domain.bias(bias, n)
    return start if correction is None else b.int_sub(start, correction)
