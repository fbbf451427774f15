// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16 shuffles=avx2},glowll-allocate-memory,lower-glowll-to-llvm' | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16 shuffles=avx2 fused_multiply_add=true},glowll-allocate-memory,lower-glowll-to-llvm' | filecheck %s --check-prefix=FUSED
// On AVX2's packs (`shuffles`), an int8 Add with a proved float form (`float_add`) takes 32
// levels a step as bytes (`byte_elementwise.emit_byte_steps`): a vector<32xi8> read as
// 8 words, each level's byte moved to the top of its word (a shift left by 24; by 16 or 8 and
// a mask of the top byte; the last byte the mask alone), as singles times the scales / 2^24
// (2.15375471 and 0.883691549 here),
// summed, the offset added, rounded; the four results packed (`vpackssdw` twice,
// `vpacksswb`) and put back in order by a 4 x 4 transpose in each 128-bit half. 90 levels:
// two whole runs, the last 26 masked. With FMA3 (`fused_multiply_add`) the proved fused form
// (`FloatAdd.fused`): rint(fma(q1, a, fma(q2, b, c))), no multiply, no add.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x2x3x15x!quant.uniform<i8:f32, 1.20198034e-01:-14>>
  %m = glowll.placeholder input "m" : memref<1x2x3x15x!quant.uniform<i8:f32, 4.9317583e-02:-39>>
  %s = glowll.placeholder output "s" : memref<1x2x3x15x!quant.uniform<i8:f32, 5.5808596e-02:26>>
  glowll.elementwise %s, %x, %m {kind = "add"} : memref<1x2x3x15x!quant.uniform<i8:f32, 5.5808596e-02:26>>, memref<1x2x3x15x!quant.uniform<i8:f32, 1.20198034e-01:-14>>, memref<1x2x3x15x!quant.uniform<i8:f32, 4.9317583e-02:-39>>
}

// CHECK:      llvm.func internal @net_0_elementwise
// CHECK-DAG:  %{{.*}} = llvm.mlir.constant(-16777216 : i32) : i32
// CHECK-DAG:  %{{.*}} = llvm.mlir.constant(24 : i32) : i32
// CHECK:      %[[X:.*]] = llvm.load %{{.*}} {alignment = 1 : i64} : !llvm.ptr -> vector<32xi8>
// CHECK:      %[[M:.*]] = llvm.load %{{.*}} {alignment = 1 : i64} : !llvm.ptr -> vector<32xi8>
// CHECK:      %[[XW:.*]] = llvm.bitcast %[[X]] : vector<32xi8> to vector<8xi32>
// CHECK:      %[[X0:.*]] = llvm.shl %[[XW]], %{{.*}} : vector<8xi32>
// CHECK:      %[[X1:.*]] = llvm.shl %[[XW]], %{{.*}} : vector<8xi32>
// CHECK-NEXT: llvm.and %[[X1]], %{{.*}} : vector<8xi32>
// CHECK:      llvm.and %[[XW]], %{{.*}} : vector<8xi32>
// CHECK:      llvm.bitcast %[[M]] : vector<32xi8> to vector<8xi32>
// CHECK:      %[[F0:.*]] = llvm.sitofp %[[X0]] : vector<8xi32> to vector<8xf32>
// CHECK-NEXT: llvm.mlir.constant(1.28373784e-07 : f32) : f32
// CHECK:      llvm.fmul %[[F0]], %{{.*}} : vector<8xf32>
// CHECK:      llvm.mlir.constant(5.26721209e-08 : f32) : f32
// CHECK:      llvm.mlir.constant(90.616539 : f32) : f32
// CHECK:      "llvm.rint.v8f32"
// CHECK:      %[[LOW:.*]] = llvm.call_intrinsic "llvm.x86.avx2.packssdw"
// CHECK-NEXT: %[[HIGH:.*]] = llvm.call_intrinsic "llvm.x86.avx2.packssdw"
// CHECK-NEXT: %[[PACKED:.*]] = llvm.call_intrinsic "llvm.x86.avx2.packsswb"(%[[LOW]], %[[HIGH]]) : (vector<16xi16>, vector<16xi16>) -> vector<32xi8>
// CHECK-NEXT: %[[ORDERED:.*]] = llvm.shufflevector %[[PACKED]], %[[PACKED]] [0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 16, 20, 24, 28, 17, 21, 25, 29, 18, 22, 26, 30, 19, 23, 27, 31] : vector<32xi8>
// CHECK:      llvm.store %[[ORDERED]], %{{.*}} {alignment = 1 : i64} : vector<32xi8>, !llvm.ptr
// CHECK:      llvm.call_intrinsic "llvm.masked.load.v32i8.p0"
// CHECK:      llvm.call_intrinsic "llvm.x86.avx2.packsswb"
// CHECK:      llvm.call_intrinsic "llvm.masked.store.v32i8.p0"

// FUSED:      llvm.func internal @net_0_elementwise
// FUSED:      %[[M0:.*]] = llvm.sitofp %{{.*}} : vector<8xi32> to vector<8xf32>
// FUSED-NEXT: llvm.mlir.constant(5.26721209e-08 : f32) : f32
// FUSED:      llvm.mlir.constant(90.616539 : f32) : f32
// FUSED:      %[[INNER:.*]] = llvm.call_intrinsic "llvm.fma.v8f32"(%[[M0]], %{{.*}}, %{{.*}})
// FUSED-NEXT: %[[X0:.*]] = llvm.sitofp %{{.*}} : vector<8xi32> to vector<8xf32>
// FUSED-NEXT: llvm.mlir.constant(1.28373784e-07 : f32) : f32
// FUSED:      %[[OUTER:.*]] = llvm.call_intrinsic "llvm.fma.v8f32"(%[[X0]], %{{.*}}, %[[INNER]])
// FUSED-NEXT: llvm.call_intrinsic "llvm.rint.v8f32"(%[[OUTER]])
// FUSED-NOT:  llvm.fmul
// FUSED:      llvm.call_intrinsic "llvm.x86.avx2.packsswb"
