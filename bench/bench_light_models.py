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
from onnx.backend.test.loader import load_model_tests

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import glowmlir  # noqa: E402
from glowmlir.names import legalize_name  # noqa: E402


def read_tensors(directory: str, prefix: str) -> list[np.ndarray]:
    paths = sorted(glob.glob(os.path.join(directory, f"{prefix}_*.pb")), key=lambda p: int(p.rsplit("_", 1)[1][:-3]))
    tensors = []
    for path in paths:
        proto = onnx.TensorProto()
        with open(path, "rb") as f:
            proto.ParseFromString(f.read())
        tensors.append(numpy_helper.to_array(proto))
    return tensors


def measure(case) -> dict:
    model_path = os.path.join(case.model_dir, "model.onnx")
    model = onnx.load(model_path, load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    input_names = [i.name for i in model.graph.input if i.name not in initializers]
    output_names = [o.name for o in model.graph.output]
    start = time.perf_counter()
    bundle = glowmlir.compile(model_path)
    compile_seconds = time.perf_counter() - start
    worst_absolute = worst_relative = 0.0
    for data_set in sorted(glob.glob(os.path.join(case.model_dir, "test_data_set_*"))):
        inputs, expected = read_tensors(data_set, "input"), read_tensors(data_set, "output")
        outputs = bundle.run({legalize_name(n): v for n, v in zip(input_names, inputs)})
        for name, reference in zip(output_names, expected):
            difference = np.abs(outputs[legalize_name(name)].astype(np.float64) - reference)
            worst_absolute = max(worst_absolute, float(difference.max()))
            worst_relative = max(worst_relative, float((difference / np.maximum(np.abs(reference), 1e-30)).max()))
    return {"model": case.name.removeprefix("test_"), "compile_s": compile_seconds, "max_abs_error": worst_absolute,
            "max_rel_error": worst_relative, "activations": bundle.layout.activations_size,
            "constants": bundle.layout.constant_size}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    rows = [measure(case) for case in load_model_tests(kind="real")]
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
