// RUN: glow-opt %s -p "glowll-execute-in-patches{cut=pool patches=2}" | filecheck %s
// RUN: glow-opt %s -p "glowll-execute-in-patches{cut=2 patches=2}" | filecheck %s
// RUN: glow-opt %s -p "glowll-execute-in-patches{cut=pool patches=2}" | glow-opt -p glowll-allocate-memory | filecheck %s --check-prefix=PLAN
// RUN: not glow-opt %s -p "glowll-execute-in-patches{cut=nothing patches=2}" 2>&1 | filecheck %s --check-prefix=NOCUT
// RUN: not glow-opt %s -p "glowll-execute-in-patches{cut=pool patches=7}" 2>&1 | filecheck %s --check-prefix=TOOMANY
// The stage up to the pool (a 3x3 "same" convolution, a relu, a 3x3 "same" average pool)
// runs over 2 x 2 patches of the pool's 6x6 output, each patch a 3x3 region. A patch reads
// the 5x5 of the input its receptive field covers: the halo is recomputed, and a window is
// padded only where the patch touches the image border (patch 0: top and left; patch 3:
// bottom and right). Each patch's part of the pool's output is inserted into the whole
// buffer, which the layer after the cut reads as before.
// Layer by layer, two 1x2x6x6 buffers are live at every layer (lower bound 608 bytes, each
// buffer on a 64-byte boundary); patched, 544: the pool's whole output beside one patch's 5x5
// input and 4x4 buffers (the patched IR printed, parsed back and allocated).

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x1x6x6xf32>
  %y = glowll.placeholder output "y" : memref<1x2x6x6xf32>
  %w = glowll.weight "w" {value = dense<1.0> : tensor<2x1x3x3xf32>} : memref<2x1x3x3xf32>
  %b = glowll.weight "b" {value = dense<0.5> : tensor<2xf32>} : memref<2xf32>
  %c = glowll.alloc : memref<1x2x6x6xf32>
  glowll.convolution %c, %x, %w, %b {name = "conv", strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : memref<1x2x6x6xf32>, memref<1x1x6x6xf32>, memref<2x1x3x3xf32>, memref<2xf32>
  %r = glowll.alloc : memref<1x2x6x6xf32>
  glowll.elementwise %r, %c {kind = "relu", name = "relu"} : memref<1x2x6x6xf32>, memref<1x2x6x6xf32>
  %p = glowll.alloc : memref<1x2x6x6xf32>
  glowll.avg_pool %p, %r {name = "pool", kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : memref<1x2x6x6xf32>, memref<1x2x6x6xf32>
  glowll.elementwise %y, %p {kind = "tanh", name = "after"} : memref<1x2x6x6xf32>, memref<1x2x6x6xf32>
}

// CHECK:      %[[CUT:.*]] = glowll.alloc : memref<1x2x6x6xf32>
// CHECK:      glowll.extract_tensor %[[X0:.*]], %x {starts = array<i64: 0, 0, 0, 0>, {{.*}}} : memref<1x1x5x5xf32>, memref<1x1x6x6xf32>
// CHECK-NEXT: %[[C0:.*]] = glowll.alloc : memref<1x2x4x4xf32>
// CHECK-NEXT: glowll.convolution %[[C0]], %[[X0]], %w, %b {name = "conv_patch0", {{.*}}pads = array<i64: 1, 1, 0, 0>
// CHECK-NEXT: %[[R0:.*]] = glowll.alloc : memref<1x2x4x4xf32>
// CHECK-NEXT: glowll.elementwise %[[R0]], %[[C0]] {name = "relu_patch0", kind = "relu"}
// CHECK-NEXT: %[[P0:.*]] = glowll.alloc : memref<1x2x3x3xf32>
// CHECK-NEXT: glowll.avg_pool %[[P0]], %[[R0]] {name = "pool_patch0", {{.*}}pads = array<i64: 1, 1, 0, 0>}
// CHECK-NEXT: glowll.insert_tensor %[[CUT]], %[[P0]] {offsets = array<i64: 0, 0, 0, 0>}
// CHECK:      glowll.extract_tensor %{{.*}}, %x {starts = array<i64: 0, 0, 0, 1>, {{.*}}} : memref<1x1x5x5xf32>
// CHECK:      glowll.convolution {{.*}}name = "conv_patch1", {{.*}}pads = array<i64: 1, 0, 0, 1>
// CHECK:      glowll.avg_pool {{.*}}name = "pool_patch1", {{.*}}pads = array<i64: 1, 0, 0, 1>
// CHECK:      glowll.insert_tensor %[[CUT]], %{{.*}} {offsets = array<i64: 0, 0, 0, 3>}
// CHECK:      glowll.extract_tensor %{{.*}}, %x {starts = array<i64: 0, 0, 1, 0>, {{.*}}} : memref<1x1x5x5xf32>
// CHECK:      glowll.insert_tensor %[[CUT]], %{{.*}} {offsets = array<i64: 0, 0, 3, 0>}
// CHECK:      glowll.extract_tensor %[[X3:.*]], %x {starts = array<i64: 0, 0, 1, 1>, {{.*}}} : memref<1x1x5x5xf32>
// CHECK-NEXT: %[[C3:.*]] = glowll.alloc : memref<1x2x4x4xf32>
// CHECK-NEXT: glowll.convolution %[[C3]], %[[X3]], %w, %b {name = "conv_patch3", {{.*}}pads = array<i64: 0, 0, 1, 1>
// CHECK:      glowll.avg_pool {{.*}}name = "pool_patch3", {{.*}}pads = array<i64: 0, 0, 1, 1>}
// CHECK-NEXT: glowll.insert_tensor %[[CUT]], %{{.*}} {offsets = array<i64: 0, 0, 3, 3>}
// CHECK-NEXT: glowll.elementwise %y, %[[CUT]] {name = "after", kind = "tanh"}
// CHECK-NOT:  name = "conv"
// CHECK-NOT:  name = "pool"

// PLAN: glowll.function @net attributes {{{.*}}activations_size = {{[0-9]+}} : i64, activations_lower_bound = 544 : i64

// NOCUT: glowll-execute-in-patches: cut="nothing": no instruction of that name, nor an index below 4
// TOOMANY: glowll-execute-in-patches: patches=7: between 1 and 6 (the cut's output is 6x6)
