// RUN: glow-opt %s -p 'glowll-select-x86-vnni-kernels{lookup_tables=true},glowll-fuse-lookup-tables' | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-x86-vnni-kernels,glowll-fuse-lookup-tables' | filecheck %s --check-prefix=NO-VBMI
// With lookup_tables (a host with AVX-512 VBMI) an x86-vnni layer gets the kernel's
// `byte_permutes`: the table glowll-fuse-lookup-tables then fuses into it is looked up 16
// outputs at once by `vpermi2b` (vnni_kernels.PermutedTable). Without VBMI the layer is plain
// x86-vnni and applies the fused table lane by lane.

glowll.function @net {
  %in = glowll.placeholder input "in" : memref<1x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  %out = glowll.placeholder output "out" : memref<1x2x!quant.uniform<i8:f32, 3.0e-02:-115>>
  %fw = glowll.weight "fw" {value = dense<[[1, -2, 3, 4], [5, 6, -7, 8]]> : tensor<2x4xi8>} : memref<2x4x!quant.uniform<i8:f32, 2.0e-02:0>>
  %c = glowll.alloc : memref<1x2x!quant.uniform<i8:f32, 4.0e-02:0>>
  %fb = glowll.weight "fb" {value = dense<[7, -9]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 2.0e-03:0>>
  glowll.fully_connected %c, %in, %fw, %fb {name = "fc"} : memref<1x2x!quant.uniform<i8:f32, 4.0e-02:0>>, memref<1x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<2x4x!quant.uniform<i8:f32, 2.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 2.0e-03:0>>
  %t = glowll.weight "t" {value = dense<3> : tensor<256xi8>} : memref<256x!quant.uniform<i8:f32, 3.0e-02:-115>>
  glowll.int_lookup_table %out, %c, %t {name = "f"} : memref<1x2x!quant.uniform<i8:f32, 3.0e-02:-115>>, memref<1x2x!quant.uniform<i8:f32, 4.0e-02:0>>, memref<256x!quant.uniform<i8:f32, 3.0e-02:-115>>
}

// CHECK:      %[[T:.*]] = glowll.weight "t"
// CHECK-NEXT: glowll.fully_connected %out, %in, %{{.*}}, %{{.*}} lookup %[[T]] {name = "fc", narrow_requantization, microkernel = #glowll.microkernel<"x86-vnni", {byte_permutes}>, lookup_input = !quant.uniform<i8:f32, 4.0e-02:0>}
// CHECK-NOT:  glowll.int_lookup_table
// NO-VBMI:      glowll.fully_connected %out, %in, %{{.*}}, %{{.*}} lookup %{{.*}} {name = "fc", narrow_requantization, microkernel = #glowll.microkernel<"x86-vnni">, lookup_input = !quant.uniform<i8:f32, 4.0e-02:0>}
// NO-VBMI-NOT:  glowll.int_lookup_table
