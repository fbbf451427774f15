// RUN: glow-opt %s -p glowll-share-buffers | filecheck %s
// An edge Pad followed by a Relu (found by tests/unit/test_fuzz.py): the Relu first takes
// over the pad's buffer %p in place (erasing its alloc, the last buffer definition), then the
// edge slice %e becomes a view of the output. The view goes after the remaining definitions
// (it was inserted after the erased alloc: "Can't insert operation after operation not in
// this block").

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x1x1x1xf32>
  %y = glowll.placeholder output "y" : memref<1x1x1x2xf32>
  %e = glowll.alloc : memref<1x1x1x1xf32>
  glowll.extract_tensor %e, %x {starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : memref<1x1x1x1xf32>, memref<1x1x1x1xf32>
  %p = glowll.alloc : memref<1x1x1x2xf32>
  glowll.insert_tensor %p, %x {offsets = array<i64: 0, 0, 0, 0>} : memref<1x1x1x2xf32>, memref<1x1x1x1xf32>
  glowll.insert_tensor %p, %e {offsets = array<i64: 0, 0, 0, 1>} : memref<1x1x1x2xf32>, memref<1x1x1x1xf32>
  glowll.elementwise %y, %p {kind = "relu"} : memref<1x1x1x2xf32>, memref<1x1x1x2xf32>
}

// CHECK:      %x = glowll.placeholder input "x"
// CHECK-NEXT: %y = glowll.placeholder output "y"
// CHECK-NEXT: %[[E:.*]] = glowll.tensorview %y {offset = 1 : i64} : memref<1x1x1x2xf32> -> memref<1x1x1x1xf32>
// CHECK-NEXT: glowll.extract_tensor %[[E]], %x
// CHECK-NEXT: glowll.insert_tensor %y, %x {offsets = array<i64: 0, 0, 0, 0>}
// CHECK-NEXT: glowll.elementwise %y, %y {kind = "relu"}
// CHECK-NOT:  glowll.alloc
