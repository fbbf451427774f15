// RUN: glow-opt %s -p lower-glow-to-glowll,glowll-fuse-lookup-tables | filecheck %s
// An int8 lookup table that alone reads a convolution's or FullyConnected's output is applied
// by that op's kernel as it stores: the op writes the table's dest through `lookup`, indexed
// by the levels of `lookup_input` (the type it requantizes to), and the buffer between them
// and the table's own pass are gone (glowll-fuse-lookup-tables).

!x = tensor<1x1x3x3x!quant.uniform<i8:f32, 1.0e-01:0>>
!w = tensor<2x1x1x1x!quant.uniform<i8:f32, 2.0e-02:0>>
!b = tensor<2x!quant.uniform<i32:f32, 2.0e-03:0>>
!c = tensor<1x2x3x3x!quant.uniform<i8:f32, 4.0e-02:0>>
!t = tensor<256x!quant.uniform<i8:f32, 3.0e-02:-115>>
!y = tensor<1x2x3x3x!quant.uniform<i8:f32, 3.0e-02:-115>>

glow.function @convolution {
  %x = glow.placeholder "x" : !x
  %w = glow.constant "w" {value = dense<1> : tensor<2x1x1x1xi8>} : !w
  %b = glow.constant "b" {value = dense<0> : tensor<2xi32>} : !b
  %c = glow.convolution %x, %w, %b activation relu {name = "c", strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (!x, !w, !b) -> !c
  %t = glow.constant "t" {value = dense<3> : tensor<256xi8>} : !t
  %f = glow.int_lookup_table %c, %t {name = "f"} : (!c, !t) -> !y
  glow.save %f as "y" : !y
}

// The table's weight moves ahead of the convolution; the relu still clamps the levels the
// table is indexed by.
// CHECK-LABEL: glowll.function @convolution
// CHECK:       %[[Y:.*]] = glowll.placeholder output "y"
// CHECK-NOT:   glowll.alloc
// CHECK:       %[[T:.*]] = glowll.weight "t"
// CHECK-NEXT:  glowll.convolution %[[Y]], %{{.*}}, %{{.*}}, %{{.*}} lookup %[[T]] activation relu {name = "c", {{.*}}lookup_input = !quant.uniform<i8:f32, 4.0e-02:0>} : memref<1x2x3x3x!quant.uniform<i8:f32, 3.0e-02:-115>>, {{.*}} lookup memref<256x!quant.uniform<i8:f32, 3.0e-02:-115>>
// CHECK-NOT:   glowll.int_lookup_table
// CHECK:       }

!in = tensor<1x4x!quant.uniform<i8:f32, 1.0e-01:0>>
!fw = tensor<4x2x!quant.uniform<i8:f32, 2.0e-02:0>>
!fb = tensor<2x!quant.uniform<i32:f32, 2.0e-03:0>>
!fc = tensor<1x2x!quant.uniform<i8:f32, 4.0e-02:0>>
!fy = tensor<1x2x!quant.uniform<i8:f32, 3.0e-02:-115>>

glow.function @fully_connected {
  %x = glow.placeholder "in" : !in
  %w = glow.constant "fw" {value = dense<1> : tensor<4x2xi8>} : !fw
  %b = glow.constant "fb" {value = dense<0> : tensor<2xi32>} : !fb
  %t = glow.constant "ft" {value = dense<3> : tensor<256xi8>} : !t
  %c = glow.fully_connected %x, %w, %b {name = "fc"} : (!in, !fw, !fb) -> !fc
  %f = glow.int_lookup_table %c, %t {name = "ff"} : (!fc, !t) -> !fy
  glow.save %f as "out" : !fy
}

// CHECK-LABEL: glowll.function @fully_connected
// CHECK:       glowll.fully_connected %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lookup %{{.*}} {name = "fc", lookup_input = !quant.uniform<i8:f32, 4.0e-02:0>}
// CHECK-NOT:   glowll.int_lookup_table
// CHECK:       }

// The convolution's output is read elsewhere too (saved): the table stays a pass of its own.
glow.function @read_twice {
  %x = glow.placeholder "x2" : !x
  %w = glow.constant "w2" {value = dense<1> : tensor<2x1x1x1xi8>} : !w
  %b = glow.constant "b2" {value = dense<0> : tensor<2xi32>} : !b
  %c = glow.convolution %x, %w, %b {name = "c2", strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (!x, !w, !b) -> !c
  %t = glow.constant "t2" {value = dense<3> : tensor<256xi8>} : !t
  %f = glow.int_lookup_table %c, %t {name = "f2"} : (!c, !t) -> !y
  glow.save %f as "y2" : !y
  glow.save %c as "c2" : !c
}

// CHECK-LABEL: glowll.function @read_twice
// CHECK-NOT:   lookup %
// CHECK:       glowll.int_lookup_table
// CHECK-NOT:   lookup %
// CHECK:       }
