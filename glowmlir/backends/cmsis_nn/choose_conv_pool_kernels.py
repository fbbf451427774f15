"""`glow-choose-conv-pool-kernels` (`-use-cmsis`): for each convolution whose pool is fused,
our kernel or the library's.

A fused convolution never stores its full-resolution output, which is why the library
cannot take it (CMSIS-NN would store it, then pool). With `-use-cmsis`, each one the
library would take once unfused (the convolution and the pool both accepted) stays fused,
on our kernel, when

* our kernel is estimated faster (`backends/cmsis_nn/conv_pool_costs.py`: instructions from the
  convolution's multiply-accumulates, outputs and im2col row copies, with constants fitted
  to the core class's measured figures), or
* unfusing it would make the bundle's RAM (mutable placeholders + activations, as the
  memory report counts with weights in flash) exceed `ram_size`: the rest of the pipeline
  is run on a copy of the module with it unfused, and the memory plan read off;

otherwise it is split back into the convolution and the pool, which the library then
takes. The convolutions are decided in graph order, each with the earlier decisions made.
Every decided convolution carries `kernel_choice`: who runs it and why, which the library
selection (`glowll-select-cmsis-nn`) and `glow-compile`'s table show. With no figures for
the core (`core` empty: not a Cortex-M) nothing changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass, PassPipeline
from xdsl.rewriter import InsertPoint, Rewriter

from glowmlir.backends.cmsis_nn.conv_pool_costs import COSTS, ConvolutionWork
from glowmlir.dialects import glow, glowll
from glowmlir.target import Target

LIBRARY = "cmsis-nn"

CORE_TARGETS = {"helium": Target(triple="thumbv8.1m.main-unknown-none-eabihf", features="+mve.fp,+dsp"),
                "dsp": Target(triple="thumbv7em-unknown-none-eabihf", features="+dsp"),
                "generic": Target(triple="thumbv7m-unknown-none-eabi")}
"""A target of each core class (`conv_pool_costs.core_class`): the rest of the pipeline runs for it."""


def fused_convolutions(module: ModuleOp) -> list[glow.ConvolutionOp]:
    return [op for op in module.walk() if isinstance(op, glow.ConvolutionOp) and op.pool is not None]


def unfused(fused: glow.ConvolutionOp) -> tuple[glow.ConvolutionOp, glow.PoolOp, list[Operation]]:
    """The convolution and pool `fused` stands for (`glow-fuse-conv-pool` in reverse), and
    all the ops inserted before it (between them, a widening pool's exact int16 widening);
    `fused` keeps its uses."""
    element = fused.result.type.element_type  # the pool's: the convolution's unless it widens
    arguments = fused.builder_arguments() | {"pool": None}
    conv = glow.with_attributes_of(glow.ConvolutionOp(fused.input, fused.filter, fused.bias, **arguments,
                                                      result_element=glow.convolved_element(fused)), fused)
    ops: list[Operation] = [conv]
    if fused.pool_widening is not None:
        ops.append(glow.RescaleQuantizedOp(conv.result, element))
    window = (fused.pool_kernel.get_values(), fused.pool_strides.get_values(), fused.pool_pads.get_values())
    if fused.pool.data == glow.PoolKind.MAX:
        pool = glow.MaxPoolOp(ops[-1].results[0], *window, layout=fused.layout, result_element=element)
    else:
        pool = glow.AvgPoolOp(ops[-1].results[0], *window, count_include_pad=fused.pool_count_include_pad is not None,
                              layout=fused.layout, result_element=element)
    ops.append(pool)
    Rewriter.insert_op(ops, InsertPoint.before(fused))
    return conv, pool, ops


def discard(ops: list[Operation]) -> None:
    for op in reversed(ops):
        Rewriter.erase_op(op)


def unfuse(fused: glow.ConvolutionOp) -> glow.ConvolutionOp:
    """Replaces `fused` by its convolution and pool; returns the convolution."""
    conv, pool, _ = unfused(fused)
    fused.result.replace_all_uses_with(pool.result)
    Rewriter.erase_op(fused)
    return conv


@dataclass(frozen=True)
class ChooseConvPoolKernels(ModulePass):
    """Each fused convolution + pool the library could take: ours when estimated faster or
    when unfusing would exceed `ram_size` (bytes, 0: not checked), else the library's (see
    the module doc). `core`: the `conv_pool_costs.COSTS` class; `reuse_activations` as the
    memory allocation runs."""

    name = "glow-choose-conv-pool-kernels"

    core: str = ""
    ram_size: int = 0
    reuse_activations: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from glowmlir.libraries import LIBRARIES

        if not self.core:
            return
        costs, accepts = COSTS[self.core], LIBRARIES[LIBRARY].accepts
        for fused in fused_convolutions(op):
            conv, pool, candidate = unfused(fused)
            if not all(accepts(part) is None for part in (conv, pool)):
                discard(candidate)
                continue  # the library would not take it: the selection says why
            work = ConvolutionWork.of(fused)
            ours, library, unit = costs.ours(work), costs.library(work), costs.unit
            if ours <= library:
                choice = f"ours: faster (est. ours {ours:,} vs cmsis-nn {library:,} {unit})"
            else:
                choice = f"cmsis-nn: faster (est. cmsis-nn {library:,} vs ours {ours:,} {unit})"
                if self.ram_size:
                    ram = self.ram_unfused(op, fused_convolutions(op).index(fused))  # among those still fused
                    if ram > self.ram_size:
                        choice = (f"ours: fusion needed to fit -ram-size {self.ram_size} (unfused: {ram:,} B of "
                                  f"RAM; est. cmsis-nn {library:,} vs ours {ours:,} {unit})")
                    else:
                        choice += f"; unfused: {ram:,} B of RAM fits -ram-size {self.ram_size}"
            if choice.startswith("ours"):
                discard(candidate)
                kept = fused
            else:  # the candidate convolution and pool take its place
                fused.result.replace_all_uses_with(pool.result)
                Rewriter.erase_op(fused)
                kept = conv
            kept.attributes[glow.KERNEL_CHOICE] = StringAttr(choice)

    def ram_unfused(self, module: ModuleOp, index: int) -> int:
        """RAM (mutable + activations) of the bundle with the `index`-th fused convolution
        unfused: the rest of the pipeline run on a copy of the module."""
        from glowmlir.pipeline import default_pipeline

        copy = module.clone()
        unfuse(fused_convolutions(copy)[index])
        pipeline = default_pipeline(kernel_library=LIBRARY, reuse_activations=self.reuse_activations, pointer_width=32,
                                    target=CORE_TARGETS[self.core], ram_size=self.ram_size)
        passes = [*pipeline.glow, *pipeline.glowll]
        rest = passes[[p.name for p in passes].index(self.name) + 1:]
        PassPipeline(tuple(rest)).apply(Context(), copy)
        function = next(f for f in copy.body.block.ops if isinstance(f, glowll.FunctionOp))
        return function.mutable_size.value.data + function.activations_size.value.data
