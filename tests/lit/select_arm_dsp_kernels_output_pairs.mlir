// RUN: glow-opt %s -p glowll-select-arm-dsp-kernels | filecheck %s
// RUN: glow-opt %s -p glowll-select-arm-dsp-kernels | glow-opt | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{filter-words=int8}' | filecheck %s --check-prefix=WORDS
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{loop-pairs=2}' | filecheck %s --check-prefix=SIZE
// Output pair words (`arm_dsp.layout.output_pair_filter_words`): a blocked pointwise product (here
// 80 input channels, 40 pairs) holds its int8 filter as words of two output channels whose
// halves read 256 w1 + w0 (the values: tests/unit/test_arm_dsp_output_pairs.py), in the model's
// int8 bytes, marked `output_pairs`; printed and parsed back. Levels of -128 cannot
// borrow (256 x -128 - 128 is not an int16): that filter keeps its int16 pairs. The int8-words hook
// and a size-first build (`loop-pairs`, no blocked product) take none.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x80x1x5x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x4x1x5x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w = glowll.weight "w" {value = dense<-3> : tensor<4x80x1x1xi8>} : memref<4x80x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>
  %b = glowll.weight "b" {value = dense<[10, -20, 30, -40]> : tensor<4xi32>} : memref<4x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x4x1x5x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x80x1x5x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<4x80x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<4x!quant.uniform<i32:f32, 5.0e-04:0>>
  %z = glowll.placeholder output "z" : memref<1x4x1x5x!quant.uniform<i8:f32, 1.0e-01:0>>
  %v = glowll.weight "v" {value = dense<-128> : tensor<4x80x1x1xi8>} : memref<4x80x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>
  glowll.convolution %z, %x, %v, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x4x1x5x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x80x1x5x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<4x80x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<4x!quant.uniform<i32:f32, 5.0e-04:0>>
}

// CHECK:      glowll.weight "w_arm_dsp" {{.*}} memref<1x40x2x2x2x!quant.uniform<i8:f32, 1.0e-02:0>>
// CHECK:      glowll.convolution %y, %x
// CHECK-SAME: microkernel = #glowll.microkernel<"arm-dsp", {blocked_pixels, weights_ahead, output_pairs}>
// CHECK:      glowll.weight "v_arm_dsp" {{.*}} memref<1x40x2x2x2x!quant.uniform<i16:f32, 1.0e-02:0>>
// CHECK:      glowll.convolution %z, %x
// CHECK-NOT:  output_pairs
// CHECK-SAME: microkernel = #glowll.microkernel<"arm-dsp", {blocked_pixels, weights_ahead}>

// WORDS-NOT:  output_pairs
// SIZE-NOT:   output_pairs
