// RUN: glow-opt %s -p 'glowll-quantization-records{partnered=true}' | filecheck %s
// A per-channel layer with a float step table (`float_step_table`: its channels' steps proved at
// compile time, whose bounds the kernel's code holds) gets no record, though it has an
// equal-shaped partner: m and n keep their numbers. The same two layers on their integer
// requantization tables (p and q) get one each.

!x = !quant.uniform<i8:f32, 5.0e-01:3>
!y = !quant.uniform<i8:f32, 4.0e+00:0>
!w = !quant.uniform<i8:f32:0, {2.5e-01:0, 1.25e-01:0}>
!b = !quant.uniform<i32:f32:0, {1.25e-01:0, 6.25e-02:0}>

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x3x4x4x!x>
  %w = glowll.weight "w" {value = dense<[[[[1]], [[2]], [[3]]], [[[-1]], [[0]], [[1]]]]> : tensor<2x3x1x1xi8>} : memref<2x3x1x1x!w>
  %b = glowll.weight "b" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!b>
  %steps = glowll.weight "steps" {value = dense<[[1023410176, 1015021568], [0, 0], [0, 0]]> : tensor<3x2xi32>} : memref<3x2xi32>
  %table = glowll.weight "table" {value = dense<[[1073741824, 1073741824], [-4, -5]]> : tensor<2x2xi32>} : memref<2x2xi32>
  %ym = glowll.placeholder output "ym" : memref<1x2x4x4x!y>
  glowll.convolution %ym, %x, %w, %b requantization %steps {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, float_step_table = 0 : i64} : memref<1x2x4x4x!y>, memref<1x3x4x4x!x>, memref<2x3x1x1x!w>, memref<2x!b> requantization memref<3x2xi32>
  %yn = glowll.placeholder output "yn" : memref<1x2x4x4x!y>
  glowll.convolution %yn, %x, %w, %b requantization %steps {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, float_step_table = 0 : i64} : memref<1x2x4x4x!y>, memref<1x3x4x4x!x>, memref<2x3x1x1x!w>, memref<2x!b> requantization memref<3x2xi32>
  %yp = glowll.placeholder output "yp" : memref<1x2x4x4x!y>
  glowll.convolution %yp, %x, %w, %b requantization %table {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x2x4x4x!y>, memref<1x3x4x4x!x>, memref<2x3x1x1x!w>, memref<2x!b> requantization memref<2x2xi32>
  %yq = glowll.placeholder output "yq" : memref<1x2x4x4x!y>
  glowll.convolution %yq, %x, %w, %b requantization %table {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x2x4x4x!y>, memref<1x3x4x4x!x>, memref<2x3x1x1x!w>, memref<2x!b> requantization memref<2x2xi32>
}

// CHECK-NOT:  _parameters
// CHECK:      glowll.convolution %ym, %x, %w, %b requantization %steps {
// CHECK-NOT:  _parameters
// CHECK:      glowll.convolution %yn, %x, %w, %b requantization %steps {
// CHECK:      glowll.weight "w_parameters"
// CHECK-NEXT: glowll.convolution %yp, %x, %w, %b requantization %table parameters
// CHECK:      glowll.weight "w_parameters"
// CHECK-NEXT: glowll.convolution %yq, %x, %w, %b requantization %table parameters
