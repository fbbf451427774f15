// RUN: glow-opt %s -p 'glow-quantize{profile="%S/inputs/average_pool_profile.yaml"},glow-optimize-quantization' | filecheck %s
// An int8 average pool keeps its input's type (r in [0, 10.2]: scale 0.04, offset -128),
// unless its profiled range is much narrower (at least 2x: `POOL_NARROWING`), as a global
// average pool's is (the mean of a plane of ReLU outputs, [0, 2.55]: scale 0.01). Then it
// averages at its own scale: the input widened exactly to int16 (scale 0.04 / 256, offset
// -128 x 256), the same pool kernel on int16 levels, one rescale to the profiled int8 type.
// A local pool whose range is 3/4 of its input's ([0, 7.65]) keeps the input's type, and so
// does a mean over 65,536 taps (256 x 256: their int16 sum could leave int32).

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x2x4x4xf32>
  %r = glow.relu %x {name = "r"} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %m = glow.avg_pool %r {kernel = array<i64: 4, 4>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, name = "mean"} : (tensor<1x2x4x4xf32>) -> tensor<1x2x1x1xf32>
  %l = glow.avg_pool %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, name = "local"} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %z = glow.placeholder "z" : tensor<1x1x256x256xf32>
  %rz = glow.relu %z {name = "rz"} : (tensor<1x1x256x256xf32>) -> tensor<1x1x256x256xf32>
  %big = glow.avg_pool %rz {kernel = array<i64: 256, 256>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, name = "big"} : (tensor<1x1x256x256xf32>) -> tensor<1x1x1x1xf32>
  glow.save %big as "b" : tensor<1x1x1x1xf32>
  glow.save %m as "m" : tensor<1x2x1x1xf32>
  glow.save %l as "l" : tensor<1x2x2x2xf32>
}

// CHECK:      %x = glow.placeholder "x" : tensor<1x2x4x4xf32>
// CHECK-NEXT: %[[X:.*]] = glow.quantize %x
// CHECK-NEXT: %r = glow.relu %[[X]] {name = "r"} : {{.*}} -> tensor<1x2x4x4x!quant.uniform<i8:f32, 4.0e-02:-128>>
// CHECK-NEXT: %[[W:.*]] = glow.rescale_quantized %r : {{.*}} -> tensor<1x2x4x4x!quant.uniform<i16:f32, 1.5625e-04:-32768>>
// CHECK-NEXT: %m = glow.avg_pool %[[W]] {name = "mean", {{.*}} -> tensor<1x2x1x1x!quant.uniform<i16:f32, 1.5625e-04:-32768>>
// CHECK-NEXT: %[[M:.*]] = glow.rescale_quantized %m : {{.*}} -> tensor<1x2x1x1x!quant.uniform<i8:f32, 1.0e-02:-128>>
// CHECK-NEXT: %l = glow.avg_pool %r {name = "local", {{.*}} -> tensor<1x2x2x2x!quant.uniform<i8:f32, 4.0e-02:-128>>
// CHECK:      %rz = glow.relu {{.*}} -> tensor<1x1x256x256x!quant.uniform<i8:f32, 4.0e-02:-128>>
// CHECK-NEXT: %big = glow.avg_pool %rz {name = "big", {{.*}} -> tensor<1x1x1x1x!quant.uniform<i8:f32, 4.0e-02:-128>>
// CHECK:      glow.dequantize %[[M]]
// CHECK:      glow.dequantize %l
