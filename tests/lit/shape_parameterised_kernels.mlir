// RUN: glow-opt %s --print-weights -p glowll-shape-parameterised-kernels | filecheck %s
// RUN: glow-opt %s --print-weights -p 'glowll-shape-parameterised-kernels{dsp=true}' | filecheck %s --check-prefix=DSP
// RUN: glow-opt %s -p glowll-shape-parameterised-kernels,glowll-quantization-records,glowll-allocate-memory,lower-glowll-to-llvm | filecheck %s --check-prefix=SHARED
// Three int8 1x1 convolutions of different shapes and an int8 FullyConnected, alike (every
// number but the clamp's high bound nonzero, per-tensor): each gets the shape-parameterised
// matrix product and a record of its numbers (KernelParameters, as glowll-quantization-records
// writes them) then its shape: pixels, input channels, output channels, input channel and
// pixel strides, output channel and pixel strides; the input zero point (3) goes into the
// bias: a's first channel 10 - 3 * ((1 + 1) + (2 + 1) + (3 + 1)) = -17. The 3x3 convolution is no matrix product;
// the 1x1 convolution d, whose weight zero point is 0, has no alike layer of another shape:
// both keep their per-layer kernels (and get plain records from glowll-quantization-records).
// The two 3x3 depthwise convolutions f and g, alike and of two shapes, get the
// shape-parameterised depthwise kernel: weights int16 less their zero point (-1), doubled
// (their narrow requantization's doubled sums), the input zero point in the bias (f's first
// channel 10 - 3 * 54 = -152), and a record of the numbers then channels, input and output
// planes, strides, top and left pads, and the padded plane (5 x 5).

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x3x2x2x!quant.uniform<i8:f32, 5.0e-02:3>>
  %ya = glowll.placeholder output "ya" : memref<1x4x2x2x!quant.uniform<i8:f32, 1.0e-01:-4>>
  %wa = glowll.weight "wa" {value = dense<[[[[1]], [[2]], [[3]]], [[[-1]], [[0]], [[4]]], [[[5]], [[-6]], [[7]]], [[[8]], [[9]], [[-10]]]]> : tensor<4x3x1x1xi8>} : memref<4x3x1x1x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %ba = glowll.weight "ba" {value = dense<[10, -20, 30, -40]> : tensor<4xi32>} : memref<4x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %ya, %x, %wa, %ba activation relu {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x4x2x2x!quant.uniform<i8:f32, 1.0e-01:-4>>, memref<1x3x2x2x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<4x3x1x1x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<4x!quant.uniform<i32:f32, 5.0e-04:0>>
  %xb = glowll.placeholder input "xb" : memref<1x4x3x1x!quant.uniform<i8:f32, 5.0e-02:3>>
  %yb = glowll.placeholder output "yb" : memref<1x2x3x1x!quant.uniform<i8:f32, 2.0e-01:6>>
  %wb = glowll.weight "wb" {value = dense<[[[[5]], [[-2]], [[3]], [[1]]], [[[-1]], [[7]], [[4]], [[-3]]]]> : tensor<2x4x1x1xi8>} : memref<2x4x1x1x!quant.uniform<i8:f32, 1.0e-02:2>>
  %bb = glowll.weight "bb" {value = dense<[-7, 30]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %yb, %xb, %wb, %bb activation relu {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x2x3x1x!quant.uniform<i8:f32, 2.0e-01:6>>, memref<1x4x3x1x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x4x1x1x!quant.uniform<i8:f32, 1.0e-02:2>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %v = glowll.placeholder input "v" : memref<1x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %z = glowll.placeholder output "z" : memref<1x2x!quant.uniform<i8:f32, 1.0e-01:-2>>
  %fw = glowll.weight "fw" {value = dense<[[1, -2, 3, -4], [5, 6, -7, 8]]> : tensor<2x4xi8>} : memref<2x4x!quant.uniform<i8:f32, 1.0e-02:1>>
  %fb = glowll.weight "fb" {value = dense<[100, -100]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.fully_connected %z, %v, %fw, %fb activation relu : memref<1x2x!quant.uniform<i8:f32, 1.0e-01:-2>>, memref<1x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x4x!quant.uniform<i8:f32, 1.0e-02:1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %yc = glowll.placeholder output "yc" : memref<1x1x2x2x!quant.uniform<i8:f32, 1.0e-01:-4>>
  %wc = glowll.weight "wc" {value = dense<[[[[1, 2, 3], [4, 5, 6], [7, 8, 9]], [[-1, 0, 4], [2, 2, 2], [0, 1, 0]], [[5, -6, 7], [1, 1, 1], [3, 0, 3]]]]> : tensor<1x3x3x3xi8>} : memref<1x3x3x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %bc = glowll.weight "bc" {value = dense<[10]> : tensor<1xi32>} : memref<1x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %yc, %x, %wc, %bc activation relu {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : memref<1x1x2x2x!quant.uniform<i8:f32, 1.0e-01:-4>>, memref<1x3x2x2x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<1x3x3x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<1x!quant.uniform<i32:f32, 5.0e-04:0>>
  %yd = glowll.placeholder output "yd" : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:-4>>
  %wd = glowll.weight "wd" {value = dense<[[[[1]], [[2]], [[3]]], [[[-1]], [[0]], [[4]]]]> : tensor<2x3x1x1xi8>} : memref<2x3x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>
  %bd = glowll.weight "bd" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %yd, %x, %wd, %bd activation relu {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:-4>>, memref<1x3x2x2x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x3x1x1x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %xe = glowll.placeholder input "xe" : memref<1x2x2x3x!quant.uniform<i8:f32, 5.0e-02:3>>
  %ye = glowll.placeholder output "ye" : memref<1x3x2x3x!quant.uniform<i8:f32, 2.0e-01:6>>
  %we = glowll.weight "we" {value = dense<[[[[5]], [[-2]]], [[[3]], [[1]]], [[[-1]], [[7]]]]> : tensor<3x2x1x1xi8>} : memref<3x2x1x1x!quant.uniform<i8:f32, 1.0e-02:2>>
  %be = glowll.weight "be" {value = dense<[4, -9, 12]> : tensor<3xi32>} : memref<3x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %ye, %xe, %we, %be activation relu {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x3x2x3x!quant.uniform<i8:f32, 2.0e-01:6>>, memref<1x2x2x3x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<3x2x1x1x!quant.uniform<i8:f32, 1.0e-02:2>>, memref<3x!quant.uniform<i32:f32, 5.0e-04:0>>
  %xf = glowll.placeholder input "xf" : memref<1x2x3x3x!quant.uniform<i8:f32, 5.0e-02:3>>
  %yf = glowll.placeholder output "yf" : memref<1x2x3x3x!quant.uniform<i8:f32, 1.0e-01:-4>>
  %wf = glowll.weight "wf" {value = dense<[[[[1, 2, 3], [4, 5, 6], [7, 8, 9]]], [[[-1, 0, 4], [2, 2, 2], [0, 1, 0]]]]> : tensor<2x1x3x3xi8>} : memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %bf = glowll.weight "bf" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %yf, %xf, %wf, %bf activation relu {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x3x3x!quant.uniform<i8:f32, 1.0e-01:-4>>, memref<1x2x3x3x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %xg = glowll.placeholder input "xg" : memref<1x2x4x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %yg = glowll.placeholder output "yg" : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:-4>>
  %wg = glowll.weight "wg" {value = dense<[[[[3, -2, 1], [0, 5, -6], [2, 2, -1]]], [[[4, 4, 0], [-3, 1, 1], [6, -5, 2]]]]> : tensor<2x1x3x3xi8>} : memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %bg = glowll.weight "bg" {value = dense<[-30, 40]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %yg, %xg, %wg, %bg activation relu {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x2x2x!quant.uniform<i8:f32, 1.0e-01:-4>>, memref<1x2x4x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x3x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
}

// CHECK:      %[[BA:.*]] = glowll.weight "ba_adjusted" {value = dense<[-17, -38, 3, -70]> : tensor<4xi32>}
// CHECK-NEXT: %[[A:.*]] = glowll.weight "wa_parameters" {value = dense<[3, -1, -4, 124, 0, 1374389504, -7, 0, 0, 0, 4, 3, 4, 4, 1, 4, 1]> : tensor<17xi32>} : memref<17xi32>
// CHECK-NEXT: glowll.convolution %ya, %x, %wa, %[[BA]] parameters %[[A]] activation relu {{.*}}folded_input_offset, microkernel = #glowll.microkernel<"shape-parameterised">{{.*}} parameters memref<17xi32>
// CHECK:      %[[B:.*]] = glowll.weight "wb_parameters" {value = dense<[3, 2, 6, 134, 0, 1374389504, -8, 0, 0, 0, 3, 4, 2, 3, 1, 3, 1]> : tensor<17xi32>} : memref<17xi32>
// CHECK-NEXT: glowll.convolution %yb, %xb, %wb, %{{.*}} parameters %[[B]] activation relu {{.*}}microkernel = #glowll.microkernel<"shape-parameterised">
// CHECK:      %[[F:.*]] = glowll.weight "fw_parameters" {value = dense<[3, 1, -2, 126, 0, 1374389504, -7, 0, 0, 0, 1, 4, 2, 1, 4, 1, 2]> : tensor<17xi32>} : memref<17xi32>
// CHECK-NEXT: glowll.fully_connected %z, %v, %fw, %{{.*}} parameters %[[F]] activation relu {folded_input_offset, microkernel = #glowll.microkernel<"shape-parameterised">}
// CHECK:      glowll.convolution %yc, %x, %wc, %bc activation relu {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} :
// CHECK:      glowll.convolution %yd, %x, %wd, %bd activation relu {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} :
// CHECK:      glowll.convolution %ye, %xe, %we, %{{.*}} parameters %{{.*}} activation relu {{.*}}microkernel = #glowll.microkernel<"shape-parameterised">
// CHECK:      %[[WF:.*]] = glowll.weight "wf_shape_parameterised" {value = dense<{{\[\[\[\[}}4, 6, 8], [10, 12, 14], [16, 18, 20]]], {{\[\[\[}}0, 2, 10], [6, 6, 6], [2, 4, 2]]]]> : tensor<2x1x3x3xi16>}
// CHECK-NEXT: %[[BF:.*]] = glowll.weight "bf_adjusted" {value = dense<[-152, -77]> : tensor<2xi32>}
// CHECK-NEXT: %[[F2:.*]] = glowll.weight "wf_shape_parameterised_parameters" {value = dense<[3, 0, -4, 124, 0, 1374389504, -7, 0, 0, 0, 2, 3, 3, 3, 3, 1, 1, 1, 1, 5, 5]> : tensor<21xi32>}
// CHECK-NEXT: glowll.convolution %yf, %xf, %[[WF]], %[[BF]] parameters %[[F2]] activation relu {{.*}}filter_shape = array<i64: 2, 1, 3, 3>, narrow_requantization, doubled_accumulators, folded_input_offset, microkernel = #glowll.microkernel<"shape-parameterised-depthwise">}
// CHECK:      %[[G:.*]] = glowll.weight "wg_shape_parameterised_parameters" {value = dense<[3, 0, -4, 124, 0, 1374389504, -7, 0, 0, 0, 2, 4, 4, 2, 2, 2, 2, 1, 1, 5, 5]> : tensor<21xi32>}
// CHECK-NEXT: glowll.convolution %yg, %xg, %{{.*}}, %{{.*}} parameters %[[G]] activation relu {{.*}}microkernel = #glowll.microkernel<"shape-parameterised-depthwise">}

// On a core with the DSP extension convolution a, of 3 input channels, keeps its per-layer
// kernel, and so does the FullyConnected (its own DSP kernel reads int8 weights as they are);
// b and e, two shapes still, take the DSP form: weights int16 pairs less their zero point (2),
// doubled, [blocks, input channel pairs, 2 output channels, 2]; e's 3 output channels in two
// blocks, the second (channels 1 and 2) overlapping the first. The depthwise layers take the
// depthwise kernel's DSP form: each window row's weights as the int16 words (tap 0, tap 2),
// (tap 1, 0) that a word of four input bytes makes with SXTB16.
// DSP:      glowll.convolution %ya, %x, %wa, %ba activation relu {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} :
// DSP:      %[[WB:.*]] = glowll.weight "wb_shape_parameterised" {value = dense<{{\[\[\[\[}}6, -8], [-6, 10]], {{\[\[}}2, -2], [4, -10]]]]> : tensor<1x2x2x2xi16>}
// DSP:      glowll.convolution %yb, %xb, %[[WB]], %{{.*}} parameters %{{.*}} activation relu {{.*}}filter_shape = array<i64: 2, 4, 1, 1>, narrow_requantization, doubled_accumulators, folded_input_offset, microkernel = #glowll.microkernel<"shape-parameterised-dsp">}
// DSP:      glowll.fully_connected %z, %v, %fw, %fb activation relu :
// DSP:      %[[WE:.*]] = glowll.weight "we_shape_parameterised" {value = dense<{{\[\[\[\[}}6, -8], [2, -2]]], {{\[\[\[}}2, -2], [-6, 10]]]]> : tensor<2x1x2x2xi16>}
// DSP:      glowll.convolution %ye, %xe, %[[WE]], %{{.*}} parameters %{{.*}} activation relu {{.*}}microkernel = #glowll.microkernel<"shape-parameterised-dsp">}
// DSP:      %[[WF:.*]] = glowll.weight "wf_shape_parameterised" {value = dense<{{\[\[\[\[}}4, 8], [6, 0]], {{\[\[}}10, 14], [12, 0]], {{\[\[}}16, 20], [18, 0]]], {{\[\[\[}}0, 10], [2, 0]], {{\[\[}}6, 6], [6, 0]], {{\[\[}}2, 2], [4, 0]]]]> : tensor<2x3x2x2xi16>}
// DSP:      glowll.convolution %yf, %xf, %[[WF]], {{.*}}filter_shape = array<i64: 2, 1, 3, 3>, {{.*}}microkernel = #glowll.microkernel<"shape-parameterised-depthwise-dsp">}
// DSP:      glowll.convolution %yg, %xg, {{.*}}microkernel = #glowll.microkernel<"shape-parameterised-depthwise-dsp">}

// The four matrix products call one kernel, which loads its shape from words 10 to 16 of
// the record (its fifth pointer); the 3x3 convolution and convolution d have their own; the
// two depthwise layers call one kernel, which loads its shape from words 10 to 20.
// SHARED:      llvm.call @net_0_convolution(
// SHARED:      llvm.call @net_0_convolution(
// SHARED:      llvm.call @net_0_convolution(
// SHARED:      llvm.call @net_1_convolution(
// SHARED:      llvm.call @net_2_convolution(
// SHARED:      llvm.call @net_0_convolution(
// SHARED:      llvm.call @net_3_convolution(
// SHARED:      llvm.call @net_3_convolution(
// SHARED:      llvm.func internal @net_0_convolution({{.*}}, %[[RECORD:[0-9]+]]: !llvm.ptr {{[{][^}]*[}]}}) attributes {no_inline} {
// SHARED:      llvm.getelementptr inbounds %[[RECORD]][10]
// SHARED:      llvm.getelementptr inbounds %[[RECORD]][16]
// SHARED:      llvm.func internal @net_1_convolution(
// SHARED:      llvm.func internal @net_2_convolution(
// SHARED:      llvm.func internal @net_3_convolution({{.*}}, %[[DEPTHWISE:[0-9]+]]: !llvm.ptr {{[{][^}]*[}]}}) attributes {no_inline} {
// SHARED:      llvm.getelementptr inbounds %[[DEPTHWISE]][10]
// SHARED:      llvm.getelementptr inbounds %[[DEPTHWISE]][20]
