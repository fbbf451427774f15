"""`glowll-select-cmsis-nn`: quantized instructions CMSIS-NN implements become calls into it
(the generic selection of `transforms.select_kernels`, with the library's mappings)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from glowmlir.dialects import glowll
from glowmlir.transforms.select_kernels import SelectLibrary, select_library


@dataclass(frozen=True)
class SelectCmsisNN(SelectLibrary):
    """Quantized instructions CMSIS-NN implements become `arm_*_s8` calls; with
    `helium=true` (`glow-compile` sets it on a core with MVE) as the library's Helium build
    takes them (its scratch sizes, the fully connected's kernel sums)."""

    name = "glowll-select-cmsis-nn"
    LIBRARY: ClassVar[str] = "cmsis-nn"
    TITLE: ClassVar[str] = "CMSIS-NN"
    helium: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from glowmlir.backends.cmsis_nn import library

        for function in [f for f in op.body.block.ops if isinstance(f, glowll.FunctionOp)]:
            select_library(function, library.mappings(self.helium), library.Declined, self.TITLE)
