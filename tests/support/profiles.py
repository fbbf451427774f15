"""A model's profile for int8 builds in tests: Glow's profiler run over calibration samples."""

from __future__ import annotations

import numpy as np

from glowmlir.compiler import CompileOptions, QuantizationOptions
from glowmlir.profiling import Profiler
from glowmlir.quantization.profile import write_profile


def profiled(path: str, calibration: list[dict[str, np.ndarray]], profile_path: str) -> QuantizationOptions:
    """The int8 options of the model at `path` from its profile over `calibration`, written to
    `profile_path`."""
    profiler = Profiler.for_model(path, CompileOptions())
    for _ in profiler.run(calibration):
        pass
    write_profile(profile_path, profiler.profile)
    return QuantizationOptions(profile_path)
