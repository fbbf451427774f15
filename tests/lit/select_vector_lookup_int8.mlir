// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16}' | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=16 accumulators=16 planes=true registers=32}' | filecheck %s --check-prefix=AVX512
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=4 accumulators=16 registers=32}' | filecheck %s --check-prefix=NO-SHUFFLES
// On AVX2 (8 int32 lanes, masked loads), an int8 lookup table gets microkernel
// "vector-lookup-int8" with 32 levels a step (byte shuffles, ymm); on AVX-512, 64 (zmm).
// The table and the operands stay as they are. Without masked loads (SSE, NEON), the
// table keeps the generic scalar kernel.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<2x100x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<2x100x!quant.uniform<i8:f32, 2.0e-02:-7>>
  %t = glowll.weight "t" {value = dense<1> : tensor<256xi8>} : memref<256x!quant.uniform<i8:f32, 2.0e-02:-7>>
  glowll.int_lookup_table %y, %x, %t : memref<2x100x!quant.uniform<i8:f32, 2.0e-02:-7>>, memref<2x100x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<256x!quant.uniform<i8:f32, 2.0e-02:-7>>
}

// CHECK:      glowll.int_lookup_table %y, %x, %t {microkernel = #glowll.microkernel<"vector-lookup-int8", {bytes = 32 : i64}>} : memref<2x100x!quant.uniform<i8:f32, 2.0e-02:-7>>, memref<2x100x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<256x!quant.uniform<i8:f32, 2.0e-02:-7>>
// AVX512:     glowll.int_lookup_table %y, %x, %t {microkernel = #glowll.microkernel<"vector-lookup-int8", {bytes = 64 : i64}>}
// NO-SHUFFLES: glowll.int_lookup_table %y, %x, %t : memref
