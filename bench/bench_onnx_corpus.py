"""A directory of ONNX models (`.onnx`, `.onnxtxt`) through onnxruntime and glowmlir, side by
side: which models onnxruntime runs, and of those which glowmlir matches, refuses (and why)
or gets wrong. Inputs are seeded random data of each input's type.

    .venv/bin/python bench/bench_onnx_corpus.py DIR [--markdown] [--list]

Glow's own importer test models (`tests/models/onnxModels` of pytorch/glow) are the corpus
the project measures with; fetch them beside the project (they are not part of it).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import glob
import io
import os
import re
import signal
import sys
import warnings

import numpy as np
import onnx
from google.protobuf import text_format

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import glowmlir  # noqa: E402
from bench.tables import print_rows  # noqa: E402

_NUMPY_OF_ORT = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
                 "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int16)": np.int16,
                 "tensor(int8)": np.int8, "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_}


def read_model(path: str) -> onnx.ModelProto:
    if path.endswith(".onnxtxt"):
        with open(path, encoding="utf-8") as f:
            return text_format.Parse(f.read(), onnx.ModelProto())
    return onnx.load(path)


def random_inputs(session, seed: int = 0) -> dict[str, np.ndarray] | None:
    """Seeded data for every input onnxruntime asks for; None if a shape is symbolic."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for node_arg in session.get_inputs():
        if any(not isinstance(d, int) for d in node_arg.shape):
            return None
        dtype = _NUMPY_OF_ORT.get(node_arg.type)
        if dtype is None:
            return None
        if dtype == np.bool_:
            feeds[node_arg.name] = rng.integers(0, 2, node_arg.shape).astype(bool)
        elif np.issubdtype(dtype, np.integer):
            feeds[node_arg.name] = rng.integers(0, 4, node_arg.shape).astype(dtype)
        else:
            feeds[node_arg.name] = rng.standard_normal(node_arg.shape).astype(dtype)
    return feeds


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout()


def measure(path: str, seconds: int) -> tuple[str, str]:
    """(outcome, detail): outcome is one of "ort refuses", "match", "differs", "refused",
    "crash" (a Python exception other than GlowError), "timeout"."""
    import onnxruntime as ort

    try:
        model = read_model(path)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.log_severity_level = 4
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        feeds = random_inputs(session)
        if feeds is None:
            return "ort refuses", "symbolic or unsupported input type"
        expected = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    except Exception as error:  # noqa: BLE001 - onnxruntime's refusals are of many types
        return "ort refuses", " ".join(str(error).split())[:120]
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            bundle = glowmlir.compile(path)
            actual = bundle.run(feeds)
    except glowmlir.GlowError as error:
        return "refused", str(error)
    except Timeout:
        return "timeout", f"over {seconds} s"
    except Exception as error:  # noqa: BLE001 - what the bench is for: finding them
        return "crash", f"{type(error).__name__}: {error}"[:200]
    finally:
        signal.alarm(0)
    for name, want in expected.items():
        got = np.asarray(actual[name])
        if got.shape != want.shape:
            return "differs", f"{name}: shape {got.shape} vs {want.shape}"
        if want.dtype.kind in "fc":
            close = np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-4, atol=1e-5,
                                equal_nan=True)
        else:
            close = np.array_equal(got, want)
        if not close:
            error = np.nanmax(np.abs(got.astype(np.float64) - want.astype(np.float64))) if got.size else 0
            return "differs", f"{name}: max abs error {error:.3g}"
    return "match", ""


def reason(detail: str) -> str:
    """A refusal's message without the model's own names, to count alike refusals together."""
    detail = re.sub(r"\"[^\"]*\"", "\"…\"", detail)
    return re.sub(r"\d+", "N", detail)[:100]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    parser.add_argument("--markdown", action="store_true", help="print the summary as a Markdown table")
    parser.add_argument("--list", action="store_true", help="print each model's outcome")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per model")
    args = parser.parse_args()
    paths = sorted(glob.glob(os.path.join(args.directory, "*.onnx")) +
                   glob.glob(os.path.join(args.directory, "*.onnxtxt")))
    outcomes = {}
    for path in paths:
        outcomes[os.path.basename(path)] = measure(path, args.timeout)
        if args.list:
            outcome, detail = outcomes[os.path.basename(path)]
            print(f"{outcome:12} {os.path.basename(path)}  {detail}", flush=True)
    counts = collections.Counter(outcome for outcome, _ in outcomes.values())
    runs = len(paths) - counts["ort refuses"]
    print()
    rows = [("models", len(paths)), ("onnxruntime runs", runs)] + \
           [(f"  {k}", counts[k]) for k in ("match", "differs", "refused", "crash", "timeout")]
    print_rows(rows, "models", args.markdown, width=20)
    if runs:
        print(f"matching onnxruntime: {100 * counts['match'] / runs:.1f}% of the models it runs")
    refusals = collections.Counter(reason(d) for o, d in outcomes.values() if o in ("refused", "crash"))
    for text, count in refusals.most_common():
        print(f"{count:4}  {text}")


if __name__ == "__main__":
    main()
