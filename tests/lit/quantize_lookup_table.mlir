// RUN: glow-opt --print-weights %s -p 'glow-quantize{profile="%S/inputs/lookup_table_profile.yaml"},glow-optimize-quantization' | filecheck %s
// A unary op with no integer kernel of its own (here a sigmoid) becomes a 256-entry table
// of int8 results computed at compile time (Glow's IntLookupTable): entry k holds
// quantize(sigmoid(dequantize(k - 128))) with the input's and the result's profiled
// parameters (x in [-4, 4]: scale 8/255; sigmoid in [0, 1]: scale 1/255, offset -128), so
// it runs from -123 (0x85: sigmoid(-4) = 0.018) to 122 (0x7A: sigmoid(3.98) = 0.982). The
// table records the float op it samples (`table_of`), for glow-fold-lookup-tables.

glow.function @net {
  %x = glow.placeholder "x" : tensor<1x8xf32>
  %s = glow.sigmoid %x {name = "sig"} : (tensor<1x8xf32>) -> tensor<1x8xf32>
  glow.save %s as "y" : tensor<1x8xf32>
}

// CHECK:      %x = glow.placeholder "x" : tensor<1x8xf32>
// CHECK-NEXT: %[[Q:.*]] = glow.quantize %x : (tensor<1x8xf32>) -> tensor<1x8x!quant.uniform<i8:f32, 3.137255e-02:0>>
// CHECK-NEXT: %[[T:.*]] = glow.constant "sig_table" {value = dense<"0x85858585{{[0-9A-F]*}}7A7A7A7A"> : tensor<256xi8>} : tensor<256x!quant.uniform<i8:f32, 3.921569e-03:-128>>
// CHECK-NEXT: %s = glow.int_lookup_table %[[Q]], %[[T]] {table_of = {op = "glow.sigmoid"}, name = "sig"} : {{.*}} -> tensor<1x8x!quant.uniform<i8:f32, 3.921569e-03:-128>>
// CHECK-NEXT: %[[Y:.*]] = glow.dequantize %s
// CHECK-NEXT: glow.save %[[Y]] as "y"
