// RUN: glow-opt %s -p "glowll-select-x86-vnni-kernels{constant-ratio=1.0}" | filecheck %s --check-prefix=GLOW
// RUN: glow-opt %s -p glowll-select-x86-vnni-kernels | filecheck %s --check-prefix=ALL
// Within a constants' budget of the int8 constants themselves (constant-ratio=1.0, Glow's
// constants: a model quantized from a profile) only the layers whose VNNI filters take no
// more bytes are packed: the FullyConnected of 16 outputs by 64 inputs (1,024 B either way)
// takes x86-vnni; the one of 20 outputs pads them to 32 (2,048 B for 1,280) and keeps its
// int8 weights and the next kernels. Without a budget both are packed. An unpooled,
// unpadded 1x1 of stride 1 that x86-vnni does not take goes to the host vector unit's int16
// pair words, 2 B a level (x86.layout.VECTOR_UNIT_LEVEL_BYTES): x86-vnni's filter costs only
// what it takes beyond those. The 1x1 of 88 outputs by 24 inputs (2,304 B packed, 4,224 B in
// words) is packed within Glow's constants; the 3x3 of 16 outputs by 18 inputs (2,880 B
// packed), priced against its int8 filter (2,592 B), is not.

glowll.function @net {
  %v = glowll.placeholder input "v" : memref<1x64x!quant.uniform<i8:f32, 5.0e-02:3>>
  %a = glowll.placeholder output "a" : memref<1x16x!quant.uniform<i8:f32, 1.0e-01:0>>
  %aw = glowll.weight "aw" {value = dense<3> : tensor<16x64xi8>} : memref<16x64x!quant.uniform<i8:f32, 1.0e-02:0>>
  %ab = glowll.weight "ab" {value = dense<100> : tensor<16xi32>} : memref<16x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.fully_connected %a, %v, %aw, %ab : memref<1x16x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x64x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<16x64x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<16x!quant.uniform<i32:f32, 5.0e-04:0>>
  %b = glowll.placeholder output "b" : memref<1x20x!quant.uniform<i8:f32, 1.0e-01:0>>
  %bw = glowll.weight "bw" {value = dense<-5> : tensor<20x64xi8>} : memref<20x64x!quant.uniform<i8:f32, 1.0e-02:0>>
  %bb = glowll.weight "bb" {value = dense<-100> : tensor<20xi32>} : memref<20x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.fully_connected %b, %v, %bw, %bb : memref<1x20x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x64x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<20x64x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<20x!quant.uniform<i32:f32, 5.0e-04:0>>
  %x = glowll.placeholder input "x" : memref<1x24x2x8x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x88x2x8x!quant.uniform<i8:f32, 1.0e-01:0>>
  %yw = glowll.weight "yw" {value = dense<2> : tensor<88x24x1x1xi8>} : memref<88x24x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>
  %yb = glowll.weight "yb" {value = dense<7> : tensor<88xi32>} : memref<88x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %y, %x, %yw, %yb {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x88x2x8x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x24x2x8x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<88x24x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<88x!quant.uniform<i32:f32, 5.0e-04:0>>
  %s = glowll.placeholder input "s" : memref<1x18x6x6x!quant.uniform<i8:f32, 5.0e-02:3>>
  %z = glowll.placeholder output "z" : memref<1x16x4x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  %zw = glowll.weight "zw" {value = dense<4> : tensor<16x18x3x3xi8>} : memref<16x18x3x3x!quant.uniform<i8:f32, 1.0e-02:0>>
  %zb = glowll.weight "zb" {value = dense<9> : tensor<16xi32>} : memref<16x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %z, %s, %zw, %zb {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x16x4x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x18x6x6x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<16x18x3x3x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<16x!quant.uniform<i32:f32, 5.0e-04:0>>
}

// GLOW:      glowll.weight "aw_vnni" elided : memref<1x16x1x1x16x4x!quant.uniform<i8:f32, 1.0e-02:0>>
// GLOW:      glowll.fully_connected %a, %v, %{{.*}}, %{{.*}} {{{.*}}microkernel = #glowll.microkernel<"x86-vnni">}
// GLOW-NOT:  bw_vnni
// GLOW:      glowll.fully_connected %b, %v, %bw, %bb :
// ALL:       glowll.weight "bw_vnni" elided : memref<2x16x1x1x16x4x!quant.uniform<i8:f32, 1.0e-02:0>>
// ALL:       glowll.fully_connected %b, %v, %{{.*}}, %{{.*}} {{{.*}}microkernel = #glowll.microkernel<"x86-vnni">}
// GLOW:      glowll.weight "yw_vnni" elided : memref<6x6x1x1x16x4x!quant.uniform<i8:f32, 1.0e-02:0>>
// GLOW:      glowll.convolution %y, %x, %{{.*}}, %{{.*}} {{{.*}}microkernel = #glowll.microkernel<"x86-vnni">
// GLOW-NOT:  zw_vnni
// GLOW:      glowll.convolution %z, %s, %zw, %zb {strides
// ALL:       glowll.weight "zw_vnni" elided : memref<1x5x3x3x16x4x!quant.uniform<i8:f32, 1.0e-02:0>>
// ALL:       glowll.convolution %z, %s, %{{.*}}, %{{.*}} {{{.*}}microkernel = #glowll.microkernel<"x86-vnni">
