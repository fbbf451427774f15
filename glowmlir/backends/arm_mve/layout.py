"""Helium's tile and microkernel names: its kernels are `kernels`, picked by
`glowll-select-arm-dsp-kernels{helium}` (`backends.arm_dsp.select_kernels`)."""

from __future__ import annotations

from glowmlir.lowering.vector_layout import VectorTile

TILE = VectorTile(4, 4)
"""MVE's int8 tile: 4 int32 lanes a Q register, 4 of its 8 Q registers accumulating."""

MICROKERNEL = "arm-mve"
IM2COL = "arm-mve-im2col"
ELEMENTWISE = ("add", "sub", "mul")
"""The int8 `glowll.elementwise` kinds on Helium's vectors (operands of one shape or broadcast)."""
