// RUN: glow-opt %s -p 'glowll-quantization-records{partnered=true}' | filecheck %s
// Partnered (an x86-64 VNNI host at -O3): only layers with an equal-shaped partner get a record.
// Depthwise convolutions a and b (one shape, their own scales and zero points) get one each;
// the ungrouped d and e, one shape but input zero points 3 and -4 (which the VNNI kernel
// compiles in), get none, nor does the FullyConnected, a shape of its own.

glowll.function @net {
  %x = glowll.placeholder input "x" : memref<1x2x3x3x!quant.uniform<i8:f32, 5.0e-02:3>>
  %ya = glowll.placeholder output "ya" : memref<1x2x3x3x!quant.uniform<i8:f32, 1.0e-01:-4>>
  %wa = glowll.weight "wa" {value = dense<[[[[1, 2], [3, 4]]], [[[-1, 0], [4, 5]]]]> : tensor<2x1x2x2xi8>} : memref<2x1x2x2x!quant.uniform<i8:f32, 1.0e-02:-1>>
  %ba = glowll.weight "ba" {value = dense<[10, -20]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %ya, %x, %wa, %ba {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x3x3x!quant.uniform<i8:f32, 1.0e-01:-4>>, memref<1x2x3x3x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x1x2x2x!quant.uniform<i8:f32, 1.0e-02:-1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %yb = glowll.placeholder output "yb" : memref<1x2x3x3x!quant.uniform<i8:f32, 2.0e-01:6>>
  %wb = glowll.weight "wb" {value = dense<[[[[5, -2], [3, 1]]], [[[-1, 7], [4, 2]]]]> : tensor<2x1x2x2xi8>} : memref<2x1x2x2x!quant.uniform<i8:f32, 2.0e-02:2>>
  %bb = glowll.weight "bb" {value = dense<[-7, 30]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 1.0e-03:0>>
  glowll.convolution %yb, %ya, %wb, %bb {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : memref<1x2x3x3x!quant.uniform<i8:f32, 2.0e-01:6>>, memref<1x2x3x3x!quant.uniform<i8:f32, 1.0e-01:-4>>, memref<2x1x2x2x!quant.uniform<i8:f32, 2.0e-02:2>>, memref<2x!quant.uniform<i32:f32, 1.0e-03:0>>
  %yd = glowll.placeholder output "yd" : memref<1x2x3x3x!quant.uniform<i8:f32, 1.0e-01:0>>
  %wd = glowll.weight "wd" {value = dense<[[[[1]], [[2]]], [[[3]], [[4]]]]> : tensor<2x2x1x1xi8>} : memref<2x2x1x1x!quant.uniform<i8:f32, 1.0e-02:1>>
  %bd = glowll.weight "bd" {value = dense<[1, 2]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %yd, %x, %wd, %bd {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x2x3x3x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x3x3x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x2x1x1x!quant.uniform<i8:f32, 1.0e-02:1>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %ye = glowll.placeholder output "ye" : memref<1x2x3x3x!quant.uniform<i8:f32, 1.0e-01:0>>
  %we = glowll.weight "we" {value = dense<[[[[4]], [[3]]], [[[2]], [[1]]]]> : tensor<2x2x1x1xi8>} : memref<2x2x1x1x!quant.uniform<i8:f32, 1.0e-02:2>>
  %be = glowll.weight "be" {value = dense<[3, 4]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.convolution %ye, %ya, %we, %be {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x2x3x3x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x2x3x3x!quant.uniform<i8:f32, 1.0e-01:-4>>, memref<2x2x1x1x!quant.uniform<i8:f32, 1.0e-02:2>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  %v = glowll.placeholder input "v" : memref<1x4x!quant.uniform<i8:f32, 5.0e-02:3>>
  %z = glowll.placeholder output "z" : memref<1x2x!quant.uniform<i8:f32, 1.0e-01:0>>
  %fw = glowll.weight "fw" {value = dense<[[1, -2, 3, -4], [5, 6, -7, 8]]> : tensor<2x4xi8>} : memref<2x4x!quant.uniform<i8:f32, 1.0e-02:0>>
  %fb = glowll.weight "fb" {value = dense<[100, -100]> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
  glowll.fully_connected %z, %v, %fw, %fb : memref<1x2x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<1x4x!quant.uniform<i8:f32, 5.0e-02:3>>, memref<2x4x!quant.uniform<i8:f32, 1.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 5.0e-04:0>>
}

// CHECK:      %[[A:.*]] = glowll.weight "wa_parameters" {value = dense<[3, -1, -4, 0, 0, {{.*}}]> : tensor<10xi32>} : memref<10xi32>
// CHECK-NEXT: glowll.convolution %ya, %x, %wa, %ba parameters %[[A]] {{.*}}group = 2
// CHECK:      %[[B:.*]] = glowll.weight "wb_parameters" {value = dense<[-4, 2, 6, 0, 0, {{.*}}]> : tensor<10xi32>} : memref<10xi32>
// CHECK-NEXT: glowll.convolution %yb, %ya, %wb, %bb parameters %[[B]] {{.*}}group = 2
// CHECK-NOT:  _parameters
// CHECK:      glowll.convolution %yd, %x, %wd, %bd {
// CHECK:      glowll.convolution %ye, %ya, %we, %be {
// CHECK:      glowll.fully_connected %z, %v, %fw, %fb :
