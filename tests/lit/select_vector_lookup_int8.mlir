// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16 shuffles=avx2}' | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=16 accumulators=16 planes=true registers=32 shuffles=avx512bw}' | filecheck %s --check-prefix=AVX512
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=4 accumulators=16 registers=32 shuffles=neon}' | filecheck %s --check-prefix=NEON
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=4 accumulators=12 registers=16}' | filecheck %s --check-prefix=NO-SHUFFLES
// With the target's byte shuffles named (AVX2: 32 levels a step by ymm vpshufb; AVX-512BW:
// 64 by zmm; on NEON 16 by tbl/tbx), an int8 lookup table gets microkernel
// "vector-lookup-int8" with them; the table and the operands stay as they are. Without
// (SSE), the table keeps the generic scalar kernel.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<2x100x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<2x100x!quant.uniform<i8:f32, 2.0e-02:-7>>
  %t = glowll.weight "t" {value = dense<1> : tensor<256xi8>} : memref<256x!quant.uniform<i8:f32, 2.0e-02:-7>>
  glowll.int_lookup_table %y, %x, %t : memref<2x100x!quant.uniform<i8:f32, 2.0e-02:-7>>, memref<2x100x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<256x!quant.uniform<i8:f32, 2.0e-02:-7>>
}

// CHECK:      glowll.int_lookup_table %y, %x, %t {microkernel = #glowll.microkernel<"vector-lookup-int8", {shuffles = "avx2"}>} : memref<2x100x!quant.uniform<i8:f32, 2.0e-02:-7>>, memref<2x100x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<256x!quant.uniform<i8:f32, 2.0e-02:-7>>
// AVX512:     glowll.int_lookup_table %y, %x, %t {microkernel = #glowll.microkernel<"vector-lookup-int8", {shuffles = "avx512bw"}>}
// NEON:       glowll.int_lookup_table %y, %x, %t {microkernel = #glowll.microkernel<"vector-lookup-int8", {shuffles = "neon"}>}
// NO-SHUFFLES: glowll.int_lookup_table %y, %x, %t : memref
