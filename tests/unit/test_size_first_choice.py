"""Code as a budget on the DSP cores: the layers of a speed-first build whose size-first kernel
frees code for fewest estimated cycles a byte take it (`transforms/flash_budget.choose_size_first`,
`backends/arm_dsp/select_kernels.SelectArmDspKernels.size_first_within_price`): a depthwise
convolution's rows looped (an unrolled plane, or stride-2 rows of straight tiles), a
FullyConnected built `optsize`; at most `CYCLES_PER_CODE_BYTE` a byte, within
`SIZE_FIRST_SHARE` of the model's multiply-accumulates. Random weights and inputs on the
Cortex-M4 and M7 boards, bit for bit against the int8 reference."""

from __future__ import annotations

import shutil

import pytest

from glowmlir.backends.arm_dsp.flash_budget import (
    CYCLES_PER_CODE_BYTE,
    SIZE_FIRST_SHARE,
    SizeFirstCost,
    choose_size_first,
    looped_depthwise_cost,
)
from glowmlir.runtime.boards import target_for
from tests.unit.test_arm_dsp_kernels import build_cases, check_on_board, fully_connected_case, instruction_lines
from tests.unit.test_quantized_kernels import convolution_case

QEMU = shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")


def test_size_first_by_cycles_per_byte_within_the_share():
    """Cheapest cycles a byte first; none above the price; none past the share of the MACs;
    a variant that frees nothing (or costs nothing and frees nothing) never."""
    cheap, dear, over_price, free_nothing = object(), object(), object(), object()
    costs = [SizeFirstCost(dear, 1000, 9000), SizeFirstCost(cheap, 500, 500),
             SizeFirstCost(over_price, 100, 100 * CYCLES_PER_CODE_BYTE + 1), SizeFirstCost(free_nothing, 0, -50)]
    assert choose_size_first(costs, macs=10**7) == {id(cheap), id(dear)}
    # a share of 9,000 cycles: the cheap one (500) leaves too little for the dear one (9,000)
    assert choose_size_first(costs, macs=round(9000 / SIZE_FIRST_SHARE)) == {id(cheap)}
    assert choose_size_first(costs, macs=10**7, price=0) == set()


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
    within 25%, cycles within a factor of two (the price compares them to 20 a byte)."""
    saved, lost = looped_depthwise_cost(*layer)
    measured_bytes, measured_cycles = MEASURED_LOOPING[layer]
    assert abs(saved - measured_bytes) <= 0.25 * measured_bytes
    assert measured_cycles / 2 <= lost <= 2 * measured_cycles


def test_nothing_to_loop_frees_nothing():
    """Rows of one tile, or rows looped already (no straight tiles, no unrolled plane): (0, 0)."""
    assert looped_depthwise_cost(6, 6, 64, 2, False, 1) == (0, 0)
    assert looped_depthwise_cost(24, 24, 32, 2, False, 0) == (0, 0)


# One net: a pointwise layer whose MACs (1.09M with the rest) allow about 5.4K cycles lost; a
# stride-2 depthwise onto 12 x 12 (three straight tiles of four a row on the M4's ordered planes;
# on the M7 looped rows already), one onto 6 x 6 (an unrolled plane on the M7; one tile a row on
# the M4), a 6 x 6 x 64 stride-1 one (an unrolled plane: 5.8K cycles, more than the share
# leaves) and a FullyConnected.
SIZE_FIRST_NET = {
    "pointwise": ((1, 64, 16, 16), (64, 64, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "rows_stride2": ((1, 16, 24, 24), (16, 1, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 16),
    "plane_stride2": ((1, 8, 12, 12), (8, 1, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 8),
    "plane_64": ((1, 64, 6, 6), (64, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 64),
}
SIZE_FIRST_LAYERS = {"mps2-an386": {"rows_stride2", "fully_connected"},
                     "mps2-an500": {"plane_stride2", "fully_connected"}}


def size_first_cases():
    cases = [convolution_case(3700 + index, geometry, per_channel=index % 2 == 1, suffix=f"_{name}")
             for index, (name, geometry) in enumerate(SIZE_FIRST_NET.items())]
    return cases + [fully_connected_case(3710, 1, 64, 4, False, True, "_fully_connected")]


@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc")
@pytest.mark.parametrize("board", sorted(SIZE_FIRST_LAYERS))
def test_cheap_size_first_kernels_match_the_int8_reference(board):
    """On the M4 the stride-2 rows are looped, on the M7 the small stride-2 plane; on both the
    FullyConnected is `optsize` and the 6 x 6 x 64 plane stays unrolled (over the share), the
    pointwise layer speed first; every output bit for bit."""
    cases = size_first_cases()
    bundle = check_on_board(cases, board, bundle=build_cases(cases, target_for(board)))
    lines = instruction_lines(bundle)
    chosen = set()
    assert len(lines) == len(cases)  # in the order of the cases
    for case, line in zip(cases, lines):
        name = case.output.removeprefix("y_")
        if "loop_pairs" in line or "code_size" in line:
            chosen.add(name)
        if "glowll.fully_connected" in line and name in SIZE_FIRST_LAYERS[board]:
            assert '"optsize"' in line
    assert chosen == SIZE_FIRST_LAYERS[board]
