// RUN: glow-opt %s -p lower-glow-to-glowll,glowll-allocate-memory | filecheck %s
// RUN: glow-opt %s | glow-opt | filecheck %s --check-prefix=GLOW
// State kept between calls (a streaming model's): each glow.state becomes a state
// placeholder after the inputs and outputs, behind the ready word (i32). The function starts
// by initialising every state unless the ready word says it is (a weight for a varied initial
// value, a fill for a uniform one), then marks it ready (STATE_READY = 1). The stored values are copied into
// their states after every other instruction: the concatenation reads the old state first.

glow.function @stream {
  %x = glow.placeholder "x" : tensor<1x2xf32>
  %s = glow.state "window" {value = dense<[[1.0, 2.0, 3.0, 4.0]]> : tensor<1x4xf32>} : tensor<1x4xf32>
  %t = glow.state "total" {value = dense<0.0> : tensor<1x2xf32>} : tensor<1x2xf32>
  %c = glow.concat %s, %x {axis = 1 : i64} : (tensor<1x4xf32>, tensor<1x2xf32>) -> tensor<1x6xf32>
  %n = glow.slice %c {starts = array<i64: 0, 2>, steps = array<i64: 1, 1>} : (tensor<1x6xf32>) -> tensor<1x4xf32>
  %sum = glow.add %t, %x : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
  glow.state_store %n as "window" : tensor<1x4xf32>
  glow.state_store %sum as "total" : tensor<1x2xf32>
  glow.save %c as "y" : tensor<1x6xf32>
}

// GLOW:      %{{.*}} = glow.state "window" {value = dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]]> : tensor<1x4xf32>} : tensor<1x4xf32>
// GLOW:      glow.state_store %{{.*}} as "window" : tensor<1x4xf32>

// CHECK:      glowll.function @stream attributes {constant_size = 64 : i64, mutable_size = 320 : i64
// CHECK:        %[[X:.*]] = glowll.placeholder input "x" {offset = 0 : i64} : memref<1x2xf32>
// CHECK-NEXT:   %[[Y:.*]] = glowll.placeholder output "y" {offset = 64 : i64} : memref<1x6xf32>
// CHECK-NEXT:   %[[READY:.*]] = glowll.placeholder state "states_ready" {offset = 128 : i64} : memref<1xi32>
// CHECK-NEXT:   %[[S:.*]] = glowll.placeholder state "window" {offset = 192 : i64} : memref<1x4xf32>
// CHECK-NEXT:   %[[I:.*]] = glowll.weight "window_initial" {value = dense<{{.*}}> : tensor<1x4xf32>, offset = 0 : i64} : memref<1x4xf32>
// CHECK-NEXT:   glowll.initialize_state %[[S]], %[[READY]] initial %[[I]] : memref<1x4xf32>, memref<1xi32>, memref<1x4xf32>
// CHECK-NEXT:   %[[T:.*]] = glowll.placeholder state "total" {offset = 256 : i64} : memref<1x2xf32>
// CHECK-NEXT:   glowll.initialize_state %[[T]], %[[READY]] {fill = 0.000000e+00 : f32} : memref<1x2xf32>, memref<1xi32>
// CHECK-NEXT:   glowll.elementwise %[[READY]] {kind = "splat", value = 1.000000e+00 : f32} : memref<1xi32>
// CHECK:        glowll.insert_tensor %[[C:.*]], %[[S]] {offsets = array<i64: 0, 0>}
// CHECK:        glowll.extract_tensor %[[N:.*]], %[[C]]
// CHECK:        glowll.elementwise %[[SUM:.*]], %[[T]], %[[X]] {kind = "add"}
// CHECK-NEXT:   glowll.copy %[[Y]], %[[C]]
// CHECK-NEXT:   glowll.copy %[[S]], %[[N]]
// CHECK-NEXT:   glowll.copy %[[T]], %[[SUM]]
// CHECK-NEXT: }
