"""The int8 Add, Sub and Mul on a host's vector unit without AVX-512 VNNI (`microkernel =
"vector-elementwise-int8"`: `glowll-select-vector-columns`, `lowering/vector_elementwise.py`).

Random levels and scales, either operand broadcast (a squeeze-and-excitation block's channel
scale: [1, C, 1, 1] against [1, C, H, W]), rows shorter and longer than a vector, fused relu
and clip: on AVX2 (and AVX-512 without VNNI) each must take the kernel and give, bit for
bit, the independent int8 reference's outputs and the generic int8 kernel's (the same build
for a target without AVX: SSE only, no masked loads)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from glowmlir.backends.host_vector import select_kernels
from glowmlir.backends.host_vector.gate_products import UNPROVED, int16_gate
from glowmlir.quantization.float_steps import FloatGate, float_add
from glowmlir.quantization.rescaling import multiplier_and_shift
from glowmlir.targets import resolve_target
from tests.support import int8_reference as ref
from tests.unit.test_int8_depthwise import GENERIC, TARGETS, needs_avx
from tests.unit.test_quantized_kernels import (
    Case,
    all_level_pairs_case,
    binary_case,
    binary_text,
    build,
    levels,
    q8,
    tensor,
)
from tests.unit.test_vnni_depthwise import BINARY_CASES


@needs_avx
@pytest.mark.parametrize("op,a_shape,b_shape,activation,seed", BINARY_CASES)
def test_add_sub_and_mul_on_avx2_match_the_int8_reference(op, a_shape, b_shape, activation, seed):
    case = binary_case(op, a_shape, b_shape, seed, activation)
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]))
    assert 'microkernel = #glowll.microkernel<"vector-elementwise-int8"' in fast.ir["glowll"]
    generic = build(case.body, dict(case.constants), target=resolve_target(mattr=GENERIC))
    assert "microkernel" not in generic.ir["glowll"]
    for bundle in (fast, generic):
        np.testing.assert_array_equal(bundle.run(case.inputs)[case.output], case.expected)


def without_int16_gate(monkeypatch) -> None:
    """No int16 form proved (`gate_products.mul_int16_gate` gives None): the channel Mul
    takes the forms after it, as on a target without AVX2."""
    monkeypatch.setattr(select_kernels, "mul_int16_gate", lambda op, partial=False: None)


def gate_product_case(x_shape, gate_shape, seed: int, x_type, gate_type, out_type):
    """A squeeze-and-excitation block's channel Mul (`glow.mul` of x by a gate a channel, named
    x, s, y) of random levels, the gate's first channels at the ends of its range (-128, 127,
    its zero point), and its int8 reference output."""
    rng = np.random.default_rng(seed)
    x_type, gate_type, out_type = ((ref.f32(scale), offset) for scale, offset in (x_type, gate_type, out_type))
    x, gate = levels(rng, *x_shape), levels(rng, *gate_shape)
    gate.reshape(-1)[:3] = [-128, 127, gate_type[1]]
    expected = ref.mul(x, gate, x_type, gate_type, out_type)
    x_t, s_t, y_t = tensor(x_shape, q8(*x_type)), tensor(gate_shape, q8(*gate_type)), tensor(x_shape, q8(*out_type))
    return Case(binary_text("mul", x_t, s_t, y_t), {"x": x, "s": gate}, {}, "y", expected)


@needs_avx
@pytest.mark.parametrize("x_shape,gate_shape,x_type,gate_type,out_type,seed,form", [
    ((1, 24, 2, 96), (1, 24, 1, 1), (0.0431, -11), (1 / 256, -128), (0.0279, -7), 900, "float_gate"),
    ((2, 9, 3, 7), (2, 9, 1, 1), (0.0173, 40), (0.0078, 3), (0.0119, 12), 901, "float_gate"),
    ((1, 7, 1, 33), (1, 7, 1, 1), (0.0912, -128), (1 / 256, -128), (0.0455, -128), 902, "float_gate"),
    ((1, 5, 11, 13), (1, 5, 1, 1), (0.0301, 127), (0.0061, -60), (0.0009, 5), 903, "float_gate"),
    ((37, 3), (37, 3), (0.0222, 9), (0.0571, -33), (0.0817, 2), 904, "float_step"),
])
def test_channel_products_take_a_float_form_and_match_the_int8_reference(
        monkeypatch, x_shape, gate_shape, x_type, gate_type, out_type, seed, form):
    """A channel Mul (odd planes, a tail, planes shorter than a vector, gates at the ends of
    their range, zero points at both ends) takes the proved fma form (`float_gate` printed on
    the op; AVX2 has FMA3) where the int16 form is not taken (`without_int16_gate`), a Mul of
    one shape the proved float step (`float_step`), and each gives the reference's levels bit
    for bit."""
    without_int16_gate(monkeypatch)
    case = gate_product_case(x_shape, gate_shape, seed, x_type, gate_type, out_type)
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]))
    assert f"{form} = array<f32:" in fast.ir["glowll"]
    np.testing.assert_array_equal(fast.run(case.inputs)[case.output], case.expected)


def every_gate_pair_case(x_type, gate_type, out_type, plane: int, seed: int, gate_first: bool = False) -> Case:
    """A channel Mul of 256 channels, one a gate level (shuffled), each channel's plane of
    `plane` levels every x level (shuffled; the rest random): all 65,536 pairs of an x level
    and a gate level, with tails where `plane` is not a multiple of 16; and its int8 reference."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (1, 256, 1, plane)).astype(np.int8)
    for channel in range(256):
        x[0, channel, 0, :256] = rng.permutation(np.arange(-128, 128))
    gate = rng.permutation(np.arange(-128, 128)).astype(np.int8).reshape(1, 256, 1, 1)
    expected = ref.mul(x, gate, x_type, gate_type, out_type)
    x_t, s_t, y_t = tensor(x.shape, q8(*x_type)), tensor(gate.shape, q8(*gate_type)), tensor(x.shape, q8(*out_type))
    if gate_first:
        body = f"""
  %s = glow.placeholder "s" : {s_t}
  %x = glow.placeholder "x" : {x_t}
  %y = glow.mul %s, %x : ({s_t}, {x_t}) -> {y_t}
  glow.save %y as "y" : {y_t}"""
    else:
        body = binary_text("mul", x_t, s_t, y_t)
    return Case(body, {"x": x, "s": gate}, {}, "y", expected)


def random_types(seed: int):
    """Random scales and zero points of x, a gate and a Mul's output whose real multiplier is below 1/2."""
    rng = np.random.default_rng(seed)
    while True:
        types = [(ref.f32(rng.uniform(0.002, 0.1)), int(rng.integers(-128, 128))) for _ in range(3)]
        if types[0][0] * types[1][0] / types[2][0] < 0.45:
            return types


@needs_avx
@pytest.mark.parametrize("types,plane,gate_first", [
    (((0.0431, -11), (1 / 256, -128), (0.0279, -7)), 256, False),  # the net's gate: hard sigmoid's 1/256
    (((0.0912, 127), (0.0061, 40), (0.0455, -100)), 259, True),
    (random_types(920), 263, False),
    (random_types(921), 256, True),
    (random_types(922), 271, False),
])
def test_channel_mul_of_every_pair_of_levels_on_the_fma_form(monkeypatch, types, plane, gate_first):
    """TFLite's int8 Mul by a gate a channel on every pair of an x level and a gate level
    (random scales too; the gate either operand; planes with tails) on the fma form, bit for
    bit the int8 reference's."""
    without_int16_gate(monkeypatch)
    x_type, gate_type, out_type = ((ref.f32(scale), offset) for scale, offset in types)
    case = every_gate_pair_case(x_type, gate_type, out_type, plane, plane, gate_first)
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]))
    assert "float_gate = array<f32:" in fast.ir["glowll"]
    np.testing.assert_array_equal(fast.run(case.inputs)[case.output], case.expected)


NET_GATE_TYPES = ((0.0431, -11), (1 / 256, -128), (0.0279, -7))
"""x, gate (hard sigmoid's 1/256) and output types of a squeeze-and-excitation Mul like the net's."""


@needs_avx
@pytest.mark.parametrize("types,plane,gate_first", [
    (NET_GATE_TYPES, 256, False),
    (((0.0301, 127), (0.0061, -60), (0.0009, 5)), 259, True),
    (random_types(920), 263, False),
    (random_types(921), 271, True),
    (random_types(929), 287, False),
])
def test_channel_mul_of_every_pair_of_levels_on_the_int16_form(types, plane, gate_first):
    """TFLite's int8 Mul by a gate a channel on every pair of an x level and a gate level
    (random scales whose int16 form is proved; the gate either operand; planes with tails of
    3 to 31 levels) on the int16 form (`int16_gate` printed on the op: AVX2), bit for bit the
    int8 reference's."""
    x_type, gate_type, out_type = ((ref.f32(scale), offset) for scale, offset in types)
    case = every_gate_pair_case(x_type, gate_type, out_type, plane, plane, gate_first)
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]))
    assert "int16_gate = array<i32:" in fast.ir["glowll"] and "float_gate" not in fast.ir["glowll"]
    np.testing.assert_array_equal(fast.run(case.inputs)[case.output], case.expected)


@needs_avx
@pytest.mark.parametrize("x_shape,seed", [((1, 5, 11, 13), 930), ((2, 9, 3, 7), 931), ((1, 7, 1, 33), 932),
                                          ((1, 3, 1, 2), 933), ((1, 40, 3, 96), 934)])
def test_channel_mul_of_short_and_odd_planes_on_the_int16_form(x_shape, seed):
    """The int16 form on planes shorter than its 32 levels, of odd lengths (masked loads and
    stores: the last run) and of whole runs, the gate's first levels at the ends of its range,
    bit for bit the int8 reference's."""
    case = gate_product_case(x_shape, (*x_shape[:2], 1, 1), seed, *NET_GATE_TYPES)
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]))
    assert "int16_gate = array<i32:" in fast.ir["glowll"]
    np.testing.assert_array_equal(fast.run(case.inputs)[case.output], case.expected)


@needs_avx
@pytest.mark.parametrize("seed", range(940, 946))
def test_channel_mul_of_random_types_on_its_gate_forms(seed):
    """A channel Mul of random types on whichever form is proved (int16, else fma, else the
    float step: each falls back where its proof fails), bit for bit the int8 reference's."""
    case = binary_case("mul", (1, 12, 3, 37), (1, 12, 1, 1), seed)
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]))
    assert 'microkernel<"vector-elementwise-int8">' in fast.ir["glowll"]
    np.testing.assert_array_equal(fast.run(case.inputs)[case.output], case.expected)


HYBRID_TYPES = ((0.0912, 127), (0.0061, 40), (0.0455, -100))
"""x, gate and output types whose int16 form has no row of gate levels -113, -90, -83, -38 and -7."""


def marked_gate_levels(types) -> np.ndarray:
    """The gate levels (of all 256) a hybrid's table marks `UNPROVED` for `types` (`int16_gate`'s, partial)."""
    (x_scale, _), (gate_scale, _), (out_scale, _) = types
    form = int16_gate(*multiplier_and_shift(ref.f32(x_scale) * ref.f32(gate_scale) / ref.f32(out_scale)),
                      (-128, 127), (-128, 127), tuple(offset for _, offset in types), (-128, 127), partial=True)
    return np.nonzero(~form.proved)[0] - 128


@needs_avx
@pytest.mark.parametrize("types,plane,gate_first", [
    (HYBRID_TYPES, 259, True),
    (random_types(924), 263, False),
    (random_types(927), 256, True),
    (random_types(966), 271, False),
])
def test_channel_mul_of_every_pair_of_levels_on_the_hybrid_form(types, plane, gate_first):
    """Types whose int16 form has no row for a few gate levels (random ones too): the Mul is a
    hybrid, `int16_gate` on all 256 levels beside its `float_gate`, its table's rows of those
    levels (only) marked `UNPROVED`; every gate level a channel, so both loops run (the int16
    one for most channels, the fma one for the marked levels' channels), and all 65,536 pairs
    of levels (planes with tails) are bit for bit the int8 reference's."""
    x_type, gate_type, out_type = ((ref.f32(scale), offset) for scale, offset in types)
    case = every_gate_pair_case(x_type, gate_type, out_type, plane, plane, gate_first)
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]))
    assert "int16_gate = array<i32: -128, 127>" in fast.ir["glowll"] and "float_gate = array<f32:" in fast.ir["glowll"]
    (table,) = (data for name, _, data in fast.layout.weights if name.startswith("int16_gate"))
    marked = np.nonzero(table[:, 3] == UNPROVED)[0] - 128
    assert 0 < len(marked) < 16 and list(marked) == list(marked_gate_levels(types))
    np.testing.assert_array_equal(fast.run(case.inputs)[case.output], case.expected)


@needs_avx
def test_a_hybrid_takes_the_fma_loop_only_on_its_marked_gate_levels(monkeypatch):
    """The hybrid's branch a run: with its `float_gate`'s offsets moved by 4 levels (a wrong fma
    form, monkeypatched), exactly the channels whose gate level is marked (-113, -90, -83, -38,
    -7) differ from the reference: the int16 loop takes every other channel, the fma loop those."""
    original = select_kernels.mul_float_gate

    def moved(op):
        form = original(op)
        return FloatGate(form.scale, form.offset + 4, form.negative_offset + 4)
    monkeypatch.setattr(select_kernels, "mul_float_gate", moved)
    x_type, gate_type, out_type = ((ref.f32(scale), offset) for scale, offset in HYBRID_TYPES)
    case = every_gate_pair_case(x_type, gate_type, out_type, 256, 961)
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]))
    wrong = (fast.run(case.inputs)[case.output] != case.expected).any(axis=(0, 2, 3))
    np.testing.assert_array_equal(np.sort(case.inputs["s"].reshape(-1)[wrong]), marked_gate_levels(HYBRID_TYPES))


@needs_avx
@pytest.mark.parametrize("mattr,types,form", [
    (TARGETS["avx2"] + ",-avx2", NET_GATE_TYPES, "float_gate"),  # AVX and FMA3 without AVX2: no vpmulhrsw
    (TARGETS["avx2"] + ",-avx2", HYBRID_TYPES, "float_gate"),  # (a hybrid on AVX2)
])
def test_a_channel_mul_without_the_int16_form_keeps_the_fma_form(mattr, types, form):
    """Where the target has no AVX2, a channel Mul keeps its fma form (no hybrid either), bit
    for bit the reference's."""
    case = gate_product_case((1, 6, 3, 21), (1, 6, 1, 1), 950, *types)
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=mattr))
    assert f"{form} = array<f32:" in fast.ir["glowll"] and "int16_gate" not in fast.ir["glowll"]
    np.testing.assert_array_equal(fast.run(case.inputs)[case.output], case.expected)


@needs_avx
@pytest.mark.parametrize("mattr,refused", [(TARGETS["avx2"] + ",-fma", False), (TARGETS["avx2"], True)])
def test_a_channel_mul_without_the_fma_form_keeps_the_float_step(monkeypatch, mattr, refused):
    """Without FMA3 (-fma), or where no fma form is proved (`mul_float_gate` gives None), a
    channel Mul takes `float_step` as before, bit for bit the reference's."""
    without_int16_gate(monkeypatch)
    if refused:
        monkeypatch.setattr(select_kernels, "mul_float_gate", lambda op: None)
    case = gate_product_case((1, 6, 3, 21), (1, 6, 1, 1), 906, (0.0431, -11), (1 / 256, -128), (0.0279, -7))
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=mattr))
    assert "float_step = array<f32:" in fast.ir["glowll"] and "float_gate" not in fast.ir["glowll"]
    np.testing.assert_array_equal(fast.run(case.inputs)[case.output], case.expected)


@needs_avx
def test_a_mul_whose_float_step_is_refused_keeps_the_exact_step():
    """A Mul of a real multiplier above 1/2 (0.05 x 0.04 / 0.003: a level a product or more, no
    float step) takes vector-elementwise-int8 without `float_step`, on `requantize_bounded`, as before."""
    case = gate_product_case((1, 6, 3, 21), (1, 6, 1, 1), 905, (0.05, 3), (0.04, -20), (0.003, 1))
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]))
    assert 'microkernel<"vector-elementwise-int8">' in fast.ir["glowll"] and "float_step" not in fast.ir["glowll"]
    np.testing.assert_array_equal(fast.run(case.inputs)[case.output], case.expected)



@needs_avx
@pytest.mark.parametrize("a_type,b_type,out_type", [
    ((0.0123, 25), (0.1, -7), (0.051, 3)),
    ((0.0431, -128), (1 / 256, -128), (0.0279, 127)),
    ((0.0912, 127), (0.0061, 40), (0.0455, -100)),
])
@pytest.mark.parametrize("fma", ["+fma", "-fma"])
def test_mul_of_every_pair_of_levels_on_the_float_step(a_type, b_type, out_type, fma):
    """TFLite's int8 Mul on every pair of levels (256 x 256, one shape) on the float step: its
    fused form (`FloatStep.fused`, a fourth number, one `vfmadd`) on a target with FMA3, else
    the multiply and the add; on AVX2's packs 32 levels a step as bytes (the kernel's
    `shuffles`, `byte_elementwise.float_step_bytes`: `vpmullw` and `vpmulhw`)."""
    a_type, b_type, out_type = ((ref.f32(scale), offset) for scale, offset in (a_type, b_type, out_type))
    case = all_level_pairs_case("mul", a_type, b_type, out_type)
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=f"{TARGETS['avx2']},{fma}"),
                 keep_assembly=True)
    steps = re.findall(r"float_step = array<f32: [^>]*>", fast.ir["glowll"])
    assert len(steps) == 1 and (steps[0].count(",") == 3) == (fma == "+fma"), steps
    assert '{shuffles = "avx2"}' in fast.ir["glowll"] and "vpmulhw" in fast.ir["assembly"]
    assert ("vfmadd" in fast.ir["assembly"]) == (fma == "+fma")
    np.testing.assert_array_equal(fast.run(case.inputs)[case.output], case.expected)


@needs_avx
@pytest.mark.parametrize("a_shape,b_shape,seed", [
    ((1, 88, 3, 96), (1, 88, 3, 96), 930),
    ((2, 5, 3, 45), (2, 5, 3, 45), 931),
    ((1, 3, 2, 63), (1, 3, 2, 63), 932),
    ((3, 7), (3, 7), 933),
    ((1, 9, 1, 65), (1, 9, 1, 65), 934),
    ((2, 6, 3, 17), (1, 6, 1, 1), 935),
    ((1, 4, 1, 1), (2, 4, 3, 3), 936),
    ((1, 1, 3, 40), (1, 4, 3, 40), 937),
])
@pytest.mark.parametrize("fma", ["+fma", "-fma"])
def test_muls_on_the_float_step_as_bytes_match_the_int8_reference(a_shape, b_shape, seed, fma):
    """Random Muls with a float step (of one shape, either operand broadcast, rows shorter than
    a vector of 32 and one or two levels past whole vectors: masked runs) on AVX2's packs, 32
    levels a step as bytes (`byte_elementwise.float_step_bytes`), fused where the target has
    FMA3 (a channel gate without FMA3: no `float_gate`), give the reference's levels bit for
    bit."""
    case = binary_case("mul", a_shape, b_shape, seed)
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=f"{TARGETS['avx2']},{fma}"))
    ir = fast.ir["glowll"]
    assert "float_gate" in ir or ("float_step" in ir and '{shuffles = "avx2"}' in ir), ir
    np.testing.assert_array_equal(fast.run(case.inputs)[case.output], case.expected)


BYTE_KERNELS = {TARGETS["avx2"]: ('<"vector-elementwise-int8", {shuffles = "avx2"}>', True),
                "-avx512f,-fma": ('<"vector-elementwise-int8", {shuffles = "avx2"}>', False),
                "-avx512f,-avx2": ('<"vector-elementwise-int8">', True)}
"""mattr -> the Add's kernel and whether the target has FMA3 (the fused float form,
`FloatAdd.fused`, where it is proved): AVX2's packs (32 levels a step as bytes,
`emit_byte_steps`) with and without FMA3, and AVX without AVX2 (16 int32 lanes)."""


def fused_float_add(ir: str, kernel: str, fma: bool) -> bool:
    """Whether the Add, which took `kernel` with a `float_add`, has its fused form (a sixth
    number, 1: only where the target has an `fma`)."""
    numbers = re.search(r"float_add = array<f32: ([^>]*)>", ir).group(1).split(", ")
    assert kernel in ir and len(numbers) in ((5, 6) if fma else (5,)), (kernel, numbers)
    return len(numbers) == 6


@needs_avx
@pytest.mark.parametrize("kind,a_type,b_type,out_type,fused", [
    ("add", (0.0123, 25), (0.1, -7), (0.051, 3), False),
    ("sub", (0.0123, 25), (0.1, -7), (0.051, 3), True),
    ("add", (0.05, 3), (0.05, 3), (0.1, -2), False),  # (d1 + d2) / 2: ties, halves away from zero
    ("sub", (0.05, 3), (0.05, 3), (0.1, -2), False),
    ("add", (0.0431, -128), (0.0179, 127), (0.0279, 127), True),
    ("sub", (0.0431, -128), (0.0179, 127), (0.0279, 127), True),
    ("add", (0.0912, 127), (0.0061, 40), (0.0455, -100), True),
    ("sub", (0.0912, 127), (0.0061, 40), (0.0455, -100), True),
])
def test_add_and_sub_of_every_pair_of_levels_on_the_float_form(kind, a_type, b_type, out_type, fused):
    """TFLite's int8 Add and Sub on every pair of levels (256 x 256) on the proved float form
    (`float_add` printed on the op), bit for bit the int8 reference's: on AVX2 32 levels a step
    as bytes (the kernel's `shuffles`), on AVX without AVX2 16 as int32 lanes, fused where the
    target has FMA3 and it is proved (`fused`; the ties of (d1 + d2) / 2 want an offset a
    side, which the fused form has not) (`BYTE_KERNELS`)."""
    a_type, b_type, out_type = ((ref.f32(scale), offset) for scale, offset in (a_type, b_type, out_type))
    case = all_level_pairs_case(kind, a_type, b_type, out_type)
    for mattr, (kernel, fma) in BYTE_KERNELS.items():
        fast = build(case.body, dict(case.constants), target=resolve_target(mattr=mattr))
        assert fused_float_add(fast.ir["glowll"], kernel, fma) == (fma and fused)
        np.testing.assert_array_equal(fast.run(case.inputs)[case.output], case.expected)


@needs_avx
@pytest.mark.parametrize("op,a_shape,b_shape,activation,seed", [
    ("add", (1, 32, 2, 96), (1, 32, 2, 96), None, 910),
    ("add", (1, 16, 3, 96), (1, 16, 3, 96), "relu", 911),
    ("add", (2, 6, 3, 17), (1, 6, 1, 1), "clip", 912),
    ("sub", (1, 4, 1, 1), (2, 4, 3, 3), None, 913),
    ("add", (3, 7), (3, 7), None, 914),
    ("add", (2, 5, 3, 45), (2, 5, 3, 45), "relu", 916),
    ("add", (1, 3, 2, 63), (1, 3, 2, 63), "clip", 917),
    ("add", (4, 33), (4, 1), None, 918),
    ("sub", (5, 1), (5, 31), None, 919),
    ("sub", (2, 4, 95), (2, 4, 95), None, 921),
    ("add", (1, 9, 1, 65), (1, 9, 1, 65), None, 920),
])
def test_residual_adds_take_the_float_form_and_match_the_int8_reference(op, a_shape, b_shape, activation, seed):
    """Random Adds and Subs (a residual block's of one shape, either operand broadcast, rows
    shorter than a vector and one or two levels past whole vectors of 32 (masked runs), fused
    relu and clip) take `float_add` and give the reference's levels, on AVX2's bytes and on
    AVX's int32 lanes (`BYTE_KERNELS`), fused where the target has FMA3."""
    case, fused = binary_case(op, a_shape, b_shape, seed, activation), True
    for mattr, (kernel, fma) in BYTE_KERNELS.items():
        fast = build(case.body, dict(case.constants), target=resolve_target(mattr=mattr))
        assert fused_float_add(fast.ir["glowll"], kernel, fma) == (fma and fused)
        np.testing.assert_array_equal(fast.run(case.inputs)[case.output], case.expected)


def test_float_add_refuses_levels_no_float_form_gives():
    """(q1 + q2) / 2 rounded half to even (0.5 -> 0, 1.5 -> 2): no offset of a side puts both
    ties on their side, so `float_add` proves nothing; TFLite's (halves away from zero) it proves."""
    first, second = (pair.ravel() for pair in np.meshgrid(np.arange(-128, 128), np.arange(-128, 128)))
    halves_to_even = np.clip(np.rint((first + second) / 2), -128, 127).astype(np.int32)
    assert float_add(first, second, halves_to_even, (0.5, 0.5), (0, 0)) is None
    away_from_zero = np.clip(np.trunc((first + second) / 2 + np.sign(first + second) * 0.5), -128, 127)
    assert float_add(first, second, away_from_zero.astype(np.int32), (0.5, 0.5), (0, 0)) is not None


@needs_avx
def test_an_add_without_a_float_form_keeps_the_exact_steps(monkeypatch):
    """An Add no float form is proved for (none found: `add_float_form` gives None) takes
    vector-elementwise-int8 without `float_add`, on TFLite's integer steps (`add_terms`), as before."""
    monkeypatch.setattr(select_kernels, "add_float_form", lambda op, fused=False: None)
    case = binary_case("add", (1, 8, 3, 21), (1, 8, 3, 21), 915, "relu")
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]))
    assert 'microkernel<"vector-elementwise-int8">' in fast.ir["glowll"] and "float_add" not in fast.ir["glowll"]
    np.testing.assert_array_equal(fast.run(case.inputs)[case.output], case.expected)
