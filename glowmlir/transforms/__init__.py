"""Optimization passes, and the registry of every pass `glow-opt -p` can run."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def graph_passes(memory_fusion: bool = True) -> list[ModulePass]:
    """The default `glow` graph pipeline, in order."""
    from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination
    from xdsl.transforms.dead_code_elimination import DeadCodeElimination

    from glowmlir.transforms.graph import ConstantFold, FoldBatchNorm, FuseActivations, FuseConvPool, FuseResidualAdd

    from glowmlir.transforms.schedule import ScheduleForMemory

    passes = [ConstantFold(), FoldBatchNorm(), ConstantFold(), FuseActivations()]
    if memory_fusion:
        passes += [FuseConvPool(), FuseResidualAdd()]
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

    def to_glowll():
        from glowmlir.lowering.glow_to_glowll import LowerGlowToGlowLL

        return LowerGlowToGlowLL

    def to_llvm():
        from glowmlir.lowering.glowll_to_llvm import LowerGlowLLToLLVM

        return LowerGlowLLToLLVM

    return {
        "glow-constant-fold": graph("ConstantFold"),
        "glow-fold-batchnorm": graph("FoldBatchNorm"),
        "glow-fuse-activations": graph("FuseActivations"),
        "glow-fuse-conv-pool": graph("FuseConvPool"),
        "glow-fuse-residual-add": graph("FuseResidualAdd"),
        "glow-schedule-for-memory": schedule,
        "lower-glow-to-glowll": to_glowll,
        "glowll-share-buffers": share_buffers,
        "glowll-liveness": allocation("Liveness"),
        "glowll-allocate-memory": allocation("AllocateMemory"),
        "lower-glowll-to-llvm": to_llvm,
    }
