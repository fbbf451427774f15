// RUN: glow-opt %s -p 'glow-choose-conv-pool-kernels{core=generic}' | filecheck %s
// RUN: glow-opt %s -p 'glow-choose-conv-pool-kernels{core=generic ram-size=4000}' | filecheck %s --check-prefix=RAM
// RUN: glow-opt %s -p glow-choose-conv-pool-kernels | filecheck %s --check-prefix=NONE
// -use-cmsis on a Cortex-M3 (core class "generic"): each fused convolution + pool CMSIS-NN
// could take goes to the side estimated faster. 16 -> 16 channels 3x3: the library's
// (split back into the convolution and its pool, which the library selection then takes);
// 3 -> 8 channels: ours, fused. Weights with a zero point: the library would not take it
// unfused either, nothing to choose. With ram-size=4000 the split would need more RAM than
// that (placeholders + activations: 4,480 B), so the fusion stays. Without a core class (not
// a Cortex-M) nothing changes.

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x16x8x8x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w = glow.constant "w" {value = dense<1> : tensor<16x16x3x3xi8>} : tensor<16x16x3x3x!quant.uniform<i8:f32, 2.0e-02:0>>
  %b = glow.constant "b" {value = dense<0> : tensor<16xi32>} : tensor<16x!quant.uniform<i32:f32, 2.0e-03:0>>
  %c = glow.convolution %x, %w, %b activation relu pool max {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, pool_kernel = array<i64: 2, 2>, pool_strides = array<i64: 2, 2>, pool_pads = array<i64: 0, 0, 0, 0>, name = "big"} : (tensor<1x16x8x8x!quant.uniform<i8:f32, 1.0e-01:0>>, tensor<16x16x3x3x!quant.uniform<i8:f32, 2.0e-02:0>>, tensor<16x!quant.uniform<i32:f32, 2.0e-03:0>>) -> tensor<1x16x4x4x!quant.uniform<i8:f32, 5.0e-02:-128>>
  glow.save %c as "y" : tensor<1x16x4x4x!quant.uniform<i8:f32, 5.0e-02:-128>>
  %x3 = glow.placeholder "x3" : tensor<1x3x8x8x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w3 = glow.constant "w3" {value = dense<1> : tensor<8x3x3x3xi8>} : tensor<8x3x3x3x!quant.uniform<i8:f32, 2.0e-02:0>>
  %b3 = glow.constant "b3" {value = dense<0> : tensor<8xi32>} : tensor<8x!quant.uniform<i32:f32, 2.0e-03:0>>
  %c3 = glow.convolution %x3, %w3, %b3 pool max {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, pool_kernel = array<i64: 2, 2>, pool_strides = array<i64: 2, 2>, pool_pads = array<i64: 0, 0, 0, 0>, name = "small"} : (tensor<1x3x8x8x!quant.uniform<i8:f32, 1.0e-01:0>>, tensor<8x3x3x3x!quant.uniform<i8:f32, 2.0e-02:0>>, tensor<8x!quant.uniform<i32:f32, 2.0e-03:0>>) -> tensor<1x8x4x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  glow.save %c3 as "z" : tensor<1x8x4x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %wa = glow.constant "wa" {value = dense<1> : tensor<16x16x3x3xi8>} : tensor<16x16x3x3x!quant.uniform<i8:f32, 2.0e-02:5>>
  %ca = glow.convolution %x, %wa, %b pool avg {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, pool_kernel = array<i64: 2, 2>, pool_strides = array<i64: 2, 2>, pool_pads = array<i64: 0, 0, 0, 0>, name = "asymmetric"} : (tensor<1x16x8x8x!quant.uniform<i8:f32, 1.0e-01:0>>, tensor<16x16x3x3x!quant.uniform<i8:f32, 2.0e-02:5>>, tensor<16x!quant.uniform<i32:f32, 2.0e-03:0>>) -> tensor<1x16x4x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  glow.save %ca as "a" : tensor<1x16x4x4x!quant.uniform<i8:f32, 5.0e-02:3>>
}

// CHECK:      %[[C:.*]] = glow.convolution %x, %w, %b activation relu {{{.*}}kernel_choice = "cmsis-nn: faster (est. cmsis-nn 804,416 vs ours 818,541 cycles)"{{.*}}} : {{.*}} -> tensor<1x16x8x8x!quant.uniform<i8:f32, 5.0e-02:-128>>
// CHECK-NEXT: %[[P:.*]] = glow.max_pool %[[C]] {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : {{.*}} -> tensor<1x16x4x4x!quant.uniform<i8:f32, 5.0e-02:-128>>
// CHECK-NEXT: glow.save %[[P]] as "y"
// CHECK:      %c3 = glow.convolution %x3, %w3, %b3 pool max {{{.*}}kernel_choice = "ours: faster (est. ours 86,747 vs cmsis-nn 146,210 cycles)"
// CHECK:      %ca = glow.convolution %x, %wa, %b pool avg
// CHECK-NOT:  kernel_choice

// RAM:      %c = glow.convolution %x, %w, %b activation relu pool max {{{.*}}kernel_choice = "ours: fusion needed to fit -ram-size 4000 (unfused: 4,480 B of RAM; est. cmsis-nn 804,416 vs ours 818,541 cycles)"

// NONE:     %c = glow.convolution %x, %w, %b activation relu pool max
// NONE-NOT: kernel_choice
