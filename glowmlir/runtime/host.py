"""Running a host bundle from Python.

The bundle object is linked into a shared library with the system C compiler and loaded
with ctypes; the three memory regions are 64-byte-aligned buffers, exactly what a C caller
would pass. Inputs and outputs are numpy arrays keyed by placeholder name.

Each region sits between two inaccessible (`PROT_NONE`) guard pages, flush against one of
them, so a bundle that reads or writes outside a region faults at once instead of quietly
corrupting its neighbour: `flush="end"` (the default) puts the region's aligned end against
the upper guard page (catches overruns to within the alignment padding), `flush="start"`
puts its first byte against the lower one (catches underruns exactly).

`time_calls` and `time_layers` time the entry point on the inputs in place, the latter per
layer in a layer-profiling build (`timed`, linked with `LAYER_TIMER`).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence

import numpy as np

from glowmlir.bundle import BundleLayout, Placeholder, copy_constant_region
from glowmlir.dialects.memory import align
from glowmlir.errors import GlowError

FLUSH_PLACEMENTS = ("end", "start")
PROT_NONE = 0  # <sys/mman.h>; the mmap module names only PROT_READ, PROT_WRITE and PROT_EXEC
LAYER_TIMER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "embedded", "layer_timer.c")
"""`glow_layer_mark`, the clock a `timed` layer-profiling build calls between its layers."""


class GuardedRegion:
    """`size` zeroed bytes, `ALIGNMENT`-aligned, between two `PROT_NONE` guard pages.

    `flush="end"`: the region ends (rounded up to `ALIGNMENT`) where the upper guard page
    begins; `flush="start"`: it begins where the lower guard page ends."""

    def __init__(self, size: int, flush: str = "end"):
        if flush not in FLUSH_PLACEMENTS:
            raise GlowError(f"guard page placement \"{flush}\": expected one of {', '.join(FLUSH_PLACEMENTS)}")
        page = mmap.PAGESIZE
        body = align(max(size, 1), page)
        try:
            self._map = mmap.mmap(-1, body + 2 * page, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError as error:
            raise GlowError(f"cannot map {size:,} bytes for a bundle region: {error.strerror}") from None
        base = ctypes.addressof(ctypes.c_char.from_buffer(self._map))
        self._body = (base + page, body)
        for guard in (base, base + page + body):
            _protect(guard, page, PROT_NONE)
        start = page if flush == "start" else page + body - align(size)
        self.array = np.frombuffer(self._map, np.uint8, count=size, offset=start)
        self.address = base + start

    def make_read_only(self) -> None:
        """From now on a write into the region faults too (the constant region: flash on a device)."""
        _protect(*self._body, mmap.PROT_READ)


def _protect(address: int, length: int, protection: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    if libc.mprotect(address, length, protection) != 0:
        raise GlowError(f"mprotect failed: {os.strerror(ctypes.get_errno())}")


def placeholder_view(mutable: np.ndarray, placeholder: Placeholder) -> np.ndarray:
    """The placeholder's bytes in a mutable region, viewed as its typed array."""
    return (mutable[placeholder.offset:placeholder.offset + placeholder.byte_size]
            .view(placeholder.dtype).reshape(placeholder.shape))


def _read_only(view: np.ndarray) -> np.ndarray:
    view.flags.writeable = False
    return view


def c_compiler() -> str:
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        raise GlowError("no C compiler found (set CC) to link the host bundle")
    return compiler


class HostRunner:
    """A bundle object linked and loaded into this process."""

    def __init__(self, layout: BundleLayout, object_code: bytes, link: Sequence[str] = (), flush: str = "end"):
        """`link`: C sources or objects the bundle calls into (e.g. a kernel library);
        `flush`: which end of each region touches its guard page."""
        self.layout = layout
        self._directory = tempfile.TemporaryDirectory(prefix="glowmlir-")
        object_path = os.path.join(self._directory.name, f"{layout.name}.o")
        library_path = os.path.join(self._directory.name, f"lib{layout.name}.so")
        with open(object_path, "wb") as f:
            f.write(object_code)
        subprocess.run([c_compiler(), "-shared", "-fPIC", "-O1", "-o", library_path, object_path, *link, "-lm"],
                       check=True)
        self._library = ctypes.CDLL(library_path)
        self._entry = getattr(self._library, layout.entry_point)
        self._entry.restype = ctypes.c_int
        self._entry.argtypes = [ctypes.c_void_p] * 3
        self._regions = [GuardedRegion(size, flush)
                         for size in (layout.constant_size, layout.mutable_size, layout.activations_size)]
        self.constant, self.mutable, self.activations = (region.array for region in self._regions)
        copy_constant_region(layout, self.constant)
        self._regions[0].make_read_only()
        self.constant.flags.writeable = False
        self._outputs = {p.name: _read_only(placeholder_view(self.mutable, p))
                         for p in layout.placeholders if p.kind == "output"}

    def placeholder_array(self, name: str) -> np.ndarray:
        """The placeholder's bytes in the mutable region, viewed as its typed array."""
        return placeholder_view(self.mutable, self.layout.placeholder(name))

    def run(self, inputs: dict[str, np.ndarray] | None = None, **named: np.ndarray) -> dict[str, np.ndarray]:
        """Writes the inputs, calls the entry point once, returns copies of the outputs."""
        return {name: view.copy() for name, view in self.run_in_place({**(inputs or {}), **named}).items()}

    def run_in_place(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """As `run`, but the outputs are read-only views of the mutable region, which the next
        call overwrites (no copy: a profiling run reads every activation of every inference)."""
        for name, value in inputs.items():
            target = self.placeholder_array(name)
            value = np.asarray(value, target.dtype)
            if value.size != target.size:
                raise GlowError(f"input \"{name}\" has {value.size} elements, the bundle expects {list(target.shape)}")
            target[...] = value.reshape(target.shape)
        self._call()
        return dict(self._outputs)

    def reset_state(self) -> None:
        """The next call starts from the initial state (a streaming model's): its ready word cleared."""
        self.mutable[self.layout.state_offset:self.layout.state_offset + 4] = 0

    def state(self) -> dict[str, np.ndarray]:
        """Copies of the state the next call starts from (once a call has initialised it), by name."""
        return {p.name: placeholder_view(self.mutable, p).copy() for p in self.layout.states}

    def _call(self) -> None:
        status = self._entry(*(region.address for region in self._regions))
        if status != 0:
            raise GlowError(f"{self.layout.name} returned error code {status}")

    def time_calls(self, repeats: int) -> list[int]:
        """Nanoseconds each of `repeats` calls of the entry point took (on the inputs in place,
        after one call to warm up)."""
        self._call()
        times = []
        for _ in range(repeats):
            start = time.perf_counter_ns()
            self._call()
            times.append(time.perf_counter_ns() - start)
        return times

    def time_layers(self, layers: int, repeats: int) -> np.ndarray:
        """A `timed` layer-profiling bundle linked with `LAYER_TIMER`: nanoseconds each of its
        `layers` instructions took (from the clock mark before to the one after) in each of
        `repeats` calls, as a repeats × layers array (after one call to warm up)."""
        marks = np.zeros(layers + 1, np.uint64)
        marks_pointer = ctypes.c_void_p.in_dll(self._library, "glow_layer_marks")
        marks_pointer.value = marks.ctypes.data
        try:
            self._call()
            times = np.zeros((repeats, layers), np.int64)
            for repeat in range(repeats):
                self._call()
                times[repeat] = np.diff(marks.astype(np.int64))
        finally:
            marks_pointer.value = None
        return times
