// RUN: glow-opt --disable-verify %s -p 'glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16 shuffles=avx2 fused_multiply_add=true},glowll-allocate-memory,lower-glowll-to-llvm' | filecheck %s
// On AVX2's packs (`shuffles`), an int8 Mul of one shape with a proved float step
// (`float_step`) takes 32 levels a step as bytes (`byte_elementwise.float_step_bytes`): each
// 16-level half widened to int16 and less its zero point, the product's low and high words
// (`mul`, `llvm.x86.avx2.pmulh.w`) interleaved within 128-bit halves into int32 products, each
// through the float step, packed (`vpackssdw` twice, `vpacksswb`) and the middle 8-byte runs
// swapped. 90 levels: two whole runs, the last 26 masked.
// (--disable-verify: xDSL's llvm.select takes no vector condition; LLVM does.)

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x2x3x15x!quant.uniform<i8:f32, 1.20198034e-01:-14>>
  %m = glowll.placeholder input "m" : memref<1x2x3x15x!quant.uniform<i8:f32, 4.9317583e-02:-39>>
  %s = glowll.placeholder output "s" : memref<1x2x3x15x!quant.uniform<i8:f32, 5.5808596e-02:26>>
  glowll.elementwise %s, %x, %m {kind = "mul"} : memref<1x2x3x15x!quant.uniform<i8:f32, 5.5808596e-02:26>>, memref<1x2x3x15x!quant.uniform<i8:f32, 1.20198034e-01:-14>>, memref<1x2x3x15x!quant.uniform<i8:f32, 4.9317583e-02:-39>>
}

// CHECK:      llvm.func internal @net_0_elementwise
// CHECK:      %[[X:.*]] = llvm.load %{{.*}} : !llvm.ptr -> vector<32xi8>
// CHECK:      %[[M:.*]] = llvm.load %{{.*}} : !llvm.ptr -> vector<32xi8>
// CHECK:      llvm.shufflevector %[[X]], %[[X]] [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] : vector<32xi8>
// CHECK:      llvm.sext %{{.*}} : vector<16xi8> to vector<16xi16>
// CHECK:      %[[LOW:.*]] = llvm.mul %{{.*}}, %{{.*}} : vector<16xi16>
// CHECK:      %[[HIGH:.*]] = llvm.call_intrinsic "llvm.x86.avx2.pmulh.w"
// CHECK:      llvm.shufflevector %[[LOW]], %[[HIGH]] [0, 16, 1, 17, 2, 18, 3, 19, 8, 24, 9, 25, 10, 26, 11, 27] : vector<16xi16>
// CHECK:      llvm.shufflevector %[[LOW]], %[[HIGH]] [4, 20, 5, 21, 6, 22, 7, 23, 12, 28, 13, 29, 14, 30, 15, 31] : vector<16xi16>
// CHECK:      llvm.call_intrinsic "llvm.fma.v8f32"
// CHECK:      llvm.call_intrinsic "llvm.x86.avx2.packsswb"
// CHECK:      llvm.shufflevector %{{.*}} [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23, 8, 9, 10, 11, 12, 13, 14, 15, 24,
// CHECK:      llvm.store %{{.*}} : vector<32xi8>, !llvm.ptr
