"""Hybrid ("dynamic range") TFLite models in both weight forms on a Cortex-M board.

    .venv/bin/python bench/bench_hybrid_weights.py [MODEL.tflite ...] [--board mps2-an500]
        [--opt-levels O3,Os] [--inputs 3] [--json out.json]

A hybrid model keeps int8 weights for float layers (TensorFlow's `Optimize.DEFAULT` without a
representative dataset; default model: MLPerf Tiny's kws_ref_model_float32.tflite from
/work/shared/models/mlperf-tiny, not part of this repository). Each model is compiled for the
board (default the Cortex-M7 mps2-an500) with `-hybrid-weights=float` (weights dequantized at
compile time) and `-hybrid-weights=int8` (levels kept, dequantized by the kernel as it reads
them), each with `-tflite-hybrid-inputs=float` (the layers compute on their float input) and
`=quantized` (on it quantized per batch as TFLite's hybrid kernels do), and for each the table
gives

code        the bundle object's .text + .rodata;
constants   the bundle's constant region (weights);
flash       code + constants;
RAM         the mutable (inputs, outputs) and activations regions;
instr, cycles   one inference's instructions (QEMU plugin) and estimated core cycles at zero
            wait states (glowmlir.runtime.cycles);
vs litert   the largest difference of the board's outputs from ai-edge-litert's on the hybrid
            model (its hybrid kernels, reference resolver), relative to the output's range, over
            `--inputs` random inputs (uniform in [-1, 1));
vs host     the same against the host bundle of the float form with the same inputs setting
            (the two forms compute the same products; they differ by float rounding).

Then, for one generated layer of each kind (tests/support/tflite_hybrid.py), the two ways of
reproducing the interpreter's hybrid kernels: ours (the float layer on dequantized weights) and
TFLite's (its input quantized to int8 on the fly per batch, emulated by running the float
layer on that input), each against the interpreter's hybrid result, relative to its range.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

import glowmlir  # noqa: E402
from glowmlir.elf import code_size  # noqa: E402
from glowmlir.runtime.boards import run_on_board, target_for  # noqa: E402
from tests.support import tflite_models as tm  # noqa: E402
from tests.support.tflite_hybrid import (  # noqa: E402
    as_hybrid_kernels_quantize,
    hybrid_layer,
    quantizes_asymmetrically,
)

KWS = "/work/shared/models/mlperf-tiny/kws_ref_model_float32.tflite"
FORMS = ("float", "int8")
INPUTS = ("float", "quantized")


def relative(ours: np.ndarray, reference: np.ndarray) -> float:
    return float(np.abs(ours.reshape(reference.shape) - reference).max() / np.ptp(reference))


def measure(path: str, board: str, level: str, form: str, hybrid_inputs: str, inputs: list[dict]) -> dict:
    data = open(path, "rb").read()
    bundle = glowmlir.compile(path, hybrid_weights=form, tflite_hybrid_inputs=hybrid_inputs,
                              target=target_for(board, level))
    host = glowmlir.compile(path, hybrid_weights="float", tflite_hybrid_inputs=hybrid_inputs)
    figures = {"code": code_size(bundle.object_code), "constants": bundle.layout.constant_size,
               "ram": bundle.layout.mutable_size + bundle.layout.activations_size,
               "vs_litert": 0.0, "vs_float": 0.0}
    figures["flash"] = figures["code"] + figures["constants"]
    for position, feed in enumerate(inputs):
        run = run_on_board(bundle, board, feed, count_cycles=position == 0)
        if position == 0:
            figures["instructions"], figures["cycles"] = run.instructions, round(run.cycles.estimate)
        reference, ours = tm.run_reference(data, feed), host.run(feed)
        for name, value in reference.items():
            figures["vs_litert"] = max(figures["vs_litert"], relative(run.outputs[name], value))
            figures["vs_float"] = max(figures["vs_float"], relative(run.outputs[name], ours[name]))
    return figures


def semantics() -> list[tuple[str, float, float]]:
    """(layer, ours vs the interpreter, TFLite's input quantization emulated vs the interpreter)."""
    rows = []
    for opcode, per_channel in (("CONV_2D", False), ("CONV_2D", True), ("DEPTHWISE_CONV_2D", True),
                                ("FULLY_CONNECTED", False)):
        hybrid = hybrid_layer(opcode, per_channel=per_channel)
        dequantized = hybrid_layer(opcode, dequantized_in_file=True, per_channel=per_channel)
        ours = emulated = 0.0
        for seed in range(5):
            x = tm.random_inputs(hybrid, seed=seed)["x"]
            interpreter = tm.run_reference(hybrid, {"x": x})["y"]
            float_layer = tm.run_reference(dequantized, {"x": x})["y"]
            quantized_input = as_hybrid_kernels_quantize(x, quantizes_asymmetrically(opcode, per_channel))
            ours = max(ours, relative(float_layer, interpreter))
            emulated = max(emulated, relative(tm.run_reference(dequantized, {"x": quantized_input})["y"], interpreter))
        rows.append((f"{opcode} {'per-channel' if per_channel else 'per-tensor'}", ours, emulated))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="*", default=[KWS])
    parser.add_argument("--board", default="mps2-an500")
    parser.add_argument("--opt-levels", default="O3")
    parser.add_argument("--inputs", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args()
    results = {}
    print(f"{'model':28s} {'level':5s} {'form':5s} {'inputs':9s} {'code':>8s} {'constants':>10s} {'flash':>8s} "
          f"{'RAM':>8s} {'instr':>12s} {'cycles':>12s} {'vs litert':>10s} {'vs host':>9s}")
    for path in args.models:
        data = open(path, "rb").read()
        inputs = [tm.random_inputs(data, seed=seed) for seed in range(args.inputs)]
        for level in args.opt_levels.split(","):
            for hybrid_inputs, form in ((i, f) for i in INPUTS for f in FORMS):
                f = measure(path, args.board, level, form, hybrid_inputs, inputs)
                results[f"{os.path.basename(path)} {level} {form} {hybrid_inputs}"] = f
                print(f"{os.path.basename(path):28s} {level:5s} {form:5s} {hybrid_inputs:9s} {f['code']:>8,} "
                      f"{f['constants']:>10,} {f['flash']:>8,} {f['ram']:>8,} {f['instructions']:>12,} "
                      f"{f['cycles']:>12,} {f['vs_litert']:>10.2e} {f['vs_float']:>9.1e}", flush=True)
    print("\nreproducing the interpreter's hybrid kernels (largest difference / output range, 5 inputs):")
    print(f"{'layer':32s} {'dequantized weights (ours)':>27s} {'input quantized (TFLite)':>25s}")
    for layer, ours, emulated in semantics():
        results[f"semantics {layer}"] = {"ours": ours, "input_quantized": emulated}
        print(f"{layer:32s} {ours:>27.2e} {emulated:>25.2e}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
