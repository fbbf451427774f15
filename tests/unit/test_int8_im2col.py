"""`vector-im2col-int8`: int8 convolutions of few taps (a stem) on AVX2 as a 1x1 over each
output row's im2col pairs (`backends.host_vector.int8_im2col`), bit for bit the int8
reference (random weights and inputs), and the SSE-only host's generic kernel alike."""

from __future__ import annotations

import numpy as np
import pytest

from glowmlir.backends.host_vector.int8_im2col import im2col_filter, im2col_taps
from tests.unit.test_int8_pointwise import TARGETS, check, needs_avx2
from tests.unit.test_quantized_kernels import convolution_case

GEOMETRIES = {
    # name: (input shape, filter shape, strides, pads, dilations, group)
    "stem_3x3_s2_on_48x192": ((1, 3, 48, 192), (8, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
    "3x3_s2_odd_plane": ((2, 3, 13, 29), (16, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),  # partial vectors
    "3x3_s1_same": ((1, 3, 10, 21), (12, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "3x3_s2_unpadded": ((1, 3, 17, 40), (8, 3, 3, 3), (2, 2), (0, 0, 0, 0), (1, 1), 1),
    "5x5_one_channel": ((1, 1, 28, 28), (6, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 1),
    "2x2_s2_pads_below": ((1, 4, 9, 33), (8, 4, 2, 2), (2, 2), (0, 0, 1, 1), (1, 1), 1),
    "3x3_dilated": ((1, 2, 12, 30), (8, 2, 3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 1),
    "3x3_s2_rows_only": ((1, 3, 12, 24), (8, 3, 3, 3), (2, 1), (1, 1, 1, 1), (1, 1), 1),
}


def test_taps_pair_adjacent_kernel_columns_then_the_lone_last_ones():
    taps = im2col_taps((8, 3, 3, 3))
    every = [(c, ky, kx) for c in range(3) for ky in range(3) for kx in range(3)]
    assert len(taps) == 27 and sorted(taps) == every
    assert taps[:4] == [(0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1)]
    assert taps[18:] == [(c, ky, 2) for c in range(3) for ky in range(3)]
    centred = np.arange(8 * 27).reshape(8, 3, 3, 3)
    np.testing.assert_array_equal(im2col_filter(centred)[:, 18], centred[:, 0, 0, 2])


@needs_avx2
@pytest.mark.parametrize("name", list(GEOMETRIES))
@pytest.mark.parametrize("per_channel", [False, True])
def test_im2col_matches_the_int8_reference(name, per_channel):
    seed = 1300 + list(GEOMETRIES).index(name) + 50 * per_channel
    check(convolution_case(seed, GEOMETRIES[name], per_channel, "relu" if per_channel else None), TARGETS[0],
          "vector-im2col-int8")


@needs_avx2
@pytest.mark.parametrize("activation", ["relu", "clip"])
def test_im2col_stem_with_activations_and_the_float_step(activation):
    case = convolution_case(1390, GEOMETRIES["stem_3x3_s2_on_48x192"], False, activation)
    check(case, TARGETS[0], "vector-im2col-int8")


@needs_avx2
@pytest.mark.parametrize("bias_kind", ["large", "lowest"])
def test_im2col_where_the_zero_point_stays_out_of_the_bias(bias_kind):
    """A bias the input zero point would push out of int32 keeps it (no `folded_input_offset`):
    the pairs less the zero point, the padding 0."""
    case = convolution_case(1395, GEOMETRIES["stem_3x3_s2_on_48x192"], False, None, bias_kind=bias_kind)
    check(case, TARGETS[0], "vector-im2col-int8")
