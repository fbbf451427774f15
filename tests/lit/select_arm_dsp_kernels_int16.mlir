// RUN: glow-opt %s -p glowll-select-arm-dsp-kernels | filecheck %s
// RUN: glow-opt %s -p 'glowll-select-arm-dsp-kernels{helium=true}' | filecheck %s --check-prefix=HELIUM
// Int16 layers (-quantization-precision=Int16: int16 data of offset 0, int8 weights) take
// the DSP kernels as int8 ones do where their sums fit int32: the 1x3 convolution's
// filter is packed as window pairs, the FullyConnected is marked (its weights stay int8;
// the input offset, 0, is "folded": the bias keeps its levels); both sum little enough for
// narrow requantization, the packed filter doubled, the doubled biases in front (20 as
// (20, 0), -40 as (-40, -1): `biases_in_filter`). On a Helium core they take the DSP
// kernels too (Helium's take int8 only). The FullyConnected whose sums need int64
// (`wide_accumulators`: 32768 x 127 x 600 > 2^31) takes them with its int64 sums (`SMLALD`),
// its bias as it is (no fold, no narrow requantization).

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x1x2x4x!quant.uniform<i16:f32, 4.8828125e-04:0>>
  %y = glowll.placeholder output "y" : memref<1x2x2x2x!quant.uniform<i16:f32, 1.0e-03:0>>
  %w = glowll.weight "w" {value = dense<[[[[1, 2, 3]]], [[[-1, 0, 4]]]]> : tensor<2x1x1x3xi8>} : memref<2x1x1x3x!quant.uniform<i8:f32, 7.8125e-03:-1>>
  %b = glowll.weight "b" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 3.8146973e-06:0>>
  glowll.convolution %y, %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x2x2x2x!quant.uniform<i16:f32, 1.0e-03:0>>, memref<1x1x2x4x!quant.uniform<i16:f32, 4.8828125e-04:0>>, memref<2x1x1x3x!quant.uniform<i8:f32, 7.8125e-03:-1>>, memref<2x!quant.uniform<i32:f32, 3.8146973e-06:0>>
  %v = glowll.placeholder input "v" : memref<1x4x!quant.uniform<i16:f32, 4.8828125e-04:0>>
  %z = glowll.placeholder output "z" : memref<1x2x!quant.uniform<i16:f32, 1.0e-03:0>>
  %fw = glowll.weight "fw" {value = dense<[[1, -2, 3, -4], [5, 6, -7, 8]]> : tensor<2x4xi8>} : memref<2x4x!quant.uniform<i8:f32, 7.8125e-03:0>>
  %fb = glowll.weight "fb" {value = dense<[100, -100]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 3.8146973e-06:0>>
  glowll.fully_connected %z, %v, %fw, %fb : memref<1x2x!quant.uniform<i16:f32, 1.0e-03:0>>, memref<1x4x!quant.uniform<i16:f32, 4.8828125e-04:0>>, memref<2x4x!quant.uniform<i8:f32, 7.8125e-03:0>>, memref<2x!quant.uniform<i32:f32, 3.8146973e-06:0>>
  %u = glowll.placeholder input "u" : memref<1x600x!quant.uniform<i16:f32, 4.8828125e-04:0>>
  %t = glowll.placeholder output "t" : memref<1x2x!quant.uniform<i16:f32, 1.0e-03:0>>
  %uw = glowll.weight "uw" {value = dense<127> : tensor<2x600xi8>} : memref<2x600x!quant.uniform<i8:f32, 7.8125e-03:0>>
  %ub = glowll.weight "ub" {value = dense<[100, -100]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 3.8146973e-06:0>>
  glowll.fully_connected %t, %u, %uw, %ub {wide_accumulators} : memref<1x2x!quant.uniform<i16:f32, 1.0e-03:0>>, memref<1x600x!quant.uniform<i16:f32, 4.8828125e-04:0>>, memref<2x600x!quant.uniform<i8:f32, 7.8125e-03:0>>, memref<2x!quant.uniform<i32:f32, 3.8146973e-06:0>>
}

// CHECK:      %[[B:.*]] = glowll.weight "b_adjusted" {value = dense<[10, -20]> : tensor<2xi32>}
// CHECK-NEXT: %[[W:.*]] = glowll.weight "w_arm_dsp" {value = dense<{{\[\[\[\[\[}}20, 0], [-40, -1]]], {{\[\[\[}}4, 6], [0, 2]]], {{\[\[\[}}8, 0], [10, 0]]]]]> : tensor<1x3x1x2x2xi16>} : memref<1x3x1x2x2x!quant.uniform<i16:f32, 7.8125e-03:0>>
// CHECK-NEXT: glowll.convolution %y, %x, %[[W]], %[[B]] {{{.*}}microkernel = #glowll.microkernel<"arm-dsp", {biases_in_filter}>, filter_shape = array<i64: 2, 1, 1, 3>, narrow_requantization, doubled_accumulators, folded_input_offset}
// CHECK:      glowll.fully_connected %z, %v, %fw, %{{.*}} {microkernel = #glowll.microkernel<"arm-dsp">, narrow_requantization, folded_input_offset}
// CHECK:      glowll.fully_connected %t, %u, %uw, %ub {wide_accumulators, microkernel = #glowll.microkernel<"arm-dsp">} :

// HELIUM:     glowll.convolution %y, %x, %{{.*}}, %{{.*}} {{{.*}}microkernel = #glowll.microkernel<"arm-dsp", {biases_in_filter}>, filter_shape = array<i64: 2, 1, 1, 3>
// HELIUM:     glowll.fully_connected %z, %v, %fw, %{{.*}} {microkernel = #glowll.microkernel<"arm-dsp">, narrow_requantization, folded_input_offset}
// HELIUM:     glowll.fully_connected %t, %u, %uw, %ub {wide_accumulators, microkernel = #glowll.microkernel<"arm-dsp">} :
