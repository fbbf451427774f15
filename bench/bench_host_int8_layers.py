"""The host's int8 convolution kernels against float, layer by layer (issue 42: no int8 layer
slower than its float form): the convolution shapes of the PP-OCR-cls-style net
(`tests.support.models.ppocr_cls_style`: the stem, 1x1 expansions and projections, 3x3 and
5x5 depthwise of stride 1 and (2, 1)), each a random int8 layer (`convolution_case`: random
levels, per-tensor scales, a fused relu) and the same layer in float, compiled for this host;
its squeeze-and-excitation channel Muls and residual Adds (`binary_case`), with a Mul of one
shape; and its HardSwish lookup tables (`vector-lookup-int8`) against float's HardSwish op; and its input
quantize (float to int8, `QUANTIZE`: float has none, its float column a float Relu of the input
for scale), and that quantize with the stem after it (`QUANTIZED_STEM`: on the host the
quantize folded into the stem) against the float stem.
µs per call: the best of `--rounds` batches of `--runs` calls, the int8 and float batches
taking turns (on a loaded machine only the ratios of one run compare); the kernel each
build took; the int8 outputs checked bit for bit against the numpy int8 reference first.

    .venv/bin/python bench/bench_host_int8_layers.py [--markdown] [--rounds N] [--runs N] [--mattr F]
        [--board aarch64] [--per-channel] [NAME ...]

`--mattr` adds to the host's features as glow-compile's `-mattr` does: `--mattr=-avx512f` builds
both sides for AVX2 + FMA on an AVX-512 host (its AVX-512 and VNNI kernels off).
`--per-channel` quantizes the convolutions' filters per channel (symmetric, zero points 0),
as TFLite's are, where by default each is per tensor with a zero point.
`--board B` builds both sides for an emulated board instead (`aarch64`: Cortex-A53 code under
qemu-aarch64) and counts the instructions of one call (`run_on_board`), the int8 outputs
checked there; beside them each build's code and constants and its RAM (I/O + activations,
no stack), B (`flash_of`, `ram_of`).
"""

from __future__ import annotations

import argparse
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bench.tables import print_columns  # noqa: E402
from glowmlir.elf import code_size  # noqa: E402
from glowmlir.runtime.boards import run_on_board, target_for  # noqa: E402
from glowmlir.targets import resolve_target  # noqa: E402
from tests.support.int8_reference import quantize  # noqa: E402
from tests.unit.test_fold_input_quantize import quantized_input_case  # noqa: E402
from tests.unit.test_quantized_kernels import (  # noqa: E402
    binary_case,
    build,
    convolution_case,
    depthwise,
    lookup_table_text,
    pointwise,
    q8,
    tensor,
    with_lookup_table,
)

LAYERS = {
    "stem 3->8 3x3 s2 on 48x192": ((1, 3, 48, 192), (8, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
    "1x1 8->8 on 24x96": pointwise(8, 8, 24, 96),
    "1x1 8->8 on 12x96, no activation": pointwise(8, 8, 12, 96),
    "1x1 8->24 on 12x96": pointwise(8, 24, 12, 96),
    "1x1 24->8 on 6x96": pointwise(24, 8, 6, 96),
    "1x1 16->88 on 3x96": pointwise(16, 88, 3, 96),
    "1x1 88->16 on 3x96": pointwise(88, 16, 3, 96),
    "1x1 32->200 on 2x96": pointwise(32, 200, 2, 96),
    "1x1 200->32 on 2x96": pointwise(200, 32, 2, 96),
    "SE 1x1 16->4 on one pixel": pointwise(16, 4, 1, 1),
    "SE 1x1 4->16 on one pixel": pointwise(4, 16, 1, 1),
    "SE 1x1 200->50 on one pixel": pointwise(200, 50, 1, 1),
    "depthwise 3x3 24 s(2,1) to 12x96": depthwise(24, 3, 24, 96, 2),
    "depthwise 3x3 32 on 6x96": depthwise(32, 3, 6, 96, 1),
    "depthwise 5x5 88 on 3x96": depthwise(88, 5, 3, 96, 1),
    "depthwise 5x5 104 s(2,1) to 2x96": depthwise(104, 5, 3, 96, 2),
    "depthwise 5x5 200 on 2x96": depthwise(200, 5, 2, 96, 1),
}
"""name: the geometry `convolution_case` takes (input shape, filter shape, strides, pads,
dilations, group); a relu fused, except in the layers whose name says "no activation" (the
net's projections: block0_project, 8->8 on 12x96; its expansions carry a relu or a HardSwish
table, block0_expand 8->8 on 24x96 a relu)."""

ELEMENTWISE = {
    "SE Mul 200x2x96 by a gate a channel": ("mul", (1, 200, 2, 96), (1, 200, 1, 1)),
    "SE Mul 88x3x96 by a gate a channel": ("mul", (1, 88, 3, 96), (1, 88, 1, 1)),
    "SE Mul 200x2x96, types of an int16 form": ("mul", (1, 200, 2, 96), (1, 200, 1, 1), 0),
    "SE Mul 88x3x96, a hybrid's types": ("mul", (1, 88, 3, 96), (1, 88, 1, 1), 15),
    "Mul 88x3x96 by one of its shape": ("mul", (1, 88, 3, 96), (1, 88, 3, 96)),
    "residual Add 32x2x96": ("add", (1, 32, 2, 96), (1, 32, 2, 96)),
    "residual Add 16x3x96": ("add", (1, 16, 3, 96), (1, 16, 3, 96)),
}
"""name: the kind and operands' shapes of an int8 Mul or Add (`binary_case`: random levels
and scales, of seed 7 or the fourth number): a squeeze-and-excitation block's channel Mul, a
tensor by its gate (seed 0's 200-channel types have an int16 form, `gate_products.int16_gate`,
as six of the PP-OCR-cls-style net's nine; seed 7's and seed 15's 88-channel ones are hybrids,
as the other three: two gate levels without an int16 row, their channels (one of each Mul's)
on the fma loop), a Mul of one shape, and a residual block's Add (its "blockN_sum")."""

HARD_SWISH_TABLES = {
    "HardSwish table 200x2x96": (1, 200, 2, 96),
    "HardSwish table 32x6x96": (1, 32, 6, 96),
}
"""name: the shape of an int8 HardSwish table of the net's types (input 0.045:-60, output
0.035:-117: a span of [-3.1, 8.4], as `glow-quantize` gives a value only tables read) on
random levels, and of float's one `glow.hard_swish` (the net writes it as four ops)."""


FUSED_TABLES = {
    "depthwise 5x5 200 on 2x96, a table fused": LAYERS["depthwise 5x5 200 on 2x96"],
    "depthwise 5x5 88 on 3x96, a table fused": LAYERS["depthwise 5x5 88 on 3x96"],
    "depthwise 3x3 24 s(2,1) to 12x96, a table fused": LAYERS["depthwise 3x3 24 s(2,1) to 12x96"],
    "1x1 8->32 on 6x96, a table fused": pointwise(8, 32, 6, 96),
    "1x1 16->88 on 3x96, a table fused": LAYERS["1x1 16->88 on 3x96"],
    "1x1 32->200 on 2x96, a table fused": LAYERS["1x1 32->200 on 2x96"],
}
"""name: a layer of `LAYERS` (no activation: the table takes every level) with a random int8
table after it, which `glowll-fuse-lookup-tables` applies in the layer's output step (as the
net's HardSwish tables), against the float layer alone (float's activation is ops of its own
in the net)."""


class FusedTableCase:
    """A `FUSED_TABLES` layer with its table, and the float layer alone."""

    def __init__(self, geometry, per_channel: bool = False):
        layer = convolution_case(7, geometry, per_channel)
        case = with_lookup_table(layer, 971)
        self.body, self.constants, self.inputs = case.body, case.constants, case.inputs
        self.output, self.expected = case.output, case.expected
        self.float_body = re.sub(r"!quant\.uniform<[^>]*>", "f32", layer.body)
        self.float_constants = {key: value.astype(np.float32) for key, value in layer.constants.items()}
        self.float_inputs = layer.inputs


QUANTIZE = {"input quantize 3x48x192": (1, 3, 48, 192)}
"""name: the shape of the net's float input quantized to int8 (random floats over the int8 range
and beyond, a random scale and zero point)."""


class QuantizeCase:
    """A float to int8 quantize (`QUANTIZE`), and a float Relu of its input."""

    def __init__(self, shape: tuple[int, ...]):
        rng = np.random.default_rng(7)
        scale, offset = float(np.float32(rng.uniform(0.005, 0.05))), int(rng.integers(-20, 20))
        x = (rng.uniform(-150, 150, shape) * scale).astype(np.float32)
        float_type, int8_type = tensor(shape, "f32"), tensor(shape, q8(scale, offset))
        self.body = f"""
  %x = glow.placeholder "x" : {float_type}
  %y = glow.quantize %x : ({float_type}) -> {int8_type}
  glow.save %y as "y" : {int8_type}"""
        self.constants, self.inputs, self.output = {}, {"x": x}, "y"
        self.expected = quantize(x, scale, offset)
        self.float_body = f"""
  %x = glow.placeholder "x" : {float_type}
  %y = glow.relu %x : ({float_type}) -> {float_type}
  glow.save %y as "y" : {float_type}"""


QUANTIZED_STEM = {"quantize + stem 3->8 3x3 s2 on 48x192": LAYERS["stem 3->8 3x3 s2 on 48x192"]}
"""name: the geometry of the net's stem read through its input quantize (float to int8, then the
int8 stem; on the host the quantize folded into the stem, `glowll-fold-input-quantize`), its
float column the float stem alone."""


class QuantizedStemCase:
    """The net's input quantize then its stem (`QUANTIZED_STEM`: `quantized_input_case`'s
    floats, saturating, infinite and NaN ones included), and the float stem of the same floats
    (the non-finite ones 0)."""

    def __init__(self, geometry):
        case, x = quantized_input_case(7, geometry)
        self.body, self.constants, self.inputs = case.body, case.constants, case.inputs
        self.output, self.expected = case.output, case.expected
        stem = convolution_case(7, geometry, activation="relu")
        self.float_body = re.sub(r"!quant\.uniform<[^>]*>", "f32", stem.body)
        self.float_constants = {key: value.astype(np.float32) for key, value in case.constants.items()}
        self.float_inputs = {"x": np.where(np.isfinite(x), x, np.float32(0))}


class TableCase:
    """An int8 HardSwish lookup table and its float op (`HARD_SWISH_TABLES`)."""

    def __init__(self, shape: tuple[int, ...]):
        x_type, y_type = q8(0.045, -60), q8(0.035, -117)
        x = 0.045 * (np.arange(-128, 128) + 60)
        table = np.clip(np.rint(x * np.clip(x + 3, 0, 6) / 6 / 0.035) - 117, -128, 127).astype(np.int8)
        levels = np.random.default_rng(7).integers(-128, 128, shape, dtype=np.int8)
        self.body = lookup_table_text(tensor(shape, x_type), tensor((256,), y_type), tensor(shape, y_type))
        self.constants, self.inputs, self.output = {"t": table}, {"x": levels}, "y"
        self.expected = table[levels.astype(np.int64) + 128]
        float_type = tensor(shape, "f32")
        self.float_body = f"""
  %x = glow.placeholder "x" : {float_type}
  %y = glow.hard_swish %x : ({float_type}) -> {float_type}
  glow.save %y as "y" : {float_type}"""


def microkernel(bundle) -> str:
    found = re.search(r'microkernel<"([a-z0-9-]+)"', bundle.ir["glowll"])
    return found.group(1) if found else "generic"


def flash_of(bundle) -> str:
    """The bundle's code and constants, B, as "code + constants"."""
    return f"{code_size(bundle.object_code):,} + {bundle.layout.constant_size:,}"


def ram_of(bundle) -> str:
    """The bundle's RAM, B: its inputs and outputs + its activations (no stack)."""
    return f"{bundle.layout.mutable_size:,} + {bundle.layout.activations_size:,}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="layers whose name contains one of these (default: all)")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--mattr", help="features added to the host's, as -mattr (e.g. -avx512f: AVX2 code)")
    parser.add_argument("--board", help="an emulated board to count instructions on (e.g. aarch64)")
    parser.add_argument("--per-channel", action="store_true",
                        help="the convolutions' filters per channel (symmetric, as TFLite's), not per tensor")
    args = parser.parse_args(argv)
    target = target_for(args.board) if args.board else resolve_target(mattr=args.mattr) if args.mattr else None
    rows = []
    cases = {name: lambda geometry=geometry, activation=None if "no activation" in name else "relu":
             convolution_case(7, geometry, per_channel=args.per_channel, activation=activation)
             for name, geometry in LAYERS.items()}
    cases.update({name: lambda operands=operands: binary_case(*operands[:3], (*operands[3:], 7)[0])
                  for name, operands in ELEMENTWISE.items()})
    cases.update({name: lambda geometry=geometry: FusedTableCase(geometry, args.per_channel)
                  for name, geometry in FUSED_TABLES.items()})
    cases.update({name: lambda shape=shape: TableCase(shape) for name, shape in HARD_SWISH_TABLES.items()})
    cases.update({name: lambda shape=shape: QuantizeCase(shape) for name, shape in QUANTIZE.items()})
    cases.update({name: lambda geometry=geometry: QuantizedStemCase(geometry)
                  for name, geometry in QUANTIZED_STEM.items()})
    for name, make_case in cases.items():
        if args.names and not any(part in name for part in args.names):
            continue
        case = make_case()
        int8 = build(case.body, dict(case.constants), target=target)
        if args.board:
            counted = run_on_board(int8, args.board, case.inputs, count_instructions=True)
            np.testing.assert_array_equal(counted.outputs[case.output].reshape(case.expected.shape), case.expected)
        else:
            np.testing.assert_array_equal(int8.run(case.inputs)[case.output], case.expected)
        float_inputs = case.inputs
        if isinstance(case, (TableCase, QuantizeCase)):
            float32 = build(case.float_body, target=target)
        elif isinstance(case, (QuantizedStemCase, FusedTableCase)):
            float32, float_inputs = build(case.float_body, case.float_constants, target=target), case.float_inputs
        else:
            float32 = build(re.sub(r"!quant\.uniform<[^>]*>", "f32", case.body),
                            {key: value.astype(np.float32) for key, value in case.constants.items()}, target=target)
        float_inputs = {key: value.astype(np.float32) for key, value in float_inputs.items()}
        if args.board:
            float_run = run_on_board(float32, args.board, float_inputs, count_instructions=True)
            instructions = {"int8": counted.instructions, "float": float_run.instructions}
            rows.append([name, f"{instructions['float']:,}", f"{instructions['int8']:,}",
                         f"{instructions['int8'] / instructions['float']:.2f}", flash_of(float32), flash_of(int8),
                         ram_of(float32), ram_of(int8), microkernel(int8)])
            continue
        float32.run(float_inputs)
        best = {"int8": float("inf"), "float": float("inf")}
        for _ in range(args.rounds):
            for label, bundle in (("int8", int8), ("float", float32)):
                best[label] = min(best[label], min(bundle.runner.time_calls(args.runs)) / 1000)
        rows.append([name, f"{best['float']:.2f}", f"{best['int8']:.2f}", f"{best['int8'] / best['float']:.2f}",
                     microkernel(float32), microkernel(int8)])
    if args.board:
        print_columns(["layer", "float instructions", "int8 instructions", "int8 / float", "float code + constants, B",
                       "int8 code + constants, B", "float RAM: I/O + activations, B",
                       "int8 RAM: I/O + activations, B", "int8 kernel"], rows, args.markdown)
        return
    print_columns(["layer", "float µs", "int8 µs", "int8 / float", "float kernel", "int8 kernel"], rows, args.markdown)


if __name__ == "__main__":
    main()
