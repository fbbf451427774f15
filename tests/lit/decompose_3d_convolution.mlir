// RUN: glow-opt %s -p glow-decompose-3d-convolution | filecheck %s
// RUN: glow-opt %s -p glow-decompose-3d-convolution,glow-constant-fold,dce | filecheck %s --check-prefix=FOLDED
// A 3-D convolution is a sum of 2-D ones: the depth-padded input's planes become a batch,
// each depth tap of the filter (a slice of it) is convolved with every plane, and output
// plane z sums plane z * stride + tap * dilation of each tap's result. Only the first tap
// adds the bias.

glow.function @conv {
  %x = glow.placeholder "x" : tensor<1x2x4x5x5xf32>
  %w = glow.constant "w" {value = dense<1.0> : tensor<3x2x2x3x3xf32>} : tensor<3x2x2x3x3xf32>
  %b = glow.constant "b" {value = dense<0.5> : tensor<3xf32>} : tensor<3xf32>
  %c = glow.convolution %x, %w, %b {strides = array<i64: 2, 1, 1>, pads = array<i64: 1, 1, 1, 0, 1, 1>, dilations = array<i64: 1, 1, 1>, name = "conv"} : (tensor<1x2x4x5x5xf32>, tensor<3x2x2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x2x5x5xf32>
  glow.save %c as "y" : tensor<1x3x2x5x5xf32>
}

// CHECK-LABEL: glow.function @conv
// CHECK:       %[[PADDED:.*]] = glow.pad %x {pads = array<i64: 0, 0, 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x2x4x5x5xf32>) -> tensor<1x2x5x5x5xf32>
// CHECK-NEXT:  %[[T:.*]] = glow.transpose %[[PADDED]] {perm = array<i64: 0, 2, 1, 3, 4>}
// CHECK-NEXT:  %[[PLANES:.*]] = glow.reshape %[[T]] : (tensor<1x5x2x5x5xf32>) -> tensor<5x2x5x5xf32>
// CHECK-NEXT:  %[[S0:.*]] = glow.slice %w {starts = array<i64: 0, 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1, 1>} : (tensor<3x2x2x3x3xf32>) -> tensor<3x2x1x3x3xf32>
// CHECK-NEXT:  %[[W0:.*]] = glow.reshape %[[S0]] : (tensor<3x2x1x3x3xf32>) -> tensor<3x2x3x3xf32>
// CHECK-NEXT:  %[[C0:.*]] = glow.convolution %[[PLANES]], %[[W0]], %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<5x2x5x5xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<5x3x5x5xf32>
// CHECK-NEXT:  %[[R0:.*]] = glow.reshape %[[C0]] : (tensor<5x3x5x5xf32>) -> tensor<1x5x3x5x5xf32>
// CHECK-NEXT:  %[[P0:.*]] = glow.slice %[[R0]] {starts = array<i64: 0, 0, 0, 0, 0>, steps = array<i64: 1, 2, 1, 1, 1>} : (tensor<1x5x3x5x5xf32>) -> tensor<1x2x3x5x5xf32>
// CHECK-NEXT:  %[[S1:.*]] = glow.slice %w {starts = array<i64: 0, 0, 1, 0, 0>,
// CHECK-NEXT:  %[[W1:.*]] = glow.reshape %[[S1]]
// CHECK-NEXT:  %[[B1:.*]] = glow.constant "conv_tap1_bias" {value = dense<0.000000e+00> : tensor<3xf32>}
// CHECK-NEXT:  %[[C1:.*]] = glow.convolution %[[PLANES]], %[[W1]], %[[B1]]
// CHECK-NEXT:  %[[R1:.*]] = glow.reshape %[[C1]]
// CHECK-NEXT:  %[[P1:.*]] = glow.slice %[[R1]] {starts = array<i64: 0, 1, 0, 0, 0>, steps = array<i64: 1, 2, 1, 1, 1>}
// CHECK-NEXT:  %[[SUM:.*]] = glow.add %[[P0]], %[[P1]] : (tensor<1x2x3x5x5xf32>, tensor<1x2x3x5x5xf32>) -> tensor<1x2x3x5x5xf32>
// CHECK-NEXT:  %[[Y:.*]] = glow.transpose %[[SUM]] {name = "conv", perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x3x5x5xf32>) -> tensor<1x3x2x5x5xf32>
// CHECK-NEXT:  glow.save %[[Y]] as "y"

// Constant folding turns each tap's slice of a constant filter into a constant.
// FOLDED-LABEL: glow.function @conv
// FOLDED-COUNT-2: glow.constant "w_folded{{.*}}" elided : tensor<3x2x3x3xf32>
// FOLDED-NOT:     glow.slice %w
