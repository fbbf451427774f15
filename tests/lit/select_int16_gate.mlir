// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16 fused_multiply_add=true int16_gate=true}' | glow-opt | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16 fused_multiply_add=true}' | filecheck %s --check-prefix=NOINT16
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=4 accumulators=16 registers=32 shuffles=neon fused_multiply_add=true int16_gate=true products=neon}' | glow-opt | filecheck %s --check-prefix=NEON
// On a target with AVX2's `vpmulhrsw` (`int16_gate`: `host_vector.target.int16_high_products`),
// an int8 Mul by a gate fixed along x's runs (%m, %n: a squeeze-and-excitation block's
// [1, 2, 1, 1] gate, either operand; `backends.host_vector.gate_products.int16_gate`, proved
// on every pair of levels) takes its int16 form: `int16_gate = array<i32: first, last>`, the
// gate levels its table has a row of, and the table, an i16 weight (`glowll.weight`, in the
// bundle's constant region) as the op's `table` operand, a row of (k, the offsets of x >= zx
// and of x < zx, the shift r) a gate level: level = (mulhrs(256 x, k) + offset) >> r. A gate
// any level of its type can hold has 256 rows, which two Muls of the same types share (%m,
// %n). A gate written by a clip to [0, 3/256] (%c) holds levels -128 to -125 only: four rows.
// Gate level -128 is zg: k = 0 and (28671 >> 13) = 3, the output zero point; level -127 has
// k = 4096 (0.05 x 1/256 / 0.05 a level: 2^(7 + 13) / 256). A Mul of one shape (%p) keeps
// `float_step`; without the option, the channel Mul takes `float_gate`. The op and its
// weight print as they parse (the second glow-opt reads them back).
// Types whose int16 form has no row of some gate levels (%h: x 0.0912:127 by a gate
// 0.0061:40, levels -113, -90, -83, -38 and -7 without) make a hybrid: `int16_gate` on all 256
// levels beside its `float_gate`, the rows of those levels marked (shift -1: that run takes the
// fma loop). Its gate clipped to levels -115 to -112 (%k): four rows, -113's marked.
// On AArch64 (`products=neon`, no masked loads: the last run lane by lane) the same Muls take
// the same forms, the int16 ones on NEON's `sqrdmulh` (the kernel's `products = "neon"`,
// `gate_products.HIGH_PRODUCTS`); the Mul of one shape keeps its float step, as bytes
// (`shuffles = "neon"`: `byte_elementwise.neon_levels`).

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %g = glowll.placeholder input "g" : memref<1x2x1x1x!quant.uniform<i8:f32, 3.90625e-03:-128>>
  %m = glowll.placeholder output "m" : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  glowll.elementwise %m, %x, %g {kind = "mul"} : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x1x1x!quant.uniform<i8:f32, 3.90625e-03:-128>>
  %n = glowll.placeholder output "n" : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  glowll.elementwise %n, %g, %x {kind = "mul"} : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x1x1x!quant.uniform<i8:f32, 3.90625e-03:-128>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %c = glowll.alloc : memref<1x2x1x1x!quant.uniform<i8:f32, 3.90625e-03:-128>>
  glowll.elementwise %c, %g {kind = "clip", clip_min = 0.0 : f32, clip_max = 0.01171875 : f32} : memref<1x2x1x1x!quant.uniform<i8:f32, 3.90625e-03:-128>>, memref<1x2x1x1x!quant.uniform<i8:f32, 3.90625e-03:-128>>
  %q = glowll.placeholder output "q" : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  glowll.elementwise %q, %x, %c {kind = "mul"} : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x1x1x!quant.uniform<i8:f32, 3.90625e-03:-128>>
  %hx = glowll.placeholder input "hx" : memref<1x2x2x4x!quant.uniform<i8:f32, 9.12e-02:127>>
  %hg = glowll.placeholder input "hg" : memref<1x2x1x1x!quant.uniform<i8:f32, 6.1e-03:40>>
  %h = glowll.placeholder output "h" : memref<1x2x2x4x!quant.uniform<i8:f32, 4.55e-02:-100>>
  glowll.elementwise %h, %hx, %hg {kind = "mul"} : memref<1x2x2x4x!quant.uniform<i8:f32, 4.55e-02:-100>>, memref<1x2x2x4x!quant.uniform<i8:f32, 9.12e-02:127>>, memref<1x2x1x1x!quant.uniform<i8:f32, 6.1e-03:40>>
  %hc = glowll.alloc : memref<1x2x1x1x!quant.uniform<i8:f32, 6.1e-03:40>>
  glowll.elementwise %hc, %hg {kind = "clip", clip_min = -0.947 : f32, clip_max = -0.925 : f32} : memref<1x2x1x1x!quant.uniform<i8:f32, 6.1e-03:40>>, memref<1x2x1x1x!quant.uniform<i8:f32, 6.1e-03:40>>
  %k = glowll.placeholder output "k" : memref<1x2x2x4x!quant.uniform<i8:f32, 4.55e-02:-100>>
  glowll.elementwise %k, %hx, %hc {kind = "mul"} : memref<1x2x2x4x!quant.uniform<i8:f32, 4.55e-02:-100>>, memref<1x2x2x4x!quant.uniform<i8:f32, 9.12e-02:127>>, memref<1x2x1x1x!quant.uniform<i8:f32, 6.1e-03:40>>
  %p = glowll.placeholder output "p" : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  glowll.elementwise %p, %x, %x {kind = "mul"} : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
}

// CHECK:      %[[WHOLE:.+]] = glowll.weight "int16_gate_table_0" elided : memref<256x4xi16>
// CHECK-NEXT: glowll.elementwise %m, %x, %g table %[[WHOLE]] {kind = "mul", microkernel = #glowll.microkernel<"vector-elementwise-int8">, int16_gate = array<i32: -128, 127>} : {{.*}} table memref<256x4xi16>
// CHECK:      glowll.elementwise %n, %g, %x table %[[WHOLE]] {kind = "mul", {{.*}}int16_gate = array<i32: -128, 127>} : {{.*}} table memref<256x4xi16>
// CHECK:      %[[CLIPPED:.+]] = glowll.weight "int16_gate_table_1" {value = dense<{{\[}}[0, 28671, 28671, 13], [4096, {{[-0-9]+}}, {{[-0-9]+}}, {{[0-9]+}}], {{.*}}]> : tensor<4x4xi16>} : memref<4x4xi16>
// CHECK-NEXT: glowll.elementwise %q, %x, %c table %[[CLIPPED]] {kind = "mul", {{.*}}int16_gate = array<i32: -128, -125>} : {{.*}} table memref<4x4xi16>
// CHECK:      %[[HYBRID:.+]] = glowll.weight "int16_gate_table_2" elided : memref<256x4xi16>
// CHECK-NEXT: glowll.elementwise %h, %hx, %hg table %[[HYBRID]] {kind = "mul", {{.*}}int16_gate = array<i32: -128, 127>, float_gate = array<f32: {{.*}}>} : {{.*}} table memref<256x4xi16>
// CHECK:      %[[MARKED:.+]] = glowll.weight "int16_gate_table_3" {value = dense<{{\[}}[{{[-0-9]+}}, {{[-0-9]+}}, {{[-0-9]+}}, {{[0-9]+}}], [{{[-0-9]+}}, {{[-0-9]+}}, {{[-0-9]+}}, {{[0-9]+}}], [0, 0, 0, -1], [{{[-0-9]+}}, {{[-0-9]+}}, {{[-0-9]+}}, {{[0-9]+}}]]> : tensor<4x4xi16>} : memref<4x4xi16>
// CHECK-NEXT: glowll.elementwise %k, %hx, %hc table %[[MARKED]] {kind = "mul", {{.*}}int16_gate = array<i32: -115, -112>, float_gate = array<f32: {{.*}}>} : {{.*}} table memref<4x4xi16>
// CHECK:      glowll.elementwise %p, %x, %x {kind = "mul", microkernel = #glowll.microkernel<"vector-elementwise-int8">, float_step = array<f32:

// NOINT16:      glowll.elementwise %m, %x, %g {kind = "mul", microkernel = #glowll.microkernel<"vector-elementwise-int8">, float_gate = array<f32:
// NOINT16:      glowll.elementwise %h, %hx, %hg {kind = "mul", microkernel = #glowll.microkernel<"vector-elementwise-int8">, float_gate = array<f32:
// NOINT16-NOT:  int16_gate
// NOINT16-NOT:  table

// NEON:      %[[WHOLE:.+]] = glowll.weight "int16_gate_table_0" elided : memref<256x4xi16>
// NEON-NEXT: glowll.elementwise %m, %x, %g table %[[WHOLE]] {kind = "mul", microkernel = #glowll.microkernel<"vector-elementwise-int8", {products = "neon"}>, int16_gate = array<i32: -128, 127>}
// NEON:      glowll.elementwise %n, %g, %x table %[[WHOLE]] {kind = "mul", microkernel = #glowll.microkernel<"vector-elementwise-int8", {products = "neon"}>, int16_gate
// NEON:      glowll.elementwise %q, %x, %c table %{{.+}} {kind = "mul", microkernel = #glowll.microkernel<"vector-elementwise-int8", {products = "neon"}>, int16_gate = array<i32: -128, -125>}
// NEON:      glowll.elementwise %h, %hx, %hg table %{{.+}} {kind = "mul", microkernel = #glowll.microkernel<"vector-elementwise-int8", {products = "neon"}>, int16_gate = array<i32: -128, 127>, float_gate = array<f32:
// NEON:      glowll.elementwise %p, %x, %x {kind = "mul", microkernel = #glowll.microkernel<"vector-elementwise-int8", {shuffles = "neon"}>, float_step = array<f32:
