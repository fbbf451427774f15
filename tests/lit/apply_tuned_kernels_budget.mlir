// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{flash-size=49352}' | filecheck %s
// RUN: sed 's/, tuned_kernel = #glowll.tuned_kernel<"arm-dsp", [0-9]*, 180>//' %s | glow-opt -p 'glowll-select-arm-dsp-kernels{flash-size=49352}' | filecheck %s --check-prefix=ESTIMATED
// The flash budget with the autotuner's figures: two equal 1x3 convolutions, both measured
// fastest on "arm-dsp", and a -flash-size that leaves room beside the 48 KB of code for one
// filter as int16 pairs only (192 B of int8 constants, 8 B more); the other reads its filter
// as int8 words. The estimate ranks them equal and gives the pairs to the first; the measured
// savings (180 - 150 = 30 cycles, 180 - 60 = 120) give them to the second, which saves more
// per extra byte.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x1x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w = glowll.weight "w" {value = dense<[[[[1, 2, 3]]], [[[-1, 0, 4]]]]> : tensor<2x1x1x3xi8>} : memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %b = glowll.weight "b" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, tuned_kernel = #glowll.tuned_kernel<"arm-dsp", 150, 180>} : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x1x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %z = glowll.placeholder output "z" : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w2 = glowll.weight "w2" {value = dense<[[[[3, 2, 1]]], [[[4, 0, -1]]]]> : tensor<2x1x1x3xi8>} : memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
  glowll.convolution %z, %x, %w2, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, tuned_kernel = #glowll.tuned_kernel<"arm-dsp", 60, 180>} : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x1x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
}

// CHECK: glowll.weight "w_arm_dsp" {{.*}} : tensor<1x2x1x2x2xi8>
// CHECK: glowll.convolution %y, %x, %{{.*}}, %{{.*}} {
// CHECK-NOT: doubled_accumulators
// CHECK-SAME: microkernel = #glowll.microkernel<"arm-dsp">
// CHECK: glowll.weight "w2_arm_dsp" {{.*}} : tensor<1x3x1x2x2xi16>
// CHECK: glowll.convolution %z, %x, %{{.*}}, %{{.*}} {
// CHECK-SAME: doubled_accumulators

// ESTIMATED: glowll.weight "w_arm_dsp" {{.*}} : tensor<1x3x1x2x2xi16>
// ESTIMATED: glowll.convolution %y, %x, %{{.*}}, %{{.*}} {
// ESTIMATED-SAME: doubled_accumulators
// ESTIMATED: glowll.weight "w2_arm_dsp" {{.*}} : tensor<1x2x1x2x2xi8>
// ESTIMATED: glowll.convolution %z, %x, %{{.*}}, %{{.*}} {
// ESTIMATED-NOT: doubled_accumulators
// ESTIMATED-SAME: microkernel = #glowll.microkernel<"arm-dsp">
