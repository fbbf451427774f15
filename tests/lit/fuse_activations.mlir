// RUN: glow-opt %s -p glow-fuse-activations | filecheck %s
// Relu and Clip merge into the Convolution, FullyConnected or Add feeding them, unless
// the producer's result has other users.

glow.function @net {
  %x = glow.placeholder "x" : tensor<2x3xf32>
  %w = glow.constant "w" {value = dense<1.0> : tensor<3x4xf32>} : tensor<3x4xf32>
  %b = glow.constant "b" {value = dense<0.5> : tensor<4xf32>} : tensor<4xf32>
  %fc = glow.fully_connected %x, %w, %b : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %r = glow.relu %fc : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %sum = glow.add %r, %r : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %c = glow.clip %sum {min = 0.0 : f32, max = 6.0 : f32} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  glow.save %c as "y" : tensor<2x4xf32>
  %kept = glow.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  glow.save %kept as "z" : tensor<2x3xf32>
}

// CHECK:      %[[FC:.*]] = glow.fully_connected %{{.*}} activation relu :
// CHECK-NEXT: %[[SUM:.*]] = glow.add %[[FC]], %[[FC]] activation clip {clip_min = 0.000000e+00 : f32, clip_max = 6.000000e+00 : f32}
// CHECK-NEXT: glow.save %[[SUM]] as "y"
// CHECK-NEXT: glow.relu %{{.*}} : (tensor<2x3xf32>)
