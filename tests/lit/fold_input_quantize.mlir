// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16 shuffles=avx2 fused_multiply_add=true},glowll-fold-input-quantize' | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16 shuffles=avx2},glowll-fold-input-quantize' | filecheck %s --check-prefix=NO-FMA
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=4 accumulators=12 registers=16},glowll-fold-input-quantize' | filecheck %s --check-prefix=SSE
// A float input's quantize (vector-quantize-int8) whose int8 buffer only a vector-im2col-int8
// convolution (a stem: 3x3 of stride 2 on 3 channels) reads folds into it: the convolution
// reads the floats (%f) and its microkernel gets the levels' type (`quantized_input`) and the
// quantize's proved `reciprocal` (AVX2 with FMA3 only); the quantize and its buffer go
// (tests/unit/test_fold_input_quantize.py checks the outputs bit for bit). A quantize whose
// levels are a net's output too (%q2), that two convolutions read (%q3), or whose floats an
// instruction between it and the convolution writes (%q5) stays; without
// masked loads (an SSE target, no vector-im2col-int8) nothing folds.

glowll.function @net {
  %f = glowll.placeholder input "f" : memref<1x3x8x16xf32>
  %w = glowll.weight "w" {value = dense<[[[[0, -4, 1], [7, 9, -5], [3, -6, 2]], [[7, 9, -7], [-4, -4, -2], [-7, 5, 1]], [[9, 8, 2], [1, 3, -4], [8, 9, 5]]], [[[-1, 6, -5], [3, 1, 4], [8, 4, 7]], [[-8, -1, 1], [-6, -9, 1], [-4, -9, -1]], [[3, 9, -8], [8, -6, -1], [7, 5, -7]]]]> : tensor<2x3x3x3xi8>} : memref<2x3x3x3x!quant.uniform<i8:f32, 1.0e-02:0>>
  %b = glowll.weight "b" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 1.230000e-04:0>>
  %q = glowll.alloc : memref<1x3x8x16x!quant.uniform<i8:f32, 1.23e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x2x4x8x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.elementwise %q, %f {kind = "quantize"} : memref<1x3x8x16x!quant.uniform<i8:f32, 1.23e-02:3>>, memref<1x3x8x16xf32>
  glowll.convolution %y, %q, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : memref<1x2x4x8x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x3x8x16x!quant.uniform<i8:f32, 1.23e-02:3>>, memref<2x3x3x3x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 1.230000e-04:0>>
  %q2 = glowll.placeholder output "q2" : memref<1x3x8x16x!quant.uniform<i8:f32, 1.23e-02:3>>
  %y2 = glowll.placeholder output "y2" : memref<1x2x4x8x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.elementwise %q2, %f {kind = "quantize"} : memref<1x3x8x16x!quant.uniform<i8:f32, 1.23e-02:3>>, memref<1x3x8x16xf32>
  glowll.convolution %y2, %q2, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : memref<1x2x4x8x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x3x8x16x!quant.uniform<i8:f32, 1.23e-02:3>>, memref<2x3x3x3x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 1.230000e-04:0>>
  %q3 = glowll.alloc : memref<1x3x8x16x!quant.uniform<i8:f32, 1.23e-02:3>>
  %y3 = glowll.placeholder output "y3" : memref<1x2x4x8x!quant.uniform<i8:f32, 1.0e-01:0>>
  %y4 = glowll.placeholder output "y4" : memref<1x2x4x8x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.elementwise %q3, %f {kind = "quantize"} : memref<1x3x8x16x!quant.uniform<i8:f32, 1.23e-02:3>>, memref<1x3x8x16xf32>
  glowll.convolution %y3, %q3, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : memref<1x2x4x8x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x3x8x16x!quant.uniform<i8:f32, 1.23e-02:3>>, memref<2x3x3x3x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 1.230000e-04:0>>
  glowll.convolution %y4, %q3, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : memref<1x2x4x8x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x3x8x16x!quant.uniform<i8:f32, 1.23e-02:3>>, memref<2x3x3x3x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 1.230000e-04:0>>
  %q5 = glowll.alloc : memref<1x3x8x16x!quant.uniform<i8:f32, 1.23e-02:3>>
  %y5 = glowll.placeholder output "y5" : memref<1x2x4x8x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.elementwise %q5, %f {kind = "quantize"} : memref<1x3x8x16x!quant.uniform<i8:f32, 1.23e-02:3>>, memref<1x3x8x16xf32>
  glowll.elementwise %f, %f {kind = "relu"} : memref<1x3x8x16xf32>, memref<1x3x8x16xf32>
  glowll.convolution %y5, %q5, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : memref<1x2x4x8x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x3x8x16x!quant.uniform<i8:f32, 1.23e-02:3>>, memref<2x3x3x3x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 1.230000e-04:0>>
}

// CHECK-NOT:  %q = glowll.alloc
// CHECK:      %y = glowll.placeholder output "y"
// CHECK:      glowll.convolution %y, %f, {{.*}}microkernel = #glowll.microkernel<"vector-im2col-int8", {quantized_input = !quant.uniform<i8:f32, 1.23e-02:3>, reciprocal = 81.3008194 : f32}>{{.*}} : memref<1x2x4x8x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x3x8x16xf32>,
// CHECK:      glowll.elementwise %q2, %f {kind = "quantize", microkernel = #glowll.microkernel<"vector-quantize-int8", {reciprocal = 81.3008194 : f32}>}
// CHECK:      glowll.convolution %y2, %q2, {{.*}}microkernel = #glowll.microkernel<"vector-im2col-int8">
// CHECK:      %q3 = glowll.alloc
// CHECK:      glowll.elementwise %q3, %f {kind = "quantize", microkernel = #glowll.microkernel<"vector-quantize-int8", {reciprocal = 81.3008194 : f32}>}
// CHECK:      glowll.convolution %y3, %q3, {{.*}}microkernel = #glowll.microkernel<"vector-im2col-int8">
// CHECK:      glowll.convolution %y4, %q3, {{.*}}microkernel = #glowll.microkernel<"vector-im2col-int8">
// CHECK:      %q5 = glowll.alloc
// CHECK:      glowll.elementwise %q5, %f {kind = "quantize", microkernel = #glowll.microkernel<"vector-quantize-int8", {reciprocal = 81.3008194 : f32}>}
// CHECK-NEXT: glowll.elementwise %f, %f {kind = "relu"}
// CHECK:      glowll.convolution %y5, %q5, {{.*}}microkernel = #glowll.microkernel<"vector-im2col-int8">

// NO-FMA-NOT:  %q = glowll.alloc
// NO-FMA:      glowll.convolution %y, %f, {{.*}}microkernel = #glowll.microkernel<"vector-im2col-int8", {quantized_input = !quant.uniform<i8:f32, 1.23e-02:3>}>{{.*}} : memref<1x2x4x8x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x3x8x16xf32>,
// NO-FMA:      glowll.elementwise %q2, %f {kind = "quantize", microkernel = #glowll.microkernel<"vector-quantize-int8">}

// SSE:      glowll.elementwise %q, %f {kind = "quantize", microkernel = #glowll.microkernel<"vector-quantize-int8">}
// SSE-NEXT: glowll.convolution %y, %q, %w, %b
