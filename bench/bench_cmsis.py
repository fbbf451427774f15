"""LeNet int8 with and without -use-cmsis: activations, library scratch, code, speed.

The profile comes from the 20 example digits. Instructions per inference are counted
exactly on the emulated Cortex-M7 (mps2-an500), the CMSIS-NN calls linked against our
host-written stand-ins (tests/support/cmsis_nn/standins.c) compiled for the M7 with -O2:
plain reference loops, so those counts say nothing about the real library's speed. Code
size is the bundle object's .text + .rodata (the library's code is not in it).

    .venv/bin/python bench/bench_cmsis.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import glowmlir  # noqa: E402
from bench.board_outputs import check_board_outputs  # noqa: E402
from glowmlir.compiler import QuantizationOptions  # noqa: E402
from glowmlir.elf import code_size  # noqa: E402
from glowmlir.runtime.boards import run_on_board, target_for  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)
from bench.bench_quantization import EXAMPLE, LENET, board_input, make_profile  # noqa: E402

STANDINS = os.path.join(ROOT, "tests", "support", "cmsis_nn", "standins.c")
GLOW_CMSIS_ACTIVATIONS = 20_992
BAR_TENSORS = 3_680


MOBILENET = os.path.join(ROOT, "examples", "mobilenet_v2", "mobilenet_v2.onnx")


def mobilenet() -> dict:
    """MobileNetV2 (0.35, 96x96, random weights and calibration): what each library takes."""
    from glowmlir.compiler import CompileOptions
    from glowmlir.profiling import Profiler
    from glowmlir.quantization.profile import write_profile

    rng = np.random.default_rng(0)
    profiler = Profiler.for_model(MOBILENET, CompileOptions())
    for _ in profiler.run({"data": rng.normal(size=(1, 3, 96, 96)).astype(np.float32)} for _ in range(8)):
        pass
    profile = os.path.join(tempfile.mkdtemp(), "mobilenet.yaml")
    write_profile(profile, profiler.profile)
    rows = {}
    print(f"\n{'MobileNetV2 0.35 96x96':40s} {'ACTIVATIONS':>11s} {'scratch':>8s} {'code M7':>8s} {'calls':>6s} "
          f"{'ours':>6s}")
    for label, library in (("int8, our kernels", None), ("int8, -use-cmsis", "cmsis-nn"),
                           ("int8, -use-hifi4", "hifi4")):
        bundle = glowmlir.compile(MOBILENET, quantization=QuantizationOptions(profile), kernel_library=library,
                                  target=target_for("mps2-an500"))
        calls = sum(1 for _, kind, _ in bundle.library_calls if kind == "library")
        kept = sum(1 for _, kind, _ in bundle.library_calls if kind.startswith("generated"))
        rows[label] = {"ACTIVATIONS": bundle.layout.activations_size, "library_scratch": bundle.layout.library_scratch,
                       "code": code_size(bundle.object_code), "library_calls": calls, "generated": kept}
        print(f"{label:40s} {bundle.layout.activations_size:>11,} {bundle.layout.library_scratch:>8,} "
              f"{code_size(bundle.object_code):>8,} {calls:>6} {kept:>6}", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    args = parser.parse_args()
    profile = os.path.join(tempfile.mkdtemp(), "lenet.yaml")
    make_profile(profile)
    image = (np.load(os.path.join(EXAMPLE, "heldout.npz"))["images"][0].astype(np.float32)
             / np.float32(255))[None, None]
    configurations = {
        "int8, our kernels": dict(),
        "int8, -use-cmsis": dict(kernel_library="cmsis-nn"),
        "int8, -use-cmsis -memory-fusion=false": dict(kernel_library="cmsis-nn", memory_fusion=False),
    }
    rows = {}
    print(f"{'configuration':40s} {'ACTIVATIONS':>11s} {'scratch':>8s} {'code M7':>8s} {'calls':>6s} "
          f"{'instr M7':>12s} {'cycles M7':>12s}")
    host = glowmlir.compile(LENET, quantization=QuantizationOptions(profile))
    for label, options in configurations.items():
        quantization = QuantizationOptions(profile)
        device = glowmlir.compile(LENET, quantization=quantization, target=target_for("mps2-an500"), **options)
        link = [STANDINS] if options.get("kernel_library") else []
        inputs = {"data": board_input(device, image)}
        run = run_on_board(device, "mps2-an500", inputs, count_cycles=True, link=link)
        check_board_outputs(run.outputs, host, inputs)  # CMSIS-NN's arithmetic is our kernels'; board == host
        calls = sum(1 for _, kind, _ in device.library_calls if kind == "library")
        row = {"ACTIVATIONS": device.layout.activations_size, "library_scratch": device.layout.library_scratch,
               "code": code_size(device.object_code), "library_calls": calls, "instructions_m7": run.instructions,
               "cycles_m7": round(run.cycles.estimate),
               "selection": device.library_calls}
        rows[label] = row
        print(f"{label:40s} {row['ACTIVATIONS']:>11,} {row['library_scratch']:>8,} {row['code']:>8,} {calls:>6} "
              f"{row['instructions_m7']:>12,} {row['cycles_m7']:>12,}", flush=True)
    print(f"bar: ACTIVATIONS <= {BAR_TENSORS:,} + the scratch CMSIS-NN asks for; Glow with CMSIS-NN: "
          f"{GLOW_CMSIS_ACTIVATIONS:,} bytes")
    rows["mobilenet_v2"] = mobilenet()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
