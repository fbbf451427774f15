// RUN: glow-opt %s -p 'glowll-select-x86-vnni-kernels{depthwise=true}' | filecheck %s
// A "same"-padded 3x3 depthwise of 2 channels on a 2 x 16 plane takes x86-vnni-depthwise's short
// form. Its output rows fall into two classes by their kernel rows in the padding: row 0 reads
// kernel row 0 from above the input, row 1 kernel row 2 from below it. Each class's sums start
// from a row of the bias of its own (bias_rows = 2): the folded bias, bias - U * sum s, plus U
// times the sum of that class's padded kernel row, made at compile time (U = 3 + 128 = 131,
// s = w - (-1)). Channel 0's s rows sum to 6, 15, 24 (45 in all): 10 - 131 * 45 = -5885,
// class 0 -5885 + 131 * 6 = -5099, class 1 -5885 + 131 * 24 = -2741. Channel 1's sum to 0, 3,
// 6 (9): -20 - 131 * 9 = -1199, then -1199 + 0 and -1199 + 131 * 6 = -413.
// The same layer on one unpadded row has no such classes: one start a channel.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x2x2x16x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x2x2x16x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w = glowll.weight "w" {value = dense<[[[[0, 1, 2], [3, 4, 5], [6, 7, 8]]], [[[-1, -1, -1], [0, 0, 0], [1, 1, 1]]]]> : tensor<2x1x3x3xi8>} : memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %b = glowll.weight "b" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x2x16x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x2x16x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %x1 = glowll.placeholder input "x1" : memref<1x2x3x16x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y1 = glowll.placeholder output "y1" : memref<1x2x1x14x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w1 = glowll.weight "w1" {value = dense<[[[[0, 1, 2], [3, 4, 5], [6, 7, 8]]], [[[-1, -1, -1], [0, 0, 0], [1, 1, 1]]]]> : tensor<2x1x3x3xi8>} : memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %b1 = glowll.weight "b1" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %y1, %x1, %w1, %b1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x1x14x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x3x16x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
}

// CHECK:      %[[B:.*]] = glowll.weight "b_vnni" {value = dense<{{\[\[}}-5099, -1199], [-2741, -413]]> : tensor<2x2xi32>} : memref<2x2x!quant.uniform<i32:f32, 5.0e-04:0>>
// CHECK-NEXT: glowll.convolution %y, %x, %w, %[[B]] {{{.*}}microkernel = #glowll.microkernel<"x86-vnni-depthwise", {bias_rows = 2 : i64}>}
// CHECK:      %[[B1:.*]] = glowll.weight "b1_vnni" {value = dense<[-5885, -1199]> : tensor<2xi32>}
// CHECK-NEXT: glowll.convolution %y1, %x1, %w1, %[[B1]] {{{.*}}microkernel = #glowll.microkernel<"x86-vnni-depthwise">}
