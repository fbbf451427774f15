// RUN: glow-opt %s -p glow-decompose-conv-transpose | filecheck %s
// RUN: not glow-opt %s -p lower-glow-to-glowll 2>&1 | filecheck %s --check-prefix=LOWER
// A transposed convolution is a stride-1 convolution with the flipped filter (channels
// swapped within each group, window reversed) over the input with (stride - 1) zeros
// between its elements, padded by dilation * (kernel - 1) minus its pads (plus the output
// padding at the end). A constant filter is flipped here, any other by ops at run time.

glow.function @conv_transpose {
  %x = glow.placeholder "x" : tensor<1x2x3x3xf32>
  %w = glow.constant "w" {value = dense<[[[[1.0, 2.0]]], [[[3.0, 4.0]]]]> : tensor<2x1x1x2xf32>} : tensor<2x1x1x2xf32>
  %b = glow.constant "b" {value = dense<0.0> : tensor<1xf32>} : tensor<1xf32>
  %c = glow.conv_transpose %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 0, 1, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 0>, group = 1 : i64, name = "up"} : (tensor<1x2x3x3xf32>, tensor<2x1x1x2xf32>, tensor<1xf32>) -> tensor<1x1x6x5xf32>
  glow.save %c as "y" : tensor<1x1x6x5xf32>
  %v = glow.placeholder "v" : tensor<2x1x1x2xf32>
  %r = glow.conv_transpose %x, %v, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x1x1x2xf32>, tensor<1xf32>) -> tensor<1x1x3x4xf32>
  glow.save %r as "z" : tensor<1x1x3x4xf32>
}

// CHECK-LABEL: glow.function @conv_transpose
// Zeros between the elements: [1, 2, 3, 3] -> [1, 2, 3, 1, 3, 1] -> pad -> [1, 2, 6, 6], the tail cropped.
// CHECK:       %[[GRID:.*]] = glow.reshape %x : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x1x3x1xf32>
// CHECK-NEXT:  %[[ZEROS:.*]] = glow.pad %[[GRID]] {pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1>} : (tensor<1x2x3x1x3x1xf32>) -> tensor<1x2x3x2x3x2xf32>
// CHECK-NEXT:  %[[WIDE:.*]] = glow.reshape %[[ZEROS]] : (tensor<1x2x3x2x3x2xf32>) -> tensor<1x2x6x6xf32>
// CHECK-NEXT:  %[[CROPPED:.*]] = glow.slice %[[WIDE]] {starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x2x6x6xf32>) -> tensor<1x2x5x5xf32>
// Kernel 1x2, pads [0, 1, 0, 0], output padding [1, 0]: begin [0, 0], end [1, 1].
// CHECK-NEXT:  %[[PADDED:.*]] = glow.pad %[[CROPPED]] {pads = array<i64: 0, 0, 0, 0, 0, 0, 1, 1>} : (tensor<1x2x5x5xf32>) -> tensor<1x2x6x6xf32>
// CHECK-NEXT:  %[[FLIPPED:.*]] = glow.constant "w_flipped" {value = dense<{{\[\[\[\[}}2.000000e+00, 1.000000e+00]], {{\[\[}}4.000000e+00, 3.000000e+00]]]]> : tensor<1x2x1x2xf32>}
// CHECK-NEXT:  %[[Y:.*]] = glow.convolution %[[PADDED]], %[[FLIPPED]], %b {name = "up", strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x6x6xf32>, tensor<1x2x1x2xf32>, tensor<1xf32>) -> tensor<1x1x6x5xf32>
// CHECK-NEXT:  glow.save %[[Y]] as "y"
// A filter computed at run time: channels swapped by a reshape/transpose/reshape, the window reversed by a resample.
// CHECK:       %[[X2:.*]] = glow.pad %x {pads = array<i64: 0, 0, 0, 1, 0, 0, 0, 1>} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x5xf32>
// CHECK-NEXT:  %[[G:.*]] = glow.reshape %v : (tensor<2x1x1x2xf32>) -> tensor<1x2x1x1x2xf32>
// CHECK-NEXT:  %[[S:.*]] = glow.transpose %[[G]] {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x1x1x2xf32>) -> tensor<1x1x2x1x2xf32>
// CHECK-NEXT:  %[[V:.*]] = glow.reshape %[[S]] : (tensor<1x1x2x1x2xf32>) -> tensor<1x2x1x2xf32>
// CHECK-NEXT:  %[[TAPS:.*]] = glow.constant "conv_transpose_reversed3" {value = dense<{{\[\[}}1], [0]]> : tensor<2x1xi32>}
// CHECK-NEXT:  %[[ONES:.*]] = glow.constant "conv_transpose_ones3"
// CHECK-NEXT:  %[[REVERSED:.*]] = glow.resample %[[V]], %[[TAPS]], %[[ONES]] {axis = 3 : i64}
// CHECK-NEXT:  %[[Z:.*]] = glow.convolution %[[X2]], %[[REVERSED]], %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x3x5xf32>, tensor<1x2x1x2xf32>, tensor<1xf32>) -> tensor<1x1x3x4xf32>
// CHECK-NEXT:  glow.save %[[Z]] as "z"
// CHECK-NOT:   glow.conv_transpose

// Without the pass, the lowering names the op and the pass it needs.
// LOWER: glow-opt: error: glow.conv_transpose: no lowering to glowll (run glow-decompose-conv-transpose first?)
