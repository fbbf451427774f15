// RUN: glow-opt --print-weights %s -p 'glow-fold-lookup-tables{narrow-sources=true}' | filecheck %s
// RUN: glow-opt --print-weights %s -p glow-fold-lookup-tables | filecheck %s --check-prefix=KEPT
// Elementwise ops computing a function of one int8 tensor become one 256-entry table,
// sampled from their float semantics at the tensor's 256 levels and rounded once to the
// last op's type (glow-fold-lookup-tables).

!x = tensor<1x8x!quant.uniform<i8:f32, 5.000000e-02:0>>
!three = tensor<!quant.uniform<i8:f32, 1.1764706e-02:-128>>
!sixth = tensor<!quant.uniform<i8:f32, 6.535948e-04:-128>>
!sum = tensor<1x8x!quant.uniform<i8:f32, 3.764706e-02:-43>>
!gate = tensor<1x8x!quant.uniform<i8:f32, 2.352941e-02:-128>>
!product = tensor<1x8x!quant.uniform<i8:f32, 1.8e-01:-115>>
!y = tensor<1x8x!quant.uniform<i8:f32, 3.000000e-02:-115>>
!s = tensor<1x8x!quant.uniform<i8:f32, 5.000000e-02:-1>>

// HardSwish as an exporter spells it, x * clip(x + 3, 0, 6) / 6 (the division by 6 already
// a product by its int8 reciprocal): with x's scale 0.05 the entries run from x = -6.4
// (0 -> level -115, 0x8D) to x = 6.35 (level 97, 0x61), through the minimum -0.375 at
// x = -1.5 (level -128, 0x80). The constants go with the ops.
glow.function @hard_swish {
  %x = glow.placeholder "x" : !x
  %three = glow.constant "three" {value = dense<127> : tensor<i8>} : !three
  %a = glow.add %x, %three {name = "a"} : (!x, !three) -> !sum
  %b = glow.clip %a {name = "b", min = 0.0 : f32, max = 6.0 : f32} : (!sum) -> !gate
  %m = glow.mul %x, %b {name = "m"} : (!x, !gate) -> !product
  %sixth = glow.constant "sixth" {value = dense<127> : tensor<i8>} : !sixth
  %f = glow.mul %m, %sixth {name = "f"} : (!product, !sixth) -> !y
  glow.save %f as "y" : !y
}

// CHECK-LABEL: glow.function @hard_swish
// CHECK-NEXT:  %x = glow.placeholder "x"
// CHECK-NEXT:  %[[T:.*]] = glow.constant "f_table" {value = dense<"0x8D8D8D{{[0-9A-F]*}}8181808181{{[0-9A-F]*}}5D5F61"> : tensor<256xi8>} : tensor<256x!quant.uniform<i8:f32, 3.0e-02:-115>>
// CHECK-NEXT:  %f = glow.int_lookup_table %x, %[[T]] {name = "f"} : (tensor<1x8x!quant.uniform<i8:f32, 5.0e-02:0>>, tensor<256x!quant.uniform<i8:f32, 3.0e-02:-115>>) -> tensor<1x8x!quant.uniform<i8:f32, 3.0e-02:-115>>
// CHECK-NEXT:  glow.save %f as "y"
// CHECK-NEXT:  }

// The same chain whose gate clip(x + 3, 0, 6) is also read elsewhere (an output here):
// the gate gets a table of its own from x (0 up to x = -3, level -128; 6 from x = 3 on,
// level 127), the HardSwish the full one; nothing of the chain is left.
glow.function @shared_gate {
  %x = glow.placeholder "x" : !x
  %three = glow.constant "three" {value = dense<127> : tensor<i8>} : !three
  %a = glow.add %x, %three {name = "a"} : (!x, !three) -> !sum
  %b = glow.clip %a {name = "b", min = 0.0 : f32, max = 6.0 : f32} : (!sum) -> !gate
  %m = glow.mul %x, %b {name = "m"} : (!x, !gate) -> !product
  %sixth = glow.constant "sixth" {value = dense<127> : tensor<i8>} : !sixth
  %f = glow.mul %m, %sixth {name = "f"} : (!product, !sixth) -> !y
  glow.save %f as "y" : !y
  glow.save %b as "gate" : !gate
}

// CHECK-LABEL: glow.function @shared_gate
// CHECK-NEXT:  %x = glow.placeholder "x"
// CHECK-NEXT:  %[[G:.*]] = glow.constant "b_table" {value = dense<"0x808080{{[0-9A-F]*}}7F7F7F"> : tensor<256xi8>}
// CHECK-NEXT:  %b = glow.int_lookup_table %x, %[[G]] {name = "b"}
// CHECK-NEXT:  %[[T:.*]] = glow.constant "f_table__1" {value = dense<"0x8D8D8D{{[0-9A-F]*}}5D5F61">
// CHECK-NEXT:  %f = glow.int_lookup_table %x, %[[T]] {name = "f"}
// CHECK-NEXT:  glow.save %f as "y"
// CHECK-NEXT:  glow.save %b as "gate"
// CHECK-NEXT:  }

// SiLU, x * sigmoid(x): the sigmoid is already a table that records its float op
// (`table_of`, as glow-quantize writes it), so the product of x and it is a function of x:
// one table of x * sigmoid(x), from silu(-6.4) = -0.011 (level -115, 0x8D) to
// silu(6.35) = 6.339 (level 96, 0x60) through the minimum -0.278 (level -124, 0x84). The
// sigmoid's own table is no longer read.
glow.function @silu {
  %x = glow.placeholder "x" : !x
  %t = glow.constant "s_table" {value = dense<0> : tensor<256xi8>} : tensor<256x!quant.uniform<i8:f32, 3.921569e-03:-128>>
  %s = glow.int_lookup_table %x, %t {name = "s", table_of = {op = "glow.sigmoid"}} : (!x, tensor<256x!quant.uniform<i8:f32, 3.921569e-03:-128>>) -> tensor<1x8x!quant.uniform<i8:f32, 3.921569e-03:-128>>
  %f = glow.mul %x, %s {name = "f"} : (!x, tensor<1x8x!quant.uniform<i8:f32, 3.921569e-03:-128>>) -> !y
  glow.save %f as "y" : !y
}

// CHECK-LABEL: glow.function @silu
// CHECK-NEXT:  %x = glow.placeholder "x"
// CHECK-NEXT:  %[[T:.*]] = glow.constant "f_table__2" {value = dense<"0x8D8D8D{{[0-9A-F]*}}848484{{[0-9A-F]*}}5B5D5F60"> : tensor<256xi8>}
// CHECK-NEXT:  %f = glow.int_lookup_table %x, %[[T]] {name = "f"}
// CHECK-NEXT:  glow.save %f as "y"
// CHECK-NEXT:  }

// A float op between conversions (a product kept float, -keep-original-precision-for-nodes=Mul)
// is part of the function too: x * x from 40.96 at x = -6.4 (saturated: level 127, 0x7F)
// down to 0 (level -128, 0x80) and up to 40.32 at x = 6.35 (level 124, 0x7C).
glow.function @float_island {
  %x = glow.placeholder "x" : !x
  %d = glow.dequantize %x : (!x) -> tensor<1x8xf32>
  %p = glow.mul %d, %d {name = "p"} : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
  %q = glow.quantize %p : (tensor<1x8xf32>) -> tensor<1x8x!quant.uniform<i8:f32, 1.6e-01:-128>>
  glow.save %q as "y" : tensor<1x8x!quant.uniform<i8:f32, 1.6e-01:-128>>
}

// CHECK-LABEL: glow.function @float_island
// CHECK-NEXT:  %x = glow.placeholder "x"
// CHECK-NEXT:  %[[T:.*]] = glow.constant "quantize_table" {value = dense<"0x7F7C78{{[0-9A-F]*}}8080{{[0-9A-F]*}}74787C"> : tensor<256xi8>}
// CHECK-NEXT:  %[[Q:.*]] = glow.int_lookup_table %x, %[[T]] :
// CHECK-NEXT:  glow.save %[[Q]] as "y"
// CHECK-NEXT:  }

// A source that only the tables read and whose producer requantizes anyway (here an Add)
// (of two tensors) takes a finer type: its range [-6.35, 6.4] cut to where HardSwish still
// changes, from -3 on (scale 0.0369, offset -47: level -128 is -2.99). The table is sampled
// at the new levels: from -2.99 (-0.006: level -115, 0x8D) up to 6.42 (level 99, 0x63).
glow.function @narrowed_source {
  %x = glow.placeholder "x" : !x
  %z = glow.placeholder "z" : !x
  %s = glow.add %x, %z {name = "s"} : (!x, !x) -> !s
  %three = glow.constant "three" {value = dense<127> : tensor<i8>} : !three
  %a = glow.add %s, %three {name = "a"} : (!s, !three) -> !sum
  %b = glow.clip %a {name = "b", min = 0.0 : f32, max = 6.0 : f32} : (!sum) -> !gate
  %m = glow.mul %s, %b {name = "m"} : (!s, !gate) -> !product
  %sixth = glow.constant "sixth" {value = dense<127> : tensor<i8>} : !sixth
  %f = glow.mul %m, %sixth {name = "f"} : (!product, !sixth) -> !y
  glow.save %f as "y" : !y
}

// Without narrow-sources (a model's own quantization), the Add keeps its type.
// KEPT-LABEL: glow.function @narrowed_source
// KEPT:       %s = glow.add %x, %z {name = "s"} : {{.*}} -> tensor<1x8x!quant.uniform<i8:f32, 5.0e-02:-1>>
// KEPT-NEXT:  %{{.*}} = glow.constant "f_table{{.*}}"
// KEPT-NEXT:  %f = glow.int_lookup_table %s

// CHECK-LABEL: glow.function @narrowed_source
// CHECK:       %s = glow.add %x, %z {name = "s"} : {{.*}} -> tensor<1x8x!quant.uniform<i8:f32, 3.687424e-02:-47>>
// CHECK-NEXT:  %[[T:.*]] = glow.constant "f_table__3" {value = dense<"0x8D8C8C{{[0-9A-F]*}}606263"> : tensor<256xi8>}
// CHECK-NEXT:  %f = glow.int_lookup_table %s, %[[T]] {name = "f"}
// CHECK-NEXT:  glow.save %f as "y"
// CHECK-NEXT:  }

// Left as they are: a product of two tensors (two sources), a per-channel constant (the
// function differs by channel), one op alone (a pass over memory already), a float result.
glow.function @not_folded {
  %x = glow.placeholder "x" : !x
  %z = glow.placeholder "z" : !x
  %xz = glow.mul %x, %z {name = "xz"} : (!x, !x) -> !y
  %c = glow.constant "c" {value = dense<[[1, 2, 3, 4, 5, 6, 7, 8]]> : tensor<1x8xi8>} : tensor<1x8x!quant.uniform<i8:f32, 1.0e-01:0>>
  %xc = glow.add %x, %c {name = "xc"} : (!x, tensor<1x8x!quant.uniform<i8:f32, 1.0e-01:0>>) -> !sum
  %r = glow.relu %xc {name = "r"} : (!sum) -> !sum
  %rz = glow.add %r, %z {name = "rz"} : (!sum, !x) -> !sum
  %d = glow.dequantize %x : (!x) -> tensor<1x8xf32>
  %e = glow.exp %d {name = "e"} : (tensor<1x8xf32>) -> tensor<1x8xf32>
  glow.save %xz as "xz" : !y
  glow.save %rz as "rz" : !sum
  glow.save %e as "e" : tensor<1x8xf32>
}

// CHECK-LABEL: glow.function @not_folded
// CHECK-NOT:   glow.int_lookup_table
// CHECK:       glow.mul %x, %z
// CHECK-NEXT:  glow.constant "c"
// CHECK-NEXT:  glow.add %x, %c
// CHECK-NEXT:  glow.relu %xc
// CHECK-NEXT:  glow.add %r, %z
// CHECK-NEXT:  glow.dequantize %x
// CHECK-NEXT:  glow.exp
