"""Int8 on a PP-OCR-cls-style net whose activations are written out (issue 42): a
MobileNetV3-small (scale 0.35) text-direction classifier, 1x3x48x192, random weights,
HardSwish as Add -> Clip -> Mul -> Div and HardSigmoid as Mul -> Add -> Clip
(`tests.support.models.ppocr_cls_style`; the gates' Mul and Add fold into their convolution,
glow-fold-batchnorm, and the Clip fuses into it), profiled on 20 random inputs.

Builds: float; int8 (the default pipeline, `glow-fold-lookup-tables` folding each chain into
one table, which `glowll-fuse-lookup-tables` applies in the kernel of the convolution before
it, as it stores); int8 with each table a pass of its own (no `glowll-fuse-lookup-tables`);
int8 without either pass (op by op, as before issue 42). The passes are switched off in
this process only. On the host: µs per inference (the entry point on inputs in place, the
best of interleaved batches), onnxruntime's float and int8 (its `quantize_static` QDQ model
of the same calibration) timed in the same run, and the elementwise share of each build
(`glow-run -profile`'s host profile: elementwise instructions and lookup tables). On the
Cortex-M7 (mps2-an500, weights in flash): instructions per inference, elementwise share
(the board profile), estimated cycles (`glow-run -cycles`) and their elementwise share,
flash (code + weights) and RAM (inputs/outputs + activations). Accuracy:
top-1 agreement with float of the logits (centred on their held-out mean: random weights)
on `--held-out` inputs, and RMS error vs float, ours against onnxruntime's int8.

`--model PATH`: an exported classifier instead (not committed; e.g. PP-OCR's own
`ch_ppocr_mobile_v2.0_cls_infer.onnx` from the rapidocr-onnxruntime wheel): its input fixed
to 1x3x48x192, each Conv named after its filter (Paddle's names say "depthwise" and "_se_"),
calibrated and held out on uniform [-1, 1] inputs.

`--mattr F` adds to the host's features for the host builds, as glow-compile's `-mattr` does
(`--mattr=-avx512f`: AVX2 + FMA code on an AVX-512 host).

`--board aarch64`: the board rows on AArch64 (NEON, Cortex-A53 code under qemu-aarch64),
instructions only; with `--layers`, each convolution's instructions there too.

`--quantization-schema S` and `--enable-channelwise` quantize as glow-compile's options of
those names (default: Glow's asymmetric schema, per-tensor filters).

    .venv/bin/python bench/bench_lookup_table_folding.py [--markdown] [--no-boards | --no-host] [--held-out N]
        [--board NAME] [--layers] [--model PATH] [--mattr F] [--quantization-schema S] [--enable-channelwise]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import tempfile
import time

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import glowmlir  # noqa: E402
from bench.tables import print_columns  # noqa: E402
from glowmlir.compiler import CompileOptions, QuantizationOptions  # noqa: E402
from glowmlir.elf import code_size  # noqa: E402
from glowmlir.layer_profile import profile_on_board, profile_on_host  # noqa: E402
from glowmlir.memory_report import BOARDS as MEMORY_PRESETS  # noqa: E402
from glowmlir.memory_report import memory_report  # noqa: E402
from glowmlir.names import legalize_name  # noqa: E402
from glowmlir.runtime.boards import board, run_on_board, target_for  # noqa: E402
from glowmlir.target import HOST  # noqa: E402
from glowmlir.targets import resolve_target  # noqa: E402
from glowmlir.transforms.fold_lookup_tables import FoldLookupTables  # noqa: E402
from glowmlir.transforms.fuse_lookup_tables import FuseLookupTables  # noqa: E402
from tests.support.models import ppocr_cls_style, quantized_by_onnxruntime, without_softmax  # noqa: E402

BOARD = "mps2-an500"
ELEMENTWISE_KINDS = ("elementwise", "int_lookup_table")


@contextlib.contextmanager
def without(*passes: type):
    """The passes do nothing inside (builds for comparison)."""
    applies = [compiler_pass.apply for compiler_pass in passes]
    for compiler_pass in passes:
        compiler_pass.apply = lambda self, ctx, op: None
    try:
        yield
    finally:
        for compiler_pass, apply in zip(passes, applies):
            compiler_pass.apply = apply


INT8_BUILDS = {"int8": (), "int8 tables apart": (FuseLookupTables,),
               "int8 op by op": (FoldLookupTables, FuseLookupTables)}
"""The int8 builds: the passes each goes without."""


def passes_of(name: str):
    """The context a build is made (and profiled) in."""
    return without(*INT8_BUILDS.get(name, ()))


def best_time(call, rounds: int = 20, runs: int = 20) -> float:
    """µs per call: the best of `rounds` batches of `runs` calls."""
    call()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter_ns()
        for _ in range(runs):
            call()
        best = min(best, (time.perf_counter_ns() - start) / runs / 1000)
    return best


def host_times(builds: dict, sessions: dict, sample: dict, rounds: int = 20, runs: int = 20) -> dict[str, float]:
    """µs per inference of each build (entry point, inputs in place) and onnxruntime session,
    the best of `rounds` batches each, the batches taking turns."""
    best = dict.fromkeys([*builds, *sessions], float("inf"))
    for bundle in builds.values():
        bundle.run(sample)
    for _ in range(rounds):
        for name, bundle in builds.items():
            best[name] = min(best[name], sum(bundle.runner.time_calls(runs)) / runs / 1000)
        for name, session in sessions.items():
            best[name] = min(best[name], best_time(lambda s=session: s.run(None, sample), 1, runs))
    return best


CONVOLUTION_GROUPS = {"depthwise": lambda node: "depthwise" in node,
                      "squeeze-excitation 1x1": lambda node: "_se_" in node,
                      "other (stem, 1x1 expand/project)": lambda node: "depthwise" not in node and "_se_" not in node}


def convolution_times(profile) -> dict[str, float]:
    """The profile's convolution rows summed by `CONVOLUTION_GROUPS` (by node name)."""
    return {group: sum(row.amount for row in profile.rows if row.kind == "convolution" and belongs(row.name))
            for group, belongs in CONVOLUTION_GROUPS.items()}


LAYER_BUILDS = ("int8", "int8 tables apart")
"""The int8 builds `--layers` compares with float layer by layer: a layer of the default build
may apply its activation's table in its output step (fused), which float's layer does not (its
activation is elementwise ops of its own); with the tables apart both layers are the
convolution alone."""


def print_convolution_layers(float_profile, int8_profiles: dict, markdown: bool, unit: str = "µs",
                             fused_tables: set[str] = frozenset()) -> None:
    """Each convolution of the float build beside the int8 builds' (`LAYER_BUILDS`) of the same
    node name: `unit` (host µs, a board's instructions) in the layer-profiling builds, and their
    ratios; for a convolution whose default int8 layer applies its activation's table
    (`fused_tables`), also float's layer with its activation's rows (`name_activations`) and
    the int8 layer against that."""
    int8_rows = {build: {row.name: row for row in profile.rows if row.kind == "convolution"}
                 for build, profile in int8_profiles.items()}
    activations: dict[str, float] = {}
    for row in float_profile.rows:
        if "_activation_" in row.name:
            conv = row.name.rsplit("_activation_", 1)[0]
            activations[conv] = activations.get(conv, 0.0) + row.amount

    def line(cells) -> None:
        print(f"| {' | '.join(cells)} |" if markdown else "  ".join(cells))

    header = ["convolution", f"float {unit}"]
    for build in int8_rows:
        header += [f"{build} {unit}", f"{build} / float"]
    header += [f"float with its activation {unit}", f"{LAYER_BUILDS[0]} / float with its activation"]
    line(header)
    if markdown:
        line(("---",) * len(header))
    for row in float_profile.rows:
        if row.kind == "convolution" and all(row.name in rows for rows in int8_rows.values()):
            cells = [row.name, f"{row.amount:,.2f}"]
            for rows in int8_rows.values():
                amount = rows[row.name].amount
                cells += [f"{amount:,.2f}", f"{amount / row.amount:.2f}"]
            if row.name in fused_tables:
                with_activation = row.amount + activations.get(row.name, 0.0)
                amount = int8_rows[LAYER_BUILDS[0]][row.name].amount
                cells += [f"{with_activation:,.2f}", f"{amount / with_activation:.2f}"]
            else:
                cells += ["", ""]
            line(cells)


def fused_table_layers(bundle) -> set[str]:
    """The names of the convolutions that apply a lookup table in their output step (their
    `lookup_table` operand and `lookup_input` type in the bundle's glowll IR)."""
    return {match.group(1) for line in bundle.ir["glowll"].splitlines()
            if "glowll.convolution" in line and "lookup_input" in line
            for match in [re.search(r'name = "([^"]+)"', line)] if match}


INPUT_SHAPE = (1, 3, 48, 192)


def exported_model(path: str) -> onnx.ModelProto:
    """An exported classifier as the bench takes it: its one input's dimensions fixed to
    `INPUT_SHAPE`, each Conv named after its filter, and nodes after the last Softmax that only
    pass its output on (Paddle's Identity) removed, so that `without_softmax` leaves logits."""
    model = onnx.load(path)
    for dimension, size in zip(model.graph.input[0].type.tensor_type.shape.dim, INPUT_SHAPE):
        dimension.Clear()
        dimension.dim_value = size
    for node in model.graph.node:
        if node.op_type == "Conv":
            node.name = node.input[1].removesuffix("_weights")
    softmax = next(n for n in reversed(model.graph.node) if n.op_type == "Softmax")
    while model.graph.node[-1] is not softmax and model.graph.node[-1].op_type == "Identity":
        model.graph.output[0].name = model.graph.node[-1].input[0]
        model.graph.node.pop()
    return model


ACTIVATION_OPS = {"Add", "Sub", "Mul", "Div", "Clip", "Relu", "Sigmoid", "HardSigmoid", "HardSwish", "Min", "Max",
                  "Erf", "Tanh"}
"""ONNX ops a Conv's activation is written with (`name_activations`)."""


def name_activations(model: onnx.ModelProto) -> onnx.ModelProto:
    """Each node of a Conv's activation named `<conv>_activation_<k>`: the elementwise nodes
    (`ACTIVATION_OPS`) whose inputs are constants, the Conv's output (or its BatchNormalization's,
    which both builds fold into the Conv) or the outputs of such nodes (a function of the
    Conv's output alone, which the int8 build folds into one table, `FoldLookupTables`, and
    may apply in the Conv's output step). `--layers` adds the float
    rows of a Conv's activation to its float layer where the int8 layer applies the table."""
    constants = {t.name for t in model.graph.initializer} | {
        o for n in model.graph.node if n.op_type == "Constant" for o in n.output} | {""}
    for conv in (n for n in model.graph.node if n.op_type == "Conv"):
        values, count = {conv.output[0]}, 0
        for node in model.graph.node:
            if node.op_type == "BatchNormalization" and node.input[0] in values:  # folded into the Conv
                values.update(node.output)
            elif (node.op_type in ACTIVATION_OPS and any(i in values for i in node.input)
                    and all(i in values or i in constants for i in node.input)):
                node.name = f"{conv.name}_activation_{count}"
                values.update(node.output)
                count += 1
    return model


def elementwise_share(profile) -> tuple[float, float]:
    """(elementwise amount, its share of the profile's total)."""
    amount = sum(row.amount for row in profile.rows if row.kind in ELEMENTWISE_KINDS)
    return amount, amount / profile.total


def quantization_of(profile: str, args) -> QuantizationOptions:
    """The int8 builds' quantization: `profile` with the command line's schema and channelwise."""
    return QuantizationOptions(profile, schema=args.quantization_schema, channelwise=args.enable_channelwise)


def main(argv: list[str] | None = None) -> None:
    import onnxruntime

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--no-boards", action="store_true")
    parser.add_argument("--no-host", action="store_true", help="the board rows only")
    parser.add_argument("--board", default=BOARD,
                        help=f"the emulated board of the board rows (default {BOARD}; aarch64: NEON under "
                             "qemu-aarch64, instructions only)")
    parser.add_argument("--held-out", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mattr", help="features added to the host's for the host builds, as -mattr "
                                        "(e.g. -avx512f: AVX2 code on an AVX-512 host)")
    parser.add_argument("--model", help="an exported classifier of input 1x3x48x192 instead of the generated net")
    parser.add_argument("--quantization-schema", default="asymmetric", help="as glow-compile's")
    parser.add_argument("--enable-channelwise", action="store_true", help="as glow-compile's")
    parser.add_argument("--layers", action="store_true",
                        help="also each convolution's host µs, float against int8 (issue 42: no int8 layer slower)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    model = name_activations(exported_model(args.model) if args.model else ppocr_cls_style(args.seed))
    draw = (lambda: rng.uniform(-1, 1, INPUT_SHAPE)) if args.model else (lambda: rng.normal(size=INPUT_SHAPE))
    samples = [{model.graph.input[0].name: draw().astype(np.float32)} for _ in range(20 + args.held_out)]
    calibration, held_out = samples[:20], samples[20:]
    rows: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as directory:
        path, logits_path = os.path.join(directory, "ppocr_cls.onnx"), os.path.join(directory, "logits.onnx")
        onnx.save(model, path)
        onnx.save(without_softmax(model), logits_path)
        from glowmlir.profiling import Profiler
        from glowmlir.quantization.profile import write_profile

        profiles = {}
        for name, model_path in (("softmax", path), ("logits", logits_path)):
            profiler = Profiler.for_model(model_path, CompileOptions())
            for _ in profiler.run(calibration):
                pass
            profiles[name] = os.path.join(directory, f"{name}.yaml")
            write_profile(profiles[name], profiler.profile)
        int8 = quantization_of(profiles["softmax"], args)
        host = resolve_target(mattr=args.mattr) if args.mattr else HOST
        builds = {"float": glowmlir.compile(path, target=host)}
        for name in INT8_BUILDS:
            with passes_of(name):
                builds[name] = glowmlir.compile(path, quantization=int8, target=host)
        if not args.no_host:
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads, options.log_severity_level = 1, 3
            ort_int8_path = quantized_by_onnxruntime(model, calibration, directory, "QDQ")
            sessions = {"onnxruntime float": onnxruntime.InferenceSession(path, options,
                                                                          providers=["CPUExecutionProvider"]),
                        "onnxruntime int8": onnxruntime.InferenceSession(ort_int8_path, options,
                                                                         providers=["CPUExecutionProvider"])}
            times = host_times(builds, sessions, held_out[0])
            reference = times["onnxruntime float"]
            rows["host µs per inference (/ onnxruntime float)"] = [
                f"{times[name]:.0f} ({times[name] / reference:.2f})" for name in (*builds, *sessions)]
            rows["host int8 / float"] = ["", *(f"{times[name] / times['float']:.2f}" for name in INT8_BUILDS), "",
                                         f"{times['onnxruntime int8'] / reference:.2f}"]
            rows["host flash: code + weights (bytes)"] = [
                f"{code_size(b.object_code) + b.layout.constant_size:,} ({code_size(b.object_code):,} + "
                f"{b.layout.constant_size:,})" for b in builds.values()] + ["", ""]
            rows["host RAM: I/O + activations (bytes)"] = [
                f"{b.layout.mutable_size + b.layout.activations_size:,} ({b.layout.mutable_size:,} + "
                f"{b.layout.activations_size:,})" for b in builds.values()] + ["", ""]
            shares, convolutions, layer_profiles = [], [], {}
            for name, bundle in builds.items():
                options_of = CompileOptions(quantization=None if name == "float" else int8, target=host)
                with passes_of(name):
                    profile = profile_on_host(path, held_out[0], bundle.runner, options_of)
                amount, share = elementwise_share(profile)
                shares.append(f"{amount:.0f} µs ({share:.0%})")
                convolutions.append(convolution_times(profile))
                layer_profiles[name] = profile
            rows["host elementwise (glow-run -profile)"] = [*shares, "", ""]
            for group in CONVOLUTION_GROUPS:
                rows[f"host {group} convolutions, µs"] = [f"{times[group]:.0f}" for times in convolutions] + ["", ""]
            if args.layers:
                print_convolution_layers(layer_profiles["float"],
                                         {build: layer_profiles[build] for build in LAYER_BUILDS}, args.markdown,
                                         fused_tables=fused_table_layers(builds[LAYER_BUILDS[0]]))
            float_convolutions = convolutions[0]
            for group in CONVOLUTION_GROUPS:  # the int8 kernels against the float ones, layer class by class
                rows[f"host {group} convolutions, int8 / float"] = ["", *(
                    f"{times[group] / float_convolutions[group]:.2f}" for times in convolutions[1:])] + ["", ""]

            # accuracy of the logits
            logits = {"float": glowmlir.compile(logits_path, target=host)}
            for name in INT8_BUILDS:
                with passes_of(name):
                    logits[name] = glowmlir.compile(logits_path, quantization=quantization_of(profiles["logits"], args),
                                                    target=host)
            outputs = {name: np.stack([next(iter(b.run(s).values()))[0] for s in held_out])
                       for name, b in logits.items()}
            ort_logits = quantized_by_onnxruntime(without_softmax(model), calibration, directory, "QDQ")
            session = onnxruntime.InferenceSession(ort_logits, options, providers=["CPUExecutionProvider"])
            outputs["onnxruntime int8"] = np.stack([session.run(None, s)[0][0] for s in held_out])
            centre = outputs["float"].mean(axis=0)
            classes = {name: (values - centre).argmax(axis=1) for name, values in outputs.items()}
            agreement = {name: f"{int((classes[name] == classes['float']).sum())}/{len(held_out)}"
                         for name in outputs}
            error = {name: f"{np.sqrt(np.mean((values - outputs['float']) ** 2)):.4f}"
                     for name, values in outputs.items()}
            rows["top-1 agreement with float (logits)"] = [
                agreement["float"], *(agreement[name] for name in INT8_BUILDS), "", agreement["onnxruntime int8"]]
            rows["RMS logits error vs float"] = ["", *(error[name] for name in INT8_BUILDS), "",
                                                 error["onnxruntime int8"]]

        if not args.no_boards:
            cycles_counted = board(args.board).counts_multiplies
            board_rows: dict[str, list[str]] = {}
            board_profiles, board_fused = {}, set()
            for name in builds:
                compile_options = CompileOptions(quantization=None if name == "float" else int8,
                                                 target=target_for(args.board))
                with passes_of(name):
                    bundle = glowmlir.compile(path, quantization=compile_options.quantization,
                                              target=compile_options.target)
                    run = run_on_board(bundle, args.board, held_out[0], count_instructions=True,
                                       count_cycles=cycles_counted, timeout=3600)
                    profile = profile_on_board(path, args.board, held_out[0], run.instructions, compile_options)
                board_profiles[name] = profile
                if name == LAYER_BUILDS[0]:
                    board_fused = fused_table_layers(bundle)
                amount, share = elementwise_share(profile)
                report = memory_report(bundle, args.board if args.board in MEMORY_PRESETS else None)
                figures = {"instructions per inference": f"{run.instructions:,}",
                           "elementwise instructions (share)": f"{int(amount):,} ({share:.0%})"}
                if cycles_counted:
                    cycles = sum(row.cycles for row in profile.rows if row.kind in ELEMENTWISE_KINDS)
                    figures["estimated cycles per inference"] = f"{round(run.cycles.estimate):,}"
                    figures["elementwise cycles (share)"] = f"{round(cycles):,} ({cycles / profile.total_cycles:.0%})"
                difference = max(float(np.max(np.abs(run.outputs[legalize_name(key)].reshape(value.shape) - value)))
                                 for key, value in builds[name].run(held_out[0]).items())
                figures["largest |output - the host build's|"] = f"{difference:.3g}"
                figures["flash: code + weights (bytes)"] = \
                    f"{report.weights_in_flash.flash:,} ({report.code:,} + {report.weights:,})"
                figures["RAM: I/O + activations (bytes)"] = \
                    f"{report.weights_in_flash.ram:,} ({report.io:,} + {report.activations:,})"
                for label, value in figures.items():
                    board_rows.setdefault(f"{args.board} {label}", []).append(value)
            rows.update({label: [*values, "", ""] for label, values in board_rows.items()})
            if args.layers:
                print_convolution_layers(board_profiles["float"],
                                         {build: board_profiles[build] for build in LAYER_BUILDS}, args.markdown,
                                         f"{args.board} instructions", board_fused)
    columns = [*builds, "onnxruntime float", "onnxruntime int8"]
    title = os.path.basename(args.model) if args.model else "PP-OCR-cls-style 1x3x48x192"
    print_columns([title, *columns], [[label, *values] for label, values in rows.items()],
                  args.markdown)


if __name__ == "__main__":
    main()
