"""`glowll-select-hifi4`: quantized instructions HiFi 4 NNLib implements become calls into it
(the generic selection of `transforms.select_kernels`, with the library's mappings)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from glowmlir.transforms.select_kernels import SelectLibrary


@dataclass(frozen=True)
class SelectHifi4(SelectLibrary):
    """Quantized instructions HiFi 4 NNLib implements become `xa_nn_*` calls."""

    name = "glowll-select-hifi4"
    LIBRARY: ClassVar[str] = "hifi4"
    TITLE: ClassVar[str] = "HiFi4 NNLib"
