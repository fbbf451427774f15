"""Profiling a float model for quantization (Glow's `-dump-profile`).

The graph is taken to the point where `glow-quantize` will later see it (the passes before
quantization), every named value (`<node>:0`) and every input becomes an extra output of
a host bundle, and each calibration run folds those tensors into a `NodeProfile`
(min, max, histogram). The profile records a hash of that graph, so a profile made for
another model or other input shapes is refused when quantizing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

import numpy as np
from xdsl.dialects.builtin import ModuleOp, f32
from xdsl.rewriter import InsertPoint, Rewriter

from glowmlir import __version__
from glowmlir.compiler import Bundle, CompileOptions, compile_module, import_network
from glowmlir.dialects import glow
from glowmlir.instrumentation import stage
from glowmlir.names import UniqueNames
from glowmlir.pipeline import pre_quantization_passes, run_passes
from glowmlir.quantization.profile import NodeProfile, Profile
from glowmlir.transforms.profile_keys import graph_hash, value_key

TOOLS_VERSION = f"glowmlir {__version__}"


def instrument(module: ModuleOp) -> dict[str, str]:
    """Saves every profiled value as an extra output `profile_<k>` (a name no input or output of
    the model has); returns output name -> profile key."""
    function = next(op for op in module.body.block.ops if isinstance(op, glow.FunctionOp))
    names = UniqueNames()
    for op in function.body.block.ops:
        if isinstance(op, glow.PlaceholderOp | glow.SaveOp):
            names(op.name_.data)
    outputs: dict[str, str] = {}
    profiled: set[str] = set()
    for op in list(function.body.block.ops):
        if not op.results or op.results[0].type.element_type != f32:
            continue
        key = value_key(op.results[0])
        if key is None or key in profiled:
            continue
        name = names(f"profile_{len(outputs)}")
        Rewriter.insert_op(glow.SaveOp(op.results[0], name), InsertPoint.at_end(function.body.block))
        outputs[name] = key
        profiled.add(key)
    return outputs


@dataclass
class Profiler:
    """A host bundle of the instrumented model, and the profile it accumulates."""

    bundle: Bundle
    keys: dict[str, str]
    profile: Profile

    @staticmethod
    def for_model(model: str, options: CompileOptions, num_bins: int = 10) -> Profiler:
        module = import_network(model, options)
        with stage("graph passes before quantization"):
            run_passes(module, pre_quantization_passes())
        hash_value = graph_hash(module)
        keys = instrument(module)
        bundle = compile_module(module, replace(options, memory_fusion=False, quantization=None))
        entries = {key: NodeProfile.empty(key, num_bins) for key in keys.values()}
        return Profiler(bundle, keys, Profile(TOOLS_VERSION, hash_value, entries))

    def input_shapes(self) -> dict[str, tuple[int, ...]]:
        return {p.name: p.shape for p in self.bundle.layout.placeholders if p.kind == "input"}

    def observe(self, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Runs one inference and folds every observed tensor into its profile entry; returns the
        model's own outputs."""
        outputs = self.bundle.run_in_place(feed)
        for name, key in self.keys.items():
            self.profile.entries[key].update(outputs[name])
        return {name: value.copy() for name, value in outputs.items() if name not in self.keys}

    def run(self, feeds: Iterable[dict[str, np.ndarray]]) -> Iterator[dict[str, np.ndarray]]:
        """Observes each feed in turn, yielding the model's outputs of each."""
        for feed in feeds:
            yield self.observe(feed)
