// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=4 accumulators=16 registers=32 fused_multiply_add=true products=neon}' | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=4 accumulators=16 registers=32}' | filecheck %s --check-prefix=NONE
// RUN: not glow-opt %s -p 'glowll-select-vector-columns{lanes=4 accumulators=16 registers=32 products=sdot}' 2>&1 | filecheck %s --check-prefix=BAD
// On AArch64 (NEON: 4 int32 lanes, 32 registers, no masked loads) the pair products are
// `smlal` and `smlal2` into split sums, two registers a sum (`products=neon`,
// `int8_depthwise.split_products`), so the int8 convolutions take the host's int8 tiles
// there too, on half the tile's accumulators (8 of 16), their microkernel carrying
// `{products = "neon"}`: the 1x1s vector-pointwise-int8, on int8 products (`{products =
// "neon-bytes"}`, `int8_byte_products`: tiles of 8 pixels, the levels as they are, each word
// a pair of bytes twice, the weight zero point kept in the type: 2 -> 3's word (1, 2, 1, 2)
// = 33620481, on 4 accumulators (a float step and at most 8 pairs of input channels:
// `byte_tile_accumulators`); the 32 -> 20 in tiles of 4 channels x 2 vectors, `pointwise_tile` of 8
// accumulators: words [5, 16, 1, 1, 4]), and where two weights of -128 share an int16 lane
// (w5's channels 0 and 2) on the int16 pairs (packed, folded and doubled as on AVX2:
// tests/lit/select_int8_pointwise.mlir), the
// 3x3 of 3 channels (few taps) vector-im2col-int8 (on rows of 4 outputs the int16 pairs; on
// rows of 16, %ys, its im2col bytes: `int8_im2col.RowBytes`, the taps' levels as they are,
// `byte_pair_words` of [O, taps] with the weight zero point in the type, 4 accumulators),
// the depthwise 3x3 vector-depthwise-int8 on
// the tiles (without masked loads no vector-planes-int8): on int8 products where its levels
// less their zero point are int8 (`{products = "neon-bytes", int16_taps = 3}`,
// `int8_byte_depthwise`: its filter int8, 4 rows of one vector of 8 pixels, vector_tile =
// (8, 4, 4); every run of its 3 kernel columns sums in int16), also where a few kernel
// positions leave int8 (%wf: 127 less -100 at position 0, `wide_taps = array<i64: 0>`, its
// filter int16, its other runs of 2 columns), else (%wg: three of its nine positions wide,
// more than `MOST_WIDE_TAPS`) on the int16 pairs (5 rows of one vector of 4 lanes,
// vector_tile = (4, 5, 5)), and the 3x3 of 8 channels vector-columns-int8 (its words
// [O / 4, C, KH, ceil(KW / 2), 4]). The edge vectors' masked loads are lane by lane there.
// NEON's `fmla` makes the output steps the proved fused ones (`float_step`'s fourth number 1:
// `FloatStep.fused`), the depthwise's bias kept in its sums (no `bias_in_step` on NEON). A
// per-channel 1x1 (%wp: multipliers 0.5 x 2^-4 and 0.5 x 2^-5) gets a float step proved
// channel by channel in place of its requantization table: `float_step_table = 1` (fused)
// and a [3, 2] table of singles' bits, scales 0.03125 (1023410176) and 0.015625
// (1015021568), then the offsets of each sign (`mark_channel_float_steps`).
// Without pair products and masked loads (`products` unset: SSE) all keep the generic int8
// kernel; a `products` other than neon is refused.

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
  %xd = glowll.placeholder input "xd" : memref<1x2x5x5x!quant.uniform<i8:f32, 5.0e-02:3>>
  %yd = glowll.placeholder output "yd" : memref<1x2x5x5x!quant.uniform<i8:f32, 1.0e-01:0>>
  %wd = glowll.weight "wd" {value = dense<[[[[1, 2, 3], [4, 5, 6], [7, 8, 9]]], [[[-1, 0, 1], [2, 3, 4], [5, 6, 7]]]]> : tensor<2x1x3x3xi8>} : memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %bd = glowll.weight "bd" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %yd, %xd, %wd, %bd {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x5x5x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x5x5x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %yf = glowll.placeholder output "yf" : memref<1x2x5x5x!quant.uniform<i8:f32, 1.0e-01:0>>
  %wf = glowll.weight "wf" {value = dense<[[[[127, 2, 3], [4, 5, 6], [7, 8, 9]]], [[[-1, 0, 1], [2, 3, 4], [5, 6, 7]]]]> : tensor<2x1x3x3xi8>} : memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:-100>>
  glowll.convolution %yf, %xd, %wf, %bd {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x5x5x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x5x5x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:-100>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %yg = glowll.placeholder output "yg" : memref<1x2x5x5x!quant.uniform<i8:f32, 1.0e-01:0>>
  %wg = glowll.weight "wg" {value = dense<[[[[127, 127, 127], [4, 5, 6], [7, 8, 9]]], [[[-1, 0, 1], [2, 3, 4], [5, 6, 7]]]]> : tensor<2x1x3x3xi8>} : memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:-100>>
  glowll.convolution %yg, %xd, %wg, %bd {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x5x5x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x5x5x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:-100>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %xs = glowll.placeholder input "xs" : memref<1x3x6x18x!quant.uniform<i8:f32, 5.0e-02:3>>
  %ys = glowll.placeholder output "ys" : memref<1x2x4x16x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.convolution %ys, %xs, %w2, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : memref<1x2x4x16x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x3x6x18x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x3x3x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %xq = glowll.placeholder input "xq" : memref<1x3x6x6x!quant.uniform<i8:f32, 5.0e-01:3>>
  %yp = glowll.placeholder output "yp" : memref<1x2x6x6x!quant.uniform<i8:f32, 4.0e+00:0>>
  %wp = glowll.weight "wp" {value = dense<[[[[1]], [[2]], [[3]]], [[[-1]], [[0]], [[1]]]]> : tensor<2x3x1x1xi8>} : memref<2x3x1x1x!quant.uniform<i8:f32:0, {2.5e-01:0, 1.25e-01:0}>>
  %bp = glowll.weight "bp" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32:0, {1.25e-01:0, 6.25e-02:0}>>
  %rp = glowll.weight "rp" {value = dense<[[1073741824, 1073741824], [-4, -5]]> : tensor<2x2xi32>} : memref<2x2xi32>
  glowll.convolution %yp, %xq, %wp, %bp requantization %rp {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : memref<1x2x6x6x!quant.uniform<i8:f32, 4.0e+00:0>>, memref<1x3x6x6x!quant.uniform<i8:f32, 5.0e-01:3>>, memref<2x3x1x1x!quant.uniform<i8:f32:0, {2.5e-01:0, 1.25e-01:0}>>, memref<2x!quant.uniform<i32:f32:0, {1.25e-01:0, 6.25e-02:0}>> requantization memref<2x2xi32>
  %x4 = glowll.placeholder input "x4" : memref<1x8x6x6x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y4 = glowll.placeholder output "y4" : memref<1x4x6x6x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w4 = glowll.weight "w4" {value = dense<1> : tensor<4x8x3x3xi8>} : memref<4x8x3x3x!quant.uniform<i8:f32, 1.0e-02:0>>
  %b4 = glowll.weight "b4" {value = dense<0> : tensor<4xi32>} : memref<4x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %y4, %x4, %w4, %b4 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : memref<1x4x6x6x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x8x6x6x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<4x8x3x3x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<4x!quant.uniform<i32:f32, 5.0e-04:0>>
  %w5 = glowll.weight "w5" {value = dense<[[[[-128]], [[2]], [[-128]]], [[[-1]], [[0]], [[1]]]]> : tensor<2x3x1x1xi8>} : memref<2x3x1x1x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %y5 = glowll.placeholder output "y5" : memref<1x2x6x6x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.convolution %y5, %x, %w5, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : memref<1x2x6x6x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x3x6x6x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x3x1x1x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
}

// CHECK:      %[[W:.*]] = glowll.weight "w_bytes" {value = dense<{{\[\[\[\[\[}}33620481, 16711935]]], {{\[\[\[}}196611, 65537]]]]]> : tensor<1x2x1x1x2xi32>} : memref<1x2x1x1x2x!quant.uniform<i32:f32, 1.0e-02:-1>>
// CHECK-NEXT: glowll.convolution %y, %x, %[[W]], {{.*}}folded_input_offset, microkernel = #glowll.microkernel<"vector-pointwise-int8", {products = "neon-bytes"}>, filter_shape = array<i64: 2, 3, 1, 1>, vector_tile = array<i64: 8, 4>}
// CHECK:      %[[W2:.*]] = glowll.weight "w2_im2col" elided : memref<1x14x1x1x2x!quant.uniform<i32:f32, 1.0e-02:0>>
// CHECK-NEXT: glowll.convolution %y2, %x, %[[W2]], {{.*}}microkernel = #glowll.microkernel<"vector-im2col-int8", {products = "neon"}>, filter_shape = array<i64: 2, 3, 3, 3>, vector_tile = array<i64: 4, 8>}
// CHECK:      %[[W3:.*]] = glowll.weight "w3_bytes" elided : memref<5x16x1x1x4x!quant.uniform<i32:f32, 1.0e-02:0>>
// CHECK-NEXT: glowll.convolution %y3, %x3, %[[W3]], {{.*}}microkernel = #glowll.microkernel<"vector-pointwise-int8", {products = "neon-bytes"}>, filter_shape = array<i64: 20, 32, 1, 1>, vector_tile = array<i64: 8, 8>}
// CHECK:      %[[WD:.*]] = glowll.weight "wd_columns" elided : memref<2x1x3x3x1x!quant.uniform<i8:f32, 1.0e-02:0>>
// CHECK-NEXT: glowll.convolution %yd, %xd, %[[WD]], %bd {{.*}}float_step = array<f32: 5.000000e-03, {{.*}}, 1.000000e+00>, microkernel = #glowll.microkernel<"vector-depthwise-int8", {products = "neon-bytes", int16_taps = 3 : i64}>, filter_shape = array<i64: 2, 1, 3, 3>, vector_tile = array<i64: 8, 4, 4>}
// CHECK:      %[[WF:.*]] = glowll.weight "wf_columns" elided : memref<2x1x3x3x1x!quant.uniform<i16:f32, 1.0e-02:0>>
// CHECK-NEXT: glowll.convolution %yf, %xd, %[[WF]], %bd {{.*}}float_step = array<f32: 5.000000e-03, {{.*}}, 1.000000e+00>, microkernel = #glowll.microkernel<"vector-depthwise-int8", {products = "neon-bytes", int16_taps = 2 : i64, wide_taps = array<i64: 0>}>, filter_shape = array<i64: 2, 1, 3, 3>, vector_tile = array<i64: 8, 4, 4>}
// CHECK:      %[[WG:.*]] = glowll.weight "wg_columns" elided : memref<2x1x3x3x1x!quant.uniform<i16:f32, 1.0e-02:0>>
// CHECK-NEXT: glowll.convolution %yg, %xd, %[[WG]], %bd {{.*}}float_step = array<f32: 5.000000e-03, {{.*}}, 1.000000e+00>, doubled_accumulators, microkernel = #glowll.microkernel<"vector-depthwise-int8", {products = "neon"}>, filter_shape = array<i64: 2, 1, 3, 3>, vector_tile = array<i64: 4, 5, 5>}
// CHECK:      %[[WS:.*]] = glowll.weight "w2_im2col_bytes" elided : memref<1x14x1x1x2x!quant.uniform<i32:f32, 1.0e-02:-1>>
// CHECK-NEXT: glowll.convolution %ys, %xs, %[[WS]], {{.*}}folded_input_offset, microkernel = #glowll.microkernel<"vector-im2col-int8", {products = "neon-bytes"}>, filter_shape = array<i64: 2, 3, 3, 3>, vector_tile = array<i64: 8, 4>}
// CHECK:      %[[RP:.*]] = glowll.weight "rp_float_steps" {value = dense<{{\[\[}}1023410176, 1015021568], [{{.*}}]]> : tensor<3x2xi32>} : memref<3x2xi32>
// CHECK:      glowll.convolution %yp, %xq, %{{.*}}, %{{.*}} requantization %[[RP]] {{{.*}}float_step_table = 1 : i64, folded_input_offset, microkernel = #glowll.microkernel<"vector-pointwise-int8", {products = "neon-bytes"}>, {{.*}} requantization memref<3x2xi32>
// CHECK:      %[[W4:.*]] = glowll.weight "w4_columns" elided : memref<1x8x3x2x4x!quant.uniform<i32:f32, 1.0e-02:0>>
// CHECK-NEXT: glowll.convolution %y4, %x4, %[[W4]], %b4 {{.*}}microkernel = #glowll.microkernel<"vector-columns-int8", {products = "neon"}>, filter_shape = array<i64: 4, 8, 3, 3>, vector_tile = array<i64: 4, 8>}
// CHECK:      %[[W5:.*]] = glowll.weight "w5_pairs" {{.*}} : memref<1x2x1x1x2x!quant.uniform<i32:f32, 1.0e-02:0>>
// CHECK-NEXT: glowll.convolution %y5, %x, %[[W5]], {{.*}}doubled_accumulators, microkernel = #glowll.microkernel<"vector-pointwise-int8", {products = "neon"}>, filter_shape = array<i64: 2, 3, 1, 1>, vector_tile = array<i64: 4, 8>}

// NONE-NOT:  microkernel

// BAD: glowll-select-vector-columns{products=sdot}: expected neon (or none: vpmaddwd)
