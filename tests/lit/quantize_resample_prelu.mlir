// RUN: glow-opt %s -p 'glow-quantize{profile="%S/inputs/resample_prelu_profile.yaml"},glow-optimize-quantization' | filecheck %s
// RUN: glow-opt %s -p 'glow-quantize{profile="%S/inputs/resample_prelu_profile.yaml" keep_original_precision_for_nodes="ResizeBilinear"}' | filecheck %s --check-prefix=KEEP
// LeakyRelu and PRelu quantize as themselves (int8 kernels with one multiplier per sign of
// x); the PRelu slope is a constant with its own int8 type. A Resize's axes (glow.resample)
// take their weights as Q1.14 int16 (1.0 = 16384); the bilinear axis before the Resize's
// last has no profile entry and keeps its input's parameters with 8 more fractional bits
// (int16, scale / 256, offset x 256); the last one has its profiled type.

glow.function @net {
  %x = glow.placeholder "x" : tensor<2x4xf32>
  %l = glow.leaky_relu %x {name = "lr", alpha = 0.25 : f32} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %k = glow.constant "k" {value = dense<[0.5, -0.25, 0.125, 1.0]> : tensor<4xf32>} : tensor<4xf32>
  %p = glow.prelu %l, %k {name = "pr"} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %t1 = glow.constant "t1" {value = dense<[[0, 1], [0, 1], [1, 2], [1, 2], [2, 3], [2, 3], [3, 3], [3, 3]]> : tensor<8x2xi32>} : tensor<8x2xi32>
  %w1 = glow.constant "w1" {value = dense<[[1.0, 0.0], [0.75, 0.25], [0.25, 0.75], [0.75, 0.25], [0.25, 0.75], [0.75, 0.25], [0.25, 0.75], [1.0, 0.0]]> : tensor<8x2xf32>} : tensor<8x2xf32>
  %a = glow.resample %p, %t1, %w1 {axis = 1 : i64} : (tensor<2x4xf32>, tensor<8x2xi32>, tensor<8x2xf32>) -> tensor<2x8xf32>
  %t0 = glow.constant "t0" {value = dense<[[0], [0], [1], [1]]> : tensor<4x1xi32>} : tensor<4x1xi32>
  %w0 = glow.constant "w0" {value = dense<1.0> : tensor<4x1xf32>} : tensor<4x1xf32>
  %r = glow.resample %a, %t0, %w0 {name = "rs", axis = 0 : i64} : (tensor<2x8xf32>, tensor<4x1xi32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  glow.save %r as "y" : tensor<4x8xf32>
}

// CHECK:      %[[X:.*]] = glow.quantize %x : (tensor<2x4xf32>) -> tensor<2x4x!quant.uniform<i8:f32, 7.843138e-03:0>>
// CHECK-NEXT: %l = glow.leaky_relu %[[X]] {name = "lr", alpha = 2.500000e-01 : f32} : {{.*}} -> tensor<2x4x!quant.uniform<i8:f32, 4.901961e-03:-77>>
// CHECK-NEXT: %[[K:.*]] = glow.constant "k" {value = dense<[25, -128, -52, 127]> : tensor<4xi8>} : tensor<4x!quant.uniform<i8:f32, 4.901961e-03:-77>>
// CHECK-NEXT: %p = glow.prelu %l, %[[K]] {name = "pr"} : {{.*}} -> tensor<2x4x!quant.uniform<i8:f32, 5.882353e-03:-43>>
// CHECK:      %[[W1:.*]] = glow.constant "w1" {value = dense<{{\[\[}}16384, 0], [12288, 4096], {{.*}} : tensor<8x2xi16>} : tensor<8x2x!quant.uniform<i16:f32, 6.1035156e-05:0>>
// CHECK-NEXT: %a = glow.resample %p, %t1, %[[W1]] {axis = 1 : i64} : {{.*}} -> tensor<2x8x!quant.uniform<i16:f32, 2.2977942e-05:-11008>>
// CHECK:      %r = glow.resample %a, %t0, %{{.*}} {name = "rs", axis = 0 : i64} : {{.*}} -> tensor<4x8x!quant.uniform<i8:f32, 5.882353e-03:-43>>
// CHECK-NEXT: %[[Y:.*]] = glow.dequantize %r
// CHECK-NEXT: glow.save %[[Y]] as "y"

// KEEP:      %[[P:.*]] = glow.dequantize %p
// KEEP:      glow.resample %[[P]], %t1, %w1 {{.*}} : (tensor<2x4xf32>, tensor<8x2xi32>, tensor<8x2xf32>) -> tensor<2x8xf32>
// KEEP:      glow.resample %a, %t0, %w0 {{.*}} : (tensor<2x8xf32>, tensor<4x1xi32>, tensor<4x1xf32>) -> tensor<4x8xf32>
