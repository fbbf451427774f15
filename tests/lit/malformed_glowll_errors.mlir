// Hand-written glowll that is malformed: glow-opt prints one error line naming the op (or
// the place in the file), exits with status 2, and never shows a Python traceback.

// RUN: not glow-opt %S/inputs/glowll_wrong_dest_shape.mlir 2>&1 | filecheck %s --check-prefix=DEST
// DEST: glow-opt: error: {{.*}}glowll_wrong_dest_shape.mlir: invalid IR: glowll.convolution: dest has shape [1, 2, 8, 8], the operands give [1, 4, 8, 8]
// DEST-NOT: Traceback

// RUN: not glow-opt %S/inputs/glowll_clip_without_bounds.mlir 2>&1 | filecheck %s --check-prefix=CLIP
// CLIP: glow-opt: error: {{.*}}glowll_clip_without_bounds.mlir: invalid IR: glowll.elementwise: "clip" needs clip_min
// CLIP-NOT: Traceback

// RUN: not glow-opt %S/inputs/glowll_unknown_activation.mlir 2>&1 | filecheck %s --check-prefix=ENUM
// ENUM: glow-opt: error: {{.*}}glowll_unknown_activation.mlir:6:{{[0-9]+}}: Expected `relu`, or `clip`.
// ENUM-NOT: Traceback

// RUN: not glow-opt %S/inputs/glowll_wrong_attribute_type.mlir 2>&1 | filecheck %s --check-prefix=TYPE
// TYPE: glow-opt: error: {{.*}}glowll_wrong_attribute_type.mlir: invalid IR: "x" should be of base attribute integer
// TYPE-NOT: Traceback

// RUN: not glow-opt %S/inputs/glowll_lookup_table_without_input.mlir 2>&1 | filecheck %s --check-prefix=LOOKUP
// LOOKUP: glow-opt: error: {{.*}}glowll_lookup_table_without_input.mlir: invalid IR: glowll.convolution: a lookup_table needs its lookup_input, the int8 type it is indexed by
// LOOKUP-NOT: Traceback
