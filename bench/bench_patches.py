"""Issue 38's patch-by-patch figures: the activations a patched first stage needs, the MACs its
halos add, and on the Cortex-M4 and M7 boards what it costs in estimated cycles, code and RAM.

For each plan (layer by layer, then each `-patches=CUT,N` given), on the host: the activations
region, the convolutions' multiply-accumulates (`glowll-execute-in-patches`'s `patched`, the
extra ones its halos cost), and the outputs, which must equal the layer-by-layer bundle's bit
for bit (int8 TFLite models: and TFLite Micro's, `tflite-micro`) on 3 random inputs; float
outputs are compared to rounding (the host's float kernels tile a smaller plane differently),
the largest difference relative to the largest output given. With
`--cores`, each plan also runs on the boards (QEMU; estimated cycles as bench_cortex_m.py
reports them, weights in flash), its outputs checked against the host bundle's.

    .venv/bin/python bench/bench_patches.py --model /work/shared/models/mlperf-tiny/vww_96_int8.tflite \\
        --plans 7,2 9,3 --cores m4,m7
    .venv/bin/python bench/bench_patches.py --model examples/mobilenet_v2/mobilenet_v2.onnx --plans 6,4
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

import glowmlir  # noqa: E402
from bench.board_outputs import check_board_outputs  # noqa: E402
from glowmlir.compiler import CompileOptions, import_network  # noqa: E402
from glowmlir.elf import code_size  # noqa: E402
from glowmlir.lowering.glow_to_glowll import LowerGlowToGlowLL  # noqa: E402
from glowmlir.pipeline import run_passes  # noqa: E402
from glowmlir.runtime.boards import run_on_board, target_for  # noqa: E402
from glowmlir.transforms.execute_in_patches import convolution_macs, patched  # noqa: E402

CORES = {"m4": "mps2-an386", "m7": "mps2-an500"}


def lowered(model: str):
    """The model's glowll module as `lower-glow-to-glowll` leaves it (host options)."""
    options = CompileOptions()
    module = import_network(model, options)
    run_passes(module, (*options.pipeline().glow, LowerGlowToGlowLL()))
    return module


def random_model_inputs(bundle, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    inputs = {}
    for placeholder in (p for p in bundle.layout.placeholders if p.kind == "input"):
        dtype = np.dtype(placeholder.dtype)
        shape = tuple(placeholder.shape)
        inputs[placeholder.given_name] = (rng.integers(-128, 128, shape).astype(dtype) if dtype.kind == "i"
                                    else rng.uniform(-1, 1, shape).astype(dtype))
    return inputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--plans", nargs="*", default=[], help="CUT,N: a -patches plan each")
    parser.add_argument("--cores", default="", help="some of m4,m7 (QEMU): cycles, code, constants, RAM")
    args = parser.parse_args()
    plans = [None] + [(plan.rpartition(",")[0], int(plan.rpartition(",")[2])) for plan in args.plans]
    module = lowered(args.model)
    macs = convolution_macs(module)
    tflite = open(args.model, "rb").read() if args.model.endswith(".tflite") else None
    base = glowmlir.compile(args.model)
    inputs = [random_model_inputs(base, seed) for seed in range(3)]
    expected = [base.run(values) for values in inputs]
    if tflite is not None:
        from tests.support.tflite_micro import run_micro
        for values, outputs in zip(inputs, expected, strict=True):
            for (name, reference), value in zip(run_micro(tflite, values).items(), outputs.values(), strict=True):
                assert np.array_equal(value.reshape(reference.shape), reference), f"{name}: not TFLite Micro's"
    print(f"{'plan':>14} {'activations':>12} {'MACs':>12} {'extra':>7}  outputs" +
          "".join(f" | {core} cycles    code constants    RAM" for core in filter(None, args.cores.split(","))))
    for plan in plans:
        bundle = base if plan is None else glowmlir.compile(args.model, patches=plan)
        extra = 0 if plan is None else patched(module, *plan).extra_macs
        worst = 0.0  # float outputs: the largest difference from layer by layer, relative to the largest output
        for values, outputs in zip(inputs, expected, strict=True):
            for name, value in bundle.run(values).items():
                if value.dtype.kind == "f":
                    worst = max(worst, float(np.abs(value - outputs[name]).max() / np.abs(outputs[name]).max()))
                else:
                    assert np.array_equal(value, outputs[name]), f"{plan}: {name} differs from layer by layer"
        same = "bit-identical" if worst == 0 else f"to {worst:.1e}"
        row = (f"{'layer by layer' if plan is None else f'{plan[0]},{plan[1]}':>14} "
               f"{bundle.layout.activations_size:>12,} {macs + extra:>12,} {extra / macs:>+7.1%}  {same}")
        for core in filter(None, args.cores.split(",")):
            board = CORES[core]
            options = {} if plan is None else {"patches": plan}
            on_board = glowmlir.compile(args.model, target=target_for(board, "O3"), **options)
            run = run_on_board(on_board, board, inputs[0], count_cycles=True)
            check_board_outputs(run.outputs, bundle, inputs[0])
            ram = on_board.layout.mutable_size + on_board.layout.activations_size
            row += (f" | {round(run.cycles.estimate):>12,} {code_size(on_board.object_code):>7,} "
                    f"{on_board.layout.constant_size:>9,} {ram:>6,}")
        print(row, flush=True)


if __name__ == "__main__":
    main()
