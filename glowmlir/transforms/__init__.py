"""Optimization passes, and the registry of every pass `glow-opt -p` can run."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.passes import ModulePass


def pre_quantization_passes() -> list[ModulePass]:
    """The graph passes before quantization: a profile is taken of the graph they leave."""
    from glowmlir.transforms.graph import ConstantFold, FoldBatchNorm

    return [ConstantFold(), FoldBatchNorm(), ConstantFold()]


def graph_passes(memory_fusion: bool = True, quantization: Sequence[ModulePass] = (),
                 kernel_library: str | None = None) -> list[ModulePass]:
    """The default `glow` graph pipeline, in order; `quantization` passes run before the
    fusions, as in Glow (fusion then applies to the quantized ops too); with a kernel
    library, what it takes runs NHWC."""
    from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination
    from xdsl.transforms.dead_code_elimination import DeadCodeElimination

    from glowmlir.transforms.graph import FuseActivations, FuseConvPool, FuseResidualAdd
    from glowmlir.transforms.schedule import ScheduleForMemory

    passes = [*pre_quantization_passes(), *quantization, FuseActivations()]
    if memory_fusion:
        passes += [FuseConvPool(), FuseResidualAdd()]
    if kernel_library is not None:
        from glowmlir.transforms.layout import ConvertToNHWC, SinkTransposes

        passes += [ConvertToNHWC(kernel_library), SinkTransposes()]
    return passes + [CommonSubexpressionElimination(), DeadCodeElimination(), ScheduleForMemory()]


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Pass name → factory of its class, for xDSL's opt driver."""

    def graph(name):
        def load():
            from glowmlir.transforms import graph as module

            return getattr(module, name)

        return load

    def allocation(name):
        def load():
            from glowmlir.transforms import allocate_memory as module

            return getattr(module, name)

        return load

    def share_buffers():
        from glowmlir.transforms.share_buffers import ShareBuffers

        return ShareBuffers

    def schedule():
        from glowmlir.transforms.schedule import ScheduleForMemory

        return ScheduleForMemory

    def quantization(name):
        def load():
            from glowmlir.transforms import quantize as module

            return getattr(module, name)

        return load

    def select_kernels(name):
        def load():
            from glowmlir.transforms import select_kernels as module

            return getattr(module, name)

        return load

    def layout(name):
        def load():
            from glowmlir.transforms import layout as module

            return getattr(module, name)

        return load

    def to_glowll():
        from glowmlir.lowering.glow_to_glowll import LowerGlowToGlowLL

        return LowerGlowToGlowLL

    def to_llvm():
        from glowmlir.lowering.glowll_to_llvm import LowerGlowLLToLLVM

        return LowerGlowLLToLLVM

    return {
        "glow-constant-fold": graph("ConstantFold"),
        "glow-fold-batchnorm": graph("FoldBatchNorm"),
        "glow-quantize": quantization("Quantize"),
        "glow-optimize-quantization": quantization("OptimizeQuantization"),
        "glow-convert-placeholders": quantization("ConvertPlaceholders"),
        "glow-fuse-activations": graph("FuseActivations"),
        "glow-convert-to-nhwc": layout("ConvertToNHWC"),
        "glow-sink-transposes": layout("SinkTransposes"),
        "glow-fuse-conv-pool": graph("FuseConvPool"),
        "glow-fuse-residual-add": graph("FuseResidualAdd"),
        "glow-schedule-for-memory": schedule,
        "lower-glow-to-glowll": to_glowll,
        "glowll-select-cmsis-nn": select_kernels("SelectCmsisNN"),
        "glowll-select-hifi4": select_kernels("SelectHifi4"),
        "glowll-share-buffers": share_buffers,
        "glowll-liveness": allocation("Liveness"),
        "glowll-allocate-memory": allocation("AllocateMemory"),
        "lower-glowll-to-llvm": to_llvm,
    }
