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
"""Bytes of flash kept for the code when `flash_size` sets the constants' budget (issue 37's
bound on a default build's code)."""


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
    """The constants' budget in bytes (None: none): `flash_size` less `CODE_BUDGET` when given,
    else `constant_ratio` times the int8 constants (above a ratio of 1, at least
    `SMALL_MODEL_SLACK` over them)."""
    if flash_size:
        budget = flash_size - CODE_BUDGET
        if budget < int8_bytes:
            raise GlowError(f"-flash-size={flash_size}: the constants take {int8_bytes:,} B with every filter int8, "
                            f"more than the {max(budget, 0):,} B the flash leaves beside {CODE_BUDGET:,} B of code")
        return budget
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


CYCLES_PER_CODE_BYTE = 20.0
"""What a byte of code is worth, in estimated cycles of one inference, when a selection pass
weighs a layer's size-first kernel (`choose_size_first`): issue 37's code budget (`CODE_BUDGET`)
is what stops the next speed-ups (a pointwise kernel's that saves 100K cycles for 2 KB pays 50
a byte), so a kernel whose size-first variant frees bytes for fewer cycles a byte takes it.
Visual wake words' (estimated cycles lost a byte freed, M4 / M7): its FullyConnected `optsize`
1.3 / none; its stride-2 depthwise rows looped 12 (48 -> 24) and 8 (24 -> 12) on the M4, its
small unrolled planes looped 3 (6 x 6 x 64) and 7 (3 x 3 x 128) on the M7; left speed first: its
6 x 6 x 128 planes looped (35 / 16, five layers, one kernel), its 24 x 24 x 32 rows (108)."""

SIZE_FIRST_SHARE = 0.005
"""The most estimated cycles the size-first kernels `choose_size_first` takes may cost
together, as a share of the model's multiply-accumulates (a floor of its cycles on a DSP core,
0.7-1.4 cycles a MAC): code freed at almost no cost (visual wake words' 37K of 7.49M MACs)
and none of a small model's few deliberate speed-ups in code undone (the keyword spotter's
unrolled 25 x 5 planes, about 20K cycles each for 5 KB, of its 2.66M MACs: 13K)."""


@dataclass(frozen=True)
class SizeFirstCost:
    """An instruction's size-first kernel (`glowll.CODE_SIZE`, or a backend's looped form):
    the bytes of code it is estimated to free and the estimated cycles of one inference it
    costs (every layer that shares its kernel's)."""

    op: glowll.InstructionOp
    saved_bytes: int
    lost_cycles: int


def choose_size_first(costs: list[SizeFirstCost], macs: int, price: float = CYCLES_PER_CODE_BYTE,
                      share: float = SIZE_FIRST_SHARE) -> set[int]:
    """The `id`s of the instructions to build size first: greedily, fewest cycles lost a byte
    freed first, those that cost at most `price` cycles a byte (0: none) while the cycles lost
    together stay within `share` of the model's `macs`."""
    chosen, lost = set(), 0
    for cost in sorted(costs, key=lambda c: c.lost_cycles / max(c.saved_bytes, 1)):
        if (price > 0 and cost.saved_bytes > 0 and cost.lost_cycles <= price * cost.saved_bytes
                and lost + max(cost.lost_cycles, 0) <= share * macs):
            chosen.add(id(cost.op))
            lost += max(cost.lost_cycles, 0)
    return chosen
