"""Issue 37's per-layer choice by measurement: default builds against -autotune builds.

For each model (the MLPerf Tiny int8 reference models kws, vww, ic, ad from `--mlperf-tiny`,
not part of this repository, or the random-weight nets of bench_cortex_m) and core, the
default build and the build whose layers take the kernels measured fastest
(`glowmlir.autotune`: every candidate kernel of every layer measured in estimated cycles on the
core's board, cached in `--cache`, default a fresh file) are run on the board: estimated
cycles, code, constants and RAM, outputs checked bit for bit against the host bundle's.

    .venv/bin/python bench/bench_autotune.py [--models kws,ad] [--cores m4,m7] [--cache FILE] [--flash-size 85K]

`--flash-size` compiles both builds with -flash-size: the packed filters that fit it beside 48 KB
of code, chosen by estimated cycles saved per extra byte (default) or by the measured ones
(autotune).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

from bench.bench_cortex_m import CORES, measure, models  # noqa: E402
from glowmlir.compiler import (  # noqa: E402
    CompileOptions,
    QuantizationOptions,
    tune,  # noqa: E402
)
from glowmlir.memory_report import parse_size  # noqa: E402
from glowmlir.runtime.boards import target_for  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="kws,ad,ic,vww")
    parser.add_argument("--cores", default="m4,m7")
    parser.add_argument("--mlperf-tiny", default="/work/shared/models/mlperf-tiny")
    parser.add_argument("--cache", help="the autotuner's cache file (default: a new one)")
    parser.add_argument("--workers", type=int, default=None, help="measuring processes at once")
    parser.add_argument("--flash-size", help="-flash-size for every build, e.g. 85K")
    args = parser.parse_args()
    flash = {"flash_size": parse_size("flash-size", args.flash_size)} if args.flash_size else {}
    directory = tempfile.mkdtemp(prefix="bench-autotune-")
    cache = args.cache or os.path.join(directory, "autotune.json")
    print(f"{'model':6s} {'core':5s} {'build':9s} {'cycles':>12s} {'code B':>8s} {'constants B':>12s} {'RAM B':>8s}",
          flush=True)
    for name, (model, profile) in models(directory, args.models.split(","), args.mlperf_tiny).items():
        for core in args.cores.split(","):
            board = CORES[core]
            quantization = QuantizationOptions(profile) if profile else None
            start = time.perf_counter()
            tune(model, CompileOptions(target=target_for(board, "O3"), quantization=quantization, autotune=True,
                                       autotune_cache=cache, **flash), workers=args.workers)
            tuning = time.perf_counter() - start
            for build, options in (("default", {"autotune_cache": os.path.join(directory, "none.json")}),
                                   ("autotune", {"autotune_cache": cache})):
                figures = measure(model, profile, board, "O3", extra={**options, **flash})
                print(f"{name:6s} {core:5s} {build:9s} {figures['cycles']:>12,} {figures['code']:>8,} "
                      f"{figures['constants']:>12,} {figures['ram']:>8,}", flush=True)
            print(f"{name:6s} {core:5s} tuning took {tuning:.0f} s", flush=True)


if __name__ == "__main__":
    main()
