"""AArch64: instructions per inference of LeNet and MobileNetV2, Cortex-A53 code under qemu-aarch64.

    .venv/bin/python bench/bench_aarch64.py [--models lenet,mobilenet_v2] [--json out.json]

Each model is prepared as bench/bench_e2e.py prepares it (`prepared_model`: LeNet trained,
MobileNetV2 with its export's random weights, the last Softmax removed), compiled for the
`aarch64` board's CPU (`-mcpu=cortex-a53`, NEON, default -O3), linked statically with the
Glow-style C main by aarch64-linux-gnu-gcc and run under qemu-aarch64 in Linux user mode.
The instructions are counted exactly by the QEMU TCG plugin the Cortex-M boards use: one
inference is a build running the entry point twice minus a build running it once
(`glowmlir.runtime.boards.run_on_board`). The input is bench_e2e's deterministic pattern
(`bench_input`); the outputs are compared with onnxruntime's (relative error as bench_e2e
defines it, bar 1e-5). The table also says how many of the float convolutions got a NEON
kernel (`microkernel = "vector-columns"`, or `"vector-depthwise"` for the depthwise ones:
glowll-select-vector-columns).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_e2e
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_e2e import TOLERANCE, agreement, bench_input, ort_session, prepared_model  # noqa: E402

import glowmlir  # noqa: E402
from glowmlir.names import legalize_name  # noqa: E402
from glowmlir.runtime.boards import BOARDS, run_on_board, target_for  # noqa: E402

BOARD = "aarch64"
DEFAULT_MODELS = ("lenet", "mobilenet_v2")
VECTOR_KERNEL = 'microkernel = #glowll.microkernel<"vector-'


def measure(key: str) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"bench-aarch64-{key}-") as directory:
        model_path = Path(directory) / f"{key}.onnx"
        onnx.save(prepared_model(key), str(model_path))
        session = ort_session(model_path)
        feeds = {i.name: bench_input(tuple(i.shape), salt) for salt, i in enumerate(session.get_inputs())}
        reference = dict(zip((legalize_name(o.name) for o in session.get_outputs()), session.run(None, feeds),
                             strict=True))
        start = time.perf_counter()
        bundle = glowmlir.compile(str(model_path), target=target_for(BOARD))
        compile_s = time.perf_counter() - start
    glowll = bundle.ir["glowll"]
    convolutions = glowll.count("glowll.convolution")
    columns = glowll.count(VECTOR_KERNEL)
    start = time.perf_counter()
    run = run_on_board(bundle, BOARD, {legalize_name(name): value for name, value in feeds.items()},
                       count_instructions=True, timeout=3600)
    run_s = time.perf_counter() - start
    outputs = agreement(run.outputs, reference)
    return {"model": key, "instructions": run.instructions, "convolutions": convolutions,
            "column_kernel_convolutions": columns, "max_abs_error": outputs.max_abs_error,
            "max_rel_error": outputs.max_rel_error, "ok": outputs.ok, "compile_s": compile_s, "run_s": run_s}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS), help="comma-separated bench_e2e model keys")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args()
    board = BOARDS[BOARD]
    print(f"board {BOARD}: -mcpu={board.cpu}, {' '.join(board.qemu)}, "
          f"{board.compiler} {' '.join(board.compiler_flags)}")
    print(f"{'model':14s} {'instructions/inference':>24s} {'NEON vector convs':>18s} {'max rel err':>12s} "
          f"{'compile s':>10s} {'run s':>8s}")
    results = []
    for key in (key.strip() for key in args.models.split(",") if key.strip()):
        r = measure(key)
        results.append(r)
        check = "ok" if r["ok"] else f"MISMATCH (> {TOLERANCE:.0e})"
        print(f"{key:14s} {r['instructions']:>24,} {r['column_kernel_convolutions']:>8} of {r['convolutions']:<6} "
              f"{r['max_rel_error']:>12.2e} {r['compile_s']:>10.1f} {r['run_s']:>8.1f}  {check}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"board": BOARD, "cpu": board.cpu, "results": results}, indent=2) + "\n")
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
