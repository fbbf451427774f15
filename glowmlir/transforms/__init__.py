"""Optimization passes, and the registry of every pass `glow-opt -p` can run."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence

from xdsl.passes import ModulePass


def pre_quantization_passes() -> list[ModulePass]:
    """The graph passes before quantization: a profile is taken of the graph they leave. The
    decompositions come first: what they leave is what the lowering takes."""
    from glowmlir.transforms.decompose_1d_windows import Decompose1DWindows
    from glowmlir.transforms.decompose_3d_convolution import Decompose3DConvolution
    from glowmlir.transforms.decompose_3d_pools import Decompose3DPools
    from glowmlir.transforms.decompose_conv_transpose import DecomposeConvTranspose
    from glowmlir.transforms.graph import ConstantFold, FoldBatchNorm

    # A 1-D transposed convolution becomes a 1-D convolution, which then becomes a 2-D one.
    decompositions = [DecomposeConvTranspose(), Decompose3DConvolution(), Decompose3DPools(), Decompose1DWindows()]
    return [*decompositions, ConstantFold(), FoldBatchNorm(), ConstantFold()]


def graph_passes(memory_fusion: bool = True, quantization: Sequence[ModulePass] = (),
                 kernel_library: str | None = None) -> list[ModulePass]:
    """The default `glow` graph pipeline, in order; `quantization` passes run before the
    fusions, as in Glow (fusion then applies to the quantized ops too); with a kernel
    library, what it takes runs NHWC."""
    from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination
    from xdsl.transforms.dead_code_elimination import DeadCodeElimination

    from glowmlir.transforms.graph import FuseActivations, FuseConvPool, FuseResidualAdd
    from glowmlir.transforms.schedule import ScheduleForMemory

    from glowmlir.transforms.layout import ConvertToNHWC, SinkTransposes

    # Transposes sink before fusion, so that layout changes (TFLite's NHWC graphs) do not
    # stand between a convolution and its activation or pool.
    passes = [*pre_quantization_passes(), *quantization, SinkTransposes(), FuseActivations()]
    if memory_fusion:
        passes += [FuseConvPool(), FuseResidualAdd()]
    if kernel_library is not None:
        passes += [ConvertToNHWC(kernel_library), SinkTransposes()]
    return passes + [CommonSubexpressionElimination(), DeadCodeElimination(), ScheduleForMemory()]


def _lazy(module: str, name: str) -> Callable[[], type[ModulePass]]:
    """A factory importing `name` from `glowmlir.<module>` only when the pass is asked for."""

    def load() -> type[ModulePass]:
        return getattr(importlib.import_module(f"glowmlir.{module}"), name)

    return load


PASSES: dict[str, tuple[str, str]] = {
    "glow-decompose-conv-transpose": ("transforms.decompose_conv_transpose", "DecomposeConvTranspose"),
    "glow-decompose-3d-convolution": ("transforms.decompose_3d_convolution", "Decompose3DConvolution"),
    "glow-decompose-3d-pools": ("transforms.decompose_3d_pools", "Decompose3DPools"),
    "glow-decompose-1d-windows": ("transforms.decompose_1d_windows", "Decompose1DWindows"),
    "glow-constant-fold": ("transforms.graph", "ConstantFold"),
    "glow-fold-batchnorm": ("transforms.graph", "FoldBatchNorm"),
    "glow-quantize": ("transforms.quantize", "Quantize"),
    "glow-optimize-quantization": ("transforms.quantize", "OptimizeQuantization"),
    "glow-convert-placeholders": ("transforms.quantize", "ConvertPlaceholders"),
    "glow-fuse-activations": ("transforms.graph", "FuseActivations"),
    "glow-convert-to-nhwc": ("transforms.layout", "ConvertToNHWC"),
    "glow-sink-transposes": ("transforms.layout", "SinkTransposes"),
    "glow-fuse-conv-pool": ("transforms.graph", "FuseConvPool"),
    "glow-fuse-residual-add": ("transforms.graph", "FuseResidualAdd"),
    "glow-schedule-for-memory": ("transforms.schedule", "ScheduleForMemory"),
    "lower-glow-to-glowll": ("lowering.glow_to_glowll", "LowerGlowToGlowLL"),
    "glowll-select-cmsis-nn": ("transforms.select_kernels", "SelectCmsisNN"),
    "glowll-select-hifi4": ("transforms.select_kernels", "SelectHifi4"),
    "glowll-share-buffers": ("transforms.share_buffers", "ShareBuffers"),
    "glowll-liveness": ("transforms.allocate_memory", "Liveness"),
    "glowll-allocate-memory": ("transforms.allocate_memory", "AllocateMemory"),
    "lower-glowll-to-llvm": ("lowering.glowll_to_llvm", "LowerGlowLLToLLVM"),
}
"""Every pass `glow-opt -p` runs: name -> (module under glowmlir, class)."""


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Pass name → factory of its class, for xDSL's opt driver."""
    return {name: _lazy(module, cls) for name, (module, cls) in PASSES.items()}
