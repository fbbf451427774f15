// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=16 accumulators=16 planes=true registers=32}' | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=4 accumulators=12 registers=16}' | filecheck %s --check-prefix=SSE
// RUN: glow-opt %s -p 'glowll-select-vector-columns{lanes=8 accumulators=12 planes=true registers=16}' | filecheck %s --check-prefix=AVX2
// Where masked loads are single instructions (`planes`: AVX, AVX-512), an int8 depthwise
// convolution takes the vector-depthwise-int8 kernel, on the depthwise tiles of up to 8 rows
// (`MOST_INT8_DEPTHWISE_ROWS`): the stride-2 one (rows of 5 outputs: one vector of 8 int32
// lanes, its 5 rows one tile), its levels doubled (narrow requantization:
// doubled_accumulators). The "same"-padded
// one of stride 1 on 5 x 5 planes takes vector-planes-int8 instead: each plane of 25 pixels
// is 2 vectors of 16 lanes (on the depthwise tiles, 5 rows of one vector), vector_tile =
// (lanes, vectors). Both filters are packed [C, 1, KH, KW, 1] as int16 levels less the
// weight zero point -1, so the packed type's offset is 0 (the printout elides the levels;
// tests/unit/test_int8_depthwise.py checks the outputs bit for bit). The planes kernel loads
// every tap, the padding's as the input zero point 3, so its bias takes -3 * sum(w + 1)
// (folded_input_offset): 10 - 3 * 54 = -152, -20 - 3 * 36 = -128.
// Tiles of fewer rows take as many vectors of a row as keep 8 accumulators (on AVX2's 8
// lanes, the 5x5 of stride (2, 1) to 3 x 24: 3 rows x 2 vectors, vector_tile = (8, 6, 3);
// to 2 x 24: 2 rows x 4 vectors, (8, 8, 2)).
// Without masked loads (SSE) the convolutions keep the generic int8 kernel.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x2x5x5x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x2x5x5x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w = glowll.weight "w" {value = dense<[[[[1, 2, 3], [4, 5, 6], [7, 8, 9]]], [[[-1, 0, 1], [2, 3, 4], [5, 6, 7]]]]> : tensor<2x1x3x3xi8>} : memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %b = glowll.weight "b" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x5x5x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x5x5x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %x2 = glowll.placeholder input "x2" : memref<1x2x9x9x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y2 = glowll.placeholder output "y2" : memref<1x2x5x5x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w2 = glowll.weight "w2" {value = dense<[[[[1, 2, 3], [4, 5, 6], [7, 8, 9]]], [[[-1, 0, 1], [2, 3, 4], [5, 6, 7]]]]> : tensor<2x1x3x3xi8>} : memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
  glowll.convolution %y2, %x2, %w2, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x5x5x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x9x9x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %x3 = glowll.placeholder input "x3" : memref<1x2x5x24x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y3 = glowll.placeholder output "y3" : memref<1x2x3x24x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w3 = glowll.weight "w3" {value = dense<[[[[-9, -2, 5, -7, 0], [7, -5, 2, 9, -3], [4, -8, -1, 6, -6], [1, 8, -4, 3, -9], [-2, 5, -7, 0, 7]]], [[[-5, 2, 9, -3, 4], [-8, -1, 6, -6, 1], [8, -4, 3, -9, -2], [5, -7, 0, 7, -5], [2, 9, -3, 4, -8]]]]> : tensor<2x1x5x5xi8>} : memref<2x1x5x5x!quant.uniform<i8:f32, 1.0e-02:0>>
  glowll.convolution %y3, %x3, %w3, %b {strides = array<i64: 2, 1>, pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x3x24x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x5x24x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x5x5x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %x4 = glowll.placeholder input "x4" : memref<1x2x3x24x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y4 = glowll.placeholder output "y4" : memref<1x2x2x24x!quant.uniform<i8:f32, 1.0e-01:0>>
  glowll.convolution %y4, %x4, %w3, %b {strides = array<i64: 2, 1>, pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x2x24x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x3x24x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x5x5x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
}

// CHECK:      %[[W:.*]] = glowll.weight "w_columns" elided : memref<2x1x3x3x1x!quant.uniform<i16:f32, 1.0e-02:0>>
// CHECK-NEXT: %[[B:.*]] = glowll.weight "b_adjusted" {value = dense<[-152, -128]> : tensor<2xi32>}
// CHECK-NEXT: glowll.convolution %y, %x, %[[W]], %[[B]] {{.*}}microkernel = #glowll.microkernel<"vector-planes-int8">, filter_shape = array<i64: 2, 1, 3, 3>, vector_tile = array<i64: 16, 2>, folded_input_offset}
// CHECK:      %[[W2:.*]] = glowll.weight "w2_columns" elided : memref<2x1x3x3x1x!quant.uniform<i16:f32, 1.0e-02:0>>
// CHECK-NEXT: glowll.convolution %y2, %x2, %[[W2]], %b {{.*}}doubled_accumulators, microkernel = #glowll.microkernel<"vector-depthwise-int8">, filter_shape = array<i64: 2, 1, 3, 3>, vector_tile = array<i64: 8, 5, 5>}
// AVX2:      glowll.convolution %y3, %x3, {{.*}}microkernel = #glowll.microkernel<"vector-depthwise-int8">, filter_shape = array<i64: 2, 1, 5, 5>, vector_tile = array<i64: 8, 6, 3>}
// AVX2:      glowll.convolution %y4, %x4, {{.*}}microkernel = #glowll.microkernel<"vector-depthwise-int8">, filter_shape = array<i64: 2, 1, 5, 5>, vector_tile = array<i64: 8, 8, 2>}

// SSE:       glowll.convolution %y, %x, %w, %b
// SSE-NOT:   microkernel
// SSE:       glowll.convolution %y2, %x2, %w2, %b
// SSE-NOT:   microkernel
