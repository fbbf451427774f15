// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16}' | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=4 accumulators=12 registers=16}' | filecheck %s --check-prefix=SSE
// Where masked loads are single instructions (`planes`: AVX, AVX-512), an int8 ungrouped 1x1
// convolution of stride 1, unpadded, takes vector-pointwise-int8: its filter the levels less
// the weight zero point -1, [[2, 3, 4], [0, 1, 2]], doubled (its requantization is narrow:
// `doubled_accumulators`, the output step multiplies the doubled sums as they are), packed as
// int32 words of two input channels (low half channel 2c, high half 2c + 1; the odd third
// channel pairs with 0) in one block of both output channels: [O / 2, ceil(C / 2), 1, 1, 2] =
// [[(6 << 16) | 4, (2 << 16) | 0], [8, 4]]; the packed type's offset is 0; the input zero
// point 3 folded into a new bias (`folded_input_offset`): [10 - 3 * 9, -20 - 3 * 3]. The 6x6
// plane's 36 pixels take vectors of 8 lanes (vector_tile = lanes, accumulators). The 3x3 one
// (27 taps: few, `int8_im2col.takes_im2col`) takes vector-im2col-int8 (rows of 4 outputs:
// vectors of 4 lanes; a block of both channels), its filter packed as the 1x1's words of its
// taps in `im2col_taps`' order, [O / 2, ceil(27 / 2), 1, 1, 2] (the printout elides them), the
// input zero point folded into its own bias: [10 - 3 * 54, -20 - 3 * 54] (tests/unit/test_int8_im2col.py
// checks the outputs bit for bit).
// Both take the float output step (`float_step`: the real multiplier 0.005, the output zero
// point 0, proved on the accumulator bounds: `int8_kernel_selection.mark_float_step`).
// A 1x1 of 16 pairs of input channels (32 -> 20 on 2x8: two vectors of pixels) takes tiles of
// two vectors x 5 channels (`pointwise_tile`): its words in blocks of 5, the accumulators a
// tile keeps 10 (vector_tile = 8, 10).
// Without masked loads (SSE) all keep the generic int8 kernel.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x3x6x6x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x2x6x6x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w = glowll.weight "w" {value = dense<[[[[1]], [[2]], [[3]]], [[[-1]], [[0]], [[1]]]]> : tensor<2x3x1x1xi8>} : memref<2x3x1x1x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %b = glowll.weight "b" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : memref<1x2x6x6x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x3x6x6x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x3x1x1x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %y2 = glowll.placeholder output "y2" : memref<1x2x4x4x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w2 = glowll.weight "w2" {value = dense<1> : tensor<2x3x3x3xi8>} : memref<2x3x3x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
  glowll.convolution %y2, %x, %w2, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : memref<1x2x4x4x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x3x6x6x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x3x3x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %x3 = glowll.placeholder input "x3" : memref<1x32x2x8x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y3 = glowll.placeholder output "y3" : memref<1x20x2x8x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w3 = glowll.weight "w3" {value = dense<1> : tensor<20x32x1x1xi8>} : memref<20x32x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>
  %b3 = glowll.weight "b3" {value = dense<0> : tensor<20xi32>} : memref<20x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %y3, %x3, %w3, %b3 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : memref<1x20x2x8x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x32x2x8x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<20x32x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<20x!quant.uniform<i32:f32, 5.0e-04:0>>
}

// CHECK:      %[[B:.*]] = glowll.weight "b_adjusted" {value = dense<[-17, -29]> : tensor<2xi32>}
// CHECK-NEXT: %[[W:.*]] = glowll.weight "w_pairs" {value = dense<{{\[\[\[\[\[}}393220, 131072{{\]\]\]}}, {{\[\[\[}}8, 4{{\]\]\]\]\]}}> : tensor<1x2x1x1x2xi32>} : memref<1x2x1x1x2x!quant.uniform<i32:f32, 1.0e-02:0>>
// CHECK-NEXT: glowll.convolution %y, %x, %[[W]], %[[B]] {{.*}}narrow_requantization, float_step = array<f32: 5.000000e-03, 0.00249999762, -0.00249999762>, folded_input_offset, doubled_accumulators, microkernel = #glowll.microkernel<"vector-pointwise-int8">, filter_shape = array<i64: 2, 3, 1, 1>, vector_tile = array<i64: 8, 12>}
// CHECK:      %[[B2:.*]] = glowll.weight "b_adjusted" {value = dense<[-152, -182]> : tensor<2xi32>}
// CHECK-NEXT: %[[W2:.*]] = glowll.weight "w2_im2col" elided : memref<1x14x1x1x2x!quant.uniform<i32:f32, 1.0e-02:0>>
// CHECK-NEXT: glowll.convolution %y2, %x, %[[W2]], %[[B2]] {{.*}}float_step = array<f32: 5.000000e-03, 0.00249999762, -0.00249999762>, folded_input_offset, doubled_accumulators, microkernel = #glowll.microkernel<"vector-im2col-int8">, filter_shape = array<i64: 2, 3, 3, 3>, vector_tile = array<i64: 4, 12>}
// CHECK:      %[[W3:.*]] = glowll.weight "w3_pairs" elided : memref<4x16x1x1x5x!quant.uniform<i32:f32, 1.0e-02:0>>
// CHECK-NEXT: glowll.convolution %y3, %x3, %[[W3]], %{{.*}} {{.*}}microkernel = #glowll.microkernel<"vector-pointwise-int8">, filter_shape = array<i64: 20, 32, 1, 1>, vector_tile = array<i64: 8, 10>}

// SSE:       glowll.convolution %y, %x, %w, %b
// SSE-NOT:   {{microkernel|float_step}}
// SSE:       glowll.convolution %y2, %x, %w2, %b
// SSE-NOT:   {{microkernel|float_step}}
// SSE:       glowll.convolution %y3, %x3, %w3, %b3
// SSE-NOT:   {{microkernel|float_step}}
