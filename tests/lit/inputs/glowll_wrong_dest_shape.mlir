glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x3x8x8xf32>
  %y = glowll.placeholder output "y" : memref<1x2x8x8xf32>
  %w = glowll.weight "w" : memref<4x3x3x3xf32>
  %b = glowll.weight "b" : memref<4xf32>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : memref<1x2x8x8xf32>, memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<4xf32>
}
