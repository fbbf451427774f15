// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16}' | glow-opt | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16 fused_multiply_add=true}' | glow-opt | filecheck %s --check-prefix=FMA
// The host int8 kernels' float output step (`int8_kernel_selection.mark_float_step`): a
// per-tensor int8 layer given to a host vector kernel is marked `float_step = array<f32:
// scale, offset, negative_offset>` where `quantization.float_steps.float_step` proves one on
// its accumulator bounds: the 1x1 (vector-pointwise-int8; doubled_accumulators: the kernel
// halves the scale) has the real multiplier 0.05 x 0.01 / 0.1 = 0.005 and the output zero
// point 5: rint(acc x 0.005 + 5.0025) (acc >= 0), rint(acc x 0.005 + 4.9975) (acc < 0), the
// offsets tilting each side's ties away from zero as TFLite's rounding does. The property
// prints as it parses (the second glow-opt reads it back). The per-channel depthwise layer
// keeps the integer step (no per-channel float steps). With `fma` (a target with fused
// multiply-adds) the step is the fused one, rint(fma(acc, 0.005, offset)), a fourth number 1
// (`FloatStep.fused`).

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x3x6x6x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x2x6x6x!quant.uniform<i8:f32, 1.0e-01:5>>
  %w = glowll.weight "w" {value = dense<[[[[1]], [[2]], [[3]]], [[[-1]], [[0]], [[1]]]]> : tensor<2x3x1x1xi8>} : memref<2x3x1x1x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %b = glowll.weight "b" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : memref<1x2x6x6x!quant.uniform<i8:f32, 1.0e-01:5>>, memref<1x3x6x6x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x3x1x1x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %x2 = glowll.placeholder input "x2" : memref<1x2x9x40x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y2 = glowll.placeholder output "y2" : memref<1x2x5x40x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w2 = glowll.weight "w2" {value = dense<[[[[1, 2, 3], [4, 5, 6], [7, 8, 9]]], [[[-1, 0, 1], [2, 3, 4], [5, 6, 7]]]]> : tensor<2x1x3x3xi8>} : memref<2x1x3x3x!quant.uniform<i8:f32:0, {1.0e-02:0, 2.0e-02:0}>>
  %b2 = glowll.weight "b2" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32:0, {5.0e-04:0, 1.0e-03:0}>>
  glowll.convolution %y2, %x2, %w2, %b2 {strides = array<i64: 2, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x5x40x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x9x40x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x3x3x!quant.uniform<i8:f32:0, {1.0e-02:0, 2.0e-02:0}>>, memref<2x!quant.uniform<i32:f32:0, {5.0e-04:0, 1.0e-03:0}>>
}

// CHECK:      glowll.convolution %y, %x, {{.*}}float_step = array<f32: 5.000000e-03, 5.002500e+00, 4.997500e+00>{{.*}}doubled_accumulators, microkernel = #glowll.microkernel<"vector-pointwise-int8">
// CHECK:      glowll.convolution %y2, %x2, {{.*}}group = 2 : i64, narrow_requantization, doubled_accumulators, microkernel = #glowll.microkernel<"vector-depthwise-int8">

// FMA:        glowll.convolution %y, %x, {{.*}}float_step = array<f32: 5.000000e-03, 5.002500e+00, 4.997500e+00, 1.000000e+00>{{.*}}doubled_accumulators, microkernel = #glowll.microkernel<"vector-pointwise-int8">
