"""The plan chosen to fit `-ram-size` (or a `-board` preset's RAM): the fastest that fits.

Candidates, each the graph-level module after the `glow` stage lowered by the `glowll`
passes of its plan (`lower(module, in_place, patches)`):

* `layer by layer`: today's plan, every tensor whole, each layer's input and output live
  together (no cost);
* `in place, N channels staged`: `glowll-convolve-in-place` with N channels a depthwise
  slice (16, 8, 4, 2, 1: smaller stages, more kernel calls);
* `patched up to instruction I (CxHxW), N x N patches`: `glowll-execute-in-patches` with the
  cut I (an instruction of the IR `lower-glow-to-glowll` leaves) and N patches per side
  (`patched_plans`: every cut whose stage can run patch by patch and whose plan could hold
  fewer bytes than layer by layer, with 2..`MAX_PATCHES` patches per side).

Each candidate's cost is estimated in cycles over layer by layer. In place (`extra_cycles`): a
staged slice costs kernel calls (`CALL_CYCLES`) and a pass over bytes (`COPY_CYCLES_PER_BYTE`):
a depthwise slice's copy, or a residual slice's second reading of its input; a pointwise layer
written over its input costs nothing (its kernel gathers its pixels anyway). Patched
(`patch_cycles`): the halos' multiply-accumulates (`CYCLES_PER_MAC`), the patches' extra kernel
calls and the copies of their parts. Its bytes are the bundle's RAM with weights in flash:
MUTABLE + ACTIVATIONS. Without a RAM limit the first candidate is taken (no default figure
moves); with one, the cheapest that fits, and a RAM no candidate fits is refused (one line,
nothing written).

`PLAN_FAMILIES` lists functions that yield candidates for a module, each family's cheapest
first (the first of a family that fits ends that family; the patched family yields a
candidate only if it could hold fewer bytes than every cheaper one, so that the search lowers
few of them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from glowmlir.dialects import glow, glowll
from glowmlir.errors import GlowError
from glowmlir.transforms.execute_in_patches import WINDOWED, PatchCost, convolution_macs, patch_cost, stage_of

CALL_CYCLES = 40
"""A kernel call's cost on a Cortex-M (arguments, prologue, epilogue), cycles."""

COPY_CYCLES_PER_BYTE = 0.5
"""A staging copy's cost: words loaded and stored, two cycles a word (Cortex-M4 `cortex-m-timing.md`)."""

CYCLES_PER_MAC = 2
"""An int8 multiply-accumulate recomputed in a halo (visual wake words layer by layer on the
Cortex-M4: 14.4 M cycles for 7.5 M MACs)."""

MAX_PATCHES = 6
"""The most patches per side the chooser tries (more: the halos cost more than the bytes saved)."""

MAX_EXTRA_MACS = 0.5
"""The most multiply-accumulates a patched plan may add, a fraction of the network's: a stage
deeper than the first whose 2 x 2 patches add more ends the search (deeper cuts add more)."""


@dataclass(frozen=True)
class PlanCandidate:
    """A way to run the network: `name` for the report, the `in_place` channels of its glowll
    passes (0: none), its `patches` (cut instruction, patches per side; None: none), its cost
    `estimate` on the lowered function and the multiply-accumulates it adds."""

    name: str
    in_place: int = 0
    patches: tuple[str, int] | None = None
    estimate: Callable[[glowll.FunctionOp], int] | None = None  # cycles over layer by layer (default: extra_cycles)
    extra_macs: int = 0


@dataclass(frozen=True)
class PlanChoice:
    """The plan taken: its name, its RAM (MUTABLE + ACTIVATIONS) and its estimated cycles over
    layer by layer; `ram_size` the limit it was chosen for (None: none given)."""

    name: str
    ram: int
    extra_cycles: int
    ram_size: int | None
    extra_macs: int = 0

    def summary(self) -> str:
        limit = "no RAM limit" if self.ram_size is None else f"-ram-size {self.ram_size:,} B"
        macs = f", {self.extra_macs:,} MACs more" if self.extra_macs else ""
        return (f"plan {self.name} ({limit}): {self.ram:,} B of RAM, ~{self.extra_cycles:,} cycles over layer by "
                f"layer{macs}")


def layer_by_layer_and_in_place(module: ModuleOp) -> Iterator[PlanCandidate]:
    yield PlanCandidate("layer by layer")
    for channels in (16, 8, 4, 2, 1):
        yield PlanCandidate(f"in place, {channels} channels staged", in_place=channels)


def patch_cycles(cost: PatchCost) -> int:
    """Estimated cycles a patched plan adds: its halos' multiply-accumulates, the kernel calls of
    every patch after the first, the copies of the patches' parts."""
    return int(CYCLES_PER_MAC * cost.extra_macs + CALL_CYCLES * cost.extra_instructions
               + COPY_CYCLES_PER_BYTE * cost.copied_bytes)


def _live_bytes(op: glowll.InstructionOp) -> int:
    """The activation bytes an instruction holds at once (its scratch sources and dest)."""
    buffers = {value for value in (*op.sources, op.dest) if isinstance(value.owner, glowll.AllocOp)}
    return sum(glowll.byte_size(value.type) for value in buffers)


def patched_plans(module: ModuleOp) -> Iterator[PlanCandidate]:
    """Patch-by-patch plans, cheapest first by `patch_cycles`, each yielded only if it could
    hold fewer bytes than layer by layer and than every cheaper one (its stage's `PatchCost`
    bytes, the layers after the cut as they are)."""
    from glowmlir.lowering.glow_to_glowll import LowerGlowToGlowLL

    lowered = module.clone()
    LowerGlowToGlowLL().apply(Context(), lowered)
    function = next(op for op in lowered.body.block.ops if isinstance(op, glowll.FunctionOp))
    instructions = [op for op in function.body.block.ops if isinstance(op, glowll.InstructionOp)]
    live = [_live_bytes(op) for op in instructions]
    layer_by_layer = max(live, default=0)
    most_macs = MAX_EXTRA_MACS * convolution_macs(lowered)
    plans = []
    for index, cut in enumerate(instructions):
        after = max(live[index + 1:], default=0)
        shape = glow.shape_of(cut.dest)
        if after >= layer_by_layer or len(shape) != 4 or 2 * glowll.byte_size(cut.dest.type) >= layer_by_layer:
            continue  # the peak is after this cut, or the cut's output is too large to hold beside a patch
        try:
            stage = stage_of(cut)
        except GlowError:
            continue  # a stage that cannot run patch by patch
        if len(stage) < 2:
            continue
        axes = (1, 2) if isinstance(cut, WINDOWED) and glow.is_nhwc(cut) else (2, 3)
        channels = shape[3] if axes == (1, 2) else shape[1]
        previous = layer_by_layer
        for patches in range(2, min(shape[axes[0]], shape[axes[1]], MAX_PATCHES) + 1):
            cost = patch_cost(cut, patches)
            held = max(cost.stage_bytes, after)
            if cost.extra_macs > most_macs or held >= previous:
                break  # more patches cost more, and hold no less
            plans.append((patch_cycles(cost), held, index, patches, cost.extra_macs,
                          f"{channels}x{shape[axes[0]]}x{shape[axes[1]]}"))
            previous = held
        if previous == layer_by_layer and plans:
            break  # not even 2 x 2 patches pay here: a deeper cut would recompute more
    smallest = layer_by_layer
    for cycles, held, index, patches, macs, layer in sorted(plans):
        if held < smallest:
            smallest = held
            yield PlanCandidate(f"patched up to instruction {index} ({layer}), {patches} x {patches} patches",
                                patches=(str(index), patches), estimate=lambda _, cycles=cycles: cycles,
                                extra_macs=macs)


PLAN_FAMILIES: list[Callable[[ModuleOp], Iterator[PlanCandidate]]] = [layer_by_layer_and_in_place, patched_plans]
"""The candidate generators (see the module doc)."""


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


def choose_plan(module: ModuleOp, ram_size: int | None,
                lower: Callable[[ModuleOp, int, tuple[str, int] | None], ModuleOp],
                families: Sequence[Callable[[ModuleOp], Iterator[PlanCandidate]]] | None = None
                ) -> tuple[ModuleOp, PlanChoice]:
    """The lowered module of the fastest candidate that fits `ram_size` (None: the first);
    `lower(module, in_place, patches)` runs the glowll stage on a module (a copy: candidates
    start from the same graph); `families` (default `PLAN_FAMILIES`) the candidates' generators."""
    tried: list[tuple[Callable, str, int]] = []  # (family, candidate, bytes) of the candidates that do not fit
    best: tuple[ModuleOp, PlanChoice] | None = None
    for family in PLAN_FAMILIES if families is None else families:
        for candidate in family(module):
            lowered = lower(module.clone(), candidate.in_place, candidate.patches)
            function = next(op for op in lowered.body.block.ops if isinstance(op, glowll.FunctionOp))
            cost = (candidate.estimate or extra_cycles)(function)
            choice = PlanChoice(candidate.name, ram_of(function), cost, ram_size, candidate.extra_macs)
            if ram_size is None:
                return lowered, choice
            if choice.ram <= ram_size:
                if best is None or choice.extra_cycles < best[1].extra_cycles:
                    best = lowered, choice
                break  # a family yields its candidates cheapest first: the first that fits is its best
            if len(tried) >= 2 and tried[-2][0] is family and choice.ram >= tried[-1][2] >= tried[-2][2]:
                break  # twice no byte saved: the family's changes are not where the peak is
            tried.append((family, candidate.name, choice.ram))
        if best is not None and best[1].extra_cycles == 0:
            return best  # nothing is faster than a free plan
    if best is None:
        _, name, ram = min(tried, key=lambda t: t[2])
        raise GlowError(f"the bundle does not fit the target's RAM: -ram-size {ram_size:,} B, and no plan fits (the "
                        f"smallest, {name}, needs {ram:,} B: inputs/outputs and activations); nothing "
                        f"written")
    return best
