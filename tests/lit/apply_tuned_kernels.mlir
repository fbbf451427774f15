// RUN: glow-opt %s -p 'glowll-apply-tuned-kernels{candidates="generic+arm-dsp+level-tables" force="level-tables"},glowll-select-arm-dsp-kernels' | filecheck %s --check-prefix=FORCED
// RUN: glow-opt %s -p glowll-select-arm-dsp-kernels | filecheck %s --check-prefix=TUNED
// RUN: glow-opt %s | glow-opt | filecheck %s --check-prefix=ROUND
// RUN: not glow-opt %s -p 'glowll-apply-tuned-kernels{candidates="generic+arm-dsp" force="vectors"}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: echo '{"layers":' > %t.json
// RUN: not glow-opt %s -p 'glowll-apply-tuned-kernels{cache="%t.json" candidates="generic+arm-dsp"}' 2>&1 | filecheck %s --check-prefix=CACHE
// The autotuner's choices (`#glowll.tuned_kernel<kernel, its cycles, the generic kernel's>`)
// override the cost rules of the DSP kernels' selection: the 1x3 convolution, which the
// rules give "arm-dsp" (window pairs, select_arm_dsp_kernels.mlir), keeps the generic kernel
// and its int8 filter where the autotuner measured the generic one fastest; the add of 24
// elements, far below the rules' 192, takes level tables where they were measured faster.
// A measuring build (`force`) marks every layer with one candidate: the add takes level tables,
// the convolution, which they cannot take, stays generic.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x1x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w = glowll.weight "w" {value = dense<[[[[1, 2, 3]]], [[[-1, 0, 4]]]]> : tensor<2x1x1x3xi8>} : memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %b = glowll.weight "b" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, tuned_kernel = #glowll.tuned_kernel<"generic", 180, 180>} : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x1x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %d = glowll.placeholder input "d" : memref<1x2x3x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %e = glowll.placeholder input "e" : memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  %sum = glowll.placeholder output "sum" : memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.elementwise %sum, %d, %e {kind = "add", tuned_kernel = #glowll.tuned_kernel<"level-tables", 300, 420>} : memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x3x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>
}

// FORCED: glowll.convolution %{{.*}}, %{{.*}}, %w, %b {
// FORCED-NOT: microkernel
// FORCED-SAME: tuned_kernel = #glowll.tuned_kernel<"level-tables", 0, 0>
// FORCED: glowll.elementwise
// FORCED-SAME: tuned_kernel = #glowll.tuned_kernel<"level-tables", 0, 0>
// FORCED-SAME: microkernel = #glowll.microkernel<"level-tables">

// TUNED: glowll.convolution %{{.*}}, %{{.*}}, %w, %b {
// TUNED-NOT: microkernel
// TUNED-SAME: tuned_kernel = #glowll.tuned_kernel<"generic", 180, 180>
// TUNED-SAME: memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
// TUNED: glowll.elementwise
// TUNED-SAME: microkernel = #glowll.microkernel<"level-tables">

// ROUND: tuned_kernel = #glowll.tuned_kernel<"generic", 180, 180>
// ROUND: tuned_kernel = #glowll.tuned_kernel<"level-tables", 300, 420>

// BAD: glowll-apply-tuned-kernels{force=vectors}: expected one of the candidates (generic, arm-dsp)

// CACHE: autotune cache {{.*}}.json: not readable JSON
