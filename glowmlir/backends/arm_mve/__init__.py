"""Arm Helium (M-profile vector extension, Cortex-M55): int8 kernels on 128-bit vectors."""
