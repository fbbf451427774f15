"""The targets the Arm DSP backend serves."""

from __future__ import annotations

from glowmlir.target import Target


def has_arm_dsp(target: Target) -> bool:
    """An Arm core with the DSP extension (SMLAD, SXTB16, ...)."""
    return target.triple.startswith(("thumb", "arm")) and "+dsp" in target.features.split(",")
