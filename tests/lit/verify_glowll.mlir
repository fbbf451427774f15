// RUN: glow-opt --split-input-file --verify-diagnostics --parsing-diagnostics %s 2>&1 | filecheck %s
// glowll instructions check dest against the shape their operands give (a kernel would
// write outside a dest that is too small) and the properties their kind needs.

glowll.function @convolution_dest_with_the_wrong_channel_count {
  %x = glowll.placeholder input "x" : memref<1x3x8x8xf32>
  %y = glowll.placeholder output "y" : memref<1x2x8x8xf32>
  %w = glowll.weight "w" : memref<4x3x3x3xf32>
  %b = glowll.weight "b" : memref<4xf32>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : memref<1x2x8x8xf32>, memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<4xf32>
}
// CHECK: glowll.convolution: dest has shape [1, 2, 8, 8], the operands give [1, 4, 8, 8]

// -----
glowll.function @loop_pairs_of_a_kernel_that_takes_none {
  %x = glowll.placeholder input "x" : memref<1x3x8x8xf32>
  %y = glowll.placeholder output "y" : memref<1x4x8x8xf32>
  %w = glowll.weight "w" : memref<4x3x3x3xf32>
  %b = glowll.weight "b" : memref<4xf32>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, microkernel = #glowll.microkernel<"vector-columns", {loop_pairs = 2 : i64}>, vector_tile = array<i64: 8, 12>} : memref<1x4x8x8xf32>, memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<4xf32>
}
// CHECK: glowll.convolution: the vector-columns microkernel takes no parameter loop_pairs

// -----
glowll.function @clip_without_its_bounds {
  %x = glowll.placeholder input "x" : memref<4xf32>
  %y = glowll.placeholder output "y" : memref<4xf32>
  glowll.elementwise %y, %x {kind = "clip"} : memref<4xf32>, memref<4xf32>
}
// CHECK: glowll.elementwise: "clip" needs clip_min

// -----
glowll.function @elementwise_source_larger_than_dest {
  %x = glowll.placeholder input "x" : memref<2x4xf32>
  %y = glowll.placeholder output "y" : memref<4xf32>
  glowll.elementwise %y, %x {kind = "relu"} : memref<4xf32>, memref<2x4xf32>
}
// CHECK: glowll.elementwise: dest has shape [4], the operands give [2, 4]

// -----
glowll.function @pool_dest_too_large {
  %x = glowll.placeholder input "x" : memref<1x1x4x4xf32>
  %y = glowll.placeholder output "y" : memref<1x1x3x3xf32>
  glowll.max_pool %y, %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : memref<1x1x3x3xf32>, memref<1x1x4x4xf32>
}
// CHECK: glowll.max_pool: dest has shape [1, 1, 3, 3], the operands give [1, 1, 2, 2]

// -----
glowll.function @fully_connected_weights_the_wrong_way {
  %x = glowll.placeholder input "x" : memref<1x8xf32>
  %y = glowll.placeholder output "y" : memref<1x4xf32>
  %w = glowll.weight "w" : memref<8x4xf32>
  %b = glowll.weight "b" : memref<4xf32>
  glowll.fully_connected %y, %x, %w, %b : memref<1x4xf32>, memref<1x8xf32>, memref<8x4xf32>, memref<4xf32>
}
// CHECK: glowll.fully_connected: dest [1, 4], input [1, 8], weights [8, 4] (out, in) and bias [4] do not fit

// -----
glowll.function @insert_past_the_end {
  %x = glowll.placeholder input "x" : memref<1x2x4xf32>
  %y = glowll.placeholder output "y" : memref<1x3x4xf32>
  glowll.insert_tensor %y, %x {offsets = array<i64: 0, 2, 0>} : memref<1x3x4xf32>, memref<1x2x4xf32>
}
// CHECK: glowll.insert_tensor: [1, 2, 4] at offsets [0, 2, 0] does not lie within dest [1, 3, 4]

// -----
glowll.function @transpose_that_is_not_a_permutation {
  %x = glowll.placeholder input "x" : memref<2x3xf32>
  %y = glowll.placeholder output "y" : memref<3x2xf32>
  glowll.transpose %y, %x {perm = array<i64: 1, 1>} : memref<3x2xf32>, memref<2x3xf32>
}
// CHECK: glowll.transpose: [1, 1] is not a permutation of 2 dimensions

// -----
glowll.function @copy_of_another_size {
  %x = glowll.placeholder input "x" : memref<2x3xf32>
  %y = glowll.placeholder output "y" : memref<7xf32>
  glowll.copy %y, %x : memref<7xf32>, memref<2x3xf32>
}
// CHECK: glowll.copy: dest has 7 elements, the input 6

// -----
glowll.function @convolution_activation_mx {
  %x = glowll.placeholder input "x" : memref<1x3x8x8xf32>
  %y = glowll.placeholder output "y" : memref<1x4x8x8xf32>
  %w = glowll.weight "w" : memref<4x3x3x3xf32>
  %b = glowll.weight "b" : memref<4xf32>
  glowll.convolution %y, %x, %w, %b activation mx {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : memref<1x4x8x8xf32>, memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<4xf32>
}
// CHECK: verify_glowll.mlir:[[# @LINE - 2]]:{{[0-9]+}}
// CHECK: Expected `relu`, or `clip`.

// -----
glowll.function @convolution_pool_mx {
  %x = glowll.placeholder input "x" : memref<1x3x8x8xf32>
  %y = glowll.placeholder output "y" : memref<1x4x4x4xf32>
  %w = glowll.weight "w" : memref<4x3x3x3xf32>
  %b = glowll.weight "b" : memref<4xf32>
  glowll.convolution %y, %x, %w, %b pool mx {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : memref<1x4x4x4xf32>, memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<4xf32>
}
// CHECK: Expected `max`, or `avg`.

// -----
glowll.function @convolution_pool_without_its_window {
  %x = glowll.placeholder input "x" : memref<1x3x8x8xf32>
  %y = glowll.placeholder output "y" : memref<1x4x4x4xf32>
  %w = glowll.weight "w" : memref<4x3x3x3xf32>
  %b = glowll.weight "b" : memref<4xf32>
  glowll.convolution %y, %x, %w, %b pool max {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, pool_kernel = array<i64: 2, 2>} : memref<1x4x4x4xf32>, memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<4xf32>
}
// CHECK: glowll.convolution: a fused pool needs pool_strides, pool_pads

// -----
glowll.function @convolution_clip_activation_without_its_bounds {
  %x = glowll.placeholder input "x" : memref<1x3x8x8xf32>
  %y = glowll.placeholder output "y" : memref<1x4x8x8xf32>
  %w = glowll.weight "w" : memref<4x3x3x3xf32>
  %b = glowll.weight "b" : memref<4xf32>
  glowll.convolution %y, %x, %w, %b activation clip {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, clip_min = 0.0 : f32} : memref<1x4x8x8xf32>, memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<4xf32>
}
// CHECK: glowll.convolution: a clip activation needs clip_min and clip_max

// -----
glowll.function @convolution_of_a_3d_input {
  %x = glowll.placeholder input "x" : memref<3x8x8xf32>
  %y = glowll.placeholder output "y" : memref<1x4x8x8xf32>
  %w = glowll.weight "w" : memref<4x3x3x3xf32>
  %b = glowll.weight "b" : memref<4xf32>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : memref<1x4x8x8xf32>, memref<3x8x8xf32>, memref<4x3x3x3xf32>, memref<4xf32>
}
// CHECK: glowll.convolution: the input must have 4 dimensions, not 3

// -----
glowll.function @convolution_with_float_strides {
  %x = glowll.placeholder input "x" : memref<1x3x8x8xf32>
  %y = glowll.placeholder output "y" : memref<1x4x8x8xf32>
  %w = glowll.weight "w" : memref<4x3x3x3xf32>
  %b = glowll.weight "b" : memref<4xf32>
  glowll.convolution %y, %x, %w, %b {strides = array<f32: 1.0, 1.0>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : memref<1x4x8x8xf32>, memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<4xf32>
}
// CHECK: glowll.convolution: strides must hold 2 integers, not [1.0, 1.0]

// -----
glowll.function @fully_connected_activation_mx {
  %x = glowll.placeholder input "x" : memref<1x8xf32>
  %y = glowll.placeholder output "y" : memref<1x4xf32>
  %w = glowll.weight "w" : memref<4x8xf32>
  %b = glowll.weight "b" : memref<4xf32>
  glowll.fully_connected %y, %x, %w, %b activation mx : memref<1x4xf32>, memref<1x8xf32>, memref<4x8xf32>, memref<4xf32>
}
// CHECK: Expected `relu`, or `clip`.

// -----
glowll.function @matmul_dest_too_narrow {
  %x = glowll.placeholder input "x" : memref<2x3xf32>
  %w = glowll.weight "w" : memref<3x5xf32>
  %y = glowll.placeholder output "y" : memref<2x4xf32>
  glowll.matmul %y, %x, %w : memref<2x4xf32>, memref<2x3xf32>, memref<3x5xf32>
}
// CHECK: glowll.matmul: dest has shape [2, 4], the operands give [2, 5]

// -----
glowll.function @matmul_of_a_vector {
  %x = glowll.placeholder input "x" : memref<3xf32>
  %w = glowll.weight "w" : memref<3x5xf32>
  %y = glowll.placeholder output "y" : memref<5xf32>
  glowll.matmul %y, %x, %w : memref<5xf32>, memref<3xf32>, memref<3x5xf32>
}
// CHECK: glowll.matmul: cannot multiply [3] by [3, 5]

// -----
glowll.function @avg_pool_with_one_stride {
  %x = glowll.placeholder input "x" : memref<1x1x4x4xf32>
  %y = glowll.placeholder output "y" : memref<1x1x2x2xf32>
  glowll.avg_pool %y, %x {kernel = array<i64: 2, 2>, strides = array<i64: 2>, pads = array<i64: 0, 0, 0, 0>} : memref<1x1x2x2xf32>, memref<1x1x4x4xf32>
}
// CHECK: glowll.avg_pool: strides must hold 2 integers, not [2]

// -----
glowll.function @max_pool_layout_mx {
  %x = glowll.placeholder input "x" : memref<1x4x4x1xf32>
  %y = glowll.placeholder output "y" : memref<1x2x2x1xf32>
  glowll.max_pool %y, %x layout mx {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : memref<1x2x2x1xf32>, memref<1x4x4x1xf32>
}
// CHECK: Expected `NCHW`, or `NHWC`.

// -----
glowll.function @leaky_relu_without_alpha {
  %x = glowll.placeholder input "x" : memref<4xf32>
  %y = glowll.placeholder output "y" : memref<4xf32>
  glowll.elementwise %y, %x {kind = "leaky_relu"} : memref<4xf32>, memref<4xf32>
}
// CHECK: glowll.elementwise: "leaky_relu" needs alpha

// -----
glowll.function @splat_without_its_value {
  %y = glowll.placeholder output "y" : memref<4xf32>
  glowll.elementwise %y {kind = "splat"} : memref<4xf32>
}
// CHECK: glowll.elementwise: "splat" needs value

// -----
glowll.function @relu_with_a_value_it_would_ignore {
  %x = glowll.placeholder input "x" : memref<4xf32>
  %y = glowll.placeholder output "y" : memref<4xf32>
  glowll.elementwise %y, %x {kind = "relu", value = 1.0 : f32} : memref<4xf32>, memref<4xf32>
}
// CHECK: glowll.elementwise: "relu" takes no value

// -----
glowll.function @compare_without_its_predicate {
  %x = glowll.placeholder input "x" : memref<4xf32>
  %y = glowll.placeholder output "y" : memref<4xi1>
  glowll.elementwise %y, %x, %x {kind = "compare"} : memref<4xi1>, memref<4xf32>, memref<4xf32>
}
// CHECK: glowll.elementwise: "compare" needs predicate

// -----
glowll.function @compare_predicate_mx {
  %x = glowll.placeholder input "x" : memref<4xf32>
  %y = glowll.placeholder output "y" : memref<4xi1>
  glowll.elementwise %y, %x, %x predicate mx {kind = "compare"} : memref<4xi1>, memref<4xf32>, memref<4xf32>
}
// CHECK: Expected `eq`, `ne`, `lt`, `le`, `gt`, or `ge`.

// -----
glowll.function @compare_into_floats {
  %x = glowll.placeholder input "x" : memref<4xf32>
  %y = glowll.placeholder output "y" : memref<4xf32>
  glowll.elementwise %y, %x, %x predicate lt {kind = "compare"} : memref<4xf32>, memref<4xf32>, memref<4xf32>
}
// CHECK: glowll.elementwise: "compare" writes a boolean (i1) dest

// -----
glowll.function @elementwise_kind_mx {
  %x = glowll.placeholder input "x" : memref<4xf32>
  %y = glowll.placeholder output "y" : memref<4xf32>
  glowll.elementwise %y, %x {kind = "mx"} : memref<4xf32>, memref<4xf32>
}
// CHECK: glowll.elementwise: unknown kind "mx"

// -----
glowll.function @softmax_on_an_axis_the_input_lacks {
  %x = glowll.placeholder input "x" : memref<2x3xf32>
  %y = glowll.placeholder output "y" : memref<2x3xf32>
  glowll.softmax %y, %x {axis = 2 : i64} : memref<2x3xf32>, memref<2x3xf32>
}
// CHECK: glowll.softmax: axis 2 is not an axis of a rank-2 input

// -----
glowll.function @local_response_normalization_dest_of_another_shape {
  %x = glowll.placeholder input "x" : memref<1x4x2x2xf32>
  %y = glowll.placeholder output "y" : memref<1x4x2x1xf32>
  glowll.local_response_normalization %y, %x {size = 3 : i64, alpha = 1.0e-04 : f32, beta = 0.75 : f32, bias = 1.0 : f32} : memref<1x4x2x1xf32>, memref<1x4x2x2xf32>
}
// CHECK: glowll.local_response_normalization: dest has shape [1, 4, 2, 1], the operands give [1, 4, 2, 2]

// -----
glowll.function @reduce_dropping_the_reduced_axis {
  %x = glowll.placeholder input "x" : memref<2x3xf32>
  %y = glowll.placeholder output "y" : memref<2xf32>
  glowll.reduce sum %y, %x {axes = array<i64: 1>} : memref<2xf32>, memref<2x3xf32>
}
// CHECK: glowll.reduce: dest keeps the reduced axes (as 1)

// -----
glowll.function @reduce_past_the_last_axis {
  %x = glowll.placeholder input "x" : memref<2x3xf32>
  %y = glowll.placeholder output "y" : memref<2x1xf32>
  glowll.reduce max %y, %x {axes = array<i64: 2>} : memref<2x1xf32>, memref<2x3xf32>
}
// CHECK: glowll.reduce: cannot reduce axes [2] of [2, 3] with "max"

// -----
glowll.function @reduce_kind_mx {
  %x = glowll.placeholder input "x" : memref<2x3xf32>
  %y = glowll.placeholder output "y" : memref<2x1xf32>
  glowll.reduce mx %y, %x {axes = array<i64: 1>} : memref<2x1xf32>, memref<2x3xf32>
}
// CHECK: Expected `sum`, `mean`, `max`, `min`, or `prod`.

// -----
glowll.function @arg_reduce_into_floats {
  %x = glowll.placeholder input "x" : memref<2x3xf32>
  %y = glowll.placeholder output "y" : memref<2x1xf32>
  glowll.arg_reduce max %y, %x {axis = 1 : i64} : memref<2x1xf32>, memref<2x3xf32>
}
// CHECK: glowll.arg_reduce: the result holds i64 indices

// -----
glowll.function @gather_with_float_indices {
  %x = glowll.placeholder input "x" : memref<4x3xf32>
  %i = glowll.placeholder input "i" : memref<2xf32>
  %y = glowll.placeholder output "y" : memref<2x3xf32>
  glowll.gather %y, %x, %i {axis = 0 : i64} : memref<2x3xf32>, memref<4x3xf32>, memref<2xf32>
}
// CHECK: glowll.gather: indices must be integers indexing an axis of the data

// -----
glowll.function @gather_elements_of_another_rank {
  %x = glowll.placeholder input "x" : memref<4x3xf32>
  %i = glowll.placeholder input "i" : memref<2xi64>
  %y = glowll.placeholder output "y" : memref<2xf32>
  glowll.gather_elements %y, %x, %i {axis = 0 : i64} : memref<2xf32>, memref<4x3xf32>, memref<2xi64>
}
// CHECK: glowll.gather_elements: indices must be integers of the data's rank

// -----
glowll.function @copy_changing_the_element_type {
  %x = glowll.placeholder input "x" : memref<6xi8>
  %y = glowll.placeholder output "y" : memref<2x3xf32>
  glowll.copy %y, %x : memref<2x3xf32>, memref<6xi8>
}
// CHECK: glowll.copy: dest and input are stored as f32 and i8; they must be stored alike

// -----
glowll.function @extract_past_the_end {
  %x = glowll.placeholder input "x" : memref<4xf32>
  %y = glowll.placeholder output "y" : memref<3xf32>
  glowll.extract_tensor %y, %x {starts = array<i64: 2>, steps = array<i64: 1>} : memref<3xf32>, memref<4xf32>
}
// CHECK: glowll.extract_tensor: slice out of bounds of [4]

// -----
glowll.function @extract_without_a_start_per_axis {
  %x = glowll.placeholder input "x" : memref<4x4xf32>
  %y = glowll.placeholder output "y" : memref<2x4xf32>
  glowll.extract_tensor %y, %x {starts = array<i64: 0>, steps = array<i64: 1, 1>} : memref<2x4xf32>, memref<4x4xf32>
}
// CHECK: glowll.extract_tensor: starts must hold 2 integers, not [0]

// -----
glowll.function @resample_with_float_taps {
  %x = glowll.placeholder input "x" : memref<1x4xf32>
  %t = glowll.weight "t" : memref<8x1xf32>
  %w = glowll.weight "w" : memref<8x1xf32>
  %y = glowll.placeholder output "y" : memref<1x8xf32>
  glowll.resample %y, %x, %t, %w {axis = 1 : i64} : memref<1x8xf32>, memref<1x4xf32>, memref<8x1xf32>, memref<8x1xf32>
}
// CHECK: glowll.resample: taps must be integers, not f32

// -----
glowll.function @resample_dest_of_another_size {
  %x = glowll.placeholder input "x" : memref<1x4xf32>
  %t = glowll.weight "t" : memref<8x1xi32>
  %w = glowll.weight "w" : memref<8x1xf32>
  %y = glowll.placeholder output "y" : memref<1x6xf32>
  glowll.resample %y, %x, %t, %w {axis = 1 : i64} : memref<1x6xf32>, memref<1x4xf32>, memref<8x1xi32>, memref<8x1xf32>
}
// CHECK: glowll.resample: dest has shape [1, 6], the operands give [1, 8]

// -----
glowll.function @library_call_argument_naming_no_operand {
  %x = glowll.placeholder input "x" : memref<4xi8>
  %y = glowll.placeholder output "y" : memref<4xi8>
  glowll.library_call "f"(%y, %x) {replaces = "glowll.copy", arguments = [#glowll.buffer<0>, #glowll.pointers<1, 2>]} : memref<4xi8>, memref<4xi8>
}
// CHECK: glowll.library_call: argument #glowll.pointers<1, 2> names no operand (there are 2)

// -----
glowll.function @library_call_argument_in_the_old_string_form {
  %x = glowll.placeholder input "x" : memref<4xi8>
  %y = glowll.placeholder output "y" : memref<4xi8>
  glowll.library_call "f"(%y, %x) {replaces = "glowll.copy", arguments = [#glowll.buffer<0>, "int 3"]} : memref<4xi8>, memref<4xi8>
}
// CHECK: glowll.library_call: argument "int 3" is not one of #glowll.buffer, context, pointers, int, null

// -----
glowll.function @library_call_int_beyond_int32 {
  %x = glowll.placeholder input "x" : memref<4xi8>
  %y = glowll.placeholder output "y" : memref<4xi8>
  glowll.library_call "f"(%y, %x) {replaces = "glowll.copy", arguments = [#glowll.buffer<0>, #glowll.int<4294967296>]} : memref<4xi8>, memref<4xi8>
}
// CHECK: #glowll.int<4294967296> does not fit an int32

// -----
glowll.function @tensorview_past_its_source {
  %x = glowll.placeholder input "x" : memref<6xf32>
  %v = glowll.tensorview %x {offset = 2 : i64} : memref<6xf32> -> memref<2x3xf32>
}
// CHECK: glowll.tensorview: the view does not fit in its source

// -----
glowll.function @weight_whose_value_has_another_shape {
  %w = glowll.weight "w" {value = dense<[1.0, 2.0]> : tensor<2xf32>} : memref<3xf32>
}
// CHECK: glowll.weight: "w": value of shape [2] in a buffer of shape [3]

// -----
glowll.function @alloc_live_range_backwards {
  %a = glowll.alloc {live_range = array<i64: 3, 1>} : memref<4xf32>
}
// CHECK: glowll.alloc: live_range [3, 1] is not a range of instructions

// -----
glowll.function @placeholder_kind_mx {
  %x = glowll.placeholder mx "x" : memref<4xf32>
}
// CHECK: Expected `input`, `output`, or `state`.

// -----
glowll.function @placeholder_of_dynamic_shape {
  %x = glowll.placeholder input "x" : memref<?xf32>
}
// CHECK: glowll.placeholder: the buffer memref<?xf32> has a dynamic or negative dimension

// -----
glowll.function @helium_mul_of_int16_levels {
  %a = glowll.placeholder input "a" : memref<1x2x3x4x!quant.uniform<i16:f32, 5.0e-02:0>>
  %b = glowll.placeholder input "b" : memref<1x2x1x1x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.elementwise %y, %a, %b {kind = "mul", microkernel = #glowll.microkernel<"arm-mve">} : memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x3x4x!quant.uniform<i16:f32, 5.0e-02:0>>, memref<1x2x1x1x!quant.uniform<i8:f32, 5.0e-02:3>>
}
// CHECK: glowll.elementwise: the arm-mve microkernel of "mul" takes int8 operands (level-tables: add, sub; channel-products: mul; reciprocal-quantize: quantize; arm-mve: add, sub, mul; x86-avx512: add, sub, mul; vector-elementwise-int8: add, sub, mul; vector-quantize-int8: quantize)

// -----
glowll.function @helium_div {
  %a = glowll.placeholder input "a" : memref<1x2x3x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %b = glowll.placeholder input "b" : memref<1x2x1x1x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.elementwise %y, %a, %b {kind = "div", microkernel = #glowll.microkernel<"arm-mve">} : memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x3x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x1x1x!quant.uniform<i8:f32, 5.0e-02:3>>
}
// CHECK: glowll.elementwise: "div" takes no microkernel

// -----
glowll.function @helium_softmax_of_int16_levels {
  %x = glowll.placeholder input "x" : memref<2x10x!quant.uniform<i16:f32, 5.0e-04:0>>
  %y = glowll.placeholder output "y" : memref<2x10x!quant.uniform<i16:f32, 3.0517578125e-05:0>>
  glowll.softmax %y, %x {axis = 1 : i64, microkernel = #glowll.microkernel<"arm-mve">} : memref<2x10x!quant.uniform<i16:f32, 3.0517578125e-05:0>>, memref<2x10x!quant.uniform<i16:f32, 5.0e-04:0>>
}
// CHECK: glowll.softmax: the arm-mve microkernel of a softmax takes int8 levels (level-tables, arm-mve)

// -----
glowll.function @softmax_on_another_microkernel {
  %x = glowll.placeholder input "x" : memref<2x10x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<2x10x!quant.uniform<i8:f32, 3.90625e-03:-128>>
  glowll.softmax %y, %x {axis = 1 : i64, microkernel = #glowll.microkernel<"x86-vnni">} : memref<2x10x!quant.uniform<i8:f32, 3.90625e-03:-128>>, memref<2x10x!quant.uniform<i8:f32, 5.0e-02:3>>
}
// CHECK: glowll.softmax: the x86-vnni microkernel of a softmax takes int8 levels (level-tables, arm-mve)

// -----
glowll.function @vnni_depthwise_filter_of_int16_blocks {
  %x = glowll.placeholder input "x" : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w = glowll.placeholder input "w" : memref<2x1x1x3x1x!quant.uniform<i16:f32, 1.0e-02:0>>
  %b = glowll.placeholder input "b" : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64, microkernel = #glowll.microkernel<"x86-vnni-depthwise">} : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x1x3x1x!quant.uniform<i16:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
}
// CHECK: glowll.convolution: the x86-vnni-depthwise microkernel takes a depthwise convolution of an int8 filter [C, 1, KH, KW] whose taps and plane it holds

// -----
glowll.function @avx512_mul_of_int16_levels {
  %a = glowll.placeholder input "a" : memref<1x2x3x4x!quant.uniform<i16:f32, 5.0e-02:3>>
  %b = glowll.placeholder input "b" : memref<1x2x1x1x!quant.uniform<i16:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x2x3x4x!quant.uniform<i16:f32, 1.0e-01:0>>
  glowll.elementwise %y, %a, %b {kind = "mul", microkernel = #glowll.microkernel<"x86-avx512">} : memref<1x2x3x4x!quant.uniform<i16:f32, 1.0e-01:0>>, memref<1x2x3x4x!quant.uniform<i16:f32, 5.0e-02:3>>, memref<1x2x1x1x!quant.uniform<i16:f32, 5.0e-02:3>>
}
// CHECK: glowll.elementwise: the x86-avx512 microkernel of "mul" takes int8 operands (level-tables: add, sub; channel-products: mul; reciprocal-quantize: quantize; arm-mve: add, sub, mul; x86-avx512: add, sub, mul; vector-elementwise-int8: add, sub, mul; vector-quantize-int8: quantize)

// -----
glowll.function @vbmi_lookup_table_of_int16_levels {
  %x = glowll.placeholder input "x" : memref<2x100x!quant.uniform<i16:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<2x100x!quant.uniform<i8:f32, 2.0e-02:-7>>
  %t = glowll.placeholder input "t" : memref<256x!quant.uniform<i8:f32, 2.0e-02:-7>>
  glowll.int_lookup_table %y, %x, %t {microkernel = #glowll.microkernel<"x86-vbmi">} : memref<2x100x!quant.uniform<i8:f32, 2.0e-02:-7>>, memref<2x100x!quant.uniform<i16:f32, 5.0e-02:3>>, memref<256x!quant.uniform<i8:f32, 2.0e-02:-7>>
}
// CHECK: glowll.int_lookup_table: the x86-vbmi microkernel of a lookup table takes int8 levels and an int8 table (x86-vbmi, vector-lookup-int8)

// -----
glowll.function @lookup_table_of_an_unknown_microkernel {
  %x = glowll.placeholder input "x" : memref<2x100x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<2x100x!quant.uniform<i8:f32, 2.0e-02:-7>>
  %t = glowll.placeholder input "t" : memref<256x!quant.uniform<i8:f32, 2.0e-02:-7>>
  glowll.int_lookup_table %y, %x, %t {microkernel = #glowll.microkernel<"arm-mve">} : memref<2x100x!quant.uniform<i8:f32, 2.0e-02:-7>>, memref<2x100x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<256x!quant.uniform<i8:f32, 2.0e-02:-7>>
}
// CHECK: glowll.int_lookup_table: the arm-mve microkernel of a lookup table takes int8 levels and an int8 table (x86-vbmi, vector-lookup-int8)

// -----
glowll.function @initialize_state_with_a_wide_ready_word {
  %r = glowll.placeholder state "ready" : memref<2xi32>
  %s = glowll.placeholder state "s" : memref<4xf32>
  glowll.initialize_state %s, %r {fill = 0.0 : f32} : memref<4xf32>, memref<2xi32>
}
// CHECK: glowll.initialize_state: the ready word must be memref<1xi32>, not memref<2xi32>

// -----
glowll.function @initialize_state_with_no_initial_value {
  %r = glowll.placeholder state "ready" : memref<1xi32>
  %s = glowll.placeholder state "s" : memref<4xf32>
  glowll.initialize_state %s, %r : memref<4xf32>, memref<1xi32>
}
// CHECK: glowll.initialize_state: give the initial value as one of `initial` (a buffer) and `fill`

// -----
glowll.function @initialize_state_from_another_shape {
  %r = glowll.placeholder state "ready" : memref<1xi32>
  %s = glowll.placeholder state "s" : memref<4xf32>
  %i = glowll.weight "i" : memref<2x2xf32>
  glowll.initialize_state %s, %r initial %i : memref<4xf32>, memref<1xi32>, memref<2x2xf32>
}
// CHECK: glowll.initialize_state: initial memref<2x2xf32> and dest memref<4xf32> differ in shape

// -----
glowll.function @avg_pool_widening_to_another_scale {
  %x = glowll.placeholder input "x" : memref<1x2x3x3x!quant.uniform<i8:f32, 4.0e-02:-128>>
  %y = glowll.placeholder output "y" : memref<1x2x1x1x!quant.uniform<i16:f32, 1.0e-04:-32768>>
  glowll.avg_pool %y, %x {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, pool_widening = 8 : i64} : memref<1x2x1x1x!quant.uniform<i16:f32, 1.0e-04:-32768>>, memref<1x2x3x3x!quant.uniform<i8:f32, 4.0e-02:-128>>
}
// CHECK: glowll.avg_pool: pool_widening = 8 averages int8 levels into their int16 finer levels (quant.finer_levels)

// -----
glowll.function @int16_gate_beside_a_float_step {
  %x = glowll.placeholder input "x" : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %g = glowll.placeholder input "g" : memref<1x2x1x1x!quant.uniform<i8:f32, 3.90625e-03:-128>>
  %y = glowll.placeholder output "y" : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %t = glowll.weight "t" : memref<256x4xi16>
  glowll.elementwise %y, %x, %g table %t {kind = "mul", microkernel = #glowll.microkernel<"vector-elementwise-int8">, int16_gate = array<i32: -128, 127>, float_step = array<f32: 1.0, 0.0, 0.0>} : memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x1x1x!quant.uniform<i8:f32, 3.90625e-03:-128>> table memref<256x4xi16>
}
// CHECK: glowll.elementwise: an int16_gate is array<i32: first, last>, alone or beside a float_gate (a hybrid), its gate_table an i16 [last - first + 1, 4]

// -----
glowll.function @x86_depthwise_bias_rows_not_its_classes {
  %x = glowll.placeholder input "x" : memref<1x2x2x16x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x2x2x16x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w = glowll.placeholder input "w" : memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %b = glowll.placeholder input "b" : memref<3x2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64, microkernel = #glowll.microkernel<"x86-vnni-depthwise", {bias_rows = 3 : i64}>} : memref<1x2x2x16x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x2x16x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<3x2x!quant.uniform<i32:f32, 5.0e-04:0>>
}
// CHECK: glowll.convolution: x86-vnni-depthwise's bias_rows must be its plane's classes of output rows with kernel rows in the padding (2)

// -----
glowll.function @bias_rows_not_the_bias_shape {
  %x = glowll.placeholder input "x" : memref<1x2x2x16x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x2x2x16x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w = glowll.placeholder input "w" : memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %b = glowll.placeholder input "b" : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64, microkernel = #glowll.microkernel<"x86-vnni-depthwise", {bias_rows = 2 : i64}>} : memref<1x2x2x16x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x2x16x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
}
// CHECK: glowll.convolution: bias must have one element per output channel, in each of its 2 rows (bias_rows)
