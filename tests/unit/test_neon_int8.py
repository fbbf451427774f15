"""The host's int8 tiles on AArch64 NEON (`{products = "neon"}`: each pair product `smull`,
`smull2` and `addp`, `int8_depthwise.pair_sums`), compiled for the `aarch64` board
(Cortex-A53) and run under qemu-aarch64: the depthwise tiles (`vector-depthwise-int8`, stride
1's taps shuffled out of one window of the row, held in a SIMD register: `in_register`'s "w"
constraint; `WidenedRows` takes AVX2's 8 lanes only), the 1x1s (`vector-pointwise-int8`), the stems
(`vector-im2col-int8`) and the other ungrouped convolutions (`vector-columns-int8`) of the
x86 kernels' test geometries, random levels and weights (with and without a zero point), per
tensor and per channel, relu and clip: every layer must take its kernel with the NEON
products and give, bit for bit, the independent int8 reference's outputs
(tests/support/int8_reference.py). Each group is one net, built and run once. The 1x1s of
8 pixels or more take int8 products (`{products = "neon-bytes"}`, `int8_byte_products`),
also tested at their limits (`BYTE_LAYERS`)."""

from __future__ import annotations

import dataclasses
import itertools
import re

import numpy as np
import pytest

from glowmlir.backends.host_vector.int8_byte_depthwise import int16_taps, takes_byte_depthwise, wide_taps
from glowmlir.backends.host_vector.int8_byte_products import byte_pair_words, byte_products_fit
from glowmlir.backends.host_vector.int8_im2col import takes_im2col
from tests.unit import test_fold_input_quantize, test_int8_depthwise, test_int8_im2col, test_int8_pointwise
from tests.unit.test_code_size import run_cases
from tests.unit.test_quantized_kernels import convolution_case, with_lookup_table

BOARD = "aarch64"
ACTIVATIONS = (None, "relu", "clip")


def geometries(group: str) -> list:
    """The group's layers: (input shape, filter shape, strides, pads, dilations, group)."""
    if group == "depthwise":
        return list(test_int8_depthwise.GEOMETRIES.values())
    if group == "pointwise":
        return [(shape, (out_c, shape[1], 1, 1), *test_int8_pointwise.ONE_BY_ONE)
                for shape, out_c in test_int8_pointwise.GEOMETRIES.values()]
    return [*test_int8_im2col.GEOMETRIES.values(), *test_int8_pointwise.COLUMNS.values()]


def kernel_of(geometry) -> str:
    """The x86 tests' kernel of a layer (AVX2's choice), which NEON takes too."""
    filter_shape, group = geometry[1], geometry[5]
    if group > 1:
        return "vector-depthwise-int8"
    if filter_shape[2:] == (1, 1) and geometry[2] == (1, 1) and geometry[3] == (0, 0, 0, 0):
        pixels = geometry[0][2] * geometry[0][3]
        return None if pixels < 4 else "vector-pointwise-int8"  # one pixel: the generic kernel
    return "vector-im2col-int8" if takes_im2col(filter_shape, group) else "vector-columns-int8"


GROUPS = ("depthwise", "pointwise", "im2col and columns")


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("group", GROUPS)
def test_neon_int8_tiles_match_the_int8_reference(group, per_channel):
    layers = geometries(group)
    seed = 2000 + 100 * GROUPS.index(group) + 50 * per_channel
    cases = [convolution_case(seed + k, geometry, per_channel, ACTIVATIONS[k % 3], suffix=f"_{k}")
             for k, geometry in enumerate(layers)]
    bundle = run_cases(cases, BOARD)
    convolutions = [line for line in bundle.ir["glowll"].splitlines() if "glowll.convolution" in line]
    taken = [kernel_and_products(line) for line in convolutions]  # the layers in the net's order
    assert [kernel and kernel[0] for kernel in taken] == [kernel_of(geometry) for geometry in layers]
    if group == "pointwise":  # random levels: every 1x1 of a vector of 8 pixels or more on int8 products
        assert [kernel and kernel[1] for kernel in taken] == [
            kernel and ("neon-bytes" if geometry[0][2] * geometry[0][3] >= 8 else "neon")
            for kernel, geometry in zip(taken, layers)]
    if group == "im2col and columns":  # random levels: every im2col layer (rows of 8 or more) on its im2col bytes
        assert [kernel[1] for kernel in taken if kernel[0] == "vector-im2col-int8"] == \
            ["neon-bytes"] * sum(kernel[0] == "vector-im2col-int8" for kernel in taken)
    if group == "depthwise" and per_channel:  # int8 weights: int8 products where the pads are narrower than the kernel
        assert [kernel[1] for kernel in taken] == [
            "neon-bytes" if max(pads[0], pads[2]) < w[2] and max(pads[1], pads[3]) < w[3] else "neon"
            for _, w, _, pads, _, _ in layers]


@pytest.mark.parametrize("group", GROUPS)
def test_neon_int8_tiles_apply_a_fused_table_in_their_output_step(group):
    """Each layer of the group followed by a random int8 table (`with_lookup_table`) takes the
    table into its kernel (`glowll-fuse-lookup-tables`: NEON's int8 kernels apply tables,
    `table_lookup.neon_applies_tables`), which looks it up 16 levels at a time from the
    table's four quarters (`table_lookup.NeonTable`, `tbl`/`tbx`): no stand-alone lookup is
    left, and every output is the table's entry of the reference's level, bit for bit, under a
    relu, a clip or no activation, per tensor and per channel (alternately)."""
    layers = geometries(group)
    seed = 2600 + 100 * GROUPS.index(group)
    cases = [with_lookup_table(convolution_case(seed + k, geometry, k % 2 == 1, ACTIVATIONS[k % 3],
                                                suffix=f"_{k}"), seed + 50 + k)
             for k, geometry in enumerate(layers) if kernel_of(geometry) is not None]
    bundle = run_cases(cases, BOARD)
    glowll = bundle.ir["glowll"]
    fused = re.findall(r'glowll\.convolution [^\n]* lookup %[^\n]*microkernel = '
                       r'#glowll\.microkernel<"vector-[a-z0-9-]+", \{products = "neon', glowll)
    assert len(fused) == len(cases) and "glowll.int_lookup_table" not in glowll


def kernel_and_products(line: str) -> tuple[str, str] | None:
    """A convolution's microkernel and its NEON products ("neon", "neon-bytes"), or None."""
    found = re.search(r'microkernel = #glowll\.microkernel<"([a-z0-9-]+)", \{products = "(neon(?:-bytes)?)"[,}]', line)
    return found and found.groups()


def test_byte_products_fit_where_every_pair_of_products_stays_in_int16():
    """`byte_products_fit` against every corner of the lanes' inputs: an int16 lane sums
    x[c] w[c] + x[c + 2] w[c + 2] of levels in [-128, 127], extreme at x = -128 or 127."""
    rng = np.random.default_rng(5)
    corners = np.array([(a, b) for a in (-128, 127) for b in (-128, 127)])
    for _ in range(300):
        levels = rng.integers(-128, 128, (3, int(rng.integers(1, 11))))
        levels[rng.random(levels.shape) < 0.3] = -128
        padded = np.zeros((3, -(-levels.shape[1] // 4) * 4), np.int64)
        padded[:, :levels.shape[1]] = levels
        lanes = padded.reshape(3, -1, 2, 2).transpose(0, 1, 3, 2).reshape(-1, 2)  # (w[c], w[c + 2]) of each lane
        sums = lanes @ corners.T
        assert byte_products_fit(levels) == bool(sums.max() <= 32767 and sums.min() >= -32768)


def test_byte_pair_words_hold_each_pair_in_every_half_word():
    levels = np.array([[1, -2, -128, 127, 7], [-1, 0, 3, 4, -5]])
    words = byte_pair_words(levels, 2)
    assert words.shape == (1, 3, 1, 1, 2) and words.dtype == np.int32
    as_bytes = words[0, :, 0, 0, :].T.copy().view(np.int8).reshape(2, 3, 4)
    np.testing.assert_array_equal(as_bytes[:, :, :2], as_bytes[:, :, 2:])
    np.testing.assert_array_equal(as_bytes[:, :, 0], levels[:, 0::2])
    np.testing.assert_array_equal(as_bytes[:, :2, 1], levels[:, 1::2])
    np.testing.assert_array_equal(as_bytes[:, 2, 1], [0, 0])


def at_the_int16_bound(x, w, w_offsets):
    """Every int16 lane at its largest sum: w[c] = -128, w[c + 2] = -127, x = -128 in the even
    pixels (32,640), w[c + 1] = 127, w[c + 3] = 127, x = 127 in the odd ones."""
    w[:, 0::4], w[:, 2::4], w[:, 1::4], w[:, 3::4] = -128, -127, 127, 127
    x[..., 0::2], x[..., 1::2] = -128, 127


def a_pair_of_lowest_weights(x, w, w_offsets):
    """One lane of output channel 0 two weights of -128 (x[c] w[c] + x[c + 2] w[c + 2] would
    reach 32,768 at x = -128)."""
    w[0, 0], w[0, 2] = -128, -128
    x[:, 0:3:2] = -128


BYTE_LAYERS = {
    # name: (input shape, output channels, per channel, edit, the products taken)
    "at_the_int16_bound_13_to_10_on_3x11": ((1, 13, 3, 11), 10, False, at_the_int16_bound, "neon-bytes"),
    "at_the_int16_bound_per_channel": ((1, 8, 2, 12), 16, True, at_the_int16_bound, "neon-bytes"),
    "a_pair_of_lowest_weights": ((1, 12, 2, 9), 16, False, a_pair_of_lowest_weights, "neon"),
    "300_channels_and_a_weight_zero_point": ((1, 300, 1, 9), 8, False, None, "neon"),
    "300_channels_per_channel": ((1, 300, 1, 9), 8, True, None, "neon-bytes"),
    "255_to_8_one_block_a_zero_point": ((1, 255, 2, 10), 8, False, None, "neon-bytes"),
    "odd_25_to_24_prepared_runs_a_zero_point": ((2, 25, 3, 7), 24, False, None, "neon-bytes"),
}
"""1x1s at the int8 products' limits (`int8_byte_products`): the largest int16 lanes (even and
odd pixels, an odd channel count, a partial vector), a filter with a lane that could leave
int16 and more channels than the column sums take (both on the int16 products), per-channel
weights (no column sums), 255 channels with a weight zero point (the column sums' largest
count on one block, summed in the tiles), and several blocks of a prepared input (the column
sums made once a run; two images)."""


def test_int8_products_match_the_int8_reference_at_their_limits():
    cases = [convolution_case(2400 + k, (shape, (out_c, shape[1], 1, 1), *test_int8_pointwise.ONE_BY_ONE),
                              per_channel, ACTIVATIONS[k % 3], suffix=f"_{k}", edit=edit)
             for k, (shape, out_c, per_channel, edit, _) in enumerate(BYTE_LAYERS.values())]
    bundle = run_cases(cases, BOARD)
    convolutions = [line for line in bundle.ir["glowll"].splitlines() if "glowll.convolution" in line]
    assert [kernel_and_products(line) for line in convolutions] == [
        ("vector-pointwise-int8", layer[4]) for layer in BYTE_LAYERS.values()]
    filters = [line.split(" : ")[-1].split("memref<")[3] for line in convolutions]  # each packed filter's type
    offsets = [re.search(r"uniform<i32:f32, [^:>]*:(-?\d+)>", f) for f in filters]  # per tensor: its zero point
    bytes_layers = [layer[4] == "neon-bytes" for layer in BYTE_LAYERS.values()]
    assert [bool(found) and int(found.group(1)) != 0 for found, on_bytes in zip(offsets, bytes_layers) if on_bytes] \
        == [not layer[2] for layer in BYTE_LAYERS.values() if layer[4] == "neon-bytes"]  # levels as they are


def test_int8_tiles_round_by_one_conversion_and_multiply_bytes(tmp_path):
    """The code of a NEON 1x1 on int8 products and of a depthwise tile: their products
    `smull`/`smlal` of bytes into int16 lanes added by `sadalp` (the 1x1), and every output
    step's rounding one `fcvtns` (`neon_nearest_levels`), no `frintx` + `fcvtzs`."""
    from glowmlir.runtime.boards import target_for
    from glowmlir.runtime.multiplies import disassemble
    from tests.unit.test_quantized_kernels import build

    pointwise = convolution_case(2500, ((1, 16, 3, 16), (8, 16, 1, 1), *test_int8_pointwise.ONE_BY_ONE),
                                 activation="relu", suffix="_p")
    depthwise = convolution_case(2501, test_int8_depthwise.GEOMETRIES["3x3_pad1_ds_cnn"], suffix="_d")
    mnemonics = {}
    for name, case in (("pointwise", pointwise), ("depthwise", depthwise)):
        program = tmp_path / f"{name}.o"
        program.write_bytes(build(case.body, dict(case.constants), target=target_for(BOARD)).object_code)
        mnemonics[name] = set(re.findall(r"^\s*[0-9a-f]+:\t[0-9a-f ]+\t(\S+)", disassemble(
            str(program), "aarch64-linux-gnu-objdump"), re.MULTILINE))
    assert {"smull", "smlal", "sadalp", "fcvtns"} <= mnemonics["pointwise"]
    assert "fcvtns" in mnemonics["depthwise"]
    assert not (mnemonics["pointwise"] | mnemonics["depthwise"]) & {"frintx", "fcvtzs"}


def rows_at_the_int16_bound(x, w, w_offsets):
    """Every kernel row (-128, -127, 0, ...) and every input level -128: each run of the three
    columns int16 sums, 32,640, the most `int16_taps` allows (its run is the whole row)."""
    w[...] = 0
    w[..., 0], w[..., 1] = -128, -127
    x[...] = -128


def clipped_around_the_zero_point(x, w, w_offsets):
    """Per tensor, weights within 127 of their zero point: int8 less it (`takes_byte_depthwise`)."""
    np.clip(w, int(w_offsets[0]) - 128, int(w_offsets[0]) + 127, out=w)


def wide_taps_at_the_extremes(x, w, w_offsets):
    """Per tensor, weights within 127 of their zero point but at three kernel positions
    (`wide_taps`): channel 0's (1, 2) and the last channel's (0, 0) the level farthest from it
    (128 + |z_w| away), channel 1's (1, 2) the other end; channel 0's input all -128 (its wide
    products 128 (128 + |z_w|)), on a 5x5 its (1, 3) 127 from the zero point on the wide weight's side and
    channel 2's (3, 4) far too."""
    zero = int(w_offsets[0])
    np.clip(w, zero - 127, zero + 127, out=w)
    far, near = (-128, 127) if zero > 0 else (127, -128)
    w[0, 0, 1, 2], w[-1, 0, 0, 0], w[1, 0, 1, 2] = far, far, near
    if w.shape[2] > 3:
        w[0, 0, 1, 3] = zero + (127 if far > 0 else -127)  # the run's other tap (of 2): past int16 if summed with it
        w[2, 0, 3, 4] = far
    x[:, 0] = -128


BYTE_DEPTHWISE = {
    # name: (seed, geometry, per channel, edit, int16 taps: None where the layer keeps the int16 pairs)
    "rows_at_the_int16_bound": (2500, ((1, 6, 7, 19), (6, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 6), True,
                                rows_at_the_int16_bound, 3),
    "5x5_s21_per_channel": (2501, ((1, 11, 5, 40), (11, 1, 5, 5), (2, 1), (2, 2, 2, 2), (1, 1), 11), True, None, 2),
    "5x5_two_rows_a_zero_point": (2517, ((1, 13, 2, 40), (13, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 13), False,
                                  clipped_around_the_zero_point, 2),  # z_w -20, z_x 22
    "3x3_uneven_pads_per_channel": (2503, ((2, 5, 9, 21), (5, 1, 3, 3), (1, 1), (0, 2, 2, 1), (1, 1), 5), True, None,
                                    2),
    "pads_as_wide_as_the_kernel": (2504, ((1, 4, 6, 17), (4, 1, 3, 2), (1, 1), (1, 2, 1, 1), (1, 1), 4), True, None,
                                   None),
    "5x5_rows_of_9_per_channel": (2518, ((1, 3, 4, 9), (3, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 3), True, None,
                                  2),
    "3x3_rows_of_8": (2519, ((1, 4, 3, 8), (4, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 4), True, None, 2),
    "5x5_rows_of_7": (2520, ((1, 2, 3, 7), (2, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 2), False,
                      clipped_around_the_zero_point, 2),
    "3x3_s21_wide_taps_a_zero_point": (2515, ((1, 7, 6, 23), (7, 1, 3, 3), (2, 1), (1, 1, 1, 1), (1, 1), 7), False,
                                       wide_taps_at_the_extremes, 2),  # z_w 19
    "5x5_wide_taps_a_negative_zero_point": (2513, ((1, 9, 3, 30), (9, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 9),
                                            False, wide_taps_at_the_extremes, 2),  # z_w -14
}
"""Depthwise layers on NEON's int8 products (`int8_byte_depthwise`): runs of kernel columns at
the int16 lanes' bound, a 5x5 of stride (2, 1) and a "same" 5x5 on two rows (every output row
a row edge), a per-tensor filter with a zero point (its levels less it int8), uneven pads and
two images; pads as wide as the kernel keep the int16 pairs; rows of 9 and 8 pixels (each
edge vector a whole vector inside the row and an `ext`, `load_edge_vector`) and of 7 (lane by
lane); per-tensor filters whose levels
less their zero point leave int8 at two or three kernel positions (`wide_taps`: the filter
int16), their wide products at their largest."""


def test_depthwise_int8_products_match_the_int8_reference_at_their_limits():
    cases = [convolution_case(seed, geometry, per_channel, ACTIVATIONS[k % 3], suffix=f"_{k}", edit=edit)
             for k, (seed, geometry, per_channel, edit, _) in enumerate(BYTE_DEPTHWISE.values())]
    bundle = run_cases(cases, BOARD)
    convolutions = [line for line in bundle.ir["glowll"].splitlines() if "glowll.convolution" in line]
    parameters = r'products = "([a-z-]+)"(?:, int16_taps = (\d+) : i64)?(?:, wide_taps = array<i64: ([0-9, ]+)>)?'
    taken = [re.search(parameters, line).groups() for line in convolutions]
    wide = {"3x3_s21_wide_taps_a_zero_point": "0, 5", "5x5_wide_taps_a_negative_zero_point": "0, 7, 19"}
    assert taken == [("neon", None, None) if taps is None else ("neon-bytes", str(taps), wide.get(name))
                     for name, (*_, taps) in BYTE_DEPTHWISE.items()]
    filters = [line.split(" : ")[-1].split("memref<")[3] for line in convolutions]  # each packed filter's type
    on_bytes = [layer[4] is not None for layer in BYTE_DEPTHWISE.values()]
    assert [bool(re.search(r"x!quant\.uniform<i16:", f)) for f, byte in zip(filters, on_bytes) if byte] \
        == [name in wide for name, byte in zip(BYTE_DEPTHWISE, on_bytes) if byte]  # int16 with wide taps


@pytest.mark.parametrize("seed", range(4))
def test_int16_taps_keep_every_corner_of_their_runs_in_int16(seed):
    """`int16_taps` against every corner of its runs' inputs (x in {-128, 127} at each tap):
    the runs of the taps it gives stay in int16, and those of every larger count leave it
    somewhere."""
    rng = np.random.default_rng(seed)
    levels = rng.integers(-128, 128, (6, 3, 5)) // rng.integers(1, 16, (6, 3, 1))
    taps = int16_taps(levels)

    def fits(count: int) -> bool:
        for first in range(0, 5, count):
            run = levels[..., first:first + count]
            corners = np.array(list(itertools.product((-128, 127), repeat=run.shape[-1])))
            sums = np.einsum("crk,nk->crn", run, corners)
            if sums.max() > 32767 or sums.min() < -32768:
                return False
        return True
    assert 1 <= taps <= 5 and fits(taps) and not any(fits(count) for count in range(taps + 1, 6))


def test_wide_taps_are_the_kernel_positions_that_leave_int8_and_few_enough_to_take():
    """`wide_taps`: the positions where some channel's level less its zero point leaves int8;
    `int16_taps` leaves them out (each is summed alone); `takes_byte_depthwise` takes at most
    `MOST_WIDE_TAPS` of the kernel's positions wide."""
    rng = np.random.default_rng(5)
    levels = rng.integers(-60, 61, (4, 3, 3))
    levels[2, 1, 2], levels[0, 0, 0] = 200, -255
    assert wide_taps(levels) == [0, 5]
    assert int16_taps(levels) == 3  # channel 2's row 1 with its 200 summed would reach 128 x 320 > 32,767
    assert takes_byte_depthwise(levels, (1, 1, 1, 1), (3, 3))  # 2 of 9 positions
    levels[1, 2, 2] = 130
    assert wide_taps(levels) == [0, 5, 8] and not takes_byte_depthwise(levels, (1, 1, 1, 1), (3, 3))  # 3 of 9
    assert not takes_byte_depthwise(levels[:, :2, :2] * 0 + 128, (0, 0, 0, 0), (2, 2))


def test_stems_on_im2col_bytes_with_their_input_quantize_folded_match_the_reference():
    """The stems of `test_fold_input_quantize` (float inputs, the quantize folded into the stem:
    `QuantizedRows`) on NEON, over their im2col bytes (`int8_im2col.RowBytes`, `{products =
    "neon-bytes"}`): odd widths, two images, 16 channels, stride 1, unpadded."""
    cases = []
    for k, geometry in enumerate(test_fold_input_quantize.GEOMETRIES.values()):
        case, _ = test_fold_input_quantize.quantized_input_case(2600 + k, geometry)
        cases.append(dataclasses.replace(case, body=re.sub(r'([%"])([a-z])\b', rf"\g<1>\g<2>_{k}", case.body),
                                         inputs={f"{name}_{k}": value for name, value in case.inputs.items()},
                                         constants={f"{name}_{k}": value for name, value in case.constants.items()},
                                         output=f"{case.output}_{k}"))
    bundle = run_cases(cases, BOARD)
    convolutions = [line for line in bundle.ir["glowll"].splitlines() if "glowll.convolution" in line]
    assert len(convolutions) == len(cases)
    assert all('products = "neon-bytes"' in line and "quantized_input = " in line for line in convolutions)
