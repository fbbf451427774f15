"""`glowll-select-cmsis-nn`: quantized instructions CMSIS-NN implements become calls into it
(the generic selection of `transforms.select_kernels`, with the library's mappings)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from glowmlir.transforms.select_kernels import SelectLibrary


@dataclass(frozen=True)
class SelectCmsisNN(SelectLibrary):
    """Quantized instructions CMSIS-NN implements become `arm_*_s8` calls."""

    name = "glowll-select-cmsis-nn"
    LIBRARY: ClassVar[str] = "cmsis-nn"
    TITLE: ClassVar[str] = "CMSIS-NN"
