"""The squeeze-and-excitation channel Mul's int16 form on AVX2 (`backends.host_vector.gate_products`):
its proof against the independent int8 reference on every pair of levels, its table rows only of
the gate levels the gate's writer can give (`vector_elementwise.produced_levels`), and the table a
weight of the bundle's constant region (the op's `gate_table`), not code."""

from __future__ import annotations

import numpy as np
import pytest

from glowmlir.backends.host_vector.gate_products import UNPROVED, Int16Gate, int16_gate
from glowmlir.backends.host_vector.table_arithmetic import mulhrs
from glowmlir.bundle import constant_region
from glowmlir.quantization.rescaling import multiplier_and_shift
from glowmlir.targets import resolve_target
from tests.support import int8_reference as ref
from tests.unit.test_int8_depthwise import TARGETS, needs_avx
from tests.unit.test_quantized_kernels import Case, build, q8, tensor

NET_TYPES = ((0.0431, -11), (1 / 256, -128), (0.0279, -7))
"""x, gate (hard sigmoid's 1/256) and output types of a squeeze-and-excitation Mul like the net's."""


def gate_pairs(types, bounds, gate_levels=(-128, 127)):
    """Every pair of an x level and a gate level in `gate_levels` (x major), TFLite's Mul of
    them by the independent int8 reference clamped to `bounds`, and (M, shift) of the types."""
    every_gate = np.arange(gate_levels[0], gate_levels[1] + 1)
    x, gates = (pair.ravel() for pair in np.meshgrid(np.arange(-128, 128), every_gate, indexing="ij"))
    (x_scale, _), (gate_scale, _), (out_scale, _) = types
    expected = np.clip(ref.mul(x.astype(np.int8), gates.astype(np.int8), *types).astype(np.int64), *bounds)
    return x, gates, expected, multiplier_and_shift(x_scale * gate_scale / out_scale)


@pytest.mark.parametrize("seed", range(6))
def test_found_int16_gates_equal_the_int8_reference_on_every_pair_of_levels(seed):
    """Where `int16_gate` gives a form, its kernel's arithmetic (`Int16Gate.levels`: vpmulhrsw
    by `table_arithmetic.mulhrs`, a side's offset, the shift) is the int8 reference's Mul on
    every pair, clamped to the int8 range, a relu's or a clip's, on all 256 gate levels and on
    a random span of them (a table of that many rows); the random types (a multiplier below
    1/2, zero points anywhere, hard sigmoid's gate scale in half of them) are proved or
    refused, never wrong."""
    rng = np.random.default_rng(1000 + seed)
    while True:
        types = [(ref.f32(rng.uniform(0.002, 0.1)), int(rng.integers(-128, 128))) for _ in range(3)]
        if seed % 2:
            types[1] = (ref.f32(1 / 256), -128)
        if types[0][0] * types[1][0] / types[2][0] < 0.45:
            break
    span = tuple(int(g) for g in sorted(rng.integers(-128, 128, 2)))
    for bounds, gate_levels in (((-128, 127), (-128, 127)), ((types[2][1], 127), (-128, 127)),
                                (tuple(sorted(rng.integers(-128, 128, 2))), span)):
        x, gates, expected, (multiplier, shift) = gate_pairs(types, bounds, gate_levels)
        form = int16_gate(multiplier, shift, (-128, 127), gate_levels, tuple(t[1] for t in types), bounds)
        if form is not None:
            np.testing.assert_array_equal(np.clip(form.levels(x, gates, types[0][1]), *bounds), expected)
            assert form.gate_levels == gate_levels and form.table.shape == (gate_levels[1] - gate_levels[0] + 1, 4)
            assert form.table.dtype == np.int16 and list(form.attribute().get_values()) == list(gate_levels)


def test_int16_gates_of_the_net_types_are_proved_and_others_refused():
    """The net's types have an int16 form; types where some gate level has no row (a real
    multiplier of 0.0122 x gate levels up to 255 away from zg = 40) have none on all 256 gate
    levels, yet one on the few levels a clamped writer leaves; a table with one offset moved by
    a level is caught by the kernel's levels; the model's vpmulhrsw rounds half up."""
    x, gates, expected, (multiplier, shift) = gate_pairs(NET_TYPES, (-128, 127))
    form = int16_gate(multiplier, shift, (-128, 127), (-128, 127), (-11, -128, -7), (-128, 127))
    assert form is not None
    moved = Int16Gate(form.first, form.table.copy())
    moved.table[200, 1] += 1 << int(moved.table[200, 3])
    assert not np.array_equal(np.clip(moved.levels(x, gates, -11), -128, 127), expected)
    refused = [(ref.f32(0.0912), 127), (ref.f32(0.0061), 40), (ref.f32(0.0455), -100)]
    _, _, _, (multiplier, shift) = gate_pairs(refused, (-128, 127))
    assert int16_gate(multiplier, shift, (-128, 127), (-128, 127), (127, 40, -100), (-128, 127)) is None
    x, gates, expected, _ = gate_pairs(refused, (-128, 127), (30, 50))
    narrow = int16_gate(multiplier, shift, (-128, 127), (30, 50), (127, 40, -100), (-128, 127))
    assert narrow is not None and len(narrow.table) == 21
    np.testing.assert_array_equal(np.clip(narrow.levels(x, gates, 127), -128, 127), expected)
    assert list(mulhrs(np.array([16384, -16384, 3 << 8]), np.array([1, 1, 2 << 12]))) == [1, 0, 192]


@pytest.mark.parametrize("types", [
    ((0.0912, 127), (0.0061, 40), (0.0455, -100)),
    ((0.0886, 15), (0.00435, -2), (0.0856, -36)),
    ((0.0343, 84), (0.0192, 41), (0.0499, -120)),
])
def test_partial_int16_gates_mark_the_levels_without_a_row_and_prove_the_others(types):
    """Types where some gate levels have no row (`int16_gate` gives None on all 256): with
    `partial`, a hybrid's table, those levels' rows marked `UNPROVED` (a few, not all), and the
    other rows' levels the int8 reference's on every pair of them; each marked level has no row
    alone, each proved one is proved alone."""
    types = [(ref.f32(scale), offset) for scale, offset in types]
    x, gates, expected, (multiplier, shift) = gate_pairs(types, (-128, 127))
    zero_points = tuple(t[1] for t in types)
    assert int16_gate(multiplier, shift, (-128, 127), (-128, 127), zero_points, (-128, 127)) is None
    form = int16_gate(multiplier, shift, (-128, 127), (-128, 127), zero_points, (-128, 127), partial=True)
    assert form is not None and not form.complete and 0 < np.count_nonzero(~form.proved) < 16
    assert (form.table[~form.proved] == [0, 0, 0, UNPROVED]).all() and (form.table[form.proved, 3] >= 0).all()
    proved = form.proved[gates + 128]
    np.testing.assert_array_equal(np.clip(form.levels(x[proved], gates[proved], types[0][1]), -128, 127),
                                  expected[proved])
    for marked in (False, True):
        for level in np.arange(-128, 128)[form.proved != marked][:2]:
            alone = int16_gate(multiplier, shift, (-128, 127), (level, level), zero_points, (-128, 127))
            assert (alone is None) == marked


def clipped_gate_case(types, clip: tuple[float, float], plane: int, seed: int) -> Case:
    """A channel Mul of x by a gate a Clip writes (levels of the gate's whole range clipped to
    `clip`), each of 96 channels' planes of `plane` random levels, and its int8 reference."""
    rng = np.random.default_rng(seed)
    x_type, gate_type, out_type = ((ref.f32(scale), offset) for scale, offset in types)
    x = rng.integers(-128, 128, (1, 96, 1, plane)).astype(np.int8)
    gate = rng.integers(-128, 128, (1, 96, 1, 1)).astype(np.int8)
    gate.reshape(-1)[:2] = [-128, 127]
    low, high = (int(np.clip(np.round(bound / gate_type[0]) + gate_type[1], -128, 127)) for bound in clip)
    expected = ref.mul(x, np.clip(gate, low, high).astype(np.int8), x_type, gate_type, out_type)
    x_t, s_t, y_t = tensor(x.shape, q8(*x_type)), tensor(gate.shape, q8(*gate_type)), tensor(x.shape, q8(*out_type))
    body = f"""
  %x = glow.placeholder "x" : {x_t}
  %s = glow.placeholder "s" : {s_t}
  %c = glow.clip %s {{min = {clip[0]} : f32, max = {clip[1]} : f32}} : ({s_t}) -> {s_t}
  %y = glow.mul %x, %c : ({x_t}, {s_t}) -> {y_t}
  glow.save %y as "y" : {y_t}"""
    return Case(body, {"x": x, "s": gate}, {}, "y", expected)


@needs_avx
@pytest.mark.parametrize("types,clip,plane,rows", [
    (NET_TYPES, (0.0, 0.25), 37, 65),  # hard sigmoid's gate clipped to [0, 1/4]: levels -128 to -64
    (((0.0912, 127), (0.0061, 40), (0.0455, -100)), (0.06, 0.18), 70, 21),  # proved on its 21 levels only
])
def test_a_clipped_gate_takes_a_table_of_its_levels_in_the_weights(types, clip, plane, rows):
    """A gate a Clip writes: the Mul's int16 table has a row of each level the clip leaves
    (`int16_gate = array<i32: first, last>`), a weight of the bundle (its bytes in the
    constant region, `<name>.weights.bin`), and the Mul gives the int8 reference's levels."""
    case = clipped_gate_case(types, clip, plane, 950 + rows)
    bundle = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]))
    glowll_ir = bundle.ir["glowll"]
    assert f"table memref<{rows}x4xi16>" in glowll_ir and "float_gate" not in glowll_ir
    tables = [(name, offset, data) for name, offset, data in bundle.layout.weights if name.startswith("int16_gate")]
    assert len(tables) == 1 and tables[0][2].shape == (rows, 4) and tables[0][2].dtype == np.int16
    region = np.frombuffer(constant_region(bundle.layout), np.uint8)
    _, offset, data = tables[0]
    assert region[offset:offset + data.nbytes].tobytes() == data.astype("<i2").tobytes()
    np.testing.assert_array_equal(bundle.run(case.inputs)[case.output], case.expected)
