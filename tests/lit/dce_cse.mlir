// RUN: glow-opt %s -p cse,dce | filecheck %s
// xDSL's own cse and dce work on the glow dialect: compute ops are pure, saves are not.

glow.function @net {
  %x = glow.placeholder "x" : tensor<4xf32>
  %a = glow.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = glow.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  %unused = glow.sigmoid %x : (tensor<4xf32>) -> tensor<4xf32>
  %y = glow.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  glow.save %y as "y" : tensor<4xf32>
}

// CHECK:      %[[X:.*]] = glow.placeholder "x"
// CHECK-NEXT: %[[R:.*]] = glow.relu %[[X]]
// CHECK-NEXT: glow.add %[[R]], %[[R]]
// CHECK-NOT:  glow.sigmoid
