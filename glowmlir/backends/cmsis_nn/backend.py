"""Arm CMSIS-NN as a backend: the library's mappings (`library`) and selection pass
(`select_kernels`) and, on a Cortex-M whose costs are known (`conv_pool_costs`), the choice
between our fused convolution + pool and the library's two calls
(`glow-choose-conv-pool-kernels`)."""

from __future__ import annotations

from glowmlir.backends import Backend, PipelineOptions, SelectionOrder, serves

LIBRARY = "cmsis-nn"


def graph_passes(options: PipelineOptions) -> list:
    from glowmlir.backends.cmsis_nn.choose_conv_pool_kernels import ChooseConvPoolKernels
    from glowmlir.backends.cmsis_nn.conv_pool_costs import core_class

    core = core_class(options.target) if options.target is not None else ""
    if options.memory_fusion and options.kernel_library == LIBRARY and core:
        return [ChooseConvPoolKernels(core, options.ram_size, options.reuse_activations)]
    return []


def glowll_passes(options: PipelineOptions) -> list:
    from glowmlir.backends.cmsis_nn.select_kernels import SelectCmsisNN

    if options.kernel_library != LIBRARY:
        return []
    helium = serves("arm_mve", options.target)
    return [(SelectionOrder.LIBRARY_CALLS, SelectCmsisNN(helium))]


PASSES = {"glow-choose-conv-pool-kernels":
              ("glowmlir.backends.cmsis_nn.choose_conv_pool_kernels", "ChooseConvPoolKernels"),
          "glowll-select-cmsis-nn": ("glowmlir.backends.cmsis_nn.select_kernels", "SelectCmsisNN")}
"""Its passes for `glow-opt -p`: name -> (module, class)."""

BACKEND = Backend("cmsis_nn", passes=PASSES, graph_passes=graph_passes, glowll_passes=glowll_passes,
                  library=(LIBRARY, "-use-cmsis", "glowmlir.backends.cmsis_nn.library"))
