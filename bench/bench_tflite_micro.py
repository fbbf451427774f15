"""int8 TFLite models against TFLite Micro's own interpreter (`tflite-micro`): RAM and outputs.

For each model: TFLite Micro's tensor arena (what its allocator takes: planned
activations, scratch buffers, tensor and node structs) beside glowmlir's
MUTABLE_MEM_SIZE + ACTIVATIONS_MEM_SIZE (the bundle's RAM: inputs/outputs and planned
activations), and whether the host bundle's outputs equal TFLite Micro's bit for bit on
`--inputs` random inputs (uniform over each input's int8 range).

    .venv/bin/python bench/bench_tflite_micro.py [--models DIR_OR_FILES...] [--inputs 10]

The MLPerf Tiny models are not in the repository; by default the script reads them from
/work/shared/models/mlperf-tiny (pass other .tflite files or directories instead).
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import sys

import numpy as np
import tflite

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import glowmlir  # noqa: E402
from tests.support.tflite_micro import MicroRunner, arena_bytes  # noqa: E402

DEFAULT_MODELS = "/work/shared/models/mlperf-tiny"


def model_files(paths: list[str]) -> list[str]:
    files = []
    for path in paths:
        files += sorted(glob.glob(os.path.join(path, "*.tflite"))) if os.path.isdir(path) else [path]
    return files


def bundle_name(tensor_name: str) -> str:
    """The bundle's name of a TFLite tensor (characters outside C identifiers become `_`)."""
    return re.sub(r"\W", "_", tensor_name)


def int8_input(path: str) -> bool:
    graph = tflite.Model.GetRootAsModel(bytearray(open(path, "rb").read()), 0).Subgraphs(0)
    return graph.Tensors(graph.Inputs(0)).Type() == tflite.TensorType.INT8


def measure(path: str, inputs: int) -> dict:
    data = open(path, "rb").read()
    bundle = glowmlir.compile(path)
    micro = MicroRunner(data)
    rng = np.random.default_rng(0)
    differing = total = 0
    for _ in range(inputs):
        feed = {}
        for tensor_name in micro.input_names:
            placeholder = bundle.layout.placeholder(bundle_name(tensor_name))
            info = np.iinfo(placeholder.dtype)
            feed[tensor_name] = rng.integers(info.min, info.max + 1, placeholder.shape).astype(placeholder.dtype)
        ours = bundle.run({bundle_name(name): value for name, value in feed.items()})
        for name, expected in micro(feed).items():
            got = ours[bundle_name(name)].reshape(expected.shape)
            differing += int(np.count_nonzero(got != expected))
            total += expected.size
    return {"model": os.path.basename(path), "tflm_arena": arena_bytes(data),
            "mutable": bundle.layout.mutable_size, "activations": bundle.layout.activations_size,
            "differing": differing, "compared": total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=[DEFAULT_MODELS])
    parser.add_argument("--inputs", type=int, default=10)
    args = parser.parse_args()
    print(f"{'model':32} {'TFLM arena':>11} {'MUTABLE':>8} {'ACTIVATIONS':>11} {'M+A':>8} {'M+A/arena':>9}  outputs")
    for path in model_files(args.models):
        if not int8_input(path):
            print(f"{os.path.basename(path):32} skipped: not an int8 model")
            continue
        try:
            row = measure(path, args.inputs)
        except glowmlir.GlowError as error:  # a float model, an unsupported operator
            print(f"{os.path.basename(path):32} not compiled: {error}")
            continue
        ours = row["mutable"] + row["activations"]
        verdict = "bit-identical" if row["differing"] == 0 else f"{row['differing']} of {row['compared']} differ"
        print(f"{row['model']:32} {row['tflm_arena']:>11,} {row['mutable']:>8,} {row['activations']:>11,} "
              f"{ours:>8,} {ours / row['tflm_arena']:>9.2f}  {verdict} over {args.inputs} inputs")


if __name__ == "__main__":
    main()
