// RUN: glow-opt %s -p glowll-share-buffers | filecheck %s
// Concat producers write straight into their slice of the output (a view), and an
// elementwise op whose source dies there overwrites it instead of taking a new buffer.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x2x4xf32>
  %y = glowll.placeholder output "y" : memref<1x5x4xf32>
  %a = glowll.alloc : memref<1x2x4xf32>
  glowll.elementwise %a, %x {kind = "relu"} : memref<1x2x4xf32>, memref<1x2x4xf32>
  %b = glowll.alloc : memref<1x3x4xf32>
  glowll.elementwise %b {kind = "splat", value = 1.0 : f32} : memref<1x3x4xf32>
  %c = glowll.alloc : memref<1x3x4xf32>
  glowll.elementwise %c, %b {kind = "sigmoid"} : memref<1x3x4xf32>, memref<1x3x4xf32>
  glowll.insert_tensor %y, %a {offsets = array<i64: 0, 0, 0>} : memref<1x5x4xf32>, memref<1x2x4xf32>
  glowll.insert_tensor %y, %c {offsets = array<i64: 0, 2, 0>} : memref<1x5x4xf32>, memref<1x3x4xf32>
}

// CHECK:      %x = glowll.placeholder input "x"
// CHECK-NEXT: %y = glowll.placeholder output "y"
// CHECK-NEXT: %[[C:.*]] = glowll.tensorview %y {offset = 8 : i64} : memref<1x5x4xf32> -> memref<1x3x4xf32>
// CHECK-NEXT: %[[A:.*]] = glowll.tensorview %y {offset = 0 : i64} : memref<1x5x4xf32> -> memref<1x2x4xf32>
// CHECK-NEXT: glowll.elementwise %[[A]], %x {kind = "relu"}
// CHECK-NEXT: glowll.elementwise %[[C]] {kind = "splat"
// CHECK-NEXT: glowll.elementwise %[[C]], %[[C]] {kind = "sigmoid"}
// CHECK-NOT:  glowll.insert_tensor
// CHECK-NOT:  glowll.alloc
