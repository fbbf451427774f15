// RUN: glow-opt %s -p glowll-select-x86-vnni-kernels | filecheck %s
// (The packed filters are elided in the printout: tests/unit/test_x86_vnni.py checks their layout.)
// AVX-512 VNNI kernels: the int8 1x3 convolution (2 output channels, 1 input channel) gets
// microkernel "x86-vnni", its filter packed as [O / 16, C / 4, KH, KW, 16, 4] int8 (per tap,
// 16 output channels of 4 input channels each), but of one input channel its 3 kernel
// columns take a word's bytes as channels would: [O / 16, KW / 4, KH, 1, 16, 4], the levels
// as they are (weight zero point -1 kept in the type) and zeros past the 2 channels and the
// 3 columns. The kernel
// multiplies unsigned input bytes u = x + 128, so the bias becomes
// bias - U * sum w + w_offset * U * K with U = 3 + 128 = 131 and K = 3 taps:
// 10 - 131 * 6 - 131 * 3 = -1169 and -20 - 131 * 3 - 131 * 3 = -806.
// The depthwise convolution keeps the generic kernel. The FullyConnected (2 outputs of 3
// inputs) is packed as a 1x1 filter [1, 1, 1, 1, 16, 4], its bias folded the same way with
// U = 131, w_offset 0: 100 - 131 * (1 - 2 + 3) = -162, -100 - 131 * (5 + 6 - 7) = -624. Both
// have narrow accumulators (|bias| + 131 * sum |w - w_offset| doubled stays in int32:
// `narrow_requantization`, the lanes' shorter output step).

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x1x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w = glowll.weight "w" {value = dense<[[[[1, 2, 3]]], [[[-1, 0, 4]]]]> : tensor<2x1x1x3xi8>} : memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %b = glowll.weight "b" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x1x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %x2 = glowll.placeholder input "x2" : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %d = glowll.placeholder output "d" : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.convolution %d, %x2, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %v = glowll.placeholder input "v" : memref<1x3x!quant.uniform<i8:f32, 5.0e-02:3>>
  %f = glowll.placeholder output "f" : memref<1x2x!quant.uniform<i8:f32, 1.0e-01:0>>
  %fw = glowll.weight "fw" {value = dense<[[1, -2, 3], [5, 6, -7]]> : tensor<2x3xi8>} : memref<2x3x!quant.uniform<i8:f32, 1.0e-02:0>>
  %fb = glowll.weight "fb" {value = dense<[100, -100]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.fully_connected %f, %v, %fw, %fb : memref<1x2x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x3x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x3x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
}

// CHECK:      %[[W:.*]] = glowll.weight "w_vnni" elided : memref<1x1x1x1x16x4x!quant.uniform<i8:f32, 1.0e-02:-1>>
// CHECK-NEXT: %[[B:.*]] = glowll.weight "b_vnni" {value = dense<[-1169, -806]> : tensor<2xi32>}
// CHECK-NEXT: glowll.convolution %y, %x, %[[W]], %[[B]] {{{.*}}microkernel = #glowll.microkernel<"x86-vnni">, filter_shape = array<i64: 2, 1, 1, 3>}
// CHECK:      glowll.convolution %d, %x2, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} :
// CHECK:      %[[FW:.*]] = glowll.weight "fw_vnni" elided : memref<1x1x1x1x16x4x!quant.uniform<i8:f32, 1.0e-02:0>>
// CHECK-NEXT: %[[FB:.*]] = glowll.weight "fb_vnni" {value = dense<[-162, -624]> : tensor<2xi32>}
// CHECK-NEXT: glowll.fully_connected %f, %v, %[[FW]], %[[FB]] {narrow_requantization, microkernel = #glowll.microkernel<"x86-vnni">}
