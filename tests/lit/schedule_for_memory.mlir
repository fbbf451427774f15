// RUN: glow-opt %s -p glow-schedule-for-memory | filecheck %s
// Two branches join in an Add. In the given order the big branch's 4 KiB intermediate
// and the small branch's result are alive together; scheduled, the branch needing more
// memory runs first and its intermediate is gone before the small branch starts.

glow.function @net {
  %x = glow.placeholder "x" : tensor<16xf32>
  %small = glow.relu %x : (tensor<16xf32>) -> tensor<16xf32>
  %w = glow.constant "w" elided : tensor<16x1024xf32>
  %b = glow.constant "b" elided : tensor<1024xf32>
  %x2 = glow.reshape %x : (tensor<16xf32>) -> tensor<1x16xf32>
  %wide = glow.fully_connected %x2, %w, %b : (tensor<1x16xf32>, tensor<16x1024xf32>, tensor<1024xf32>) -> tensor<1x1024xf32>
  %w2 = glow.constant "w2" elided : tensor<1024x16xf32>
  %b2 = glow.constant "b2" elided : tensor<16xf32>
  %narrow = glow.fully_connected %wide, %w2, %b2 : (tensor<1x1024xf32>, tensor<1024x16xf32>, tensor<16xf32>) -> tensor<1x16xf32>
  %flat = glow.reshape %narrow : (tensor<1x16xf32>) -> tensor<16xf32>
  %sum = glow.add %small, %flat : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  glow.save %sum as "y" : tensor<16xf32>
}

// CHECK:      glow.placeholder "x"
// CHECK:      glow.fully_connected
// CHECK:      glow.fully_connected
// CHECK:      glow.relu
// CHECK-NEXT: glow.add
