// RUN: glow-opt %s -p glow-fold-batchnorm,dce | filecheck %s
// BatchNormalization after a Convolution disappears into its filter and bias;
// elsewhere it becomes a per-channel multiply-add.

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x1x2x2xf32>
  %w = glow.constant "w" {value = dense<[[[[2.0]]], [[[4.0]]]]> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %b = glow.constant "b" {value = dense<[1.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %conv = glow.convolution %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %scale = glow.constant "scale" {value = dense<[0.5, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %shift = glow.constant "shift" {value = dense<[1.0, 0.0]> : tensor<2xf32>} : tensor<2xf32>
  %mean = glow.constant "mean" {value = dense<[1.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %var = glow.constant "var" {value = dense<[1.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %bn = glow.batch_normalization %conv, %scale, %shift, %mean, %var {epsilon = 0.0 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  glow.save %bn as "y" : tensor<1x2x2x2xf32>
  %x2 = glow.placeholder "x2" : tensor<1x2x3xf32>
  %bn2 = glow.batch_normalization %x2, %scale, %shift, %mean, %var {epsilon = 0.0 : f32} : (tensor<1x2x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3xf32>
  glow.save %bn2 as "z" : tensor<1x2x3xf32>
}

// CHECK-LABEL: glow.function @net
// CHECK:       %[[W:.*]] = glow.constant "w_bn" {value = dense<{{\[\[\[\[}}1.000000e+00]]], {{\[\[\[}}8.000000e+00]]]]>
// CHECK-NEXT:  %[[B:.*]] = glow.constant "b_bn" {value = dense<[1.000000e+00, 0.000000e+00]>
// CHECK-NEXT:  %[[C:.*]] = glow.convolution %{{.*}}, %[[W]], %[[B]]
// CHECK-NOT:   glow.batch_normalization
// CHECK:       glow.save %[[C]] as "y"
// CHECK:       %[[F:.*]] = glow.constant "scale_bn_scale" {value = dense<{{\[\[}}5.000000e-01], [2.000000e+00]]> : tensor<2x1xf32>}
// CHECK-NEXT:  %[[S:.*]] = glow.constant "shift_bn_shift" {value = dense<{{\[\[}}5.000000e-01], [-2.000000e+00]]> : tensor<2x1xf32>}
// CHECK-NEXT:  %[[M:.*]] = glow.mul %{{.*}}, %[[F]]
// CHECK-NEXT:  glow.add %[[M]], %[[S]]
// CHECK-NOT:   glow.batch_normalization

// A Mul and an Add by per-channel constants after a convolution (BatchNormalization as some
// exporters write it) fold into its filter and bias the same way; a Mul by a constant that
// varies along a spatial axis does not.
glow.function @affine {
  %x = glow.placeholder "x" : tensor<1x1x2x2xf32>
  %w = glow.constant "w" {value = dense<[[[[2.0]]], [[[4.0]]]]> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %b = glow.constant "b" {value = dense<[1.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %conv = glow.convolution %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %s = glow.constant "s" {value = dense<[[[0.5]], [[2.0]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
  %m = glow.mul %conv, %s : (tensor<1x2x2x2xf32>, tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32>
  %a = glow.constant "a" {value = dense<[[[[1.0]], [[-3.0]]]]> : tensor<1x2x1x1xf32>} : tensor<1x2x1x1xf32>
  %y = glow.add %a, %m : (tensor<1x2x1x1xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  glow.save %y as "y" : tensor<1x2x2x2xf32>
  %conv2 = glow.convolution %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %r = glow.constant "r" {value = dense<[[1.0, 2.0]]> : tensor<1x2xf32>} : tensor<1x2xf32>
  %z = glow.mul %conv2, %r : (tensor<1x2x2x2xf32>, tensor<1x2xf32>) -> tensor<1x2x2x2xf32>
  glow.save %z as "z" : tensor<1x2x2x2xf32>
}

// CHECK-LABEL: glow.function @affine
// CHECK:       %[[W2:.*]] = glow.constant "w_affine" {value = dense<{{\[\[\[\[}}1.000000e+00]]], {{\[\[\[}}8.000000e+00]]]]>
// CHECK:       %[[B3:.*]] = glow.constant "b_affine__1" {value = dense<[1.500000e+00, -1.000000e+00]>
// CHECK-NEXT:  %[[C2:.*]] = glow.convolution %x, %[[W2]], %[[B3]]
// CHECK-NOT:   glow.add
// CHECK:       glow.save %[[C2]] as "y"
// CHECK:       %[[M:.*]] = glow.mul %{{.*}}, %r
// CHECK:       glow.save %[[M]] as "z"

// A HardSigmoid after a convolution (PP-OCR's exported squeeze-excitation gates) folds its
// alpha and beta into the filter and bias and leaves a Clip to [0, 1]; after anything else
// it stays.
glow.function @hard_sigmoid {
  %x = glow.placeholder "x" : tensor<1x1x2x2xf32>
  %w = glow.constant "w" {value = dense<[[[[2.0]]], [[[4.0]]]]> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %b = glow.constant "b" {value = dense<[1.0, -1.0]> : tensor<2xf32>} : tensor<2xf32>
  %conv = glow.convolution %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %g = glow.hard_sigmoid %conv {alpha = 0.25 : f32, beta = 0.5 : f32} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  glow.save %g as "y" : tensor<1x2x2x2xf32>
  %h = glow.hard_sigmoid %x {alpha = 0.25 : f32, beta = 0.5 : f32} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  glow.save %h as "z" : tensor<1x1x2x2xf32>
}

// CHECK-LABEL: glow.function @hard_sigmoid
// CHECK:       %[[W3:.*]] = glow.constant "w_hard_sigmoid" {value = dense<{{\[\[\[\[}}5.000000e-01]]], {{\[\[\[}}1.000000e+00]]]]>
// CHECK:       %[[B4:.*]] = glow.constant "b_hard_sigmoid" {value = dense<[7.500000e-01, 2.500000e-01]>
// CHECK-NEXT:  %[[C3:.*]] = glow.convolution %x, %[[W3]], %[[B4]]
// CHECK-NEXT:  %[[G:.*]] = glow.clip %[[C3]] {min = 0.000000e+00 : f32, max = 1.000000e+00 : f32}
// CHECK:       glow.save %[[G]] as "y"
// CHECK:       %[[H:.*]] = glow.hard_sigmoid %x
// CHECK:       glow.save %[[H]] as "z"
