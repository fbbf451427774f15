"""Cadence HiFi 4 NN library (NatureDSP): int8 instructions as library calls."""
