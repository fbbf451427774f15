// RUN: glow-opt %s -p glowll-select-arm-dsp-kernels | filecheck %s --check-prefix=SPEED
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{loop-pairs=2}' | filecheck %s --check-prefix=SIZE
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{loop-pairs=2}' | glow-opt | filecheck %s --check-prefix=SIZE
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{loop-pairs=2}' | sed 's/loop_pairs = 2/loop_pairs = 0/' | glow-opt --verify-diagnostics | filecheck %s --check-prefix=ZERO
// RUN: glow-opt %s -p glowll-select-arm-dsp-kernels,glowll-allocate-memory,lower-glowll-to-llvm{pointer-width=32} | filecheck %s --check-prefix=STRAIGHT
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{loop-pairs=2},glowll-allocate-memory,lower-glowll-to-llvm{pointer-width=32}' | filecheck %s --check-prefix=STEP2
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{loop-pairs=1},glowll-allocate-memory,lower-glowll-to-llvm{pointer-width=32}' | filecheck %s --check-prefix=STEP1
// A size-first build tells the DSP kernels so: with `loop-pairs=N` (glow-compile gives
// arm_dsp.LOOP_PAIRS of the core at -Os/-Oz) each "arm-dsp" convolution gets `loop_pairs = N`,
// printed and parsed back; so does the FullyConnected, whose gathered row then takes one
// run of four inputs a loop step (not `fully_connected.FC_STEPS`: ad01 at -Os 6,292 -> 2,342
// bytes of code).
// The 32-channel 1x1 convolution (16 input channel pairs, two blocks of two output channels)
// multiplies its gathered pixels in three places (a run of four pixels: two pixel pairs; a
// tail of two: one). Speed first, 16 pairs are straight-line code (at most 16 for a pointwise
// layer on a dual-issue core, the default: `layout.straight_pairs`): 16 x 2 pixels x 2
// channels SMLADs in each place, 192, for each of the two blocks, which one step of the loop
// over blocks takes together (their weight words interleaved): 384. With loop_pairs = 2 each
// place is a loop of 8 steps of 2 x 2 x 2 SMLADs (24 in all); with loop_pairs = 1, of 16
// steps of 4 (12 in all).
// The depthwise 1x3 convolution (pads 1 left and right, rows of four outputs) runs on planes
// widened to int16 in either build, its filter packed alike: weight words (1, 2), (0, 1) and an
// unused one (`arm_dsp_layout.slot_word`), each less the zero point (-1), doubled; size first,
// it carries `loop_pairs` too. Speed first, its plane of three rows of one tile (four outputs,
// an SMLAD and a one-product multiply each) is unrolled whole (`arm_dsp.UNROLLED_PLANE_OUTPUTS`):
// 12 SMLADs; size first, the tile sits in the loop over rows: 4.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x32x1x2x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x4x1x2x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w = glowll.weight "w" {value = dense<1> : tensor<4x32x1x1xi8>} : memref<4x32x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>
  %b = glowll.weight "b" {value = dense<[10, -20, 30, -40]> : tensor<4xi32>} : memref<4x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x4x1x2x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x32x1x2x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<4x32x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<4x!quant.uniform<i32:f32, 5.0e-04:0>>
  %v = glowll.placeholder input "v" : memref<1x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %z = glowll.placeholder output "z" : memref<1x2x!quant.uniform<i8:f32, 1.0e-01:0>>
  %fw = glowll.weight "fw" {value = dense<[[1, -2, 3, -4], [5, 6, -7, 8]]> : tensor<2x4xi8>} : memref<2x4x!quant.uniform<i8:f32, 1.0e-02:0>>
  %fb = glowll.weight "fb" {value = dense<[100, -100]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.fully_connected %z, %v, %fw, %fb : memref<1x2x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x4x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %d = glowll.placeholder input "d" : memref<1x2x3x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %e = glowll.placeholder output "e" : memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  %wd = glowll.weight "wd" {value = dense<[[[[1, 2, 3]]], [[[-1, 0, 4]]]]> : tensor<2x1x1x3xi8>} : memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %bd = glowll.weight "bd" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %e, %d, %wd, %bd {strides = array<i64: 1, 1>, pads = array<i64: 0, 1, 0, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x3x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
}

// SPEED:     glowll.convolution
// SPEED-NOT: loop_pairs
// SPEED-SAME: microkernel = #glowll.microkernel<"arm-dsp", {biases_in_filter}>
// SPEED-NOT: loop_pairs

// SPEED:     glowll.weight "wd_arm_dsp" {value = dense<{{\[\[\[\[}}6, 8], [4, 6], [0, 0]]], {{\[\[\[}}2, 10], [0, 2], [0, 0]]]]> : tensor<2x1x3x2xi16>}
// SPEED:     glowll.convolution %e, %d

// SIZE:      glowll.convolution %y, %x, %{{.*}}, %{{.*}} {{{.*}}microkernel = #glowll.microkernel<"arm-dsp", {loop_pairs = 2 : i64}>, filter_shape = array<i64: 4, 32, 1, 1>,
// SIZE:      glowll.fully_connected %z, %v, %fw, %{{.*}} {microkernel = #glowll.microkernel<"arm-dsp", {loop_pairs = 2 : i64}>
// SIZE:      glowll.weight "wd_arm_dsp" {value = dense<{{\[\[\[\[}}6, 8], [4, 6], [0, 0]]], {{\[\[\[}}2, 10], [0, 2], [0, 0]]]]> : tensor<2x1x3x2xi16>}
// SIZE:      glowll.convolution %e, %d, %{{.*}}, %{{.*}} {{{.*}}microkernel = #glowll.microkernel<"arm-dsp", {loop_pairs = 2 : i64}>

// STRAIGHT-LABEL: llvm.func internal @net_0_convolution
// STRAIGHT-COUNT-384: llvm.arm.smlad
// STRAIGHT-NOT:   llvm.arm.smlad
// STRAIGHT-LABEL: llvm.func internal @net_1_fully_connected
// STRAIGHT-LABEL: llvm.func internal @net_2_convolution
// STRAIGHT-COUNT-12: llvm.arm.smlad
// STRAIGHT-NOT:   llvm.arm.smlad

// STEP2-LABEL: llvm.func internal @net_0_convolution
// STEP2:       %[[STEPS:.*]] = llvm.mlir.constant(8 : i32) : i32
// STEP2:       llvm.icmp "slt" %{{.*}}, %[[STEPS]] : i32
// STEP2-COUNT-24: llvm.arm.smlad
// STEP2-NOT:   llvm.arm.smlad
// STEP2-LABEL: llvm.func internal @net_1_fully_connected
// STEP2-LABEL: llvm.func internal @net_2_convolution
// STEP2-COUNT-4: llvm.arm.smlad
// STEP2-NOT:   llvm.arm.smlad

// STEP1-LABEL: llvm.func internal @net_0_convolution
// STEP1:       %[[STEPS:.*]] = llvm.mlir.constant(16 : i32) : i32
// STEP1:       llvm.icmp "slt" %{{.*}}, %[[STEPS]] : i32
// STEP1-COUNT-12: llvm.arm.smlad
// STEP1-NOT:   llvm.arm.smlad
// STEP1-LABEL: llvm.func internal @net_1_fully_connected
// ZERO:      an arm-dsp convolution's loop_pairs is 1 or more channel pairs a step
