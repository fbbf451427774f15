// RUN: glow-opt %s -p "lower-glow-to-glowll,glowll-convolve-in-place{staged-channels=2 pointwise-rows=true}" | filecheck %s
// A pointwise convolution 4 -> 3 channels on 4 x 2 pixels whose input dies at it runs in
// blocks of rows (staged-channels=2: an input block of at most two 4 x 2 planes, 2 of the 4
// rows): each block gathered into a stage, convolved into a second stage with the layer's
// own weights, inserted over the output's rows, a view of the input's buffer.

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x4x4x2xf32>
  %r = glow.relu %x : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %w = glow.constant "w" {value = dense<1.0> : tensor<3x4x1x1xf32>} : tensor<3x4x1x1xf32>
  %b = glow.constant "b" {value = dense<[0.5, 1.5, 2.5]> : tensor<3xf32>} : tensor<3xf32>
  %c = glow.convolution %r, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x4x2xf32>, tensor<3x4x1x1xf32>, tensor<3xf32>) -> tensor<1x3x4x2xf32>
  %t = glow.tanh %c : (tensor<1x3x4x2xf32>) -> tensor<1x3x4x2xf32>
  glow.save %t as "y" : tensor<1x3x4x2xf32>
}

// CHECK:      %[[IN:.*]] = glowll.alloc : memref<1x4x4x2xf32>
// CHECK:      glowll.elementwise %[[IN]], %{{.*}} {kind = "relu"}
// CHECK-NEXT: %[[W:.*]] = glowll.weight "w"
// CHECK-NEXT: %[[B:.*]] = glowll.weight "b"
// CHECK-NEXT: %[[GATHERED:.*]] = glowll.alloc : memref<1x4x2x2xf32>
// CHECK-NEXT: %[[COMPUTED:.*]] = glowll.alloc : memref<1x3x2x2xf32>
// CHECK-NEXT: %[[OUT:.*]] = glowll.tensorview %[[IN]] {offset = 0 : i64} : memref<1x4x4x2xf32> -> memref<1x3x4x2xf32>
// CHECK-NEXT: glowll.extract_tensor %[[GATHERED]], %[[IN]] {starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>}
// CHECK-NEXT: glowll.convolution %[[COMPUTED]], %[[GATHERED]], %[[W]], %[[B]]
// CHECK-NEXT: glowll.insert_tensor %[[OUT]], %[[COMPUTED]] {offsets = array<i64: 0, 0, 0, 0>}
// CHECK-NEXT: glowll.extract_tensor %[[GATHERED]], %[[IN]] {starts = array<i64: 0, 0, 2, 0>, steps = array<i64: 1, 1, 1, 1>}
// CHECK-NEXT: glowll.convolution %[[COMPUTED]], %[[GATHERED]], %[[W]], %[[B]]
// CHECK-NEXT: glowll.insert_tensor %[[OUT]], %[[COMPUTED]] {offsets = array<i64: 0, 0, 2, 0>}
// CHECK-NEXT: glowll.elementwise %{{.*}}, %[[OUT]] {kind = "tanh"}
// CHECK-NOT:  glowll.convolution

// Without the option (a target whose kernels stage their pixels) it stays whole.
// RUN: glow-opt %s -p "lower-glow-to-glowll,glowll-convolve-in-place{staged-channels=2}" | filecheck %s --check-prefix=OFF
// OFF-NOT: glowll.extract_tensor
