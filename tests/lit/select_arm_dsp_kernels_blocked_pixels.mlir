// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{filter-words=int8}' | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{filter-words=int8}' | glow-opt | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{filter-words=int8 loop-pairs=2}' | filecheck %s --check-prefix=SIZE
// RUN: glow-opt %s -p glowll-select-arm-dsp-kernels | filecheck %s --check-prefix=PAIRS
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{filter-words=int8 single-issue=true}' | filecheck %s --check-prefix=SINGLE
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{filter-words=int8},glowll-allocate-memory,lower-glowll-to-llvm{pointer-width=32}' | filecheck %s --check-prefix=LLVM
// The blocked gathered product (`arm_dsp.gathered_product.BLOCKED_PIXELS`): speed first, a
// gathered product (here on int8 filter words) of more pairs than `UNROLLED_PAIRS` (32) is marked
// `blocked_pixels`: the 1x1 convolution of 80 input channels (40 pairs) and the 3x3 one of 17
// (77 tap pairs; of an even number of channels the band windows take it instead,
// select_arm_dsp_kernels_band_windows.mlir), printed and parsed back. Its kernel multiplies each run of four pixels by a
// block of two output channels: the 40 pairs straight (at most `BLOCKED_STRAIGHT_PAIRS`, 64: no
// loop), the 77 in a do-while loop over the pairs (8 a step), ended by its
// gathered words' pointer (a `ptrtoint` compared with the end). Int16 pairs (the default
// without the hook) take it too; a size-first build (`loop-pairs`) keeps the loop of two pixels.
// On a dual-issue core (the default) each is marked `weights_ahead` too (each pair's weight words
// loaded during the pair before, `gathered_product.WEIGHTS_AHEAD`); on a single-issue one not.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x80x1x5x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x4x1x5x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w = glowll.weight "w" {value = dense<1> : tensor<4x80x1x1xi8>} : memref<4x80x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>
  %b = glowll.weight "b" {value = dense<[10, -20, 30, -40]> : tensor<4xi32>} : memref<4x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x4x1x5x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x80x1x5x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<4x80x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<4x!quant.uniform<i32:f32, 5.0e-04:0>>
  %d = glowll.placeholder input "d" : memref<1x17x4x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %e = glowll.placeholder output "e" : memref<1x2x4x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  %v = glowll.weight "v" {value = dense<2> : tensor<2x17x3x3xi8>} : memref<2x17x3x3x!quant.uniform<i8:f32, 1.0e-02:0>>
  %c = glowll.weight "c" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %e, %d, %v, %c {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : memref<1x2x4x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x17x4x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x17x3x3x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
}

// CHECK:      glowll.convolution %y, %x
// CHECK-SAME: microkernel = #glowll.microkernel<"arm-dsp", {blocked_pixels, weights_ahead}>
// CHECK:      glowll.convolution %e, %d
// CHECK-SAME: microkernel = #glowll.microkernel<"arm-dsp", {{{.*}}blocked_pixels, weights_ahead{{.*}}}>

// SINGLE:      glowll.convolution %y, %x
// SINGLE-SAME: microkernel = #glowll.microkernel<"arm-dsp", {blocked_pixels}>
// SINGLE:      glowll.convolution %e, %d
// SINGLE-NOT:  weights_ahead
// SINGLE-SAME: blocked_pixels

// SIZE:       glowll.convolution %y, %x
// SIZE-NOT:   blocked_pixels
// SIZE-SAME:  microkernel = #glowll.microkernel<"arm-dsp", {loop_pairs = 2 : i64}>
// SIZE:       glowll.convolution %e, %d
// SIZE-NOT:   blocked_pixels
// SIZE-SAME:  loop_pairs = 2 : i64

// PAIRS:      glowll.convolution %y, %x
// PAIRS-SAME: blocked_pixels
// PAIRS:      glowll.convolution %e, %d
// PAIRS-SAME: blocked_pixels

// LLVM:       llvm.func internal @net_0_convolution
// LLVM-NOT:   llvm.ptrtoint
// LLVM:       llvm.func internal @net_1_convolution
// LLVM:       llvm.ptrtoint
// LLVM:       llvm.icmp "ne"
