"""Code as a budget on the DSP cores: a speed-first build takes every layer's fastest kernel,
and when its code comes out over the budget (48 KB, or the flash the constants leave:
`transforms/flash_budget.code_budget`), it is built again with the layers whose size-first
kernels free the excess for fewest estimated cycles a byte given those
(`choose_size_first`, `backends/arm_dsp/select_kernels.SelectArmDspKernels.size_first_within_budget`):
a depthwise convolution's rows looped (an unrolled plane, or stride-2 rows of straight tiles),
a FullyConnected built `optsize`. Random weights and inputs on the Cortex-M4 and M7 boards,
bit for bit against the int8 reference."""

from __future__ import annotations

import shutil

import pytest

from glowmlir.backends.arm_dsp.flash_budget import (
    UNMEASURABLE_CYCLES,
    UNMEASURABLE_SHARE,
    SizeFirstCost,
    choose_size_first,
    looped_depthwise_cost,
    size_first_fully_connected_cost,
)
from glowmlir.elf import code_size
from glowmlir.runtime.boards import target_for
from glowmlir.transforms import flash_budget
from tests.unit.test_arm_dsp_kernels import EVERY_FILTER_PACKED, check_on_board, fully_connected_case, instruction_lines
from tests.unit.test_quantized_kernels import build, convolution_case

QEMU = shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")


def test_size_first_by_cycles_per_byte_until_the_excess_is_freed():
    """Nothing without an excess (but a kernel that frees bytes for no measurable cycles);
    cheapest cycles a byte first, until the bytes freed cover the excess; a variant that frees
    nothing never. What is measurable depends on the model's size (`UNMEASURABLE_SHARE`)."""
    cheap, dear, dearest, free, free_nothing = object(), object(), object(), object(), object()
    costs = [SizeFirstCost(dear, 1000, 9000), SizeFirstCost(cheap, 500, 2 * UNMEASURABLE_CYCLES),
             SizeFirstCost(dearest, 100, 5000), SizeFirstCost(free, 50, UNMEASURABLE_CYCLES - 1),
             SizeFirstCost(free_nothing, 0, -50)]
    macs = 10**6  # a model of 1M MACs: UNMEASURABLE_CYCLES decide
    assert choose_size_first(costs, 0, macs) == {id(free)}
    assert choose_size_first(costs, 400, macs) == {id(free), id(cheap)}
    # the bytes `free` frees were freed in the build that measured the excess too
    assert choose_size_first(costs, 520, macs) == {id(free), id(cheap), id(dear)}
    assert choose_size_first(costs, 10_000, macs) == {id(free), id(cheap), id(dear), id(dearest)}
    # in a model of 20K MACs a thousand cycles are measurable (UNMEASURABLE_SHARE: 100)
    assert choose_size_first(costs, 0, 20_000) == set()
    assert choose_size_first(costs, 0, round(UNMEASURABLE_CYCLES / UNMEASURABLE_SHARE)) == {id(free)}


# Visual wake words' layers measured each way (docs/code-size.md; bytes of code freed by
# looping, estimated cycles lost on the board): (out_h, out_w, channels, stride, unrolled plane,
# straight tiles) -> (bytes, cycles). The M7's unrolled 6 x 6 x 64 and 3 x 3 x 128 stride-2 planes,
# the M4's stride-2 rows of six and three straight tiles.
MEASURED_LOOPING = {
    (6, 6, 64, 2, True, 0): (1478, 45948 - 41210),
    (3, 3, 128, 2, True, 0): (370, 26285 - 23607),
    (24, 24, 16, 2, False, 6): (1396, 263262 - 246443),
    (12, 12, 32, 2, False, 3): (574, 138702 - 133963),
}


@pytest.mark.parametrize("layer", sorted(MEASURED_LOOPING))
def test_looped_depthwise_cost_near_the_measured_layers(layer):
    """The estimate of a depthwise layer's looped rows against what looping it measured: bytes
    within 25%, cycles within a factor of two (the choice ranks them by cycles a byte)."""
    saved, lost = looped_depthwise_cost(*layer)
    measured_bytes, measured_cycles = MEASURED_LOOPING[layer]
    assert abs(saved - measured_bytes) <= 0.25 * measured_bytes
    assert measured_cycles / 2 <= lost <= 2 * measured_cycles


# FullyConnected kernels built `optsize`, measured in whole bundles (docs/code-size.md): MACs ->
# (bytes freed, estimated cycles lost) on the M4 and on the M7. Visual wake words' 256 -> 2
# layer; the anomaly detector's 128 -> 8 and 8 -> 128 layers (two kernels: each half the figures).
MEASURED_OPTSIZE = {
    512: [(174, 228), (178, -117)],
    1024: [(328 // 2, -941 // 2), (336 // 2, 382 // 2)],
}


@pytest.mark.parametrize("macs", sorted(MEASURED_OPTSIZE))
def test_fully_connected_optsize_cost_near_the_measured_layers(macs):
    """The estimate of a small FullyConnected's `optsize` kernel: bytes within 25% of those
    measured, and cycles, as measured on both cores, below what a build can measure
    (`UNMEASURABLE_CYCLES`: every build takes it)."""
    saved, lost = size_first_fully_connected_cost(macs)
    for measured_bytes, measured_cycles in MEASURED_OPTSIZE[macs]:
        assert abs(saved - measured_bytes) <= 0.25 * measured_bytes
        assert abs(measured_cycles) < UNMEASURABLE_CYCLES and 0 <= lost < UNMEASURABLE_CYCLES


def test_nothing_to_loop_frees_nothing():
    """Rows of one tile, or rows looped already (no straight tiles, no unrolled plane): (0, 0)."""
    assert looped_depthwise_cost(6, 6, 64, 2, False, 1) == (0, 0)
    assert looped_depthwise_cost(24, 24, 32, 2, False, 0) == (0, 0)


# One net: a pointwise layer; a stride-2 depthwise onto 12 x 12 (three straight tiles of four a
# row on the M4's ordered planes; on the M7 looped rows already), one onto 6 x 6 (an unrolled
# plane on the M7; one tile a row on the M4), a 6 x 6 x 64 stride-1 one (an unrolled plane) and
# a FullyConnected. Estimated cycles lost a byte freed: M4 the FullyConnected 0.75, the 6 x 6 x 64
# plane 4, the rows 8.8; M7 the 6 x 6 x 8 plane 0.5, the FullyConnected, the 6 x 6 x 64 plane.
SIZE_FIRST_NET = {
    "pointwise": ((1, 64, 16, 16), (64, 64, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "rows_stride2": ((1, 16, 24, 24), (16, 1, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 16),
    "plane_stride2": ((1, 8, 12, 12), (8, 1, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 8),
    "plane_64": ((1, 64, 6, 6), (64, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 64),
}
CODE_OVER = 300
"""Bytes the flash of the size-first build leaves the code fewer than the speed-first build took."""
SPEED_FIRST_LAYERS = {"mps2-an386": {"fully_connected"}, "mps2-an500": {"plane_stride2", "fully_connected"}}
"""What a build within its budget takes size first: the kernels whose speed-first variants save
fewer than `UNMEASURABLE_CYCLES` (the FullyConnected 128, the M7's 6 x 6 x 8 plane 720)."""
SIZE_FIRST_LAYERS = {board: layers | {"plane_64"} for board, layers in SPEED_FIRST_LAYERS.items()}
"""What freeing `CODE_OVER` bytes more takes, cheapest first: the 6 x 6 x 64 plane's 1,440 B."""


def size_first_cases():
    cases = [convolution_case(3700 + index, geometry, per_channel=index % 2 == 1, suffix=f"_{name}")
             for index, (name, geometry) in enumerate(SIZE_FIRST_NET.items())]
    return cases + [fully_connected_case(3710, 1, 64, 4, False, True, "_fully_connected")]


def build_size_first_cases(cases, board: str, flash_size: int):
    """Every case in one bundle for `board`, -flash-size `flash_size`."""
    body = "".join(case.body for case in cases)
    constants = {name: value for case in cases for name, value in case.constants.items()}
    return build(body, constants, target=target_for(board), flash_size=flash_size)


def size_first_layers(cases, bundle) -> set[str]:
    """The cases whose instruction took a size-first kernel (looped rows, or `optsize`)."""
    lines = instruction_lines(bundle)
    assert len(lines) == len(cases)  # in the order of the cases
    return {case.output.removeprefix("y_") for case, line in zip(cases, lines)
            if "loop_pairs" in line or "code_size" in line}


@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc")
@pytest.mark.parametrize("board", sorted(SIZE_FIRST_LAYERS))
def test_a_small_flash_takes_size_first_kernels_that_match_the_int8_reference(board, monkeypatch):
    """With the flash for every filter packed and 48 KB of code, every layer keeps its speed-first
    kernel but those that save nothing measurable. A -flash-size that leaves the code
    `CODE_OVER` bytes fewer than that build took (the code's reserve set to that, so that the
    constants are packed alike) takes the cheapest size-first kernels that free them: the code
    fits, every output bit for bit."""
    cases = size_first_cases()
    speed_first = build_size_first_cases(cases, board, EVERY_FILTER_PACKED)
    assert size_first_layers(cases, speed_first) == SPEED_FIRST_LAYERS[board]
    code, constants = code_size(speed_first.object_code), speed_first.layout.constant_size
    monkeypatch.setattr(flash_budget, "CODE_BUDGET", code - CODE_OVER)
    bundle = build_size_first_cases(cases, board, constants + code - CODE_OVER)
    assert bundle.layout.constant_size == constants
    assert code_size(bundle.object_code) <= code - CODE_OVER
    assert size_first_layers(cases, bundle) == SIZE_FIRST_LAYERS[board]
    check_on_board(cases, board, bundle=bundle)
