"""The plan chosen to fit `-ram-size` (or a `-board` preset's RAM): the fastest that fits.

Candidates, each the graph-level module after the `glow` stage lowered by the `glowll`
passes of its plan:

* `layer by layer`: today's plan, every tensor whole, each layer's input and output live
  together (no cost);
* `in place, N channels staged`: `glowll-convolve-in-place` with N channels a depthwise
  slice (16, 8, 4, 2, 1: smaller stages, more kernel calls).

Each candidate's cost is estimated in cycles over layer by layer (`extra_cycles`): a staged
slice costs kernel calls (`CALL_CYCLES`) and a pass over bytes (`COPY_CYCLES_PER_BYTE`): a
depthwise slice's copy, or a residual slice's second reading of its input; a pointwise layer
written over its input costs nothing (its kernel gathers its pixels anyway). Its bytes
are the bundle's RAM with weights in flash: MUTABLE + ACTIVATIONS. Without a RAM limit the
first candidate is taken (no default figure moves); with one, the cheapest that fits, and a
RAM no candidate fits is refused (one line, nothing written).

Hook for patch-by-patch execution: `PLAN_FAMILIES` lists functions that yield candidates for
a module, each family's cheapest first (the first of a family that fits ends that family). A
patched plan (a transformation of the `glow`-stage module taking the cut layer and the number
of patches, returning the transformed module) is one more family: a function yielding a
`PlanCandidate` per (cut, patches), fewest patches first, whose `transform` applies it and whose
`estimate` gives its cycles over layer by layer (the recomputed halos), appended to
`PLAN_FAMILIES`; a patched candidate may set `in_place` too (in-place layers after the cut).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp

from glowmlir.dialects import glowll
from glowmlir.errors import GlowError

CALL_CYCLES = 40
"""A kernel call's cost on a Cortex-M (arguments, prologue, epilogue), cycles."""

COPY_CYCLES_PER_BYTE = 0.5
"""A staging copy's cost: words loaded and stored, two cycles a word (Cortex-M4 `cortex-m-timing.md`)."""


@dataclass(frozen=True)
class PlanCandidate:
    """A way to run the network: `name` for the report, the `in_place` channels of its glowll
    passes (0: none), an optional `transform` of the glow-stage module (a patched plan) and
    its cost `estimate` on the lowered function."""

    name: str
    in_place: int = 0
    transform: Callable[[ModuleOp], ModuleOp] | None = None
    estimate: Callable[[glowll.FunctionOp], int] | None = None  # cycles over layer by layer (default: extra_cycles)


@dataclass(frozen=True)
class PlanChoice:
    """The plan taken: its name, its RAM (MUTABLE + ACTIVATIONS) and its estimated cycles over
    layer by layer; `ram_size` the limit it was chosen for (None: none given)."""

    name: str
    ram: int
    extra_cycles: int
    ram_size: int | None

    def summary(self) -> str:
        limit = "no RAM limit" if self.ram_size is None else f"-ram-size {self.ram_size:,} B"
        return (f"plan {self.name} ({limit}): {self.ram:,} B of RAM, ~{self.extra_cycles:,} cycles over layer by "
                f"layer")


def layer_by_layer_and_in_place(module: ModuleOp) -> Iterator[PlanCandidate]:
    yield PlanCandidate("layer by layer")
    for channels in (16, 8, 4, 2, 1):
        yield PlanCandidate(f"in place, {channels} channels staged", in_place=channels)


PLAN_FAMILIES: list[Callable[[ModuleOp], Iterator[PlanCandidate]]] = [layer_by_layer_and_in_place]
"""The candidate generators (see the module doc: patch-by-patch execution adds its own)."""


def extra_cycles(function: glowll.FunctionOp) -> int:
    """Estimated cycles the plan's in-place layers add: per staged slice a kernel call and the
    pass that empties the stage (a copy, or the residual add that reads it, which layer by
    layer reads a whole buffer as well: its call only); a slice of output channels reads its
    whole input again (a gathering pass over it, `COPY_CYCLES_PER_BYTE`); a block of a
    pointwise layer's rows, or of the network input's, is gathered (transposed) and inserted (a
    pass over its input and output rows)."""
    writers: dict[glowll.AllocOp, list[glowll.ConvolutionOp]] = {}
    for op in function.body.block.ops:
        if isinstance(op, glowll.ConvolutionOp) and isinstance(op.dest.owner, glowll.AllocOp):
            writers.setdefault(op.dest.owner, []).append(op)
    cycles = 0.0
    for stage, slices in writers.items():
        if len(slices) < 2:
            continue
        for op in slices:
            cycles += 2 * CALL_CYCLES
            if _gathered(op):  # a block of rows: gathered (or transposed) and inserted
                cycles += CALL_CYCLES + COPY_CYCLES_PER_BYTE * (glowll.byte_size(op.input.type)
                                                                 + glowll.byte_size(op.dest.type))
            elif op.group.value.data == 1:  # output channels: the whole input read again
                cycles += COPY_CYCLES_PER_BYTE * glowll.byte_size(op.input.type)
            else:  # channels of a depthwise convolution: the slice copied over its input
                cycles += COPY_CYCLES_PER_BYTE * glowll.byte_size(stage.buffer.type)
    return int(cycles)


def _gathered(op: glowll.ConvolutionOp) -> bool:
    """Whether `op` reads a stage a `glowll.extract_tensor` or `glowll.transpose` fills (a block
    of a pointwise layer's rows, or of the network input's)."""
    return any(isinstance(use.operation, glowll.ExtractTensorOp | glowll.TransposeOp)
               and use.operation.dest is op.input for use in op.input.uses)


def ram_of(function: glowll.FunctionOp) -> int:
    return function.mutable_size.value.data + function.activations_size.value.data


def choose_plan(module: ModuleOp, ram_size: int | None, lower: Callable[[ModuleOp, int], ModuleOp]
                ) -> tuple[ModuleOp, PlanChoice]:
    """The lowered module of the fastest candidate that fits `ram_size` (None: the first);
    `lower(module, in_place)` runs the glowll stage on a module (a copy: candidates start from
    the same graph)."""
    tried: list[tuple[str, int]] = []
    best: tuple[ModuleOp, PlanChoice] | None = None
    for family in PLAN_FAMILIES:
        for candidate in family(module):
            graph = module.clone()
            if candidate.transform is not None:
                graph = candidate.transform(graph)
            lowered = lower(graph, candidate.in_place)
            function = next(op for op in lowered.body.block.ops if isinstance(op, glowll.FunctionOp))
            cost = (candidate.estimate or extra_cycles)(function)
            choice = PlanChoice(candidate.name, ram_of(function), cost, ram_size)
            if ram_size is None:
                return lowered, choice
            tried.append((candidate.name, choice.ram))
            if choice.ram <= ram_size:
                if best is None or choice.extra_cycles < best[1].extra_cycles:
                    best = lowered, choice
                break  # a family yields its candidates cheapest first: the first that fits is its best
        if best is not None and best[1].extra_cycles == 0:
            return best  # nothing is faster than a free plan
    if best is None:
        smallest = min(tried, key=lambda t: t[1])
        raise GlowError(f"the bundle does not fit the target's RAM: -ram-size {ram_size:,} B, and no plan fits (the "
                        f"smallest, {smallest[0]}, needs {smallest[1]:,} B: inputs/outputs and activations); nothing "
                        f"written")
    return best
