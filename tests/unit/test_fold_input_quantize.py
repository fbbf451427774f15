"""A float input's quantize folded into the host int8 im2col convolution that reads it
(`glowll-fold-input-quantize`, `int8_im2col.QuantizedRows`): the convolution reads the floats
and quantizes each input row once into a ring on the stack.

Each case is `convolution_case`'s random int8 layer (its expected outputs the int8
reference's, `ref.conv2d`), its int8 input replaced by a float placeholder and Glow's quantize:
the floats are the layer's levels dequantized and moved by up to 0.4 of a step (so that
`ref.quantize` gives the levels back, checked), the lowest and highest levels partly replaced
by the infinities and floats far beyond the clamp, and by NaN in a row's blocks of 32 (where
the quantize kernel gives -128; in a row's last W mod 32 columns a NaN takes the bound of its
sign, as in the last elements of an unfolded quantize: `quantize.quantize_run`).
Geometries: the net's stem, odd widths (a quantize tail after the blocks of 32), two images,
stride 1 "same", unpadded (the first output row a clean one); with FMA3 (the proved
reciprocal) and without; without AVX-512 VNNI, whose x86-vnni kernel takes the stem on
such a host (its input packed instead).
"""

from __future__ import annotations

import dataclasses
import os
import re

import numpy as np
import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from glowmlir.backends.host_vector.fold_input_quantize import FoldInputQuantize
from glowmlir.backends.host_vector.quantize import BLOCK
from glowmlir.backends.host_vector.select_kernels import SelectVectorColumns
from glowmlir.target import HOST
from glowmlir.targets import resolve_target
from tests.support import int8_reference as ref
from tests.unit.test_host_quantize import WITHOUT_FMA
from tests.unit.test_quantized_kernels import Case, _context, build, convolution_case

needs_vectors = pytest.mark.skipif(HOST.vector_tile is None, reason="the host has no vector unit")

GEOMETRIES = {
    "stem": ((1, 3, 48, 192), (8, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
    "odd": ((1, 3, 13, 45), (8, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
    "two images": ((2, 3, 10, 29), (8, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
    "16 channels": ((1, 3, 10, 29), (16, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
    "stride 1": ((1, 2, 9, 21), (8, 2, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "unpadded": ((1, 3, 11, 70), (8, 3, 3, 3), (2, 2), (0, 0, 0, 0), (1, 1), 1),
}


def float_input(levels: np.ndarray, scale: float, offset: int, rng: np.random.Generator) -> np.ndarray:
    """Floats that Glow's quantize takes to `levels` (see the module doc)."""
    x = ((levels.astype(np.float64) - offset + rng.uniform(-0.4, 0.4, levels.shape)) * scale).astype(np.float32)
    low, high = levels == -128, levels == 127
    x[low & (rng.random(levels.shape) < 0.5)] = rng.choice(np.array([-np.inf, -3e38, -1e9], np.float32))
    x[high & (rng.random(levels.shape) < 0.5)] = rng.choice(np.array([np.inf, 3e38, 1e9], np.float32))
    blocks = np.arange(levels.shape[-1]) < levels.shape[-1] - levels.shape[-1] % BLOCK
    x[low & blocks & (rng.random(levels.shape) < 0.3)] = np.nan
    return x


def quantized_input_case(seed: int, geometry) -> tuple[Case, np.ndarray]:
    """`convolution_case`'s random int8 layer (a relu) whose input is a float placeholder "f"
    quantized (`glow.quantize`), and floats for it (`float_input`) that Glow's quantize takes
    to the layer's levels (checked): the case's expected outputs are theirs."""
    case = convolution_case(seed, geometry, activation="relu")
    x_type = re.search(r'"x" : (tensor<[^>]*!quant.uniform<i8:f32, ([^:]+):(-?\d+)>>)', case.body)
    scale, offset = float(x_type.group(2)), int(x_type.group(3))
    f_type = f"tensor<{'x'.join(map(str, geometry[0]))}xf32>"
    body = case.body.replace(f'%x = glow.placeholder "x" : {x_type.group(1)}',
                             f'%f = glow.placeholder "f" : {f_type}\n'
                             f'  %x = glow.quantize %f : ({f_type}) -> {x_type.group(1)}')
    levels = case.inputs["x"]
    x = float_input(levels, scale, offset, np.random.default_rng(seed))
    with np.errstate(invalid="ignore"):
        quantized = np.where(np.isnan(x), np.int8(-128), ref.quantize(x, scale, offset))
    np.testing.assert_array_equal(quantized, levels)
    return dataclasses.replace(case, body=body, inputs={"f": x}), x


@needs_vectors
@pytest.mark.parametrize("fma", [True, False])
@pytest.mark.parametrize("name", GEOMETRIES)
def test_folded_quantize_equals_the_reference(name, fma):
    case, x = quantized_input_case(11, GEOMETRIES[name])
    # without AVX-512 VNNI: on a VNNI host the stem takes x86-vnni's packed input, not the fold
    bundle = build(case.body, dict(case.constants),
                   target=resolve_target(mattr="-avx512vnni") if fma else resolve_target(**WITHOUT_FMA))
    glowll_text = bundle.ir["glowll"]
    assert "quantized_input = " in glowll_text and '"quantize"' not in glowll_text
    assert "activations_size = 0 " in glowll_text  # the int8 input buffer went
    np.testing.assert_array_equal(bundle.run(case.inputs)[case.output], case.expected)


def folded_text() -> str:
    """tests/lit/fold_input_quantize.mlir after the selection (AVX2 with FMA3) and the fold."""
    ctx = _context()
    with open(os.path.join(os.path.dirname(__file__), "..", "lit", "fold_input_quantize.mlir")) as lit:
        module = Parser(ctx, lit.read()).parse_module()
    SelectVectorColumns(lanes=8, accumulators=12, planes=True, registers=16, shuffles="avx2",
                        fused_multiply_add=True).apply(ctx, module)
    FoldInputQuantize().apply(ctx, module)
    module.verify()
    return str(module)


@pytest.mark.parametrize("change", ["a reciprocal not the proved one", "a reciprocal without quantized_input",
                                    "quantized_input of an int8 input"])
def test_the_verifier_refuses_a_wrong_fold(change):
    text = folded_text()
    folded = "{quantized_input = !quant.uniform<i8:f32, 1.23e-02:3>, reciprocal = 81.3008194 : f32}"
    assert folded in text
    wrong = {
        "a reciprocal not the proved one": text.replace(folded, folded.replace("81.3008194", "81.3008118")),
        "a reciprocal without quantized_input": text.replace(folded, "{reciprocal = 81.3008194 : f32}"),
        "quantized_input of an int8 input": text.replace(
            '#glowll.microkernel<"vector-im2col-int8">, filter_shape = array<i64: 2, 3, 3, 3>, vector_tile = '
            'array<i64: 8, 12>} : memref<1x2x4x8x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x3x8x16x!quant',
            f'#glowll.microkernel<"vector-im2col-int8", {folded}>, filter_shape = array<i64: 2, 3, 3, 3>, '
            'vector_tile = array<i64: 8, 12>} : memref<1x2x4x8x!quant.uniform<i8:f32, 1.0e-01:0>>, '
            'memref<1x3x8x16x!quant', 1),
    }[change]
    assert wrong != text
    with pytest.raises(VerifyException, match="reciprocal|quantized_input"):
        Parser(_context(), wrong).parse_module().verify()
