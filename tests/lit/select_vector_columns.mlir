// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=16 accumulators=16}' | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=4 accumulators=12}' | filecheck %s --check-prefix=SSE
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=16 accumulators=16 planes=true}' | filecheck %s --check-prefix=PLANES
// Float convolutions of stride 1 along their rows get the column-vector kernel: the filter
// packed in blocks of output channels [O / block, C, KH, KW, block], the OIHW shape kept in
// filter_shape, the vector width and accumulator count in vector_tile. The 3x3 one has rows
// of 3 outputs: 4 lanes take them in one vector (16 would too, but waste more), and a row
// of one vector leaves 16 accumulators to channels: both of its 2 channels in one block
// ([[[w0, w1] of each tap]]). The 1x1 (unpadded, unpooled) sees a channel's 2 x 5 pixels as
// one row of 10: one vector of 16 lanes on the AVX-512 tile (8 would take two), 4 on SSE.
// The convolution of stride 3 along its rows keeps the generic kernel (2 would be taken:
// a vector of even columns out of two loads).
// With `planes` (AVX, AVX-512: loads masked at run time), the "same"-padded 3x3 over a 10 x 10
// plane takes the vector-planes kernel: 7 vectors of 16 for the plane (112 lanes) instead of
// 10 rows of 16 (160); one vector a tile, all 16 channels in one block. Without, it is rows.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x1x2x5xf32>
  %y = glowll.placeholder output "y" : memref<1x2x2x3xf32>
  %w = glowll.weight "w" {value = dense<[[[[1.0, 2.0, 3.0]]], [[[4.0, 5.0, 6.0]]]]> : tensor<2x1x1x3xf32>} : memref<2x1x1x3xf32>
  %b = glowll.weight "b" {value = dense<[0.5, -0.5]> : tensor<2xf32>} : memref<2xf32>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x2x2x3xf32>, memref<1x1x2x5xf32>, memref<2x1x1x3xf32>, memref<2xf32>
  %p = glowll.placeholder output "p" : memref<1x2x2x5xf32>
  %w1 = glowll.weight "w1" {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : memref<2x1x1x1xf32>
  glowll.convolution %p, %x, %w1, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x2x2x5xf32>, memref<1x1x2x5xf32>, memref<2x1x1x1xf32>, memref<2xf32>
  %s = glowll.placeholder output "s" : memref<1x2x2x1xf32>
  glowll.convolution %s, %x, %w, %b {strides = array<i64: 1, 3>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x2x2x1xf32>, memref<1x1x2x5xf32>, memref<2x1x1x3xf32>, memref<2xf32>
  %x2 = glowll.placeholder input "x2" : memref<1x1x10x10xf32>
  %q = glowll.placeholder output "q" : memref<1x16x10x10xf32>
  %w3 = glowll.weight "w3" {value = dense<0.25> : tensor<16x1x3x3xf32>} : memref<16x1x3x3xf32>
  %b16 = glowll.weight "b16" {value = dense<0.5> : tensor<16xf32>} : memref<16xf32>
  glowll.convolution %q, %x2, %w3, %b16 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : memref<1x16x10x10xf32>, memref<1x1x10x10xf32>, memref<16x1x3x3xf32>, memref<16xf32>
}

// CHECK:      %[[W:.*]] = glowll.weight "w_columns" {value = dense<{{\[\[\[\[\[}}1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]]]]> : tensor<1x1x1x3x2xf32>}
// CHECK-NEXT: glowll.convolution %y, %x, %[[W]], %b {{{.*}}microkernel = #glowll.microkernel<"vector-columns">, filter_shape = array<i64: 2, 1, 1, 3>, vector_tile = array<i64: 4, 16>}
// CHECK:      %[[W1:.*]] = glowll.weight "w1_columns" {value = dense<{{\[\[\[\[\[}}1.000000e+00, 2.000000e+00]]]]]> : tensor<1x1x1x1x2xf32>}
// CHECK-NEXT: glowll.convolution %p, %x, %[[W1]], %b {{{.*}}microkernel = #glowll.microkernel<"vector-columns">, filter_shape = array<i64: 2, 1, 1, 1>, vector_tile = array<i64: 16, 16>}
// CHECK:      glowll.convolution %s, %x, %w, %b {strides = array<i64: 1, 3>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} :

// CHECK:      glowll.convolution %q, {{.*}}microkernel = #glowll.microkernel<"vector-columns">, filter_shape = array<i64: 16, 1, 3, 3>, vector_tile = array<i64: 16, 16>}

// PLANES:     glowll.weight "w3_columns" elided : memref<1x1x3x3x16xf32>
// PLANES-NEXT: glowll.convolution %q, {{.*}}microkernel = #glowll.microkernel<"vector-planes">, filter_shape = array<i64: 16, 1, 3, 3>, vector_tile = array<i64: 16, 16>}

// SSE:        glowll.convolution %y, {{.*}}vector_tile = array<i64: 4, 12>}
// SSE:        glowll.convolution %p, {{.*}}vector_tile = array<i64: 4, 12>}
