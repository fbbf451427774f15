// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=16 accumulators=16 registers=32}' | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=16 accumulators=16}' | filecheck %s --check-prefix=NONE
// With `registers` (the target's vector registers: AVX-512 32), an unpooled depthwise float
// convolution without a residual takes the vector-depthwise kernel: a tile of rows x vectors
// of one channel (vector_tile = lanes, accumulators, rows: 4 rows of one vector of 8 lanes
// for a 5 x 5 output), the filter packed [C, 1, KH, KW, 1]. A depthwise convolution with a
// multiplier of 2 keeps the column kernel, and so does every depthwise convolution without
// the option.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x8x9x9xf32>
  %y = glowll.placeholder output "y" : memref<1x8x5x5xf32>
  %w = glowll.weight "w" {value = dense<0.5> : tensor<8x1x3x3xf32>} : memref<8x1x3x3xf32>
  %b = glowll.weight "b" {value = dense<0.25> : tensor<8xf32>} : memref<8xf32>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 8 : i64} : memref<1x8x5x5xf32>, memref<1x8x9x9xf32>, memref<8x1x3x3xf32>, memref<8xf32>
  %z = glowll.placeholder output "z" : memref<1x16x9x9xf32>
  %w2 = glowll.weight "w2" {value = dense<0.5> : tensor<16x1x3x3xf32>} : memref<16x1x3x3xf32>
  %b2 = glowll.weight "b2" {value = dense<0.25> : tensor<16xf32>} : memref<16xf32>
  glowll.convolution %z, %x, %w2, %b2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 8 : i64} : memref<1x16x9x9xf32>, memref<1x8x9x9xf32>, memref<16x1x3x3xf32>, memref<16xf32>
}

// CHECK:      %[[W:.*]] = glowll.weight "w_columns" elided : memref<8x1x3x3x1xf32>
// CHECK-NEXT: glowll.convolution %y, %x, %[[W]], %b {{.*}}microkernel = #glowll.microkernel<"vector-depthwise">, filter_shape = array<i64: 8, 1, 3, 3>, vector_tile = array<i64: 8, 4, 4>}
// CHECK:      glowll.convolution %z, {{.*}}microkernel = #glowll.microkernel<"vector-columns">

// NONE:       glowll.convolution %y, {{.*}}microkernel = #glowll.microkernel<"vector-columns">
// NONE:       glowll.convolution %z, {{.*}}microkernel = #glowll.microkernel<"vector-columns">
