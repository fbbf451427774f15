"""Which convolutions get packed int16 filters (and which FullyConnected int16 weight pairs)
when flash is a budget, not an afterthought.

A packed filter (`layout.pack_filter`) holds int16 pairs where the model holds int8 levels:
twice the bytes at least, and more where a row plan keeps the weight words of every tiling of
a row (a 3x3 convolution of 64 input channels on row pairs: 12 times its int8 bytes). The
layers left out keep the DSP kernels on int8 filter words where a kernel reads them (gathered
products and strided pointwise rows: `layout.int8_filter_words`, 1x the int8 bytes, about
0.1 cycle a MAC more, `INT8_WORDS_EXTRA_CYCLES_PER_MAC`), else their int8 filters and the
generic int8 kernels (bit-identical outputs either way, 3.3 cycles a MAC more).
`glowll-select-arm-dsp-kernels` takes two budgets on the module's constants:

* `constant_ratio` (`glow-compile`'s default on a core with the DSP extension and no
  Helium: `DEFAULT_CONSTANT_RATIO`; for a model it quantizes from a profile, on every such
  core: `GLOW_CONSTANT_RATIO`, Glow's own constants): at most this many times the constants
  the module holds with every filter int8, or above a ratio of 1 `SMALL_MODEL_SLACK` bytes
  more, whichever is larger;
* `flash_size` (`-flash-size`, or a `-board` preset's flash): the flash less `CODE_BUDGET`
  bytes kept for the code; when given it replaces the ratio, and when even int8 filters do not
  fit, compilation stops with one line (`GlowError`).

Within the budget, each layer's packing is worth its estimated cycles saved (`saved_cycles`)
per extra byte; layers are packed from the best ratio down while they fit (`choose_packed`),
so the fastest choice that fits is taken layer by layer. A FullyConnected that cannot take
output pair words (`fully_connected.OUTPUT_PAIRS`, 1x the bytes, as fast) is ranked among them
for int16 weight pairs (`fully_connected.WEIGHT_PAIRS`, twice its int8 bytes,
`weight_pairs_saved_cycles`).
"""

from __future__ import annotations

from glowmlir.transforms.flash_budget import (  # noqa: F401  (the budget itself is target-neutral)
    CODE_BUDGET,
    GLOW_CONSTANT_RATIO,
    SMALL_MODEL_SLACK,
    PackingCost,
    choose_packed,
    constants_budget,
    int8_constants,
)

DEFAULT_CONSTANT_RATIO = 1.25
"""The constants of a default build for a DSP core (Cortex-M4, M7, M33) at most 1.25 times the
model's int8 weights (issue 37's bound). The layers without int16 pairs keep the DSP kernels
on int8 filter words (`layout.int8_filter_words`; only row-pairs and depthwise layers fall to
the generic kernel, so those are packed first), a few percent slower a layer than int16 pairs
(no `LDRD` of two weight words, two `SXTB16`s a word). Keyword spotting at 1.25x packs its
depthwise filters only (35,904 B of constants, 1.24x; 56,128 B at 2.0): M4 3,851,239 cycles,
M7 2,467,303 (2,369,412 at 2.0; 2,543,029 before the straight int8-word products loaded the
weight word ahead, `GatheredProduct.interleaved_int8_words`), within issue 37's 4.1M and
2.5M; every MLPerf Tiny row in docs/arm-dsp-kernels.md. `-flash-size` (or a board's) spends
exactly what the flash allows."""

SAVED_CYCLES_PER_MAC = 3.3
"""Estimated cycles the DSP kernels save a multiply-accumulate over the generic int8 kernel: the
fitted figures of `glow-choose-conv-pool-kernels`' cost model (cmsis_nn/conv_pool_costs.py),
5.384 cycles a MAC for the generic kernel (M3) and 2.064 for our DSP row kernels (M4; their
gathered product 1.262, which this leaves as a margin)."""


INT8_WORDS_EXTRA_CYCLES_PER_MAC = 0.1
"""Estimated cycles a multiply-accumulate costs more on int8 filter words
(`layout.int8_filter_words`: one load and two `SXTB16`s a channel pair and block where int16
pairs take one `LDRD`, and no doubled accumulators) than on int16 pairs: tests/unit/
test_arm_dsp_int8_words.py's layers on the M4 took 0.086-0.13 cycles a MAC more (3-6%), on
the M7 0.05-0.13."""


UNCENTRED_WORDS_EXTRA_CYCLES_PER_MAC = 0.3
"""Estimated cycles a multiply-accumulate costs more on int8 filter words of an asymmetric
filter's own levels (`select_kernels.FilterPacking.uncentred_words`: each gathered pixel's sum
besides) than on int16 pairs: tests/unit/test_arm_dsp_int8_words.py's asymmetric layers took
8-28% more cycles on the M4 and M7 (0.1-0.4 a MAC), the layers of few output channels most.
With 0.1 the CIFAR-sized net's default build left its 144-tap pooled layer on them for its
depthwise one's pairs: 2.7% more cycles on the M4."""


def saved_cycles(macs: int, int8_words: bool = False, uncentred: bool = False) -> int:
    """Estimated cycles a convolution of `macs` multiply-accumulates saves on packed int16
    pairs: over the generic kernel, or (`int8_words`) over its int8 filter words
    (`uncentred`: of the model's asymmetric levels)."""
    if not int8_words:
        return round(SAVED_CYCLES_PER_MAC * macs)
    return round((UNCENTRED_WORDS_EXTRA_CYCLES_PER_MAC if uncentred else INT8_WORDS_EXTRA_CYCLES_PER_MAC) * macs)


FC_PAIRS_SAVED_CYCLES_PER_MAC = 0.2
"""Estimated cycles a FullyConnected's multiply-accumulate saves on int16 weight pairs
(`fully_connected.WEIGHT_PAIRS`: a load and an `SMLAD` a pair) over its int8 weight words (a
load, two `SXTB16`s and two `SMLAD`s for two pairs): the anomaly detector's 128 -> 128 layers
(gathered rows, blocks of four) took 26,486 -> 22,931 estimated cycles on the M4 (0.22 a MAC)
and 17,270 -> 13,998 on the M7 (0.20)."""


def weight_pairs_saved_cycles(macs: int) -> int:
    """Estimated cycles a FullyConnected of `macs` multiply-accumulates saves on int16 weight pairs."""
    return round(FC_PAIRS_SAVED_CYCLES_PER_MAC * macs)
