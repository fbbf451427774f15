// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16 shuffles=avx2 fused_multiply_add=true}' | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16 shuffles=avx2}' | filecheck %s --check-prefix=NO-FMA
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=4 accumulators=16 registers=32 shuffles=neon}' | filecheck %s --check-prefix=NO-FMA
// A quantize of f32 to per-tensor int8 gets microkernel "vector-quantize-int8"; on AVX2 with
// FMA3, where `reciprocal_division` proves its scale, with the scale's `reciprocal`
// RN(1 / scale) (half the vectors divided by it and two FMAs, the divider the other half).
// Without FMA3 (or on NEON) the kernel divides every vector; a scale beyond 2^60, which the
// proof does not take, too.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<3x48x192xf32>
  %q = glowll.placeholder output "q" : memref<3x48x192x!quant.uniform<i8:f32, 1.230000e-02:-7>>
  %w = glowll.placeholder output "w" : memref<3x48x192x!quant.uniform<i8:f32, 1.0e+20:0>>
  glowll.elementwise %q, %x {kind = "quantize"} : memref<3x48x192x!quant.uniform<i8:f32, 1.230000e-02:-7>>, memref<3x48x192xf32>
  glowll.elementwise %w, %x {kind = "quantize"} : memref<3x48x192x!quant.uniform<i8:f32, 1.0e+20:0>>, memref<3x48x192xf32>
}

// CHECK:      glowll.elementwise %q, %x {kind = "quantize", microkernel = #glowll.microkernel<"vector-quantize-int8", {reciprocal = 81.3008194 : f32}>}
// CHECK-NEXT: glowll.elementwise %w, %x {kind = "quantize", microkernel = #glowll.microkernel<"vector-quantize-int8">}
// NO-FMA:      glowll.elementwise %q, %x {kind = "quantize", microkernel = #glowll.microkernel<"vector-quantize-int8">}
// NO-FMA-NEXT: glowll.elementwise %w, %x {kind = "quantize", microkernel = #glowll.microkernel<"vector-quantize-int8">}
