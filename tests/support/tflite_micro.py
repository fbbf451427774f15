"""TFLite Micro's own interpreter (the `tflite-micro` package) as an oracle.

`run_micro(model, inputs)` runs a TFLite flatbuffer with TFLite Micro's reference kernels
(`tflite_micro.python.tflite_micro.runtime.Interpreter`, the interpreter and arena planner
firmware links), inputs and outputs by tensor name, as `tflite_models.run_reference`
does for ai-edge-litert. TFLite Micro rounds a requantization twice (gemmlowp's
`SaturatingRoundingDoublingHighMul` then `RoundingDivideByPOT`, no `TFLITE_SINGLE_ROUNDING`),
as CMSIS-NN and glowmlir do, so int8 models are compared bit for bit.

`arena_bytes(model)` is the tensor arena TFLite Micro's allocator takes for the model
(`RecordingMicroAllocator`'s "Arena allocation total": planned activations, scratch
buffers, tensor and node structs), the RAM figure a TFLite Micro build of the model needs.
"""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import tflite
from tflite_micro.python.tflite_micro import runtime

ARENA_SIZE = 4 << 20
"""The arena the tests give the interpreter: more than any test model needs."""


def tensor_names(model: bytes) -> tuple[list[str], list[str]]:
    """(input names, output names) of the model's first subgraph, in index order."""
    graph = tflite.Model.GetRootAsModel(bytearray(model), 0).Subgraphs(0)

    def name(index: int) -> str:
        return graph.Tensors(index).Name().decode()

    return ([name(graph.Inputs(i)) for i in range(graph.InputsLength())],
            [name(graph.Outputs(i)) for i in range(graph.OutputsLength())])


class MicroRunner:
    """One TFLite Micro interpreter of `model`, reusable over many inputs."""

    def __init__(self, model: bytes, arena_size: int = ARENA_SIZE):
        self.interpreter = runtime.Interpreter.from_bytes(bytes(model), arena_size=arena_size)
        self.input_names, self.output_names = tensor_names(model)

    def __call__(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if set(inputs) != set(self.input_names):
            raise ValueError(f"model inputs are {sorted(self.input_names)}, got {sorted(inputs)}")
        self.interpreter.reset()
        for index, name in enumerate(self.input_names):
            details = self.interpreter.get_input_details(index)
            value = np.asarray(inputs[name])
            if value.dtype != details["dtype"]:
                raise TypeError(f"input {name!r} is {np.dtype(details['dtype']).name}, got {value.dtype.name}")
            self.interpreter.set_input(value.reshape(details["shape"]), index)
        self.interpreter.invoke()
        return {name: np.array(self.interpreter.get_output(index)) for index, name in enumerate(self.output_names)}


def run_micro(model: bytes, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """`model` run once by TFLite Micro; inputs and outputs by tensor name, in their dtypes."""
    return MicroRunner(model)(inputs)


_ARENA_SCRIPT = """
import sys
from tflite_micro.python.tflite_micro import runtime
interpreter = runtime.Interpreter.from_bytes(sys.stdin.buffer.read(), arena_size={arena})
interpreter.print_allocations()
"""


def arena_bytes(model: bytes, arena_size: int = ARENA_SIZE) -> int:
    """The tensor arena TFLite Micro allocates for `model`, in bytes. The interpreter prints
    its allocations from C++ to the process's stderr, so it runs in a child process."""
    result = subprocess.run([sys.executable, "-c", _ARENA_SCRIPT.format(arena=arena_size)], input=bytes(model),
                            capture_output=True, check=True)
    match = re.search(rb"Arena allocation total (\d+) bytes", result.stderr)
    if match is None:
        raise RuntimeError(f"TFLite Micro printed no arena total: {result.stderr[-500:]!r}")
    return int(match.group(1))
