"""The targets the Helium backend serves."""

from __future__ import annotations

from glowmlir.target import Target


def has_helium(target: Target) -> bool:
    """An Arm core with the M-profile vector extension (MVE, Helium: Cortex-M55)."""
    return target.triple.startswith(("thumb", "arm")) and any(f.startswith("+mve") for f in target.features.split(","))
