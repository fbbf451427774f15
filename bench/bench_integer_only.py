"""Integer all the way (issue 17): a MobileNetV3-small-style int8 net, profiled and compiled
with our quantizer: which ops stay float, top-1 agreement with float against onnxruntime's
own static int8 quantization of the same model and calibration data (classes read from the
logits centred on their held-out mean: a random-weight net scores every input alike), host
latency and code bytes int8 vs float (latency: a ratio measured in the same run).

    .venv/bin/python bench/bench_integer_only.py [--markdown]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import glowmlir  # noqa: E402
from bench.tables import print_rows  # noqa: E402
from glowmlir.compiler import CompileOptions, QuantizationOptions  # noqa: E402
from glowmlir.elf import code_size  # noqa: E402
from glowmlir.profiling import Profiler  # noqa: E402
from glowmlir.quantization.profile import write_profile  # noqa: E402
from tests.support.models import mobilenet_v3_style, quantized_by_onnxruntime  # noqa: E402


def latency(bundle: glowmlir.Bundle, sample: dict, runs: int = 50) -> float:
    bundle.run(sample)
    start = time.perf_counter()
    for _ in range(runs):
        bundle.run(sample)
    return (time.perf_counter() - start) / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    import onnxruntime

    rng = np.random.default_rng(0)
    model = mobilenet_v3_style(seed=1)
    calibration = [{"data": rng.normal(size=(1, 3, 64, 64)).astype(np.float32)} for _ in range(32)]
    held_out = [{"data": rng.normal(size=(1, 3, 64, 64)).astype(np.float32)} for _ in range(100)]
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "model.onnx")
        onnx.save(model, path)
        profiler = Profiler.for_model(path, CompileOptions())
        for _ in profiler.run(calibration):
            pass
        write_profile(os.path.join(directory, "profile.yaml"), profiler.profile)
        float_bundle = glowmlir.compile(path)
        int8 = glowmlir.compile(path, quantization=QuantizationOptions(os.path.join(directory, "profile.yaml")))
        ort_path = quantized_by_onnxruntime(model, calibration, directory, "QDQ")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads, options.log_severity_level = 1, 3
        ort_int8 = onnxruntime.InferenceSession(ort_path, options, providers=["CPUExecutionProvider"])
        # A random-weight net gives every input nearly the same logits: its classes are read
        # from the logits centred on their mean over the held-out inputs (the same for all).
        logits = {"float": np.stack([float_bundle.run(s)["logits"][0] for s in held_out]),
                  "ours": np.stack([int8.run(s)["logits"][0] for s in held_out]),
                  "onnxruntime": np.stack([ort_int8.run(None, s)[0][0] for s in held_out])}
        centre = logits["float"].mean(axis=0)
        classes = {name: (values - centre).argmax(axis=1) for name, values in logits.items()}
        ours = int((classes["ours"] == classes["float"]).sum())
        theirs = int((classes["onnxruntime"] == classes["float"]).sum())
        distinct = len(set(classes["float"].tolist()))
        left = collections.Counter(op for _, op, _ in int8.float_ops)  # the compute ops kept float
        code = f"{code_size(int8.object_code):,} / {code_size(float_bundle.object_code):,}"
        rows = [("compute ops left float", f"{sum(left.values())} ({', '.join(f'{k} x{v}' for k, v in left.items())})"),
                ("distinct float classes among the held-out inputs", str(distinct)),
                ("top-1 agreement with float, ours int8", f"{ours}/{len(held_out)}"),
                ("top-1 agreement with float, onnxruntime static int8", f"{theirs}/{len(held_out)}"),
                ("host latency int8 / float", f"{latency(int8, held_out[0]) / latency(float_bundle, held_out[0]):.2f}"),
                ("code bytes int8 / float", code)]
    print_rows(rows, "MobileNetV3-small-style, 1x3x64x64", args.markdown, width=55)


if __name__ == "__main__":
    main()
