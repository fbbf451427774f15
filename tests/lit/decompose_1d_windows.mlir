// RUN: glow-opt %s -p glow-decompose-1d-windows | filecheck %s
// RUN: not glow-opt %s -p lower-glow-to-glowll 2>&1 | filecheck %s --check-prefix=LOWER
// A 1-D convolution or pool on [N, C, L] becomes the 2-D one over [N, C, 1, L]: the filter
// gets a unit height, the window a unit first axis, and the result is reshaped back (the
// reshape takes over the node name, the profile key of the result).

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x2x9xf32>
  %w = glow.constant "w" {value = dense<1.0> : tensor<3x2x3xf32>} : tensor<3x2x3xf32>
  %b = glow.constant "b" {value = dense<0.5> : tensor<3xf32>} : tensor<3xf32>
  %c = glow.convolution %x, %w, %b {strides = array<i64: 2>, pads = array<i64: 1, 0>, dilations = array<i64: 1>, name = "conv"} : (tensor<1x2x9xf32>, tensor<3x2x3xf32>, tensor<3xf32>) -> tensor<1x3x4xf32>
  %p = glow.avg_pool %c {kernel = array<i64: 3>, strides = array<i64: 1>, pads = array<i64: 1, 1>, count_include_pad} : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  glow.save %p as "y" : tensor<1x3x4xf32>
}

// CHECK-LABEL: glow.function @net
// CHECK:       %[[X:.*]] = glow.reshape %x : (tensor<1x2x9xf32>) -> tensor<1x2x1x9xf32>
// CHECK-NEXT:  %[[W:.*]] = glow.reshape %w : (tensor<3x2x3xf32>) -> tensor<3x2x1x3xf32>
// CHECK-NEXT:  %[[C:.*]] = glow.convolution %[[X]], %[[W]], %b {strides = array<i64: 1, 2>, pads = array<i64: 0, 1, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x1x9xf32>, tensor<3x2x1x3xf32>, tensor<3xf32>) -> tensor<1x3x1x4xf32>
// CHECK-NEXT:  %[[C1:.*]] = glow.reshape %[[C]] {name = "conv"} : (tensor<1x3x1x4xf32>) -> tensor<1x3x4xf32>
// CHECK-NEXT:  %[[P:.*]] = glow.reshape %[[C1]] : (tensor<1x3x4xf32>) -> tensor<1x3x1x4xf32>
// CHECK-NEXT:  %[[Q:.*]] = glow.avg_pool %[[P]] {kernel = array<i64: 1, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 1, 0, 1>, count_include_pad} : (tensor<1x3x1x4xf32>) -> tensor<1x3x1x4xf32>
// CHECK-NEXT:  %[[Y:.*]] = glow.reshape %[[Q]] : (tensor<1x3x1x4xf32>) -> tensor<1x3x4xf32>
// CHECK-NEXT:  glow.save %[[Y]] as "y"

// Without the pass, the lowering refuses the 1-D window, naming the op.
// LOWER: glow-opt: error: glow.convolution: only 2-D windows lower to glowll, this one is 1-D (run glow-decompose-1d-windows, -3d-convolution and -3d-pools first)
