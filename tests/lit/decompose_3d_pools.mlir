// RUN: glow-opt %s -p glow-decompose-3d-pools | filecheck %s
// A 3-D pool on [N, C, D, H, W] is separable: a 2-D pool over the planes [N, C*D, H, W],
// then one over the depth [N, C, D, H'*W'] with a [kd, 1] window. A window over the whole
// input is one 2-D pool over [N, C, D, H*W].

glow.function @pools {
  %x = glow.placeholder "x" : tensor<1x2x4x6x6xf32>
  %m = glow.max_pool %x {kernel = array<i64: 2, 3, 3>, strides = array<i64: 2, 1, 2>, pads = array<i64: 1, 0, 1, 0, 1, 0>, name = "pool"} : (tensor<1x2x4x6x6xf32>) -> tensor<1x2x2x5x3xf32>
  glow.save %m as "y" : tensor<1x2x2x5x3xf32>
  %g = glow.avg_pool %x {kernel = array<i64: 4, 6, 6>, strides = array<i64: 1, 1, 1>, pads = array<i64: 0, 0, 0, 0, 0, 0>} : (tensor<1x2x4x6x6xf32>) -> tensor<1x2x1x1x1xf32>
  glow.save %g as "z" : tensor<1x2x1x1x1xf32>
}

// CHECK-LABEL: glow.function @pools
// CHECK:       %[[PLANES:.*]] = glow.reshape %x : (tensor<1x2x4x6x6xf32>) -> tensor<1x8x6x6xf32>
// CHECK-NEXT:  %[[HW:.*]] = glow.max_pool %[[PLANES]] {kernel = array<i64: 3, 3>, strides = array<i64: 1, 2>, pads = array<i64: 0, 1, 1, 0>} : (tensor<1x8x6x6xf32>) -> tensor<1x8x5x3xf32>
// CHECK-NEXT:  %[[DEPTH:.*]] = glow.reshape %[[HW]] : (tensor<1x8x5x3xf32>) -> tensor<1x2x4x15xf32>
// CHECK-NEXT:  %[[D:.*]] = glow.max_pool %[[DEPTH]] {kernel = array<i64: 2, 1>, strides = array<i64: 2, 1>, pads = array<i64: 1, 0, 0, 0>} : (tensor<1x2x4x15xf32>) -> tensor<1x2x2x15xf32>
// CHECK-NEXT:  %[[Y:.*]] = glow.reshape %[[D]] {name = "pool"} : (tensor<1x2x2x15xf32>) -> tensor<1x2x2x5x3xf32>
// CHECK-NEXT:  glow.save %[[Y]] as "y"
// CHECK-NEXT:  %[[FLAT:.*]] = glow.reshape %x : (tensor<1x2x4x6x6xf32>) -> tensor<1x2x4x36xf32>
// CHECK-NEXT:  %[[G:.*]] = glow.avg_pool %[[FLAT]] {kernel = array<i64: 4, 36>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x2x4x36xf32>) -> tensor<1x2x1x1xf32>
// CHECK-NEXT:  %[[Z:.*]] = glow.reshape %[[G]] : (tensor<1x2x1x1xf32>) -> tensor<1x2x1x1x1xf32>
// CHECK-NEXT:  glow.save %[[Z]] as "z"
