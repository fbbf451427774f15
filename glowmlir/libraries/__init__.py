"""Kernel libraries that kernel selection maps quantized instructions onto."""

from __future__ import annotations

import importlib
from types import ModuleType


class _Libraries(dict):
    """Library name -> its module (`accepts`, `MAPPINGS`, `Declined`), imported on first use."""

    MODULES = {"cmsis-nn": "glowmlir.backends.cmsis_nn.library", "hifi4": "glowmlir.backends.hifi4.library"}

    def __missing__(self, name: str) -> ModuleType:
        module = importlib.import_module(self.MODULES[name])
        self[name] = module
        return module


LIBRARIES = _Libraries()
