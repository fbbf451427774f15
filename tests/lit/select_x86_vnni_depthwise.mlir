// RUN: glow-opt %s -p 'glowll-select-x86-vnni-kernels{depthwise=true}' | filecheck %s
// AVX-512 VNNI with VBMI: the int8 depthwise 1x3 convolution of 2 channels on a 2 x 4 plane
// gets microkernel "x86-vnni-depthwise": its filter stays as it is (the kernel makes each
// channel's words from its levels less the zero point -1 at run time: [2, 3, 4] and [0, 1, 5]),
// its bias becomes bias - U * sum (w - w_offset) with U = 3 + 128 = 131: 10 - 131 * 9 = -1169
// and -20 - 131 * 6 = -806; its accumulators are narrow (|bias| + 131 * 9 < 2^30) and its
// output step has a proved float form (the pass's default: unfused, scale 0.05 * 0.01 / 0.1).
// The int8 Mul of a [1, 2, 2, 4] map by a [1, 2, 1, 1] gate (broadcast) gets "x86-avx512".

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w = glowll.weight "w" {value = dense<[[[[1, 2, 3]]], [[[-1, 0, 4]]]]> : tensor<2x1x1x3xi8>} : memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %b = glowll.weight "b" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %g = glowll.placeholder input "g" : memref<1x2x1x1x!quant.uniform<i8:f32, 4.0e-03:-128>>
  %m = glowll.placeholder output "m" : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  glowll.elementwise %m, %x, %g {kind = "mul"} : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x1x1x!quant.uniform<i8:f32, 4.0e-03:-128>>
}

// CHECK:      %w = glowll.weight "w" {value = dense<{{\[\[\[\[}}1, 2, 3]]], {{\[\[\[}}-1, 0, 4]]]]> : tensor<2x1x1x3xi8>} : memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
// CHECK-NEXT: %[[B:.*]] = glowll.weight "b_vnni" {value = dense<[-1169, -806]> : tensor<2xi32>}
// CHECK-NEXT: glowll.convolution %y, %x, %w, %[[B]] {{{.*}}group = 2 : i64, narrow_requantization, float_step = array<f32: 5.000000e-03, {{.*}}>, microkernel = #glowll.microkernel<"x86-vnni-depthwise">}
// CHECK:      glowll.elementwise %m, %x, %g {kind = "mul", microkernel = #glowll.microkernel<"x86-avx512">}
