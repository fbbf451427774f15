"""The int8 depthwise convolution on a host's vector unit (`vector-depthwise-int8`:
`glowll-select-vector-columns`, `backends/host_vector/int8_depthwise.py`).

Depthwise convolutions of random levels, weights with and without a zero point, per tensor
and per channel, 3x3 and 5x5, strides 1 and 2, padding (uneven too), rows narrower than a
vector and wider than a tile, dilation, fused relu and clip, PP-OCR's stride (2, 1), planes
of one and two rows (tiles of up to 8 vectors of a row): each must take the kernel on the
host (AVX-512 with `-mattr=-avx512vbmi`, and AVX2 with `-mattr=-avx512f`) and give, bit for
bit, the independent int8 reference's outputs (tests/support/int8_reference.py) and the
generic int8 kernel's (the same build for a target without AVX: SSE only).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from glowmlir.target import HOST
from glowmlir.targets import resolve_target
from tests.unit.test_quantized_kernels import build, convolution_case
from tests.unit.test_x86_vnni import all_match_the_reference

needs_avx = pytest.mark.skipif(HOST.vector_tile is None or not HOST.vector_tile.masked_loads,
                               reason="the host has no AVX")

GEOMETRIES = {
    # name: (input shape, filter shape, strides, pads (t, l, b, r), dilations, group)
    "3x3_pad1_ds_cnn": ((1, 64, 25, 5), (64, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 64),
    "3x3_stride2": ((1, 16, 32, 32), (16, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 16),
    "5x5_stride2_odd": ((2, 24, 9, 11), (24, 1, 5, 5), (2, 2), (2, 2, 2, 2), (1, 1), 24),
    "5x5_pad2_small": ((1, 40, 4, 4), (40, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 40),
    "3x3_wide_rows": ((1, 5, 13, 37), (5, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 5),
    "3x3_unpadded": ((1, 7, 10, 20), (7, 1, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 7),
    "uneven_pads_dilated": ((1, 6, 12, 19), (6, 1, 3, 2), (1, 2), (2, 0, 1, 3), (2, 1), 6),
    "same_5x5_of_8x8": ((2, 12, 8, 8), (12, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 12),
    "3x3_narrow_rows": ((1, 6, 12, 3), (6, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 6),
    "5x5_stride_2_1_ppocr": ((1, 11, 5, 40), (11, 1, 5, 5), (2, 1), (2, 2, 2, 2), (1, 1), 11),
    "5x5_two_rows_ppocr": ((1, 13, 2, 40), (13, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 13),
    "3x3_one_row": ((1, 9, 1, 45), (9, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 9),
}

TARGETS = {"host": "-avx512vbmi", "avx2": "-avx512f"}
"""AVX-512 without VBMI (with it, small planes take x86-vnni-depthwise: test_vnni_depthwise.py), and AVX2."""
GENERIC = "-avx512f,-avx"  # SSE only: no masked loads, no vector-depthwise-int8


PLANES = {16: ("3x3_pad1_ds_cnn", "3x3_narrow_rows"), 8: ("3x3_narrow_rows",)}
"""By the target's lanes, the geometries whose "same"-padded planes take vector-planes-int8:
3x3 filters at most, at most 8 vectors a plane and fewer than half its rows on the
depthwise tiles (25 x 5: 8 vectors of 16 lanes against 25 rows, but 16 of 8; 12 x 3: 3
vectors of 16 or 5 of 8 against 12 rows; the 5x5 filters, no)."""


def outputs(case, mattr: str | None, name: str) -> list[np.ndarray]:
    """The case's output from a build with the int8 depthwise kernel (checked to be taken) on
    the host's features less `mattr`, and from the generic int8 kernel's build."""
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=mattr) if mattr else None)
    target = resolve_target(mattr=mattr) if mattr else HOST
    kernel = "vector-planes-int8" if name in PLANES[target.vector_tile.lanes] else "vector-depthwise-int8"
    assert f'microkernel = #glowll.microkernel<"{kernel}">' in fast.ir["glowll"]
    generic = build(case.body, dict(case.constants), target=resolve_target(mattr=GENERIC))
    assert "-int8" not in generic.ir["glowll"]
    return [bundle.run(case.inputs)[case.output] for bundle in (fast, generic)]


def check(name: str, case, mattr: str | None) -> None:
    all_match_the_reference(outputs(case, mattr, name), case)


@needs_avx
@pytest.mark.parametrize("name", list(GEOMETRIES))
@pytest.mark.parametrize("per_channel", [False, True])
def test_depthwise_matches_the_int8_reference(name, per_channel):
    check(name, convolution_case(700 + list(GEOMETRIES).index(name) + 50 * per_channel, GEOMETRIES[name],
                                 per_channel), TARGETS["host"])


@needs_avx
@pytest.mark.parametrize("name,activation,target", [
    ("3x3_pad1_ds_cnn", "relu", "host"), ("5x5_stride2_odd", "clip", "host"), ("3x3_stride2", "relu", "avx2"),
    ("5x5_pad2_small", None, "avx2"), ("uneven_pads_dilated", "clip", "avx2"), ("same_5x5_of_8x8", "clip", "host"),
    ("3x3_pad1_ds_cnn", "relu", "avx2"), ("3x3_narrow_rows", "relu", "avx2"), ("3x3_narrow_rows", "clip", "host"),
])
def test_fused_activations_and_avx2_match_the_int8_reference(name, activation, target):
    check(name, convolution_case(800 + list(GEOMETRIES).index(name), GEOMETRIES[name], activation=activation),
          TARGETS[target])


@needs_avx
@pytest.mark.parametrize("name,target,stride", [("5x5_stride_2_1_ppocr", "avx2", (1, 1)),
                                                ("5x5_stride_2_1_ppocr", "avx2", (1, 2)),
                                                ("3x3_unpadded", "host", (1, 1))])
def test_edge_tiles_load_whole_vectors_of_the_row(name, target, stride):
    """Rows at least a vector wide: the edge tiles' taps that reach into the padding or past
    the row's end load a whole vector inside the row and shuffle it (AVX2 has no byte-masked
    load: LLVM would insert the bytes one by one); bit for bit the reference's outputs, the
    padding's lanes the input zero point (left and right padding, stride 1 and 2)."""
    x_shape, w_shape, _, pads, dilations, group = GEOMETRIES[name]
    case = convolution_case(900 + 10 * stride[1], (x_shape, w_shape, stride, pads, dilations, group), True, "relu")
    bundle = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS[target]), keep_llvm_ir=True)
    assert 'microkernel = #glowll.microkernel<"vector-depthwise-int8">' in bundle.ir["glowll"]
    assert "i8.p0" not in "".join(line for line in bundle.ir["llvm-ir"].splitlines() if "masked.load" in line)
    all_match_the_reference([bundle.run(case.inputs)[case.output]], case)


@needs_avx
def test_taps_of_a_row_come_from_one_window():
    """The int8 column kernel's AVX2 tiles of an ungrouped convolution of stride 1 along the
    rows: away from the row's edges each input row's taps are shuffled out of one window of
    16 levels, widened and centred once (`window_pairs`: a `<16 x i8>` load), the interior
    narrowed by the window (`window_taps`) so that it never reads past the row; bit for bit
    the reference's outputs (a last partial vector). The depthwise tiles of stride 1 along
    the rows take `WidenedRows` (test_widened_rows_match_the_int8_reference)."""
    case = convolution_case(950 + len("ungrouped_3x3"), ((1, 4, 4, 43), (6, 4, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
                            True, "relu")
    bundle = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]), keep_llvm_ir=True)
    assert 'microkernel = #glowll.microkernel<"vector-columns-int8">' in bundle.ir["glowll"]
    assert "load <16 x i8>" in bundle.ir["llvm-ir"]
    all_match_the_reference([bundle.run(case.inputs)[case.output]], case)


EDGE_CASES = [("relu", None, "int32"), (None, -128, "int32"), (None, 127, "int32"), ("clip", None, "int32"),
              (None, None, "large"), (None, None, "lowest")]
"""(activation, input zero point, bias kind) of the widened and paired rows' tests: relu, clip
and none, the input zero point at both ends of the int8 range, biases whose sums wrap int32."""


@needs_avx
@pytest.mark.parametrize("name,geometry", [
    ("3x3_s1_odd_width", ((1, 3, 6, 37), (3, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 3)),
    ("3x3_s2_1", ((1, 3, 9, 45), (3, 1, 3, 3), (2, 1), (1, 1, 1, 1), (1, 1), 3)),
    ("5x5_s1_3_rows", ((1, 3, 3, 41), (3, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 3)),
    ("5x5_s2_1_two_images", ((2, 3, 7, 50), (3, 1, 5, 5), (2, 1), (2, 2, 2, 2), (1, 1), 3)),
    ("5x5_s1_2_rows_top_pad_4", ((1, 2, 2, 71), (2, 1, 5, 5), (1, 1), (4, 2, 0, 2), (1, 1), 2)),
    ("3x3_unpadded_16", ((1, 2, 10, 16), (2, 1, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 2)),
    ("7x7_uneven_pads", ((1, 2, 6, 41), (2, 1, 7, 7), (1, 1), (3, 2, 3, 4), (1, 1), 2)),
    ("3x2_wider_output", ((1, 2, 5, 20), (2, 1, 3, 2), (1, 1), (1, 0, 1, 3), (1, 1), 2)),
    ("3x3_s1_two_images_top_pad_2", ((2, 3, 7, 35), (3, 1, 3, 3), (1, 1), (2, 1, 0, 1), (1, 1), 3)),
    ("5x5_s1_6_rows", ((1, 4, 6, 33), (4, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 4)),
])
@pytest.mark.parametrize("activation,input_offset,bias_kind", EDGE_CASES)
def test_widened_rows_match_the_int8_reference(name, geometry, activation, input_offset, bias_kind):
    """AVX2 depthwise convolutions of stride 1 along rows of at least 16 columns
    (`WidenedRows`): each input row sign-extended and centred once into the stack array
    (`<16 x i8>` to `<16 x i16>`), the even and odd outputs' taps plain `<16 x i16>` loads of
    it into `vpmaddwd`, no byte shuffle before them; bit for bit the reference's outputs
    (per channel; odd widths and a last partial chunk, padding on either side or none, an
    odd last kernel column, rows of stride 1 and 2, the input zero point at both ends of
    the int8 range, relu, clip and none, biases whose sums wrap int32: `large`, `lowest`;
    two images, each channel's rows widened while the one before is read; the widening's
    stores of whole chunks 32-byte aligned); of stride 1 on
    three rows or more an odd kernel's last column takes two kernel rows a `vpmaddwd`, its
    words a `<16 x i16>` shuffle of two loads (`column_pairs_of`)."""
    case = convolution_case(1200 + len(name), geometry, True, activation, input_offset=input_offset,
                            bias_kind=bias_kind)
    bundle = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]), keep_llvm_ir=True)
    assert 'microkernel = #glowll.microkernel<"vector-depthwise-int8">' in bundle.ir["glowll"]
    llvm_ir = bundle.ir["llvm-ir"]
    assert re.search(r"sext <16 x i8> %[\w.]+ to <16 x i16>", llvm_ir)
    assert re.search(r"store <16 x i16> %[\w.]+, ptr %[\w.]+, align (32|64)\b", llvm_ir)  # widened rows, aligned
    loaded = set(re.findall(r"(%[\w.]+) = load <16 x i16>", llvm_ir))
    column_pairs = {pairs for pairs, upper, lower in re.findall(
        r"(%[\w.]+) = shufflevector <16 x i16> (%[\w.]+), <16 x i16> (%[\w.]+), <16 x i32> <i32 0, i32 17,",
        llvm_ir) if {upper, lower} & loaded}  # a lone last column's two kernel rows (`column_pairs_of`)
    multiplied = re.findall(r"pmadd\.wd\(<16 x i16> (%[\w.]+), <16 x i16> (%[\w.]+)\)", llvm_ir)
    assert multiplied and all(set(operands) & (loaded | column_pairs) for operands in multiplied)
    (_, _, in_h, _), (_, _, _, k_w), (sy, _) = geometry[:3]
    assert bool(column_pairs) == (k_w % 2 == 1 and in_h > 2 and sy == 1)  # an odd kernel on 3 rows, stride 1
    assert "xor <32 x i8>" not in llvm_ir  # no flipped window
    all_match_the_reference([bundle.run(case.inputs)[case.output]], case)


@needs_avx
@pytest.mark.parametrize("name,geometry", [
    ("3x3_s2_1", ((1, 5, 9, 45), (5, 1, 3, 3), (2, 1), (1, 1, 1, 1), (1, 1), 5)),
    ("3x3_s1_6_rows", ((1, 4, 6, 40), (4, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 4)),
    ("5x5_s1_2_rows", ((1, 6, 2, 48), (6, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 6)),
    ("5x5_s1_3_rows_odd_width", ((1, 3, 3, 41), (3, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 3)),
    ("3x3_s1_33_rows", ((1, 2, 33, 40), (2, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2)),  # one array of rows
])
@pytest.mark.parametrize("activation", ["relu", None, "clip"])
def test_widened_rows_per_tensor_match_the_int8_reference(name, geometry, activation):
    """`WidenedRows` per tensor (the float output step where proved; under a relu one offset,
    no blend), each accumulator held in a register after each product (`in_register`): bit
    for bit the reference's outputs, random levels and weights."""
    for seed in range(2):
        case = convolution_case(1300 + 10 * len(name) + seed, geometry, False, activation)
        bundle = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]))
        assert 'microkernel = #glowll.microkernel<"vector-depthwise-int8">' in bundle.ir["glowll"]
        all_match_the_reference([bundle.run(case.inputs)[case.output]], case)


@needs_avx
@pytest.mark.parametrize("name,geometry", [
    ("5x5_s1", ((1, 2, 2, 71), (2, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 2)),
    ("3x3_s1_16", ((1, 3, 2, 16), (3, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 3)),
    ("5x5_s2_1_two_images", ((2, 3, 2, 50), (3, 1, 5, 5), (2, 1), (2, 2, 2, 2), (1, 1), 3)),
    ("7x7_uneven_pads", ((1, 2, 2, 43), (2, 1, 7, 7), (1, 1), (3, 2, 2, 4), (1, 1), 2)),
    ("3x1_wider_output", ((1, 2, 2, 20), (2, 1, 3, 1), (1, 1), (1, 0, 1, 3), (1, 1), 2)),
])
@pytest.mark.parametrize("activation,input_offset,bias_kind", EDGE_CASES)
def test_paired_rows_match_the_int8_reference(name, geometry, activation, input_offset, bias_kind):
    """AVX2 depthwise convolutions of stride 1 along rows of at least 16 columns on two input
    rows that every output row reads both of (`PairedRows`): the rows' 8 levels interleaved
    (`<16 x i8>`) and widened once into int32 words of a column's pair of rows, each tap's
    words into `vpmaddwd` (loads of the stack array, which LLVM keeps in registers when
    narrow); bit for bit the reference's outputs (per
    channel; odd widths and a last partial vector, 1, 2 and 4 vectors a tile, padding on
    either side or none, 3 to 7 kernel columns, rows of stride 1 and 2, two images, the
    input zero point at both ends of the int8 range, relu, clip and none, biases whose sums
    wrap int32; the widening's stores 32-byte aligned where the array stays in memory)."""
    case = convolution_case(1400 + len(name), geometry, True, activation, input_offset=input_offset,
                            bias_kind=bias_kind)
    bundle = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]), keep_llvm_ir=True)
    assert 'microkernel = #glowll.microkernel<"vector-depthwise-int8">' in bundle.ir["glowll"]
    llvm_ir = bundle.ir["llvm-ir"]
    assert re.search(r"shufflevector <8 x i8> %[\w.]+, <8 x i8> %[\w.]+, <16 x i32> <i32 0, i32 8, i32 1, i32 9,",
                     llvm_ir)  # the two rows' levels interleaved
    assert re.search(r"sext <16 x i8> %[\w.]+ to <16 x i16>", llvm_ir)
    assert "load <16 x i8>" not in llvm_ir  # not `WidenedRows`' rows
    if ".sroa." not in llvm_ir:  # the words' array kept in memory (narrow rows: LLVM splits it into registers)
        assert re.search(r"store <16 x i16> %[\w.]+, ptr %[\w.]+, align (32|64)\b", llvm_ir)  # the widening aligned
    assert "pmadd.wd(<16 x i16>" in llvm_ir
    all_match_the_reference([bundle.run(case.inputs)[case.output]], case)


@needs_avx
@pytest.mark.parametrize("name,geometry", [
    ("3x3_s2_1_pad_rows_odd_width", ((1, 3, 9, 37), (3, 1, 3, 3), (2, 1), (1, 1, 1, 1), (1, 1), 3)),
    ("3x3_s1_two_images", ((2, 3, 6, 35), (3, 1, 3, 3), (1, 1), (2, 1, 0, 1), (1, 1), 3)),
    ("5x5_s1_2_rows_paired", ((1, 4, 2, 43), (4, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 4)),
    ("5x5_s2_1_two_images", ((2, 3, 3, 41), (3, 1, 5, 5), (2, 1), (2, 2, 2, 2), (1, 1), 3)),
    ("3x3_narrow_rows_taps", ((1, 5, 7, 11), (5, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 5)),
])
def test_bias_in_step_matches_the_int8_reference(name, geometry):
    """Per tensor under a relu with FMA (AVX2), the bias in the fused step's single
    (`select_int8_pointwise.fuse_bias_into_step`, `bias_in_step`): every tile's sums start at
    0 (`HostInt8Columns.start`: `WidenedRows`, `PairedRows` and the paired taps of narrow
    rows), its step reads the channel's single; bit for bit the reference's outputs, random
    levels and weights."""
    case = convolution_case(1500 + len(name), geometry, False, "relu")
    bundle = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]))
    assert 'microkernel = #glowll.microkernel<"vector-depthwise-int8">' in bundle.ir["glowll"]
    assert "bias_in_step" in bundle.ir["glowll"]
    all_match_the_reference([bundle.run(case.inputs)[case.output]], case)


@needs_avx
@pytest.mark.parametrize("activation,bias_kind", [(None, "int32"), ("relu", "large")])
def test_bias_in_step_refused_keeps_the_bias(activation, bias_kind):
    """Without a relu (no one single for both signs), or with a bias beyond `FUSED_EXACT`
    (`large`), the layer keeps its bias: no `bias_in_step`, the reference's outputs."""
    geometry = ((1, 3, 9, 37), (3, 1, 3, 3), (2, 1), (1, 1, 1, 1), (1, 1), 3)
    case = convolution_case(1550, geometry, False, activation, bias_kind=bias_kind)
    bundle = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]))
    assert "float_step" in bundle.ir["glowll"] and "bias_in_step" not in bundle.ir["glowll"]
    all_match_the_reference([bundle.run(case.inputs)[case.output]], case)
