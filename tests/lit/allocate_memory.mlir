// RUN: glow-opt %s -p glowll-allocate-memory | filecheck %s
// RUN: glow-opt %s -p "glowll-allocate-memory{reuse=false}" | filecheck %s --check-prefix=NOREUSE
// Every buffer starts on a 64-byte boundary; inputs precede outputs in the mutable
// region; identical weights are stored once; activations whose live ranges do not
// overlap share memory, and the function records the lower bound beside the result. The
// region ends at the last byte of its topmost buffer (400-byte buffers: 448 + 400 = 848).

glowll.function @net {
  %y = glowll.placeholder output "y" : memref<10xf32>
  %x = glowll.placeholder input "x" : memref<100xf32>
  %w1 = glowll.weight "w1" {value = dense<1.0> : tensor<3xf32>} : memref<3xf32>
  %w2 = glowll.weight "w2" {value = dense<2.0> : tensor<3xf32>} : memref<3xf32>
  %w3 = glowll.weight "w3" {value = dense<1.0> : tensor<3xf32>} : memref<3xf32>
  %a = glowll.alloc : memref<100xf32>
  %b = glowll.alloc : memref<100xf32>
  %c = glowll.alloc : memref<100xf32>
  glowll.elementwise %a, %x {kind = "relu"} : memref<100xf32>, memref<100xf32>
  glowll.elementwise %b, %a {kind = "sigmoid"} : memref<100xf32>, memref<100xf32>
  glowll.elementwise %c, %b {kind = "tanh"} : memref<100xf32>, memref<100xf32>
  glowll.extract_tensor %y, %c {starts = array<i64: 0>, steps = array<i64: 10>} : memref<10xf32>, memref<100xf32>
}

// CHECK:      glowll.function @net attributes {constant_size = 128 : i64, mutable_size = 512 : i64, activations_size = 848 : i64, activations_lower_bound = 848 : i64, allocation_strategy = "{{.*}}"}
// CHECK-NEXT: glowll.placeholder output "y" {offset = 448 : i64}
// CHECK-NEXT: glowll.placeholder input "x" {offset = 0 : i64}
// CHECK-NEXT: glowll.weight "w1" {value = {{.*}}, offset = 0 : i64}
// CHECK-NEXT: glowll.weight "w2" {value = {{.*}}, offset = 64 : i64}
// CHECK-NEXT: glowll.weight "w3" {value = {{.*}}, offset = 0 : i64}
// CHECK-NEXT: glowll.alloc {offset = [[A:[0-9]+]] : i64}
// CHECK-NEXT: glowll.alloc {offset = {{448|0}} : i64}
// CHECK-NEXT: glowll.alloc {offset = [[A]] : i64}

// NOREUSE:      activations_size = 1296 : i64, activations_lower_bound = 1296 : i64, allocation_strategy = "glow-same-order"
// NOREUSE:      glowll.alloc {offset = 0 : i64}
// NOREUSE-NEXT: glowll.alloc {offset = 448 : i64}
// NOREUSE-NEXT: glowll.alloc {offset = 896 : i64}
