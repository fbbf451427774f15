// RUN: glow-opt %s | filecheck %s --check-prefix=BEFORE
// RUN: glow-opt %s -p glow-fuse-conv-pool | filecheck %s
// RUN: glow-opt %s -p 'glow-fuse-conv-pool{widened-averages=false}' | filecheck %s --check-prefix=BEFORE
// An int8 average of a much finer profiled range is taken on its input widened exactly to
// int16 (`quantize._averaged`: scale / 256, offset x 256, each level x 256), then rescaled
// once. After a convolution, the widening and the pool fuse into it: `pool_widening = 8`,
// the pooled int16 result; the convolution still requantizes to its int8 levels
// (0.04:-128), its kernel sums them and averages 256 x the sum, the int16 pool's numbers.
// The rescale to int8 stays. A rescale that is not an exact widening (scale / 128 in
// int16) stays apart, and so does its pool. A size-first build (widened-averages=false)
// leaves the widening and its pool apart (the convolution keeps the kernel it shares).

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x2x4x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w = glow.constant "w" {value = dense<1> : tensor<3x2x1x1xi8>} : tensor<3x2x1x1x!quant.uniform<i8:f32, 2.0e-02:0>>
  %b = glow.constant "b" {value = dense<0> : tensor<3xi32>} : tensor<3x!quant.uniform<i32:f32, 2.0e-03:0>>
  %c = glow.convolution %x, %w, %b activation relu {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x4x4x!quant.uniform<i8:f32, 1.0e-01:0>>, tensor<3x2x1x1x!quant.uniform<i8:f32, 2.0e-02:0>>, tensor<3x!quant.uniform<i32:f32, 2.0e-03:0>>) -> tensor<1x3x4x4x!quant.uniform<i8:f32, 4.0e-02:-128>>
  %wide = glow.rescale_quantized %c : (tensor<1x3x4x4x!quant.uniform<i8:f32, 4.0e-02:-128>>) -> tensor<1x3x4x4x!quant.uniform<i16:f32, 1.5625e-04:-32768>>
  %m = glow.avg_pool %wide {kernel = array<i64: 4, 4>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x4x4x!quant.uniform<i16:f32, 1.5625e-04:-32768>>) -> tensor<1x3x1x1x!quant.uniform<i16:f32, 1.5625e-04:-32768>>
  %y = glow.rescale_quantized %m : (tensor<1x3x1x1x!quant.uniform<i16:f32, 1.5625e-04:-32768>>) -> tensor<1x3x1x1x!quant.uniform<i8:f32, 1.0e-02:-128>>
  glow.save %y as "y" : tensor<1x3x1x1x!quant.uniform<i8:f32, 1.0e-02:-128>>
  %c2 = glow.convolution %x, %w, %b activation relu {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x4x4x!quant.uniform<i8:f32, 1.0e-01:0>>, tensor<3x2x1x1x!quant.uniform<i8:f32, 2.0e-02:0>>, tensor<3x!quant.uniform<i32:f32, 2.0e-03:0>>) -> tensor<1x3x4x4x!quant.uniform<i8:f32, 4.0e-02:-128>>
  %half = glow.rescale_quantized %c2 : (tensor<1x3x4x4x!quant.uniform<i8:f32, 4.0e-02:-128>>) -> tensor<1x3x4x4x!quant.uniform<i16:f32, 3.125e-04:-16384>>
  %m2 = glow.avg_pool %half {kernel = array<i64: 4, 4>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x4x4x!quant.uniform<i16:f32, 3.125e-04:-16384>>) -> tensor<1x3x1x1x!quant.uniform<i16:f32, 3.125e-04:-16384>>
  glow.save %m2 as "z" : tensor<1x3x1x1x!quant.uniform<i16:f32, 3.125e-04:-16384>>
}

// BEFORE:      %c = glow.convolution %x, %w, %b activation relu {{.*}} -> tensor<1x3x4x4x!quant.uniform<i8:f32, 4.0e-02:-128>>
// BEFORE-NEXT: %wide = glow.rescale_quantized %c {{.*}} -> tensor<1x3x4x4x!quant.uniform<i16:f32, 1.5625e-04:-32768>>
// BEFORE-NEXT: %m = glow.avg_pool %wide {{.*}} -> tensor<1x3x1x1x!quant.uniform<i16:f32, 1.5625e-04:-32768>>
// BEFORE-NEXT: %y = glow.rescale_quantized %m

// CHECK:      %[[M:.*]] = glow.convolution %x, %w, %b activation relu pool avg {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, pool_kernel = array<i64: 4, 4>, pool_strides = array<i64: 1, 1>, pool_pads = array<i64: 0, 0, 0, 0>, pool_widening = 8 : i64} : {{.*}} -> tensor<1x3x1x1x!quant.uniform<i16:f32, 1.5625e-04:-32768>>
// CHECK-NEXT: %y = glow.rescale_quantized %[[M]] : (tensor<1x3x1x1x!quant.uniform<i16:f32, 1.5625e-04:-32768>>) -> tensor<1x3x1x1x!quant.uniform<i8:f32, 1.0e-02:-128>>
// CHECK-NEXT: glow.save %y as "y"
// CHECK-NEXT: %c2 = glow.convolution %x, %w, %b activation relu {{.*}} -> tensor<1x3x4x4x!quant.uniform<i8:f32, 4.0e-02:-128>>
// CHECK-NEXT: %half = glow.rescale_quantized %c2
// CHECK-NEXT: %m2 = glow.avg_pool %half
