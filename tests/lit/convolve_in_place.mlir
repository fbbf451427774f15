// RUN: glow-opt %s -p "lower-glow-to-glowll,glowll-convolve-in-place{staged-channels=2}" | filecheck %s
// A depthwise convolution of 4 channels whose input dies at it runs as two 2-channel slices
// into a staging buffer, each copied over its own input planes: the output is a view of the
// input's buffer, each slice's filter and bias its channels' weights.

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x4x3x3xf32>
  %r = glow.relu %x : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %w = glow.constant "w" {value = dense<[[[[1.0]]], [[[2.0]]], [[[3.0]]], [[[4.0]]]]> : tensor<4x1x1x1xf32>} : tensor<4x1x1x1xf32>
  %b = glow.constant "b" {value = dense<[0.5, 1.5, 2.5, 3.5]> : tensor<4xf32>} : tensor<4xf32>
  %c = glow.convolution %r, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 4 : i64} : (tensor<1x4x3x3xf32>, tensor<4x1x1x1xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>
  %t = glow.tanh %c : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  glow.save %t as "y" : tensor<1x4x3x3xf32>
}

// CHECK:      %[[IN:.*]] = glowll.alloc : memref<1x4x3x3xf32>
// CHECK:      glowll.elementwise %[[IN]], %{{.*}} {kind = "relu"}
// CHECK-NEXT: %[[STAGE:.*]] = glowll.alloc : memref<1x2x3x3xf32>
// CHECK-NEXT: %[[OUT:.*]] = glowll.tensorview %[[IN]] {offset = 0 : i64} : memref<1x4x3x3xf32> -> memref<1x4x3x3xf32>
// CHECK-NEXT: %[[SRC0:.*]] = glowll.tensorview %[[IN]] {offset = 0 : i64} : memref<1x4x3x3xf32> -> memref<1x2x3x3xf32>
// CHECK-NEXT: %[[DST0:.*]] = glowll.tensorview %[[IN]] {offset = 0 : i64} : memref<1x4x3x3xf32> -> memref<1x2x3x3xf32>
// CHECK-NEXT: %[[W0:.*]] = glowll.weight "w_channels_0_2" {{.*}}1.000000e+00{{.*}}2.000000e+00
// CHECK-NEXT: %[[B0:.*]] = glowll.weight "b_channels_0_2"
// CHECK-NEXT: glowll.convolution %[[STAGE]], %[[SRC0]], %[[W0]], %[[B0]] {{.*}}group = 2 : i64
// CHECK-NEXT: glowll.copy %[[DST0]], %[[STAGE]]
// CHECK-NEXT: %[[SRC1:.*]] = glowll.tensorview %[[IN]] {offset = 18 : i64}
// CHECK-NEXT: %[[DST1:.*]] = glowll.tensorview %[[IN]] {offset = 18 : i64}
// CHECK-NEXT: %[[W1:.*]] = glowll.weight "w_channels_2_4" {{.*}}3.000000e+00{{.*}}4.000000e+00
// CHECK-NEXT: %[[B1:.*]] = glowll.weight "b_channels_2_4"
// CHECK-NEXT: glowll.convolution %[[STAGE]], %[[SRC1]], %[[W1]], %[[B1]]
// CHECK-NEXT: glowll.copy %[[DST1]], %[[STAGE]]
// CHECK-NEXT: glowll.elementwise %{{.*}}, %[[OUT]] {kind = "tanh"}
// CHECK-NOT:  glowll.weight "w"
