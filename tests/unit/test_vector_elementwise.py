"""The int8 Add, Sub and Mul on a host's vector unit without AVX-512 VNNI (`microkernel =
"vector-elementwise-int8"`: `glowll-select-vector-columns`, `lowering/vector_elementwise.py`).

Random levels and scales, either operand broadcast (a squeeze-and-excitation block's channel
scale: [1, C, 1, 1] against [1, C, H, W]), rows shorter and longer than a vector, fused relu
and clip: on AVX2 (and AVX-512 without VNNI) each must take the kernel and give, bit for
bit, the independent int8 reference's outputs and the generic int8 kernel's (the same build
for a target without AVX: SSE only, no masked loads)."""

from __future__ import annotations

import numpy as np
import pytest

from glowmlir.targets import resolve_target
from tests.unit.test_int8_depthwise import GENERIC, TARGETS, needs_avx
from tests.unit.test_quantized_kernels import binary_case, build
from tests.unit.test_vnni_depthwise import BINARY_CASES


@needs_avx
@pytest.mark.parametrize("op,a_shape,b_shape,activation,seed", BINARY_CASES)
def test_add_sub_and_mul_on_avx2_match_the_int8_reference(op, a_shape, b_shape, activation, seed):
    case = binary_case(op, a_shape, b_shape, seed, activation)
    fast = build(case.body, dict(case.constants), target=resolve_target(mattr=TARGETS["avx2"]))
    assert 'microkernel = #glowll.microkernel<"vector-elementwise-int8">' in fast.ir["glowll"]
    generic = build(case.body, dict(case.constants), target=resolve_target(mattr=GENERIC))
    assert "microkernel" not in generic.ir["glowll"]
    for bundle in (fast, generic):
        np.testing.assert_array_equal(bundle.run(case.inputs)[case.output], case.expected)
