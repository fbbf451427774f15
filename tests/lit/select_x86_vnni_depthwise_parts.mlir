// RUN: glow-opt %s --print-weights -p 'glowll-select-x86-vnni-kernels{depthwise=true}' | filecheck %s
// Two int8 depthwise 1x3 convolutions of one shape: in b, less its zero point -100, the level
// 100 is 200, beyond int8: its filter takes a second part (127 + 73). a's levels, less -1,
// all fit; it takes a second part too, of zeros, so that both filters are [2, 2, 1, 4] and
// the two layers can share a kernel (glowll-quantization-records{partnered=true} then gives
// them records).

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %ya = glowll.placeholder output "ya" : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>
  %wa = glowll.weight "wa" {value = dense<[[[[1, 2, 3]]], [[[-1, 0, 4]]]]> : tensor<2x1x1x3xi8>} : memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %ba = glowll.weight "ba" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %ya, %x, %wa, %ba {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %yb = glowll.placeholder output "yb" : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>
  %wb = glowll.weight "wb" {value = dense<[[[[100, 2, 3]]], [[[-1, 0, 4]]]]> : tensor<2x1x1x3xi8>} : memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-100>>
  %bb = glowll.weight "bb" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %yb, %x, %wb, %bb {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-100>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
}

// CHECK:      %[[WA:.*]] = glowll.weight "wa_vnni" {value = dense<{{\[\[\[\[}}2, 3, 4, 0]], {{\[\[}}0, 0, 0, 0]]], {{\[\[\[}}0, 1, 5, 0]], {{\[\[}}0, 0, 0, 0]]]]> : tensor<2x2x1x4xi8>}
// CHECK:      glowll.convolution %ya, %x, %[[WA]], %{{.*}} microkernel = #glowll.microkernel<"x86-vnni-depthwise">
// CHECK:      %[[WB:.*]] = glowll.weight "wb_vnni" {value = dense<{{\[\[\[\[}}127, 102, 103, 0]], {{\[\[}}73, 0, 0, 0]]], {{\[\[\[}}99, 100, 104, 0]], {{\[\[}}0, 0, 0, 0]]]]> : tensor<2x2x1x4xi8>}
// CHECK:      glowll.convolution %yb, %x, %[[WB]], %{{.*}} microkernel = #glowll.microkernel<"x86-vnni-depthwise">
