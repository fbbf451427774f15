"""Host int8 kernels whose int8 input ends at a guard page (issue 42's stop 58): no load
reads past the input's last byte.

`HostRunner` puts each region's 64-byte-aligned end against a `PROT_NONE` page, but a
placeholder lies anywhere in the mutable region. Here the layer's int8 input is made the
activations region's only buffer, flush against its guard page: the layer reads Glow's
quantize of a float placeholder (floats that quantize back to the case's random levels,
checked), so that an over-read of its last row faults (SIGSEGV) instead of reading the
next buffer. The outputs equal the int8 reference's, bit for bit.

An im2col convolution's input gets a second reader (the convolution without its relu, saved
as a second output), so that
`glowll-fold-input-quantize` leaves the quantize and its int8 buffer in place (the folded
stem reads its levels from a ring on the stack, `tests/unit/test_fold_input_quantize.py`).

The stem's im2col (`vector-im2col-int8`) strided loads of its last vector read a byte past
the last lane's until they started one byte earlier (`vector_columns.load_vector`'s `lead`).
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from glowmlir.backends.x86.target import has_avx512_vnni
from glowmlir.dialects.memory import ALIGNMENT
from glowmlir.target import HOST
from glowmlir.targets import resolve_target
from tests.support import int8_reference as ref
from tests.unit.test_quantized_kernels import (
    Case,
    binary_case,
    build,
    convolution_case,
    levels,
    lookup_table_text,
    q8,
    tensor,
)

needs_vectors = pytest.mark.skipif(HOST.vector_tile is None, reason="the host has no vector unit")

CONVOLUTIONS = {  # (input, filter, strides, pads, dilations, group), the host's kernel
    "stem": (((1, 3, 48, 192), (8, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1), "vector-im2col-int8"),
    "im2col stride 2": (((1, 3, 16, 64), (8, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1), "vector-im2col-int8"),
    "im2col unpadded": (((1, 2, 8, 64), (8, 2, 3, 3), (2, 2), (0, 0, 0, 0), (1, 1), 1), "vector-im2col-int8"),
    "columns 3x3 stride 2": (((1, 16, 4, 32), (8, 16, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
                             "vector-columns-int8"),
    "depthwise 3x3 stride 2": (((1, 8, 16, 32), (8, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 8),
                               "vector-depthwise-int8"),
    "depthwise 3x3 stride (2, 1)": (((1, 24, 4, 32), (24, 1, 3, 3), (2, 1), (1, 1, 1, 1), (1, 1), 24),
                                    "vector-depthwise-int8"),
    "depthwise 5x5": (((1, 16, 8, 32), (16, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 16), "vector-depthwise-int8"),
    "pointwise": (((1, 8, 8, 32), (24, 8, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1), "vector-pointwise-int8"),
}


def lookup_case(shape, seed: int) -> Case:
    """An int8 lookup table of random levels (x) through a random table (t)."""
    rng = np.random.default_rng(seed)
    x, table = levels(rng, *shape), levels(rng, 256)
    x_t, y_t = tensor(shape, q8(0.05, 3)), tensor(shape, q8(0.07, -5))
    return Case(lookup_table_text(x_t, tensor((256,), q8(0.07, -5)), y_t), {"x": x}, {"t": table}, "y",
                table[x.astype(np.int64) + 128])


CASES = {  # a case, its input at the guard page, the host's kernel
    **{name: (lambda geometry=geometry: convolution_case(58, geometry, activation="relu"), "x", kernel)
       for name, (geometry, kernel) in CONVOLUTIONS.items()},
    "add": (lambda: binary_case("add", (1, 8, 8, 32), (1, 8, 8, 32), 58), "b", "vector-elementwise-int8"),
    "channel mul": (lambda: binary_case("mul", (1, 24, 2, 96), (1, 24, 1, 1), 58), "a", "vector-elementwise-int8"),
    "lookup": (lambda: lookup_case((2, 96), 58), "x", "vector-lookup-int8"),
}


def guarded_input(case: Case, name: str, second_reader: bool) -> Case:
    """The case with its int8 input `name` Glow's quantize of a float placeholder (the levels
    dequantized: `ref.quantize` gives them back, checked); with `second_reader`, the levels
    also read by the case's layer without its relu, saved as a second output (no quantize
    folded into the layer)."""
    x_type = re.search(rf'"{name}" : (tensor<([^>]*)x!quant.uniform<i8:f32, ([^:]+):(-?\d+)>>)', case.body)
    shape, scale, offset = x_type.group(2), float(x_type.group(3)), int(x_type.group(4))
    f_type = f"tensor<{shape}xf32>"
    body = case.body.replace(f'%{name} = glow.placeholder "{name}" : {x_type.group(1)}',
                             f'%{name}_f = glow.placeholder "{name}_f" : {f_type}\n'
                             f'  %{name} = glow.quantize %{name}_f : ({f_type}) -> {x_type.group(1)}')
    if second_reader:
        layer = re.search(rf"\n  %{case.output} = .*\n  glow.save %{case.output} as .*", body).group(0)
        again = layer.replace(" activation relu", "")  # not the same op: not merged with it
        assert again != layer
        body += again.replace(f"%{case.output}", f"%{case.output}_again").replace(f'"{case.output}"',
                                                                              f'"{case.output}_again"')
    inputs = dict(case.inputs)
    levels = inputs.pop(name)
    inputs[f"{name}_f"] = ((levels.astype(np.float64) - offset) * scale).astype(np.float32)
    np.testing.assert_array_equal(ref.quantize(inputs[f"{name}_f"], scale, offset), levels)
    return dataclasses.replace(case, body=body, inputs=inputs)


def guarded_bundle(name: str, target=None) -> tuple[Case, object, int]:
    """The case `name` with its input at the guard page, built for `target` (default the
    host), and the input's size."""
    make_case, input_name, kernel = CASES[name]
    unguarded = make_case()
    case = guarded_input(unguarded, input_name, second_reader=kernel == "vector-im2col-int8")
    return case, build(case.body, dict(case.constants), target=target), unguarded.inputs[input_name].size


@needs_vectors
@pytest.mark.parametrize("name", CASES)
def test_an_input_at_the_guard_page_is_read_within_its_bounds(name):
    # without AVX-512 VNNI: on a VNNI host its x86 kernels take these layers (the next test)
    case, bundle, input_bytes = guarded_bundle(name, resolve_target(mattr="-avx512vnni"))
    assert f'"{CASES[name][2]}"' in bundle.ir["glowll"]
    assert bundle.layout.activations_size == input_bytes and input_bytes % ALIGNMENT == 0  # flush at the guard page
    np.testing.assert_array_equal(bundle.run(case.inputs)[case.output], case.expected)


@pytest.mark.skipif(not has_avx512_vnni(HOST), reason="the host has no AVX-512 VNNI")
@pytest.mark.parametrize("name", CASES)
def test_the_vnni_hosts_kernels_read_within_the_guard_page(name):
    """The same layers as a VNNI host builds them: x86-vnni (its packed input), x86-vnni-depthwise,
    x86-avx512 and x86-vbmi (or the vector kernels where these leave a layer)."""
    case, bundle, input_bytes = guarded_bundle(name)
    assert bundle.layout.activations_size == input_bytes and input_bytes % ALIGNMENT == 0
    np.testing.assert_array_equal(bundle.run(case.inputs)[case.output], case.expected)
