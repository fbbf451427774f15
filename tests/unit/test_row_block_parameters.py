"""`glowll-convolve-in-place`'s row blocks after kernel selection (`convolve_in_place.row_block`):
a kernel chosen with a parameter that may depend on the layer's plane is not cut into blocks of
rows; one whose parameters only say what the target has (`Microkernel.plane_free_parameters`,
x86-vnni's `byte_permutes`) is cut as a kernel without parameters is."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, IntegerAttr, UnitAttr, i64
from xdsl.parser import Parser

from glowmlir.backends.x86 import layout as vnni_layout
from glowmlir.dialects import glowll
from glowmlir.dialects.glowll import GlowLL, MicrokernelAttr
from glowmlir.dialects.quant import Quant
from glowmlir.transforms.convolve_in_place import row_block

X = "memref<1x64x12x8x!quant.uniform<i8:f32, 5.0e-02:3>>"
Y = "memref<1x16x12x8x!quant.uniform<i8:f32, 1.0e-01:0>>"
W = "memref<16x64x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>"
B = "memref<16x!quant.uniform<i32:f32, 5.0e-04:0>>"
NARROWING_1X1 = f"""
glowll.function @net {{
  %x = glowll.placeholder input "x" : {X}
  %y = glowll.placeholder output "y" : {Y}
  %w = glowll.weight "w" {{value = dense<1> : tensor<16x64x1x1xi8>}} : {W}
  %b = glowll.weight "b" {{value = dense<5> : tensor<16xi32>}} : {B}
  glowll.convolution %y, %x, %w, %b {{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, \
dilations = array<i64: 1, 1>}} : {Y}, {X}, {W}, {B}
}}
"""


def convolution_with(microkernel: MicrokernelAttr | None) -> glowll.ConvolutionOp:
    context = Context()
    for dialect in (Builtin, GlowLL, Quant):
        context.load_dialect(dialect)
    module = Parser(context, NARROWING_1X1).parse_module()
    op = next(o for o in module.walk() if isinstance(o, glowll.ConvolutionOp))
    if microkernel is not None:
        op.properties["microkernel"] = microkernel
    return op


def test_a_plane_free_parameter_keeps_the_row_blocks():
    plain = row_block(convolution_with(None), 16)
    assert 0 < plain < 12  # the layer is cut into blocks of rows
    assert row_block(convolution_with(MicrokernelAttr(vnni_layout.MICROKERNEL)), 16) == plain
    permutes = MicrokernelAttr(vnni_layout.MICROKERNEL, {vnni_layout.BYTE_PERMUTES: UnitAttr()})
    assert row_block(convolution_with(permutes), 16) == plain


def test_a_parameter_that_may_depend_on_the_plane_keeps_the_layer_whole():
    other = MicrokernelAttr(vnni_layout.MICROKERNEL, {"loop_pairs": IntegerAttr(2, i64)})
    assert row_block(convolution_with(other), 16) == 0
