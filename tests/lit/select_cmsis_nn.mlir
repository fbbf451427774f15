// RUN: glow-opt %s -p glowll-select-cmsis-nn | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-cmsis-nn{helium=true}' | filecheck %s --check-prefix=HELIUM
// Kernel selection: a quantized FullyConnected with symmetric weights and an int32 bias
// becomes arm_fully_connected_s8, its parameter structs (fc_params, quant_params, the
// four dims) new weights in the constant region; the SoftMax becomes arm_softmax_s8 with
// immediate arguments; the FullyConnected with asymmetric weights keeps our kernel and
// says why.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x2x!quant.uniform<i8:f32, 3.90625e-03:-128>>
  %w = glowll.weight "w" {value = dense<[[1, -2, 3, -4], [5, 6, -7, 8]]> : tensor<2x4xi8>} : memref<2x4x!quant.uniform<i8:f32, 1.0e-02:0>>
  %b = glowll.weight "b" {value = dense<[100, -100]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %h = glowll.alloc : memref<1x2x!quant.uniform<i8:f32, 1.0e-01:-5>>
  glowll.fully_connected %h, %x, %w, %b activation relu : memref<1x2x!quant.uniform<i8:f32, 1.0e-01:-5>>, memref<1x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x4x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %wa = glowll.weight "wa" {value = dense<[[1, 2], [3, 4]]> : tensor<2x2xi8>} : memref<2x2x!quant.uniform<i8:f32, 1.0e-02:7>>
  %ba = glowll.weight "ba" {value = dense<[0, 0]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 1.0e-03:0>>
  %h2 = glowll.alloc : memref<1x2x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.fully_connected %h2, %h, %wa, %ba : memref<1x2x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x!quant.uniform<i8:f32, 1.0e-01:-5>>, memref<2x2x!quant.uniform<i8:f32, 1.0e-02:7>>, memref<2x!quant.uniform<i32:f32, 1.0e-03:0>>
  glowll.softmax %y, %h2 {axis = 1 : i64} : memref<1x2x!quant.uniform<i8:f32, 3.90625e-03:-128>>, memref<1x2x!quant.uniform<i8:f32, 1.0e-01:0>>
}

// fc_params: input_offset = -3 (minus the input zero point), filter_offset 0, output
// offset -5, Relu -> [-5, 127]; quant_params: 0.05 x 0.01 / 0.1 = 0.64 x 2^-7.
// CHECK:      %[[P:.*]] = glowll.weight "arm_fully_connected_s8_0_fc_params" {value = dense<[-3, 0, -5, -5, 127]> : tensor<5xi32>} : memref<5xi32>
// CHECK-NEXT: %[[Q:.*]] = glowll.weight "arm_fully_connected_s8_0_quant_params" {value = dense<[1374389504, -7]> : tensor<2xi32>} : memref<2xi32>
// CHECK-NEXT: glowll.weight "arm_fully_connected_s8_0_input_dims" {value = dense<[1, 1, 1, 4]> : tensor<4xi32>}
// CHECK-NEXT: glowll.weight "arm_fully_connected_s8_0_filter_dims" {value = dense<[4, 1, 1, 2]> : tensor<4xi32>}
// CHECK-NEXT: glowll.weight "arm_fully_connected_s8_0_bias_dims" {value = dense<[1, 1, 1, 2]> : tensor<4xi32>}
// CHECK-NEXT: glowll.weight "arm_fully_connected_s8_0_output_dims" {value = dense<[1, 1, 1, 2]> : tensor<4xi32>}
// CHECK-NEXT: glowll.library_call "arm_fully_connected_s8"(%h, %x, %w, %b, %[[P]], %[[Q]], {{.*}}) {replaces = "glowll.fully_connected", arguments = [#glowll.context<none>, #glowll.buffer<4>, #glowll.buffer<5>, #glowll.buffer<6>, #glowll.buffer<1>, #glowll.buffer<7>, #glowll.buffer<2>, #glowll.buffer<8>, #glowll.buffer<3>, #glowll.buffer<9>, #glowll.buffer<0>]}
// CHECK:      glowll.fully_connected %h2, %h, %wa, %ba {library = "not CMSIS-NN: weights are not symmetric (zero point 0){{.*}}"}
// CHECK-NEXT: glowll.library_call "arm_softmax_s8"(%y, %h2) {replaces = "glowll.softmax", arguments = [#glowll.buffer<1>, #glowll.int<1>, #glowll.int<2>, #glowll.int<1717986944>, #glowll.int<23>, #glowll.int<-248>, #glowll.buffer<0>], returns_void}

// The library's Helium build (the M55) reads the fully connected's kernel sums from its
// context instead of the bias: bias + input_offset (-3) x each weight row's sum
// (100 + -3 x -2 = 106, -100 + -3 x 12 = -136), a constant passed as context 10.
// HELIUM:      glowll.weight "arm_fully_connected_s8_0_kernel_sums" {value = dense<[106, -136]> : tensor<2xi32>}
// HELIUM-NEXT: glowll.library_call "arm_fully_connected_s8"({{.*}}) {replaces = "glowll.fully_connected", arguments = [#glowll.context<10>, #glowll.buffer<4>,
