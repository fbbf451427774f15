// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16 fused_multiply_add=true}' | glow-opt | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16}' | filecheck %s --check-prefix=NOFMA
// On a target with a fused multiply-add (`fused_multiply_add`: x86-64 with FMA3, AArch64), an
// int8 Mul by a gate fixed along x's runs (%m: a squeeze-and-excitation block's [1, 2, 1, 1]
// gate, either operand; `quantization.float_steps.float_gate`, proved on every pair of levels)
// takes its fma form as `float_gate` (scale, offset, offset of the negative products):
// rint(fma(x, a_g, b_g)), a_g = (g + 128) 0.004, b_g = fma(-3, a_g, 3.002) or 2.998. A Mul of
// one shape (%p) keeps `float_step`; without the feature, the channel Mul does too. The
// property prints as it parses (the second glow-opt reads it back).

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

// CHECK:      glowll.elementwise %m, %x, %g {kind = "mul", microkernel = #glowll.microkernel<"vector-elementwise-int8">, float_gate = array<f32: 4.000000e-03, [[OFFSET:[0-9.e+-]+]], [[NEGATIVE:[0-9.e+-]+]]>}
// CHECK:      glowll.elementwise %n, %g, %x {kind = "mul", microkernel = #glowll.microkernel<"vector-elementwise-int8">, float_gate = array<f32: 4.000000e-03, [[OFFSET]], [[NEGATIVE]]>}
// CHECK:      glowll.elementwise %p, %x, %x {kind = "mul", microkernel = #glowll.microkernel<"vector-elementwise-int8">, float_step = array<f32:

// NOFMA:      glowll.elementwise %m, %x, %g {kind = "mul", microkernel = #glowll.microkernel<"vector-elementwise-int8">, float_step = array<f32:
// NOFMA-NOT:  float_gate
