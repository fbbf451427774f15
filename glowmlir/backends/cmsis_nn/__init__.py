"""Arm CMSIS-NN: int8 instructions as library calls, and the cost model that picks them over our kernels."""
