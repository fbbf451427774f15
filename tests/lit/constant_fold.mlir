// RUN: glow-opt %s -p glow-constant-fold,dce | filecheck %s
// Ops whose operands are all constants are evaluated at compile time.

glow.function @net {
  %x = glow.placeholder "x" : tensor<2xf32>
  %a = glow.constant "a" {value = dense<[1.0, -2.0]> : tensor<2xf32>} : tensor<2xf32>
  %b = glow.splat {value = 3.0 : f32} : tensor<2xf32>
  %c = glow.mul %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %r = glow.relu %c : (tensor<2xf32>) -> tensor<2xf32>
  %y = glow.add %x, %r : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  glow.save %y as "y" : tensor<2xf32>
}

// CHECK:      %[[X:.*]] = glow.placeholder "x"
// CHECK-NEXT: %[[C:.*]] = glow.constant "a_folded{{(__[0-9]+)?}}" {value = dense<[3.000000e+00, 0.000000e+00]> : tensor<2xf32>}
// CHECK-NEXT: %[[Y:.*]] = glow.add %[[X]], %[[C]]
// CHECK-NEXT: glow.save %[[Y]] as "y"
