// RUN: glow-opt %s -p glowll-fold-constant-channels | filecheck %s
// RUN: glow-opt %s -p glowll-fold-constant-channels | glow-opt | filecheck %s
// A dead output channel (filter scale 1e-8, a bias of 1e9 in its units: 0.5, level 5 of the
// output's 0.1) has one level, 5, for every input (its products move the accumulator by
// 131 x 16 at most, 1e-5 of a level): its weights become 0 and its bias the least that gives
// level 5, 9e8 (4.5 / 5e-9). The other channels, and a convolution with no such channel, stay.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x2x1x3x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x3x1x3x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w = glowll.weight "w" {value = dense<[[[[7]], [[-9]]], [[[7]], [[-9]]], [[[-5]], [[4]]]]> : tensor<3x2x1x1xi8>} : memref<3x2x1x1x!quant.uniform<i8:f32:0, {1.0e-02:0, 1.0e-08:0, 1.0e-02:0}>>
  %b = glowll.weight "b" {value = dense<[10, 1000000000, -40]> : tensor<3xi32>} : memref<3x!quant.uniform<i32:f32:0, {5.0e-04:0, 5.0e-10:0, 5.0e-04:0}>>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x3x1x3x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x1x3x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<3x2x1x1x!quant.uniform<i8:f32:0, {1.0e-02:0, 1.0e-08:0, 1.0e-02:0}>>, memref<3x!quant.uniform<i32:f32:0, {5.0e-04:0, 5.0e-10:0, 5.0e-04:0}>>
  %z = glowll.placeholder output "z" : memref<1x3x1x3x!quant.uniform<i8:f32, 1.0e-01:0>>
  %v = glowll.weight "v" {value = dense<[[[[7]], [[-9]]], [[[3]], [[2]]], [[[-5]], [[4]]]]> : tensor<3x2x1x1xi8>} : memref<3x2x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>
  %c = glowll.weight "c" {value = dense<[10, 20, -40]> : tensor<3xi32>} : memref<3x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %z, %x, %v, %c {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x3x1x3x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x1x3x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<3x2x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<3x!quant.uniform<i32:f32, 5.0e-04:0>>
}

// CHECK:      glowll.weight "w" {value = dense<{{\[\[\[\[}}7]], {{\[\[}}-9]]], {{\[\[\[}}0]], {{\[\[}}0]]], {{\[\[\[}}-5]], {{\[\[}}4]]]]>
// CHECK-NEXT: glowll.weight "b" {value = dense<[10, 900000005, -40]>
// CHECK:      glowll.weight "v" {value = dense<{{\[\[\[\[}}7]], {{\[\[}}-9]]], {{\[\[\[}}3]], {{\[\[}}2]]], {{\[\[\[}}-5]], {{\[\[}}4]]]]>
// CHECK-NEXT: glowll.weight "c" {value = dense<[10, 20, -40]>
