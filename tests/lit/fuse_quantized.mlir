// RUN: glow-opt %s -p glow-fuse-activations,glow-fuse-conv-pool | filecheck %s
// Fusion applies to quantized ops: the convolution then requantizes straight to the
// Relu's parameters, and a MaxPool (same type as its input) folds in; an AvgPool whose
// result has other parameters than the convolution's does not.

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x1x4x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w = glow.constant "w" {value = dense<1> : tensor<2x1x3x3xi8>} : tensor<2x1x3x3x!quant.uniform<i8:f32, 2.0e-02:0>>
  %b = glow.constant "b" {value = dense<0> : tensor<2xi32>} : tensor<2x!quant.uniform<i32:f32, 2.0e-03:0>>
  %c = glow.convolution %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4x!quant.uniform<i8:f32, 1.0e-01:0>>, tensor<2x1x3x3x!quant.uniform<i8:f32, 2.0e-02:0>>, tensor<2x!quant.uniform<i32:f32, 2.0e-03:0>>) -> tensor<1x2x4x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %r = glow.relu %c : (tensor<1x2x4x4x!quant.uniform<i8:f32, 5.0e-02:3>>) -> tensor<1x2x4x4x!quant.uniform<i8:f32, 4.0e-02:-128>>
  %p = glow.max_pool %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x2x4x4x!quant.uniform<i8:f32, 4.0e-02:-128>>) -> tensor<1x2x2x2x!quant.uniform<i8:f32, 4.0e-02:-128>>
  glow.save %p as "y" : tensor<1x2x2x2x!quant.uniform<i8:f32, 4.0e-02:-128>>
  %c2 = glow.convolution %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4x!quant.uniform<i8:f32, 1.0e-01:0>>, tensor<2x1x3x3x!quant.uniform<i8:f32, 2.0e-02:0>>, tensor<2x!quant.uniform<i32:f32, 2.0e-03:0>>) -> tensor<1x2x4x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %a = glow.avg_pool %c2 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x2x4x4x!quant.uniform<i8:f32, 5.0e-02:3>>) -> tensor<1x2x2x2x!quant.uniform<i8:f32, 6.0e-02:0>>
  glow.save %a as "z" : tensor<1x2x2x2x!quant.uniform<i8:f32, 6.0e-02:0>>
}

// CHECK:      %[[P:.*]] = glow.convolution %x, %w, %b activation relu pool max {{.*}} : {{.*}} -> tensor<1x2x2x2x!quant.uniform<i8:f32, 4.0e-02:-128>>
// CHECK-NEXT: glow.save %[[P]] as "y"
// CHECK-NEXT: %c2 = glow.convolution
// CHECK-NEXT: %a = glow.avg_pool %c2
