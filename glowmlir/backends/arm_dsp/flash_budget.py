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
  bytes kept for the code (at least the int8 filters: the code then gets what they leave);
  when given it replaces the ratio, and when even the int8 filters do not fit the flash,
  compilation stops with one line (`GlowError`).

Within the budget, each layer's packing is worth its estimated cycles saved (`saved_cycles`)
per extra byte; layers are packed from the best ratio down while they fit (`choose_packed`),
so the fastest choice that fits is taken layer by layer. A FullyConnected that cannot take
output pair words (`fully_connected.OUTPUT_PAIRS`, 1x the bytes, as fast) is ranked among them
for int16 weight pairs (`fully_connected.WEIGHT_PAIRS`, twice its int8 bytes,
`weight_pairs_saved_cycles`).

The code is a budget too (`CODE_BUDGET`, issue 37; with `flash_size`, the flash the constants
leave: `code_budget`): a speed-first build takes every layer's fastest variant, and when its
code, measured, comes out over the budget (`compiler.compile_module` builds it again, telling
the selection the excess: `code_excess`), the selection prices each layer's size-first kernel,
bytes of code freed against estimated cycles lost (`looped_depthwise_cost`,
`size_first_fully_connected_cost`), and takes those of fewest cycles a byte until the bytes
freed cover the excess (`choose_size_first`; docs/code-size.md has visual wake words' layers,
each form measured).
"""

from __future__ import annotations

from glowmlir.transforms.flash_budget import (  # noqa: F401  (the budget itself is target-neutral)
    CODE_BUDGET,
    GLOW_CONSTANT_RATIO,
    SMALL_MODEL_SLACK,
    UNMEASURABLE_CYCLES,
    UNMEASURABLE_SHARE,
    PackingCost,
    SizeFirstCost,
    choose_packed,
    choose_size_first,
    code_budget,
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


LOOPED_PLANE_BYTES_PER_OUTPUT = 40
"""Bytes of code a depthwise plane unrolled whole (`depthwise.unrolls_plane`) takes more an
output than its looped rows (`depthwise.UNROLLED_PLANE_OUTPUTS` says about 50): visual wake
words' 6 x 6 planes 1,478 and 1,348 bytes (36 outputs), its 3 x 3 one 370 (9), M4 and M7."""

LOOPED_PLANE_CYCLES_PER_OUTPUT = 2.5
"""Estimated cycles an output of each channel costs more on a plane's looped rows than on its
unrolled ones (a bound on both cores): visual wake words' 6 x 6 x 64 stride-2 layer on the M7
41,210 -> 45,948 (2.1 an output), its 3 x 3 x 128 one 23,607 -> 26,285 (2.3), its 6 x 6 x 128
stride-1 ones 2.0 on the M4, 0.9 on the M7."""

LOOPED_ROW_BYTES_PER_TILE = 230
"""Bytes of code a tile of a depthwise row taken in straight-line code (`depthwise.
straight_row_tiles`) takes more than the loop over them, a tile less: visual wake words'
48 -> 24 (six tiles of four) and 24 -> 12 (three) stride-2 layers on the M4, 1,396 and 574."""

LOOPED_ROW_CYCLES_PER_TILE = {1: 34, 2: 7}
"""Estimated cycles a tile of a depthwise row costs more looped than in straight-line code
(`depthwise.straight_row_tiles`), by stride: the M4's 24 x 24 x 32 stride-1 layer 376,026 ->
454,395 (34 a tile: its constant columns save each tile's addresses), its 48 -> 24 and 24 -> 12
stride-2 ones (ordered planes) 246,443 -> 263,262 (7.3) and 133,963 -> 138,702 (4.1)."""

FULLY_CONNECTED_SIZE_FIRST_BYTES = 170
"""Bytes of code a FullyConnected's kernel frees when built `optsize` (LLVM unrolls and
vectorizes none of its loops again): visual wake words' 256 -> 2 layer 296 -> 122 bytes on the
M4, 300 -> 122 on the M7."""

FULLY_CONNECTED_SIZE_FIRST_CYCLES_PER_MAC = 0.5
"""Estimated cycles a FullyConnected's multiply-accumulate costs more `optsize`: visual wake
words' 256 -> 2 layer 1,085 -> 1,313 on the M4 (0.45 a MAC), 717 -> 600 on the M7."""


def looped_depthwise_cost(out_h: int, out_w: int, channels: int, stride: int, unrolled: bool,
                          straight_tiles: int) -> tuple[int, int]:
    """(bytes of code saved, estimated cycles lost) by a depthwise convolution's size-first
    kernel (`loop_pairs`: its rows looped) over its speed-first one, whose plane is `unrolled`
    whole or whose rows take `straight_tiles` tiles in straight-line code (0: neither; nothing
    saved)."""
    if unrolled:
        outputs = out_h * out_w
        return (LOOPED_PLANE_BYTES_PER_OUTPUT * outputs,
                round(LOOPED_PLANE_CYCLES_PER_OUTPUT * outputs * channels))
    if straight_tiles > 1 and stride in LOOPED_ROW_CYCLES_PER_TILE:
        return (LOOPED_ROW_BYTES_PER_TILE * (straight_tiles - 1),
                LOOPED_ROW_CYCLES_PER_TILE[stride] * straight_tiles * out_h * channels)
    return 0, 0


def size_first_fully_connected_cost(macs: int) -> tuple[int, int]:
    """(bytes of code saved, estimated cycles lost) by a FullyConnected's `optsize` kernel."""
    return FULLY_CONNECTED_SIZE_FIRST_BYTES, round(FULLY_CONNECTED_SIZE_FIRST_CYCLES_PER_MAC * macs)
