"""The int8 Add, Sub and Mul on AArch64 NEON (`microkernel = "vector-elementwise-int8"`),
compiled for the `aarch64` board (Cortex-A53) and run under qemu-aarch64: the x86 tests'
random cases (either operand broadcast, rows shorter and longer than a vector, relu and clip)
and a squeeze-and-excitation block's channel Mul on its int16 form by NEON's `sqrdmulh`
(`{products = "neon"}`, `gate_products.HIGH_PRODUCTS`) on every pair of an x level and a
gate level, with tails, the gate either operand, and as a hybrid (its unproved gate levels
on the fma loop): every output bit for bit the independent int8 reference's
(tests/support/int8_reference.py)."""

from __future__ import annotations

import re

import pytest

from tests.support import int8_reference as ref
from tests.unit.test_code_size import run_cases
from tests.unit.test_quantized_kernels import all_level_pairs_case, binary_case
from tests.unit.test_vector_elementwise import (
    HYBRID_TYPES,
    NET_GATE_TYPES,
    every_gate_pair_case,
    gate_product_case,
    random_types,
)
from tests.unit.test_vnni_depthwise import BINARY_CASES

BOARD = "aarch64"
NEON_GATE = '#glowll.microkernel<"vector-elementwise-int8", {products = "neon"}>'
NEON_BYTES = '#glowll.microkernel<"vector-elementwise-int8", {shuffles = "neon"}>'
PAIR_TYPES = [
    ("add", (0.0123, 25), (0.1, -7), (0.051, 3)),
    ("sub", (0.0123, 25), (0.1, -7), (0.051, 3)),
    ("add", (0.05, 3), (0.05, 3), (0.1, -2)),  # (d1 + d2) / 2: ties, halves away from zero
    ("sub", (0.0431, -128), (0.0179, 127), (0.0279, 127)),
    ("add", (0.0912, 127), (0.0061, 40), (0.0455, -100)),
    ("mul", (0.0123, 25), (0.1, -7), (0.051, 3)),
    ("mul", (0.0431, -128), (1 / 256, -128), (0.0279, 127)),
    ("mul", (0.0912, 127), (0.0061, 40), (0.0455, -100)),
]
"""Ops of one shape and their types (x86's every-pair tests'): Adds and Subs with a float
form (`float_add`), Muls with a float step (`float_step`)."""


def test_add_sub_and_mul_on_neon_match_the_int8_reference():
    cases = [binary_case(op, a_shape, b_shape, seed, activation, suffix=f"_{k}")
             for k, (op, a_shape, b_shape, activation, seed) in enumerate(BINARY_CASES)]
    bundle = run_cases(cases, BOARD)
    ops = [line for line in bundle.ir["glowll"].splitlines() if "glowll.elementwise" in line]
    assert len(ops) == len(cases) and all('microkernel<"vector-elementwise-int8"' in line for line in ops)


def test_add_sub_and_mul_of_every_pair_of_levels_as_neon_bytes():
    """TFLite's int8 Add, Sub and Mul on every pair of levels (256 x 256) as bytes on NEON (the
    kernel's `shuffles = "neon"`, `byte_elementwise.neon_levels`: 16 levels a step, one
    `fcvtns` a rounding, `sqxtn`), bit for bit the int8 reference's."""
    cases = [all_level_pairs_case(kind, *((ref.f32(scale), offset) for scale, offset in types), suffix=f"_{k}")
             for k, (kind, *types) in enumerate(PAIR_TYPES)]
    bundle = run_cases(cases, BOARD)
    ops = [line for line in bundle.ir["glowll"].splitlines() if "glowll.elementwise" in line]
    assert len(ops) == len(cases) and all(NEON_BYTES in line for line in ops)
    assert [re.search(r"float_(add|step) = ", line).group(1) for line in ops] == [
        "step" if kind == "mul" else "add" for kind, *_ in PAIR_TYPES]


@pytest.mark.parametrize("types,plane,gate_first,hybrid", [
    (NET_GATE_TYPES, 259, False, False),  # the net's gate: hard sigmoid's 1/256
    (((0.0301, 127), (0.0061, -60), (0.0009, 5)), 256, True, False),
    (random_types(929), 271, False, False),
    (HYBRID_TYPES, 263, True, True),
])
def test_channel_mul_of_every_pair_of_levels_on_neon_high_products(types, plane, gate_first, hybrid):
    """All 65,536 pairs of an x level and a gate level (one gate level a channel, planes with
    tails of 3 to 15 levels) on the int16 form by `sqrdmulh` (a hybrid's marked gate levels on
    the fma loop), bit for bit the int8 reference's."""
    x_type, gate_type, out_type = ((ref.f32(scale), offset) for scale, offset in types)
    case = every_gate_pair_case(x_type, gate_type, out_type, plane, plane, gate_first)
    bundle = run_cases([case], BOARD)
    assert NEON_GATE in bundle.ir["glowll"] and "int16_gate = array<i32:" in bundle.ir["glowll"]
    assert ("float_gate = array<f32:" in bundle.ir["glowll"]) == hybrid


@pytest.mark.parametrize("x_shape,seed", [((1, 5, 11, 13), 930), ((2, 9, 3, 7), 931), ((1, 3, 1, 2), 933),
                                          ((1, 40, 3, 96), 934)])
def test_channel_mul_of_short_and_odd_planes_on_neon_high_products(x_shape, seed):
    """The int16 form on planes shorter than its 16 levels, of odd lengths (the last run's
    loads and stores lane by lane) and of whole runs, bit for bit the int8 reference's."""
    case = gate_product_case(x_shape, (*x_shape[:2], 1, 1), seed, *NET_GATE_TYPES)
    assert NEON_GATE in run_cases([case], BOARD).ir["glowll"]
