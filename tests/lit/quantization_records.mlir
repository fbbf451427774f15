// RUN: glow-opt %s -p glowll-quantization-records | filecheck %s
// RUN: glow-opt %s -p glowll-quantization-records,glowll-allocate-memory,lower-glowll-to-llvm | filecheck %s --check-prefix=SHARED
// Each int8 convolution and FullyConnected gets an i32 record of its numbers (KernelParameters:
// input offset, weight offset, output offset, low bound above -128, high bound below 127,
// multiplier, shift, bias offset, bias multiplier, bias shift). Convolution a: 0.05 x 0.01 /
// 0.1 = 0.005 = 1374389504 * 2^-31 * 2^-7, relu from level -4 (124 above -128); convolution
// b, same shape: 0.05 x 0.01 / 0.2 = 0.0025 (shift -8), relu from level 6. The float
// FullyConnected keeps no record.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x1x2x5x!quant.uniform<i8:f32, 5.0e-02:3>>
  %ya = glowll.placeholder output "ya" : memref<1x2x2x3x!quant.uniform<i8:f32, 1.0e-01:-4>>
  %wa = glowll.weight "wa" {value = dense<[[[[1, 2, 3]]], [[[-1, 0, 4]]]]> : tensor<2x1x1x3xi8>} : memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %ba = glowll.weight "ba" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %ya, %x, %wa, %ba activation relu {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x2x2x3x!quant.uniform<i8:f32, 1.0e-01:-4>>, memref<1x1x2x5x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %yb = glowll.placeholder output "yb" : memref<1x2x2x3x!quant.uniform<i8:f32, 2.0e-01:6>>
  %wb = glowll.weight "wb" {value = dense<[[[[5, -2, 3]]], [[[-1, 7, 4]]]]> : tensor<2x1x1x3xi8>} : memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:2>>
  %bb = glowll.weight "bb" {value = dense<[-7, 30]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %yb, %x, %wb, %bb activation relu {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x2x2x3x!quant.uniform<i8:f32, 2.0e-01:6>>, memref<1x1x2x5x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x1x3x!quant.uniform<i8:f32, 1.0e-02:2>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %v = glowll.placeholder input "v" : memref<1x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %z = glowll.placeholder output "z" : memref<1x2x!quant.uniform<i8:f32, 1.0e-01:0>>
  %fw = glowll.weight "fw" {value = dense<[[1, -2, 3, -4], [5, 6, -7, 8]]> : tensor<2x4xi8>} : memref<2x4x!quant.uniform<i8:f32, 1.0e-02:0>>
  %fb = glowll.weight "fb" {value = dense<[100, -100]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.fully_connected %z, %v, %fw, %fb : memref<1x2x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x4x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %fx = glowll.placeholder input "fx" : memref<1x4xf32>
  %fy = glowll.placeholder output "fy" : memref<1x2xf32>
  %ffw = glowll.weight "ffw" {value = dense<1.0> : tensor<2x4xf32>} : memref<2x4xf32>
  %ffb = glowll.weight "ffb" {value = dense<0.0> : tensor<2xf32>} : memref<2xf32>
  glowll.fully_connected %fy, %fx, %ffw, %ffb : memref<1x2xf32>, memref<1x4xf32>, memref<2x4xf32>, memref<2xf32>
}

// CHECK:      %[[A:.*]] = glowll.weight "wa_parameters" {value = dense<[3, -1, -4, 124, 0, 1374389504, -7, 0, 0, 0]> : tensor<10xi32>} : memref<10xi32>
// CHECK-NEXT: glowll.convolution %ya, %x, %wa, %ba parameters %[[A]] activation relu {{.*}} parameters memref<10xi32>
// CHECK:      %[[B:.*]] = glowll.weight "wb_parameters" {value = dense<[3, 2, 6, 134, 0, 1374389504, -8, 0, 0, 0]> : tensor<10xi32>} : memref<10xi32>
// CHECK-NEXT: glowll.convolution %yb, %x, %wb, %bb parameters %[[B]] activation relu
// CHECK:      %[[F:.*]] = glowll.weight "fw_parameters" {value = dense<[3, 0, 0, 0, 0, 1374389504, -7, 0, 0, 0]> : tensor<10xi32>} : memref<10xi32>
// CHECK-NEXT: glowll.fully_connected %z, %v, %fw, %fb parameters %[[F]] :
// CHECK:      glowll.fully_connected %fy, %fx, %ffw, %ffb : memref<1x2xf32>

// Both convolutions call one kernel, which loads the numbers from its fifth pointer (the record).
// SHARED:      llvm.call @net_0_convolution(
// SHARED:      llvm.call @net_0_convolution(
// SHARED:      llvm.call @net_1_fully_connected(
// SHARED:      llvm.call @net_2_fully_connected(
// SHARED:      llvm.func internal @net_0_convolution({{.*}}, %[[RECORD:[0-9]+]]: !llvm.ptr {{[{][^}]*[}]}}) {
// SHARED:      llvm.load %[[RECORD]] {alignment = 4 : i64} : !llvm.ptr -> i32
// SHARED-NOT:  llvm.func internal @{{.*}}convolution
// SHARED:      llvm.func internal @net_1_fully_connected(
