// RUN: glow-opt %s --print-weights -p 'glowll-select-x86-vnni-kernels{depthwise=true}' | filecheck %s
// Two int8 depthwise 1x3 convolutions. In a, less its zero point -100, the level 100 is 200,
// beyond int8: the kernel takes it as two int8 parts at run time (127 + 73; its microkernel
// takes rest_levels, a loop over parts), so the filter stays as it is and only the bias is
// folded (10 - 131 * (200 + 102 + 103) = -53045). In b,
// the level 127 less its zero point -128 is 255, which no two int8 parts hold (the rest would
// be 128): b keeps its filter, its bias and no microkernel (the host vector unit's kernels).
glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %ya = glowll.placeholder output "ya" : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>
  %wa = glowll.weight "wa" {value = dense<[[[[100, 2, 3]]], [[[-1, 0, 4]]]]> : tensor<2x1x1x3xi8>} : memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-100>>
  %ba = glowll.weight "ba" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %ya, %x, %wa, %ba {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-100>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %yb = glowll.placeholder output "yb" : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>
  %wb = glowll.weight "wb" {value = dense<[[[[127, 2, 3]]], [[[-1, 0, 4]]]]> : tensor<2x1x1x3xi8>} : memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-128>>
  %bb = glowll.weight "bb" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %yb, %x, %wb, %bb {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-128>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
}

// CHECK:      %wa = glowll.weight "wa" {value = dense<{{\[\[\[\[}}100, 2, 3]]], {{\[\[\[}}-1, 0, 4]]]]> : tensor<2x1x1x3xi8>}
// CHECK-NEXT: %[[BA:.*]] = glowll.weight "ba_vnni" {value = dense<[-53045, -39713]> : tensor<2xi32>}
// CHECK-NEXT: glowll.convolution %ya, %x, %wa, %[[BA]] {{.*}}microkernel = #glowll.microkernel<"x86-vnni-depthwise", {rest_levels}>}
// CHECK:      %wb = glowll.weight "wb"
// CHECK-NEXT: %bb = glowll.weight "bb"
// CHECK-NEXT: glowll.convolution %yb, %x, %wb, %bb {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} :
