// RUN: glow-opt %s -p glowll-liveness | filecheck %s
// A buffer is live from the first to the last instruction touching its memory, through
// its views: %a lives until its reshaped view %v is read.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<2x8xf32>
  %y = glowll.placeholder output "y" : memref<16xf32>
  %a = glowll.alloc : memref<2x8xf32>
  %b = glowll.alloc : memref<2x8xf32>
  %v = glowll.tensorview %a {offset = 0 : i64} : memref<2x8xf32> -> memref<16xf32>
  glowll.elementwise %a, %x {kind = "relu"} : memref<2x8xf32>, memref<2x8xf32>
  glowll.elementwise %b, %x {kind = "tanh"} : memref<2x8xf32>, memref<2x8xf32>
  glowll.elementwise %y, %v {kind = "sigmoid"} : memref<16xf32>, memref<16xf32>
}

// CHECK:      %a = glowll.alloc {live_range = array<i64: 0, 2>}
// CHECK-NEXT: %b = glowll.alloc {live_range = array<i64: 1, 1>}
