// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=16 accumulators=16 planes=true registers=32}' | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=16 accumulators=16 planes=true}' | filecheck %s --check-prefix=NONE
// With `registers` and `planes` (AVX: 16, AVX-512: 32), an ungrouped float convolution larger
// than 1x1 with at least 64 products an output takes the vector-channels kernel: its 16
// output channels in the lanes of one vector (the filter packed [O / 16, C, KH, KW, 16]), and
// its rows of 5 outputs one tile of 5 pixels (vector_tile = lanes, pixels). The 3x3 of 3
// input channels (27 products) keeps the planes kernel: a tile of the channel kernel
// transposes its outputs once over all its taps, too often for so few. Without the option, the
// strided one takes the column kernel.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x8x9x9xf32>
  %y = glowll.placeholder output "y" : memref<1x16x5x5xf32>
  %w = glowll.weight "w" {value = dense<0.5> : tensor<16x8x3x3xf32>} : memref<16x8x3x3xf32>
  %b = glowll.weight "b" {value = dense<0.25> : tensor<16xf32>} : memref<16xf32>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : memref<1x16x5x5xf32>, memref<1x8x9x9xf32>, memref<16x8x3x3xf32>, memref<16xf32>
  %x3 = glowll.placeholder input "x3" : memref<1x3x9x9xf32>
  %z = glowll.placeholder output "z" : memref<1x16x9x9xf32>
  %w3 = glowll.weight "w3" {value = dense<0.5> : tensor<16x3x3x3xf32>} : memref<16x3x3x3xf32>
  glowll.convolution %z, %x3, %w3, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : memref<1x16x9x9xf32>, memref<1x3x9x9xf32>, memref<16x3x3x3xf32>, memref<16xf32>
}

// CHECK:      %[[W:.*]] = glowll.weight "w_columns" elided : memref<1x8x3x3x16xf32>
// CHECK-NEXT: glowll.convolution %y, %x, %[[W]], %b {{.*}}microkernel = #glowll.microkernel<"vector-channels">, filter_shape = array<i64: 16, 8, 3, 3>, vector_tile = array<i64: 16, 5>}
// CHECK:      %[[W3:.*]] = glowll.weight "w3_columns" elided : memref<1x3x3x3x16xf32>
// CHECK-NEXT: glowll.convolution %z, %x3, %[[W3]], %b {{.*}}microkernel = #glowll.microkernel<"vector-planes">

// NONE:       glowll.convolution %y, {{.*}}microkernel = #glowll.microkernel<"vector-columns">
// NONE:       glowll.convolution %z, {{.*}}microkernel = #glowll.microkernel<"vector-planes">
