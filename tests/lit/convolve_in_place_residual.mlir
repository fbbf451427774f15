// RUN: glow-opt %s -p "lower-glow-to-glowll,glowll-convolve-in-place{staged-channels=2}" | filecheck %s
// RUN: glow-opt %s -p "lower-glow-to-glowll,glowll-convolve-in-place{staged-channels=2}" | glow-opt | filecheck %s
// A convolution whose output only the residual add after it reads runs as slices of 2 output
// channels into a staging buffer, each added over its own channels of the residual (which
// dies at the add): the add's output is a view of the residual's buffer. The IR re-parses.

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x4x3x3xf32>
  %r = glow.relu %x : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %s = glow.sigmoid %x : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %w = glow.constant "w" {value = dense<1.0> : tensor<4x4x1x1xf32>} : tensor<4x4x1x1xf32>
  %b = glow.constant "b" {value = dense<[0.5, 1.5, 2.5, 3.5]> : tensor<4xf32>} : tensor<4xf32>
  %c = glow.convolution %r, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x3x3xf32>, tensor<4x4x1x1xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>
  %a = glow.add %s, %c : (tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %t = glow.tanh %a : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  glow.save %t as "y" : tensor<1x4x3x3xf32>
}

// CHECK:      glowll.elementwise %[[RES:[0-9]+]], %{{.*}} {kind = "sigmoid"}
// CHECK:      %[[STAGE:.*]] = glowll.alloc : memref<1x2x3x3xf32>
// CHECK-NEXT: %[[OUT:.*]] = glowll.tensorview %[[RES]] {offset = 0 : i64} : memref<1x4x3x3xf32> -> memref<1x4x3x3xf32>
// CHECK-NEXT: %[[R0:.*]] = glowll.tensorview %[[RES]] {offset = 0 : i64} : memref<1x4x3x3xf32> -> memref<1x2x3x3xf32>
// CHECK-NEXT: %[[D0:.*]] = glowll.tensorview %[[RES]] {offset = 0 : i64} : memref<1x4x3x3xf32> -> memref<1x2x3x3xf32>
// CHECK-NEXT: %[[W0:.*]] = glowll.weight "w_channels_0_2" {{.*}} : memref<2x4x1x1xf32>
// CHECK-NEXT: %[[B0:.*]] = glowll.weight "b_channels_0_2"
// CHECK-NEXT: glowll.convolution %[[STAGE]], %{{.*}}, %[[W0]], %[[B0]]
// CHECK-NEXT: glowll.elementwise %[[D0]], %[[R0]], %[[STAGE]] {kind = "add"}
// CHECK-NEXT: %[[R1:.*]] = glowll.tensorview %[[RES]] {offset = 18 : i64}
// CHECK-NEXT: %[[D1:.*]] = glowll.tensorview %[[RES]] {offset = 18 : i64}
// CHECK-NEXT: %[[W1:.*]] = glowll.weight "w_channels_2_4"
// CHECK-NEXT: %[[B1:.*]] = glowll.weight "b_channels_2_4" {{.*}}2.500000e+00, 3.500000e+00
// CHECK-NEXT: glowll.convolution %[[STAGE]], %{{.*}}, %[[W1]], %[[B1]]
// CHECK-NEXT: glowll.elementwise %[[D1]], %[[R1]], %[[STAGE]] {kind = "add"}
// CHECK-NEXT: glowll.elementwise %{{.*}}, %[[OUT]] {kind = "tanh"}
