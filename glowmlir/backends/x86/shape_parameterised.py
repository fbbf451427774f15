"""The size-first matrix product's form on AVX-512 VNNI: which layers it takes, how it lays them out.

`glowll-shape-parameterised-kernels{vnni=true}` (the size-first backend's pass) gives it the
int8 matrix products it groups (`Backend.shape_parameterised` names this module);
`vnni_shape_parameterised` emits it. A layer takes it with a bias in accumulator units and a
multiple of 4 input channels, a convolution of one pixel or of at least 16; its filter is
packed and its bias folded as for the per-layer x86-vnni kernel (`select_kernels.select_vnni`).
"""

from __future__ import annotations

from xdsl.pattern_rewriter import PatternRewriter

from glowmlir.backends.x86 import layout as vnni_layout
from glowmlir.backends.x86.select_kernels import select_vnni
from glowmlir.dialects import glow, glowll
from glowmlir.dialects.weights import array_from_dense
from glowmlir.lowering.shape_records import MatrixShape
from glowmlir.quantization.rescaling import KernelParameters, centred_rows, offset_folds
from glowmlir.transforms.int8_kernel_selection import accumulator_bias, fits_narrow_requantization

MATRIX_PRODUCT = vnni_layout.SHAPE_PARAMETERISED_MICROKERNEL
DEPTHWISE = None
"""No depthwise form: a VNNI host keeps its own depthwise kernels."""

MatrixProduct = glowll.ConvolutionOp | glowll.FullyConnectedOp


def matrix_product_form(op: MatrixProduct, shape: MatrixShape) -> tuple | None:
    """Which code the VNNI kernel (`vnni_shape_parameterised`) gives the layer (one the portable
    form takes), None if it does not take it (a bias in accumulator units, a multiple of 4 input
    channels, a convolution of one pixel or of at least 16 whose input copy fits
    `vnni_layout.LARGEST_PACKED_INPUT`): the FullyConnected steps, or tiles of pixels with a last
    block of `O % 16` channels; and whether its output step is the narrow one (`narrow_step`), in
    the tiles with whether a relu clamps at the output zero point (their rounding then ignores the
    sign: the expanding layers' requantization is most of their time). Layers of one form take
    the same code."""
    if accumulator_bias(op) is None or shape.input_channels % vnni_layout.GROUP:
        return None
    narrow = narrow_step(op)
    if isinstance(op, glowll.FullyConnectedOp) or shape.pixels == 1:
        return "fully connected", narrow
    if (shape.pixels < vnni_layout.LANES or vnni_layout.packed_input_bytes(glow.shape_of(op.input), (0, 0, 0, 0))
            > vnni_layout.LARGEST_PACKED_INPUT):
        return None
    relu = narrow and KernelParameters.of(op).clamped_at_offset(op.dest.type.element_type.value_range[0])
    return "pixel tiles", shape.output_channels % vnni_layout.LANES, narrow, relu


def narrow_step(op: MatrixProduct) -> bool:
    """Whether the VNNI kernel's output step is the narrow one (`lowering.requantization.LaneRequantization.narrow`):
    a per-tensor requantization, narrow where `select_vnni` marks it so, by a shift whose
    rounding term takes the output zero point (`offset_folds`)."""
    numbers = KernelParameters.of(op)
    weights = op.operands[2]
    return (op.requantization is None and offset_folds(max(-numbers.shift, 0), numbers.output_offset)
            and fits_narrow_requantization(op, centred_rows(array_from_dense(weights.owner.value),
                                                            weights.type.element_type)))


def select_matrix_product(op: MatrixProduct, rewriter: PatternRewriter) -> None:
    """The layer's filter packed and its bias folded as the per-layer x86-vnni kernel's
    (`select_vnni`: every bias in accumulator units)."""
    select_vnni(op, rewriter)
