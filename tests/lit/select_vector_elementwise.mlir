// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16}' | glow-opt | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=4 accumulators=12}' | filecheck %s --check-prefix=NONE
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16 shuffles=avx2}' | glow-opt | filecheck %s --check-prefix=PACKS
// Where masked loads are single instructions (`planes`: AVX, AVX-512), an int8 Add, Sub or Mul
// (of one shape, or broadcast: a squeeze-and-excitation block's channel scale) takes the
// vector-elementwise-int8 kernel, a Mul whose output step has a proved float form
// (`quantization.float_steps`) with it as `float_step` (scale, offset, offset of the negative
// products), one of a real multiplier above 1/2 (%r: 0.05 x 0.004 / 0.0001) without; an Add
// or Sub proved equal to a float form on every pair of levels (`float_steps.float_add`) with
// it as `float_add` (the scales of each level, the sum of the zero points' products, the
// offsets of sums at or above it and below it): %s, (q1 - 3 + q2 - 3) / 2 its halves away
// from zero, rint(s - 2.75) (s >= 3), rint(s - 3.25) (s < 3); %t its Sub, rint(s +- 0.25). The
// properties print as they parse (the second glow-opt reads them back). A float one, a Div
// and an int16 Add keep the generic kernel, and so does every elementwise op without masked
// loads (SSE). On AVX2's packs (`shuffles`) the Add and the Sub with a float form carry the
// kernel's `shuffles` parameter (32 levels a step as bytes, lower_byte_quarters.mlir), and so
// does the Mul with a float step (`byte_elementwise.float_step_bytes`); the one without does not.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %g = glowll.placeholder input "g" : memref<1x2x1x1x!quant.uniform<i8:f32, 4.0e-03:-128>>
  %m = glowll.placeholder output "m" : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  glowll.elementwise %m, %x, %g {kind = "mul"} : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x1x1x!quant.uniform<i8:f32, 4.0e-03:-128>>
  %r = glowll.placeholder output "r" : memref<1x2x2x4x!quant.uniform<i8:f32, 1.0e-04:0>>
  glowll.elementwise %r, %x, %g {kind = "mul"} : memref<1x2x2x4x!quant.uniform<i8:f32, 1.0e-04:0>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x1x1x!quant.uniform<i8:f32, 4.0e-03:-128>>
  %s = glowll.placeholder output "s" : memref<1x2x2x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.elementwise %s, %x, %m {kind = "add"} : memref<1x2x2x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %t = glowll.placeholder output "t" : memref<1x2x2x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.elementwise %t, %x, %m {kind = "sub"} : memref<1x2x2x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %d = glowll.placeholder output "d" : memref<1x2x2x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.elementwise %d, %x, %m {kind = "div"} : memref<1x2x2x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %a = glowll.placeholder input "a" : memref<1x8xf32>
  %f = glowll.placeholder output "f" : memref<1x8xf32>
  glowll.elementwise %f, %a, %a {kind = "add"} : memref<1x8xf32>, memref<1x8xf32>, memref<1x8xf32>
  %h = glowll.placeholder input "h" : memref<1x8x!quant.uniform<i16:f32, 1.0e-03:0>>
  %k = glowll.placeholder output "k" : memref<1x8x!quant.uniform<i16:f32, 2.0e-03:0>>
  glowll.elementwise %k, %h, %h {kind = "add"} : memref<1x8x!quant.uniform<i16:f32, 2.0e-03:0>>, memref<1x8x!quant.uniform<i16:f32, 1.0e-03:0>>, memref<1x8x!quant.uniform<i16:f32, 1.0e-03:0>>
}

// CHECK:      glowll.elementwise %m, %x, %g {kind = "mul", microkernel = #glowll.microkernel<"vector-elementwise-int8">, float_step = array<f32: 4.000000e-03, 3.0019989, 2.99800491>}
// CHECK:      glowll.elementwise %r, %x, %g {kind = "mul", microkernel = #glowll.microkernel<"vector-elementwise-int8">} :
// CHECK:      glowll.elementwise %s, %x, %m {kind = "add", microkernel = #glowll.microkernel<"vector-elementwise-int8">, float_add = array<f32: 5.000000e-01, 5.000000e-01, 3.000000e+00, -2.750000e+00, -3.250000e+00>}
// CHECK:      glowll.elementwise %t, %x, %m {kind = "sub", microkernel = #glowll.microkernel<"vector-elementwise-int8">, float_add = array<f32: 5.000000e-01, -5.000000e-01, 0.000000e+00, 2.500000e-01, -2.500000e-01>}
// CHECK:      glowll.elementwise %d, %x, %m {kind = "div"} :
// CHECK:      glowll.elementwise %f, %a, %a {kind = "add"} :
// CHECK:      glowll.elementwise %k, %h, %h {kind = "add"} :

// NONE-NOT:   microkernel

// PACKS:      glowll.elementwise %m, %x, %g {kind = "mul", microkernel = #glowll.microkernel<"vector-elementwise-int8", {shuffles = "avx2"}>, float_step =
// PACKS:      glowll.elementwise %r, %x, %g {kind = "mul", microkernel = #glowll.microkernel<"vector-elementwise-int8">} :
// PACKS:      glowll.elementwise %s, %x, %m {kind = "add", microkernel = #glowll.microkernel<"vector-elementwise-int8", {shuffles = "avx2"}>, float_add = array<f32: 5.000000e-01, 5.000000e-01, 3.000000e+00, -2.750000e+00, -3.250000e+00>}
// PACKS:      glowll.elementwise %t, %x, %m {kind = "sub", microkernel = #glowll.microkernel<"vector-elementwise-int8", {shuffles = "avx2"}>, float_add =
// PACKS:      glowll.elementwise %k, %h, %h {kind = "add"} :
