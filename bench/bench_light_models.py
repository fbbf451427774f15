"""The nine `light_*` models shipped with onnx: compile time and the largest error against the
output files shipped beside them.

    .venv/bin/python bench/bench_light_models.py [--markdown]

(The light models carry splat weights, so their outputs are nearly uniform: this measures
that each architecture imports, compiles and runs, not kernel accuracy; the kernels are
tested with random weights in tests/unit.)
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.test.runner import Runner

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import glowmlir  # noqa: E402
from glowmlir.names import legalize_name  # noqa: E402

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def measure(model_path: str) -> dict:
    """Compile time and the errors against `<model>_output_0.pb`, with onnx's runner's input
    (`Runner.generate_dummy_data`: arange(n) / n)."""
    model = onnx.load(model_path)
    initializers = {t.name for t in model.graph.initializer}
    inputs = {legalize_name(i.name): Runner.generate_dummy_data(i) for i in model.graph.input
              if i.name not in initializers}
    start = time.perf_counter()
    bundle = glowmlir.compile(model_path)
    compile_seconds = time.perf_counter() - start
    reference = onnx.TensorProto()
    with open(model_path.removesuffix(".onnx") + "_output_0.pb", "rb") as f:
        reference.ParseFromString(f.read())
    expected = numpy_helper.to_array(reference).astype(np.float64)
    output = bundle.run(inputs)[legalize_name(model.graph.output[0].name)]
    difference = np.abs(output - expected)
    return {"model": os.path.basename(model_path).removesuffix(".onnx"), "compile_s": compile_seconds,
            "max_abs_error": float(difference.max()),
            "max_rel_error": float((difference / np.maximum(np.abs(expected), 1e-30)).max()),
            "activations": bundle.layout.activations_size, "constants": bundle.layout.constant_size}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    rows = [measure(path) for path in sorted(glob.glob(os.path.join(LIGHT, "light_*.onnx")))]
    if args.markdown:
        print("| model | compile time (s) | max abs error | max rel error | ACTIVATIONS | CONSTANT |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['model']} | {r['compile_s']:.1f} | {r['max_abs_error']:.2e} | {r['max_rel_error']:.2e} "
                  f"| {r['activations']:,} | {r['constants']:,} |")
    else:
        for r in rows:
            print(f"{r['model']:22s} compile {r['compile_s']:6.1f} s  max abs error {r['max_abs_error']:.2e}  "
                  f"max rel error {r['max_rel_error']:.2e}  activations {r['activations']:,}")


if __name__ == "__main__":
    main()
