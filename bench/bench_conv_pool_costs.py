"""Our fused convolution + pool kernels per layer, measured, against the estimates of
`glowmlir/backends/cmsis_nn/conv_pool_costs.py` (what `-use-cmsis` compares with CMSIS-NN).

For every layer of tests/support/cmsis_nn/conv_pool_costs.json (LeNet's two convolutions,
the CIFAR-sized net's two, the DS-CNN-style net's last pointwise one, MobileNetV2's last,
and single-layer nets: Conv (pads kernel // 2) + Relu + 2x2 stride-2 pool, quantized with
a profile of random inputs), on the core class's board (dsp: the M7 mps2-an500; generic:
the M3 mps2-an385; helium: the M55 mps3-an547), at -O3 with `-use-cmsis`: the layer's
instructions per inference in the layer profile (`glow-run -profile`'s counter). So that
the layer stays fused on our kernel whatever the estimate, the build is given a RAM size
no unfused layer fits (`ram_size=1`: "fusion needed to fit"), which changes nothing else
in the layer's code. The library columns of the table (the real CMSIS-NN, measured once,
see the JSON's "about") are not re-measured.

Prints, per layer, measured, estimated and the relative error; with `--update`, writes the
measured counts into the JSON's "ours" (the constants are then refitted by hand: `--fit`
prints least-squares figures on the relative error per core class and kind of kernel, and
the current constants' largest errors; `--fit-only` measures nothing). `--board` measures
on another board of the class (the M4, mps2-an386, for the dsp rows).

With `--cycles`, everything is in estimated core cycles at zero wait states instead
(`glowmlir.runtime.cycles`; the dsp rows on the M4, whose estimate follows its manual's
table), read from and written to the table's `*_cycles` columns, and `--cmsis-nn DIR`
(objects of the real CMSIS-NN built per core, `DIR` with `{core}` in it: m4, m3, m55; not
part of this repository) measures the library's side too, unfused (-memory-fusion=false).
The dsp and generic constants are fitted to cycles (`CostFigures.unit`).

    .venv/bin/python bench/bench_conv_pool_costs.py [--classes dsp,generic,helium] [--layers LeNet] [--board B]
                                                    [--update] [--fit] [--fit-only] [--cycles [--cmsis-nn DIR]]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

from bench.bench_cortex_m import MOBILENET, random_profile  # noqa: E402
from bench.bench_quantization import LENET, make_profile  # noqa: E402
from glowmlir.backends.cmsis_nn.conv_pool_costs import COSTS  # noqa: E402
from glowmlir.compiler import CompileOptions, QuantizationOptions  # noqa: E402
from glowmlir.layer_profile import profile_on_board, profiling_build  # noqa: E402
from glowmlir.quantization.profile import read_profile, write_profile  # noqa: E402
from glowmlir.runtime.boards import target_for  # noqa: E402
from tests.support.conv_pool_table import TABLE, table_rows, work_of_row  # noqa: E402
from tests.support.models import ds_cnn_style, small_convnet  # noqa: E402

STANDINS = os.path.join(ROOT, "tests", "support", "cmsis_nn", "standins.c")
BOARDS = {"dsp": "mps2-an500", "generic": "mps2-an385", "helium": "mps3-an547"}
CYCLE_BOARDS = {"dsp": "mps2-an386", "generic": "mps2-an385", "helium": "mps3-an547"}
"""Where cycles are measured: the dsp class on the M4, whose estimate follows its manual's
timing table (the M7's is llvm-mca's model)."""
MODEL_LAYERS = {"LeNet conv1": ("lenet", 0), "LeNet conv2": ("lenet", 1), "CIFAR-sized c1": ("cifar", 0),
                "CIFAR-sized c2": ("cifar", 1), "DS-CNN-style block3_pointwise": ("dscnn", 0),
                "MobileNetV2 features.18 (global mean)": ("mobilenet", 0)}
"""A model's layer -> (model, which of its fused convolution + pools, in the profile's order)."""


def single_layer(row: dict, seed: int = 0) -> onnx.ModelProto:
    """Conv (pads kernel // 2, stride 1) + Relu + 2x2 stride-2 max or average pool."""
    rng = np.random.default_rng(seed)
    (kernel_h, kernel_w), (height, width) = row["kernel"], row["output"]
    cin, cout = row["input_channels"], row["output_channels"]
    weights = rng.normal(0, np.sqrt(2 / (cin * kernel_h * kernel_w)), (cout, cin, kernel_h, kernel_w))
    initializers = [numpy_helper.from_array(weights.astype(np.float32), "w"),
                    numpy_helper.from_array(rng.normal(0, 0.1, cout).astype(np.float32), "b")]
    pool = "MaxPool" if row["layer"].endswith("max") else "AveragePool"
    nodes = [helper.make_node("Conv", ["data", "w", "b"], ["conv"], pads=[kernel_h // 2, kernel_w // 2] * 2),
             helper.make_node("Relu", ["conv"], ["relu"]),
             helper.make_node(pool, ["relu"], ["out"], kernel_shape=[2, 2], strides=[2, 2])]
    graph = helper.make_graph(nodes, "single_layer",
                              [helper.make_tensor_value_info("data", onnx.TensorProto.FLOAT, [1, cin, height, width])],
                              [helper.make_tensor_value_info("out", onnx.TensorProto.FLOAT, None)], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def model_files(directory: str, row: dict) -> tuple[str, str]:
    """(model, profile) of the network a row's layer is in."""
    name = MODEL_LAYERS[row["layer"]][0] if row["layer"] in MODEL_LAYERS else None
    if name == "lenet":
        profile = os.path.join(directory, "lenet.yaml")
        if not os.path.exists(profile):
            make_profile(profile)
        return LENET, profile
    if name == "mobilenet":
        path = MOBILENET
    else:
        path = os.path.join(directory, f"{row['layer'].replace(' ', '_')}.onnx" if name is None else f"{name}.onnx")
        if not os.path.exists(path):
            onnx.save(single_layer(row) if name is None else {"cifar": small_convnet, "dscnn": ds_cnn_style}[name](),
                      path)
    profile = os.path.join(directory, os.path.basename(path) + ".yaml")
    return path, profile if os.path.exists(profile) else pool_keeping_profile(path, directory)


def pool_keeping_profile(model_path: str, directory: str) -> str:
    """A profile of random inputs (`bench_cortex_m.random_profile`) in which each average
    pool's output has its input's range (as TFLite quantizes one): else the pool's output,
    narrower, gets a scale of its own, and a convolution does not fuse a pool that rescales."""
    import dataclasses

    path = random_profile(model_path, directory)
    profile = read_profile(path)
    for node in onnx.load(model_path).graph.node:
        if node.op_type in ("AveragePool", "GlobalAveragePool"):
            outputs = (node.output[0], f"{node.output[0]}__1")  # a graph output's node is renamed
            for name in [name for name in profile.entries if name.split(":")[0] in outputs]:
                profile.entries[name] = dataclasses.replace(profile.entries[f"{node.input[0]}:0"], name=name)
    write_profile(path, profile)
    return path


def row_inputs(bundle) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    inputs = {}
    for placeholder in bundle.layout.placeholders:
        if placeholder.kind == "input":
            value = rng.normal(size=placeholder.shape).astype(np.float32)
            if placeholder.quantization is not None:
                scale, offset = placeholder.quantization
                value = np.clip(np.rint(value / scale) + offset, -128, 127).astype(np.int8)
            inputs[placeholder.name] = value
    return inputs


def measure(row: dict, directory: str, board: str, cycles: bool = False) -> int:
    """Our fused kernel's instructions (or estimated cycles) for the row's layer on `board`."""
    model, profile = model_files(directory, row)
    options = CompileOptions(target=target_for(board, "O3"), quantization=QuantizationOptions(profile),
                             kernel_library="cmsis-nn", ram_size=1)
    bundle, _ = profiling_build(model, "kernels", options)
    layers = [r for r in profile_on_board(model, board, row_inputs(bundle), 0, options, link=[STANDINS]).rows
              if r.layer]
    if len(layers) != len(bundle.library_calls):
        raise RuntimeError(f"{row['layer']}: {len(layers)} layers, {len(bundle.library_calls)} kernel selections")
    # the selection lists the layers in the profile's order; a kept fusion's says "ours: ...",
    # one the library would not take "not CMSIS-NN: fused pooling ..."
    fused = [layer for layer, (op, _, detail) in zip(layers, bundle.library_calls)
             if op == "glowll.convolution" and (detail.startswith("ours") or "fused pool" in detail)]
    index = MODEL_LAYERS[row["layer"]][1] if row["layer"] in MODEL_LAYERS else 0
    return round(fused[index].cycles) if cycles else int(fused[index].amount)


def measure_library(row: dict, directory: str, board: str, objects: list[str]) -> tuple[int, int]:
    """The real CMSIS-NN's estimated cycles for the row's convolution and pool, unfused
    (-use-cmsis -memory-fusion=false), linked from `objects` built for the board's core."""
    model, profile = model_files(directory, row)
    options = CompileOptions(target=target_for(board, "O3"), quantization=QuantizationOptions(profile),
                             kernel_library="cmsis-nn", memory_fusion=False)
    bundle, _ = profiling_build(model, "kernels", options)
    rows = [r for r in profile_on_board(model, board, row_inputs(bundle), 0, options, link=objects).rows if r.layer]
    ops = [op for op, _, _ in bundle.library_calls]  # the layers' glowll ops (a library call's row says only that)
    pairs = [(rows[k], rows[k + 1]) for k in range(len(rows) - 1)
             if ops[k] == "glowll.convolution" and "pool" in ops[k + 1]]
    index = MODEL_LAYERS[row["layer"]][1] if row["layer"] in MODEL_LAYERS else 0
    convolution, pool = pairs[index]
    return round(convolution.cycles), round(pool.cycles)


FIT_TERMS = {"rows": ("macs", "outputs"), "gathered": ("macs", "gathered"), "helium": ("vector_macs", "outputs")}
"""The work each kind of our kernels is fitted on (`conv_pool_costs.CostFigures`): the DSP
kernels' gathered product per MAC and per gathered tap (a per-output term came out below
zero), their rows and the generic kernels per MAC and per output, Helium's column kernel
per vector MAC and per output."""


def fit(rows: list[dict], core: str, unit: str = "") -> None:
    """Least squares on the relative error of our estimate, per kind of kernel; then the
    current constants' largest errors and how often they pick the measured faster side
    (`unit` "_cycles": on the rows' cycles)."""
    rows = [row for row in rows if f"ours{unit}" in row]
    works = [work_of_row(row) for row in rows]
    kinds = ["helium" if core == "helium" else "gathered" if core == "dsp" and work.gathered else "rows"
             for work in works]
    libraries = [row[f"cmsis_nn_conv{unit}"] + row[f"cmsis_nn_pool{unit}"] for row in rows]
    for kind in sorted(set(kinds)):
        chosen = [(work, row[f"ours{unit}"]) for work, row, k in zip(works, rows, kinds) if k == kind]
        matrix = np.array([[getattr(work, term) / ours for term in FIT_TERMS[kind]] for work, ours in chosen])
        figures, *_ = np.linalg.lstsq(matrix, np.ones(len(chosen)), rcond=None)
        terms = ", ".join(f"per {term} {value:.3f}" for term, value in zip(FIT_TERMS[kind], figures))
        print(f"{core} {kind} ({len(chosen)} layers): {terms}")
    matrix = np.array([[work.macs / library, work.outputs / library, work.row_copies / library]
                       for work, library in zip(works, libraries)])
    figures, *_ = np.linalg.lstsq(matrix, np.ones(len(rows)), rcond=None)
    print(f"{core} CMSIS-NN ({len(rows)} layers): per MAC {figures[0]:.3f}, per output {figures[1]:.2f}, "
          f"per row copy {figures[2]:.2f}")
    costs = COSTS[core]
    ours_error = max(abs(costs.ours(work) / row[f"ours{unit}"] - 1) for work, row in zip(works, rows))
    library_error = max(abs(costs.library(work) / library - 1) for work, library in zip(works, libraries))
    same = sum((costs.ours(work) <= costs.library(work)) == (row[f"ours{unit}"] <= library)
               for work, row, library in zip(works, rows, libraries))
    print(f"{core} now: largest error ours {ours_error:.1%}, CMSIS-NN {library_error:.1%}; "
          f"same winner {same} of {len(rows)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", default="dsp,generic,helium")
    parser.add_argument("--layers", default="", help="only layers whose name contains this")
    parser.add_argument("--board", help="measure on this board instead of the class's (e.g. mps2-an386, the M4: "
                                        "dsp rows; not with --update)")
    parser.add_argument("--update", action="store_true", help="write the measured counts into the table")
    parser.add_argument("--fit-only", action="store_true", help="measure nothing: --fit on the table as it is")
    parser.add_argument("--fit", action="store_true", help="print least-squares constants of the table's rows "
                                                            "and the current constants' errors")
    parser.add_argument("--cycles", action="store_true", help="estimated cycles (glowmlir.runtime.cycles) instead "
                                                               "of instructions: the table's *_cycles columns")
    parser.add_argument("--cmsis-nn", help="with --cycles: also measure the real CMSIS-NN, from its objects built "
                                           "per core (a directory with {core} in it: m4, m3, m55)")
    args = parser.parse_args()
    unit = "_cycles" if args.cycles else ""
    with open(TABLE) as f:
        table = json.load(f)
    directory = tempfile.mkdtemp(prefix="bench-conv-pool-costs-")
    classes = args.classes.split(",")
    if not args.fit_only:
        print(f"{'class':8s} {'layer':40s} {'measured':>10s} {'table':>10s} {'estimate':>10s} {'error':>7s}",
              flush=True)
    for row in table["rows"]:
        if row["core_class"] not in classes or args.layers not in row["layer"] or args.fit_only:
            continue
        board = args.board or (CYCLE_BOARDS if args.cycles else BOARDS)[row["core_class"]]
        measured = measure(row, directory, board, args.cycles)
        estimate = COSTS[row["core_class"]].ours(work_of_row(row))
        print(f"{row['core_class']:8s} {row['layer']:40s} {measured:>10,} {row.get('ours' + unit, 0):>10,} "
              f"{estimate:>10,} {estimate / measured - 1:>+7.1%}", flush=True)
        if args.cmsis_nn and args.cycles:
            core = {"mps2-an386": "m4", "mps2-an500": "m7", "mps2-an385": "m3", "mps3-an547": "m55"}[board]
            objects = sorted(glob.glob(os.path.join(args.cmsis_nn.format(core=core), "*.o")))
            convolution, pool = measure_library(row, directory, board, objects)
            print(f"{'':8s} {'CMSIS-NN conv + pool':40s} {convolution:>10,} {pool:>10,}", flush=True)
            if args.update and not args.board:
                row["cmsis_nn_conv_cycles"], row["cmsis_nn_pool_cycles"] = convolution, pool
        if args.update and not args.board:
            row["ours" + unit] = measured
            if args.cycles:
                row["cycles_board"] = board
            with open(TABLE, "w") as f:
                json.dump(table, f, indent=1)
                f.write("\n")
    if args.fit or args.fit_only:
        for core in classes:
            fit([row for row in table_rows() if row["core_class"] == core], core, unit)


if __name__ == "__main__":
    main()
