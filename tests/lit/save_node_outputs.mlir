// RUN: glow-opt %s -p glow-save-node-outputs | filecheck %s
// RUN: glow-opt %s -p 'glow-save-node-outputs{only=fc}' | filecheck %s --check-prefix=ONLY
// Every node's result also becomes an output (glow-run -instrument-debug), named after the
// node and its place in the schedule; placeholders and constants are not nodes.

glow.function @net {
  %x = glow.placeholder "x" : tensor<2x3xf32>
  %w = glow.constant "w" {value = dense<1.0> : tensor<3x4xf32>} : tensor<3x4xf32>
  %b = glow.constant "b" {value = dense<0.5> : tensor<4xf32>} : tensor<4xf32>
  %fc = glow.fully_connected %x, %w, %b {name = "fc"} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %r = glow.relu %fc {name = "relu/1"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  glow.save %r as "y" : tensor<2x4xf32>
}

// CHECK:      %[[FC:.*]] = glow.fully_connected
// CHECK:      %[[R:.*]] = glow.relu %[[FC]]
// CHECK-NEXT: glow.save %[[R]] as "y"
// CHECK-NEXT: glow.save %[[FC]] as "debug_3_FullyConnected_fc"
// CHECK-NEXT: glow.save %[[R]] as "debug_4_Relu_relu_1"
// CHECK-NEXT: }

// ONLY:     glow.save %{{.*}} as "y"
// ONLY-NEXT: glow.save %{{.*}} as "debug_3_FullyConnected_fc"
// ONLY-NEXT: }
