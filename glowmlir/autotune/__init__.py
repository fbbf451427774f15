"""The autotuner: each layer's kernel chosen by measurement (`-autotune`).

For a target whose backends offer kernels to choose from (`Backend.tuning`: on a Cortex-M core
with the DSP extension, the generic loop nests, "arm-dsp" and "level-tables", or on Helium
"arm-dsp", "arm-mve" and "arm-mve-im2col"), every candidate is measured once per layer in
estimated cycles on the target's emulated board (`measure`: a layer-profiling build of the
whole model per candidate, each layer's function counted apart, `glowmlir.runtime.cycles`),
the builds running in parallel worker processes (`concurrent.futures`) or, for a sweep larger
than one machine, as Ray tasks (the optional `glowmlir[ray]` extra). The figures are kept by
layer signature (`signature`: the instruction, its operands' shapes and number types, its
properties, the core and its options) in a JSON file (`cache`, `-autotune-cache`, else
`$GLOWMLIR_AUTOTUNE_CACHE`, else the user's cache directory).

A build whose cache holds a layer's figures (`-autotune`, which measures what is missing, or
any build once the cache file exists) gives it the fastest kernel measured
(`glowll-apply-tuned-kernels`: `#glowll.tuned_kernel<"arm-dsp", cycles, generic cycles>` on
the instruction), which the owning backend's selection pass honours within its budgets
(`-flash-size`: a packed filter's measured saving per extra byte). No ISA is named here.
"""
