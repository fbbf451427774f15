"""How much top-1 agreement with float moves with the quantization parameters alone (issue 17):
the MobileNetV3-style and DS-CNN-style nets of bench_integer_only, several weight seeds, each
profiled with 2,048 histogram bins on 32 random inputs and compiled:

* min/max (`-quantization-calibration=None`) and KL (`-quantization-calibration=KL`), both
  with the default bias correction, and onnxruntime's static int8 quantization (QDQ, per
  tensor) of the same model with the same calibration inputs;
* with `--uncorrected`: min/max and KL with `-quantization-bias-correction=false` too;
* with `--spread`: min/max with every profiled max widened by 1-4 % (nothing is clipped that
  min/max does not clip: only the rounding changes), the spread of which is the noise floor
  of the top-1 count.

Figures: agreement with float's class on the held-out inputs (classes from the outputs centred
on float's mean, as in bench_integer_only) and the RMS error of the outputs.

    .venv/bin/python bench/bench_calibration.py [--seeds 5] [--held-out 300] [--uncorrected] [--spread] [--markdown]
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import tempfile

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import glowmlir  # noqa: E402
from bench.bench_integer_only import Net, random_net  # noqa: E402
from bench.tables import print_columns  # noqa: E402
from glowmlir.compiler import CompileOptions, QuantizationOptions  # noqa: E402
from glowmlir.profiling import Profiler  # noqa: E402
from glowmlir.quantization.profile import Profile, write_profile  # noqa: E402
from tests.support.models import ds_cnn_style, mobilenet_v3_style, quantized_by_onnxruntime  # noqa: E402

WIDENINGS = (0.01, 0.02, 0.03, 0.04)


def widened(profile: Profile, share: float) -> Profile:
    """The profile with every positive max moved `share` further out."""
    copied = copy.deepcopy(profile)
    for entry in copied.entries.values():
        if entry.max > 0:
            entry.max = float(np.float32(entry.max * (1 + share)))
    return copied


def row(net: Net, directory: str, uncorrected: bool, spread: bool) -> list[str]:
    import onnxruntime

    path = os.path.join(directory, "model.onnx")
    onnx.save(net.model, path)
    profiler = Profiler.for_model(path, CompileOptions(), num_bins=2048)
    for _ in profiler.run(net.calibration):
        pass
    float_bundle = glowmlir.compile(path)
    expected = np.stack([float_bundle.run(s)[net.output][0] for s in net.held_out])
    centre = expected.mean(axis=0)

    def figures(actual: np.ndarray) -> tuple[int, float]:
        agreement = int(((actual - centre).argmax(axis=1) == (expected - centre).argmax(axis=1)).sum())
        return agreement, float(np.sqrt(np.mean((actual - expected) ** 2)))

    def measure(profile: Profile, calibration: str = "None", bias_correction: bool = True) -> tuple[int, float]:
        written = os.path.join(directory, "profile.yaml")
        write_profile(written, profile)
        bundle = glowmlir.compile(path, quantization=QuantizationOptions(written, calibration=calibration,
                                                                        bias_correction=bias_correction))
        return figures(np.stack([bundle.run(s)[net.output][0] for s in net.held_out]))

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.log_severity_level = 1, 3
    session = onnxruntime.InferenceSession(quantized_by_onnxruntime(net.model, net.calibration, directory, "QDQ"),
                                           options, providers=["CPUExecutionProvider"])
    output = [o.name for o in session.get_outputs()].index(net.output)
    results = [measure(profiler.profile, calibration, corrected)
               for corrected in ((True, False) if uncorrected else (True,)) for calibration in ("None", "KL")]
    results.append(figures(np.stack([session.run(None, s)[output][0] for s in net.held_out])))
    cells = [net.name, *(f"{top1} / {error:.5f}" for top1, error in results)]
    if spread:
        counts = [measure(widened(profiler.profile, share))[0] for share in WIDENINGS]
        cells.append(f"{min(counts)}-{max(counts)}")
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--held-out", type=int, default=300)
    parser.add_argument("--uncorrected", action="store_true", help="also -quantization-bias-correction=false")
    parser.add_argument("--spread", action="store_true", help="also min/max with the maxima widened by 1-4 %%")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for seed in range(args.seeds):
            for name, model, shape in (("MobileNetV3-style", mobilenet_v3_style(seed=seed), (1, 3, 64, 64)),
                                       ("DS-CNN-style", ds_cnn_style(seed=seed), (1, 1, 49, 10))):
                net = random_net(f"{name} seed {seed}", model, shape, args.held_out)
                rows.append(row(net, directory, args.uncorrected, args.spread))
                print(*rows[-1], sep="  ", file=sys.stderr, flush=True)
    headers = ["net", "min/max: top-1 / RMS", "KL"]
    headers += ["min/max, bias correction off", "KL, bias correction off"] if args.uncorrected else []
    headers += ["onnxruntime int8"] + (["min/max, max +1-4 %: top-1"] if args.spread else [])
    print_columns(headers, rows, args.markdown)


if __name__ == "__main__":
    main()
