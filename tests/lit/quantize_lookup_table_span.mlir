// RUN: glow-opt %s -p 'glow-quantize{profile="%S/inputs/lookup_table_span_profile.yaml"},glow-optimize-quantization' | filecheck %s
// A value read only by lookup tables is quantized to the part of its profiled range where
// the tables' functions still change: below and above it they give one entry whatever the
// level, so saturating there loses nothing and the levels go where the tables tell values
// apart (as a convolution's output is quantized with the range of the Relu after it).
// x in [-8, 4] feeds a HardSwish, 0 below -3: quantized over [-3.0007, 4] (scale 7/255, not
// 12/255). h in [-8, 6] feeds a HardSigmoid (alpha 0.2, beta 0.5), 0 below -2.5 and 1 above
// 2.5: over about [-2.5, 2.5] (scale 5.005/255, not 14/255; the ends are the last sample of
// the saturated runs: 4,096 samples of the range). g, in the same range, is read by a
// HardSigmoid and a Relu: its whole range (scale 14/255).

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x8xf32>
  %h = glow.placeholder "h" : tensor<1x8xf32>
  %g = glow.placeholder "g" : tensor<1x8xf32>
  %hs = glow.hard_swish %x {name = "hs"} : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %gate = glow.hard_sigmoid %h {name = "gate", alpha = 0.2 : f32, beta = 0.5 : f32} : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %sig = glow.hard_sigmoid %g {name = "sig", alpha = 0.2 : f32, beta = 0.5 : f32} : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %r = glow.relu %g {name = "r"} : (tensor<1x8xf32>) -> tensor<1x8xf32>
  glow.save %hs as "y" : tensor<1x8xf32>
  glow.save %gate as "u" : tensor<1x8xf32>
  glow.save %sig as "z" : tensor<1x8xf32>
  glow.save %r as "w" : tensor<1x8xf32>
}

// CHECK:      glow.quantize %x : (tensor<1x8xf32>) -> tensor<1x8x!quant.uniform<i8:f32, 2.7453853e-02:-19>>
// CHECK:      glow.int_lookup_table {{.*}} name = "hs"}
// CHECK:      glow.quantize %h : (tensor<1x8xf32>) -> tensor<1x8x!quant.uniform<i8:f32, 1.9627955e-02:0>>
// CHECK:      glow.int_lookup_table {{.*}} name = "gate"}
// CHECK:      glow.quantize %g : (tensor<1x8xf32>) -> tensor<1x8x!quant.uniform<i8:f32, 5.490196e-02:18>>
// CHECK:      glow.int_lookup_table {{.*}} name = "sig"}
// CHECK:      glow.relu {{.*}} {name = "r"}
