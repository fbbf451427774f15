"""Integer all the way (issue 17): a MobileNetV3-small-style net, a DS-CNN keyword-spotting-
style net (both with random weights, calibrated on random inputs) and LeNet (calibrated on
its 20 example digits), each profiled and compiled to int8 with our quantizer: which ops
stay float, top-1 agreement with float on held-out inputs against onnxruntime's own static
int8 quantization of the same model and calibration data (ours with its default bias
correction, and without it; per-channel on both sides: -enable-channelwise, onnxruntime's
per_channel), host latency and
code bytes int8 vs float, and exact instructions per inference int8 vs float on the emulated Cortex-M7
(mps2-an500) and Cortex-M3 (mps2-an385, no FPU). `--precision=Int16` measures our builds with
int16 activations (TFLite's 16x8 scheme) instead; onnxruntime's stay int8.

A random-weight net gives every input nearly the same logits: its classes are read from the
logits centred on their mean over the held-out inputs (the same centre for all). LeNet's
classes are its plain argmax. Latency is a ratio measured in the same run, the entry
point's, the best of interleaved batches of each build (`latency_ratio`).

`--seeds N` measures the two random-weight nets built with weight seeds 0 to N - 1 (each
its own column; LeNet once) instead of the default MobileNetV3-style seed 1 and DS-CNN-style
seed 0: the top-1 counts move by a few inputs with any change of the rounding, so a
comparison with onnxruntime holds only if it holds on every seed. The rows "inputs only ours
/ only onnxruntime agrees on" pair the two counts: their difference is the top-1 difference,
their sum how many inputs it rests on.

    .venv/bin/python bench/bench_integer_only.py [--markdown] [--no-boards] [--held-out N] [--mattr=-avx512vnni]
                                                 [--precision=Int8|Int16] [--seeds N]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
from dataclasses import dataclass

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import glowmlir  # noqa: E402
from bench.board_outputs import check_board_outputs  # noqa: E402
from bench.tables import print_columns  # noqa: E402
from glowmlir.compiler import CompileOptions, QuantizationOptions  # noqa: E402
from glowmlir.datasets import ImageOptions, calibration_samples  # noqa: E402
from glowmlir.elf import code_size  # noqa: E402
from glowmlir.profiling import Profiler  # noqa: E402
from glowmlir.quantization.profile import write_profile  # noqa: E402
from glowmlir.runtime.boards import run_on_board, target_for  # noqa: E402
from glowmlir.target import Target  # noqa: E402
from glowmlir.targets import resolve_target  # noqa: E402
from tests.support.models import (  # noqa: E402
    LENET,
    ds_cnn_style,
    lenet_evaluation_digits,
    mobilenet_v3_style,
    quantized_by_onnxruntime,
)

BOARDS = ("mps2-an500", "mps2-an385")


@dataclass
class Net:
    name: str
    model: onnx.ModelProto
    calibration: list[dict[str, np.ndarray]]
    held_out: list[dict[str, np.ndarray]]
    output: str
    centred: bool  # classes from the logits centred on their held-out mean (a random-weight net)


def random_net(name: str, model: onnx.ModelProto, shape: tuple[int, ...], held_out: int) -> Net:
    rng = np.random.default_rng(0)
    samples = [{"data": rng.normal(size=shape).astype(np.float32)} for _ in range(32 + held_out)]
    return Net(name, model, samples[:32], samples[32:], "logits", True)


def lenet(held_out: int) -> Net:
    example = os.path.dirname(LENET)
    _, feeds = calibration_samples({"data": (1, 1, 28, 28)}, [os.path.join(example, "images")], [], [],
                                   ImageOptions.parse("0to1"))
    digits = lenet_evaluation_digits()[0][:held_out]  # the held-out digits that are not calibration images
    return Net("LeNet", onnx.load(LENET), list(feeds), [{"data": d} for d in digits], "softmax", False)


def latency_ratio(first: glowmlir.Bundle, second: glowmlir.Bundle, sample: dict, rounds: int = 20,
                  runs: int = 20) -> float:
    """first's time per inference over second's: the entry point's, the sample's inputs in
    place (as a firmware caller runs a bundle; `Bundle.run`'s conversions of numpy inputs and
    outputs take about 12 µs a call on this machine whatever the build, a fifth of
    MobileNetV3-style's float inference), each the best of `rounds` batches of `runs`
    inferences, the two bundles' batches taking turns (the machine is shared: a slow spell
    then slows a batch of each, and the best batches are the least disturbed)."""
    best = [float("inf"), float("inf")]
    for bundle in (first, second):
        bundle.run(sample)
    for _ in range(rounds):
        for index, bundle in enumerate((first, second)):
            best[index] = min(best[index], sum(bundle.runner.time_calls(runs)) / runs)
    return best[0] / best[1]


def profiled(net: Net, directory: str) -> tuple[str, str]:
    """The net saved in `directory` and profiled on its calibration inputs (glow-profile's
    work): the model's path and the profile's."""
    path = os.path.join(directory, f"{net.name}.onnx")
    onnx.save(net.model, path)
    profiler = Profiler.for_model(path, CompileOptions())
    for _ in profiler.run(net.calibration):
        pass
    profile = os.path.join(directory, f"{net.name}.yaml")
    write_profile(profile, profiler.profile)
    return path, profile


def measure(net: Net, directory: str, boards: tuple[str, ...], host: Target | None = None,
            precision: str = "Int8") -> dict[str, str]:
    """The net's column of the table; `host`: the host builds' target (`--mattr`); `precision`:
    our builds' (`-quantization-precision`)."""
    import onnxruntime

    path, profile = profiled(net, directory)
    quantization = QuantizationOptions(profile, precision=precision)
    on_host = {} if host is None else {"target": host}
    float_bundle = glowmlir.compile(path, **on_host)
    quantized = glowmlir.compile(path, quantization=quantization, **on_host)
    channelwise = glowmlir.compile(path, quantization=QuantizationOptions(profile, precision=precision,
                                                                          channelwise=True), **on_host)
    uncorrected = glowmlir.compile(path, quantization=QuantizationOptions(profile, precision=precision,
                                                                          bias_correction=False), **on_host)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.log_severity_level = 1, 3
    outputs = {"float": np.stack([float_bundle.run(s)[net.output][0] for s in net.held_out]),
               "ours": np.stack([quantized.run(s)[net.output][0] for s in net.held_out]),
               "ours channelwise": np.stack([channelwise.run(s)[net.output][0] for s in net.held_out]),
               "ours uncorrected": np.stack([uncorrected.run(s)[net.output][0] for s in net.held_out])}
    for name, per_channel in (("onnxruntime", False), ("onnxruntime per_channel", True)):
        ort_path = quantized_by_onnxruntime(net.model, net.calibration, directory, "QDQ", per_channel)
        ort_int8 = onnxruntime.InferenceSession(ort_path, options, providers=["CPUExecutionProvider"])
        ort_output = [o.name for o in ort_int8.get_outputs()].index(net.output)
        outputs[name] = np.stack([ort_int8.run(None, s)[ort_output][0] for s in net.held_out])
    centre = outputs["float"].mean(axis=0) if net.centred else 0
    classes = {name: (values - centre).argmax(axis=1) for name, values in outputs.items()}
    agreement = {name: f"{int((classes[name] == classes['float']).sum())}/{len(net.held_out)}" for name in outputs}
    right = {name: classes[name] == classes["float"] for name in outputs}

    def only(ours: str, theirs: str) -> str:
        """Inputs only ours agrees on / only onnxruntime's: the top-1 difference, paired."""
        return f"{int((right[ours] & ~right[theirs]).sum())} / {int((right[theirs] & ~right[ours]).sum())}"

    error = {name: f"{np.sqrt(np.mean((values - outputs['float']) ** 2)):.4f}" for name, values in outputs.items()}
    left = collections.Counter(op for _, op, _ in quantized.float_ops)
    ours = precision.lower()
    column = {
        "compute ops left float": f"{sum(left.values())}" + (f" ({', '.join(f'{k} x{v}' for k, v in left.items())})"
                                                             if left else ""),
        f"top-1 agreement with float, ours {ours}": agreement["ours"],
        "top-1 agreement with float, onnxruntime int8": agreement["onnxruntime"],
        "RMS output error vs float, ours / onnxruntime": f"{error['ours']} / {error['onnxruntime']}",
        "inputs only ours / only onnxruntime agrees on": only("ours", "onnxruntime"),
        "top-1 agreement, ours -quantization-bias-correction=false": agreement["ours uncorrected"],
        "RMS output error, ours -quantization-bias-correction=false": error["ours uncorrected"],
        "top-1 agreement, per-channel: ours -enable-channelwise / onnxruntime per_channel":
            f"{agreement['ours channelwise']} / {agreement['onnxruntime per_channel']}",
        "inputs only ours / only onnxruntime agrees on, per-channel":
            only("ours channelwise", "onnxruntime per_channel"),
        "RMS output error, per-channel: ours / onnxruntime":
            f"{error['ours channelwise']} / {error['onnxruntime per_channel']}",
        f"host latency {ours} / float": f"{latency_ratio(quantized, float_bundle, net.held_out[0]):.2f}",
        f"host code bytes {ours} / float":
            f"{code_size(quantized.object_code):,} / {code_size(float_bundle.object_code):,}",
    }
    for board in boards:
        counts, cycles = [], []
        for q, host_bundle in ((quantization, quantized), (None, float_bundle)):
            run = run_on_board(glowmlir.compile(path, quantization=q, target=target_for(board)), board,
                               net.held_out[0], count_cycles=True)
            check_board_outputs(run.outputs, host_bundle, net.held_out[0])
            counts.append(run.instructions)
            cycles.append(round(run.cycles.estimate))
        column[f"{board} instructions {ours} / float"] = f"{counts[0]:,} / {counts[1]:,} ({counts[0] / counts[1]:.2f})"
        column[f"{board} estimated cycles {ours} / float"] = \
            f"{cycles[0]:,} / {cycles[1]:,} ({cycles[0] / cycles[1]:.2f})"
    return column


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--no-boards", action="store_true")
    parser.add_argument("--held-out", type=int, default=100)
    parser.add_argument("--mattr", help="host features for both host builds, e.g. -avx512vnni (the generic int8 "
                                         "kernels)")
    parser.add_argument("--precision", choices=("Int8", "Int16"), default="Int8",
                        help="our builds' -quantization-precision (Int16: int16 activations, int8 weights)")
    parser.add_argument("--seeds", type=int, help="the random-weight nets of weight seeds 0 to N - 1")
    args = parser.parse_args(argv)
    seeds = {"MobileNetV3": (1,), "DS-CNN": (0,)} if args.seeds is None else \
        dict.fromkeys(("MobileNetV3", "DS-CNN"), range(args.seeds))
    named = (lambda name, seed: name) if args.seeds is None else (lambda name, seed: f"{name} seed {seed}")
    nets = [*(random_net(named("MobileNetV3-style 1x3x64x64", seed), mobilenet_v3_style(seed=seed), (1, 3, 64, 64),
                         args.held_out) for seed in seeds["MobileNetV3"]),
            *(random_net(named("DS-CNN-style 1x1x49x10", seed), ds_cnn_style(seed=seed), (1, 1, 49, 10),
                         args.held_out) for seed in seeds["DS-CNN"]),
            lenet(args.held_out)]
    boards = () if args.no_boards else BOARDS
    with tempfile.TemporaryDirectory() as directory:
        host = resolve_target(mattr=args.mattr) if args.mattr else None
        columns = {net.name: measure(net, directory, boards, host, args.precision) for net in nets}
    labels = list(next(iter(columns.values())))
    print_columns(["", *columns], [[label, *(column[label] for column in columns.values())] for label in labels],
                  args.markdown)


if __name__ == "__main__":
    main()
