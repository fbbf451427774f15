"""Issue 14's figures: int8 speed and code size on every Cortex-M core, our kernels.

For each model (LeNet, a CIFAR-10-sized conv net, MobileNetV2 0.35 96x96, a DS-CNN-style
keyword-spotting net) quantized with a profile of random (LeNet: the example digits)
calibration inputs, and each core (M3 mps2-an385, M4 mps2-an386, M7 mps2-an500, M33
mps2-an505, M55 mps3-an547), at -O3, -Os and -Oz (size-first: equal-shaped int8 layers share
one kernel, docs/code-size.md):

instructions
    per inference, counted exactly by the QEMU plugin (a build running the network twice
    minus one running it once), weights in flash. Instructions are not cycles:
cycles
    per inference, estimated core cycles at zero wait states (glowmlir.runtime.cycles: the
    TRM timing tables on M3/M4/M33, a taken branch 1+P with P=1; llvm-mca's models on the
    M7 and M55, a "model estimate"), and cycles / instruction;
multiplies
    how many of those instructions multiply (integer MUL/MLA/UMULL/SMLAL/SMLAD/SMMULR..., FP
    VMUL/VMLA/VFMA..., Helium VMLAV/VMLADAV/VMULH...; the list and the rule are in
    glowmlir/runtime/multiplies.py), counted by the same plugin. One SMLAD forms two
    products, one VMLAVA.S8 sixteen: the count is of instructions, not of products.
code
    the bundle object's .text + .rodata (weights are not in it);
constants
    the bundle's constant region (weights, and at -Os/-Oz the layers' quantization records);
RAM
    the bundle's mutable (inputs, outputs) and activations regions.

`--models` also takes the MLPerf Tiny int8 reference models (kws, vww, ic, ad; from
`--mlperf-tiny DIR`, default /work/shared/models/mlperf-tiny; not part of this repository),
run on random int8 inputs.

With `--cmsis-nn DIR` (objects of the real CMSIS-NN built for each core, `DIR` with `{core}`
in it, e.g. /work/ext/obj-{core}; the library is not part of this repository), each model
also runs with `-use-cmsis -memory-fusion=false` linked against them: the "cmsis" rows.

On M4, M7, M33 and M55 the int8 convolutions and FullyConnected run on the DSP extension
(`glowll-select-arm-dsp-kernels`); M3 has none and shows the generic int8 kernels. The float
build at -O3 on the M7 gives the int8 / float ratio.

Outputs are checked on every run: the board's equal the host bundle's (the same model and
profile compiled for the host; with --cmsis-nn, the library's run against the host bundle of
the same options, `-use-cmsis -memory-fusion=false`, whose weights are quantized
symmetrically for the library, linked with the stand-ins) bit for bit (float
builds: to 1e-5 relative), or the script stops; and the last column gives the largest
difference of the board's (dequantized) outputs from onnxruntime's on the float model (an
independent reference, none for the MLPerf Tiny TFLite models; int8 is not expected to
equal it). The profile's calibration inputs (seed 0) are not the measured input (seed 1).

    .venv/bin/python bench/bench_cortex_m.py [--models lenet,cifar,mobilenet,dscnn] [--cores m7,m55]
        [--opt-levels Os,Oz] [--flash-size 4M] [--json out]

`--flash-size` compiles every build with -flash-size (on the DSP cores the fastest packed
filters that fit it beside 48 KB of code; without it, the constants stay within twice the
int8 weights: backends/arm_dsp/flash_budget.py).

The float build (and the int8 / float ratio) runs only when O3 is among the levels.
"""

from __future__ import annotations

import argparse
import functools
import glob
import json
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

import glowmlir  # noqa: E402
from bench.bench_quantization import LENET, board_input, make_profile  # noqa: E402
from bench.board_outputs import check_board_outputs  # noqa: E402
from glowmlir.compiler import CompileOptions, QuantizationOptions  # noqa: E402
from glowmlir.elf import code_size  # noqa: E402
from glowmlir.errors import GlowError  # noqa: E402
from glowmlir.memory_report import parse_size  # noqa: E402
from glowmlir.profiling import Profiler  # noqa: E402
from glowmlir.quantization.profile import write_profile  # noqa: E402
from glowmlir.runtime.boards import run_on_board, target_for  # noqa: E402
from glowmlir.runtime.host import HostRunner  # noqa: E402
from tests.support.models import ds_cnn_style, small_convnet  # noqa: E402

STANDINS = os.path.join(ROOT, "tests", "support", "cmsis_nn", "standins.c")

MOBILENET = os.path.join(ROOT, "examples", "mobilenet_v2", "mobilenet_v2.onnx")
CORES = {"m3": "mps2-an385", "m4": "mps2-an386", "m7": "mps2-an500", "m33": "mps2-an505", "m55": "mps3-an547"}
BARS = {"lenet": 3_500_000, "mobilenet": 30_000_000}
"""Issue 14's bars on the M7 (instructions per inference, -O3)."""
MOBILENET_CODE_BAR_OS = 32 * 1024
"""Issue 14's bar on MobileNetV2's int8 code at -Os (bytes)."""
LEVELS = ("O3", "Os", "Oz")


def random_profile(model_path: str, directory: str, samples: int = 8, seed: int = 0) -> str:
    """A quantization profile of the model over `samples` standard-normal inputs."""
    profiler = Profiler.for_model(model_path, CompileOptions())
    rng = np.random.default_rng(seed)
    shapes = profiler.input_shapes()
    for _ in profiler.run({name: rng.normal(size=shape).astype(np.float32) for name, shape in shapes.items()}
                          for _ in range(samples)):
        pass
    path = os.path.join(directory, os.path.basename(model_path) + ".yaml")
    write_profile(path, profiler.profile)
    return path


MLPERF_TINY = {"kws": "kws_ref_model.tflite", "vww": "vww_96_int8.tflite", "ic": "pretrainedResnet_quant.tflite",
               "ad": "ad01_int8.tflite"}


def models(directory: str, names: list[str], mlperf_tiny: str) -> dict[str, tuple[str, str | None]]:
    """name -> (model path, profile path; None for an int8 TFLite model)."""
    found = {}
    for name in names:
        if name in MLPERF_TINY:
            found[name] = (os.path.join(mlperf_tiny, MLPERF_TINY[name]), None)
            continue
        if name == "lenet":
            profile = os.path.join(directory, "lenet.yaml")
            make_profile(profile)
            found[name] = (LENET, profile)
            continue
        if name == "mobilenet":
            path = MOBILENET
        else:
            path = os.path.join(directory, f"{name}.onnx")
            onnx.save({"cifar": small_convnet, "dscnn": ds_cnn_style}[name](), path)
        found[name] = (path, random_profile(path, directory))
    return found


@functools.cache
def references(model: str, profile: str | None) -> tuple[dict, dict, object]:
    """The measured input (as the bundle takes it), onnxruntime's outputs on its float form
    (none for an int8 TFLite model), and the host bundle of the same model and profile."""
    quantization = QuantizationOptions(profile) if profile else None
    host = glowmlir.compile(model, quantization=quantization)
    rng = np.random.default_rng(1)
    floats, inputs = {}, {}
    for placeholder in (p for p in host.layout.placeholders if p.kind == "input"):
        dtype = np.dtype(placeholder.dtype)
        if placeholder.name == "data" or dtype.kind == "f":  # "data": quantized as the bundle takes it
            floats[placeholder.name] = rng.normal(size=placeholder.shape).astype(np.float32)
            inputs[placeholder.name] = board_input(host, floats[placeholder.name])
        else:  # an int8 TFLite model's input
            limits = np.iinfo(dtype)
            inputs[placeholder.name] = rng.integers(limits.min, limits.max + 1, placeholder.shape).astype(dtype)
    expected = {}
    if model.endswith(".onnx"):
        session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        expected = dict(zip(names, session.run(None, {i.name: floats[i.name] for i in session.get_inputs()})))
    return inputs, expected, host


@functools.cache
def library_host(model: str, profile: str | None):
    """The host bundle of the --cmsis-nn rows' options (-use-cmsis -memory-fusion=false: its
    weights quantized symmetrically, as the library takes them, unlike the plain host
    bundle's), its library calls linked with the stand-ins (the library's arithmetic)."""
    quantization = QuantizationOptions(profile) if profile else None
    host = glowmlir.compile(model, quantization=quantization, kernel_library="cmsis-nn", memory_fusion=False)
    host.runner = HostRunner(host.layout, host.object_code, link=[STANDINS])  # Bundle.run runs it
    return host


def dequantized(bundle, name: str, value: np.ndarray) -> np.ndarray:
    quantization = bundle.layout.placeholder(name).quantization
    if quantization is None:
        return value.astype(np.float32)
    scale, offset = quantization
    return (value.astype(np.float32) - offset) * np.float32(scale)


def measure(model: str, profile: str | None, board: str, level: str, library: list[str] | None = None,
            flash_size: int | None = None, extra: dict | None = None) -> dict:
    """One model on one board: with `library` (the real CMSIS-NN's objects), -use-cmsis
    -memory-fusion=false; with `flash_size`, -flash-size; `extra`: more compile options.
    The board's outputs are checked against the host bundle's."""
    quantization = QuantizationOptions(profile) if profile else None
    options = {"kernel_library": "cmsis-nn", "memory_fusion": False} if library else {}
    options.update(extra or {})
    if flash_size is not None:
        options["flash_size"] = flash_size
    bundle = glowmlir.compile(model, quantization=quantization, target=target_for(board, level), **options)
    inputs, expected, host = references(model, profile)
    run = run_on_board(bundle, board, inputs, count_cycles=True, link=library or ())
    check_board_outputs(run.outputs, library_host(model, profile) if library else host, inputs)
    worst = float("nan")
    for name, value in run.outputs.items():
        if name in expected:
            reference = expected[name]
            board_value = dequantized(bundle, name, value.reshape(reference.shape))
            worst = np.nanmax([worst, float(np.abs(board_value - reference).max())])
    return {"instructions": run.instructions, "cycles": round(run.cycles.estimate), "multiplies": run.multiplies,
            "code": code_size(bundle.object_code), "constants": bundle.layout.constant_size,
            "ram": bundle.layout.mutable_size + bundle.layout.activations_size, "vs_onnxruntime": worst}


def print_row(name: str, core: str, level: str, figures: dict) -> None:
    print(f"{name:10s} {core:5s} {level:6s} {figures['instructions']:>14,} {figures['cycles']:>14,} "
          f"{figures['cycles'] / figures['instructions']:>5.2f} {figures['multiplies']:>12,} "
          f"{figures['code']:>9,} {figures['constants']:>12,} {figures['ram']:>9,} "
          f"{figures['vs_onnxruntime']:>8.4f}", flush=True)


def print_code_table(results: dict, cores: list[str], levels: list[str]) -> None:
    """Code bytes per model and core, one column per optimization level."""
    print(f"\n{'code B':16s} " + " ".join(f"{level:>8s}" for level in levels))
    for name, figures in results.items():
        for core in cores:
            print(f"{name:10s} {core:5s} " + " ".join(f"{figures[f'{core} {level}']['code']:>8,}" for level in levels))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="lenet,cifar,mobilenet,dscnn")
    parser.add_argument("--cores", default=",".join(CORES))
    parser.add_argument("--opt-levels", default=",".join(LEVELS), help="some of O3, Os, Oz")
    parser.add_argument("--json")
    parser.add_argument("--mlperf-tiny", default="/work/shared/models/mlperf-tiny")
    parser.add_argument("--cmsis-nn", help="objects of the real CMSIS-NN per core: a directory with {core} in it")
    parser.add_argument("--flash-size", help="-flash-size for every build, e.g. 4M (default: none, the constants "
                                             "within 1.25x the int8 weights on the DSP cores)")
    args = parser.parse_args()
    flash_size = parse_size("flash-size", args.flash_size) if args.flash_size else None
    levels = args.opt_levels.split(",")
    if unknown := set(levels) - set(LEVELS):
        parser.error(f"--opt-levels: unknown level(s) {', '.join(sorted(unknown))} (expected some of O3, Os, Oz)")
    directory = tempfile.mkdtemp(prefix="bench-cortex-m-")
    results = {}
    print(f"{'model':10s} {'core':5s} {'opt':6s} {'instructions':>14s} {'cycles':>14s} {'c/i':>5s} "
          f"{'multiplies':>12s} {'code B':>9s} {'constants B':>12s} {'RAM B':>9s} {'vs ORT':>8s}", flush=True)
    for name, (model, profile) in models(directory, args.models.split(","), args.mlperf_tiny).items():
        results[name] = {}
        for core in args.cores.split(","):
            for level in levels:
                figures = measure(model, profile, CORES[core], level, flash_size=flash_size)
                results[name][f"{core} {level}"] = figures
                print_row(name, core, level, figures)
                if args.cmsis_nn:
                    objects = sorted(glob.glob(os.path.join(args.cmsis_nn.format(core=core), "*.o")))
                    if not objects:
                        parser.error(f"--cmsis-nn: no objects in {args.cmsis_nn.format(core=core)}")
                    figures = measure(model, profile, CORES[core], level, objects)
                    results[name][f"{core} {level} cmsis"] = figures
                    print_row(name, core, f"{level}+c", figures)
        if "m7" in args.cores.split(",") and "O3" in levels and profile is not None:
            bar = f"; bar {BARS[name]:,}" if name in BARS else ""
            try:
                float_m7 = measure(model, None, CORES["m7"], "O3")
            except GlowError as error:  # a bundle the board has no memory for (runtime/boards.py)
                print(f"{name}: float on the M7 not run ({str(error)[:60]}){bar}", flush=True)
                continue
            results[name]["m7 O3 float"] = float_m7
            ratio = results[name]["m7 O3"]["instructions"] / float_m7["instructions"]
            print(f"{name}: float on the M7 {float_m7['instructions']:,} instructions, {float_m7['cycles']:,} cycles "
                  f"({float_m7['multiplies']:,} multiplies), int8 / float {ratio:.2f}{bar}", flush=True)
    print_code_table(results, args.cores.split(","), levels)
    if "mobilenet" in results and "m7 Os" in results["mobilenet"]:
        code = results["mobilenet"]["m7 Os"]["code"]
        print(f"MobileNetV2 int8 code at -Os on the M7: {code:,} B (bar {MOBILENET_CODE_BAR_OS:,}: "
              f"{'met' if code <= MOBILENET_CODE_BAR_OS else 'not met'})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
