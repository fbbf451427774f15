"""Activation memory of the planned bundles, against the theoretical lower bound.

For each model, compiled twice (convolution+pooling fusion off, then on), this prints
the achieved ACTIVATIONS_MEM_SIZE, the unfused lower bound (the most bytes of
activations live at any one instruction of the unfused schedule: no placement of those
buffers can do better), and achieved / unfused lower bound. With fusion off the ratio
says how close the placement gets to optimal; with fusion on, a ratio below 1 is memory
that no placement of the unfused program could save.

    .venv/bin/python bench/bench_memory.py [--models lenet,squeezenet,...] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import glowmlir  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
MODELS = {
    "lenet": os.path.join(ROOT, "examples", "lenet_mnist", "lenet_mnist.onnx"),
    "squeezenet": os.path.join(LIGHT, "light_squeezenet.onnx"),
    "resnet50": os.path.join(LIGHT, "light_resnet50.onnx"),
    "densenet121": os.path.join(LIGHT, "light_densenet121.onnx"),
    "inception_v1": os.path.join(LIGHT, "light_inception_v1.onnx"),
}
GLOW_LENET_FLOAT_ACTIVATIONS = 57_600


def measure(path: str) -> dict:
    row = {}
    for fusion in (False, True):
        start = time.perf_counter()
        layout = glowmlir.compile(path, memory_fusion=fusion).layout
        row[fusion] = {"activations": layout.activations_size, "lower_bound": layout.activations_lower_bound,
                       "compile_seconds": round(time.perf_counter() - start, 2)}
    unfused_bound = row[False]["lower_bound"]
    return {"fusion_off": row[False] | {"ratio_to_unfused_bound": row[False]["activations"] / unfused_bound},
            "fusion_on": row[True] | {"ratio_to_unfused_bound": row[True]["activations"] / unfused_bound}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--json")
    args = parser.parse_args()
    results = {}
    for name in args.models.split(","):
        results[name] = measure(MODELS[name])
        off, on = results[name]["fusion_off"], results[name]["fusion_on"]
        print(f"{name:13s} fusion off: {off['activations']:>11,} B  bound {off['lower_bound']:>11,}  "
              f"ratio {off['ratio_to_unfused_bound']:.4f} | fusion on: {on['activations']:>11,} B  "
              f"bound {on['lower_bound']:>11,}  ratio to unfused bound {on['ratio_to_unfused_bound']:.4f}", flush=True)
    if "lenet" in results:
        print(f"LeNet float with fusion: {results['lenet']['fusion_on']['activations']:,} bytes "
              f"(Glow: {GLOW_LENET_FLOAT_ACTIVATIONS:,})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
