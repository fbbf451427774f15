// RUN: glow-opt %s -p "glowll-select-x86-vnni-kernels{constant-ratio=1.0}" | filecheck %s --check-prefix=GLOW
// RUN: glow-opt %s -p glowll-select-x86-vnni-kernels | filecheck %s --check-prefix=ALL
// Within a constants' budget of the int8 constants themselves (constant-ratio=1.0, Glow's
// constants: a model quantized from a profile) only the layers whose VNNI filters take no
// more bytes are packed: the FullyConnected of 16 outputs by 64 inputs (1,024 B either way)
// takes x86-vnni; the one of 20 outputs pads them to 32 (2,048 B for 1,280) and keeps its
// int8 weights and the next kernels. Without a budget both are packed.

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
}

// GLOW:      glowll.weight "aw_vnni" elided : memref<1x16x1x1x16x4x!quant.uniform<i8:f32, 1.0e-02:0>>
// GLOW:      glowll.fully_connected %a, %v, %{{.*}}, %{{.*}} {{{.*}}microkernel = #glowll.microkernel<"x86-vnni">}
// GLOW-NOT:  bw_vnni
// GLOW:      glowll.fully_connected %b, %v, %bw, %bb :
// ALL:       glowll.weight "bw_vnni" elided : memref<2x16x1x1x16x4x!quant.uniform<i8:f32, 1.0e-02:0>>
// ALL:       glowll.fully_connected %b, %v, %{{.*}}, %{{.*}} {{{.*}}microkernel = #glowll.microkernel<"x86-vnni">}
