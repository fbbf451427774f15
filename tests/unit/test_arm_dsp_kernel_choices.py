"""The kernel choices of `glowll-select-arm-dsp-kernels`, asserted by outcome.

For each layer below, every kernel that can take it is built (the pass's `only` hook gives
one microkernel wherever it can take a layer, whatever the cost rules say; "generic" gives
none) and run on the emulated board, once per kernel, all layers in one layer-profiling
bundle (`layer_profile="kernels"`: each layer a function of its own, its estimated cycles
counted apart, `glowmlir.runtime.cycles`). Every candidate's outputs equal the int8 reference
(tests/support/int8_reference.py) bit for bit, and the kernel the rules pick (read off a
normal build's glowll IR) is the one measured cheapest, or within `TOLERANCE` of it.

The layers are small, a few on each side of each rule's threshold: on the Cortex-M4 (the
TRM's cycle table) the DSP kernels against the generic ones, and level tables against the
generic add and softmax (`LEVEL_TABLE_ELEMENTWISE_FROM` elements an add, more exps than the
table's 256 a softmax); on the Cortex-M55 (LLVM's scheduling model) Helium's column kernel, its dot products of gathered
windows (`IM2COL_DEPTHS`: 48 taps a window, 8 off the column kernel) and the DSP kernel (a
stride-2 row onto fewer than `STRIDED_ROW_VECTORS` vectors, a stride-1 depthwise row of a
vector and a part: `DEPTHWISE_ROW_VECTORS`), and the vector elementwise kernel
against the scalar one (a broadcast onto runs of one level, `HELIUM_ELEMENTWISE_RUNS`).

Two rules were changed by what this measured: an Add or Sub took tables only above 512
elements (tables are ahead from 150-190 on the M4, 120 on the M7:
`arm_dsp.layout.LEVEL_TABLE_ELEMENTWISE_FROM`), and Helium's elementwise kernel only runs of
a whole vector (runs of 2 and 3 are faster on it too). Since the generic softmax computes an
exp once a level (rows of up to `quantized_kernels.STORED_EXPS`), a softmax of 160 levels is
cheaper on it (36,736 cycles against 51,266 on tables on the M4).
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from glowmlir.backends.arm_dsp.select_kernels import SelectArmDspKernels
from glowmlir.compiler import CompileOptions, compile_module
from glowmlir.lowering.glowll_to_llvm import layer_kernel_name
from glowmlir.runtime.boards import run_on_board, target_for
from tests.unit.test_arm_dsp_kernels import fully_connected_case, softmax_case
from tests.unit.test_quantized_kernels import Case, binary_case, convolution_case, glowll_stage, levels, parse_net

TOLERANCE = 0.05
"""How much more a chosen kernel may cost than the cheapest candidate measured: layers at a
rule's threshold cost about the same either way (the thresholds are where the two meet)."""

GENERIC = "generic"


def conv(name: str, seed: int, geometry: tuple, chosen: str) -> tuple[str, Case]:
    return chosen, convolution_case(seed, geometry, suffix=f"_{name}")


# (the kernel the rules should pick, the case). Geometry: input, filter, strides, pads, dilations, group.
def m4_layers() -> list[tuple[str, Case]]:
    rng = np.random.default_rng(4100)
    return [
        conv("window_pairs", 4101, ((1, 4, 8, 8), (8, 4, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1), "arm-dsp"),
        conv("depthwise", 4102, ((1, 8, 8, 8), (8, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 8), "arm-dsp"),
        conv("pointwise", 4103, ((1, 16, 6, 6), (8, 16, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), "arm-dsp"),
        conv("row_pairs", 4104, ((1, 6, 9, 9), (6, 2, 1, 3), (1, 1), (0, 1, 0, 1), (1, 1), 3), "arm-dsp"),
        ("arm-dsp", fully_connected_case(4105, 1, 64, 16, False, True, "_fc")),
        ("level-tables", binary_case("add", (1, 8, 10, 10), (1, 8, 10, 10), 4106, suffix="_add800")),
        ("level-tables", binary_case("sub", (1, 4, 8, 12), (1, 4, 8, 12), 4107, suffix="_sub384")),
        ("level-tables", binary_case("add", (1, 4, 8, 8), (1, 4, 8, 8), 4111, suffix="_add256")),
        (GENERIC, binary_case("add", (1, 4, 6, 6), (1, 4, 6, 6), 4108, suffix="_add144")),
        (GENERIC, binary_case("add", (1, 2, 8, 8), (1, 2, 8, 8), 4109, suffix="_add128")),
        (GENERIC, binary_case("add", (2, 3, 4, 4), (2, 3, 4, 4), 4110, suffix="_add96")),
        ("level-tables", softmax_case(levels(rng, 2, 200), 0.05, 3, "_softmax400")),
        (GENERIC, softmax_case(levels(rng, 1, 160), 0.08, -2, "_softmax160")),  # one exp an element
        (GENERIC, softmax_case(levels(rng, 1, 64), 0.05, 3, "_softmax64")),
        (GENERIC, softmax_case(levels(rng, 2, 20), 0.05, 3, "_softmax40")),
    ]


def m55_layers() -> list[tuple[str, Case]]:
    rng = np.random.default_rng(5500)
    return [
        conv("pointwise64", 5501, ((1, 64, 4, 8), (16, 64, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), "arm-mve-im2col"),
        conv("pointwise16", 5502, ((1, 16, 8, 8), (16, 16, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), "arm-mve"),
        conv("window27", 5503, ((1, 3, 8, 8), (8, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1), "arm-mve"),
        conv("strided_window27", 5504, ((1, 3, 12, 12), (8, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
             "arm-mve-im2col"),
        conv("depthwise_onto6", 5505, ((1, 16, 12, 12), (16, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 16), "arm-dsp"),
        conv("depthwise_onto12", 5506, ((1, 8, 12, 24), (8, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 8), "arm-mve"),
        conv("depthwise_rows_of5", 5512, ((1, 16, 6, 5), (16, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 16), "arm-dsp"),
        conv("depthwise_rows_of12", 5513, ((1, 16, 6, 12), (16, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 16),
             "arm-mve"),
        ("arm-mve", fully_connected_case(5507, 1, 64, 16, False, True, "_fc")),
        ("arm-mve", binary_case("mul", (1, 16, 5, 5), (1, 16, 1, 1), 5508, suffix="_mul_runs25")),
        ("arm-mve", binary_case("mul", (1, 8, 1, 3), (1, 8, 1, 1), 5509, suffix="_mul_runs3")),
        (GENERIC, binary_case("mul", (1, 16, 2, 1), (1, 16, 1, 1), 5511, suffix="_mul_runs1")),
        ("arm-mve", binary_case("add", (1, 4, 6, 6), (1, 4, 6, 6), 5510, suffix="_add144")),
        ("arm-mve", softmax_case(levels(rng, 2, 40), 0.05, 3, "_softmax")),
    ]


BOARDS = {  # board -> (its layers, the kernels tried)
    "mps2-an386": (m4_layers, (GENERIC, "arm-dsp", "level-tables")),
    "mps3-an547": (m55_layers, (GENERIC, "arm-dsp", "arm-mve", "arm-mve-im2col")),
}


@dataclasses.dataclass
class OnlyKernel(CompileOptions):
    """A build whose `glowll-select-arm-dsp-kernels` gives `only` this kernel ("": the rules),
    its filters as `filter_words` says ("int8": int8 words wherever a kernel reads them)."""

    only: str = ""
    filter_words: str = ""

    def pipeline(self):
        pipeline = super().pipeline()
        passes = tuple(dataclasses.replace(p, only=self.only, filter_words=self.filter_words)
                       if isinstance(p, SelectArmDspKernels) else p for p in pipeline.glowll)
        assert any(isinstance(p, SelectArmDspKernels) for p in passes)
        return dataclasses.replace(pipeline, glowll=passes)


def net(cases: list[Case]):
    """The module of every case, its constants' data in it."""
    return parse_net("".join(c.body for c in cases), {name: value for case in cases
                                                       for name, value in case.constants.items()})


def only_kernel(board: str, only: str, filter_words: str = "") -> OnlyKernel:
    """The options of a layer-profiling build for `board` given `only` this kernel."""
    return OnlyKernel(target=target_for(board), layer_profile="kernels", only=only, filter_words=filter_words)


def build(cases: list[Case], board: str, only: str, filter_words: str = ""):
    return compile_module(net(cases), only_kernel(board, only, filter_words))


def layer_kernels(text: str) -> list[tuple[str, str, str]]:
    """(output name, instruction kind, microkernel or "generic") of each instruction of glowll IR, in order."""
    outputs = dict(re.findall(r'(%\d+) = glowll\.placeholder output "(\w+)"', text))
    found = []
    for kind, dest, rest in re.findall(r"^\s*glowll\.(convolution|fully_connected|elementwise|softmax) (%\d+),(.*)$",
                                       text, re.M):
        microkernel = re.search(r'microkernel = #glowll.microkernel<"([\w-]+)"', rest)
        found.append((outputs[dest], kind, microkernel.group(1) if microkernel else GENERIC))
    return found


@pytest.fixture(scope="module")
def measured() -> dict:
    return {}


def measure(board: str, cache: dict) -> tuple[list[tuple[str, Case]], dict[str, str], dict[str, dict[str, float]]]:
    """The board's layers, the kernel the rules pick for each (by output name), and each
    candidate's estimated cycles (kernel -> output -> cycles), every candidate's outputs
    checked against the int8 reference."""
    if board in cache:
        return cache[board]
    layers_of, kernels = BOARDS[board]
    layers = layers_of()
    cases = [case for _, case in layers]
    inputs = {name: value for case in cases for name, value in case.inputs.items()}
    # the rules' picks: the glowll stage of a build given no `only` (`glowll_stage`, no LLVM code)
    chosen = {output: kernel for output, _, kernel in layer_kernels(glowll_stage(net(cases), only_kernel(board, "")))}
    cycles: dict[str, dict[str, float]] = {}
    for only in kernels:
        bundle = build(cases, board, only)
        instructions = layer_kernels(bundle.ir["glowll"])
        assert len(instructions) == len(cases)
        functions = [layer_kernel_name(bundle.layout.entry_point, index, kind)
                     for index, (_, kind, _) in enumerate(instructions)]
        entry = bundle.layout.entry_point  # counted apart, or its code would count for the layer before
        run = run_on_board(bundle, board, inputs, count_functions=[*functions, entry, "main"], count_cycles=True)
        for case in cases:
            actual = run.outputs[case.output].reshape(case.expected.shape).astype(case.expected.dtype)
            np.testing.assert_array_equal(actual, case.expected, err_msg=f"{only}: {case.output}")
        cycles[only] = {output: run.function_cycles[function].estimate
                        for (output, _, kernel), function in zip(instructions, functions) if kernel == only}
    cache[board] = layers, chosen, cycles
    return cache[board]


def costs_of(output: str, cycles: dict[str, dict[str, float]]) -> dict[str, float]:
    """Each candidate kernel's estimated cycles for the layer of this output."""
    return {kernel: by_output[output] for kernel, by_output in cycles.items() if output in by_output}


@pytest.mark.parametrize("board", BOARDS)
def test_the_rules_pick_the_kernel_measured_cheapest(board, measured):
    """Every layer has two candidates or more, the rules pick the one this test expects, and
    it is the cheapest measured (within `TOLERANCE`); the figures are printed (-s)."""
    layers, chosen, cycles = measure(board, measured)
    for _, case in layers:
        ranked = sorted(costs_of(case.output, cycles).items(), key=lambda item: item[1])
        print(f"{board} {case.output}: {chosen[case.output]} <- "
              + ", ".join(f"{kernel} {amount:,.0f}" for kernel, amount in ranked))
    for expected, case in layers:
        costs = costs_of(case.output, cycles)
        assert len(costs) >= 2 and chosen[case.output] == expected, (case.output, chosen[case.output], costs)
        assert costs[expected] <= (1 + TOLERANCE) * min(costs.values()), (case.output, costs)
