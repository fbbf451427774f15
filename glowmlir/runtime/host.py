"""Running a host bundle from Python.

The bundle object is linked into a shared library with the system C compiler and loaded
with ctypes; the three memory regions are 64-byte-aligned numpy buffers, exactly what a
C caller would pass. Inputs and outputs are numpy arrays keyed by placeholder name.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence

import numpy as np

from glowmlir.bundle import BundleLayout, constant_region
from glowmlir.errors import GlowError
from glowmlir.transforms.allocate_memory import ALIGNMENT


def aligned_buffer(size: int, alignment: int = ALIGNMENT) -> np.ndarray:
    """A zeroed uint8 array of `size` bytes whose data pointer is `alignment`-aligned."""
    raw = np.zeros(size + alignment, np.uint8)
    start = -raw.ctypes.data % alignment
    return raw[start:start + size]


def c_compiler() -> str:
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        raise GlowError("no C compiler found (set CC) to link the host bundle")
    return compiler


class HostRunner:
    """A bundle object linked and loaded into this process."""

    def __init__(self, layout: BundleLayout, object_code: bytes, link: Sequence[str] = ()):
        """`link`: C sources or objects the bundle calls into (e.g. a kernel library)."""
        self.layout = layout
        self._directory = tempfile.TemporaryDirectory(prefix="glowmlir-")
        object_path = os.path.join(self._directory.name, f"{layout.name}.o")
        library_path = os.path.join(self._directory.name, f"lib{layout.name}.so")
        with open(object_path, "wb") as f:
            f.write(object_code)
        subprocess.run([c_compiler(), "-shared", "-fPIC", "-O1", "-o", library_path, object_path, *link, "-lm"],
                       check=True)
        self._library = ctypes.CDLL(library_path)
        self._entry = getattr(self._library, layout.name)
        self._entry.restype = ctypes.c_int
        self._entry.argtypes = [ctypes.c_void_p] * 3
        self.constant = aligned_buffer(layout.constant_size)
        self.constant[:] = np.frombuffer(constant_region(layout), np.uint8)
        self.mutable = aligned_buffer(layout.mutable_size)
        self.activations = aligned_buffer(layout.activations_size)

    def placeholder_array(self, name: str) -> np.ndarray:
        """The placeholder's bytes in the mutable region, viewed as its typed array."""
        p = self.layout.placeholder(name)
        return self.mutable[p.offset:p.offset + p.byte_size].view(p.dtype).reshape(p.shape)

    def run(self, inputs: dict[str, np.ndarray] | None = None, **named: np.ndarray) -> dict[str, np.ndarray]:
        """Writes the inputs, calls the entry point once, returns copies of the outputs."""
        for name, value in {**(inputs or {}), **named}.items():
            target = self.placeholder_array(name)
            value = np.asarray(value, target.dtype)
            if value.size != target.size:
                raise GlowError(f"input \"{name}\" has {value.size} elements, the bundle expects {list(target.shape)}")
            target[...] = value.reshape(target.shape)
        status = self._entry(self.constant.ctypes.data, self.mutable.ctypes.data, self.activations.ctypes.data)
        if status != 0:
            raise GlowError(f"{self.layout.name} returned error code {status}")
        return {p.name: self.placeholder_array(p.name).copy() for p in self.layout.placeholders if p.kind == "output"}
