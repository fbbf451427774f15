// RUN: glow-opt %s -p glow-convolve-interleaved-rows | filecheck %s
// A convolution of an NHWC input transposed to NCHW reads the input in place: a reshape
// (a view) to one channel whose rows interleave the 2 channels, a filter [O, 1, KH, KW*C]
// (the OHWI filter's rows), the row's stride and pads times C; the transpose goes. A grouped
// convolution of a transposed input keeps its transpose, and so do a float one and one of a
// tensor that is not a graph input.

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x5x5x2x!quant.uniform<i8:f32, 1.0e-01:-3>>
  %t = glow.transpose %x {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x5x5x2x!quant.uniform<i8:f32, 1.0e-01:-3>>) -> tensor<1x2x5x5x!quant.uniform<i8:f32, 1.0e-01:-3>>
  %w = glow.constant "w" {value = dense<[[[[1, 2], [3, 4]], [[5, 6], [7, 8]]]]> : tensor<1x2x2x2xi8>} : tensor<1x2x2x2x!quant.uniform<i8:f32, 2.0e-02:0>>
  %b = glow.constant "b" {value = dense<0> : tensor<1xi32>} : tensor<1x!quant.uniform<i32:f32, 2.0e-03:0>>
  %c = glow.convolution %t, %w, %b activation relu {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x2x5x5x!quant.uniform<i8:f32, 1.0e-01:-3>>, tensor<1x2x2x2x!quant.uniform<i8:f32, 2.0e-02:0>>, tensor<1x!quant.uniform<i32:f32, 2.0e-03:0>>) -> tensor<1x1x3x3x!quant.uniform<i8:f32, 5.0e-02:0>>
  glow.save %c as "y" : tensor<1x1x3x3x!quant.uniform<i8:f32, 5.0e-02:0>>
  %z = glow.placeholder "z" : tensor<1x5x5x2x!quant.uniform<i8:f32, 1.0e-01:-3>>
  %u = glow.transpose %z {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x5x5x2x!quant.uniform<i8:f32, 1.0e-01:-3>>) -> tensor<1x2x5x5x!quant.uniform<i8:f32, 1.0e-01:-3>>
  %g = glow.constant "g" {value = dense<[[[[1, 2], [3, 4]]], [[[5, 6], [7, 8]]]]> : tensor<2x1x2x2xi8>} : tensor<2x1x2x2x!quant.uniform<i8:f32, 2.0e-02:0>>
  %gb = glow.constant "gb" {value = dense<0> : tensor<2xi32>} : tensor<2x!quant.uniform<i32:f32, 2.0e-03:0>>
  %d = glow.convolution %u, %g, %gb {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x2x5x5x!quant.uniform<i8:f32, 1.0e-01:-3>>, tensor<2x1x2x2x!quant.uniform<i8:f32, 2.0e-02:0>>, tensor<2x!quant.uniform<i32:f32, 2.0e-03:0>>) -> tensor<1x2x4x4x!quant.uniform<i8:f32, 5.0e-02:0>>
  glow.save %d as "grouped" : tensor<1x2x4x4x!quant.uniform<i8:f32, 5.0e-02:0>>
  %a = glow.relu %x : (tensor<1x5x5x2x!quant.uniform<i8:f32, 1.0e-01:-3>>) -> tensor<1x5x5x2x!quant.uniform<i8:f32, 1.0e-01:-3>>
  %at = glow.transpose %a {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x5x5x2x!quant.uniform<i8:f32, 1.0e-01:-3>>) -> tensor<1x2x5x5x!quant.uniform<i8:f32, 1.0e-01:-3>>
  %ac = glow.convolution %at, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x5x5x!quant.uniform<i8:f32, 1.0e-01:-3>>, tensor<1x2x2x2x!quant.uniform<i8:f32, 2.0e-02:0>>, tensor<1x!quant.uniform<i32:f32, 2.0e-03:0>>) -> tensor<1x1x4x4x!quant.uniform<i8:f32, 5.0e-02:0>>
  glow.save %ac as "inner" : tensor<1x1x4x4x!quant.uniform<i8:f32, 5.0e-02:0>>
  %f = glow.placeholder "f" : tensor<1x5x5x2xf32>
  %ft = glow.transpose %f {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x5x5x2xf32>) -> tensor<1x2x5x5xf32>
  %fw = glow.constant "fw" elided : tensor<1x2x2x2xf32>
  %fb = glow.constant "fb" elided : tensor<1xf32>
  %fc = glow.convolution %ft, %fw, %fb {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x5x5xf32>, tensor<1x2x2x2xf32>, tensor<1xf32>) -> tensor<1x1x4x4xf32>
  glow.save %fc as "float" : tensor<1x1x4x4xf32>
}

// CHECK-NOT:  glow.transpose %x
// CHECK:      %[[R:.*]] = glow.reshape %x : (tensor<1x5x5x2x!quant.uniform<i8:f32, 1.0e-01:-3>>) -> tensor<1x1x5x10x!quant.uniform<i8:f32, 1.0e-01:-3>>
// CHECK-NEXT: %[[W:.*]] = glow.constant "w_rows" {value = dense<{{\[\[\[\[}}1, 5, 2, 6], [3, 7, 4, 8]]]]> : tensor<1x1x2x4xi8>} : tensor<1x1x2x4x!quant.uniform<i8:f32, 2.0e-02:0>>
// CHECK-NEXT: %[[C:.*]] = glow.convolution %[[R]], %[[W]], %b activation relu {strides = array<i64: 2, 4>, pads = array<i64: 0, 0, 1, 2>, dilations = array<i64: 1, 1>{{.*}}} : {{.*}} -> tensor<1x1x3x3x!quant.uniform<i8:f32, 5.0e-02:0>>
// CHECK-NEXT: glow.save %[[C]] as "y"
// CHECK:      %[[U:.*]] = glow.transpose %z {perm = array<i64: 0, 3, 1, 2>}
// CHECK:      glow.convolution %[[U]], %g, %gb
// CHECK:      %[[AT:.*]] = glow.transpose %a {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: glow.convolution %[[AT]], %w, %b
// CHECK:      %[[FT:.*]] = glow.transpose %f {perm = array<i64: 0, 3, 1, 2>}
// CHECK:      glow.convolution %[[FT]], %fw, %fb
