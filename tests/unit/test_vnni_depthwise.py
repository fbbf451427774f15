"""The int8 depthwise convolution on AVX-512 VNNI and VBMI (`microkernel = "x86-vnni-depthwise"`:
`glowll-select-x86-vnni-kernels`, `backends/x86/vnni_depthwise.py`) and the int8 Add, Sub and
Mul on AVX-512 (`"x86-avx512"`).

Depthwise convolutions of random levels, weights with a zero point (levels less it beyond
int8: the rest words the kernel makes at run time) and without, per tensor and per channel,
3x3 and 5x5, strides 1 and 2 (along rows and columns), padding (uneven too), dilation, several
images, fused relu and clip, planes of the per-vector form (at most 16 vectors) and of the rows
form (the PP-OCR-cls-style planes): each must take the kernel on the host and give, bit for
bit, the independent int8 reference's outputs (tests/support/int8_reference.py) and the generic
int8 kernel's (the same build without AVX-512 VNNI). Filters with a level 255 from their zero
point keep the other kernels. The Add, Sub and Mul likewise, broadcasting either operand.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from glowmlir.backends.x86 import layout as vnni_layout
from glowmlir.backends.x86 import select_kernels as x86_selection
from glowmlir.backends.x86 import vnni_depthwise
from glowmlir.backends.x86.target import has_avx512_vbmi, has_avx512_vnni
from glowmlir.elf import function_ranges
from glowmlir.target import HOST
from glowmlir.targets import resolve_target
from tests.unit.test_int8_depthwise import GEOMETRIES
from tests.unit.test_quantized_kernels import (
    Case,
    binary_case,
    build,
    convolution_case,
    with_lookup_table,
)
from tests.unit.test_x86_vnni import all_match_the_reference

needs_vbmi = pytest.mark.skipif(not (has_avx512_vnni(HOST) and has_avx512_vbmi(HOST)),
                                reason="the host has no AVX-512 VNNI and VBMI")

KERNEL = 'microkernel = #glowll.microkernel<"x86-vnni-depthwise"'
ROWS = {
    "3x3_stride_2_1_ppocr": ((1, 6, 24, 96), (6, 1, 3, 3), (2, 1), (1, 1, 1, 1), (1, 1), 6),
    "5x5_three_rows_ppocr": ((1, 5, 3, 96), (5, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 5),
    "5x5_stride_2_1_three_rows": ((2, 6, 3, 40), (6, 1, 5, 5), (2, 1), (2, 2, 2, 2), (1, 1), 6),
    "1x3_three_rows": ((1, 5, 3, 96), (5, 1, 1, 3), (1, 1), (0, 1, 0, 1), (1, 1), 5),
    "5x5_unpadded": ((1, 3, 12, 50), (3, 1, 5, 5), (1, 1), (0, 0, 0, 0), (1, 1), 3),
    "3x3_dilated_uneven_pads": ((2, 4, 20, 40), (4, 1, 3, 3), (1, 1), (2, 1, 2, 3), (2, 1), 4),
    "3x3_column_stride_2": ((1, 3, 10, 70), (3, 1, 3, 3), (1, 2), (1, 1, 1, 1), (1, 1), 3),
    "3x3_unpadded_one_row_class": ((1, 3, 12, 50), (3, 1, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 3),
    "3x4_two_row_padding": ((1, 4, 8, 60), (4, 1, 3, 4), (1, 1), (2, 1, 2, 2), (1, 1), 4),
    "5x5_two_rows_of_96": ((1, 5, 2, 96), (5, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 5),
    "3x3_four_rows_of_32": ((2, 3, 4, 32), (3, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 3),
}
"""Depthwise geometries of more than 16 vectors of outputs a plane: the rows form (as the
test_int8_depthwise geometry 3x3_wide_rows, 13 x 37: 31 vectors); and short planes whose rows
are whole vectors (2 x 96, PP-OCR's 5x5s of 200 channels; 4 x 32), whose fused table's
vectors join across rows."""


def geometry_of(name: str) -> vnni_layout.DepthwiseGeometry:
    """The `DepthwiseGeometry` of a test geometry (of `GEOMETRIES` or `ROWS`)."""
    x_shape, w_shape, strides, pads, dilations, _ = {**GEOMETRIES, **ROWS}[name]
    out_hw = tuple((size + pads[axis] + pads[axis + 2] - dilation * (k - 1) - 1) // stride + 1
                   for axis, (size, k, stride, dilation) in enumerate(zip(x_shape[2:], w_shape[2:], strides,
                                                                         dilations)))
    return vnni_layout.DepthwiseGeometry(x_shape[2:], out_hw, w_shape[2:], strides, pads[:2], dilations)


ALL = {**GEOMETRIES, **ROWS}


def fast_and_generic(case: Case) -> tuple[object, list[np.ndarray]]:
    """The host build (its glowll) and the outputs of it and of the generic int8 kernel's build."""
    fast = build(case.body, dict(case.constants))
    generic = build(case.body, dict(case.constants), target=resolve_target(mattr="-avx512vnni"))
    assert "x86-" not in generic.ir["glowll"]
    return fast.ir["glowll"], [bundle.run(case.inputs)[case.output] for bundle in (fast, generic)]


@needs_vbmi
@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("per_channel", [False, True])
def test_depthwise_matches_the_int8_reference(name, per_channel):
    case = convolution_case(900 + list(ALL).index(name) + 50 * per_channel, ALL[name], per_channel)
    glowll, outputs = fast_and_generic(case)
    assert KERNEL in glowll
    all_match_the_reference(outputs, case)


def test_the_rows_form_takes_the_larger_planes():
    """Which form each test geometry exercises: the short form planes of at most 4 rows at
    least a vector wide, the rows form the other planes of more than 16 vectors, the
    per-vector form the rest; a plane whose every output row has a kernel row in the padding
    (3 x 96 of a 5x5) takes one start a row, from a row of the bias (`start_classes`); and the
    short form's 5x5s of at most 4 input rows one operand for the fifth column of every input
    row, a word an output row."""
    forms = {name: vnni_depthwise.form_of(geometry_of(name)).__name__ for name in ALL}
    assert all(geometry_of(name).takes() for name in ALL)
    assert {name for name, form in forms.items() if form == "emit_short_plane"} == {
        "5x5_stride_2_1_ppocr", "5x5_two_rows_ppocr", "3x3_one_row", "5x5_three_rows_ppocr", "1x3_three_rows",
        "5x5_stride_2_1_three_rows", "5x5_two_rows_of_96", "3x3_four_rows_of_32"}
    assert {name for name in ALL if geometry_of(name).column_words()} == {
        "5x5_two_rows_ppocr", "5x5_three_rows_ppocr", "5x5_stride_2_1_three_rows", "5x5_two_rows_of_96"}
    assert {name for name, form in forms.items() if form == "emit_rows"} == {
        "3x3_wide_rows", "3x3_stride_2_1_ppocr", "3x3_dilated_uneven_pads", "3x3_column_stride_2", "5x5_unpadded",
        "3x3_unpadded_one_row_class", "3x4_two_row_padding"}
    ppocr = vnni_layout.DepthwiseGeometry((3, 96), (3, 96), (5, 5), (1, 1), (2, 2), (1, 1))
    assert ppocr.row_classes() == [(0, 1, (0, 1)), (1, 2, (0, 4)), (2, 3, (3, 4))]
    assert ppocr.padded_plane() == (3, 128) and ppocr.window_bytes() == 32
    assert ppocr.rows_fit() and not ppocr.fits()
    # its classes' starts come from the bias (`padded_start_biases`); an unpadded plane has none
    assert ppocr.start_classes() == ppocr.row_classes() and geometry_of("5x5_unpadded").start_classes() == []
    # the fifth column's taps (index ky * 5 + 4) of the kernel rows that read input rows 0, 1, 2
    assert ppocr.column_words() == ((14, 19, 24, None), (9, 14, 19, None), (4, 9, 14, None))
    strided = vnni_layout.DepthwiseGeometry((3, 96), (2, 96), (5, 5), (2, 1), (2, 2), (1, 1))
    assert strided.column_words() == ((14, 19, 24, None), (4, 9, 14, None))


@needs_vbmi
@pytest.mark.parametrize("name,activation", [("3x3_pad1_ds_cnn", "relu"), ("5x5_stride2_odd", "clip"),
                                             ("same_5x5_of_8x8", "relu"), ("uneven_pads_dilated", "clip"),
                                             ("3x3_stride_2_1_ppocr", "relu"), ("3x4_two_row_padding", "clip")])
def test_fused_activations_match_the_int8_reference(name, activation):
    case = convolution_case(950 + list(ALL).index(name), ALL[name], activation=activation)
    glowll, outputs = fast_and_generic(case)
    assert KERNEL in glowll
    all_match_the_reference(outputs, case)


def rest_levels(case: Case) -> bool:
    """Whether some filter level of a per-tensor case less its zero point leaves int8."""
    zero_point = re.search(r"%w = [^\n]*!quant\.uniform<i8:f32, [^:]*:(-?\d+)>", case.body).group(1)
    centred = case.constants["w"].astype(np.int64) - int(zero_point)
    return bool(centred.min() < -128 or centred.max() > 127)


@needs_vbmi
@pytest.mark.parametrize("name", ["3x3_pad1_ds_cnn", "5x5_three_rows_ppocr", "5x5_two_rows_ppocr",
                                  "3x4_two_row_padding"])
def test_levels_beyond_int8_take_rest_words_and_a_level_of_255_keeps_the_other_kernel(name):
    """Per tensor with a zero point, some levels less it leave int8: the filter stays as it is
    (the kernel adds the rest words' products for those channels, the padded kernel rows' in
    one loop for every row class of the short and rows forms) and the outputs are still
    the reference's. A filter holding 127 with zero point -128 (255 from it: the rest would be
    128) is left to the other kernels; -255 splits (-128 and -127)."""
    case = next(case for seed in range(903, 950) if (case := convolution_case(seed, ALL[name])) and rest_levels(case))
    glowll, outputs = fast_and_generic(case)
    shape = "x".join(map(str, ALL[name][1]))
    assert KERNEL in glowll and re.search(rf'glowll.weight "w" [^\n]*memref<{shape}x!quant', glowll)
    all_match_the_reference(outputs, case)
    centred = np.zeros((2, 1, 3, 3), np.int64)
    centred[1, 0, 2, 1] = 255
    assert not vnni_layout.depthwise_levels_fit(centred)
    centred[1, 0, 2, 1] = -255
    assert vnni_layout.depthwise_levels_fit(centred)


def test_windows_of_a_plane_hold_every_tap_once():
    """Each output's taps, read back through the windows' starts and permutes, are the input
    pixels its window covers (the padding's bytes marked), for strides, dilation and uneven pads."""
    rng = np.random.default_rng(8)
    for in_hw, kernel, strides, pads, dilations in [((25, 5), (3, 3), (1, 1), (1, 1), (1, 1)),
                                                    ((9, 11), (5, 5), (2, 2), (2, 2), (1, 1)),
                                                    ((12, 19), (3, 2), (1, 2), (2, 0), (2, 1))]:
        out_hw = tuple((size + 2 * pad - dilation * (k - 1) - 1) // stride + 1
                       for size, k, stride, pad, dilation in zip(in_hw, kernel, strides, pads, dilations))
        geometry = vnni_layout.DepthwiseGeometry(in_hw, out_hw, kernel, strides, pads, dilations)
        plane = rng.integers(0, 256, in_hw)
        flat = plane.reshape(-1)
        for first in range(0, out_hw[0] * out_hw[1], 16):
            count = min(16, out_hw[0] * out_hw[1] - first)
            windows, padded = geometry.windows(first, count)
            read = {}
            for window in windows:
                for taps in window.taps:
                    read[taps.ky, taps.quad] = [None if at == vnni_layout.WINDOW else flat[window.start + at]
                                                for at in taps.order]
            read.update({key: [None] * 64 for key in padded})
            for lane in range(count):
                y, x = divmod(first + lane, out_hw[1])
                for ky in range(kernel[0]):
                    for kx in range(kernel[1]):
                        iy = y * strides[0] + ky * dilations[0] - pads[0]
                        ix = x * strides[1] + kx * dilations[1] - pads[1]
                        inside = 0 <= iy < in_hw[0] and 0 <= ix < in_hw[1]
                        assert read[ky, kx // 4][4 * lane + kx % 4] == (plane[iy, ix] if inside else None)


BINARY_CASES = [
    ("add", (2, 3, 5, 5), (2, 3, 5, 5), None, 820),
    ("add", (1, 4, 1, 1), (2, 4, 3, 3), None, 821),
    ("add", (2, 6, 3, 17), (1, 6, 1, 1), "relu", 826),
    ("sub", (2, 6, 3, 17), (1, 6, 1, 1), None, 822),
    ("mul", (1, 16, 16, 16), (1, 16, 1, 1), None, 823),
    ("mul", (1, 1, 1, 37), (2, 3, 5, 1), None, 824),
    ("add", (3, 40), (3, 40), "clip", 825),
    ("mul", (1, 20, 2, 35), (1, 20, 1, 1), None, 827),
]
"""Int8 Add, Sub and Mul (op, shapes, fused activation, seed): either operand broadcast, rows
shorter and longer than a vector, a squeeze-and-excitation block's channel scale."""


@needs_vbmi
@pytest.mark.parametrize("op,a_shape,b_shape,activation,seed", BINARY_CASES)
def test_add_sub_and_mul_on_avx512_match_the_int8_reference(op, a_shape, b_shape, activation, seed, monkeypatch):
    """Every case on x86-avx512: the ops with a float form are not left to the vector unit here."""
    monkeypatch.setattr(x86_selection, "has_float_form", lambda op, fused: False)
    case = binary_case(op, a_shape, b_shape, seed, activation)
    glowll, outputs = fast_and_generic(case)
    assert 'microkernel = #glowll.microkernel<"x86-avx512">' in glowll
    for actual in outputs:
        np.testing.assert_array_equal(actual, case.expected)


@needs_vbmi
@pytest.mark.parametrize("op,a_shape,b_shape,activation,seed", BINARY_CASES)
def test_add_sub_and_mul_of_a_float_form_are_left_to_the_vector_unit(op, a_shape, b_shape, activation, seed):
    """On a VNNI host an op with a proved float form (`select_kernels.has_float_form`) takes
    vector-elementwise-int8 and its form (or AVX2's int16 gate products, proved first), the
    others x86-avx512: bit for bit either way."""
    case = binary_case(op, a_shape, b_shape, seed, activation)
    glowll, outputs = fast_and_generic(case)
    form = re.search(r"(float_step|float_add|float_gate|int16_gate) = ", glowll)
    kernel = "vector-elementwise-int8" if form else "x86-avx512"
    assert f'microkernel = #glowll.microkernel<"{kernel}"' in glowll
    for actual in outputs:
        np.testing.assert_array_equal(actual, case.expected)


@needs_vbmi
def test_equal_shaped_layers_share_a_kernel_unless_their_float_steps_differ():
    """Equal-shaped depthwise layers with a record share one kernel
    (`glowll-quantization-records{partnered}`; lit quantization_records_partnered.mlir). Layers
    with proved float output steps (faster than a record's run-time step) get no record: two
    per-tensor ones, one whose levels less its zero point leave int8 and one of zero point 0,
    each keep their compiled numbers and float step, two per-channel ones their float step
    tables (`float_step_table`): two kernels each time. All outputs are the reference's."""
    geometry = GEOMETRIES["3x3_pad1_ds_cnn"]
    for per_channel, kernels in ((True, 2), (False, 2)):
        cases = [convolution_case(903, geometry, per_channel, suffix="_a"),
                 convolution_case(1006, geometry, per_channel, suffix="_b")]
        bundle = build("".join(case.body for case in cases),
                       {k: v for case in cases for k, v in case.constants.items()})
        outputs = bundle.run({name: value for case in cases for name, value in case.inputs.items()})
        for case in cases:
            all_match_the_reference([outputs[case.output]], case)
        glowll = bundle.ir["glowll"]
        assert glowll.count(KERNEL) == 2 and glowll.count("float_step_table") == 2 * per_channel
        assert glowll.count("float_step =") == 2 * (not per_channel) and "parameters" not in glowll
        assert len(re.findall(r'glowll.weight "w_\w"[^\n]*memref<64x1x3x3x', glowll)) == 2
        assert len([name for name in function_ranges(bundle.object_code) if name.endswith("_convolution")]) == kernels


@needs_vbmi
@pytest.mark.parametrize("name", ["3x3_pad1_ds_cnn", "5x5_stride2_odd", "5x5_pad2_small", "3x3_stride_2_1_ppocr",
                                  "5x5_unpadded", "3x3_column_stride_2", "5x5_three_rows_ppocr",
                                  "5x5_two_rows_ppocr", "5x5_stride_2_1_three_rows", "5x5_two_rows_of_96",
                                  "3x3_four_rows_of_32"])
def test_a_fused_table_is_looked_up_four_vectors_at_once(name):
    """A random int8 table after the convolution fuses into it (`glowll-fuse-lookup-tables`) and
    is looked up by `vpermi2b` on up to four vectors of consecutive outputs joined (groups of
    4, 3, 2 and 1 vectors: 125 outputs a plane, 30, 16; rows of 96, 46 and 35, in each form;
    in the short form, rows of whole vectors joined across rows: 2 x 96, 4 x 32;
    four vectors by the packs and one `vpermd`, `saturating_packs.ordered_bytes`), under a relu,
    a clip or no activation: the outputs are the table's entries of the reference's levels,
    bit for bit, and the generic kernel's."""
    index = list(ALL).index(name)
    activation = ("relu", "clip", None)[index % 3]
    table_case = with_lookup_table(convolution_case(970 + index, ALL[name], activation=activation), 971)
    glowll, outputs = fast_and_generic(table_case)
    assert re.search(r'glowll\.convolution [^\n]* lookup %[^\n]*' + re.escape(KERNEL), glowll)
    all_match_the_reference(outputs, table_case)
