// RUN: glow-opt %s -p lower-glow-to-glowll | filecheck %s
// Quantized ops lower to the same instructions on quantized buffers. A per-channel filter
// brings a `requantization` weight: each output channel's multiplier, then its shift
// (input scale x filter scale / output scale as a 31-bit multiplier and a shift).

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x1x3x3x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w = glow.constant "w" {value = dense<1> : tensor<2x1x1x1xi8>} : tensor<2x1x1x1x!quant.uniform<i8:f32:0, {2.0e-02:0, 5.0e-02:0}>>
  %b = glow.constant "b" {value = dense<0> : tensor<2xi32>} : tensor<2x!quant.uniform<i32:f32:0, {2.0e-03:0, 5.0e-03:0}>>
  %c = glow.convolution %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x3x3x!quant.uniform<i8:f32, 1.0e-01:0>>, tensor<2x1x1x1x!quant.uniform<i8:f32:0, {2.0e-02:0, 5.0e-02:0}>>, tensor<2x!quant.uniform<i32:f32:0, {2.0e-03:0, 5.0e-03:0}>>) -> tensor<1x2x3x3x!quant.uniform<i8:f32, 4.0e-02:0>>
  %d = glow.dequantize %c : (tensor<1x2x3x3x!quant.uniform<i8:f32, 4.0e-02:0>>) -> tensor<1x2x3x3xf32>
  glow.save %d as "y" : tensor<1x2x3x3xf32>
}

// 0.1 x 0.02 / 0.04 = 0.05 = 0.8 * 2^-4 and 0.1 x 0.05 / 0.04 = 0.125 = 0.5 * 2^-2 (in float32
// scales, a few units off 0.8 * 2^31 and 0.5 * 2^31):
// CHECK:      %[[R:.*]] = glowll.weight "w_requantization" {value = dense<{{\[\[}}1717986944, 1073741880], [-4, -2]]> : tensor<2x2xi32>} : memref<2x2xi32>
// CHECK:      glowll.convolution %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} requantization %[[R]] {{.*}} : memref<1x2x3x3x!quant.uniform<i8:f32, 4.0e-02:0>>, {{.*}} requantization memref<2x2xi32>
// CHECK-NEXT: glowll.elementwise %{{.*}}, %{{.*}} {kind = "dequantize"} : memref<1x2x3x3xf32>, memref<1x2x3x3x!quant.uniform<i8:f32, 4.0e-02:0>>

// Int16 data (-quantization-precision=Int16): an int16 x int8 FullyConnected whose int32
// sums could overflow, |bias| + 32768 x sum |w - w_offset| = 2147000000 + 32768 x 4 x 127
// > 2^31 - 1, sums in int64 (`wide_accumulators`); one with a small bias does not.
glow.function @int16 {
  %x = glow.placeholder "x16" : tensor<1x4x!quant.uniform<i16:f32, 1.0e-04:0>>
  %w = glow.constant "w16" {value = dense<-127> : tensor<4x2xi8>} : tensor<4x2x!quant.uniform<i8:f32, 1.0e-02:0>>
  %big = glow.constant "big" {value = dense<2147000000> : tensor<2xi32>} : tensor<2x!quant.uniform<i32:f32, 1.0e-06:0>>
  %small = glow.constant "small" {value = dense<1000> : tensor<2xi32>} : tensor<2x!quant.uniform<i32:f32, 1.0e-06:0>>
  %f = glow.fully_connected %x, %w, %big : (tensor<1x4x!quant.uniform<i16:f32, 1.0e-04:0>>, tensor<4x2x!quant.uniform<i8:f32, 1.0e-02:0>>, tensor<2x!quant.uniform<i32:f32, 1.0e-06:0>>) -> tensor<1x2x!quant.uniform<i16:f32, 1.0e-01:0>>
  %g = glow.fully_connected %x, %w, %small : (tensor<1x4x!quant.uniform<i16:f32, 1.0e-04:0>>, tensor<4x2x!quant.uniform<i8:f32, 1.0e-02:0>>, tensor<2x!quant.uniform<i32:f32, 1.0e-06:0>>) -> tensor<1x2x!quant.uniform<i16:f32, 1.0e-01:0>>
  glow.save %f as "f16" : tensor<1x2x!quant.uniform<i16:f32, 1.0e-01:0>>
  glow.save %g as "g16" : tensor<1x2x!quant.uniform<i16:f32, 1.0e-01:0>>
}

// CHECK:      glowll.fully_connected %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {wide_accumulators} : memref<1x2x!quant.uniform<i16:f32, 1.0e-01:0>>, memref<1x4x!quant.uniform<i16:f32, 1.0e-04:0>>, memref<2x4x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 1.0e-06:0>>
// CHECK:      glowll.fully_connected %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<1x2x!quant.uniform<i16:f32, 1.0e-01:0>>
