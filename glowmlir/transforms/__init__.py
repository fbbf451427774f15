"""Optimization passes, and the registry of every pass `glow-opt -p` can run (the default
pipeline that strings them together is `glowmlir.pipeline`)."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.passes import ModulePass


def _lazy(module: str, name: str) -> Callable[[], type[ModulePass]]:
    """A factory importing `name` from `module` only when the pass is asked for."""

    def load() -> type[ModulePass]:
        return getattr(importlib.import_module(module), name)

    return load


PASSES: dict[str, tuple[str, str]] = {
    "glow-decompose-conv-transpose": ("transforms.decompose_conv_transpose", "DecomposeConvTranspose"),
    "glow-decompose-3d-convolution": ("transforms.decompose_3d_convolution", "Decompose3DConvolution"),
    "glow-decompose-3d-pools": ("transforms.decompose_3d_pools", "Decompose3DPools"),
    "glow-decompose-1d-windows": ("transforms.decompose_1d_windows", "Decompose1DWindows"),
    "glow-choose-hybrid-weights": ("transforms.choose_hybrid_weights", "ChooseHybridWeights"),
    "glow-constant-fold": ("transforms.constant_fold", "ConstantFold"),
    "glow-fold-batchnorm": ("transforms.fold_batchnorm", "FoldBatchNorm"),
    "glow-quantize": ("transforms.quantize", "Quantize"),
    "glow-optimize-quantization": ("transforms.optimize_quantization", "OptimizeQuantization"),
    "glow-quantize-from-model": ("transforms.quantize_from_model", "QuantizeFromModel"),
    "glow-convert-placeholders": ("transforms.convert_placeholders", "ConvertPlaceholders"),
    "glow-fold-lookup-tables": ("transforms.fold_lookup_tables", "FoldLookupTables"),
    "glow-fuse-activations": ("transforms.fuse_activations", "FuseActivations"),
    "glow-convert-to-nhwc": ("transforms.layout", "ConvertToNHWC"),
    "glow-sink-transposes": ("transforms.layout", "SinkTransposes"),
    "glow-convolve-interleaved-rows": ("transforms.convolve_interleaved_rows", "ConvolveInterleavedRows"),
    "glow-fuse-conv-pool": ("transforms.fuse_conv_pool", "FuseConvPool"),
    "glow-fuse-residual-add": ("transforms.fuse_residual_add", "FuseResidualAdd"),
    "glow-subsample-strided-pointwise": ("transforms.subsample_strided_pointwise", "SubsampleStridedPointwise"),
    "glow-schedule-for-memory": ("transforms.schedule", "ScheduleForMemory"),
    "glow-save-node-outputs": ("transforms.save_node_outputs", "SaveNodeOutputs"),
    "lower-glow-to-glowll": ("lowering.glow_to_glowll", "LowerGlowToGlowLL"),
    "glowll-fold-constant-channels": ("transforms.fold_constant_channels", "FoldConstantChannels"),
    "glowll-apply-tuned-kernels": ("transforms.apply_tuned_kernels", "ApplyTunedKernels"),
    "glowll-execute-in-patches": ("transforms.execute_in_patches", "ExecuteInPatches"),
    "glowll-fuse-lookup-tables": ("transforms.fuse_lookup_tables", "FuseLookupTables"),
    "glowll-fold-pool-widening": ("transforms.fold_pool_widening", "FoldPoolWidening"),
    "glowll-convolve-in-place": ("transforms.convolve_in_place", "ConvolveInPlace"),
    "glowll-share-buffers": ("transforms.share_buffers", "ShareBuffers"),
    "glowll-liveness": ("transforms.allocate_memory", "Liveness"),
    "glowll-allocate-memory": ("transforms.allocate_memory", "AllocateMemory"),
    "lower-glowll-to-llvm": ("lowering.glowll_to_llvm", "LowerGlowLLToLLVM"),
}
"""The shared passes `glow-opt -p` runs: name -> (module under glowmlir, class). A backend's own
passes are in its description (`Backend.passes`)."""


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Pass name → factory of its class, for xDSL's opt driver."""
    from glowmlir.backends import backend_passes

    shared = {name: (f"glowmlir.{module}", cls) for name, (module, cls) in PASSES.items()}
    return {name: _lazy(module, cls) for name, (module, cls) in {**shared, **backend_passes()}.items()}
