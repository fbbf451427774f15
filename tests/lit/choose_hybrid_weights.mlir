// RUN: glow-opt %s -p 'glow-choose-hybrid-weights{form=float}' | filecheck %s --check-prefix=FLOAT
// RUN: glow-opt %s -p 'glow-choose-hybrid-weights{form=int8}' | filecheck %s --check-prefix=INT8
// RUN: glow-opt %s -p glow-choose-hybrid-weights | filecheck %s --check-prefix=COST
// RUN: glow-opt %s -p 'glow-choose-hybrid-weights{flash-size=65616}' | filecheck %s --check-prefix=FLASH
// RUN: glow-opt %s -p 'glow-choose-hybrid-weights{form=int8},lower-glow-to-glowll' | filecheck %s --check-prefix=GLOWLL
// A hybrid model's int8 weights (behind a dequantize, as the TFLite importer gives them): computed
// in float at compile time, or kept int8 and dequantized by the kernel as it reads them.
// Without a flash size the convolution of 8-wide output rows goes int8 (one dequantization per
// 8 products), the FullyConnected stays float (one per product). With 65,616 bytes of flash
// (64 KiB kept for code: 80 for constants) the float form's 100 bytes do not fit; the largest
// weights (the FullyConnected's, 48 bytes in float) go int8 and the rest, 64 bytes, fits.

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x1x9x9xf32>
  %w = glow.constant "w" {value = dense<[[[[1, -2], [3, 4]]], [[[-5, 6], [7, 127]]]]> : tensor<2x1x2x2xi8>} : tensor<2x1x2x2x!quant.uniform<i8:f32:0, {1.0e-01:0, 5.0e-01:0}>>
  %wf = glow.dequantize %w : (tensor<2x1x2x2x!quant.uniform<i8:f32:0, {1.0e-01:0, 5.0e-01:0}>>) -> tensor<2x1x2x2xf32>
  %b = glow.constant "b" {value = dense<[0.5, -0.5]> : tensor<2xf32>} : tensor<2xf32>
  %c = glow.convolution %x, %wf, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x9x9xf32>, tensor<2x1x2x2xf32>, tensor<2xf32>) -> tensor<1x2x8x8xf32>
  %flat = glow.reshape %c : (tensor<1x2x8x8xf32>) -> tensor<32x4xf32>
  %v = glow.constant "v" {value = dense<[[1, 2, 3], [-4, 5, 6], [7, -8, 9], [0, 0, -127]]> : tensor<4x3xi8>} : tensor<4x3x!quant.uniform<i8:f32, 1.0e-02:0>>
  %vf = glow.dequantize %v : (tensor<4x3x!quant.uniform<i8:f32, 1.0e-02:0>>) -> tensor<4x3xf32>
  %d = glow.constant "d" {value = dense<[0.0, 1.0, 2.0]> : tensor<3xf32>} : tensor<3xf32>
  %y = glow.fully_connected %flat, %vf, %d : (tensor<32x4xf32>, tensor<4x3xf32>, tensor<3xf32>) -> tensor<32x3xf32>
  glow.save %y as "y" : tensor<32x3xf32>
}

// FLOAT-NOT:  glow.dequantize
// FLOAT:      glow.constant "w" {value = dense<{{\[\[\[\[}}1.000000e-01, -2.000000e-01], [3.000000e-01, 4.000000e-01]]], {{\[\[\[}}-2.500000e+00, 3.000000e+00], [3.500000e+00, 6.350000e+01]]]]> : tensor<2x1x2x2xf32>}
// FLOAT:      glow.constant "v" {value = dense<{{\[\[}}1.000000e-02, 2.000000e-02, 3.000000e-02], {{.*}}, [0.000000e+00, 0.000000e+00, -1.270000e+00]]> : tensor<4x3xf32>}

// INT8:       %[[W:.*]] = glow.constant "w" {{.*}} : tensor<2x1x2x2x!quant.uniform<i8:f32:0, {1.0e-01:0, 5.0e-01:0}>>
// INT8-NEXT:  %[[WF:.*]] = glow.dequantize %[[W]] {dequantize_on_use}
// INT8:       glow.convolution %x, %[[WF]], %b
// INT8:       %[[V:.*]] = glow.constant "v" {{.*}} : tensor<4x3x!quant.uniform<i8:f32, 1.0e-02:0>>
// INT8-NEXT:  %[[VF:.*]] = glow.dequantize %[[V]] {dequantize_on_use}
// INT8:       glow.fully_connected %flat, %[[VF]], %d

// COST:       glow.dequantize %w {dequantize_on_use} : (tensor<2x1x2x2x!quant.uniform
// COST-NOT:   glow.dequantize
// COST:       glow.constant "v" {value = {{.*}} : tensor<4x3xf32>

// FLASH-NOT:  glow.dequantize %w
// FLASH:      glow.constant "w" {value = {{.*}} : tensor<2x1x2x2xf32>
// FLASH:      glow.dequantize %v {dequantize_on_use} : (tensor<4x3x!quant.uniform

// GLOWLL-NOT: glowll.elementwise
// GLOWLL:      %[[W:.*]] = glowll.weight "w" {value = dense<{{.*}}> : tensor<2x1x2x2xi8>} : memref<2x1x2x2x!quant.uniform<i8:f32:0, {1.0e-01:0, 5.0e-01:0}>>
// GLOWLL:      %[[S:.*]] = glowll.weight "w_scales" {value = dense<[1.000000e-01, 5.000000e-01]> : tensor<2xf32>} : memref<2xf32>
// GLOWLL-NEXT: %[[C:.*]] = glowll.alloc : memref<1x2x8x8xf32>
// GLOWLL-NEXT: glowll.convolution %[[C]], %{{.*}}, %[[W]], %{{.*}} weight_scales %[[S]] {{.*}} weight_scales memref<2xf32>
// GLOWLL:      %[[V:.*]] = glowll.weight "v_transposed" {value = dense<{{\[\[}}1, -4, 7, 0], [2, 5, -8, 0], [3, 6, 9, -127]]> : tensor<3x4xi8>} : memref<3x4x!quant.uniform<i8:f32, 1.0e-02:0>>
// GLOWLL-NEXT: %[[T:.*]] = glowll.weight "v_scales" {value = dense<1.000000e-02> : tensor<3xf32>} : memref<3xf32>
// GLOWLL:      glowll.fully_connected %{{.*}}, %{{.*}}, %[[V]], %{{.*}} weight_scales %[[T]] : {{.*}} weight_scales memref<3xf32>
