"""Measuring each candidate kernel of each layer on the target's emulated board.

One measuring build per candidate kernel (`CompileOptions.forced_kernel`: every layer the
kernel can take gets it, `glowll-apply-tuned-kernels{force=...}`), a layer-profiling build
(`layer_profile="kernels"`: each instruction a function of its own) run once on the board of
the target's core with the cycles of each function estimated (`runtime.boards.run_on_board`,
`runtime.cycles`). A layer's figure counts for a candidate only when the layer got that
kernel (a kernel that cannot take a layer leaves it to another). The builds run in worker
processes (`concurrent.futures.ProcessPoolExecutor`), or as tasks of a Ray cluster
(`executor="ray"`, the optional `glowmlir[ray]` extra: `ray.init()` is the caller's, e.g. a
cluster's address or a local instance). The inputs are random: no kernel's work depends on
the data.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from glowmlir.autotune.cache import TuningCache
from glowmlir.autotune.signature import core_key, layer_signature, signature_key, tuned_layers
from glowmlir.backends import GENERIC, PipelineOptions, tuning_candidates
from glowmlir.errors import GlowError

EXECUTORS = ("processes", "ray")


@dataclass(frozen=True)
class Builder:
    """The compiler's steps a measuring build takes: `import_network(model, options)` and
    `compile_module(module, options)` (`glowmlir.compiler.tune` passes its own, so the
    autotuner, which the compiler calls, imports no compiler). Module-level functions: a
    worker process or a Ray task receives them by name."""

    import_network: Callable
    compile_module: Callable


def candidates_of(options) -> tuple[str, ...]:
    """The kernels to measure for the compile options' target (`Backend.tuning`)."""
    return tuning_candidates(PipelineOptions(options.target, options.kernel_library,
                                             flash_size=options.flash_size or 0))


def board_of(target) -> str:
    """The emulated board of the target's core whose cycles are estimated."""
    from glowmlir.runtime.boards import BOARDS
    from glowmlir.runtime.cycles import timing_of

    for name, spec in BOARDS.items():
        if spec.cpu and spec.cpu == target.cpu and spec.counts_multiplies and timing_of(spec.cpu) is not None:
            return name
    raise GlowError(f"-autotune: no emulated board estimates the cycles of -mcpu={target.cpu or 'the host'}")


def _glowll_layers(model, options, builder: Builder) -> list[tuple[str, dict]]:
    """(key, signature) of each tuned layer of the model, as `glowll-apply-tuned-kernels` sees them."""
    from glowmlir.pipeline import run_passes
    from glowmlir.transforms.apply_tuned_kernels import ApplyTunedKernels

    options = dataclasses.replace(options, autotune=False, forced_kernel=GENERIC)
    pipeline = options.pipeline()
    module = builder.import_network(model, options)
    run_passes(module, pipeline.glow)
    passes = list(pipeline.glowll)
    tuner = next(p for p in passes if isinstance(p, ApplyTunedKernels))
    run_passes(module, passes[:passes.index(tuner)])
    return [(signature_key(s), s) for s in (layer_signature(op, tuner.core) for op in tuned_layers(module))]


def measure_candidate(model, options, board: str, kernel: str, builder: Builder) -> list[tuple[str, dict, float]]:
    """(key, signature, estimated cycles) of each layer that takes `kernel` in a measuring build."""
    from glowmlir.dialects import glowll
    from glowmlir.instrumentation import Instrumentation, instrumented
    from glowmlir.lowering.glowll_to_llvm import layer_kernel_name
    from glowmlir.runtime.boards import run_on_board
    from glowmlir.transforms.apply_tuned_kernels import ApplyTunedKernels

    options = dataclasses.replace(options, autotune=False, forced_kernel=kernel, layer_profile="kernels")
    last_glowll_pass = options.pipeline().glowll[-1].name
    signatures: dict[int, tuple[object, dict]] = {}  # id(op) -> (the op, kept alive; its signature)
    layers: list[tuple[str, dict, str, str]] = []  # per instruction: key, signature, kernel it took, kind

    class LayerRecorder(Instrumentation):
        def after_pass(self, compiler_pass, module) -> None:
            if isinstance(compiler_pass, ApplyTunedKernels):
                signatures.update({id(op): (op, layer_signature(op, compiler_pass.core))
                                   for op in tuned_layers(module)})
            elif compiler_pass.name == last_glowll_pass:
                function = next(op for op in module.body.block.ops if isinstance(op, glowll.FunctionOp))
                for op in (op for op in function.body.block.ops if isinstance(op, glowll.InstructionOp)):
                    signature = signatures.get(id(op), (None, None))[1]
                    took = op.microkernel.data if getattr(op, "microkernel", None) is not None else GENERIC
                    layers.append(("" if signature is None else signature_key(signature), signature, took,
                                   op.name.removeprefix("glowll.")))

    with instrumented(LayerRecorder()):
        bundle = builder.compile_module(builder.import_network(model, options), options)
    rng = np.random.default_rng(0)
    inputs = {}
    for placeholder in (p for p in bundle.layout.placeholders if p.kind == "input"):
        dtype = np.dtype(placeholder.dtype)
        if dtype.kind == "f":
            inputs[placeholder.name] = rng.normal(size=placeholder.shape).astype(dtype)
        else:
            limits = np.iinfo(dtype)
            inputs[placeholder.name] = rng.integers(limits.min, limits.max + 1, placeholder.shape).astype(dtype)
    entry = bundle.layout.entry_point
    functions = [layer_kernel_name(entry, index, kind) for index, (_, _, _, kind) in enumerate(layers)]
    run = run_on_board(bundle, board, inputs, count_functions=[*functions, entry, "main"], count_cycles=True)
    return [(key, signature, run.function_cycles[function].estimate)
            for (key, signature, took, _), function in zip(layers, functions)
            if signature is not None and took == kernel]


def tune(model, options, builder: Builder, executor: str = "processes", workers: int | None = None,
         kernels: tuple[str, ...] | None = None) -> TuningCache:
    """Measures every candidate kernel (`kernels`: only these of them) of the layers the cache
    (`options.tuning_cache()`) lacks, and saves the cache; returns it. `workers`: processes
    at once (default: the CPUs)."""
    if executor not in EXECUTORS:
        raise GlowError(f"autotune executor \"{executor}\": expected {' or '.join(EXECUTORS)}")
    candidates = candidates_of(options)
    if not candidates:
        raise GlowError(f"-autotune: no backend offers kernels to measure for -mcpu={options.target.cpu or 'host'}"
                        + (" with a kernel library" if options.kernel_library else ""))
    if kernels is not None:
        if unknown := [kernel for kernel in kernels if kernel not in candidates]:
            raise GlowError(f"autotune kernels: {', '.join(unknown)} not among {', '.join(candidates)}")
        candidates = tuple(kernels)
    cache = TuningCache.load(options.tuning_cache())
    board = board_of(options.target)
    missing = [key for key, _ in _glowll_layers(model, options, builder) if not cache.measured(key)]
    if not missing:
        return cache
    if executor == "ray":
        import ray

        remote = ray.remote(measure_candidate)
        results = ray.get([remote.remote(model, options, board, kernel, builder) for kernel in candidates])
    else:
        with ProcessPoolExecutor(max_workers=min(workers or os.cpu_count() or 1, len(candidates))) as pool:
            arguments = zip(*((model, options, board, kernel, builder) for kernel in candidates))
            results = list(pool.map(measure_candidate, *arguments))
    for kernel, measured in zip(candidates, results):
        for key, signature, cycles in measured:
            cache.record(key, signature, kernel, cycles)
    cache.save()
    return cache


__all__ = ["EXECUTORS", "board_of", "candidates_of", "core_key", "measure_candidate", "tune"]
