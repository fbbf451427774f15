// RUN: glow-opt %s -p glowll-select-hifi4 | filecheck %s
// HiFi 4 NNLib: every argument is a pointer or an int32. The FullyConnected kernel has no
// activation clamp, so its fused Clip is a second call, reading an intermediate buffer the
// kernel writes (NNLib's pointers are __restrict__: never in place); the SoftMax takes its
// scratch (get_softmax_scratch_size: one int32 per element, rounded up to 8) from a buffer
// planned in the activations.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x2x!quant.uniform<i8:f32, 3.90625e-03:-128>>
  %w = glowll.weight "w" {value = dense<[[1, -2, 3, -4], [5, 6, -7, 8]]> : tensor<2x4xi8>} : memref<2x4x!quant.uniform<i8:f32, 1.0e-02:0>>
  %b = glowll.weight "b" {value = dense<[100, -100]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %h = glowll.alloc : memref<1x2x!quant.uniform<i8:f32, 1.0e-01:-5>>
  glowll.fully_connected %h, %x, %w, %b activation clip {clip_min = 0.0 : f32, clip_max = 6.0 : f32} : memref<1x2x!quant.uniform<i8:f32, 1.0e-01:-5>>, memref<1x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x4x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.softmax %y, %h {axis = 1 : i64} : memref<1x2x!quant.uniform<i8:f32, 3.90625e-03:-128>>, memref<1x2x!quant.uniform<i8:f32, 1.0e-01:-5>>
}

// Clip [0, 6] with scale 0.1 and offset -5: levels [-5, 55].
// CHECK:      %[[T:[0-9]+]] = glowll.alloc : memref<1x2x!quant.uniform<i8:f32, 1.0e-01:-5>>
// CHECK-NEXT: glowll.library_call "xa_nn_fully_connected_sym8sxasym8s_asym8s"(%[[T]], %x, %w, %b) {replaces = "glowll.fully_connected", arguments = [#glowll.buffer<0>, #glowll.buffer<2>, #glowll.buffer<1>, #glowll.buffer<3>, #glowll.int<4>, #glowll.int<2>, #glowll.int<-3>, #glowll.int<1374389504>, #glowll.int<-7>, #glowll.int<-5>]}
// CHECK-NEXT: glowll.library_call "xa_nn_vec_activation_min_max_8_8"(%h, %[[T]]) {continues, replaces = "glowll.fully_connected", arguments = [#glowll.buffer<0>, #glowll.buffer<1>, #glowll.int<-5>, #glowll.int<55>, #glowll.int<2>]}
// CHECK-NEXT: %[[S:.*]] = glowll.alloc {library_scratch} : memref<8xi8>
// CHECK-NEXT: glowll.library_call "xa_nn_vec_softmax_asym8s_asym8s"(%y, %h, %[[S]]) {replaces = "glowll.softmax", arguments = [#glowll.buffer<0>, #glowll.buffer<1>, #glowll.int<-248>, #glowll.int<23>, #glowll.int<1717986944>, #glowll.int<2>, #glowll.buffer<2>]}
