// RUN: glow-opt %s -p glowll-select-x86-vnni-kernels | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-x86-vnni-kernels{shallow-channels=0}' | filecheck %s --check-prefix=INTEL
// An unpadded 1x1 convolution of stride 1 of at most 16 input channels over more than one
// pixel is left to the host vector unit's vector-pointwise-int8 (x86.select_kernels.shallow_pointwise:
// four vpdpbusd an output vector pay little for the input's copy): the 16-channel one on 2x3
// keeps no microkernel here. One of 17 input channels, and one of 16 over a single pixel
// (a squeeze-and-excitation gate's), take x86-vnni. The limit is an AMD Zen core's
// (x86.layout.shallow_pointwise_channels); on other cores there is none (shallow-channels=0):
// there the ones of 16 and 8 channels take x86-vnni too.

!q = !quant.uniform<i8:f32, 5.0e-02:3>
!o = !quant.uniform<i8:f32, 1.0e-01:0>
!w = !quant.uniform<i8:f32, 1.0e-02:0>
!b = !quant.uniform<i32:f32, 5.0e-04:0>

glowll.function @net {
  %x16 = glowll.placeholder input "x16" : memref<1x16x2x3x!q>
  %y16 = glowll.placeholder output "y16" : memref<1x32x2x3x!o>
  %w16 = glowll.weight "w16" {value = dense<1> : tensor<32x16x1x1xi8>} : memref<32x16x1x1x!w>
  %b32 = glowll.weight "b32" {value = dense<5> : tensor<32xi32>} : memref<32x!b>
  glowll.convolution %y16, %x16, %w16, %b32 {name = "shallow", strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x32x2x3x!o>, memref<1x16x2x3x!q>, memref<32x16x1x1x!w>, memref<32x!b>
  %x17 = glowll.placeholder input "x17" : memref<1x17x2x3x!q>
  %y17 = glowll.placeholder output "y17" : memref<1x32x2x3x!o>
  %w17 = glowll.weight "w17" {value = dense<1> : tensor<32x17x1x1xi8>} : memref<32x17x1x1x!w>
  glowll.convolution %y17, %x17, %w17, %b32 {name = "deeper", strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x32x2x3x!o>, memref<1x17x2x3x!q>, memref<32x17x1x1x!w>, memref<32x!b>
  %g = glowll.placeholder input "g" : memref<1x16x1x1x!q>
  %h = glowll.placeholder output "h" : memref<1x32x1x1x!o>
  %x8 = glowll.placeholder input "x8" : memref<1x8x2x3x!q>
  %y8 = glowll.placeholder output "y8" : memref<1x32x2x3x!o>
  %w8 = glowll.weight "w8" {value = dense<1> : tensor<32x8x1x1xi8>} : memref<32x8x1x1x!w>
  glowll.convolution %y8, %x8, %w8, %b32 {name = "shallower", strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x32x2x3x!o>, memref<1x8x2x3x!q>, memref<32x8x1x1x!w>, memref<32x!b>
  glowll.convolution %h, %g, %w16, %b32 {name = "gate", strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x32x1x1x!o>, memref<1x16x1x1x!q>, memref<32x16x1x1x!w>, memref<32x!b>
}

// CHECK:     glowll.convolution %y16, %x16, %w16, %b32 {name = "shallow", strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} :
// CHECK:     glowll.convolution %y17, %x17, %{{.*}}, %{{.*}} {name = "deeper", {{.*}}microkernel = #glowll.microkernel<"x86-vnni">
// CHECK:     glowll.convolution %y8, %x8, %w8, %b32 {name = "shallower", strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} :
// CHECK:     glowll.convolution %h, %g, %{{.*}}, %{{.*}} {name = "gate", {{.*}}microkernel = #glowll.microkernel<"x86-vnni">

// INTEL:     glowll.convolution %y16, %x16, %{{.*}}, %{{.*}} {name = "shallow", {{.*}}microkernel = #glowll.microkernel<"x86-vnni">
// INTEL:     glowll.convolution %y17, %x17, %{{.*}}, %{{.*}} {name = "deeper", {{.*}}microkernel = #glowll.microkernel<"x86-vnni">
// INTEL:     glowll.convolution %y8, %x8, %{{.*}}, %{{.*}} {name = "shallower", {{.*}}microkernel = #glowll.microkernel<"x86-vnni">
