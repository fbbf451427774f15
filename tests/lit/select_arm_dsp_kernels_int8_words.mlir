// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{filter-words=int8}' | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{filter-words=int8}' | glow-opt | filecheck %s
// RUN: glow-opt %s -p glowll-select-arm-dsp-kernels | filecheck %s --check-prefix=PAIRS
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{filter-words=int8},glowll-allocate-memory,lower-glowll-to-llvm{pointer-width=32}' | filecheck %s --check-prefix=LLVM
// Int8 filter words (`arm_dsp.layout.int8_filter_words`): the 1x1 convolution's filter
// w[o][c] = 10 o + c (4 x 4, zero point 0) packed for two blocks of two output channels side
// by side, per input channel pair and block one word (channel 0's low tap, channel 1's low
// tap, channel 0's high tap, channel 1's high tap), 1x the int8 bytes; without the hook the
// same layout holds int16 pairs, 2x, its levels doubled (`doubled_accumulators`), the doubled
// biases in front (`biases_in_filter`). A filter of
// zero point 100 leaves int8 less it (-128 - 100): its int8 words hold the model's levels and
// keep the zero point in their type (`uncentred_words`), and the gathered product takes 100
// times each gathered pixel's sum (one SMLAD by the pair (1, 1), 65537, a pair) off its
// totals; without the hook it keeps int16 pairs. The kernel widens each word with two SXTB16
// (the second after a rotation by 8: `llvm.fshr`).

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x4x1x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x4x1x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w = glowll.weight "w" {value = dense<[[[[0]], [[1]], [[2]], [[3]]], [[[10]], [[11]], [[12]], [[13]]], [[[20]], [[21]], [[22]], [[23]]], [[[30]], [[31]], [[32]], [[33]]]]> : tensor<4x4x1x1xi8>} : memref<4x4x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>
  %b = glowll.weight "b" {value = dense<[10, -20, 30, -40]> : tensor<4xi32>} : memref<4x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x4x1x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x4x1x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<4x4x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<4x!quant.uniform<i32:f32, 5.0e-04:0>>
  %z = glowll.placeholder output "z" : memref<1x4x1x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  %v = glowll.weight "v" {value = dense<-128> : tensor<4x4x1x1xi8>} : memref<4x4x1x1x!quant.uniform<i8:f32, 1.0e-02:100>>
  %c = glowll.weight "c" {value = dense<[10, -20, 30, -40]> : tensor<4xi32>} : memref<4x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %z, %x, %v, %c {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x4x1x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x4x1x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<4x4x1x1x!quant.uniform<i8:f32, 1.0e-02:100>>, memref<4x!quant.uniform<i32:f32, 5.0e-04:0>>
}

// CHECK:      glowll.weight "w_arm_dsp" {value = dense<{{\[\[\[\[\[}}0, 10], [1, 11]], {{\[\[}}20, 30], [21, 31]]], {{\[\[\[}}2, 12], [3, 13]], {{\[\[}}22, 32], [23, 33]]]]]> : tensor<1x2x2x2x2xi8>} : memref<1x2x2x2x2x!quant.uniform<i8:f32, 1.0e-02:0>>
// CHECK:      glowll.convolution %y, %x
// CHECK-NOT:  doubled_accumulators
// CHECK-SAME: microkernel = #glowll.microkernel<"arm-dsp">
// CHECK:      glowll.weight "v_arm_dsp" {value = dense<-128> : tensor<1x2x2x2x2xi8>} : memref<1x2x2x2x2x!quant.uniform<i8:f32, 1.0e-02:100>>
// CHECK:      glowll.convolution %z, %x
// CHECK-SAME: microkernel = #glowll.microkernel<"arm-dsp">

// PAIRS:      glowll.weight "w_arm_dsp" {{.*}} : memref<1x3x2x2x2x!quant.uniform<i16
// PAIRS:      glowll.convolution %y, %x, {{.*}} doubled_accumulators
// PAIRS:      glowll.weight "v_arm_dsp" {{.*}} : memref<1x3x2x2x2x!quant.uniform<i16

// LLVM-LABEL: llvm.func internal @net_0_convolution
// LLVM:       llvm.call_intrinsic "llvm.fshr.i32"
// LLVM:       llvm.call_intrinsic "llvm.arm.sxtb16"

// LLVM-LABEL: llvm.func internal @net_1_convolution
// LLVM:       %[[ONES:.*]] = llvm.mlir.constant(65537 : i32) : i32
// LLVM:       llvm.call_intrinsic "llvm.arm.smlad"(%{{.*}}, %[[ONES]], %{{.*}})
// LLVM:       llvm.call_intrinsic "llvm.arm.sxtb16"
