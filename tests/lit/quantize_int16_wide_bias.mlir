// RUN: glow-opt %s -p 'glow-quantize{profile="%S/inputs/quantize_int16_wide_bias_profile.yaml" precision="Int16"},glow-optimize-quantization' | filecheck %s
// RUN: glow-opt %s -p 'glow-quantize{profile="%S/inputs/quantize_int16_wide_bias_profile.yaml" precision="Int16"},glow-optimize-quantization,lower-glow-to-glowll' | filecheck %s --check-prefix=LOWERED
// An int16 layer's bias is in accumulator units, input x weight scale: over an input range
// of +-0.001 (scale 3.05e-8) and weights of scale 7.8e-3, a bias of 40 is 1.67e11 of them,
// beyond int32. It is kept exactly in int64 (TFLite's 16x8 scheme, CMSIS-NN's s16 kernels:
// `quantize._quantized_bias`), not saturated to 2^31 - 1 as before. Lowered, the layer sums
// in int64 (`wide_accumulators`).

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x4xf32>
  %w = glow.constant "w" {value = dense<[[1.0, -1.0], [0.5, 0.25], [-0.25, 0.0], [0.75, 1.0]]> : tensor<4x2xf32>} : tensor<4x2xf32>
  %b = glow.constant "b" {value = dense<[40.0, -25.0]> : tensor<2xf32>} : tensor<2xf32>
  %fc = glow.fully_connected %x, %w, %b {name = "fc"} : (tensor<1x4xf32>, tensor<4x2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
  glow.save %fc as "y" : tensor<1x2xf32>
}

// CHECK:      %[[B:.*]] = glow.constant "b" {value = dense<[167111671808, -104444796928]> : tensor<2xi64>} : tensor<2x!quant.uniform<i64:f32, 2.393609e-10:0>>
// CHECK-NEXT: %fc = glow.fully_connected %{{.*}}, %{{.*}}, %[[B]] {name = "fc"} : {{.*}} -> tensor<1x2x!quant.uniform<i16:f32, {{.*}}:0>>

// LOWERED:    glowll.fully_connected %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {name = "fc", wide_accumulators} : {{.*}}, memref<2x!quant.uniform<i64:f32, 2.393609e-10:0>>
