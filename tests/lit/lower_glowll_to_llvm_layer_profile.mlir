// RUN: glow-opt %s -p lower-glowll-to-llvm | filecheck %s --check-prefix=SHARED
// RUN: glow-opt %s -p 'lower-glowll-to-llvm{layer-profile=kernels}' | filecheck %s --check-prefix=KERNELS
// RUN: glow-opt %s -p 'lower-glowll-to-llvm{layer-profile=timed}' | filecheck %s --check-prefix=TIMED
// A layer-profiling build gives every instruction a kernel of its own, external and
// noinline, named after its index, so each layer keeps an address range in the object;
// `timed` also calls glow_layer_mark(k) at the start and after each instruction.

glowll.function @net attributes {constant_size = 0 : i64, mutable_size = 128 : i64, activations_size = 64 : i64} {
  %x = glowll.placeholder input "x" {offset = 0 : i64} : memref<4xf32>
  %y = glowll.placeholder output "y" {offset = 64 : i64} : memref<4xf32>
  %a = glowll.alloc {offset = 0 : i64} : memref<4xf32>
  glowll.elementwise %a, %x {kind = "relu", name = "relu_a"} : memref<4xf32>, memref<4xf32>
  glowll.elementwise %y, %a {kind = "relu", name = "relu_b"} : memref<4xf32>, memref<4xf32>
}

// The normal build: the two identical instructions share one internal kernel, inlined later.
// SHARED:      llvm.func @net(
// SHARED-NEXT:   llvm.call @net_0_elementwise(
// SHARED:        llvm.call @net_0_elementwise(
// SHARED:      llvm.func internal @net_0_elementwise(
// SHARED-NOT:  no_inline
// SHARED-NOT:  llvm.func

// KERNELS:      llvm.func @net(
// KERNELS-NEXT:   llvm.call @net_layer0_elementwise(
// KERNELS:        llvm.call @net_layer1_elementwise(
// KERNELS-NOT:    llvm.call
// KERNELS:      llvm.func @net_layer0_elementwise({{.*}}) attributes {no_inline}
// KERNELS:      llvm.func @net_layer1_elementwise({{.*}}) attributes {no_inline}
// KERNELS-NOT:  llvm.func

// TIMED:      llvm.func @net(
// TIMED-NEXT:   %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// TIMED-NEXT:   llvm.call @glow_layer_mark(%[[ZERO]]) : (i32) -> ()
// TIMED-NEXT:   llvm.call @net_layer0_elementwise(
// TIMED-NEXT:   %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// TIMED-NEXT:   llvm.call @glow_layer_mark(%[[ONE]]) : (i32) -> ()
// TIMED:        llvm.call @net_layer1_elementwise(
// TIMED-NEXT:   %[[TWO:.*]] = llvm.mlir.constant(2 : i32) : i32
// TIMED-NEXT:   llvm.call @glow_layer_mark(%[[TWO]]) : (i32) -> ()
// TIMED:      llvm.func @glow_layer_mark(i32)
