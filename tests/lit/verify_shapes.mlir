// RUN: not glow-opt %s 2>&1 | filecheck %s
// The verifiers check every result type against the op's shape rule.

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x3x8x8xf32>
  %p = glow.max_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x5x4xf32>
  glow.save %p as "y" : tensor<1x3x5x4xf32>
}

// CHECK: glow.max_pool: result shape [1, 3, 5, 4] does not match the inferred shape [1, 3, 4, 4]

// Each case below on its own (the first, above, stops the plain run):
// RUN: glow-opt --split-input-file --verify-diagnostics %s 2>&1 | filecheck %s --check-prefix=WINDOW

// -----
// A window larger than the padded input gave a 0x0 (or negative) result.
glow.function @pool_larger_than_input {
  %x = glow.placeholder "x" : tensor<1x3x8x8xf32>
  %p = glow.max_pool %x {kernel = array<i64: 9, 9>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x0x0xf32>
  glow.save %p as "y" : tensor<1x3x0x0xf32>
}
// WINDOW: glow.max_pool: the window (9) is larger than the padded input (8 + 0 + 0)

// -----
glow.function @convolution_of_an_empty_input {
  %x = glow.placeholder "x" : tensor<1x3x0x8xf32>
  %w = glow.constant "w" {value = dense<1.0> : tensor<4x3x3x3xf32>} : tensor<4x3x3x3xf32>
  %b = glow.constant "b" {value = dense<0.0> : tensor<4xf32>} : tensor<4xf32>
  %c = glow.convolution %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x3x0x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x0x8xf32>
  glow.save %c as "y" : tensor<1x4x0x8xf32>
}
// WINDOW: glow.convolution: the input is empty (extent 0) along a window axis

// -----
glow.function @group_zero {
  %x = glow.placeholder "x" : tensor<1x3x8x8xf32>
  %w = glow.constant "w" {value = dense<1.0> : tensor<4x3x3x3xf32>} : tensor<4x3x3x3xf32>
  %b = glow.constant "b" {value = dense<0.0> : tensor<4xf32>} : tensor<4xf32>
  %c = glow.convolution %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 0 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  glow.save %c as "y" : tensor<1x4x6x6xf32>
}
// WINDOW: glow.convolution: filter [4, 3, 3, 3] does not fit input channels 3 with group 0

// -----
glow.function @dynamic_input {
  %x = glow.placeholder "x" : tensor<?x3xf32>
  glow.save %x as "y" : tensor<?x3xf32>
}
// WINDOW: glow.placeholder: result type tensor<?x3xf32> has a dynamic or negative dimension

// -----
// Constant indices out of range are an error in ONNX, not a wrap-around.
glow.function @gather_out_of_range {
  %x = glow.placeholder "x" : tensor<4x3xf32>
  %i = glow.constant "i" {value = dense<[1, -9]> : tensor<2xi64>} : tensor<2xi64>
  %g = glow.gather %x, %i {axis = 0 : i64} : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  glow.save %g as "y" : tensor<2x3xf32>
}
// WINDOW: glow.gather: index -9 is out of range for an axis of 4 (valid: -4 to 3)

// -----
glow.function @gather_in_range {
  %x = glow.placeholder "x" : tensor<4x3xf32>
  %i = glow.constant "i" {value = dense<[-4, 3]> : tensor<2xi64>} : tensor<2xi64>
  %g = glow.gather %x, %i {axis = 0 : i64} : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  glow.save %g as "y" : tensor<2x3xf32>
}
// (printed in the custom form only when it verifies)
// WINDOW: glow.function @gather_in_range {
