// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16 fused_multiply_add=true int16_gate=true}' | glow-opt | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16 fused_multiply_add=true}' | filecheck %s --check-prefix=NOINT16
// On a target with AVX2's `vpmulhrsw` (`int16_gate`: `host_vector.target.int16_high_products`),
// an int8 Mul by a gate fixed along x's runs (%m, %n: a squeeze-and-excitation block's
// [1, 2, 1, 1] gate, either operand; `quantization.float_steps.int16_gate`, proved on every
// pair of levels) takes its int16 form as `int16_gate`, a row of four int16 a gate level from
// -128: k, the offsets of x >= zx and of x < zx, the shift r; level = (mulhrs(256 x, k) +
// offset) >> r. Gate level -128 is zg: k = 0 and (28671 >> 13) = 3, the output zero point;
// level -127 has k = 4194 (0.05 x 0.004 / 0.05 = 0.004 a level: 0.004 x 2^(7 + 13) = 4194.3).
// Its fma form is not given beside it; a Mul of one shape (%p) keeps `float_step`; without
// the option, the channel Mul takes `float_gate`. The property prints as it parses (the
// second glow-opt reads it back).

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %g = glowll.placeholder input "g" : memref<1x2x1x1x!quant.uniform<i8:f32, 4.0e-03:-128>>
  %m = glowll.placeholder output "m" : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  glowll.elementwise %m, %x, %g {kind = "mul"} : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x1x1x!quant.uniform<i8:f32, 4.0e-03:-128>>
  %n = glowll.placeholder output "n" : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  glowll.elementwise %n, %g, %x {kind = "mul"} : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x1x1x!quant.uniform<i8:f32, 4.0e-03:-128>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %p = glowll.placeholder output "p" : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  glowll.elementwise %p, %x, %x {kind = "mul"} : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
}

// CHECK:      glowll.elementwise %m, %x, %g {kind = "mul", microkernel = #glowll.microkernel<"vector-elementwise-int8">, int16_gate = array<i16: 0, 28671, 28671, 13, 4194, [[TABLE:[-0-9, ]+]]>}
// CHECK:      glowll.elementwise %n, %g, %x {kind = "mul", microkernel = #glowll.microkernel<"vector-elementwise-int8">, int16_gate = array<i16: 0, 28671, 28671, 13, 4194, [[TABLE]]>}
// CHECK:      glowll.elementwise %p, %x, %x {kind = "mul", microkernel = #glowll.microkernel<"vector-elementwise-int8">, float_step = array<f32:

// NOINT16:      glowll.elementwise %m, %x, %g {kind = "mul", microkernel = #glowll.microkernel<"vector-elementwise-int8">, float_gate = array<f32:
// NOINT16-NOT:  int16_gate
