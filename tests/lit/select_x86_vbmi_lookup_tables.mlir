// RUN: glow-opt %s -p 'glowll-select-x86-vnni-kernels{lookup_tables=true}' | filecheck %s
// RUN: glow-opt %s -p glowll-select-x86-vnni-kernels | filecheck %s --check-prefix=NO-VBMI
// With lookup_tables (a host with AVX-512 VBMI), the int8 lookup table gets microkernel
// "x86-vbmi" (64 levels at once by vpermi2b); the table and the operands stay as they are.
// Without it, the table keeps the generic scalar kernel.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<2x100x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<2x100x!quant.uniform<i8:f32, 2.0e-02:-7>>
  %t = glowll.weight "t" {value = dense<1> : tensor<256xi8>} : memref<256x!quant.uniform<i8:f32, 2.0e-02:-7>>
  glowll.int_lookup_table %y, %x, %t : memref<2x100x!quant.uniform<i8:f32, 2.0e-02:-7>>, memref<2x100x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<256x!quant.uniform<i8:f32, 2.0e-02:-7>>
}

// CHECK:      glowll.int_lookup_table %y, %x, %t {microkernel = #glowll.microkernel<"x86-vbmi">} : memref<2x100x!quant.uniform<i8:f32, 2.0e-02:-7>>, memref<2x100x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<256x!quant.uniform<i8:f32, 2.0e-02:-7>>
// NO-VBMI:    glowll.int_lookup_table %y, %x, %t : memref
