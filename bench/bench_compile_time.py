"""Compile time alone: bench_e2e's compile measurement, repeated, without the latency runs.

    .venv/bin/python bench/bench_compile_time.py [--models inception_v1,densenet121] [--repeat 2] [--json out.json]

Each model is prepared as bench/bench_e2e.py prepares it (`prepared_model`: the light models
with seeded random weights, the last Softmax removed) and compiled for the host in a fresh
Python process of its own, one model at a time, `--repeat` times (`compile_in_process`: the
wall seconds of `glowmlir.compile`, its stages, the process's peak RSS). Every run is listed,
so the spread of a shared machine shows.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_e2e

from bench_e2e import COMPILE_BARS_S, LIGHT_MODELS, MODELS, STAGES, compile_in_process, prepared_model  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(LIGHT_MODELS),
                        help=f"comma-separated subset of {','.join(MODELS)}")
    parser.add_argument("--repeat", type=int, default=2, help="compilations per model")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args()
    print(f"{'model':14s} {'total s':>8s} {'bar':>4s} " + " ".join(f"{stage:>7s}" for stage in STAGES)
          + f" {'peak MiB':>9s}")
    results = []
    for key in (key.strip() for key in args.models.split(",") if key.strip()):
        with tempfile.TemporaryDirectory(prefix=f"bench-compile-{key}-") as temporary:
            directory = Path(temporary)
            model_path = directory / MODELS[key].name
            onnx.save(prepared_model(key), str(model_path))
            for _ in range(args.repeat):
                c = compile_in_process(model_path, directory / "bundle", directory)
                bar = COMPILE_BARS_S.get(key)
                results.append({"model": key, **{k: v for k, v in asdict(c).items() if k != "layout"}})
                print(f"{key:14s} {c.compile_s:>8.2f} {'-' if bar is None else f'{bar:.0f}':>4s} "
                      + " ".join(f"{c.stages_s[stage]:>7.2f}" for stage in STAGES)
                      + f" {c.peak_rss_bytes / 2**20:>9,.0f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
