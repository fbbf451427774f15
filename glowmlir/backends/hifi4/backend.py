"""Cadence's HiFi 4 NN library as a backend: its mappings (`library`) and selection pass
(`select_kernels`)."""

from __future__ import annotations

from glowmlir.backends import Backend, PipelineOptions, SelectionOrder

LIBRARY = "hifi4"


def glowll_passes(options: PipelineOptions) -> list:
    from glowmlir.backends.hifi4.select_kernels import SelectHifi4

    return [(SelectionOrder.LIBRARY_CALLS, SelectHifi4())] if options.kernel_library == LIBRARY else []


PASSES = {"glowll-select-hifi4": ("glowmlir.backends.hifi4.select_kernels", "SelectHifi4")}
"""Its passes for `glow-opt -p`: name -> (module, class)."""

BACKEND = Backend("hifi4", passes=PASSES,
                  glowll_passes=glowll_passes, library=(LIBRARY, "-use-hifi4", "glowmlir.backends.hifi4.library"))
