// RUN: not glow-opt %s 2>&1 | filecheck %s
// The verifiers check every result type against the op's shape rule.

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x3x8x8xf32>
  %p = glow.max_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x5x4xf32>
  glow.save %p as "y" : tensor<1x3x5x4xf32>
}

// CHECK: glow.max_pool: result shape [1, 3, 5, 4] does not match the inferred shape [1, 3, 4, 4]
