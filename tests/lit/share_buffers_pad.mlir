// RUN: glow-opt %s -p glowll-share-buffers | filecheck %s
// A Pad fills its whole output (splat) before inserting its input: the input's producer
// must not write into the output in place, or the fill would overwrite it. The insert stays.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x2x4xf32>
  %y = glowll.placeholder output "y" : memref<1x4x4xf32>
  %a = glowll.alloc : memref<1x2x4xf32>
  glowll.elementwise %a, %x {kind = "relu"} : memref<1x2x4xf32>, memref<1x2x4xf32>
  glowll.elementwise %y {kind = "splat", value = 0.0 : f32} : memref<1x4x4xf32>
  glowll.insert_tensor %y, %a {offsets = array<i64: 0, 1, 0>} : memref<1x4x4xf32>, memref<1x2x4xf32>
}

// CHECK:      %[[A:.*]] = glowll.alloc : memref<1x2x4xf32>
// CHECK-NEXT: glowll.elementwise %[[A]], %x {kind = "relu"}
// CHECK-NEXT: glowll.elementwise %y {kind = "splat"
// CHECK-NEXT: glowll.insert_tensor %y, %[[A]]
