// RUN: glow-opt %s -p glow-quantize-from-model | filecheck %s
// A QDQ model (QuantizeLinear/DequantizeLinear around float ops, as onnxruntime's quantizer
// writes it) is quantized with the file's own types, no profile: each op's result takes the
// type of the model's quantize that follows it (marked `model_quantization`), weights the type their file gives them
// (`model_quantization`), the bias is int32 at input scale x weight scale; data movement
// (the max pool) keeps its input's type; the float op with no quantize after it (the
// sigmoid) stays float.

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x2x4x4xf32>
  %qx = glow.quantize %x {model_quantization = !quant.uniform<i8:f32, 5.0e-02:-3>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4x!quant.uniform<i8:f32, 5.0e-02:-3>>
  %dx = glow.dequantize %qx : (tensor<1x2x4x4x!quant.uniform<i8:f32, 5.0e-02:-3>>) -> tensor<1x2x4x4xf32>
  %w = glow.constant "w" {value = dense<[[[[0.5]], [[-0.25]]], [[[0.125]], [[0.75]]]]> : tensor<2x2x1x1xf32>, model_quantization = !quant.uniform<i8:f32, 7.8125e-03:0>} : tensor<2x2x1x1xf32>
  %b = glow.constant "b" {value = dense<[0.1, -0.2]> : tensor<2xf32>} : tensor<2xf32>
  %c = glow.convolution %dx, %w, %b {name = "conv", strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %qc = glow.quantize %c {model_quantization = !quant.uniform<i8:f32, 1.0e-01:5>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4x!quant.uniform<i8:f32, 1.0e-01:5>>
  %dc = glow.dequantize %qc : (tensor<1x2x4x4x!quant.uniform<i8:f32, 1.0e-01:5>>) -> tensor<1x2x4x4xf32>
  %p = glow.max_pool %dc {name = "pool", kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %qp = glow.quantize %p {model_quantization = !quant.uniform<i8:f32, 1.0e-01:5>} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:5>>
  %dp = glow.dequantize %qp : (tensor<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:5>>) -> tensor<1x2x2x2xf32>
  %s = glow.sigmoid %dp {name = "sigmoid"} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  glow.save %s as "y" : tensor<1x2x2x2xf32>
}

// CHECK:      %x = glow.placeholder "x" : tensor<1x2x4x4xf32>
// CHECK-NEXT: %[[QX:.*]] = glow.quantize %x {{.*}} -> tensor<1x2x4x4x!quant.uniform<i8:f32, 5.0e-02:-3>>
// CHECK-NEXT: %[[W:.*]] = glow.constant "w" {value = dense<{{\[\[\[\[}}64]], {{\[\[}}-32]]], {{\[\[\[}}16]], {{\[\[}}96]]]]> : tensor<2x2x1x1xi8>} : tensor<2x2x1x1x!quant.uniform<i8:f32, 7.8125e-03:0>>
// CHECK-NEXT: %[[B:.*]] = glow.constant "b" {value = dense<[256, -512]> : tensor<2xi32>} : tensor<2x!quant.uniform<i32:f32, 3.90625e-04:0>>
// CHECK-NEXT: %c = glow.convolution %[[QX]], %[[W]], %[[B]] {{.*}} -> tensor<1x2x4x4x!quant.uniform<i8:f32, 1.0e-01:5>>
// CHECK-NEXT: %p = glow.max_pool %c {{.*}} -> tensor<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:5>>
// CHECK-NEXT: %[[F:.*]] = glow.dequantize %p
// CHECK-NEXT: %s = glow.sigmoid %[[F]]
// CHECK-NEXT: glow.save %s as "y"
