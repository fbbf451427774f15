// RUN: glow-opt %s -p 'lower-glow-to-glowll,glowll-select-vector-columns{lanes=4 accumulators=16 registers=32 fused_multiply_add=true products=neon},glowll-fuse-lookup-tables' | filecheck %s
// RUN: glow-opt %s -p 'lower-glow-to-glowll,glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16 shuffles=avx2 fused_multiply_add=true},glowll-fuse-lookup-tables' | filecheck %s --check-prefix=AVX2
// On NEON the host vector unit's int8 kernels apply a fused table (`backend.neon_applies_tables`:
// their `products` parameter "neon" or "neon-bytes"; `table_lookup.NeonTable` looks it up by
// `tbl`/`tbx`): the 1x1 on int8 products takes the table that alone reads its output, whose
// buffer and pass are gone. The same kernel on AVX2 (no `products`: `vpmaddwd`) applies none:
// its table stays a `vector-lookup-int8` of its own.

!x = tensor<1x2x4x8x!quant.uniform<i8:f32, 1.0e-01:3>>
!w = tensor<3x2x1x1x!quant.uniform<i8:f32, 2.0e-02:0>>
!b = tensor<3x!quant.uniform<i32:f32, 2.0e-03:0>>
!c = tensor<1x3x4x8x!quant.uniform<i8:f32, 4.0e-02:-7>>
!t = tensor<256x!quant.uniform<i8:f32, 3.0e-02:-115>>
!y = tensor<1x3x4x8x!quant.uniform<i8:f32, 3.0e-02:-115>>

glow.function @net {
  %x = glow.placeholder "x" : !x
  %w = glow.constant "w" {value = dense<[[[[1]], [[2]]], [[[-3]], [[4]]], [[[5]], [[-6]]]]> : tensor<3x2x1x1xi8>} : !w
  %b = glow.constant "b" {value = dense<[10, -20, 30]> : tensor<3xi32>} : !b
  %c = glow.convolution %x, %w, %b {name = "c", strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (!x, !w, !b) -> !c
  %t = glow.constant "t" {value = dense<3> : tensor<256xi8>} : !t
  %f = glow.int_lookup_table %c, %t {name = "f"} : (!c, !t) -> !y
  glow.save %f as "y" : !y
}

// CHECK-NOT:   glowll.int_lookup_table
// CHECK:       glowll.convolution %{{.*}} lookup %{{.*}} {name = "c", {{.*}}microkernel = #glowll.microkernel<"vector-pointwise-int8", {products = "neon-bytes"}>, {{.*}}lookup_input = !quant.uniform<i8:f32, 4.0e-02:-7>}
// CHECK-NOT:   glowll.int_lookup_table

// AVX2:        glowll.convolution %{{.*}} {name = "c", {{.*}}microkernel = #glowll.microkernel<"vector-pointwise-int8">
// AVX2:        glowll.int_lookup_table {{.*}}microkernel = #glowll.microkernel<"vector-lookup-int8"
