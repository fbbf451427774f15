// RUN: glow-opt %s -p lower-glow-to-glowll | filecheck %s
// Tensors become buffers: inputs and outputs are placeholders (mutable region), weights
// live in the constant region, intermediates are allocs. The last op writes straight
// into the output placeholder; FullyConnected weights are stored transposed.

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x8xf32>
  %w = glow.constant "w" {value = dense<1.0> : tensor<8x4xf32>} : tensor<8x4xf32>
  %b = glow.constant "b" {value = dense<0.5> : tensor<4xf32>} : tensor<4xf32>
  %fc = glow.fully_connected %x, %w, %b activation relu : (tensor<1x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<1x4xf32>
  %s = glow.softmax %fc {axis = 1 : i64} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  glow.save %s as "y" : tensor<1x4xf32>
}

// CHECK:      glowll.function @net {
// CHECK-NEXT:   %[[X:.*]] = glowll.placeholder input "x" : memref<1x8xf32>
// CHECK-NEXT:   %[[Y:.*]] = glowll.placeholder output "y" : memref<1x4xf32>
// CHECK-NEXT:   %[[W:.*]] = glowll.weight "w_transposed" elided : memref<4x8xf32>
// CHECK-NEXT:   %[[A:.*]] = glowll.alloc : memref<1x4xf32>
// CHECK-NEXT:   %[[B:.*]] = glowll.weight "b" {value = dense<5.000000e-01> : tensor<4xf32>} : memref<4xf32>
// CHECK-NEXT:   glowll.fully_connected %[[A]], %[[X]], %[[W]], %[[B]] activation relu
// CHECK-NEXT:   glowll.softmax %[[Y]], %[[A]] {axis = 1 : i64}
// CHECK-NEXT: }

// ScatterND: the data is copied into the result, then the updates are scattered over it.

glow.function @scatter {
  %d = glow.placeholder "d" : tensor<4x3xf32>
  %i = glow.placeholder "i" : tensor<2x1xi64>
  %u = glow.placeholder "u" : tensor<2x3xf32>
  %y = glow.scatter_nd add %d, %i, %u : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
  glow.save %y as "y" : tensor<4x3xf32>
}

// CHECK:      glowll.function @scatter {
// CHECK-DAG:    %[[D:.*]] = glowll.placeholder input "d" : memref<4x3xf32>
// CHECK-DAG:    %[[I:.*]] = glowll.placeholder input "i" : memref<2x1xi64>
// CHECK-DAG:    %[[U:.*]] = glowll.placeholder input "u" : memref<2x3xf32>
// CHECK-DAG:    %[[Y:.*]] = glowll.placeholder output "y" : memref<4x3xf32>
// CHECK:        glowll.copy %[[Y]], %[[D]] : memref<4x3xf32>, memref<4x3xf32>
// CHECK-NEXT:   glowll.scatter_nd add %[[Y]], %[[I]], %[[U]] : memref<4x3xf32>, memref<2x1xi64>, memref<2x3xf32>
