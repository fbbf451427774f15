"""The host's int8 tiles on AArch64 NEON (`{products = "neon"}`: each pair product `smull`,
`smull2` and `addp`, `int8_depthwise.pair_sums`), compiled for the `aarch64` board
(Cortex-A53) and run under qemu-aarch64: the depthwise tiles (`vector-depthwise-int8`, stride
1's taps shuffled out of one window of the row, held in a SIMD register: `in_register`'s "w"
constraint; `WidenedRows` takes AVX2's 8 lanes only), the 1x1s (`vector-pointwise-int8`), the stems
(`vector-im2col-int8`) and the other ungrouped convolutions (`vector-columns-int8`) of the
x86 kernels' test geometries, random levels and weights (with and without a zero point), per
tensor and per channel, relu and clip: every layer must take its kernel with the NEON
products and give, bit for bit, the independent int8 reference's outputs
(tests/support/int8_reference.py). Each group is one net, built and run once."""

from __future__ import annotations

import re

import pytest

from glowmlir.backends.host_vector.int8_im2col import takes_im2col
from tests.unit import test_int8_depthwise, test_int8_im2col, test_int8_pointwise
from tests.unit.test_code_size import run_cases
from tests.unit.test_quantized_kernels import convolution_case

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
    taken = [re.search(r'microkernel = #glowll\.microkernel<"([a-z0-9-]+)", \{products = "neon"\}>', line)
             for line in convolutions]  # the layers in the net's order
    assert [kernel and kernel.group(1) for kernel in taken] == [kernel_of(geometry) for geometry in layers]
