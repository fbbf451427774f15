"""Running a host bundle under valgrind's memcheck (`region_harness.c`): each region a heap
block of exactly its size, so a read or write one byte outside it is reported."""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np

from glowmlir.bundle import BundleLayout, constant_region
from glowmlir.runtime.host import c_compiler, placeholder_view

HARNESS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "region_harness.c")
VALGRIND = shutil.which("valgrind")


class MemcheckError(AssertionError):
    """valgrind reported an invalid access (its report is the message)."""


def run_under_valgrind(layout: BundleLayout, object_code: bytes, inputs: dict[str, np.ndarray],
                       directory: str) -> dict[str, np.ndarray]:
    """Links the bundle into the harness in `directory`, runs it once under memcheck with
    `inputs` (by placeholder name), returns the outputs; raises MemcheckError on any error."""
    path = lambda name: os.path.join(directory, name)  # noqa: E731
    with open(path("bundle.o"), "wb") as f:
        f.write(object_code)
    sizes = {"ENTRY": layout.name, "CONSTANT_SIZE": layout.constant_size, "MUTABLE_SIZE": layout.mutable_size,
             "ACTIVATIONS_SIZE": layout.activations_size}
    subprocess.run([c_compiler(), "-O1", "-g", *(f"-D{k}={v}" for k, v in sizes.items()), "-o", path("harness"),
                    HARNESS, path("bundle.o"), "-lm"], check=True)
    mutable = np.zeros(layout.mutable_size, np.uint8)
    for name, value in inputs.items():
        view = placeholder_view(mutable, layout.placeholder(name))
        view[...] = np.asarray(value, view.dtype).reshape(view.shape)
    with open(path("constant.bin"), "wb") as f:
        f.write(constant_region(layout))
    mutable.tofile(path("mutable.bin"))
    # Shorter superblocks than the default 60 instructions: the long straight-line kernels of
    # a large network otherwise exhaust VEX's temporary storage ("the impossible happened").
    run = subprocess.run([VALGRIND, "--tool=memcheck", "--vex-guest-max-insns=30", "--error-exitcode=99", "-q",
                          path("harness"),
                          path("constant.bin"), path("mutable.bin"), path("after.bin")],
                         capture_output=True, text=True)
    if run.returncode != 0:
        raise MemcheckError(f"{layout.name} under valgrind: exit status {run.returncode}\n{run.stderr}")
    after = np.fromfile(path("after.bin"), np.uint8)
    return {p.name: placeholder_view(after, p).copy() for p in layout.placeholders if p.kind == "output"}
