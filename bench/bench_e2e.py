"""End-to-end benchmark: glowmlir bundles against onnxruntime, single-threaded, on the host.

    .venv/bin/python bench/bench_e2e.py [--models lenet,mobilenet_v2,resnet50] [--json out.json]

The models (issue 15's set): LeNet (examples/lenet_mnist, trained), MobileNetV2
(examples/mobilenet_v2, random weights from its export) and the nine `light_*` models of the
onnx package (bvlc_alexnet, densenet121, inception_v1, inception_v2, resnet50, shufflenet,
squeezenet, vgg19, zfnet512), whose splat ConstantOfShape weights are replaced by seeded random
ones (`tests.support.models.randomized(model, SEED)`). Every model then has its last Softmax
removed (`tests.support.models.without_softmax`; DenseNet-121 has none), so the outputs compared
are logits, which depend on the input and on every layer. Both sides run this same prepared
model, saved under the original file name (so the bundle keeps its usual name).

For each model this measures, in one run:

compile time
    Each model is compiled in a fresh Python process of its own (`COMPILER_PROCESS`, run with
    this interpreter and this checkout's glowmlir): the wall seconds of `glowmlir.compile(model)`
    and the per-stage split the compiler records in `Bundle.timings` (import, glow, glowll,
    llvm, object). The module imports before the call are not counted; whatever the call does
    once per process (LLVM start-up, lazy imports) is, as it is for a user of glow-compile.
    The same process then saves the bundle; the seconds of `Bundle.save` are listed apart
    ("save"): not part of the compile time, but what a user of the bundle pays next, dominated
    by writing `<name>.weights.txt`.

peak compiler memory
    The compiling process's peak resident set size, VmHWM of /proc/self/status, read right
    after `glowmlir.compile` returns (before the save). It includes the interpreter and the
    imported modules; their share, VmHWM after `import glowmlir`, is listed beside it ("at
    start"). The compiler runs in that one process (no worker processes), so this is the
    compiler's whole peak. (Not `getrusage(RUSAGE_SELF).ru_maxrss`: Linux carries the
    parent's high-water mark across fork and exec into it, so it would report this bench's
    own peak. Where /proc is missing, ru_maxrss is the fallback.)

latency of the bundle
    Measured in C, not Python, so no interpreter or ctypes overhead is included. A small
    harness is generated against the saved bundle's static API header: the constant, mutable
    and activations regions are static arrays aligned with GLOW_MEM_ALIGN, the constant region
    is read from `<name>.weights.bin`, every input placeholder is filled with the deterministic
    pattern of `bench_input`, and the entry point is called once to warm up. Calling it
    repeatedly for CALIBRATION_S seconds then sets the number of calls N so the measurement
    takes about TIME_BUDGET_S seconds (at least MIN_CALLS); the N calls are timed one by one
    with clock_gettime(CLOCK_THREAD_CPUTIME_ID) and the median is reported. The harness is built with
    `cc -O2` and linked with the bundle's object file and -lm. After the timed calls it writes
    the output placeholders to a file for the correctness check.

latency of onnxruntime
    The prepared ONNX model in an InferenceSession with intra_op_num_threads=1 and
    inter_op_num_threads=1 and default graph optimizations, on the same input: a few warm-up
    runs, then N runs (N chosen the same way) each timed with time.thread_time; the median is
    reported. Both sides time the CPU time of their one thread, not the wall clock: on a
    machine shared with other work, time spent descheduled would otherwise count (a 3x3
    convolution measured 6.4 and 14.5 ms of wall time in consecutive runs under load, 6.5 and
    6.6 ms of thread time). This includes the Python overhead of `InferenceSession.run`, about 4 us per call
    here (measured on an Identity model), 2% of LeNet's time and negligible for the others.
    The light models are IR version 3, so onnxruntime treats their initializers as constants
    although they are also graph inputs: both sides run with the weights as constants.

ratio
    Our median latency divided by onnxruntime's: below 1 means the bundle is faster. The
    geometric mean of the ratios is taken over the models measured.

memory of the bundle
    The three region sizes of the bundle (CONSTANT_MEM_SIZE, MUTABLE_MEM_SIZE,
    ACTIVATIONS_MEM_SIZE), in bytes.

correctness
    The outputs written by the C harness (after all timed calls) are compared with
    onnxruntime's for the same input. The relative error of an output is its max abs error
    divided by its largest reference magnitude (elementwise ratios would blow up on logits
    near zero); the model's is the largest over its outputs, printed with the max abs error.

bars (issue 15)
    Latency ratio <= LATENCY_BAR on every model and geometric mean <= GEOMEAN_BAR; compile
    time <= COMPILE_BARS_S (10 s for every light model, 20 s for DenseNet-121; none for LeNet
    and MobileNetV2); relative error <= TOLERANCE. Each table marks a missed bar in red and a
    last table lists them all. A model that fails to compile or run is reported with its error
    and the others go on. The exit status is 1 when a model failed or its outputs miss
    TOLERANCE (so a broken bundle cannot pass for a fast one); missed speed and compile-time
    bars are reported but leave it 0.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import platform
import statistics
import string
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # tests.support, when run as bench/bench_e2e.py

import glowmlir  # noqa: E402
from glowmlir.bundle import BundleLayout  # noqa: E402
from glowmlir.names import legalize_name  # noqa: E402
from tests.support.models import LIGHT_DIR, randomized, without_softmax  # noqa: E402

LIGHT_MODELS = ("bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet",
                "squeezenet", "vgg19", "zfnet512")
MODELS = {
    "lenet": REPO / "examples" / "lenet_mnist" / "lenet_mnist.onnx",
    "mobilenet_v2": REPO / "examples" / "mobilenet_v2" / "mobilenet_v2.onnx",
    **{name: Path(LIGHT_DIR) / f"light_{name}.onnx" for name in LIGHT_MODELS},
}
SEED = 0  # of the light models' random weights

TIME_BUDGET_S = 2.5  # target duration of each latency measurement
CALIBRATION_S = 0.2  # time spent estimating the duration of one call before choosing N
MIN_CALLS = 20  # lower bound on the number of timed calls
ORT_WARMUP_RUNS = 3
STAGES = ("import", "glow", "glowll", "llvm", "object")

LATENCY_BAR = 1.0  # ours / onnxruntime, every model
GEOMEAN_BAR = 0.9  # geometric mean of the ratios
COMPILE_BARS_S = {**{name: 10.0 for name in LIGHT_MODELS}, "densenet121": 20.0}
TOLERANCE = 1e-5  # max abs error / max |reference|, every output


class BenchError(Exception):
    """A model that could not be compiled, built or run: the message says which step and why."""


def run_step(command: list[str], step: str, **options) -> subprocess.CompletedProcess:
    """Runs `command`; a failure raises BenchError naming `step` with the last line of stderr."""
    result = subprocess.run(command, capture_output=True, text=True, **options)
    if result.returncode:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        raise BenchError(f"{step} failed (exit status {result.returncode}): "
                         f"{lines[-1] if lines else 'no message'}")
    return result


# ----------------------------------------------------------------------------- models


def prepared_model(key: str) -> onnx.ModelProto:
    """The model as benchmarked: random weights for a light model, its last Softmax removed."""
    model = onnx.load(str(MODELS[key]))
    if key in LIGHT_MODELS:
        model = randomized(model, SEED)
    return without_softmax(model)


# ----------------------------------------------------------------------------- compiling

COMPILER_PROCESS = """
import pickle, resource, sys, time
from dataclasses import replace

import glowmlir

def high_water_kib():
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

model, bundle_dir, report = sys.argv[1:]
start_rss_kib = high_water_kib()
start = time.perf_counter()
bundle = glowmlir.compile(model)
compile_s = time.perf_counter() - start
peak_rss_kib = high_water_kib()
start = time.perf_counter()
bundle.save(bundle_dir)
save_s = time.perf_counter() - start
with open(report, "wb") as f:
    pickle.dump({"compile_s": compile_s, "stages_s": bundle.timings, "save_s": save_s,
                 "start_rss_kib": start_rss_kib, "peak_rss_kib": peak_rss_kib,
                 "layout": replace(bundle.layout, weights=(), constants=())}, f)
"""


@dataclass
class Compilation:
    compile_s: float
    stages_s: dict[str, float]
    save_s: float
    peak_rss_bytes: int  # peak RSS of the compiling process, after glowmlir.compile
    start_rss_bytes: int  # peak RSS of the same process after `import glowmlir`, before compiling
    layout: BundleLayout = field(repr=False)  # without the weights (they are in <name>.weights.bin)


def compile_in_process(model_path: Path, bundle_dir: Path, directory: Path) -> Compilation:
    """Compiles `model_path` into `bundle_dir` in a fresh Python process (see COMPILER_PROCESS)."""
    report = directory / "compilation.pickle"
    checkout = str(Path(glowmlir.__file__).resolve().parent.parent)  # the glowmlir this bench imported
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [checkout, os.environ.get("PYTHONPATH")]))}
    run_step([sys.executable, "-c", COMPILER_PROCESS, str(model_path), str(bundle_dir), str(report)],
             "glowmlir.compile", env=environment)
    with report.open("rb") as f:
        figures = pickle.load(f)
    return Compilation(figures["compile_s"], {stage: figures["stages_s"].get(stage, math.nan) for stage in STAGES},
                       figures["save_s"], figures["peak_rss_kib"] * 1024, figures["start_rss_kib"] * 1024,
                       figures["layout"])


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
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
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


def harness_source(layout: BundleLayout) -> str:
    """The C harness for the bundle of `layout`, using only the macros of its static header."""
    name = layout.name
    upper = name.upper()
    fills, writes = [], []
    for salt, p in enumerate(p for p in layout.placeholders if p.kind == "input"):
        if np.dtype(p.dtype) != np.float32:
            raise BenchError(f"input \"{p.name}\" is {np.dtype(p.dtype)}; the harness fills float32 only")
        fills.append(f"    fillInput((float *)GLOW_GET_ADDR(mutableWeight, {upper}_{p.name}), {p.size}, {salt});")
    for p in layout.placeholders:
        if p.kind == "output":
            writes.append(f"    fwrite(GLOW_GET_ADDR(mutableWeight, {upper}_{p.name}), 1, {p.byte_size}, outputs);")
    return HARNESS.substitute(name=name, NAME=upper, fill_inputs="\n".join(fills), write_outputs="\n".join(writes))


@dataclass
class Latency:
    median_s: float
    min_s: float
    calls: int


def time_bundle(layout: BundleLayout, bundle_dir: Path, directory: Path) -> tuple[Latency, dict[str, np.ndarray]]:
    """Builds the C harness in `directory` against the bundle saved in `bundle_dir` and runs it.

    Returns the latency and the outputs the harness wrote after its timed calls.
    """
    source = directory / "harness.c"
    source.write_text(harness_source(layout))
    executable = directory / "harness"
    compiler = os.environ.get("CC", "cc")
    run_step([compiler, "-O2", "-std=c99", f"-I{bundle_dir}", str(source), str(bundle_dir / f"{layout.name}.o"),
              "-lm", "-o", str(executable)], "building the C harness")
    outputs_path = directory / "outputs.bin"
    arguments = [bundle_dir / f"{layout.name}.weights.bin", outputs_path, TIME_BUDGET_S, CALIBRATION_S, MIN_CALLS]
    run = run_step([str(executable), *map(str, arguments)], "the C harness")
    fields = dict(line.split() for line in run.stdout.splitlines())
    latency = Latency(float(fields["median_s"]), float(fields["min_s"]), int(fields["calls"]))

    raw, outputs, offset = outputs_path.read_bytes(), {}, 0
    for p in layout.placeholders:
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
    probes, elapsed, start = 0, 0.0, time.thread_time()
    while elapsed < CALIBRATION_S:
        session.run(None, feeds)
        probes += 1
        elapsed = time.thread_time() - start
    calls = max(MIN_CALLS, int(TIME_BUDGET_S * probes / elapsed))
    seconds = []
    for _ in range(calls):
        start = time.thread_time()
        results = session.run(None, feeds)
        seconds.append(time.thread_time() - start)
    names = [legalize_name(o.name) for o in session.get_outputs()]
    return Latency(statistics.median(seconds), min(seconds), calls), dict(zip(names, results, strict=True))


# ----------------------------------------------------------------------------- correctness


@dataclass
class Agreement:
    """How far our outputs are from onnxruntime's, over all outputs."""

    max_abs_error: float  # max |ours - reference|
    max_rel_error: float  # each output's max abs error divided by its max |reference|
    ok: bool  # max_rel_error <= TOLERANCE (False on NaN)


def agreement(ours: dict[str, np.ndarray], reference: dict[str, np.ndarray]) -> Agreement:
    abs_errors, rel_errors = [], []
    for name, expected in reference.items():
        expected = np.asarray(expected, np.float64)
        actual = np.asarray(ours[name], np.float64).reshape(expected.shape)
        abs_errors.append(np.max(np.abs(actual - expected)))
        magnitude = np.max(np.abs(expected))
        rel_errors.append(abs_errors[-1] / magnitude if magnitude > 0 else abs_errors[-1])
    abs_error, rel_error = float(np.max(abs_errors)), float(np.max(rel_errors))  # np.max keeps NaN
    return Agreement(abs_error, rel_error, rel_error <= TOLERANCE)


# ----------------------------------------------------------------------------- benchmark


@dataclass
class Result:
    model: str
    path: str  # the original model; the benchmarked one is `prepared_model(model)`
    bundle: str | None = None
    compilation: Compilation | None = None
    ours: Latency | None = None
    onnxruntime: Latency | None = None
    ratio: float | None = None
    outputs: Agreement | None = None
    memory_bytes: dict[str, int] = field(default_factory=dict)
    error: str | None = None  # the step that failed and why

    @property
    def compile_bar_s(self) -> float | None:
        return COMPILE_BARS_S.get(self.model)

    def missed_bars(self) -> list[str]:
        """The bars this model misses, as short phrases (a failed model misses them all)."""
        if self.error is not None:
            return [f"failed: {self.error}"]
        missed = []
        if self.ratio > LATENCY_BAR:
            missed.append(f"latency ratio {self.ratio:.2f} > {LATENCY_BAR}")
        if self.compile_bar_s is not None and self.compilation.compile_s > self.compile_bar_s:
            missed.append(f"compile {self.compilation.compile_s:.1f} s > {self.compile_bar_s:.0f} s")
        if not self.outputs.ok:
            missed.append(f"relative error {self.outputs.max_rel_error:.1e} > {TOLERANCE:.0e}")
        return missed


def bench_model(key: str, console: Console) -> Result:
    result = Result(model=key, path=str(MODELS[key]))
    with tempfile.TemporaryDirectory(prefix=f"bench-{key}-") as temporary:
        directory = Path(temporary)
        model_path = directory / MODELS[key].name  # same file name, so the same bundle name
        bundle_dir = directory / "bundle"
        step = "preparing the model"
        try:
            onnx.save(prepared_model(key), str(model_path))
            console.print(f"[bold]{key}[/bold]: compiling {model_path.name} (own process) and saving the bundle")
            compilation = compile_in_process(model_path, bundle_dir, directory)
            layout = compilation.layout
            result.bundle, result.compilation = layout.name, compilation
            result.memory_bytes = {"constant": layout.constant_size, "mutable": layout.mutable_size,
                                   "activations": layout.activations_size}
            console.print(f"[bold]{key}[/bold]: timing the bundle (C harness)")
            step = "timing the bundle"
            result.ours, our_outputs = time_bundle(layout, bundle_dir, directory)
            console.print(f"[bold]{key}[/bold]: timing onnxruntime")
            step = "onnxruntime"
            result.onnxruntime, reference = time_onnxruntime(ort_session(model_path))
        except BenchError as error:
            result.error = str(error)
        except Exception as error:  # one model's failure must not stop the others
            result.error = f"{step}: {type(error).__name__}: {error}"
        else:
            result.ratio = result.ours.median_s / result.onnxruntime.median_s
            result.outputs = agreement(our_outputs, reference)
    if result.error:
        console.print(f"[bold]{key}[/bold]: [red]{result.error}[/red]")
    return result


def geometric_mean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values)) if values else math.nan


def milliseconds(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}"


def mebibytes(size: int) -> str:
    return f"{size / 2**20:,.0f}"


def marked(text: str, ok: bool) -> str:
    return text if ok else f"[red]{text}[/red]"


def table(title: str, columns: tuple[str, ...], text: tuple[str, ...] = ("model",)) -> Table:
    """A table whose `text` columns are aligned left and the others (figures) right."""
    result = Table(title=title)
    for column in columns:
        result.add_column(column, justify="left" if column in text else "right")
    return result


def report(results: list[Result], console: Console) -> None:
    measured = [r for r in results if r.error is None]
    failed = [r for r in results if r.error is not None]

    latency = table(f"Single-thread latency, median (ms); bar: ours/ort <= {LATENCY_BAR}",
                    ("model", "ours", "calls", "onnxruntime", "calls", "ours/ort"))
    for r in measured:
        latency.add_row(r.model, milliseconds(r.ours.median_s), str(r.ours.calls), milliseconds(r.onnxruntime.median_s),
                        str(r.onnxruntime.calls), marked(f"{r.ratio:.2f}", r.ratio <= LATENCY_BAR))
    geomean = geometric_mean([r.ratio for r in measured])
    latency.add_section()
    latency.add_row(f"geometric mean ({len(measured)} of {len(results)})", "", "", "", "",
                    marked(f"{geomean:.2f}", geomean <= GEOMEAN_BAR))

    compile_table = table("Compile time (s), own process; bar: light models 10, densenet121 20",
                          ("model", "total", *STAGES, "bar", "save"))
    for r in results:
        if r.compilation is None:
            continue
        c, bar = r.compilation, r.compile_bar_s
        compile_table.add_row(r.model, marked(f"{c.compile_s:.2f}", bar is None or c.compile_s <= bar),
                              *(f"{c.stages_s[stage]:.2f}" for stage in STAGES), "-" if bar is None else f"{bar:.0f}",
                              f"{c.save_s:.2f}")

    memory = table("Memory: compiler peak RSS (MiB), bundle regions (bytes)",
                   ("model", "compiler peak", "at start", "constant", "mutable", "activations"))
    for r in results:
        if r.compilation is None:
            continue
        memory.add_row(r.model, mebibytes(r.compilation.peak_rss_bytes), mebibytes(r.compilation.start_rss_bytes),
                       *(f"{size:,}" for size in r.memory_bytes.values()))

    correctness = table(f"Outputs against onnxruntime; bar: relative error <= {TOLERANCE:.0e}",
                        ("model", "max abs err", "max rel err", "check"))
    for r in measured:
        ok = r.outputs.ok
        correctness.add_row(r.model, f"{r.outputs.max_abs_error:.2e}", marked(f"{r.outputs.max_rel_error:.2e}", ok),
                            "ok" if ok else "[red]MISMATCH[/red]")
    for r in failed:
        correctness.add_row(r.model, "-", "-", "[red]FAILED[/red]")

    bars = table("Bars missed", ("model", "missed"), text=("model", "missed"))
    for r in results:
        for phrase in r.missed_bars():
            bars.add_row(r.model, f"[red]{phrase}[/red]")
    if not geomean <= GEOMEAN_BAR:
        bars.add_row("all", f"[red]geometric mean of the latency ratios {geomean:.2f} > {GEOMEAN_BAR}[/red]")
    if not bars.row_count:
        bars.add_row("all", "none")

    for t in (latency, compile_table, memory, correctness, bars):
        console.print(t)


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


def as_json(result: Result) -> dict:
    document = asdict(result)
    if document["compilation"] is not None:
        del document["compilation"]["layout"]
    document["missed_bars"] = result.missed_bars()
    return document


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
    results = [bench_model(key, console) for key in keys]
    elapsed = time.perf_counter() - start
    report(results, console)
    console.print(f"whole benchmark: {elapsed:.1f} s")

    if args.json:
        measured = [r.ratio for r in results if r.ratio is not None]
        document = {"environment": environment(), "seed": SEED, "time_budget_s": TIME_BUDGET_S,
                    "calibration_s": CALIBRATION_S, "min_calls": MIN_CALLS, "tolerance": TOLERANCE,
                    "bars": {"latency_ratio": LATENCY_BAR, "geomean_ratio": GEOMEAN_BAR, "compile_s": COMPILE_BARS_S},
                    "geomean_ratio": geometric_mean(measured), "elapsed_s": elapsed,
                    "results": [as_json(r) for r in results]}
        Path(args.json).write_text(json.dumps(document, indent=2) + "\n")
    return 0 if all(r.error is None and r.outputs.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
