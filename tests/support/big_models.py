"""Models with many random weights, generated: the memory bench's and the memory test's.

`weight_heavy_model(megabytes)` is a small convolution block followed by fully connected
layers (Gemm with transposed weights, as exported classifiers have them, and MatMul),
4096 wide, with seeded normal weights (nothing a compiler could deduplicate), until its
float weights reach `megabytes` (MB, 10^6 bytes).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from typing import NamedTuple

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

WIDTH = 4096
"""Features of the fully connected layers."""


def weight_heavy_model(megabytes: float, seed: int = 0, width: int = WIDTH) -> onnx.ModelProto:
    """Input `data` [1, 16, 16, 16] → Conv 3x3 (16 → 64) → Relu → Flatten [1, 16384] →
    Gemm(transB) to `width` → Relu → alternately MatMul and Gemm(transB) of `width` x `width`
    (with Relu between them) until the weights reach `megabytes`."""
    rng = np.random.default_rng(seed)
    initializers, nodes = [], []

    def weight(name: str, shape: tuple[int, ...], fan_in: int) -> str:
        value = rng.standard_normal(shape, dtype=np.float32) * np.float32(np.sqrt(2.0 / fan_in))
        initializers.append(numpy_helper.from_array(value, name))
        return name

    def weight_bytes() -> int:
        return sum(int(np.prod(t.dims)) * 4 for t in initializers)

    nodes.append(helper.make_node("Conv", ["data", weight("conv_w", (64, 16, 3, 3), 144),
                                           weight("conv_b", (64,), 144)], ["conv"], pads=[1, 1, 1, 1]))
    nodes.append(helper.make_node("Relu", ["conv"], ["conv_relu"]))
    nodes.append(helper.make_node("Flatten", ["conv_relu"], ["flat"]))
    features = 64 * 16 * 16
    nodes.append(helper.make_node("Gemm", ["flat", weight("fc0_w", (width, features), features),
                                           weight("fc0_b", (width,), features)], ["fc0"], transB=1))
    last, k = "fc0", 1
    while weight_bytes() < megabytes * 1e6:
        nodes.append(helper.make_node("Relu", [last], [f"relu{k}"]))
        if k % 2:
            nodes.append(helper.make_node("MatMul", [f"relu{k}", weight(f"fc{k}_w", (width, width), width)],
                                          [f"fc{k}"]))
        else:
            nodes.append(helper.make_node("Gemm", [f"relu{k}", weight(f"fc{k}_w", (width, width), width),
                                                   weight(f"fc{k}_b", (width,), width)], [f"fc{k}"], transB=1))
        last, k = f"fc{k}", k + 1
    graph = helper.make_graph(nodes, "weight_heavy", [helper.make_tensor_value_info("data", TensorProto.FLOAT,
                                                                                     [1, 16, 16, 16])],
                              [helper.make_tensor_value_info(last, TensorProto.FLOAT, [1, width])], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def weight_bytes(model: onnx.ModelProto) -> int:
    """The bytes of a model's initializers (as they are stored: float32 4 bytes an element)."""
    return sum(int(np.prod(t.dims)) * np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize
               for t in model.graph.initializer)


_MEASURED_COMPILE = """
import resource, sys
if sys.argv[2] != "-":  # the limit on the process's data (heap and private mappings: the weights)
    resource.setrlimit(resource.RLIMIT_DATA, (int(sys.argv[2]), int(sys.argv[2])))
from glowmlir.cli.compile import main
try:
    main(sys.argv[3:])
finally:  # this process's own high-water mark (getrusage's would include what it was forked from)
    with open("/proc/self/status") as status, open(sys.argv[1], "w") as report:
        report.write(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
        main_thread = resource.getrusage(resource.RUSAGE_THREAD)
        report.write(f" {main_thread.ru_utime + main_thread.ru_stime}")
"""


class MeasuredCompile(NamedTuple):
    status: int
    """glow-compile's exit status."""
    peak: int
    """Its peak resident bytes (Linux's VmHWM, read as it exits)."""
    wall: float
    """Its wall seconds."""
    cpu: float
    """Its processor seconds, user and system, of all its threads (getrusage of the child)."""
    stderr: str
    main_cpu: float
    """The processor seconds of its main thread (the weight files are written on another,
    alongside the code generation): on an idle machine of two cores or more, its wall time is
    about this, where the wall time of a shared one is the machine's."""


def measured_glow_compile(arguments: list[str], directory: str, pythonpath: str,
                          data_limit: int | None = None) -> MeasuredCompile:
    """Runs `glow-compile arguments` in a new Python process in `directory`, measured; with
    `data_limit`, the process may not hold more than that many bytes of data (`RLIMIT_DATA`:
    an allocation beyond it fails)."""
    report = os.path.join(directory, "peak-resident-kib.txt")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    limit = "-" if data_limit is None else str(data_limit)
    result = subprocess.run([sys.executable, "-c", _MEASURED_COMPILE, report, limit, *arguments], cwd=directory,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": pythonpath})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    with open(report) as f:
        peak_kib, main_cpu = f.read().split()
    os.unlink(report)
    return MeasuredCompile(result.returncode, int(peak_kib) * 1024, wall, cpu, result.stderr.decode(errors="replace"),
                           float(main_cpu))
