// RUN: glow-opt %s -p glowll-fold-pool-widening | filecheck %s
// An int8 average of a much finer profiled range (a squeeze-excitation pool) is taken on the
// levels widened exactly to int16 (each level x 2^8: scale / 256, offset x 256); the widening
// alone feeding the pool folds into it: the pool reads the int8 levels (`pool_widening = 8`),
// the widening and its buffer are gone. A widening something else reads too, and one to a
// type that is not the exact finer levels (scale / 256, offset x 255), stay.

builtin.module {
  glowll.function @net {
    %x = glowll.placeholder input "x" : memref<1x4x3x5x!quant.uniform<i8:f32, 4.0e-02:-128>>
    %pooled = glowll.placeholder output "pooled" : memref<1x4x1x1x!quant.uniform<i16:f32, 1.5625e-04:-32768>>
    %widened = glowll.alloc : memref<1x4x3x5x!quant.uniform<i16:f32, 1.5625e-04:-32768>>
    glowll.elementwise %widened, %x {kind = "rescale_quantized"} : memref<1x4x3x5x!quant.uniform<i16:f32, 1.5625e-04:-32768>>, memref<1x4x3x5x!quant.uniform<i8:f32, 4.0e-02:-128>>
    glowll.avg_pool %pooled, %widened {kernel = array<i64: 3, 5>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : memref<1x4x1x1x!quant.uniform<i16:f32, 1.5625e-04:-32768>>, memref<1x4x3x5x!quant.uniform<i16:f32, 1.5625e-04:-32768>>
    %kept = glowll.placeholder output "kept" : memref<1x4x3x5x!quant.uniform<i16:f32, 1.5625e-04:-32768>>
    %pooled2 = glowll.placeholder output "pooled2" : memref<1x4x1x1x!quant.uniform<i16:f32, 1.5625e-04:-32768>>
    glowll.elementwise %kept, %x {kind = "rescale_quantized"} : memref<1x4x3x5x!quant.uniform<i16:f32, 1.5625e-04:-32768>>, memref<1x4x3x5x!quant.uniform<i8:f32, 4.0e-02:-128>>
    glowll.avg_pool %pooled2, %kept {kernel = array<i64: 3, 5>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : memref<1x4x1x1x!quant.uniform<i16:f32, 1.5625e-04:-32768>>, memref<1x4x3x5x!quant.uniform<i16:f32, 1.5625e-04:-32768>>
    %pooled3 = glowll.placeholder output "pooled3" : memref<1x4x1x1x!quant.uniform<i16:f32, 1.5625e-04:-32640>>
    %inexact = glowll.alloc : memref<1x4x3x5x!quant.uniform<i16:f32, 1.5625e-04:-32640>>
    glowll.elementwise %inexact, %x {kind = "rescale_quantized"} : memref<1x4x3x5x!quant.uniform<i16:f32, 1.5625e-04:-32640>>, memref<1x4x3x5x!quant.uniform<i8:f32, 4.0e-02:-128>>
    glowll.avg_pool %pooled3, %inexact {kernel = array<i64: 3, 5>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : memref<1x4x1x1x!quant.uniform<i16:f32, 1.5625e-04:-32640>>, memref<1x4x3x5x!quant.uniform<i16:f32, 1.5625e-04:-32640>>
  }
}

// CHECK:       %x = glowll.placeholder input "x"
// CHECK-NOT:   %widened
// CHECK:       glowll.avg_pool %pooled, %x {kernel = array<i64: 3, 5>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, pool_widening = 8 : i64} : memref<1x4x1x1x!quant.uniform<i16:f32, 1.5625e-04:-32768>>, memref<1x4x3x5x!quant.uniform<i8:f32, 4.0e-02:-128>>
// CHECK:       glowll.elementwise %kept, %x {kind = "rescale_quantized"}
// CHECK:       glowll.avg_pool %pooled2, %kept {kernel = array<i64: 3, 5>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} :
// CHECK:       %inexact = glowll.alloc
// CHECK:       glowll.elementwise %inexact, %x {kind = "rescale_quantized"}
// CHECK:       glowll.avg_pool %pooled3, %inexact {kernel
