// RUN: glow-opt %s -p 'glow-quantize{profile="%S/inputs/quantize_profile.yaml"}' | filecheck %s
// RUN: glow-opt %s -p 'glow-quantize{profile="%S/inputs/quantize_profile.yaml" schema="symmetric"}' | filecheck %s --check-prefix=SYM
// RUN: glow-opt %s -p 'glow-quantize{profile="%S/inputs/quantize_profile.yaml" keep_original_precision_for_nodes="SoftMax"}' | filecheck %s --check-prefix=KEEP
// RUN: glow-opt %s -p 'glow-quantize{profile="%S/inputs/quantize_means_profile.yaml"}' | filecheck %s --check-prefix=BC
// RUN: glow-opt %s -p 'glow-quantize{profile="%S/inputs/quantize_means_profile.yaml" bias_correction=false}' | filecheck %s
// Profile-guided quantization (a Glow-written profile: block and flow histograms). The
// input gets its profiled range, x in [-1, 1] -> scale 2/255, offset 0; the weights
// their own range; the bias is int32 with scale = input x weight scale; SoftMax outputs
// scale 1/256, offset -128; the float output is dequantized.

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x4xf32>
  %w = glow.constant "w" {value = dense<[[1.0, -1.0], [0.5, 2.0], [-0.25, 0.0], [1.5, 1.0]]> : tensor<4x2xf32>} : tensor<4x2xf32>
  %b = glow.constant "b" {value = dense<[0.5, -0.5]> : tensor<2xf32>} : tensor<2xf32>
  %fc = glow.fully_connected %x, %w, %b {name = "fc"} : (tensor<1x4xf32>, tensor<4x2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
  %r = glow.relu %fc {name = "relu"} : (tensor<1x2xf32>) -> tensor<1x2xf32>
  %s = glow.softmax %r {name = "sm", axis = 1 : i64} : (tensor<1x2xf32>) -> tensor<1x2xf32>
  glow.save %s as "y" : tensor<1x2xf32>
}

// CHECK:      %x = glow.placeholder "x" : tensor<1x4xf32>
// CHECK-NEXT: %[[X:.*]] = glow.quantize %x : (tensor<1x4xf32>) -> tensor<1x4x!quant.uniform<i8:f32, 7.843138e-03:0>>
// CHECK-NEXT: %[[W:.*]] = glow.constant "w" {value = dense<{{\[\[}}42, -128], [0, 127], [-64, -43], [84, 42]]> : tensor<4x2xi8>} : tensor<4x2x!quant.uniform<i8:f32, 1.1764706e-02:-43>>
// CHECK-NEXT: %[[B:.*]] = glow.constant "b" {value = dense<[5419, -5419]> : tensor<2xi32>} : tensor<2x!quant.uniform<i32:f32, 9.227221e-05:0>>
// CHECK-NEXT: %fc = glow.fully_connected %[[X]], %[[W]], %[[B]] {name = "fc"} : {{.*}} -> tensor<1x2x!quant.uniform<i8:f32, 6.27451e-02:-64>>
// CHECK-NEXT: %r = glow.relu %fc {name = "relu"} : {{.*}} -> tensor<1x2x!quant.uniform<i8:f32, 4.7058824e-02:-128>>
// CHECK-NEXT: %s = glow.softmax %r {{.*}} -> tensor<1x2x!quant.uniform<i8:f32, 3.90625e-03:-128>>
// CHECK-NEXT: %[[Y:.*]] = glow.dequantize %s : (tensor<1x2x!quant.uniform<i8:f32, 3.90625e-03:-128>>) -> tensor<1x2xf32>
// CHECK-NEXT: glow.save %[[Y]] as "y" : tensor<1x2xf32>

// Symmetric: offsets 0, the range widened to [-128 s, 127 s].
// SYM: glow.quantize %x : (tensor<1x4xf32>) -> tensor<1x4x!quant.uniform<i8:f32, 7.874016e-03:0>>
// SYM: tensor<4x2x!quant.uniform<i8:f32, 1.5748031e-02:0>>
// SYM: glow.relu {{.*}} -> tensor<1x2x!quant.uniform<i8:f32, 9.448819e-02:0>>

// Kept float: the SoftMax gets a dequantized input.
// KEEP:      %[[R:.*]] = glow.relu
// KEEP-NEXT: %[[F:.*]] = glow.dequantize %[[R]]
// KEEP-NEXT: glow.softmax %[[F]] {{.*}} : (tensor<1x2xf32>) -> tensor<1x2xf32>

// Bias correction (on by default): x's channel means [0.5, 1, -0.5, 0.25] (the profile's ChannelMeans) times
// the weights' rounding errors [0, 0.00588, 0.00294, -0.00588] (column 0; column 1 is exact)
// is a mean output error of 0.00294, taken off b[0]: 0.5 -> 0.49706 = 5387 x 9.227e-05.
// Without ChannelMeans (Glow's profile, the first run) or with bias_correction=false (the
// second) the bias stays 5419.
// BC: glow.constant "b" {value = dense<[5387, -5419]> : tensor<2xi32>}
