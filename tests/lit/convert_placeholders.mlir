// RUN: glow-opt %s -p glow-convert-placeholders | filecheck %s
// -convert-placeholders: the input used only by a Quantize takes its type; the output saved
// from a Dequantize is saved quantized. The bundle then converts nothing.

glow.function @net {
  %x = glow.placeholder "x" : tensor<4xf32>
  %q = glow.quantize %x : (tensor<4xf32>) -> tensor<4x!quant.uniform<i8:f32, 1.0e-01:0>>
  %r = glow.relu %q : (tensor<4x!quant.uniform<i8:f32, 1.0e-01:0>>) -> tensor<4x!quant.uniform<i8:f32, 5.0e-02:-128>>
  %d = glow.dequantize %r : (tensor<4x!quant.uniform<i8:f32, 5.0e-02:-128>>) -> tensor<4xf32>
  glow.save %d as "y" : tensor<4xf32>
}

// CHECK:      %x = glow.placeholder "x" : tensor<4x!quant.uniform<i8:f32, 1.0e-01:0>>
// CHECK-NEXT: %r = glow.relu %x : (tensor<4x!quant.uniform<i8:f32, 1.0e-01:0>>) -> tensor<4x!quant.uniform<i8:f32, 5.0e-02:-128>>
// CHECK-NEXT: glow.save %r as "y" : tensor<4x!quant.uniform<i8:f32, 5.0e-02:-128>>
// CHECK-NEXT: }
