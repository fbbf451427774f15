// RUN: glow-opt %s -p glow-fuse-residual-add | filecheck %s
// RUN: glow-opt %s -p glow-fuse-residual-add,lower-glow-to-glowll,glowll-share-buffers | filecheck %s --check-prefix=INPLACE
// Add(Convolution(x), r) becomes a convolution that starts from r, with the Add's fused
// activation. After lowering it may accumulate into r's buffer in place, but not here:
// r is also the convolution's input, which it reads all over while writing.

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x4x6x6xf32>
  %w = glow.constant "w" elided : tensor<4x4x1x1xf32>
  %b = glow.constant "b" elided : tensor<4xf32>
  %r = glow.relu %x : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %c = glow.convolution %r, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %s = glow.add %c, %r activation relu : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %t = glow.tanh %s : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  glow.save %t as "y" : tensor<1x4x6x6xf32>
}

// CHECK:      %[[R:.*]] = glow.relu %x
// CHECK-NEXT: %[[S:.*]] = glow.convolution %[[R]], %w, %b residual %[[R]] activation relu {{.*}} : (tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32>, tensor<4xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
// CHECK-NOT:  glow.add
// CHECK-NEXT: glow.tanh %[[S]]

// INPLACE:      glowll.elementwise %[[A:.*]], %{{.*}} {kind = "relu"}
// INPLACE-NEXT: glowll.convolution %[[D:[0-9]+]], %[[A]], %{{.*}}, %{{.*}} residual %[[A]]
// INPLACE-NEXT: glowll.elementwise %[[D]], %[[D]] {kind = "tanh"}
