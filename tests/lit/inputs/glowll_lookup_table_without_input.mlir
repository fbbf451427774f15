builtin.module {
  glowll.function @net {
    %0 = glowll.placeholder input "x" : memref<1x1x3x3x!quant.uniform<i8:f32, 1.0e-01:0>>
    %1 = glowll.placeholder output "y" : memref<1x2x3x3x!quant.uniform<i8:f32, 3.0e-02:-115>>
    %2 = glowll.weight "w" {value = dense<1> : tensor<2x1x1x1xi8>} : memref<2x1x1x1x!quant.uniform<i8:f32, 2.0e-02:0>>
    %3 = glowll.weight "b" {value = dense<0> : tensor<2xi32>} : memref<2x!quant.uniform<i32:f32, 2.0e-03:0>>
    %4 = glowll.weight "t" elided : memref<256x!quant.uniform<i8:f32, 3.0e-02:-115>>
    glowll.convolution %1, %0, %2, %3 lookup %4 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : memref<1x2x3x3x!quant.uniform<i8:f32, 3.0e-02:-115>>, memref<1x1x3x3x!quant.uniform<i8:f32, 1.0e-01:0>>, memref<2x1x1x1x!quant.uniform<i8:f32, 2.0e-02:0>>, memref<2x!quant.uniform<i32:f32, 2.0e-03:0>> lookup memref<256x!quant.uniform<i8:f32, 3.0e-02:-115>>
  }
}

