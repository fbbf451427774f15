"""Cadence's HiFi 4 NN library as a backend: its mappings (`library`)."""

from __future__ import annotations

from glowmlir.backends import Backend

BACKEND = Backend("hifi4", library=("hifi4", "backends.hifi4.library"))
