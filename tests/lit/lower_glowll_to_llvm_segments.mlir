// RUN: glow-opt %s -p 'lower-glowll-to-llvm{segment-size=2}' | filecheck %s
// RUN: glow-opt %s -p 'lower-glowll-to-llvm{segment-size=0}' | filecheck %s --check-prefix=WHOLE
// With more instructions than `segment-size`, the entry point calls noinline segment
// functions, each calling the kernels of `segment-size` consecutive instructions (O3's cost
// stays that of one segment); a segment with a library call returns its error status, which
// the entry point returns. Kernels are shared across segments.

glowll.function @net attributes {constant_size = 0 : i64, mutable_size = 128 : i64, activations_size = 64 : i64} {
  %x = glowll.placeholder input "x" {offset = 0 : i64} : memref<4xi8>
  %y = glowll.placeholder output "y" {offset = 64 : i64} : memref<4xi8>
  %a = glowll.alloc {offset = 0 : i64} : memref<4xi8>
  %b = glowll.alloc {offset = 32 : i64} : memref<4xi8>
  glowll.copy %a, %x {name = "c0"} : memref<4xi8>, memref<4xi8>
  glowll.copy %b, %a {name = "c1"} : memref<4xi8>, memref<4xi8>
  glowll.library_call "f"(%a, %b) {replaces = "glowll.copy", arguments = [#glowll.buffer<0>, #glowll.buffer<1>]} : memref<4xi8>, memref<4xi8>
  glowll.copy %y, %a {name = "c3"} : memref<4xi8>, memref<4xi8>
  glowll.copy %b, %y {name = "c4"} : memref<4xi8>, memref<4xi8>
}

// CHECK:      llvm.func @net(%[[C:.*]]: !llvm.ptr {{.*}}, %[[M:.*]]: !llvm.ptr {{.*}}, %[[A:.*]]: !llvm.ptr {{.*}}) -> i32
// CHECK:        llvm.call @net_segment0(%[[C]], %[[M]], %[[A]]) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT:   %[[S:.*]] = llvm.call @net_segment1(%[[C]], %[[M]], %[[A]]) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK:        llvm.icmp "ne" %[[S]]
// CHECK:        llvm.return %[[S]] : i32
// CHECK:        llvm.call @net_segment2(%[[C]], %[[M]], %[[A]]) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CHECK:        llvm.return
// CHECK:      llvm.func internal @net_segment0({{.*}}) attributes {no_inline}
// CHECK-NEXT:   llvm.call @net_0_copy(
// CHECK-NEXT:   llvm.getelementptr
// CHECK-NEXT:   llvm.call @net_1_copy(
// CHECK-NEXT:   llvm.return
// CHECK:      llvm.func internal @net_segment1({{.*}}) -> i32 attributes {no_inline}
// CHECK:        %[[L:.*]] = llvm.call @net_2_library_call(
// CHECK:        llvm.return %[[L]] : i32
// CHECK:        llvm.call @net_0_copy(
// CHECK:        llvm.return %{{.*}} : i32
// CHECK:      llvm.func internal @net_segment2({{.*}}) attributes {no_inline}
// CHECK:        llvm.call @net_1_copy(
// CHECK-NEXT:   llvm.return
// CHECK:      llvm.func internal @net_0_copy({{.*}}) {
// CHECK:      llvm.func internal @net_1_copy({{.*}}) {
// CHECK:      llvm.func internal @net_2_library_call(

// WHOLE:      llvm.func @net(
// WHOLE-NOT:  segment
// WHOLE:      llvm.func internal @net_0_copy(
