// RUN: glow-opt %s -p glowll-select-arm-dsp-kernels | filecheck %s
// RUN: glow-opt %s -p glowll-select-arm-dsp-kernels | glow-opt | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{single-issue=true}' | filecheck %s --check-prefix=SINGLE
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{loop-pairs=2}' | filecheck %s --check-prefix=SIZE
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels,glowll-allocate-memory,lower-glowll-to-llvm{pointer-width=32}' | filecheck %s --check-prefix=LLVM
// The band windows (`arm_dsp.banded_windows`): speed first, a 3x3 convolution of an even number
// of input channels (here 16, 72 tap pairs, padded, stride 1) and an unpadded 1x1 one of
// stride 2 are marked `band_windows` (0: loads as LLVM schedules them; 1 with `single-issue`,
// the M4's and M33's pipelines: each tap's loads side by side), printed and parsed back, their
// filters output pair words of the int8 weights' bytes ([blocks, channel pairs x taps,
// interleaved, 2, 2] of i8; the odd one's int16 pairs). Their kernel loops over the channel pairs (one a step for the
// 3x3, four for the 1x1), ended by the band's pointer. A 3x3 convolution of an odd number of
// channels keeps the blocked gathered product; a size-first build (`loop-pairs`) keeps its loops.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x16x4x5x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x4x4x5x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w = glowll.weight "w" {value = dense<2> : tensor<4x16x3x3xi8>} : memref<4x16x3x3x!quant.uniform<i8:f32, 1.0e-02:0>>
  %b = glowll.weight "b" {value = dense<[10, -20, 30, -40]> : tensor<4xi32>} : memref<4x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : memref<1x4x4x5x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x16x4x5x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<4x16x3x3x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<4x!quant.uniform<i32:f32, 5.0e-04:0>>
  %p = glowll.placeholder output "p" : memref<1x2x2x3x!quant.uniform<i8:f32, 1.0e-01:0>>
  %u = glowll.weight "u" {value = dense<-3> : tensor<2x16x1x1xi8>} : memref<2x16x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>
  %a = glowll.weight "a" {value = dense<[5, 7]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %p, %x, %u, %a {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x2x2x3x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x16x4x5x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x16x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %d = glowll.placeholder input "d" : memref<1x17x4x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %e = glowll.placeholder output "e" : memref<1x2x4x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  %v = glowll.weight "v" {value = dense<2> : tensor<2x17x3x3xi8>} : memref<2x17x3x3x!quant.uniform<i8:f32, 1.0e-02:0>>
  %c = glowll.weight "c" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %e, %d, %v, %c {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : memref<1x2x4x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x17x4x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x17x3x3x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
}

// CHECK:      glowll.weight "w_arm_dsp" {{.*}} : memref<1x72x2x2x2x!quant.uniform<i8:f32
// CHECK:      glowll.convolution %y, %x
// CHECK-SAME: microkernel = #glowll.microkernel<"arm-dsp", {loop_pairs = 2 : i64, band_windows = 0 : i64}>
// CHECK:      glowll.weight "u_arm_dsp" {{.*}} : memref<1x8x1x2x2x!quant.uniform<i8:f32
// CHECK:      glowll.convolution %p, %x
// CHECK-SAME: microkernel = #glowll.microkernel<"arm-dsp", {band_windows = 0 : i64}>
// CHECK:      glowll.convolution %e, %d
// CHECK-NOT:  band_windows
// CHECK-SAME: blocked_pixels

// SINGLE:     glowll.convolution %y, %x
// SINGLE-SAME: band_windows = 1 : i64
// SINGLE:     glowll.convolution %p, %x
// SINGLE-SAME: band_windows = 1 : i64

// SIZE:       glowll.convolution %y, %x
// SIZE-NOT:   band_windows
// SIZE:       glowll.convolution %p, %x
// SIZE-NOT:   band_windows
// SIZE:       glowll.convolution %e, %d

// LLVM:       llvm.func internal @net_0_convolution
// LLVM:       llvm.ptrtoint
// LLVM:       llvm.icmp "ne"
// LLVM:       llvm.func internal @net_1_convolution
// LLVM:       llvm.ptrtoint
// LLVM:       llvm.icmp "ne"
