// RUN: glow-opt %s -p glow-subsample-strided-pointwise | filecheck %s
// A float 1x1 convolution of stride 2 reads every second row and column of its input
// through a strided slice, and becomes a 1x1 convolution of stride 1 (its residual and
// activation kept); a padded one, and a 3x3 of stride 2, stay as they are.

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x8x14x14xf32>
  %w = glow.constant "w" elided : tensor<16x8x1x1xf32>
  %b = glow.constant "b" elided : tensor<16xf32>
  %r = glow.placeholder "r" : tensor<1x16x7x7xf32>
  %c = glow.convolution %x, %w, %b residual %r activation relu {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x8x14x14xf32>, tensor<16x8x1x1xf32>, tensor<16xf32>, tensor<1x16x7x7xf32>) -> tensor<1x16x7x7xf32>
  glow.save %c as "y" : tensor<1x16x7x7xf32>
  %w3 = glow.constant "w3" elided : tensor<16x8x3x3xf32>
  %c3 = glow.convolution %x, %w3, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x8x14x14xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x7x7xf32>
  glow.save %c3 as "z" : tensor<1x16x7x7xf32>
}

// CHECK:      %[[S:.*]] = glow.slice %x {starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 2, 2>} : (tensor<1x8x14x14xf32>) -> tensor<1x8x7x7xf32>
// CHECK-NEXT: %[[C:.*]] = glow.convolution %[[S]], %w, %b residual %r activation relu {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x8x7x7xf32>, tensor<16x8x1x1xf32>, tensor<16xf32>, tensor<1x16x7x7xf32>) -> tensor<1x16x7x7xf32>
// CHECK-NEXT: glow.save %[[C]] as "y"
// CHECK:      glow.convolution %x, %w3, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>
