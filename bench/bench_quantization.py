"""LeNet quantized with each of Glow's four schemas: memory, accuracy and speed; then the mobile nets.

The profile comes from the 20 example digits (examples/lenet_mnist/images) through
glow-profile's pipeline; accuracy is on the 1,000 held-out MNIST digits. Instructions per
inference are counted exactly on the emulated Cortex-M7 (mps2-an500) and Cortex-M3
(mps2-an385, no FPU) with the default -O3 build; "int8 I/O" rows use -convert-placeholders.

Then, unless `--lenet-only`, the figures of "integer all the way" (issue 17) on a
MobileNetV3-small-style net, a DS-CNN-style net and LeNet: ops left float, top-1 agreement
with float against onnxruntime's static int8 quantization, host latency and code bytes int8
vs float, Cortex-M7 and M3 instructions int8 vs float (`bench_integer_only.py`, which runs
alone with more options: several weight seeds, Int16).

    .venv/bin/python bench/bench_quantization.py [--json out.json] [--no-boards] [--lenet-only]
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
from bench import bench_integer_only  # noqa: E402
from bench.board_outputs import check_board_outputs  # noqa: E402
from glowmlir.compiler import CompileOptions, QuantizationOptions  # noqa: E402
from glowmlir.datasets import ImageOptions, calibration_samples  # noqa: E402
from glowmlir.profiling import Profiler  # noqa: E402
from glowmlir.quantization.profile import write_profile  # noqa: E402
from glowmlir.runtime.boards import run_on_board, target_for  # noqa: E402
from tests.support.models import lenet_evaluation_digits  # noqa: E402

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "lenet_mnist")
LENET = os.path.join(EXAMPLE, "lenet_mnist.onnx")
SCHEMAS = ("asymmetric", "symmetric", "symmetric_with_uint8", "symmetric_with_power2_scale")
BOARDS = ("mps2-an500", "mps2-an385")
BARS = {"CONSTANT": 433_152, "ACTIVATIONS": 3_680}


def make_profile(path: str) -> None:
    profiler = Profiler.for_model(LENET, CompileOptions())
    _, feeds = calibration_samples(profiler.input_shapes(), [os.path.join(EXAMPLE, "images")], [], [],
                                   ImageOptions.parse("0to1"))
    for _ in profiler.run(feeds):
        pass
    write_profile(path, profiler.profile)


def accuracy(bundle, images, labels) -> float:
    """Top-1 on the held-out digits (an int8 input is fed the quantized image)."""
    return float(np.mean([np.argmax(bundle.run(data=board_input(bundle, x))["softmax"]) == y
                          for x, y in zip(images, labels)]))


def board_input(bundle, image: np.ndarray) -> np.ndarray:
    data = bundle.layout.placeholder("data")
    if data.quantization is None:
        return image
    scale, offset = data.quantization
    return np.clip(np.rint(image / np.float32(scale)) + offset, -128, 127).astype(np.int8)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    parser.add_argument("--no-boards", action="store_true")
    parser.add_argument("--lenet-only", action="store_true", help="only the LeNet schemas table")
    args = parser.parse_args()
    images, labels = lenet_evaluation_digits()  # the held-out digits that are not calibration images
    profile = os.path.join(tempfile.mkdtemp(), "lenet.yaml")
    make_profile(profile)
    configurations = {"float": None, **{schema: QuantizationOptions(profile, schema=schema) for schema in SCHEMAS},
                      "asymmetric, int8 I/O": QuantizationOptions(profile, convert_placeholders=True),
                      "asymmetric, channelwise": QuantizationOptions(profile, channelwise=True)}
    rows = {}
    header = f"{'configuration':26s} {'CONSTANT':>9s} {'ACTIVATIONS':>11s} {'accuracy':>8s}"
    boards = () if args.no_boards else BOARDS
    print(header + "".join(f" {'instr ' + b:>18s} {'cycles':>14s}" for b in boards))
    for label, quantization in configurations.items():
        bundle = glowmlir.compile(LENET, quantization=quantization)
        row = {"CONSTANT": bundle.layout.constant_size, "ACTIVATIONS": bundle.layout.activations_size}
        row["accuracy"] = accuracy(bundle, images, labels)
        for board in boards:
            device = glowmlir.compile(LENET, quantization=quantization, target=target_for(board))
            inputs = {"data": board_input(device, images[0])}
            run = run_on_board(device, board, inputs, count_cycles=True)
            check_board_outputs(run.outputs, bundle, inputs)
            row[f"instructions {board}"] = run.instructions
            row[f"cycles {board}"] = round(run.cycles.estimate)
        rows[label] = row
        text = f"{label:26s} {row['CONSTANT']:>9,} {row['ACTIVATIONS']:>11,} {row['accuracy']:>8.3f}"
        print(text + "".join(f" {row[f'instructions {b}']:>18,} {row[f'cycles {b}']:>14,}" for b in boards), flush=True)
    print(f"bars: CONSTANT <= {BARS['CONSTANT']:,}, ACTIVATIONS <= {BARS['ACTIVATIONS']:,} (no Glow figure is "
          "printed beside them: none measured or sourced here)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    if not args.lenet_only:
        print("\nmobile nets, integer all the way (bench_integer_only.py):", flush=True)
        bench_integer_only.main(["--no-boards"] if args.no_boards else [])


if __name__ == "__main__":
    main()
