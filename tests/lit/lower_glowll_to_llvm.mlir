// RUN: glow-opt %s -p lower-glowll-to-llvm | filecheck %s
// RUN: glow-opt %s -p lower-glowll-to-llvm -t llvm | filecheck %s --check-prefix=IR
// The entry point takes Glow's three region pointers and calls one internal kernel per
// instruction with noalias pointers to its buffers (region base + offset).

glowll.function @net attributes {constant_size = 64 : i64, mutable_size = 128 : i64, activations_size = 64 : i64} {
  %x = glowll.placeholder input "x" {offset = 0 : i64} : memref<4xf32>
  %y = glowll.placeholder output "y" {offset = 64 : i64} : memref<4xf32>
  %w = glowll.weight "w" {value = dense<2.0> : tensor<4xf32>, offset = 0 : i64} : memref<4xf32>
  %a = glowll.alloc {offset = 0 : i64} : memref<4xf32>
  glowll.elementwise %a, %x, %w {kind = "mul"} : memref<4xf32>, memref<4xf32>, memref<4xf32>
  glowll.elementwise %y, %a {kind = "relu"} : memref<4xf32>, memref<4xf32>
}

// CHECK:      llvm.func @net(%[[CONST:.*]]: !llvm.ptr {llvm.noalias, llvm.align = 64 : i64}, %[[MUT:.*]]: !llvm.ptr {{.*}}, %[[ACT:.*]]: !llvm.ptr {{.*}}) -> i32
// CHECK-NEXT:   llvm.call @net_0_elementwise(%[[ACT]], %[[MUT]], %[[CONST]])
// CHECK:        %[[YPTR:.*]] = llvm.getelementptr inbounds %[[MUT]][64] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK:        llvm.call @net_1_elementwise(%[[YPTR]], %[[ACT]])
// CHECK:      llvm.func internal @net_0_elementwise
// CHECK:        llvm.fmul {{.*}} {fastmathFlags = #llvm.fastmath<contract>}

// IR: define i32 @"net"(ptr noalias align 64 %".1", ptr noalias align 64 %".2", ptr noalias align 64 %".3")
// IR: fmul contract float
