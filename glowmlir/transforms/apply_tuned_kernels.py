"""`glowll-apply-tuned-kernels`: each measured layer takes the kernel the autotuner measured fastest.

Runs after lowering, before the kernel selection passes (`pipeline.glowll_passes`, on a target
whose backends offer kernels to tune, `Backend.tuning`). For every instruction the autotuner
chooses a kernel for (`autotune.signature.TUNED_OPS`) whose signature (`core`: the core and
kernel options, `autotune.signature.core_key`) the cache file holds, it adds
`tuned_kernel = #glowll.tuned_kernel<"kernel", cycles, generic cycles>`: the fastest of
`candidates` (joined by "+") measured, where two or more were. The selection pass of the backend owning that
kernel gives it to the instruction (within its budgets); "generic" keeps every backend's
kernel off it. With `force` (a measuring build, `autotune.measure`) every such instruction
gets that kernel instead, cycles 0. A missing cache file changes nothing; a bad one stops
with one line (`autotune.cache`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from glowmlir.autotune.cache import TuningCache
from glowmlir.autotune.signature import layer_signature, signature_key, tuned_layers
from glowmlir.backends import GENERIC
from glowmlir.dialects.glowll import TUNED_KERNEL, TunedKernelAttr
from glowmlir.errors import GlowError


@dataclass(frozen=True)
class ApplyTunedKernels(ModulePass):
    """Marks each measured layer with its fastest kernel (see the module doc)."""

    name = "glowll-apply-tuned-kernels"
    cache: str = ""
    """The cache file ("": none, nothing marked)."""
    core: str = ""
    """The core and kernel options the figures must be of (`autotune.signature.core_key`)."""
    candidates: str = ""
    """The kernels to choose from, joined by "+"."""
    force: str = ""
    """A measuring build's kernel: every layer marked with it."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        candidates = tuple(self.candidates.split("+")) if self.candidates else ()
        if self.force:
            if self.force not in candidates:
                raise GlowError(f"glowll-apply-tuned-kernels{{force={self.force}}}: expected one of the candidates "
                                f"({', '.join(candidates) or 'none given'})")
            for layer in tuned_layers(op):
                layer.attributes[TUNED_KERNEL] = TunedKernelAttr(self.force, 0, 0)
            return
        if not self.cache:
            return
        cache = TuningCache.load(self.cache)
        for layer in tuned_layers(op):
            key = signature_key(layer_signature(layer, self.core))
            choice = cache.fastest(key, candidates)
            if choice is not None and len(cache.measured(key)) > 1:  # a choice between kernels
                kernel, cycles = choice
                layer.attributes[TUNED_KERNEL] = TunedKernelAttr(kernel, cycles, cache.measured(key).get(GENERIC, 0))
