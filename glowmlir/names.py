"""Glow's name rules (lib/Support/Support.cpp `legalizeName`, `Module::uniqueName`)."""

from __future__ import annotations

import re
import zlib

_MAX_NAME = 500


def legalize_name(name: str) -> str:
    """Every char outside [A-Za-z0-9_] becomes `_`; a leading digit or empty name gets `A`."""
    legal = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not legal or legal[0].isdigit():
        legal = "A" + legal
    if len(legal) > _MAX_NAME:
        legal = legal[:_MAX_NAME] + f"_trunc_{zlib.crc32(legal.encode()):08x}"
    return legal


class UniqueNames:
    """Hands out legal names, adding `__<k>` (smallest free k >= 1) on a collision."""

    def __init__(self) -> None:
        self.taken: set[str] = set()

    def __call__(self, name: str) -> str:
        name = legalize_name(name)
        candidate, k = name, 1
        while candidate in self.taken:
            candidate, k = f"{name}__{k}", k + 1
        self.taken.add(candidate)
        return candidate
