"""Helium's microkernels (Cortex-M55): "arm-mve" (int8 convolutions on vectors of output
columns, FullyConnected, adds, subs, muls and softmaxes on 128-bit vectors) and
"arm-mve-im2col" (a convolution as a matrix product of copied input rows); both in
`kernels`, picked by `glowll-select-arm-dsp-kernels{helium}`."""

from __future__ import annotations

from xdsl.utils.exceptions import VerifyException

from glowmlir.backends import Backend, Microkernel
from glowmlir.backends.arm_mve.layout import ELEMENTWISE as ELEMENTWISE_KINDS
from glowmlir.backends.arm_mve.layout import IM2COL as IM2COL_MICROKERNEL
from glowmlir.backends.arm_mve.layout import MICROKERNEL, TILE
from glowmlir.backends.arm_mve.target import has_helium
from glowmlir.dialects import glow, glowll
from glowmlir.lowering.vector_layout import verify_column_filter


def verify_im2col(op) -> None:
    """The filter as it is, the input zero point folded into the bias."""
    if isinstance(op, glowll.ConvolutionOp) and (
            op.folded_input_offset is None or (op.pool is not None and not glow.pools_globally(op))
            or op.group.value.data != 1):
        raise VerifyException(f"{op.name}: the arm-mve-im2col microkernel takes an ungrouped convolution, unpooled "
                              "or with a global pool, with its input offset folded into the bias")


BACKEND = Backend("arm_mve", (
    Microkernel(MICROKERNEL, "glowmlir.backends.arm_mve.kernels",
                ops=("glowll.convolution", "glowll.fully_connected", "glowll.elementwise", "glowll.softmax"),
                elementwise_kinds=ELEMENTWISE_KINDS, lookup_tables=True, verify=verify_column_filter, lanes=TILE.lanes),
    Microkernel(IM2COL_MICROKERNEL, "glowmlir.backends.arm_mve.kernels", lookup_tables=True, verify=verify_im2col),
), serves=has_helium)
