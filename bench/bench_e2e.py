"""End-to-end benchmark: glowmlir bundles against onnxruntime, single-threaded, on the host.

    .venv/bin/python bench/bench_e2e.py [--models lenet,squeezenet,resnet50] [--json out.json]

For each model this measures, in one run:

compile time
    Wall seconds of `glowmlir.compile(model)` in this process, and the per-stage split the
    compiler records in `Bundle.timings` (import, glow, glowll, llvm, object). The first
    model compiled also pays one-time costs of the process (lazy imports, LLVM start-up).
    The seconds of `Bundle.save` are listed apart ("save"): not part of the compile time,
    but what a user of the bundle pays next, dominated by writing `<name>.weights.txt`.

latency of the bundle
    Measured in C, not Python, so no interpreter or ctypes overhead is included. The bundle
    is saved to a temporary directory and a small harness is generated against its static
    API header: the constant, mutable and activations regions are static arrays aligned
    with GLOW_MEM_ALIGN, the constant region is read from `<name>.weights.bin`, every input
    placeholder is filled with the deterministic pattern of `bench_input`, and the entry
    point is called once to warm up. Calling it repeatedly for CALIBRATION_S seconds then
    sets the number of calls N so the measurement takes about TIME_BUDGET_S seconds (at
    least MIN_CALLS); the N calls are timed one by one with clock_gettime(CLOCK_MONOTONIC)
    and the median is reported. The harness is built with `cc -O2` and linked with the
    bundle's object file and -lm. After the timed calls it writes the output placeholders
    to a file for the correctness check.

latency of onnxruntime
    The original ONNX model in an InferenceSession with intra_op_num_threads=1 and
    inter_op_num_threads=1 and default graph optimizations, on the same input: a few
    warm-up runs, then N runs (N chosen the same way) each timed with time.perf_counter;
    the median is reported. This includes the Python overhead of `InferenceSession.run`,
    about 4 us per call here (measured on an Identity model), 2% of LeNet's time and
    negligible for the others. For the `light_*` models onnxruntime folds away the
    ConstantOfShape subgraphs that produce the weights, so both sides run with the weights
    as constants.

ratio
    Our median latency divided by onnxruntime's: below 1 means the bundle is faster.

memory
    The three region sizes of the bundle (CONSTANT_MEM_SIZE, MUTABLE_MEM_SIZE,
    ACTIVATIONS_MEM_SIZE), in bytes.

correctness
    The outputs written by the C harness (after all timed calls) are compared with
    onnxruntime's for the same input and the maximum absolute error is printed. A model
    whose error exceeds TOLERANCE times max(1, largest reference magnitude) is marked
    FAILED and the script exits with status 1, so a broken bundle cannot report a fast
    number. The `light_*` models have every weight equal to 0.02, so all classes score
    the same and the softmax output is exactly uniform (0.001) for any input: comparing
    it proves little. When the reference output is constant, the model is therefore also
    compiled with the input of its final Softmax exposed as an extra graph output; those
    logits depend on the input and on every layer, and are compared the same way (the
    "logits rel err" column is their max abs error over max |logit|, as they reach ~1e9).
    That probe bundle is run through `Bundle.run`, not timed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import string
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from rich.console import Console
from rich.table import Table

import glowmlir
from glowmlir.names import legalize_name

REPO = Path(__file__).resolve().parent.parent
ONNX_LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
MODELS = {
    "lenet": REPO / "examples" / "lenet_mnist" / "lenet_mnist.onnx",
    "squeezenet": ONNX_LIGHT / "light_squeezenet.onnx",
    "resnet50": ONNX_LIGHT / "light_resnet50.onnx",
}

TIME_BUDGET_S = 2.5  # target duration of each latency measurement
CALIBRATION_S = 0.2  # time spent estimating the duration of one call before choosing N
MIN_CALLS = 20  # lower bound on the number of timed calls
ORT_WARMUP_RUNS = 3
TOLERANCE = 1e-4  # max abs error allowed, relative to max(1, largest reference magnitude)
STAGES = ("import", "glow", "glowll", "llvm", "object")


# ----------------------------------------------------------------------------- input


def bench_input(shape: tuple[int, ...], salt: int) -> np.ndarray:
    """The deterministic float32 input the C harness writes (its `fillInput`).

    Element i is ((i * 7919 + salt * 104729) mod 2048 - 1024) / 1024: multiples of 1/1024
    in [-1, 1), exactly representable, so C and numpy produce identical bits.
    """
    i = np.arange(int(np.prod(shape)), dtype=np.int64)
    return (((i * 7919 + salt * 104729) % 2048 - 1024) / 1024).astype(np.float32).reshape(shape)


# ----------------------------------------------------------------------------- C harness

HARNESS = string.Template(r"""/* Generated by bench/bench_e2e.py: times the `$name` bundle through its static API. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "$name.h"

GLOW_MEM_ALIGN(${NAME}_MEM_ALIGN)
static uint8_t constantWeight[${NAME}_CONSTANT_MEM_SIZE];

GLOW_MEM_ALIGN(${NAME}_MEM_ALIGN)
static uint8_t mutableWeight[${NAME}_MUTABLE_MEM_SIZE];

GLOW_MEM_ALIGN(${NAME}_MEM_ALIGN)
static uint8_t activations[${NAME}_ACTIVATIONS_MEM_SIZE];

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int compareDoubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Same values as bench_input() in bench_e2e.py. */
static void fillInput(float *x, uint64_t size, uint64_t salt)
{
    for (uint64_t i = 0; i < size; i++)
        x[i] = (float)((int64_t)((i * 7919 + salt * 104729) % 2048) - 1024) / 1024.0f;
}

static void infer(void)
{
    int status = $name(constantWeight, mutableWeight, activations);
    if (status != GLOW_SUCCESS) {
        fprintf(stderr, "$name returned %d\n", status);
        exit(1);
    }
}

/* usage: harness <weights.bin> <outputs.bin> <budget seconds> <calibration seconds> <min calls> */
int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: %s weights.bin outputs.bin budget_s calibration_s min_calls\n", argv[0]);
        return 2;
    }
    FILE *weights = fopen(argv[1], "rb");
    if (!weights || fread(constantWeight, 1, sizeof(constantWeight), weights) != sizeof(constantWeight)) {
        fprintf(stderr, "%s: cannot read %zu bytes\n", argv[1], sizeof(constantWeight));
        return 1;
    }
    fclose(weights);
$fill_inputs
    infer(); /* warm-up: page faults, caches */

    /* Estimate the time of one call, then choose the number of timed calls. */
    long probes = 0;
    double start = now(), elapsed;
    do {
        infer();
        probes++;
        elapsed = now() - start;
    } while (elapsed < atof(argv[4]));
    long calls = (long)(atof(argv[3]) * probes / elapsed);
    if (calls < atol(argv[5]))
        calls = atol(argv[5]);

    double *seconds = malloc(calls * sizeof(double));
    for (long k = 0; k < calls; k++) {
        start = now();
        infer();
        seconds[k] = now() - start;
    }
    qsort(seconds, calls, sizeof(double), compareDoubles);
    double median = calls % 2 ? seconds[calls / 2] : 0.5 * (seconds[calls / 2 - 1] + seconds[calls / 2]);
    printf("calls %ld\nmedian_s %.9e\nmin_s %.9e\n", calls, median, seconds[0]);

    FILE *outputs = fopen(argv[2], "wb");
    if (!outputs) {
        fprintf(stderr, "%s: cannot open\n", argv[2]);
        return 1;
    }
$write_outputs
    fclose(outputs);
    free(seconds);
    return 0;
}
""")


def harness_source(bundle: glowmlir.Bundle) -> str:
    """The C harness for `bundle`, using only the macros of its static header."""
    name = bundle.name
    upper = name.upper()
    fills, writes = [], []
    for salt, p in enumerate(p for p in bundle.layout.placeholders if p.kind == "input"):
        if np.dtype(p.dtype) != np.float32:
            raise SystemExit(f"{name}: input \"{p.name}\" is {np.dtype(p.dtype)}; the harness fills float32 only")
        fills.append(f"    fillInput((float *)GLOW_GET_ADDR(mutableWeight, {upper}_{p.name}), {p.size}, {salt});")
    for p in bundle.layout.placeholders:
        if p.kind == "output":
            writes.append(f"    fwrite(GLOW_GET_ADDR(mutableWeight, {upper}_{p.name}), 1, {p.byte_size}, outputs);")
    return HARNESS.substitute(name=name, NAME=upper, fill_inputs="\n".join(fills), write_outputs="\n".join(writes))


@dataclass
class Latency:
    median_s: float
    min_s: float
    calls: int


def time_bundle(bundle: glowmlir.Bundle, bundle_dir: Path, directory: Path) -> tuple[Latency, dict[str, np.ndarray]]:
    """Builds the C harness in `directory` against the bundle saved in `bundle_dir` and runs it.

    Returns the latency and the outputs the harness wrote after its timed calls.
    """
    source = directory / "harness.c"
    source.write_text(harness_source(bundle))
    executable = directory / "harness"
    compiler = os.environ.get("CC", "cc")
    subprocess.run([compiler, "-O2", "-std=c99", f"-I{bundle_dir}", str(source), str(bundle_dir / f"{bundle.name}.o"),
                    "-lm", "-o", str(executable)], check=True)
    outputs_path = directory / "outputs.bin"
    arguments = [bundle_dir / f"{bundle.name}.weights.bin", outputs_path, TIME_BUDGET_S, CALIBRATION_S, MIN_CALLS]
    run = subprocess.run([str(executable), *map(str, arguments)], check=True, capture_output=True, text=True)
    fields = dict(line.split() for line in run.stdout.splitlines())
    latency = Latency(float(fields["median_s"]), float(fields["min_s"]), int(fields["calls"]))

    raw, outputs, offset = outputs_path.read_bytes(), {}, 0
    for p in bundle.layout.placeholders:
        if p.kind == "output":
            outputs[p.name] = np.frombuffer(raw, p.dtype, p.size, offset).reshape(p.shape)
            offset += p.byte_size
    return latency, outputs


# ----------------------------------------------------------------------------- onnxruntime


def ort_session(model: Path) -> ort.InferenceSession:
    """A single-threaded CPU session with default graph optimizations."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])


def ort_inputs(session: ort.InferenceSession) -> dict[str, np.ndarray]:
    """The harness's input for every session input, keyed by the ONNX name."""
    return {i.name: bench_input(tuple(i.shape), salt) for salt, i in enumerate(session.get_inputs())}


def time_onnxruntime(session: ort.InferenceSession) -> tuple[Latency, dict[str, np.ndarray]]:
    """Median of single `run` calls; the outputs are keyed by legalized (placeholder) name."""
    feeds = ort_inputs(session)
    for _ in range(ORT_WARMUP_RUNS):
        session.run(None, feeds)
    probes, elapsed, start = 0, 0.0, time.perf_counter()
    while elapsed < CALIBRATION_S:
        session.run(None, feeds)
        probes += 1
        elapsed = time.perf_counter() - start
    calls = max(MIN_CALLS, int(TIME_BUDGET_S * probes / elapsed))
    seconds = []
    for _ in range(calls):
        start = time.perf_counter()
        results = session.run(None, feeds)
        seconds.append(time.perf_counter() - start)
    names = [legalize_name(o.name) for o in session.get_outputs()]
    return Latency(statistics.median(seconds), min(seconds), calls), dict(zip(names, results, strict=True))


# ----------------------------------------------------------------------------- correctness


@dataclass
class Agreement:
    """How far our outputs are from onnxruntime's, over all outputs."""

    max_abs_error: float  # max |ours - reference|
    max_scaled_error: float  # each output's max abs error divided by max(1, max |reference|)
    ok: bool  # max_scaled_error <= TOLERANCE (False on NaN)


def agreement(ours: dict[str, np.ndarray], reference: dict[str, np.ndarray]) -> Agreement:
    abs_errors, scaled_errors = [], []
    for name, expected in reference.items():
        expected = np.asarray(expected, np.float64)
        actual = np.asarray(ours[name], np.float64).reshape(expected.shape)
        abs_errors.append(np.max(np.abs(actual - expected)))
        scaled_errors.append(abs_errors[-1] / max(1.0, np.max(np.abs(expected))))
    abs_error, scaled_error = float(np.max(abs_errors)), float(np.max(scaled_errors))  # np.max keeps NaN
    return Agreement(abs_error, scaled_error, scaled_error <= TOLERANCE)


def is_constant(outputs: dict[str, np.ndarray]) -> bool:
    return all(np.ptp(value) == 0 for value in outputs.values())


def with_logits_output(model_path: Path) -> onnx.ModelProto | None:
    """The model with the input of its last Softmax added as a graph output (None if no Softmax)."""
    model = onnx.load(str(model_path))
    softmaxes = [node for node in model.graph.node if node.op_type == "Softmax"]
    if not softmaxes:
        return None
    logits = softmaxes[-1].input[0]
    inferred = onnx.shape_inference.infer_shapes(model).graph.value_info
    model.graph.output.append(next(info for info in inferred if info.name == logits))
    return model


def check_logits(model_path: Path, directory: Path) -> Agreement | None:
    """Compiles the model with its pre-softmax logits exposed and compares them with onnxruntime."""
    model = with_logits_output(model_path)
    if model is None:
        return None
    probe_path = directory / f"{model_path.stem}.onnx"  # same name, so the same bundle name
    onnx.save(model, str(probe_path))
    session = ort_session(probe_path)
    feeds = ort_inputs(session)
    reference = dict(zip((legalize_name(o.name) for o in session.get_outputs()), session.run(None, feeds), strict=True))
    ours = glowmlir.compile(str(probe_path)).run({legalize_name(name): value for name, value in feeds.items()})
    return agreement(ours, reference)


# ----------------------------------------------------------------------------- benchmark


@dataclass
class Result:
    model: str
    path: str
    bundle: str
    compile_s: float
    stages_s: dict[str, float]
    save_s: float
    ours: Latency
    onnxruntime: Latency
    ratio: float
    outputs: Agreement
    logits: Agreement | None  # only for models whose output is constant (see the docstring)
    ok: bool
    memory_bytes: dict[str, int]


def bench_model(key: str, path: Path, console: Console) -> Result:
    console.print(f"[bold]{key}[/bold]: compiling and saving {path.name}")
    start = time.perf_counter()
    bundle = glowmlir.compile(str(path))
    compile_s = time.perf_counter() - start
    layout = bundle.layout
    with tempfile.TemporaryDirectory(prefix=f"bench-{key}-") as temporary:
        directory = Path(temporary)
        bundle_dir = directory / "bundle"
        start = time.perf_counter()
        bundle.save(str(bundle_dir))
        save_s = time.perf_counter() - start
        console.print(f"[bold]{key}[/bold]: timing the bundle (C harness)")
        ours, our_outputs = time_bundle(bundle, bundle_dir, directory)
        console.print(f"[bold]{key}[/bold]: timing onnxruntime")
        theirs, reference = time_onnxruntime(ort_session(path))
        outputs = agreement(our_outputs, reference)
        logits = None
        if is_constant(reference):
            console.print(f"[bold]{key}[/bold]: output is constant; checking the pre-softmax logits")
            logits = check_logits(path, directory)
    return Result(
        model=key, path=str(path), bundle=bundle.name, compile_s=compile_s,
        stages_s={stage: bundle.timings.get(stage, float("nan")) for stage in STAGES}, save_s=save_s,
        ours=ours, onnxruntime=theirs, ratio=ours.median_s / theirs.median_s,
        outputs=outputs, logits=logits, ok=outputs.ok and (logits is None or logits.ok),
        memory_bytes={"constant": layout.constant_size, "mutable": layout.mutable_size,
                      "activations": layout.activations_size})


def milliseconds(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}"


def report(results: list[Result], console: Console) -> None:
    compile_table = Table(title="Compile time (s)")
    compile_table.add_column("model")
    compile_table.add_column("total", justify="right")
    for column in (*STAGES, "save"):
        compile_table.add_column(column, justify="right")
    for r in results:
        stages = (f"{r.stages_s[stage]:.3f}" for stage in STAGES)
        compile_table.add_row(r.model, f"{r.compile_s:.2f}", *stages, f"{r.save_s:.2f}")

    latency_table = Table(title="Single-thread latency, median (ms)")
    columns = ("model", "ours", "calls", "onnxruntime", "calls", "ours/ort", "max abs err", "logits rel err", "check")
    for column in columns:
        latency_table.add_column(column, justify="left" if column == "model" else "right")
    for r in results:
        logits = "-" if r.logits is None else f"{r.logits.max_scaled_error:.1e}"
        latency_table.add_row(r.model, milliseconds(r.ours.median_s), str(r.ours.calls),
                              milliseconds(r.onnxruntime.median_s), str(r.onnxruntime.calls), f"{r.ratio:.2f}",
                              f"{r.outputs.max_abs_error:.1e}", logits, "ok" if r.ok else "[red]FAILED[/red]")

    memory_table = Table(title="Bundle memory (bytes)")
    for column in ("model", "constant", "mutable", "activations"):
        memory_table.add_column(column, justify="left" if column == "model" else "right")
    for r in results:
        memory_table.add_row(r.model, *(f"{size:,}" for size in r.memory_bytes.values()))

    for table in (compile_table, latency_table, memory_table):
        console.print(table)


def environment() -> dict[str, str]:
    """What the figures depend on besides the code: CPU, compilers, runtimes."""
    cpu = platform.processor()
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as cpuinfo:
            cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), cpu)
    compiler = os.environ.get("CC", "cc")
    cc_version = subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    return {"cpu": cpu, "machine": platform.machine(), "cpus": str(os.cpu_count()),
            "python": platform.python_version(), "onnxruntime": ort.__version__, "cc": cc_version}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma-separated subset of {','.join(MODELS)} (default: all)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args()
    keys = [key.strip() for key in args.models.split(",") if key.strip()]
    unknown = [key for key in keys if key not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(MODELS)}")

    console = Console(width=None if sys.stdout.isatty() else 140)
    start = time.perf_counter()
    results = [bench_model(key, MODELS[key], console) for key in keys]
    elapsed = time.perf_counter() - start
    report(results, console)
    console.print(f"whole benchmark: {elapsed:.1f} s")

    if args.json:
        document = {"environment": environment(), "time_budget_s": TIME_BUDGET_S, "calibration_s": CALIBRATION_S,
                    "min_calls": MIN_CALLS, "tolerance": TOLERANCE, "elapsed_s": elapsed,
                    "results": [asdict(r) for r in results]}
        Path(args.json).write_text(json.dumps(document, indent=2) + "\n")
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
