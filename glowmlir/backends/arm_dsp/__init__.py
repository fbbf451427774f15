"""Arm DSP extension (Armv7E-M, Armv8-M: SMLAD, SXTB16): int8 convolutions and FullyConnected on
packed int16 pairs, and kernels on tables of levels."""
