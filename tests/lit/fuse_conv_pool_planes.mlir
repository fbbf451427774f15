// RUN: glow-opt %s -p 'glow-fuse-conv-pool{lanes=16 accumulators=16 masked-loads=true}' | filecheck %s
// RUN: glow-opt %s -p glow-fuse-conv-pool | filecheck %s --check-prefix=MCU
// RUN: glow-opt %s -p 'glow-fuse-conv-pool{lanes=16 accumulators=16 masked-loads=true registers=32}' | filecheck %s --check-prefix=CHANNELS
// With a host's vector tile, a pool stays apart from a float convolution that alone runs on
// whole planes with fewer lanes than rows: the "same"-padded 3x3 over 28 x 28 planes (49
// vectors of 16 against 28 rows of 2) and the 1x1 over 13 x 13 (11 vectors against 13 rows
// of 16, SqueezeNet's last, its global average pool). The unpadded 5x5 is no plane: it fuses.
// Without a tile (a microcontroller), every pool fuses. With `registers`, the 3x3
// (8 channels x 9 taps = 72 products an output) takes the vector-channels kernel, whose rows
// take a fused pool as fast: it fuses; the 1x1 still runs on planes.

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x8x28x28xf32>
  %w = glow.constant "w" elided : tensor<32x8x3x3xf32>
  %b = glow.constant "b" elided : tensor<32xf32>
  %c = glow.convolution %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x8x28x28xf32>, tensor<32x8x3x3xf32>, tensor<32xf32>) -> tensor<1x32x28x28xf32>
  %p = glow.max_pool %c {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x32x28x28xf32>) -> tensor<1x32x14x14xf32>
  glow.save %p as "y" : tensor<1x32x14x14xf32>
  %x2 = glow.placeholder "x2" : tensor<1x8x13x13xf32>
  %w2 = glow.constant "w2" elided : tensor<16x8x1x1xf32>
  %b2 = glow.constant "b2" elided : tensor<16xf32>
  %c2 = glow.convolution %x2, %w2, %b2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x8x13x13xf32>, tensor<16x8x1x1xf32>, tensor<16xf32>) -> tensor<1x16x13x13xf32>
  %p2 = glow.avg_pool %c2 {kernel = array<i64: 13, 13>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x16x13x13xf32>) -> tensor<1x16x1x1xf32>
  glow.save %p2 as "z" : tensor<1x16x1x1xf32>
  %w3 = glow.constant "w3" elided : tensor<16x8x5x5xf32>
  %c3 = glow.convolution %x, %w3, %b2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x8x28x28xf32>, tensor<16x8x5x5xf32>, tensor<16xf32>) -> tensor<1x16x24x24xf32>
  %p3 = glow.max_pool %c3 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x16x24x24xf32>) -> tensor<1x16x12x12xf32>
  glow.save %p3 as "v" : tensor<1x16x12x12xf32>
}

// CHECK:      %c = glow.convolution %x, %w, %b {strides
// CHECK-NEXT: %p = glow.max_pool %c
// CHECK:      %c2 = glow.convolution %x2, %w2, %b2 {strides
// CHECK-NEXT: %p2 = glow.avg_pool %c2
// CHECK:      glow.convolution %x, %w3, %b2 pool max
// CHECK-NOT:  glow.max_pool

// MCU:        glow.convolution %x, %w, %b pool max
// MCU:        glow.convolution %x2, %w2, %b2 pool avg
// MCU:        glow.convolution %x, %w3, %b2 pool max
// MCU-NOT:    glow.max_pool

// CHANNELS:      glow.convolution %x, %w, %b pool max
// CHANNELS:      %c2 = glow.convolution %x2, %w2, %b2 {strides
// CHANNELS-NEXT: %p2 = glow.avg_pool %c2
// CHANNELS:      glow.convolution %x, %w3, %b2 pool max
