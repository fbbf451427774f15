// RUN: glow-opt %s --print-weights -p 'glowll-shape-parameterised-kernels{vnni=true}' | filecheck %s
// RUN: glow-opt %s --disable-verify -p 'glowll-shape-parameterised-kernels{vnni=true}',glowll-allocate-memory,lower-glowll-to-llvm | filecheck %s --check-prefix=SHARED
// The VNNI form (a host with AVX-512 VNNI): two int8 1x1 convolutions of 16 and 20 pixels,
// 4 and 8 input channels, 2 output channels each (the same last block of 2), alike; a
// one-pixel 1x1 convolution and a FullyConnected, alike. Each gets its filter packed as the
// x86-vnni kernel reads it ([O / 16, C / 4, 1, 1, 16, 4], "_vnni") and its bias folded for
// unsigned input bytes, then a record of its numbers and its shape (pixels, input channels,
// output channels, input channel and pixel strides, output channel and pixel strides); the
// pixel tiles' layers share one kernel, the FullyConnected steps' another.

glowll.function @net {
  %xa = glowll.placeholder input "xa" : memref<1x4x4x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %ya = glowll.placeholder output "ya" : memref<1x2x4x4x!quant.uniform<i8:f32, 1.0e-01:-4>>
  %wa = glowll.weight "wa" {value = dense<[[[[1]], [[2]], [[3]], [[4]]], [[[-1]], [[0]], [[4]], [[-5]]]]> : tensor<2x4x1x1xi8>} : memref<2x4x1x1x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %ba = glowll.weight "ba" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %ya, %xa, %wa, %ba {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x2x4x4x!quant.uniform<i8:f32, 1.0e-01:-4>>, memref<1x4x4x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x4x1x1x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %xb = glowll.placeholder input "xb" : memref<1x8x4x5x!quant.uniform<i8:f32, 5.0e-02:3>>
  %yb = glowll.placeholder output "yb" : memref<1x2x4x5x!quant.uniform<i8:f32, 2.0e-01:6>>
  %wb = glowll.weight "wb" {value = dense<[[[[5]], [[-2]], [[3]], [[1]], [[0]], [[1]], [[2]], [[3]]], [[[-1]], [[7]], [[4]], [[-3]], [[9]], [[8]], [[-7]], [[6]]]]> : tensor<2x8x1x1xi8>} : memref<2x8x1x1x!quant.uniform<i8:f32, 1.0e-02:2>>
  %bb = glowll.weight "bb" {value = dense<[-7, 30]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %yb, %xb, %wb, %bb {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x2x4x5x!quant.uniform<i8:f32, 2.0e-01:6>>, memref<1x8x4x5x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x8x1x1x!quant.uniform<i8:f32, 1.0e-02:2>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %xc = glowll.placeholder input "xc" : memref<1x4x1x1x!quant.uniform<i8:f32, 5.0e-02:3>>
  %yc = glowll.placeholder output "yc" : memref<1x2x1x1x!quant.uniform<i8:f32, 1.0e-01:-4>>
  glowll.convolution %yc, %xc, %wa, %ba {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x2x1x1x!quant.uniform<i8:f32, 1.0e-01:-4>>, memref<1x4x1x1x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x4x1x1x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %v = glowll.placeholder input "v" : memref<3x8x!quant.uniform<i8:f32, 5.0e-02:3>>
  %z = glowll.placeholder output "z" : memref<3x2x!quant.uniform<i8:f32, 1.0e-01:-2>>
  %fw = glowll.weight "fw" {value = dense<[[1, -2, 3, -4, 1, 1, 1, 1], [5, 6, -7, 8, 2, 2, 2, 2]]> : tensor<2x8xi8>} : memref<2x8x!quant.uniform<i8:f32, 1.0e-02:1>>
  %fb = glowll.weight "fb" {value = dense<[100, -100]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.fully_connected %z, %v, %fw, %fb : memref<3x2x!quant.uniform<i8:f32, 1.0e-01:-2>>, memref<3x8x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x8x!quant.uniform<i8:f32, 1.0e-02:1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
}

// a's first channel: 10 - 131 * (1 + 2 + 3 + 4) + (-1) * 131 * 4 = -1824 (U = 3 + 128).
// CHECK:      %[[WA:.*]] = glowll.weight "wa_vnni" {value = dense<{{\[\[\[\[\[\[}}1, 2, 3, 4], [-1, 0, 4, -5], [0, 0, 0, 0]{{.*}}tensor<1x1x1x1x16x4xi8>}
// CHECK-NEXT: %[[BA:.*]] = glowll.weight "ba_vnni" {value = dense<[-1824, -282]> : tensor<2xi32>}
// CHECK-NEXT: %[[A:.*]] = glowll.weight "wa_vnni_parameters" {value = dense<[3, -1, -4, 0, 0, 1374389504, -7, 0, 0, 0, 16, 4, 2, 16, 1, 16, 1]> : tensor<17xi32>}
// CHECK-NEXT: glowll.convolution %ya, %xa, %[[WA]], %[[BA]] parameters %[[A]] {{.*}}microkernel = #glowll.microkernel<"x86-vnni-shape-parameterised">, filter_shape = array<i64: 2, 4, 1, 1>}
// CHECK:      %[[B:.*]] = glowll.weight "wb_vnni_parameters" {value = dense<[3, 2, 6, 0, 0, 1374389504, -8, 0, 0, 0, 20, 8, 2, 20, 1, 20, 1]> : tensor<17xi32>}
// CHECK-NEXT: glowll.convolution %yb, %xb, %{{.*}}, %{{.*}} parameters %[[B]] {{.*}}microkernel = #glowll.microkernel<"x86-vnni-shape-parameterised">, filter_shape = array<i64: 2, 8, 1, 1>}
// CHECK:      %[[C:.*]] = glowll.weight "wa_vnni_parameters" {value = dense<[3, -1, -4, 0, 0, 1374389504, -7, 0, 0, 0, 1, 4, 2, 1, 1, 1, 1]> : tensor<17xi32>}
// CHECK-NEXT: glowll.convolution %yc, %xc, %{{.*}}, %{{.*}} parameters %[[C]] {{.*}}microkernel = #glowll.microkernel<"x86-vnni-shape-parameterised">
// CHECK:      %[[F:.*]] = glowll.weight "fw_vnni_parameters" {value = dense<[3, 1, -2, 0, 0, 1374389504, -7, 0, 0, 0, 3, 8, 2, 1, 8, 1, 2]> : tensor<17xi32>}
// CHECK-NEXT: glowll.fully_connected %z, %v, %{{.*}}, %{{.*}} parameters %[[F]] {narrow_requantization, microkernel = #glowll.microkernel<"x86-vnni-shape-parameterised">}

// The VNNI kernels' clamps select on vectors of i1, which xDSL's llvm.select does not verify
// (LLVM takes them): this run does not verify.
// SHARED:      llvm.call @net_0_convolution(
// SHARED:      llvm.call @net_0_convolution(
// SHARED:      llvm.call @net_1_convolution(
// SHARED:      llvm.call @net_1_convolution(
// SHARED-NOT:  llvm.call @net_
// SHARED:      llvm.func internal @net_0_convolution({{.*}}attributes {no_inline, passthrough = ["optsize"]}
// SHARED:      llvm.func internal @net_1_convolution(
