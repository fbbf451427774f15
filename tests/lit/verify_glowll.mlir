// RUN: glow-opt --split-input-file --verify-diagnostics %s 2>&1 | filecheck %s
// glowll instructions check dest against the shape their operands give (a kernel would
// write outside a dest that is too small) and the properties their kind needs.

glowll.function @convolution_dest_with_the_wrong_channel_count {
  %x = glowll.placeholder input "x" : memref<1x3x8x8xf32>
  %y = glowll.placeholder output "y" : memref<1x2x8x8xf32>
  %w = glowll.weight "w" : memref<4x3x3x3xf32>
  %b = glowll.weight "b" : memref<4xf32>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : memref<1x2x8x8xf32>, memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<4xf32>
}
// CHECK: glowll.convolution: dest has shape [1, 2, 8, 8], the operands give [1, 4, 8, 8]

// -----
glowll.function @clip_without_its_bounds {
  %x = glowll.placeholder input "x" : memref<4xf32>
  %y = glowll.placeholder output "y" : memref<4xf32>
  glowll.elementwise %y, %x {kind = "clip"} : memref<4xf32>, memref<4xf32>
}
// CHECK: glowll.elementwise: "clip" needs clip_min

// -----
glowll.function @elementwise_source_larger_than_dest {
  %x = glowll.placeholder input "x" : memref<2x4xf32>
  %y = glowll.placeholder output "y" : memref<4xf32>
  glowll.elementwise %y, %x {kind = "relu"} : memref<4xf32>, memref<2x4xf32>
}
// CHECK: glowll.elementwise: dest has shape [4], the operands give [2, 4]

// -----
glowll.function @pool_dest_too_large {
  %x = glowll.placeholder input "x" : memref<1x1x4x4xf32>
  %y = glowll.placeholder output "y" : memref<1x1x3x3xf32>
  glowll.max_pool %y, %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : memref<1x1x3x3xf32>, memref<1x1x4x4xf32>
}
// CHECK: glowll.max_pool: dest has shape [1, 1, 3, 3], the operands give [1, 1, 2, 2]

// -----
glowll.function @fully_connected_weights_the_wrong_way {
  %x = glowll.placeholder input "x" : memref<1x8xf32>
  %y = glowll.placeholder output "y" : memref<1x4xf32>
  %w = glowll.weight "w" : memref<8x4xf32>
  %b = glowll.weight "b" : memref<4xf32>
  glowll.fully_connected %y, %x, %w, %b : memref<1x4xf32>, memref<1x8xf32>, memref<8x4xf32>, memref<4xf32>
}
// CHECK: glowll.fully_connected: dest [1, 4], input [1, 8], weights [8, 4] (out, in) and bias [4] do not fit

// -----
glowll.function @insert_past_the_end {
  %x = glowll.placeholder input "x" : memref<1x2x4xf32>
  %y = glowll.placeholder output "y" : memref<1x3x4xf32>
  glowll.insert_tensor %y, %x {offsets = array<i64: 0, 2, 0>} : memref<1x3x4xf32>, memref<1x2x4xf32>
}
// CHECK: glowll.insert_tensor: [1, 2, 4] at offsets [0, 2, 0] does not lie within dest [1, 3, 4]

// -----
glowll.function @transpose_that_is_not_a_permutation {
  %x = glowll.placeholder input "x" : memref<2x3xf32>
  %y = glowll.placeholder output "y" : memref<3x2xf32>
  glowll.transpose %y, %x {perm = array<i64: 1, 1>} : memref<3x2xf32>, memref<2x3xf32>
}
// CHECK: glowll.transpose: [1, 1] is not a permutation of 2 dimensions

// -----
glowll.function @copy_of_another_size {
  %x = glowll.placeholder input "x" : memref<2x3xf32>
  %y = glowll.placeholder output "y" : memref<7xf32>
  glowll.copy %y, %x : memref<7xf32>, memref<2x3xf32>
}
// CHECK: glowll.copy: dest has 7 elements, the input 6
