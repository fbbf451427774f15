// RUN: rm -f %t.npz
// RUN: glow-opt %s --print-weights | filecheck %s --check-prefix=FULL
// RUN: glow-opt %s --weights-file=%t.npz | filecheck %s --check-prefix=ELIDED
// RUN: glow-opt %s --weights-file=%t.npz | glow-opt --weights-file=%t.npz --print-weights | filecheck %s --check-prefix=FULL
// Weights with more than 16 elements print as `elided`; --weights-file keeps them in a
// side file so that the printed IR parses back with its data.

glow.function @net {
  %w = glow.constant "w" {value = dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]> : tensor<17xf32>} : tensor<17xf32>
  glow.save %w as "y" : tensor<17xf32>
}

// ELIDED: glow.constant "w" elided : tensor<17xf32>
// FULL:   glow.constant "w" {value = dense<[0.000000e+00, 1.000000e+00, 2.000000e+00, {{.*}}, 1.600000e+01]> : tensor<17xf32>} : tensor<17xf32>
