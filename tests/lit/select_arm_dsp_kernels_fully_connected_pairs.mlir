// RUN: glow-opt --print-weights %s -p 'glowll-select-arm-dsp-kernels{constant-ratio=1.25}' | filecheck %s
// RUN: glow-opt --print-weights %s -p 'glowll-select-arm-dsp-kernels{constant-ratio=1.25}' | glow-opt --print-weights | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{filter-words=int8}' | filecheck %s --check-prefix=INT8
// FullyConnected weight layouts (backends/arm_dsp/fully_connected.py). Sixteen outputs of four
// inputs (four blocks of four: gathered rows), w[n][k] = 4 n + k - 30: output pair words
// (`output_pair_words`, 1x the int8 bytes): outputs 0 and 1, row 0 holds (w[0][0], w[1][0] - 1,
// w[0][2], w[1][2] - 1) = (-30, -27, -28, -25), row 1 the same of inputs 1 and 3, a byte borrowed
// (-1) after each negative level. Nine outputs (blocks of one) take no pairs of outputs: int16
// weight pairs (`pair_weight_rows`: each run in the order (0, 2, 1, 3)) within the 1.25x budget
// (the small model's 4 KB of slack). The int8 hook keeps both as they are.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %y = glowll.placeholder output "y" : memref<1x16x!quant.uniform<i8:f32, 1.0e-01:0>>
  %w = glowll.weight "w" {value = dense<[[-30, -29, -28, -27], [-26, -25, -24, -23], [-22, -21, -20, -19], [-18, -17, -16, -15], [-14, -13, -12, -11], [-10, -9, -8, -7], [-6, -5, -4, -3], [-2, -1, 0, 1], [2, 3, 4, 5], [6, 7, 8, 9], [10, 11, 12, 13], [14, 15, 16, 17], [18, 19, 20, 21], [22, 23, 24, 25], [26, 27, 28, 29], [30, 31, 32, 33]]> : tensor<16x4xi8>} : memref<16x4x!quant.uniform<i8:f32, 1.0e-02:0>>
  %b = glowll.weight "b" {value = dense<7> : tensor<16xi32>} : memref<16x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.fully_connected %y, %x, %w, %b : memref<1x16x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<16x4x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<16x!quant.uniform<i32:f32, 5.0e-04:0>>
  %z = glowll.placeholder output "z" : memref<1x9x!quant.uniform<i8:f32, 1.0e-01:0>>
  %v = glowll.weight "v" {value = dense<[[-10, -9, -8, -7], [-6, -5, -4, -3], [-2, -1, 0, 1], [2, 3, 4, 5], [6, 7, 8, 9], [10, 11, 12, 13], [14, 15, 16, 17], [18, 19, 20, 21], [22, 23, 24, 25]]> : tensor<9x4xi8>} : memref<9x4x!quant.uniform<i8:f32, 1.0e-02:0>>
  %c = glowll.weight "c" {value = dense<7> : tensor<9xi32>} : memref<9x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.fully_connected %z, %x, %v, %c : memref<1x9x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<9x4x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<9x!quant.uniform<i32:f32, 5.0e-04:0>>
}

// CHECK:      glowll.weight "w_output_pairs" {value = dense<{{\[\[}}-30, -27, -28, -25], [-29, -26, -27, -24], [-22, -19, -20, -17], [-21, -18, -19, -16], [-14, -11, -12, -9], [-13, -10, -11, -8], [-6, -3, -4, -1], [-5, -2, -3, 0], [2, 6, 4, 8], [3, 7, 5, 9], [10, 14, 12, 16], [11, 15, 13, 17], [18, 22, 20, 24], [19, 23, 21, 25], [26, 30, 28, 32], [27, 31, 29, 33]]> : tensor<16x4xi8>} : memref<16x4x!quant.uniform<i8:f32, 1.0e-02:0>>
// CHECK-NEXT: glowll.fully_connected %y, %x, %{{.*}}, %{{.*}} {microkernel = #glowll.microkernel<"arm-dsp", {output_pairs}>,
// CHECK:      glowll.weight "v_weight_pairs" {value = dense<{{\[\[}}-10, -8, -9, -7], [-6, -4, -5, -3], [-2, 0, -1, 1], [2, 4, 3, 5], [6, 8, 7, 9], [10, 12, 11, 13], [14, 16, 15, 17], [18, 20, 19, 21], [22, 24, 23, 25]]> : tensor<9x4xi16>} : memref<9x4x!quant.uniform<i16:f32, 1.0e-02:0>>
// CHECK-NEXT: glowll.fully_connected %z, %x, %{{.*}}, %{{.*}} {microkernel = #glowll.microkernel<"arm-dsp", {weight_pairs}>,

// INT8:       glowll.fully_connected %y, %x, %w, %{{.*}} {microkernel = #glowll.microkernel<"arm-dsp">,
// INT8:       glowll.fully_connected %z, %x, %v, %{{.*}} {microkernel = #glowll.microkernel<"arm-dsp">,
