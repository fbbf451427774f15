"""LeNet on every target: object code size, and instructions per inference on the emulated boards.

Code size is .text + .rodata of the bundle object (the weights are not in it), for the
default -O3 and the size-optimised -Os. Instructions are counted exactly by a QEMU TCG
plugin (one inference = a build running it twice minus a build running it once), with
the size-optimised build, weights in flash.

    .venv/bin/python bench/bench_targets.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import glowmlir  # noqa: E402
from bench.board_outputs import check_board_outputs  # noqa: E402
from glowmlir.elf import code_size  # noqa: E402
from glowmlir.errors import GlowError  # noqa: E402
from glowmlir.runtime.boards import BOARDS, cycle_timing, run_on_board, target_for  # noqa: E402
from glowmlir.targets import OBJECT_CPUS, resolve_target  # noqa: E402

LENET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "lenet_mnist", "lenet_mnist.onnx")
GLOW_LENET_FLASH_RT1060 = 9_640


def estimates_cycles(board) -> bool:
    """A board whose core has a timing model (the Cortex-M boards: glowmlir.runtime.cycles)."""
    try:
        cycle_timing(board)
    except GlowError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    args = parser.parse_args()
    results = {"code_size": {}, "instructions": {}}
    print(f"{'cpu':14s} {'code -O3':>10s} {'code -Os':>10s}")
    for cpu in OBJECT_CPUS:
        sizes = {level: code_size(glowmlir.compile(LENET, target=resolve_target(mcpu=cpu, opt_level=level)).object_code)
                 for level in ("O3", "Os")}
        results["code_size"][cpu] = sizes
        print(f"{cpu:14s} {sizes['O3']:>10,} {sizes['Os']:>10,}", flush=True)
    print(f"Glow's LeNet object on the RT1060 (Cortex-M7): {GLOW_LENET_FLASH_RT1060:,} bytes")
    from tests.support.models import random_inputs  # noqa: E402 - the same inputs as the tests

    inputs = random_inputs(onnx.load(LENET))
    print(f"\n{'board':12s} {'cpu':12s} {'instructions/inference':>24s} {'estimated cycles':>18s}")
    host = glowmlir.compile(LENET)
    for name, board in BOARDS.items():
        if not board.qemu:  # "native": this machine, no instruction counter
            continue
        bundle = glowmlir.compile(LENET, target=target_for(name, "Os"))
        run = run_on_board(bundle, name, inputs, count_instructions=True, count_cycles=estimates_cycles(board))
        check_board_outputs(run.outputs, host, inputs)
        count = run.instructions
        cycles = round(run.cycles.estimate) if run.cycles is not None else None
        results["instructions"][name] = {"cpu": board.cpu, "instructions": count, "cycles": cycles}
        print(f"{name:12s} {board.cpu:12s} {count:>24,} {f'{cycles:,}' if cycles else '-':>18s}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
