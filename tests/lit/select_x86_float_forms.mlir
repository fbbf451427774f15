// RUN: glow-opt %s -p 'glowll-select-x86-vnni-kernels{float-forms=true fused-multiply-add=true}' | glow-opt | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-x86-vnni-kernels{float-forms=true fused-multiply-add=true},glowll-select-vector-columns{lanes=16 accumulators=16 planes=true registers=32 fused-multiply-add=true}' | filecheck %s --check-prefix=VECTOR
// RUN: glow-opt %s -p 'glowll-select-x86-vnni-kernels' | filecheck %s --check-prefix=ALL
// With `float-forms` (glow-compile sets it on an AVX-512 VNNI host), an int8 Mul, Add or Sub
// with a proved float form (select_vector_elementwise.mlir's: %m's float step, %s's and %t's
// float adds) is left without a kernel, for the host vector unit's vector-elementwise-int8
// and its float form (the VECTOR run: the selection that follows); the Mul %r, whose real
// multiplier (0.05 x 0.004 / 0.0001) is above 1/2, has none and takes x86-avx512. Without
// the option every one of them takes x86-avx512 (ALL).

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %g = glowll.placeholder input "g" : memref<1x2x1x1x!quant.uniform<i8:f32, 4.0e-03:-128>>
  %m = glowll.placeholder output "m" : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  glowll.elementwise %m, %x, %g {kind = "mul"} : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x1x1x!quant.uniform<i8:f32, 4.0e-03:-128>>
  %r = glowll.placeholder output "r" : memref<1x2x2x4x!quant.uniform<i8:f32, 1.0e-04:0>>
  glowll.elementwise %r, %x, %g {kind = "mul"} : memref<1x2x2x4x!quant.uniform<i8:f32, 1.0e-04:0>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x1x1x!quant.uniform<i8:f32, 4.0e-03:-128>>
  %s = glowll.placeholder output "s" : memref<1x2x2x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.elementwise %s, %x, %m {kind = "add"} : memref<1x2x2x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %t = glowll.placeholder output "t" : memref<1x2x2x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.elementwise %t, %x, %m {kind = "sub"} : memref<1x2x2x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
}

// CHECK:      glowll.elementwise %m, %x, %g {kind = "mul"} :
// CHECK:      glowll.elementwise %r, %x, %g {kind = "mul", microkernel = #glowll.microkernel<"x86-avx512">} :
// CHECK:      glowll.elementwise %s, %x, %m {kind = "add"} :
// CHECK:      glowll.elementwise %t, %x, %m {kind = "sub"} :

// VECTOR:     glowll.elementwise %m, %x, %g {kind = "mul", microkernel = #glowll.microkernel<"vector-elementwise-int8">, float_gate =
// VECTOR:     glowll.elementwise %r, %x, %g {kind = "mul", microkernel = #glowll.microkernel<"x86-avx512">} :
// VECTOR:     glowll.elementwise %s, %x, %m {kind = "add", microkernel = #glowll.microkernel<"vector-elementwise-int8">, float_add =
// VECTOR:     glowll.elementwise %t, %x, %m {kind = "sub", microkernel = #glowll.microkernel<"vector-elementwise-int8">, float_add =

// ALL-COUNT-4: microkernel = #glowll.microkernel<"x86-avx512">
