"""The targets the Arm DSP backend serves."""

from __future__ import annotations

from glowmlir.target import Target, enabled_features


def has_arm_dsp(target: Target) -> bool:
    """An Arm core with the DSP extension (SMLAD, SXTB16, ...), not turned off by a later
    `-dsp` (`-mattr=-dsp` after the CPU's features)."""
    return target.triple.startswith(("thumb", "arm")) and enabled_features(target.features.split(",")).get("dsp", False)
