glowll.function @net {
  %x = glowll.alloc : memref<1x2x8x8xf32>
  %y = glowll.alloc : memref<1x4x8x8xf32>
  %w = glowll.weight "w" {value = dense<1.0> : tensor<4x2x3x3xf32>} : memref<4x2x3x3xf32>
  %b = glowll.weight "b" {value = dense<1.0> : tensor<4xf32>} : memref<4xf32>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = "x", group2 = 1 : i64}  : memref<1x4x8x8xf32>, memref<1x2x8x8xf32>, memref<4x2x3x3xf32>, memref<4xf32>
}
