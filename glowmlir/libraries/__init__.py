"""Kernel libraries that kernel selection maps quantized instructions onto: what they share
(`common`); each library is a backend (`glowmlir.backends.cmsis_nn`, `.hifi4`) that names its
mappings module (`Backend.library`)."""

from __future__ import annotations

from types import ModuleType

from glowmlir.backends import library_module


class _Libraries(dict):
    """Library name -> its module (`accepts`, `MAPPINGS`, `Declined`), imported on first use."""

    def __missing__(self, name: str) -> ModuleType:
        module = library_module(name)
        self[name] = module
        return module


LIBRARIES = _Libraries()
