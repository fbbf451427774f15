"""Constants as a budget: how many bytes a module's constants may take (`constants_budget`)
and which of the layers whose faster kernels take more bytes than their int8 weights get them
(`choose_packed`, most estimated cycles saved per extra byte first). Target-neutral: each
backend's selection pass prices its own layers (`PackingCost`; the Arm DSP cores'
`backends.arm_dsp.flash_budget`, the AVX-512 VNNI host's padded filters in
`backends.x86.select_kernels`).
"""

from __future__ import annotations

from dataclasses import dataclass

from glowmlir.dialects import glowll
from glowmlir.dialects.memory import align
from glowmlir.errors import GlowError

GLOW_CONSTANT_RATIO = 1.0
"""The constants of a default build of a model `glow-compile` quantizes itself (Glow's flow:
a float model and `-load-profile`, `PipelineOptions.profile_quantized`), on every target: at
most its int8 weights as they are, which is what Glow's own bundle holds (each weight 64-byte
aligned as Glow aligns it; LeNet 433,088 B, Glow's 433,152), so a Glow user's bundle is no
larger than Glow's. Only the packings of no extra bytes are taken (int8 filter words, a
FullyConnected's output pairs); the layers left take their int8 filters' kernels. A model
quantized before (TFLite int8, QDQ ONNX) keeps `DEFAULT_CONSTANT_RATIO`; `-flash-size` (or a
board's) replaces either."""

SMALL_MODEL_SLACK = 4096
"""Bytes of constants over the int8 weights a small model may always spend on packed filters
at a ratio above 1 (not at `GLOW_CONSTANT_RATIO`): a few KB never stop a model from fitting a
board, and a one-layer net's filter packed is twice its bytes."""

CODE_BUDGET = 48 * 1024
"""Bytes of code a speed-first build may take (issue 37's bound on a default build's code), and
the flash kept for them when `flash_size` sets the constants' budget (`code_budget`)."""


@dataclass(frozen=True)
class PackingCost:
    """A convolution's packed filter (or a FullyConnected's int16 weight pairs): how many bytes
    more than its int8 weights it takes, and the estimated cycles it saves."""

    op: glowll.ConvolutionOp | glowll.FullyConnectedOp
    extra_bytes: int
    saved_cycles: int


def int8_constants(module) -> int:
    """The constant region's bytes with every filter as it is (before packing)."""
    return sum(align(op.byte_size) for op in module.walk() if isinstance(op, glowll.WeightOp))


def constants_budget(int8_bytes: int, constant_ratio: float, flash_size: int) -> int | None:
    """The constants' budget in bytes (None: none): `flash_size` less `CODE_BUDGET` when given
    (a flash that leaves less beside the int8 constants: those, every filter int8, and the code
    the rest, `code_budget`), else `constant_ratio` times the int8 constants (above a ratio of 1,
    at least `SMALL_MODEL_SLACK` over them)."""
    if flash_size:
        if flash_size < int8_bytes:
            raise GlowError(f"-flash-size={flash_size}: the constants take {int8_bytes:,} B with every filter int8, "
                            f"more than the flash")
        return max(flash_size - CODE_BUDGET, int8_bytes)
    if constant_ratio:
        budget = int(constant_ratio * int8_bytes)
        return budget if constant_ratio <= GLOW_CONSTANT_RATIO else max(budget, int8_bytes + SMALL_MODEL_SLACK)
    return None


def choose_packed(costs: list[PackingCost], int8_bytes: int, budget: int | None) -> set[int]:
    """The `id`s of the convolutions to pack: all without a budget, else greedily, most cycles
    saved per extra byte first, each layer that still fits."""
    if budget is None:
        return {id(cost.op) for cost in costs}
    chosen, total = set(), int8_bytes
    for cost in sorted(costs, key=lambda c: -c.saved_cycles / max(c.extra_bytes, 1)):
        if cost.extra_bytes <= 0 or total + cost.extra_bytes <= budget:
            chosen.add(id(cost.op))
            total += max(cost.extra_bytes, 0)
    return chosen


@dataclass(frozen=True)
class SizeFirstCost:
    """An instruction's size-first kernel (`glowll.CODE_SIZE`, or a backend's looped form):
    the bytes of code it is estimated to free and the estimated cycles of one inference it
    costs (every layer that shares its kernel's)."""

    op: glowll.InstructionOp
    saved_bytes: int
    lost_cycles: int


def code_budget(flash_size: int, constant_bytes: int) -> int:
    """The bytes a build's code may take: `CODE_BUDGET`, or (`flash_size` given) the flash the
    constants leave (`constant_bytes`: the bundle's constant region as built)."""
    return flash_size - constant_bytes if flash_size else CODE_BUDGET


UNMEASURABLE_CYCLES = 1000
"""Estimated cycles of one inference below which a kernel's speed-first variant saves nothing
measurable (the code's placement moves a layer by about 2K cycles on the M4, 6K on the M7), so
its size-first one is taken whatever the code's budget (`choose_size_first`): the
FullyConnected of a few hundred MACs `optsize` (visual wake words' 256 -> 2 layer +228 cycles
on the M4, -117 on the M7; the anomaly detector's 128 -> 8 and 8 -> 128 ones -941 on the M4,
+382 on the M7, for 328 B). Only where they are also below `UNMEASURABLE_SHARE` of the
model's multiply-accumulates: in a net of a few thousand MACs a few hundred cycles are a
measurable part (and a small test net keeps the speed-first kernels it tests)."""

UNMEASURABLE_SHARE = 0.005
"""The share of a model's multiply-accumulates (as estimated cycles) below which a speed-first
variant's saving is also too small to count (`UNMEASURABLE_CYCLES`): the anomaly detector's
264K MACs 1,320 cycles, visual wake words' 7.49M 37K (so there the 1,000 decide)."""


def choose_size_first(costs: list[SizeFirstCost], excess: int, macs: int) -> set[int]:
    """The `id`s of the instructions to build size first so that a speed-first build whose code
    was `excess` bytes over its budget (`code_budget`; 0 or less: it fits) fits: fewest
    estimated cycles lost a byte freed first, until the bytes freed reach `excess`. The others
    stay speed first: within the budget a layer keeps its fastest variant. A size-first kernel
    that frees bytes for fewer than `UNMEASURABLE_CYCLES` lost, and fewer than
    `UNMEASURABLE_SHARE` of the model's `macs`, is taken whatever the excess."""
    freeing = [cost for cost in costs if cost.saved_bytes > 0]
    unmeasurable = min(UNMEASURABLE_CYCLES, UNMEASURABLE_SHARE * macs)
    chosen = {id(cost.op) for cost in freeing if cost.lost_cycles < unmeasurable}  # in every build
    freed = 0
    for cost in sorted(freeing, key=lambda c: c.lost_cycles / c.saved_bytes):
        if freed < excess and id(cost.op) not in chosen:
            chosen.add(id(cost.op))
            freed += cost.saved_bytes
    return chosen
