// RUN: glow-opt %s -p 'glow-quantize{profile="%S/inputs/quantize_int16_profile.yaml" precision="Int16"},glow-optimize-quantization' | filecheck %s
// -quantization-precision=Int16 (TFLite's 16x8 scheme): activations are int16 and symmetric
// (the default asymmetric schema becomes symmetric: x in [-1, 1] -> scale 1/32767,
// offset 0), weights stay int8 (their own asymmetric range), the bias is int32 with scale
// = input x weight scale; SoftMax outputs scale 1/32768, offset 0; a sigmoid becomes a
// 513-entry int16 table (entry i at input level -32768 + 128 i, interpolated between).

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x4xf32>
  %w = glow.constant "w" {value = dense<[[1.0, -1.0], [0.5, 2.0], [-0.25, 0.0], [1.5, 1.0]]> : tensor<4x2xf32>} : tensor<4x2xf32>
  %b = glow.constant "b" {value = dense<[0.5, -0.5]> : tensor<2xf32>} : tensor<2xf32>
  %fc = glow.fully_connected %x, %w, %b {name = "fc"} : (tensor<1x4xf32>, tensor<4x2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
  %r = glow.relu %fc {name = "relu"} : (tensor<1x2xf32>) -> tensor<1x2xf32>
  %g = glow.sigmoid %r {name = "sig"} : (tensor<1x2xf32>) -> tensor<1x2xf32>
  %s = glow.softmax %g {name = "sm", axis = 1 : i64} : (tensor<1x2xf32>) -> tensor<1x2xf32>
  glow.save %s as "y" : tensor<1x2xf32>
}

// CHECK:      %x = glow.placeholder "x" : tensor<1x4xf32>
// CHECK-NEXT: %[[X:.*]] = glow.quantize %x : (tensor<1x4xf32>) -> tensor<1x4x!quant.uniform<i16:f32, 3.051851e-05:0>>
// CHECK-NEXT: %[[W:.*]] = glow.constant "w" {value = dense<{{\[\[}}42, -128], [0, 127], [-64, -43], [84, 42]]> : tensor<4x2xi8>} : tensor<4x2x!quant.uniform<i8:f32, 1.1764706e-02:-43>>
// CHECK-NEXT: %[[B:.*]] = glow.constant "b" {value = dense<[1392597, -1392597]> : tensor<2xi32>} : tensor<2x!quant.uniform<i32:f32, 3.590413e-07:0>>
// CHECK-NEXT: %fc = glow.fully_connected %[[X]], %[[W]], %[[B]] {name = "fc"} : {{.*}} -> tensor<1x2x!quant.uniform<i16:f32, 3.662221e-04:0>>
// CHECK-NEXT: %r = glow.relu %fc {name = "relu"} : {{.*}} -> tensor<1x2x!quant.uniform<i16:f32, 3.662221e-04:0>>
// CHECK-NEXT: %[[T:.*]] = glow.constant "sig_table" elided : tensor<513x!quant.uniform<i16:f32, 3.051851e-05:0>>
// CHECK-NEXT: %g = glow.int_lookup_table %r, %[[T]] {table_of = {op = "glow.sigmoid"}, name = "sig"} : {{.*}} -> tensor<1x2x!quant.uniform<i16:f32, 3.051851e-05:0>>
// CHECK-NEXT: %s = glow.softmax %g {{.*}} -> tensor<1x2x!quant.uniform<i16:f32, 3.0517578e-05:0>>
// CHECK-NEXT: %[[Y:.*]] = glow.dequantize %s : (tensor<1x2x!quant.uniform<i16:f32, 3.0517578e-05:0>>) -> tensor<1x2xf32>
// CHECK-NEXT: glow.save %[[Y]] as "y" : tensor<1x2xf32>
