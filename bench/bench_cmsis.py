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
from glowmlir.compiler import QuantizationOptions  # noqa: E402
from glowmlir.elf import code_size  # noqa: E402
from glowmlir.runtime.boards import run_on_board, target_for  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)
from bench.bench_quantization import EXAMPLE, LENET, board_input, make_profile  # noqa: E402

STANDINS = os.path.join(ROOT, "tests", "support", "cmsis_nn", "standins.c")
GLOW_CMSIS_ACTIVATIONS = 20_992
BAR_TENSORS = 3_680


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    args = parser.parse_args()
    profile = os.path.join(tempfile.mkdtemp(), "lenet.yaml")
    make_profile(profile)
    image = (np.load(os.path.join(EXAMPLE, "heldout.npz"))["images"][0].astype(np.float32) / np.float32(255))[None, None]
    configurations = {
        "int8, our kernels": dict(),
        "int8, -use-cmsis": dict(kernel_library="cmsis-nn"),
        "int8, -use-cmsis -memory-fusion=false": dict(kernel_library="cmsis-nn", memory_fusion=False),
    }
    rows = {}
    print(f"{'configuration':40s} {'ACTIVATIONS':>11s} {'scratch':>8s} {'code M7':>8s} {'calls':>6s} "
          f"{'instr M7':>12s}")
    for label, options in configurations.items():
        quantization = QuantizationOptions(profile)
        device = glowmlir.compile(LENET, quantization=quantization, target=target_for("mps2-an500"), **options)
        link = [STANDINS] if options.get("kernel_library") else []
        run = run_on_board(device, "mps2-an500", {"data": board_input(device, image)}, count_instructions=True,
                           link=link)
        calls = sum(1 for _, kind, _ in device.library_calls if kind == "library")
        row = {"ACTIVATIONS": device.layout.activations_size, "library_scratch": device.layout.library_scratch,
               "code": code_size(device.object_code), "library_calls": calls, "instructions_m7": run.instructions,
               "selection": device.library_calls}
        rows[label] = row
        print(f"{label:40s} {row['ACTIVATIONS']:>11,} {row['library_scratch']:>8,} {row['code']:>8,} {calls:>6} "
              f"{row['instructions_m7']:>12,}", flush=True)
    print(f"bar: ACTIVATIONS <= {BAR_TENSORS:,} + the scratch CMSIS-NN asks for; Glow with CMSIS-NN: "
          f"{GLOW_CMSIS_ACTIVATIONS:,} bytes")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
