"""The float and int8 kernels of one instruction share one loop skeleton
(glowmlir/lowering/loop_skeletons.py); only their arithmetic differs. The numbers each
kernel computes are checked in test_kernels.py and test_quantized_kernels.py."""

from __future__ import annotations

from collections import Counter

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.parser import Parser

from glowmlir.dialects import glowll
from glowmlir.dialects.glowll import GlowLL
from glowmlir.dialects.quant import Quant
from glowmlir.errors import GlowError
from glowmlir.lowering.activations import activation_of, clamp_interval
from glowmlir.lowering.glowll_to_llvm import lower_instruction
from glowmlir.quantization.rescaling import activation_bounds

X8, Y8 = "!quant.uniform<i8:f32, 5.0e-02:3>", "!quant.uniform<i8:f32, 1.0e-01:-5>"
W8, B32 = "!quant.uniform<i8:f32, 1.0e-02:0>", "!quant.uniform<i32:f32, 5.0e-04:0>"
FLOAT = {"x": "f32", "y": "f32", "w": "f32", "b": "f32", "w_value": "1.0", "b_value": "0.5", "w_data": "f32",
         "b_data": "f32"}
INT8 = {"x": X8, "y": Y8, "w": W8, "b": B32, "w_value": "1", "b_value": "7", "w_data": "i8", "b_data": "i32"}
LOOP_OPS = ("llvm.cond_br", "llvm.load", "llvm.store")


def instruction(text: str) -> glowll.InstructionOp:
    context = Context()
    for dialect in (Builtin, GlowLL, Quant):
        context.load_dialect(dialect)
    module = Parser(context, "glowll.function @net {\n" + text + "\n}\n").parse_module()
    module.verify()
    return next(op for op in module.walk() if isinstance(op, glowll.InstructionOp))


def convolution(e: dict[str, str], keywords: str, properties: str = "",
                residual: bool = False) -> glowll.ConvolutionOp:
    """A 3x3 convolution of a 1x2x8x8 input into 4 channels (`properties` adds activation, pool)."""
    out = "1x4x4x4" if "pool" in properties else "1x4x8x8"
    r = f"\n  %r = glowll.alloc : memref<{out}x{e['y']}>" if residual else ""
    return instruction(f"""
  %x = glowll.alloc : memref<1x2x8x8x{e['x']}>
  %y = glowll.alloc : memref<{out}x{e['y']}>{r}
  %w = glowll.weight "w" {{value = dense<{e['w_value']}> : tensor<4x2x3x3x{e['w_data']}>}} : memref<4x2x3x3x{e['w']}>
  %b = glowll.weight "b" {{value = dense<{e['b_value']}> : tensor<4x{e['b_data']}>}} : memref<4x{e['b']}>
  glowll.convolution %y, %x, %w, %b{' residual %r' if residual else ''}{keywords} {{strides = array<i64: 1, 1>, \
pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64{properties}}} : memref<{out}x{e['y']}>, \
memref<1x2x8x8x{e['x']}>, memref<4x2x3x3x{e['w']}>, memref<4x{e['b']}>\
{f', memref<{out}x{e["y"]}>' if residual else ''}""")


def pool(e: dict[str, str], kind: str) -> glowll.InstructionOp:
    return instruction(f"""
  %x = glowll.alloc : memref<1x4x8x8x{e['y']}>
  %y = glowll.alloc : memref<1x4x4x4x{e['y']}>
  glowll.{kind} %y, %x {{kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, \
pads = array<i64: 1, 1, 1, 1>}} : memref<1x4x4x4x{e['y']}>, memref<1x4x8x8x{e['y']}>""")


def loop_structure(op: glowll.InstructionOp) -> Counter:
    """How many conditional branches (loops and guards), loads and stores the kernel of `op` has."""
    kernel = lower_instruction(op, "kernel", [("activations", 64 * i) for i in range(len(op.operands))])
    return Counter(o.name for o in kernel.walk() if o.name in LOOP_OPS)


FUSED_POOL = ", pool_kernel = array<i64: 2, 2>, pool_strides = array<i64: 2, 2>, pool_pads = array<i64: 0, 0, 0, 0>"


@pytest.mark.parametrize("keywords,properties,copied_rows", [
    (" activation relu", "", 0), (" activation relu pool avg", FUSED_POOL, 0), ("", "", 4),
    (" activation relu pool max", FUSED_POOL, 4)],
    ids=["relu", "relu_avg_pool", "no_activation", "relu_max_pool"])
def test_float_and_int8_convolutions_share_their_loop_nest(keywords, properties, copied_rows):
    """Same loops and memory accesses, but where float has nothing left to do on a row of
    the channel block (no activation to apply, maxima already in place), int8 still copies
    its int32 row out, narrowed: one more loop, load and store per row."""
    float_kernel, int8_kernel = (loop_structure(convolution(e, keywords, properties)) for e in (FLOAT, INT8))
    assert float_kernel["llvm.cond_br"] > 0
    for name in ("llvm.cond_br", "llvm.load", "llvm.store"):
        assert int8_kernel[name] == float_kernel[name] + copied_rows, name


@pytest.mark.parametrize("kind,copied_rows", [("max_pool", 1), ("avg_pool", 0)])
def test_float_and_int8_pools_share_their_loop_nest(kind, copied_rows):
    float_kernel, int8_kernel = (loop_structure(pool(e, kind)) for e in (FLOAT, INT8))
    assert float_kernel["llvm.cond_br"] > 0
    for name in ("llvm.cond_br", "llvm.load", "llvm.store"):
        assert int8_kernel[name] == float_kernel[name] + copied_rows, name


def test_quantized_convolution_refuses_a_fused_residual():
    with pytest.raises(GlowError, match="a quantized convolution has no fused residual"):
        loop_structure(convolution(INT8, "", residual=True))
    assert loop_structure(convolution(FLOAT, "", residual=True))["llvm.load"] > 0


def test_relu_and_clip_have_one_interval_for_every_arithmetic():
    """The float clamp, the integer clamp and the int8 level bounds all read clamp_interval."""
    conv = convolution(INT8, " activation clip", ", clip_min = -1.0 : f32, clip_max = 0.5 : f32")
    assert activation_of(conv) == "clip" and clamp_interval(conv, "clip") == (-1.0, 0.5)
    assert clamp_interval(conv, "relu") == (0.0, None) and clamp_interval(conv, None) == (None, None)
    # output levels: real / 0.1 - 5, so [-1, 0.5] -> [-15, 0]; relu -> [-5, 127]
    assert activation_bounds(conv, conv.dest.type.element_type) == (-15, 0)
    relu = convolution(INT8, " activation relu")
    assert activation_bounds(relu, relu.dest.type.element_type) == (-5, 127)
    with pytest.raises(ValueError, match="unknown activation \"gelu\""):
        clamp_interval(conv, "gelu")
