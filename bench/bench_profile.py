"""`glow-profile` speed: 1,000 LeNet images and 100 MobileNetV2 images, timed.

    .venv/bin/python bench/bench_profile.py [--repeat 2] [--json out.json]

The calibration inputs are random, not images: standard-normal float32 tensors of the model's
input shape drawn with seed SEED, written to a `.npz` file (one key per input, the samples
stacked on a leading axis), which glow-profile reads as it reads any calibration arrays. The
figures do not depend on the values, except through how often a histogram's range widens.

Each run is `glow-profile -model=<model> <inputs>.npz -dump-profile=<model>.yaml` in a fresh
Python process (this interpreter, this checkout's glowmlir), as a user runs the tool. It
reports the wall seconds of the whole command in that process (`glowmlir.cli.profile.main`,
after the module imports), the seconds of its "profiling" stage (the calibration runs: the
instrumented bundle's inference and the histogram updates of every profiled tensor) and the
rest ("compile": import, graph passes, code generation of the instrumented bundle), and the
images per second of the profiling stage and of the whole command. The process start-up and
`import glowmlir` (about 1 s) are not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx

REPO = Path(__file__).resolve().parent.parent
MODELS = {"lenet": (REPO / "examples" / "lenet_mnist" / "lenet_mnist.onnx", 1000),
          "mobilenet_v2": (REPO / "examples" / "mobilenet_v2" / "mobilenet_v2.onnx", 100)}
SEED = 0

PROFILER_PROCESS = """
import pickle, sys, time

from glowmlir.cli.profile import main
from glowmlir.instrumentation import PassTimer, instrumented

report, *argv = sys.argv[1:]
timer = PassTimer()
start = time.perf_counter()
with instrumented(timer):
    main(argv)
total_s = time.perf_counter() - start
with open(report, "wb") as f:
    pickle.dump({"total_s": total_s, "profiling_s": timer.rows[("profiling",)]}, f)
"""


def calibration_arrays(model_path: Path, count: int, path: Path) -> None:
    """`count` standard-normal samples of every input of the model, saved as a .npz file."""
    rng = np.random.default_rng(SEED)
    graph = onnx.load(str(model_path)).graph
    initializers = {t.name for t in graph.initializer}
    arrays = {i.name: rng.standard_normal((count, *(d.dim_value for d in i.type.tensor_type.shape.dim)),
                                          dtype=np.float32)
              for i in graph.input if i.name not in initializers}
    np.savez(path, **arrays)


def profile_once(model_path: Path, arrays: Path, directory: Path) -> dict[str, float]:
    report = directory / "report.pickle"
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-c", PROFILER_PROCESS, str(report), f"-model={model_path}", str(arrays),
               f"-dump-profile={directory / 'profile.yaml'}"]
    result = subprocess.run(command, capture_output=True, text=True, env=environment)
    if result.returncode:
        raise SystemExit(f"glow-profile failed on {model_path.name}: {result.stderr.strip().splitlines()[-1:]}")
    with report.open("rb") as f:
        return pickle.load(f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated subset of {','.join(MODELS)}")
    parser.add_argument("--repeat", type=int, default=1, help="runs per model (each figure listed)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args()
    print(f"{'model':14s} {'images':>7s} {'total s':>8s} {'compile s':>10s} {'profiling s':>12s} "
          f"{'images/s (profiling)':>21s} {'images/s (total)':>17s}")
    results = []
    for key in (key.strip() for key in args.models.split(",") if key.strip()):
        model_path, count = MODELS[key]
        with tempfile.TemporaryDirectory(prefix=f"bench-profile-{key}-") as temporary:
            directory = Path(temporary)
            arrays = directory / "calibration.npz"
            calibration_arrays(model_path, count, arrays)
            for _ in range(args.repeat):
                figures = profile_once(model_path, arrays, directory)
                total, profiling = figures["total_s"], figures["profiling_s"]
                results.append({"model": key, "images": count, **figures})
                print(f"{key:14s} {count:>7} {total:>8.2f} {total - profiling:>10.2f} {profiling:>12.2f} "
                      f"{count / profiling:>21,.0f} {count / total:>17,.0f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"seed": SEED, "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
