"""Draws the activations memory plans shown in docs/memory-plan.md: LeNet in float and in int8
(profiled on the example digits) and MobileNetV2 (layer by layer, and its first stage patch by
patch: `-patches=11,3`), as `glow-compile -memory-plan` draws them, and
prints each plan's region size against its lower bound.

    .venv/bin/python bench/plot_memory_plans.py [--out docs/images]
"""

from __future__ import annotations

import argparse
import glob
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import glowmlir  # noqa: E402
from glowmlir.compiler import CompileOptions  # noqa: E402
from glowmlir.datasets import ImageOptions, load_image  # noqa: E402
from glowmlir.profiling import Profiler  # noqa: E402
from glowmlir.quantization.profile import write_profile  # noqa: E402
from glowmlir.transforms.quantization_options import QuantizationOptions  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LENET = os.path.join(ROOT, "examples", "lenet_mnist", "lenet_mnist.onnx")
MOBILENET = os.path.join(ROOT, "examples", "mobilenet_v2", "mobilenet_v2.onnx")
MOBILENET_PATCHES = ("11", 3)
"""The layers up to block 4's projection (12x12x8) run over 3 x 3 patches (docs/memory-plan.md)."""


def lenet_profile(path: str) -> str:
    """A profile of LeNet over the example digits (as glow-profile makes it)."""
    profiler = Profiler.for_model(LENET, CompileOptions())
    images = sorted(glob.glob(os.path.join(ROOT, "examples", "lenet_mnist", "images", "*.png")))
    options = ImageOptions.parse("0to1", "NCHW", "RGB")
    for _ in profiler.run({"data": load_image(image, (1, 1, 28, 28), options)} for image in images):
        pass
    write_profile(path, profiler.profile)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "images"))
    arguments = parser.parse_args()
    os.makedirs(arguments.out, exist_ok=True)
    profile = lenet_profile(os.path.join(arguments.out, ".lenet-profile.yaml"))
    bundles = {"lenet-float": glowmlir.compile(LENET),
               "lenet-int8": glowmlir.compile(LENET, quantization=QuantizationOptions(profile)),
               "mobilenet_v2-float": glowmlir.compile(MOBILENET),
               "mobilenet_v2-float-patched": glowmlir.compile(MOBILENET, patches=MOBILENET_PATCHES)}
    os.remove(profile)
    print(f"{'model':<20} {'buffers':>8} {'region B':>10} {'lower bound B':>14}  peak at")
    for name, bundle in bundles.items():
        plan = bundle.memory_plan
        path = os.path.join(arguments.out, f"memory-plan-{name}.png")
        with open(path, "wb") as f:
            f.write(plan.picture(".png"))
        peak = plan.peak_instruction
        print(f"{name:<20} {len(plan.buffers):>8} {plan.region_size:>10,} {plan.lower_bound:>14,}  "
              f"{peak} ({plan.instructions[peak]})")


if __name__ == "__main__":
    main()
