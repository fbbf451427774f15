// RUN: glow-opt %s -p glow-fuse-conv-pool | filecheck %s
// A pool after a convolution becomes the convolution's `pool` window: the result type is
// the pooled shape, and the full-resolution convolution output disappears.

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x1x28x28xf32>
  %w = glow.constant "w" elided : tensor<20x1x5x5xf32>
  %b = glow.constant "b" elided : tensor<20xf32>
  %c = glow.convolution %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x28x28xf32>, tensor<20x1x5x5xf32>, tensor<20xf32>) -> tensor<1x20x24x24xf32>
  %p = glow.max_pool %c {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x20x24x24xf32>) -> tensor<1x20x12x12xf32>
  glow.save %p as "y" : tensor<1x20x12x12xf32>
}

// CHECK:      %[[P:.*]] = glow.convolution %x, %w, %b pool max {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, pool_kernel = array<i64: 2, 2>, pool_strides = array<i64: 2, 2>, pool_pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x28x28xf32>, tensor<20x1x5x5xf32>, tensor<20xf32>) -> tensor<1x20x12x12xf32>
// CHECK-NOT:  glow.max_pool
// CHECK:      glow.save %[[P]] as "y"
