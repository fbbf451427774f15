// RUN: glow-opt %s -p glowll-select-arm-dsp-kernels | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{single-issue=true}' | filecheck %s --check-prefix=SINGLE
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{helium=true}' | filecheck %s --check-prefix=HELIUM
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{only=generic}' | filecheck %s --check-prefix=GENERIC
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{only=level-tables}' | filecheck %s --check-prefix=TABLES
// RUN: not glow-opt %s -p 'glowll-select-arm-dsp-kernels{only=vectors}' 2>&1 | filecheck %s --check-prefix=BAD
// DSP-extension kernels: the 1x3 convolution of a one-channel input (ungrouped, unpooled,
// three taps a window) takes window pairs: its filter (2 output channels) is packed as pairs
// of a window's taps, [O / 4, ceil(3 / 2), 1, 2, 2], both channels' weights of a pair side by
// side, zero point (-1) taken off: taps (0, 1) are (2, 3) and (0, 1), tap 2 with a 0 (4, 0)
// and (5, 0); the input zero point (3) is folded into the bias: 10 - 3 * ((1+1) + (2+1) + (3+1)) = -17 and
// -20 - 3 * ((-1+1) + (0+1) + (4+1)) = -38. The FullyConnected is marked (its weights stay
// int8), its bias folded too: 100 - 3 * (1 - 2 + 3 - 4) = 106, -100 - 3 * (5 + 6 - 7 + 8) = -136.
// Every accumulator is small (|bias| + 131 * sum |w|, far below 2^30): narrow requantization,
// so every DSP-packed filter holds twice its levels less the zero point (`doubled_accumulators`):
// the window pairs above are stored (4, 6), (0, 2) and (8, 0), (10, 0). Its blocks take their
// pairs in straight-line code (a speed-first build's gathered product of at most 32 pairs):
// a first pair holds each channel's doubled bias as an int32 word, low half first
// (`biases_in_filter`): -34 = 2 x -17 as (-34, -1), -76 as (-76, -1), [1, 1 + 2, 1, 2, 2].
// The 1x1 convolution of the same input takes planes, widened to int16 (int8 data along
// undilated rows: `widens_planes`): a tile of four outputs, each tap alone by the weight word (0, none), then the unused word
// of its slot of three, (0, 0) twice; its weights doubled; the 48-channel 1x1 one is packed along its input channels, in
// pairs: [O / 4, 48 / 2, 2, 2, 2] for two blocks of two output channels side by side, here
// one block, its biases in front: [1, 1 + 24, 1, 2, 2], on a single-issue core (`single-issue`,
// its straight int16 pairs' loads `pipelined_loads`); on a dual-issue one (the default) its 24
// pairs are more than a pointwise layer's straight products take there (`layout.straight_pairs`,
// 16): blocked, on output pair words, [1, 24, 1, 2, 2] bytes.
// The depthwise 1x3 convolution (a group per channel) is packed per channel as the weight
// words of a four-output tile on int16 planes: (1, 2) and (0, 1), then an unused word, each
// channel's weights less their zero point (-1), doubled; padded left and right, its input zero point is folded into the bias
// all the same (its kernel pads the copied input planes with the level 3): -17 and -38.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x1x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w = glowll.weight "w" {value = dense<[[[[1, 2, 3]]], [[[-1, 0, 4]]]]> : tensor<2x1x1x3xi8>} : memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %b = glowll.weight "b" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x1x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %p = glowll.placeholder output "p" : memref<1x2x2x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w1 = glowll.weight "w1" {value = dense<[[[[1]]], [[[2]]]]> : tensor<2x1x1x1xi8>} : memref<2x1x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>
  %b1 = glowll.weight "b1" {value = dense<[0, 0]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %p, %x, %w1, %b1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x2x2x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x1x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %x48 = glowll.placeholder input "x48" : memref<1x48x1x2x!quant.uniform<i8:f32, 5.0e-02:3>>
  %q = glowll.placeholder output "q" : memref<1x2x1x2x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w48 = glowll.weight "w48" {value = dense<1> : tensor<2x48x1x1xi8>} : memref<2x48x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>
  %b48 = glowll.weight "b48" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %q, %x48, %w48, %b48 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x2x1x2x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x48x1x2x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x48x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %d = glowll.placeholder input "d" : memref<1x2x3x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %e = glowll.placeholder output "e" : memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  %wd = glowll.weight "wd" {value = dense<[[[[1, 2, 3]]], [[[-1, 0, 4]]]]> : tensor<2x1x1x3xi8>} : memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %bd = glowll.weight "bd" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %e, %d, %wd, %bd {strides = array<i64: 1, 1>, pads = array<i64: 0, 1, 0, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x3x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %d8 = glowll.placeholder input "d8" : memref<1x2x2x8x!quant.uniform<i8:f32, 5.0e-02:3>>
  %e8 = glowll.placeholder output "e8" : memref<1x2x2x8x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.convolution %e8, %d8, %wd, %bd {strides = array<i64: 1, 1>, pads = array<i64: 0, 1, 0, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x2x8x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x2x8x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %v = glowll.placeholder input "v" : memref<1x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %z = glowll.placeholder output "z" : memref<1x2x!quant.uniform<i8:f32, 1.0e-01:0>>
  %fw = glowll.weight "fw" {value = dense<[[1, -2, 3, -4], [5, 6, -7, 8]]> : tensor<2x4xi8>} : memref<2x4x!quant.uniform<i8:f32, 1.0e-02:0>>
  %fb = glowll.weight "fb" {value = dense<[100, -100]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.fully_connected %z, %v, %fw, %fb : memref<1x2x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x4x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %s = glowll.placeholder input "s" : memref<1x1x1x18x!quant.uniform<i8:f32, 5.0e-02:3>>
  %t = glowll.placeholder output "t" : memref<1x2x1x8x!quant.uniform<i8:f32, 1.0e-01:0>>
  %t4 = glowll.placeholder output "t4" : memref<1x2x1x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  %ws = glowll.weight "ws" {value = dense<[[[[1, 2, 3, 4]]], [[[-1, 0, 4, 2]]]]> : tensor<2x1x1x4xi8>} : memref<2x1x1x4x!quant.uniform<i8:f32, 1.0e-02:0>>
  glowll.convolution %t, %s, %ws, %b {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x2x1x8x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x1x1x18x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x1x4x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %t4, %s, %ws, %b {strides = array<i64: 2, 4>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x2x1x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x1x1x18x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x1x4x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %sum = glowll.placeholder output "sum" : memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.elementwise %sum, %d, %e {kind = "add"} : memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x3x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  %product = glowll.placeholder output "product" : memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.elementwise %product, %d, %e {kind = "mul"} : memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x3x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  %gate = glowll.placeholder input "gate" : memref<1x2x1x1x!quant.uniform<i8:f32, 5.0e-02:3>>
  %scaled = glowll.placeholder output "scaled" : memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.elementwise %scaled, %d, %gate {kind = "mul"} : memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x3x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x1x1x!quant.uniform<i8:f32, 5.0e-02:3>>
  %one = glowll.placeholder input "one" : memref<1x!quant.uniform<i8:f32, 5.0e-02:3>>
  %shifted = glowll.placeholder output "shifted" : memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.elementwise %shifted, %one, %d {kind = "sub"} : memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x3x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %channels = glowll.placeholder input "channels" : memref<1x1x1x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %nhwc = glowll.placeholder output "nhwc" : memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.elementwise %nhwc, %d, %channels {kind = "mul"} : memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x3x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x1x1x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %narrow = glowll.placeholder input "narrow" : memref<1x2x3x1x!quant.uniform<i8:f32, 5.0e-02:3>>
  %rows = glowll.placeholder output "rows" : memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.elementwise %rows, %narrow, %d {kind = "add"} : memref<1x2x3x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x3x1x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x3x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %short = glowll.placeholder input "short" : memref<1x2x1x3x!quant.uniform<i8:f32, 5.0e-02:3>>
  %shorter = glowll.placeholder output "shorter" : memref<1x2x1x3x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.elementwise %shorter, %short, %gate {kind = "mul"} : memref<1x2x1x3x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x1x3x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x2x1x1x!quant.uniform<i8:f32, 5.0e-02:3>>
  %logits = glowll.placeholder input "logits" : memref<2x10x!quant.uniform<i8:f32, 5.0e-02:3>>
  %probabilities = glowll.placeholder output "probabilities" : memref<2x10x!quant.uniform<i8:f32, 3.90625e-03:-128>>
  glowll.softmax %probabilities, %logits {axis = 1 : i64} : memref<2x10x!quant.uniform<i8:f32, 3.90625e-03:-128>>, memref<2x10x!quant.uniform<i8:f32, 5.0e-02:3>>
  %wide_logits = glowll.placeholder input "wide_logits" : memref<2x10x!quant.uniform<i16:f32, 5.0e-04:0>>
  %wide_probabilities = glowll.placeholder output "wide_probabilities" : memref<2x10x!quant.uniform<i16:f32, 3.0517578125e-05:0>>
  glowll.softmax %wide_probabilities, %wide_logits {axis = 1 : i64} : memref<2x10x!quant.uniform<i16:f32, 3.0517578125e-05:0>>, memref<2x10x!quant.uniform<i16:f32, 5.0e-04:0>>
  %tiled = glowll.placeholder output "tiled" : memref<1x2x2x1x!quant.uniform<i8:f32, 1.0e-01:0>>
  %wt = glowll.weight "wt" {value = dense<[[[[1, 2, 3]]], [[[-1, 0, 4]]]]> : tensor<2x1x1x3xi8>} : memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
  glowll.convolution %tiled, %x, %wt, %b pool max {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, pool_kernel = array<i64: 1, 2>, pool_strides = array<i64: 1, 2>, pool_pads = array<i64: 0, 0, 0, 0>} : memref<1x2x2x1x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x1x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %overlapping = glowll.placeholder output "overlapping" : memref<1x2x2x1x!quant.uniform<i8:f32, 1.0e-01:0>>
  %wo = glowll.weight "wo" {value = dense<[[[[1, 2, 3]]], [[[-1, 0, 4]]]]> : tensor<2x1x1x3xi8>} : memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
  glowll.convolution %overlapping, %x, %wo, %b pool max {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, pool_kernel = array<i64: 1, 2>, pool_strides = array<i64: 1, 1>, pool_pads = array<i64: 0, 0, 0, 0>} : memref<1x2x2x1x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x1x2x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %residual = glowll.placeholder input "residual" : memref<1x8x12x12x!quant.uniform<i8:f32, 5.0e-02:3>>
  %residual_sum = glowll.placeholder output "residual_sum" : memref<1x8x12x12x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.elementwise %residual_sum, %residual, %residual {kind = "add"} : memref<1x8x12x12x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x8x12x12x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x8x12x12x!quant.uniform<i8:f32, 5.0e-02:3>>
  %classes = glowll.placeholder input "classes" : memref<1x1000x!quant.uniform<i8:f32, 5.0e-02:3>>
  %class_probabilities = glowll.placeholder output "class_probabilities" : memref<1x1000x!quant.uniform<i8:f32, 3.90625e-03:-128>>
  glowll.softmax %class_probabilities, %classes {axis = 1 : i64} : memref<1x1000x!quant.uniform<i8:f32, 3.90625e-03:-128>>, memref<1x1000x!quant.uniform<i8:f32, 5.0e-02:3>>
}

// CHECK:      %[[BIAS:.*]] = glowll.weight "b_adjusted" {value = dense<[-17, -38]> : tensor<2xi32>}
// CHECK-NEXT: %[[PACKED:.*]] = glowll.weight "w_arm_dsp" {value = dense<{{\[\[\[\[\[}}-34, -1], [-76, -1]]], {{\[\[\[}}4, 6], [0, 2]]], {{\[\[\[}}8, 0], [10, 0]]]]]> : tensor<1x3x1x2x2xi16>} : memref<1x3x1x2x2x!quant.uniform<i16:f32, 1.0e-02:0>>
// CHECK-NEXT: glowll.convolution %y, %x, %[[PACKED]], %[[BIAS]] {{{.*}}microkernel = #glowll.microkernel<"arm-dsp", {biases_in_filter}>, filter_shape = array<i64: 2, 1, 1, 3>, narrow_requantization, doubled_accumulators, folded_input_offset}
// CHECK:      %[[W1:.*]] = glowll.weight "w1_arm_dsp" {value = dense<{{\[\[\[\[}}2, 0], [0, 0], [0, 0]]], {{\[\[\[}}4, 0], [0, 0], [0, 0]]]]> : tensor<2x1x3x2xi16>}
// CHECK:      glowll.convolution %p, %x, %[[W1]], %{{.*}} {{{.*}}microkernel = #glowll.microkernel<"arm-dsp">, filter_shape = array<i64: 2, 1, 1, 1>, narrow_requantization, doubled_accumulators
// CHECK:      %[[W48:.*]] = glowll.weight "w48_arm_dsp" elided : memref<1x24x1x2x2x!quant.uniform<i8:f32, 1.0e-02:0>>
// CHECK:      glowll.convolution %q, %x48, %[[W48]], %{{.*}} {{{.*}}microkernel = #glowll.microkernel<"arm-dsp", {blocked_pixels, weights_ahead, output_pairs}>, filter_shape = array<i64: 2, 48, 1, 1>{{.*}}}
// SINGLE:     %[[W48:.*]] = glowll.weight "w48_arm_dsp" elided : memref<1x25x1x2x2x!quant.uniform<i16:f32, 1.0e-02:0>>
// SINGLE:     glowll.convolution %q, %x48, %[[W48]], %{{.*}} {{{.*}}microkernel = #glowll.microkernel<"arm-dsp", {pipelined_loads, biases_in_filter}>, filter_shape = array<i64: 2, 48, 1, 1>{{.*}}}
// CHECK:      %[[BD:.*]] = glowll.weight "bd_adjusted" {value = dense<[-17, -38]> : tensor<2xi32>}
// CHECK-NEXT: %[[WD:.*]] = glowll.weight "wd_arm_dsp" {value = dense<{{\[\[\[\[}}6, 8], [4, 6], [0, 0]]], {{\[\[\[}}2, 10], [0, 2], [0, 0]]]]> : tensor<2x1x3x2xi16>}
// CHECK-NEXT: glowll.convolution %e, %d, %[[WD]], %[[BD]] {{{.*}}group = 2 : i64, microkernel = #glowll.microkernel<"arm-dsp">, filter_shape = array<i64: 2, 1, 1, 3>, narrow_requantization, doubled_accumulators, folded_input_offset}
// CHECK:      %[[FB:.*]] = glowll.weight "fb_adjusted" {value = dense<[106, -136]> : tensor<2xi32>}
// CHECK-NEXT: glowll.fully_connected %z, %v, %fw, %[[FB]] {microkernel = #glowll.microkernel<"arm-dsp">, narrow_requantization, folded_input_offset}
// Both strided convolutions take the DSP kernel, and the Add keeps the generic one.
// CHECK:      glowll.convolution %t, %s, %{{.*}}, %{{.*}} {{{.*}}microkernel = #glowll.microkernel<"arm-dsp", {biases_in_filter}>
// CHECK:      glowll.convolution %t4, %s, %{{.*}}, %{{.*}} {{{.*}}microkernel = #glowll.microkernel<"arm-dsp", {biases_in_filter}>
// CHECK:      glowll.elementwise %sum, %d, %e {kind = "add"} :
// CHECK-NOT:  microkernel = #glowll.microkernel<"arm-mve">
// CHECK:      glowll.softmax %probabilities, %logits {axis = 1 : i64} :
// The same 1x3 convolution with a fused 1x2 max pool whose windows tile its output (kernel =
// strides) takes window pairs too (the filter packed as the unpooled one's, doubled, its biases in front); with a
// 1x2 pool of stride 1 (windows that would overlap) it keeps row pairs: [O / 2, C, KH, 2, 3
// weight words, 2], the words of a two-output tile (0, 2), (1, none), (none, 1).
// CHECK:      %[[WT:.*]] = glowll.weight "wt_arm_dsp" {value = dense<{{\[\[\[\[\[}}-34, -1], [-76, -1]]], {{\[\[\[}}4, 6], [0, 2]]], {{\[\[\[}}8, 0], [10, 0]]]]]> : tensor<1x3x1x2x2xi16>}
// CHECK:      glowll.convolution %tiled, %x, %[[WT]], %{{.*}} pool max {{{.*}}microkernel = #glowll.microkernel<"arm-dsp", {biases_in_filter}>, filter_shape = array<i64: 2, 1, 1, 3>, narrow_requantization, doubled_accumulators, folded_input_offset}
// CHECK:      %[[WO:.*]] = glowll.weight "wo_arm_dsp" {{.*}} : tensor<1x1x1x2x3x2xi16>}
// CHECK:      glowll.convolution %overlapping, %x, %[[WO]], %{{.*}} pool max {{{.*}}microkernel = #glowll.microkernel<"arm-dsp">, filter_shape = array<i64: 2, 1, 1, 3>
// An int8 add of 192 elements or more (1152: `LEVEL_TABLE_ELEMENTWISE_FROM`, measured), and a
// softmax of more exps (two an element) than its table holds (256), look them up
// (`level_tables`); the 24-element add and the 2x10 softmax above keep the generic kernels.
// CHECK:      glowll.elementwise %residual_sum, %residual, %residual {kind = "add", microkernel = #glowll.microkernel<"level-tables">}
// CHECK:      glowll.softmax %class_probabilities, %classes {axis = 1 : i64, microkernel = #glowll.microkernel<"level-tables">}

// On a Cortex-M55 (helium=true) the FullyConnected is a plain dot product LLVM vectorizes
// for MVE, and both convolutions (stride 1 along their rows) run on Helium, their filters
// as blocks of output channels [O / 2, C, KH, KW, 2]: both channels' weights of a tap side
// by side, zero point (-1 for the 1x3 one) taken off.
// HELIUM:      %[[W:.*]] = glowll.weight "w_arm_mve" {value = dense<{{\[\[\[\[\[}}2, 0], [3, 1], [4, 5]]]]]> : tensor<1x1x1x3x2xi16>}
// HELIUM:      glowll.convolution %y, %x, %[[W]], %{{.*}} {{{.*}}microkernel = #glowll.microkernel<"arm-mve">, filter_shape = array<i64: 2, 1, 1, 3>
// HELIUM:      %[[W1:.*]] = glowll.weight "w1_arm_mve" {value = dense<{{\[\[\[\[\[}}1, 2]]]]]> : tensor<1x1x1x1x2xi16>}
// HELIUM:      glowll.convolution %p, %x, %[[W1]], %{{.*}} {{{.*}}microkernel = #glowll.microkernel<"arm-mve">, filter_shape = array<i64: 2, 1, 1, 1>
// The 48-channel 1x1 one (48 taps a window) runs as dot products of gathered windows: its
// filter as it is, the input zero point folded into the bias: 10 - 3 * 48 = -134,
// -20 - 3 * 48 = -164.
// HELIUM:      %[[B48:.*]] = glowll.weight "b48_adjusted" {value = dense<[-134, -164]> : tensor<2xi32>}
// HELIUM-NEXT: glowll.convolution %q, %x48, %w48, %[[B48]] {{{.*}}folded_input_offset, microkernel = #glowll.microkernel<"arm-mve-im2col">, narrow_requantization}
// The depthwise one (stride 1) onto rows of 4 outputs (one vector) keeps the DSP kernel; onto
// rows of 8 (two whole vectors) it is on Helium: a block of one channel, its padding predicated
// (measured: `DEPTHWISE_ROW_VECTORS`; on rows of 5, the keyword spotter's, Helium took twice
// the cycles).
// HELIUM:      glowll.convolution %e, %d, %{{.*}}, %{{.*}} {{{.*}}microkernel = #glowll.microkernel<"arm-dsp">, filter_shape = array<i64: 2, 1, 1, 3>
// HELIUM:      glowll.convolution %e8, %d8, %{{.*}}, %bd {{{.*}}microkernel = #glowll.microkernel<"arm-mve">, filter_shape = array<i64: 2, 1, 1, 3>
// HELIUM:      glowll.fully_connected %z, %v, %fw, %{{.*}} {microkernel = #glowll.microkernel<"arm-mve">, narrow_requantization, folded_input_offset}
// A convolution of stride 2 onto rows of 8 outputs (two vectors) runs on Helium (its input
// columns gathered, every other one); one of stride 4 keeps the DSP kernel. The int8 Add of
// operands of one shape runs on Helium's vectors.
// HELIUM:      glowll.convolution %t, %s, %{{.*}}, %{{.*}} {{{.*}}microkernel = #glowll.microkernel<"arm-mve">, filter_shape = array<i64: 2, 1, 1, 4>
// HELIUM:      glowll.convolution %t4, %s, %{{.*}}, %{{.*}} {{{.*}}microkernel = #glowll.microkernel<"arm-dsp", {biases_in_filter}>
// HELIUM:      glowll.elementwise %sum, %d, %e {kind = "add", microkernel = #glowll.microkernel<"arm-mve">} :
// So do int8 Muls, and broadcasts whose innermost loop is two levels or more (measured:
// `HELIUM_ELEMENTWISE_RUNS`): a per-channel scale of 3 x 4 pixels (runs of 12), a scalar
// (one loop of 24), a scale along the last axis (runs of 4 channels), one level a row of 4,
// and a scale of 3 pixels (runs of 3: a lane in four idles, yet 62% fewer cycles than scalar).
// HELIUM:      glowll.elementwise %product, %d, %e {kind = "mul", microkernel = #glowll.microkernel<"arm-mve">} :
// HELIUM:      glowll.elementwise %scaled, %d, %gate {kind = "mul", microkernel = #glowll.microkernel<"arm-mve">} :
// HELIUM:      glowll.elementwise %shifted, %one, %d {kind = "sub", microkernel = #glowll.microkernel<"arm-mve">} :
// HELIUM:      glowll.elementwise %nhwc, %d, %channels {kind = "mul", microkernel = #glowll.microkernel<"arm-mve">} :
// HELIUM:      glowll.elementwise %rows, %narrow, %d {kind = "add", microkernel = #glowll.microkernel<"arm-mve">} :
// HELIUM:      glowll.elementwise %shorter, %short, %gate {kind = "mul", microkernel = #glowll.microkernel<"arm-mve">} :
// An int8 softmax runs on Helium's vectors; an int16 one keeps the generic kernel.
// HELIUM:      glowll.softmax %probabilities, %logits {axis = 1 : i64, microkernel = #glowll.microkernel<"arm-mve">} :
// HELIUM:      glowll.softmax %wide_probabilities, %wide_logits {axis = 1 : i64} :
// The test hook `only` (tests/unit/test_arm_dsp_kernel_choices.py builds every candidate
// kernel of a layer): "generic" gives no microkernel; "level-tables" gives tables to every
// int8 add, sub and softmax whatever its size (the 24-element add, the 2x10 softmax), and no
// other kernel; an unknown kernel is an error naming the option.
// GENERIC-NOT: microkernel
// TABLES-NOT:  arm-dsp
// TABLES:      glowll.elementwise %sum, %d, %e {kind = "add", microkernel = #glowll.microkernel<"level-tables">}
// TABLES:      glowll.elementwise %product, %d, %e {kind = "mul"} :
// TABLES:      glowll.softmax %probabilities, %logits {axis = 1 : i64, microkernel = #glowll.microkernel<"level-tables">}
// TABLES-NOT:  arm-dsp
// BAD: glowll-select-arm-dsp-kernels{only=vectors}: expected one of generic, arm-dsp, arm-mve, arm-mve-im2col, level-tables
