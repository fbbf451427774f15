"""Facts about the bundle's memory that the `glowll` dialect's buffers obey, shared by the
allocator, the lowering to LLVM, the bundle files and the host runtime."""

from __future__ import annotations

ALIGNMENT = 64
"""Every buffer starts at a multiple of this many bytes in its region, and every region's
base address is aligned to it (Glow's TensorAlignment; the bundle header's MEM_ALIGN)."""

SCRATCH_ATTRIBUTE = "library_scratch"
"""On the `glowll.alloc` that is a library call's scratch buffer."""


def align(size: int, alignment: int = ALIGNMENT) -> int:
    """`size` (at least 1) rounded up to a multiple of `alignment`."""
    return -(-max(size, 1) // alignment) * alignment
