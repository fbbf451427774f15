"""RAM below the layer-by-layer bound: each MLPerf Tiny int8 model's layer-by-layer plan
beside the plan `-ram-size` chooses (`glowmlir.plan_choice`: in-place layers or patches) for a RAM of
MUTABLE + the goal's ACTIVATIONS, on the Cortex-M4 and M7 boards (or any board, and `host`):
ACTIVATIONS, MUTABLE, estimated cycles of one inference (on `host`: microseconds, the median
of 200 runs), code and constants, and whether the outputs equal TFLite Micro's
(`tflite-micro`) bit for bit on a random input.

    .venv/bin/python bench/bench_in_place.py [--models kws,ic,vww] [--boards mps2-an386,mps2-an500,host]

The models are not in the repository; they are read from /work/shared/models/mlperf-tiny.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import glowmlir  # noqa: E402
from glowmlir.memory_report import code_size  # noqa: E402
from glowmlir.runtime.boards import board, run_on_board  # noqa: E402
from tests.support.tflite_micro import MicroRunner  # noqa: E402

MODELS_DIRECTORY = "/work/shared/models/mlperf-tiny"
MODELS = {  # name: (file, the ACTIVATIONS goal)
    "kws": ("kws_ref_model.tflite", 9_000),
    "ic": ("pretrainedResnet_quant.tflite", 36_864),
    "vww": ("vww_96_int8.tflite", 24_576),
}


HOST = "host"
"""The `--boards` name of this machine: the bundle compiled for x86-64, timed in microseconds."""


def host_run(bundle, inputs: dict, runs: int = 200) -> tuple[dict, float]:
    """The host bundle's outputs and its median time of one inference, microseconds."""
    outputs = bundle.run(inputs)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        bundle.run_in_place(inputs)
        times.append(time.perf_counter() - start)
    return outputs, 1e6 * float(np.median(times))


def measure(path: str, board_name: str, ram_size: int | None, micro: MicroRunner, seed: int = 0) -> dict:
    target = "x86-64" if board_name == HOST else board(board_name).cpu
    bundle = glowmlir.compile(path, target=target, ram_size=ram_size)
    rng = np.random.default_rng(seed)
    placeholders = [p for p in bundle.layout.placeholders if p.kind == "input"]
    inputs = {p.name: rng.integers(-128, 128, p.shape).astype(np.int8) for p in placeholders}
    expected = micro(dict(zip(micro.input_names, inputs.values())))
    if board_name == HOST:
        outputs, cost = host_run(bundle, inputs)
    else:
        run = run_on_board(bundle, board_name, inputs, count_cycles=True)
        outputs, cost = run.outputs, run.cycles.estimate
    same = all(np.array_equal(np.asarray(got).reshape(want.shape), want)
               for got, want in zip(outputs.values(), expected.values()))
    return {"plan": bundle.plan.name if bundle.plan else "layer by layer",
            "activations": bundle.layout.activations_size, "mutable": bundle.layout.mutable_size,
            "cycles": round(cost),
            "code": code_size(bundle.object_code), "constants": bundle.layout.constant_size, "bit_identical": same}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="kws,ic")
    parser.add_argument("--boards", default="mps2-an386,mps2-an500")
    args = parser.parse_args()
    print(f"{'model':5} {'board':11} {'plan':52} {'ACTIVATIONS':>11} {'MUTABLE':>8} {'cycles|us':>10} {'+%':>6} "
          f"{'code':>7} {'constants':>9}  outputs")
    for name in args.models.split(","):
        file, goal = MODELS[name]
        path = os.path.join(MODELS_DIRECTORY, file)
        micro = MicroRunner(open(path, "rb").read())
        for board_name in args.boards.split(","):
            whole = measure(path, board_name, None, micro)
            try:
                smallest = measure(path, board_name, whole["mutable"] + goal, micro)
            except glowmlir.GlowError as error:
                print(f"{name:5} {board_name:11} {str(error)}")
                smallest = None
            for row in (whole, smallest):
                if row is None:
                    continue
                extra = 100 * (row["cycles"] / whole["cycles"] - 1)
                print(f"{name:5} {board_name:11} {row['plan']:52} {row['activations']:>11,} {row['mutable']:>8,} "
                      f"{row['cycles']:>10,} {extra:>+6.1f} {row['code']:>7,} {row['constants']:>9,}  "
                      f"{'bit-identical' if row['bit_identical'] else 'DIFFER'} to TFLite Micro", flush=True)


if __name__ == "__main__":
    main()
