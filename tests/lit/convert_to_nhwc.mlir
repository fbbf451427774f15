// RUN: glow-opt %s -p "glow-convert-to-nhwc{library=cmsis-nn}" | filecheck %s
// RUN: glow-opt %s -p "glow-convert-to-nhwc{library=cmsis-nn},glow-sink-transposes" | filecheck %s --check-prefix=SUNK
// The convolution and pool CMSIS-NN takes run NHWC (OIHW filter permuted to OHWI at
// compile time) between transposes; sinking cancels the inner pair, moves the other
// through the Relu, and turns the input's (one channel) into a reshape. The transpose
// left before the output is the layout change at the graph's boundary.

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x1x4x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w = glow.constant "w" {value = dense<[[[[1, 2], [3, 4]]], [[[5, 6], [7, 8]]]]> : tensor<2x1x2x2xi8>} : tensor<2x1x2x2x!quant.uniform<i8:f32, 2.0e-02:0>>
  %b = glow.constant "b" {value = dense<0> : tensor<2xi32>} : tensor<2x!quant.uniform<i32:f32, 2.0e-03:0>>
  %c = glow.convolution %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4x!quant.uniform<i8:f32, 1.0e-01:0>>, tensor<2x1x2x2x!quant.uniform<i8:f32, 2.0e-02:0>>, tensor<2x!quant.uniform<i32:f32, 2.0e-03:0>>) -> tensor<1x2x3x3x!quant.uniform<i8:f32, 5.0e-02:0>>
  %p = glow.max_pool %c {kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x2x3x3x!quant.uniform<i8:f32, 5.0e-02:0>>) -> tensor<1x2x2x2x!quant.uniform<i8:f32, 5.0e-02:0>>
  %r = glow.relu %p : (tensor<1x2x2x2x!quant.uniform<i8:f32, 5.0e-02:0>>) -> tensor<1x2x2x2x!quant.uniform<i8:f32, 2.5e-02:-128>>
  glow.save %r as "y" : tensor<1x2x2x2x!quant.uniform<i8:f32, 2.5e-02:-128>>
}

// CHECK:      %[[T:.*]] = glow.transpose %x {perm = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT: %[[W:.*]] = glow.constant "w" {value = dense<{{\[\[\[\[}}1], [2]], {{\[\[}}3], [4]]], {{\[\[\[}}5], [6]], {{\[\[}}7], [8]]]]> : tensor<2x2x2x1xi8>} : tensor<2x2x2x1x!quant.uniform<i8:f32, 2.0e-02:0>>
// CHECK-NEXT: %[[C:.*]] = glow.convolution %[[T]], %[[W]], %b layout NHWC {{.*}} : {{.*}} -> tensor<1x3x3x2x!quant.uniform<i8:f32, 5.0e-02:0>>
// CHECK-NEXT: %[[B:.*]] = glow.transpose %[[C]] {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: %[[T2:.*]] = glow.transpose %[[B]] {perm = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT: %[[P:.*]] = glow.max_pool %[[T2]] layout NHWC
// CHECK-NEXT: %[[B2:.*]] = glow.transpose %[[P]] {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: glow.relu %[[B2]]

// SUNK:      %[[X:.*]] = glow.reshape %x : (tensor<1x1x4x4x{{.*}}) -> tensor<1x4x4x1x
// SUNK:      %[[C:.*]] = glow.convolution %[[X]]
// SUNK-NEXT: %[[P:.*]] = glow.max_pool %[[C]]
// SUNK-NEXT: %[[R:.*]] = glow.relu %[[P]] : (tensor<1x2x2x2x{{.*}}) -> tensor<1x2x2x2x
// SUNK-NEXT: %[[Y:.*]] = glow.transpose %[[R]] {perm = array<i64: 0, 3, 1, 2>}
// SUNK-NEXT: glow.save %[[Y]] as "y"
