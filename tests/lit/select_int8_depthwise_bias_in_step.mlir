// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16 fused_multiply_add=true}' | glow-opt | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16}' | filecheck %s --check-prefix=NOFMA
// With fused multiply-adds, a per-tensor int8 depthwise on the vector-depthwise-int8 tiles
// (here PP-OCR's 3x3 of stride (2, 1) on 9x40) under a relu at or above its output zero
// point takes its bias into the fused float step (`select_int8_pointwise.fuse_bias_into_step`,
// as the 1x1s do): one single per channel (`float_steps.fused_bias_offsets`, proved on every
// accumulator the layer reaches) replaces the bias, its bits as int32 (the weight "b_step"),
// and the op is marked `bias_in_step` (printed and read back: the second glow-opt), so that
// the kernel's sums start at 0 (`HostInt8Columns.start`). Without a relu (%y2: both signs'
// levels count, no one single) or without FMA, the bias stays as it is.
// tests/unit/test_int8_depthwise.py checks the outputs bit for bit.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x2x9x40x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x2x5x40x!quant.uniform<i8:f32, 1.0e-01:-5>>
  %w = glowll.weight "w" {value = dense<[[[[9, -2, 3], [4, -5, 6], [7, 8, -9]]], [[[-1, 0, 1], [2, -3, 4], [5, 6, -7]]]]> : tensor<2x1x3x3xi8>} : memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:0>>
  %b = glowll.weight "b" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %y, %x, %w, %b activation relu {strides = array<i64: 2, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x5x40x!quant.uniform<i8:f32, 1.0e-01:-5>>, memref<1x2x9x40x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %y2 = glowll.placeholder output "y2" : memref<1x2x5x40x!quant.uniform<i8:f32, 1.0e-01:-5>>
  glowll.convolution %y2, %x, %w, %b {strides = array<i64: 2, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x5x40x!quant.uniform<i8:f32, 1.0e-01:-5>>, memref<1x2x9x40x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
}

// CHECK:      %[[S:.*]] = glowll.weight "b_step" {value = dense<[-1063366165, -1063051592]> : tensor<2xi32>}
// CHECK:      glowll.convolution %y, %x, %{{.*}}, %[[S]] activation relu {{{.*}}float_step = array<f32: 5.000000e-03, -4.99749947, -5.00250053, 1.000000e+00>, bias_in_step, doubled_accumulators, microkernel = #glowll.microkernel<"vector-depthwise-int8">
// CHECK:      glowll.convolution %y2, %x, %{{.*}}, %b {{{.*}}float_step = {{.*}}, doubled_accumulators, microkernel = #glowll.microkernel<"vector-depthwise-int8">
// CHECK-NOT:  bias_in_step

// NOFMA-NOT:  bias_in_step
// NOFMA:      glowll.convolution %y, %x, %{{.*}}, %b activation relu
// NOFMA:      glowll.convolution %y2, %x, %{{.*}}, %b {
