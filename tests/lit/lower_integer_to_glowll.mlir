// RUN: glow-opt %s -p lower-glow-to-glowll | filecheck %s
// RUN: glow-opt %s -p lower-glow-to-glowll,glowll-allocate-memory,lower-glowll-to-llvm | filecheck %s --check-prefix=LLVM
// RUN: glow-opt %s -p lower-glow-to-glowll,glowll-allocate-memory,lower-glowll-to-llvm | glow-opt | filecheck %s --check-prefix=LLVM
// Integer and boolean tensors: Cast, comparison, Where, ArgMax and a run-time Gather
// become elementwise kinds and their own instructions; buffers keep the signedness
// (ui8) and booleans (i1) in their memref types, and the kernels convert with LLVM's
// fptosi / uitofp / zext, which the llvm stage prints and parses back.

glow.function @net {
  %x = glow.placeholder "x" : tensor<2x3xf32>
  %n = glow.placeholder "n" : tensor<2x3xui8>
  %i = glow.placeholder "i" : tensor<4xi64>
  %c = glow.compare gt %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %q = glow.convert %x : (tensor<2x3xf32>) -> tensor<2x3xi32>
  %f = glow.convert %n : (tensor<2x3xui8>) -> tensor<2x3xf32>
  %s = glow.select %c, %x, %f : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %a = glow.arg_reduce max %s {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2xi64>
  %g = glow.gather %s, %i {axis = 1 : i64} : (tensor<2x3xf32>, tensor<4xi64>) -> tensor<2x4xf32>
  glow.save %q as "q" : tensor<2x3xi32>
  glow.save %a as "a" : tensor<2xi64>
  glow.save %g as "g" : tensor<2x4xf32>
}

// CHECK:      %[[C:.*]] = glowll.alloc : memref<2x3xi1>
// CHECK-NEXT: glowll.elementwise %[[C]], %[[X:.*]], %[[X]] predicate gt {kind = "compare"} : memref<2x3xi1>, memref<2x3xf32>, memref<2x3xf32>
// CHECK-NEXT: glowll.elementwise %[[Q:.*]], %[[X]] {kind = "convert"} : memref<2x3xi32>, memref<2x3xf32>
// CHECK:      glowll.elementwise %[[F:.*]], %[[N:.*]] {kind = "convert"} : memref<2x3xf32>, memref<2x3xui8>
// CHECK:      glowll.elementwise %[[S:.*]], %[[C]], %[[X]], %[[F]] {kind = "select"} : memref<2x3xf32>, memref<2x3xi1>, memref<2x3xf32>, memref<2x3xf32>
// CHECK:      %[[A:.*]] = glowll.alloc : memref<2x1xi64>
// CHECK-NEXT: %{{.*}} = glowll.tensorview %[[A]]
// CHECK-NEXT: glowll.arg_reduce max %[[A]], %[[S]] {axis = 1 : i64} : memref<2x1xi64>, memref<2x3xf32>
// CHECK-NEXT: glowll.gather %{{.*}}, %[[S]], %{{.*}} {axis = 1 : i64} : memref<2x4xf32>, memref<2x3xf32>, memref<4xi64>

// LLVM-DAG: llvm.fptosi %{{.*}} : f32 to i32
// LLVM-DAG: llvm.uitofp %{{.*}} : i8 to f32
// LLVM-DAG: llvm.zext %{{.*}} : i1 to i8
// LLVM-DAG: llvm.fcmp "ogt"
