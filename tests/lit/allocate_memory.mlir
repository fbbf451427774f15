// RUN: glow-opt %s -p glowll-allocate-memory | filecheck %s
// RUN: glow-opt %s -p "glowll-allocate-memory{reuse=false}" | filecheck %s --check-prefix=NOREUSE
// Every buffer starts on a 64-byte boundary; inputs precede outputs in the mutable
// region; activations whose live ranges do not overlap share memory (first fit).

glowll.function @net {
  %y = glowll.placeholder "y" {kind = "output"} : memref<10xf32>
  %x = glowll.placeholder "x" {kind = "input"} : memref<100xf32>
  %a = glowll.alloc : memref<100xf32>
  %b = glowll.alloc : memref<100xf32>
  %c = glowll.alloc : memref<100xf32>
  glowll.elementwise %a, %x {kind = "relu"} : memref<100xf32>, memref<100xf32>
  glowll.elementwise %b, %a {kind = "sigmoid"} : memref<100xf32>, memref<100xf32>
  glowll.elementwise %c, %b {kind = "tanh"} : memref<100xf32>, memref<100xf32>
  glowll.extract_tensor %y, %c {starts = array<i64: 0>, steps = array<i64: 10>} : memref<10xf32>, memref<100xf32>
}

// CHECK:      glowll.function @net attributes {constant_size = 0 : i64, mutable_size = 512 : i64, activations_size = 896 : i64}
// CHECK-NEXT: glowll.placeholder "y" {kind = "output", offset = 448 : i64}
// CHECK-NEXT: glowll.placeholder "x" {kind = "input", offset = 0 : i64}
// CHECK-NEXT: glowll.alloc {offset = 0 : i64}
// CHECK-NEXT: glowll.alloc {offset = 448 : i64}
// CHECK-NEXT: glowll.alloc {offset = 0 : i64}

// NOREUSE:      activations_size = 1344 : i64
// NOREUSE:      glowll.alloc {offset = 0 : i64}
// NOREUSE-NEXT: glowll.alloc {offset = 448 : i64}
// NOREUSE-NEXT: glowll.alloc {offset = 896 : i64}
