"""Arm CMSIS-NN as a backend: the library's mappings (`library`) and, on a Cortex-M whose
costs are known (`conv_pool_costs`), the choice between our fused convolution + pool and the
library's two calls (`glow-choose-conv-pool-kernels`)."""

from __future__ import annotations

from glowmlir.backends import Backend, GraphOptions
from glowmlir.backends.cmsis_nn.choose_conv_pool_kernels import ChooseConvPoolKernels


def graph_passes(options: GraphOptions) -> list:
    if options.memory_fusion and options.kernel_library == "cmsis-nn" and options.core:
        return [ChooseConvPoolKernels(options.core, options.ram_size, options.reuse_activations)]
    return []


BACKEND = Backend("cmsis_nn", graph_passes=graph_passes, library=("cmsis-nn", "backends.cmsis_nn.library"))
