// RUN: glow-opt %s -p glow-optimize-quantization | filecheck %s
// Conversions that cancel are removed: Dequantize(Quantize(x)) -> x; Quantize(Dequantize(q))
// -> q when the types agree, else one Rescale; a Rescale after an op that requantizes its
// result anyway (here an Add) becomes that op's result type.

glow.function @net {
  %x = glow.placeholder "x" : tensor<4xf32>
  %q = glow.quantize %x : (tensor<4xf32>) -> tensor<4x!quant.uniform<i8:f32, 1.0e-01:0>>
  %d = glow.dequantize %q : (tensor<4x!quant.uniform<i8:f32, 1.0e-01:0>>) -> tensor<4xf32>
  %r = glow.relu %d : (tensor<4xf32>) -> tensor<4xf32>
  glow.save %r as "float_path" : tensor<4xf32>
  %q2 = glow.quantize %d : (tensor<4xf32>) -> tensor<4x!quant.uniform<i8:f32, 2.0e-01:3>>
  %sum = glow.add %q2, %q2 : (tensor<4x!quant.uniform<i8:f32, 2.0e-01:3>>, tensor<4x!quant.uniform<i8:f32, 2.0e-01:3>>) -> tensor<4x!quant.uniform<i8:f32, 4.0e-01:0>>
  %rs = glow.rescale_quantized %sum : (tensor<4x!quant.uniform<i8:f32, 4.0e-01:0>>) -> tensor<4x!quant.uniform<i8:f32, 5.0e-01:-1>>
  %back = glow.dequantize %rs : (tensor<4x!quant.uniform<i8:f32, 5.0e-01:-1>>) -> tensor<4xf32>
  glow.save %back as "y" : tensor<4xf32>
}

// CHECK:      %x = glow.placeholder "x" : tensor<4xf32>
// CHECK-NEXT: %r = glow.relu %x : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: glow.save %r as "float_path"
// CHECK-NEXT: %[[Q:.*]] = glow.quantize %x : (tensor<4xf32>) -> tensor<4x!quant.uniform<i8:f32, 2.0e-01:3>>
// CHECK-NEXT: %sum = glow.add %[[Q]], %[[Q]] : {{.*}} -> tensor<4x!quant.uniform<i8:f32, 5.0e-01:-1>>
// CHECK-NEXT: %[[Y:.*]] = glow.dequantize %sum
// CHECK-NEXT: glow.save %[[Y]] as "y"
