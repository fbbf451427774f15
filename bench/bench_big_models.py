"""Big models in bounded memory: peak resident memory and wall time of `glow-compile`.

    .venv/bin/python bench/bench_big_models.py [--models vgg19,resnet50,heavy1000] [--keep DIR]
                                               [--compare DIR] [--json out.json]

Each model is compiled into a static host bundle (weights.bin and weights.txt written) by
`glow-compile -time` in a fresh Python process of its own, one model at a time; its peak
resident set is the process's VmHWM as it exits (`tests.support.big_models.measured_glow_compile`).
The models: onnx's VGG-19 and ResNet-50 test architectures (the light models) with seeded
random weights (`tests.support.models.randomized`: nothing to deduplicate), and a generated
model of 1 GB of random weights (`tests.support.big_models.weight_heavy_model`). The goals
(issue 43, on an idle 2-core machine): peak RSS <= 3x the weights, ResNet-50 <= 8 s,
VGG-19 <= 20 s. The compiler's main thread runs on one core and writes the weight files
on another, alongside LLVM's code generation: `cpu s` is the user and system seconds of
all its threads, `main s` those of its main thread, about what its wall time would be on
an idle machine of two cores (the main thread waits for the weight files only if they take
longer than the code generation: `writing s`, the `writing files` row of `-time`, is that
wait). The load average is printed with each row: on a shared machine the walls are the
machine's, not the compiler's. The time bars apply to `main s`. `--keep DIR` keeps the
bundles (DIR/<model>/), `--compare DIR` checks each file byte for byte against
DIR/<model>/ (bundles built before).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import onnx

REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPOSITORY))

from tests.support.big_models import measured_glow_compile, weight_bytes, weight_heavy_model  # noqa: E402
from tests.support.models import light_model_path, randomized  # noqa: E402

SEED = 0
MODELS = {
    "vgg19": lambda: randomized(onnx.load(light_model_path("vgg19")), SEED),
    "resnet50": lambda: randomized(onnx.load(light_model_path("resnet50")), SEED),
    "heavy1000": lambda: weight_heavy_model(1000, SEED),
}
RSS_BAR = 3.0  # peak resident memory over the weights
WALL_BARS_S = {"vgg19": 20.0, "resnet50": 8.0}


def writing_seconds(stderr: str) -> float | None:
    """The `writing files` row of `-time`'s table."""
    match = re.search(r"│ writing files\s*│\s*([0-9.]+)", stderr)
    return float(match[1]) if match else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated subset of {','.join(MODELS)}")
    parser.add_argument("--keep", metavar="DIR", help="keep the bundles in DIR/<model>/")
    parser.add_argument("--compare", metavar="DIR", help="compare each bundle byte for byte with DIR/<model>/")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args()
    print(f"{'model':10s} {'weights MB':>10s} {'peak MB':>8s} {'x weights':>9s} {'bar':>4s} {'wall s':>7s} "
          f"{'cpu s':>6s} {'main s':>6s} {'bar':>4s} {'writing s':>9s} {'load before/after':>17s}  bundle")
    results = []
    for key in (key.strip() for key in args.models.split(",") if key.strip()):
        with tempfile.TemporaryDirectory(prefix=f"bench-big-{key}-") as temporary:
            model = MODELS[key]()
            weights = weight_bytes(model)
            onnx.save(model, os.path.join(temporary, f"{key}.onnx"))
            del model
            bundle = os.path.join(temporary, "bundle")
            load_before = os.getloadavg()[0]
            status, peak, wall, cpu, stderr, main_cpu = measured_glow_compile(
                [f"-model={key}.onnx", f"-emit-bundle={bundle}", "-time"], temporary, str(REPOSITORY))
            load_after = os.getloadavg()[0]
            if status != 0:
                raise SystemExit(f"{key}: glow-compile failed:\n{stderr}")
            same = ""
            if args.compare:
                reference = os.path.join(args.compare, key)
                names = sorted(os.listdir(bundle))
                _, mismatch, errors = filecmp.cmpfiles(bundle, reference, names, shallow=False)
                if not os.path.isdir(reference):
                    same = "no reference"
                elif mismatch or errors:
                    same = f"DIFFERS: {', '.join(mismatch + errors)}"
                else:
                    same = "identical"
            if args.keep:
                shutil.rmtree(os.path.join(args.keep, key), ignore_errors=True)
                shutil.copytree(bundle, os.path.join(args.keep, key))
            writing = writing_seconds(stderr)
            row = {"model": key, "weights_bytes": weights, "peak_rss_bytes": peak, "ratio": peak / weights,
                   "wall_s": wall, "cpu_s": cpu, "main_thread_cpu_s": main_cpu, "writing_s": writing,
                   "load_before": load_before, "load_after": load_after, "bundle": same}
            results.append(row)
            bar = WALL_BARS_S.get(key)
            print(f"{key:10s} {weights / 1e6:>10,.1f} {peak / 1e6:>8,.0f} {peak / weights:>9.2f} {RSS_BAR:>4.0f} "
                  f"{wall:>7.1f} {cpu:>6.1f} {main_cpu:>6.1f} {'-' if bar is None else f'{bar:.0f}':>4s} "
                  f"{'-' if writing is None else f'{writing:.1f}':>9s} {load_before:>8.1f}/{load_after:<8.1f}  {same}",
                  flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
