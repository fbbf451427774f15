// RUN: glow-opt %s -p "lower-glow-to-glowll,glowll-convolve-in-place" | filecheck %s
// A 3x3 stride-2 convolution of the network's NHWC input (6 x 4 x 2), which the lowering
// transposes whole to NCHW first, reads the input's rows itself in blocks of output rows
// (at most a quarter of the input's rows a block, at least one window's: one output row a
// block): each block's rows, a view of the NHWC input, transposed into a stage and
// convolved with the top pad at the first block only, the bottom one at the last only.

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x6x4x2xf32>
  %t = glow.transpose %x {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x6x4x2xf32>) -> tensor<1x2x6x4xf32>
  %w = glow.constant "w" {value = dense<1.0> : tensor<3x2x3x3xf32>} : tensor<3x2x3x3xf32>
  %b = glow.constant "b" {value = dense<[0.5, 1.5, 2.5]> : tensor<3xf32>} : tensor<3xf32>
  %c = glow.convolution %t, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x6x4xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x3x2xf32>
  %r = glow.tanh %c : (tensor<1x3x3x2xf32>) -> tensor<1x3x3x2xf32>
  glow.save %r as "y" : tensor<1x3x3x2xf32>
}

// CHECK:      %[[X:.*]] = glowll.placeholder input "x" : memref<1x6x4x2xf32>
// CHECK:      %[[COMPUTED:.*]] = glowll.alloc : memref<1x3x1x2xf32>
// CHECK:      %[[OUT:.*]] = glowll.alloc : memref<1x3x3x2xf32>
// CHECK-NEXT: %[[ROWS0:.*]] = glowll.tensorview %[[X]] {offset = 0 : i64} : memref<1x6x4x2xf32> -> memref<1x2x4x2xf32>
// CHECK-NEXT: %[[STAGE0:.*]] = glowll.alloc : memref<1x2x2x4xf32>
// CHECK-NEXT: glowll.transpose %[[STAGE0]], %[[ROWS0]] {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: glowll.convolution %[[COMPUTED]], %[[STAGE0]], {{.*}}pads = array<i64: 1, 1, 0, 0>
// CHECK-NEXT: glowll.insert_tensor %[[OUT]], %[[COMPUTED]] {offsets = array<i64: 0, 0, 0, 0>}
// CHECK-NEXT: %[[ROWS1:.*]] = glowll.tensorview %[[X]] {offset = 8 : i64} : memref<1x6x4x2xf32> -> memref<1x3x4x2xf32>
// CHECK-NEXT: %[[STAGE1:.*]] = glowll.alloc : memref<1x2x3x4xf32>
// CHECK-NEXT: glowll.transpose %[[STAGE1]], %[[ROWS1]]
// CHECK-NEXT: glowll.convolution %[[COMPUTED]], %[[STAGE1]], {{.*}}pads = array<i64: 0, 1, 0, 0>
// CHECK-NEXT: glowll.insert_tensor %[[OUT]], %[[COMPUTED]] {offsets = array<i64: 0, 0, 1, 0>}
// CHECK-NEXT: %[[ROWS2:.*]] = glowll.tensorview %[[X]] {offset = 24 : i64} : memref<1x6x4x2xf32> -> memref<1x3x4x2xf32>
// CHECK:      glowll.convolution %[[COMPUTED]], %{{.*}}pads = array<i64: 0, 1, 0, 0>
// CHECK-NEXT: glowll.insert_tensor %[[OUT]], %[[COMPUTED]] {offsets = array<i64: 0, 0, 2, 0>}
// CHECK-NOT:  glowll.alloc : memref<1x2x6x4xf32>
