// RUN: glow-opt %s -p glowll-select-arm-dsp-kernels | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{helium=true}' | filecheck %s --check-prefix=HELIUM
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{only=generic}' | filecheck %s --check-prefix=GENERIC
// On a core with the DSP extension and no Helium (M4, M7, M33): an int8 Mul of a tensor by
// one level per channel (a squeeze-excitation gate [1, C, 1, 1], either operand) takes
// "channel-products" (backends.arm_dsp.channel_products); a Mul of two whole tensors, and
// one by a per-channel NHWC gate [1, 1, 1, C] (broadcast over the leading dimensions), keep
// the generic kernel. A quantize of f32 to int8 takes "reciprocal-quantize"; an int16 one
// keeps the generic kernel.

builtin.module {
  glowll.function @net {
    %x = glowll.placeholder input "x" : memref<1x8x3x5x!quant.uniform<i8:f32, 5.0e-02:3>>
    %gate = glowll.placeholder input "gate" : memref<1x8x1x1x!quant.uniform<i8:f32, 4.0e-03:-128>>
    %y = glowll.placeholder input "y" : memref<1x8x3x5x!quant.uniform<i8:f32, 2.0e-02:-5>>
    %nhwc_gate = glowll.placeholder input "nhwc_gate" : memref<1x1x1x5x!quant.uniform<i8:f32, 4.0e-03:-128>>
    %f = glowll.placeholder input "f" : memref<1x8x3x5xf32>
    %gated = glowll.placeholder output "gated" : memref<1x8x3x5x!quant.uniform<i8:f32, 1.0e-02:-20>>
    %gated_swapped = glowll.placeholder output "gated_swapped" : memref<1x8x3x5x!quant.uniform<i8:f32, 1.0e-02:-20>>
    %product = glowll.placeholder output "product" : memref<1x8x3x5x!quant.uniform<i8:f32, 1.0e-02:-20>>
    %by_column = glowll.placeholder output "by_column" : memref<1x8x3x5x!quant.uniform<i8:f32, 1.0e-02:-20>>
    %q = glowll.placeholder output "q" : memref<1x8x3x5x!quant.uniform<i8:f32, 3.7e-02:-2>>
    %q16 = glowll.placeholder output "q16" : memref<1x8x3x5x!quant.uniform<i16:f32, 1.0e-04:0>>
    glowll.elementwise %gated, %x, %gate {kind = "mul"} : memref<1x8x3x5x!quant.uniform<i8:f32, 1.0e-02:-20>>, memref<1x8x3x5x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x8x1x1x!quant.uniform<i8:f32, 4.0e-03:-128>>
    glowll.elementwise %gated_swapped, %gate, %x {kind = "mul"} : memref<1x8x3x5x!quant.uniform<i8:f32, 1.0e-02:-20>>, memref<1x8x1x1x!quant.uniform<i8:f32, 4.0e-03:-128>>, memref<1x8x3x5x!quant.uniform<i8:f32, 5.0e-02:3>>
    glowll.elementwise %product, %x, %y {kind = "mul"} : memref<1x8x3x5x!quant.uniform<i8:f32, 1.0e-02:-20>>, memref<1x8x3x5x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x8x3x5x!quant.uniform<i8:f32, 2.0e-02:-5>>
    glowll.elementwise %by_column, %x, %nhwc_gate {kind = "mul"} : memref<1x8x3x5x!quant.uniform<i8:f32, 1.0e-02:-20>>, memref<1x8x3x5x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x1x1x5x!quant.uniform<i8:f32, 4.0e-03:-128>>
    glowll.elementwise %q, %f {kind = "quantize"} : memref<1x8x3x5x!quant.uniform<i8:f32, 3.7e-02:-2>>, memref<1x8x3x5xf32>
    glowll.elementwise %q16, %f {kind = "quantize"} : memref<1x8x3x5x!quant.uniform<i16:f32, 1.0e-04:0>>, memref<1x8x3x5xf32>
  }
}

// CHECK:      glowll.elementwise %gated, %x, %gate {kind = "mul", microkernel = #glowll.microkernel<"channel-products">}
// CHECK-NEXT: glowll.elementwise %gated_swapped, %gate, %x {kind = "mul", microkernel = #glowll.microkernel<"channel-products">}
// CHECK-NEXT: glowll.elementwise %product, %x, %y {kind = "mul"} :
// CHECK-NEXT: glowll.elementwise %by_column, %x, %nhwc_gate {kind = "mul"} :
// CHECK-NEXT: glowll.elementwise %q, %f {kind = "quantize", microkernel = #glowll.microkernel<"reciprocal-quantize">}
// CHECK-NEXT: glowll.elementwise %q16, %f {kind = "quantize"} :

// On a Helium core (M55) the Muls run on Helium's vectors; its quantize keeps the generic kernel.
// HELIUM:      glowll.elementwise %gated, %x, %gate {kind = "mul", microkernel = #glowll.microkernel<"arm-mve">}
// HELIUM-NOT:  channel-products
// HELIUM-NOT:  reciprocal-quantize

// The test hook `only=generic`: no microkernel.
// GENERIC-NOT: microkernel
