"""The gathered product: a 1x1 convolution of stride 1 (unpooled or pooled globally) or a
WINDOW_PAIRS convolution as a matrix product over its output pixels, each run of pixels'
channels (or windows, `window_gathering`) gathered once as pairs, then multiplied by every
block of output channels."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import i8, i32
from xdsl.ir import SSAValue

from glowmlir.backends.arm_dsp.fully_connected import split_output_pairs
from glowmlir.backends.arm_dsp.instructions import (
    STACK_ALIGNMENT,
    after,
    input_pairs,
    intrinsic,
    load_words,
    offset_pair,
    pixel_channel_pairs,
    smlad,
    weight_pairs,
)
from glowmlir.backends.arm_dsp.layout import (
    BIAS_PAIRS,
    UNROLLED_PAIRS,
)
from glowmlir.backends.arm_dsp.row_kernels import (
    block_weight_index,
    over_channel_pairs,
    store_tile,
)
from glowmlir.backends.arm_dsp.stack_copies import padded_input
from glowmlir.backends.arm_dsp.window_gathering import gather_windows
from glowmlir.dialects import glow, glowll
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import (
    ArithmeticDomain,
    GlobalPool,
    Row,
    StoredElement,
    Window,
    load_word,
)
from glowmlir.lowering.requantization import LEFT_SHIFT_BITS

GATHERED_PIXELS = (4, 2, 1)
GATHER_BYTES = 4096
"""A pointwise convolution of stride 1 gathers the channels of the first count of pixels of
`GATHERED_PIXELS` whose buffer (`gathered_bytes`) fits in `GATHER_BYTES` of stack (one pixel
at least)."""


SLOT_WORDS = 4
"""The gathered words of a pair of pixels for one channel pair lie in a slot of this many
words, two of them used: LLVM's ARM backend pairs two loads into one `LDRD` only where their
run of consecutive words is two long (a longer run it leaves for an `LDM` it then rarely
forms; the weights are laid out for it too, `arm_dsp_layout.INTERLEAVED_BLOCKS`). DS-CNN's
64-channel pointwise layers: 668k instructions each on the M7 with the words side by side,
631k in slots."""


POOLED_GATHER_BYTES = 2304
"""A tiled pool's window of pixels is gathered whole while its words fit this many bytes of
stack (`layout.WINDOW_TAPS`: four pixels of 144 taps); a larger window (int8 filter words of
up to `layout.GATHERED_WINDOW_TAPS` taps, `layout.packing`) is gathered one pixel at a time,
every two blocks of output channels multiplied by it (each gathered word serving four
channels) and folded into the pool's running value of each channel, kept on the stack
(`GatheredProduct.pool_pixels`): LeNet's second convolution (500 taps, 2x2 max pool) takes
1,000 + 200 bytes where its whole window took 8,000; on the M4 2.07 cycles a MAC (2.2 a
block a step), where its int16 row pairs took 1.78."""


def gathered_bytes(pixels: int, pairs: int) -> int:
    """The stack bytes of `pixels` gathered pixels of `pairs` channel pairs."""
    return -(-pixels // 2) * pairs * SLOT_WORDS * 4 if pixels > 1 else pairs * 4


GATHER_STEP_PAIRS = 8
"""A straight gathered product (`UNROLLED_PAIRS`) gathers this many channel pairs a step of its
loop over them (LLVM unrolled four; DS-CNN's pointwise layers on the M7: 45 instructions for
four pairs, 85 for eight; the net's code at -O3 29,062 -> 29,734 B, MobileNetV2's 91,232 -> 96,272 B
for 11.6k instructions fewer), from the last pair down: counted up, LLVM's loop strength reduction
ran an induction variable up to zero and put the gathered words at the loop's whole range
more from its pointer, beyond the +-1020 bytes of `STRD`'s offset for the second pixel pair
(two `STR`s each). DS-CNN's pointwise layers on the M7: 401.5k -> 400.8k instructions each
counted down, 400.2k eight a step."""


REREAD_PAIRS = 20
"""A gathered product looped over at most this many input channel pairs (a size-first build,
`UNROLLED_PAIRS`) reads its buffer through an opaque pointer made in each block of output
channels: else LLVM unrolls the few pairs whole, hoists the buffer's loads out of the block
loop and spills and reloads the words one by one (MobileNetV3-style net on the M7: 4.30M
instructions hoisted, 4.14M reread). Over more pairs the loads stay in the loop anyway."""


STRAIGHT_PIXEL_PAIRS = 2
"""Pixel pairs of a run that the straight-line products (`UNROLLED_PAIRS`) multiply by a block
of output channels together, at most 8 accumulators (4 pixels x 2 channels, in the 14
registers a kernel without a frame pointer has, `STACK_ALIGNMENT`): per channel pair one
`LDRD` of weights serves both pixel pairs' `LDRD`s, three loads for eight `SMLAD`s instead of
four (DS-CNN's 64-channel pointwise layers on the M7: 468k -> 432k instructions each)."""


LOOP_PAIRS = {"dsp": 2, "helium": 1}
"""Channel pairs a step of the gathered product's loop over them in a size-first build
(-Os/-Oz, where LLVM unrolls no loop), by core class (`conv_pool_costs.core_class`): the
selection pass puts it on each convolution as `loop_pairs` (`pipeline.glowll_passes`). On the
M4, M7 and M33 two pairs a step halve the loop's overhead (MobileNetV2's 1x1 expansions at
-Os on the M7: a 16 x 24 x 24 to 96-channel layer alone 2.77M -> 2.52M instructions, a
336-channel one 609k -> 529k; DS-CNN -Os 5.86M -> 5.11M, -Oz 6.42M -> 5.87M). On the M55
(at -Oz, where it keeps the DSP kernels) one pair a step is faster and smaller (DS-CNN -Oz
5.75M -> 4.75M, MobileNetV2 29.8M -> 26.8M instructions). At -O3 LLVM unrolls the loop of one
pair a step itself (two a step: MobileNetV3-style's 88-channel projection 143k -> 155k)."""


BLOCKED_PIXELS = 4
"""A speed-first build's gathered product of more channel (or tap) pairs than `UNROLLED_PAIRS`
(the selection pass marks it `blocked_pixels`, `select_kernels`) multiplies a run of this many
pixels by a block of two output channels in one loop over the pairs (`GatheredProduct.blocked_pixels`): eight
accumulators, each block's weight pair (an int8 word widened by two `SXTB16`s, or an int16
pair) serving four pixels instead of two."""

WEIGHTS_AHEAD = "weights_ahead"
"""The microkernel parameter of a blocked product (`BLOCKED_PIXELS`) on a dual-issue core (the
Cortex-M7; `select_kernels.SelectArmDspKernels.single_issue` false): each pair's weight words are
loaded during the pair before, after its third pixel's first product, and the fourth pixel's
second product follows (`GatheredProduct.blocked_pixels`). In the single-issue order (the block's
weight words loaded and widened at each pair's start) the M7 waited on the load and the `SXTB16`,
and LLVM spilled the weight pointer, reloading it from the stack every pair (an address chain of
two loads): visual wake words' 128 -> 128 pointwise loop on the M7, 16 pairs a step, 190 -> 170
cycles (llvm-mca -mcpu=cortex-m7; the ideal schedule 147, one `SMLAD` a cycle 128); the whole
model 7,314,863 -> 7,086,994 estimated cycles. The first two pixels' words loaded apart (LLVM
joined them into an `LDRD`, which the M7 issues alone, no `SMLAD` beside it): 170 -> 162 cycles,
the model 6,974,705. Loading the third and fourth pixels' words only after the first two pixels'
products too: 8.89M."""

PIPELINED_LOADS = "pipelined_loads"
"""The microkernel parameter of an unpooled straight gathered product (`UNROLLED_PAIRS`) of int16
pairs on a single-issue core (the Cortex-M4 and M33; `select_kernels.SelectArmDspKernels.single_issue`):
each pair's two weight words and the first pixel pair's two words are four
`LDR`s in a row (`GatheredProduct.pipelined_int16_pairs`), not two `LDRD`s: the M4 pipelines
neighbouring single loads (four: 2 + 1 + 1 + 1 cycles, where two `LDRD`s take 3 + 3), 16 cycles
a pair of 8 `SMLAD`s instead of 17. Visual wake words on the M4 10,740,438 -> 10,575,213
estimated cycles (its 32 -> 32 and 32 -> 64 pointwise layers), code 44,718 -> 46,182 B. On the
M7 (6,667,723 -> 6,645,595) its code went over 48 KB (47,912 -> 49,272 B: a 32-bit `LDR.W` for
many of the loads): not there."""

BLOCKED_GATHER_BYTES = 4608
"""The stack a blocked product's gathered pixels may take (`GatheredProduct.blocked_pixels`: 16 bytes a pair):
ResNet-8's 3x3 convolutions of 64 input channels (288 tap pairs) gather four pixels."""

BLOCKED_STEP_PAIRS = (16, 12, 8)
"""Pairs a step of a blocked product's loop: the first of these that divides the pairs (else the
last, the rest after the loop), at constant offsets from the step's two pointers (the gathered
words and the block's weight words), both advanced once a step through an opaque value (else
LLVM derived them from one induction variable and spent a register more). On the M4, ResNet-8's
16-channel 3x3 layer (72 tap pairs) on int8 filter words: 1.88 cycles a MAC at 4 pairs a step,
1.81 at 8, 1.68 at 12, 1.70 at 16 (8 pairs left after the loop), 1.66 at 24; a 128-channel
pointwise layer (64 pairs): 1.62 at 4, 1.50 at 8, 1.42 at 16. A step of 2: 2.0 and 2.05."""


BLOCKED_STRAIGHT_PAIRS = 64
"""A blocked product of at most this many pairs takes them all in straight-line code, no loop:
the loop's end, its two advancing pointers and its eight totals took 15 registers, and LLVM
kept two totals on the stack, loaded and stored each step. Visual wake words' 128 -> 128
pointwise layers (M4 / M7 estimated cycles, each): 746.8k -> 708.3k / 482k -> 405k; the model
11.53M -> 11.30M / 7.31M -> 6.86M for 4.5 KB of code. Its 256 -> 256 layer's 128 pairs
straight too: 5k cycles fewer on the M4 for 6 KB more code (50.3 KB, over 48 KB)."""


def blocked_step_pairs(pairs: int) -> int:
    """Pairs a step of a blocked product's loop over `pairs` pairs (`BLOCKED_STEP_PAIRS`; all of
    them, straight, up to `BLOCKED_STRAIGHT_PAIRS`)."""
    if pairs <= BLOCKED_STRAIGHT_PAIRS:
        return pairs
    return next((step for step in BLOCKED_STEP_PAIRS if pairs % step == 0), BLOCKED_STEP_PAIRS[-1])


UNROLLED_CHANNEL_PAIRS = 128
"""A straight gathered product (`UNROLLED_PAIRS`), unpooled, whose output channels times input
channel (or tap) pairs are at most this many (the code of its loop over blocks of output channels
grows with both), of a constant per-channel requantization table takes a full run's blocks of output channels in
straight-line code, not in a
loop over them, each
channel's requantization numbers compile-time constants (`QuantizedArithmetic.channels_inlined`):
its output step `SMMLAR`, `SSAT` with the division's shift folded in, `STRB`, its multiplier and
rounding terms immediates, where a loaded shift took an `ASR` an output and the rounding terms
four instructions a channel. Narrow layers have few input channels and so most outputs a MAC:
visual wake words' 8 -> 16 and 16 -> 32 pointwise layers, its 3 -> 8 stem."""

STEP_BLOCKS = 2
"""A speed-first build's straight gathered products (`UNROLLED_PAIRS`) over a full run of pixels
take this many blocks of output channels a step of the loop over blocks where the blocks divide
by it (`INTERLEAVED_BLOCKS`, their weight words side by side for `LDRD`). Four blocks a step
(two such groups, the loop's overhead paid once for four) bought too little for its code,
which issue 37 bounds at 48 KB: DS-CNN on the M7 -O3 2,310,230 -> 2,297,960 instructions for
code 49.1 KB -> 63.3 KB; measured again on the M4 (estimated cycles, 2026-11-29), MLPerf Tiny's
keyword spotting model 3,734,141 cycles at 72,746 B of code with four, 3,740,891 at 57,266 B
with two; visual wake words 14,363,427 at 74,494 B, 14,388,383 at 59,210 B."""


def straight_step_blocks(blocks: int, interleaved: int) -> int:
    """Blocks of output channels a step of a straight gathered product's loop over a full run
    takes: `STEP_BLOCKS` where `blocks` divide by it, else the `interleaved` ones."""
    return STEP_BLOCKS if blocks % STEP_BLOCKS == 0 and STEP_BLOCKS % interleaved == 0 else interleaved


def gathered_product(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view,
                     block: int) -> None:
    """A 1x1 convolution of stride 1, unpooled or with a global pool (`glow.pools_globally`), or
    a WINDOW_PAIRS convolution, as a matrix product over the output pixels, register-blocked
    as CMSIS-NN's `arm_nn_mat_mult_kernel_s8_s16`.

    Per run of (up to) four pixels (`GATHERED_PIXELS`), their input channels (or the taps of
    their windows, `gather_windows`) are gathered once, as int16 pairs less the input offset,
    into a stack buffer of `[pixel pairs, pairs, SLOT_WORDS]` words: for each pair, the words
    of a pair of pixels side by side, as the weight words of a block of output channels are.
    Every block of output channels then takes the pixels two at a time: per pair, one `LDRD`
    of the two pixels' words and one of the block's weight words, 2 x `block` `SMLAD`s into
    as many accumulators. The gathering is paid once for all output channels. A global pool
    folds each output level into a stack sum (or maximum) per channel, averaged once at the
    end; a pool whose windows tile the output (`TiledPool`) makes each run one pool window's
    pixels, pooled in registers (`GatheredProduct` holds the kernel's buffers and choices)."""
    GatheredProduct(b, domain, op, view, block).emit()


def flat_pixels(whole: View) -> View:
    """An [N, C, H, W] view as [N, C, H * W]."""
    n_size, channels, height, width = whole.shape
    pixels = height * width
    return whole.reshaped((n_size, channels, pixels), (channels * pixels, pixels, 1))


@dataclasses.dataclass
class BlockStep:
    """What the blocks of output channels a `GatheredProduct.block_products` call takes share:
    their channels, the totals they start from, their weight words (straight: one view each,
    [pair, channel, 2]) and the gathered words as their looped products read them."""

    o_blocks: list[Index]
    channels: list[Index]
    starts: list[SSAValue]
    weights: list[View] | None
    reread: View

    @property
    def width(self) -> int:
        return len(self.channels)


class GatheredProduct:
    """The gathered product of one convolution (`gathered_product`): its views, its run of
    pixels, its stack buffer of gathered words, its fused pool (global, `GlobalPool`, or
    tiled, `TiledPool`) and whether its products are straight-line code (`UNROLLED_PAIRS`) or
    a loop over the channel pairs (a size-first build's `loop_pairs` a step)."""

    def __init__(self, b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view, block: int):
        self.b, self.domain, self.op, self.block = b, domain, op, block
        self.dest, self.packed, self.bias = flat_pixels(view(op.dest)), view(op.filter), view(op.bias)
        self.windows = op.filter_shape.get_values()[2:] != (1, 1)
        self.src = view(op.input) if self.windows else flat_pixels(view(op.input))
        self.n_size, self.out_c, _ = self.dest.shape
        self.pixels = int(np.prod(glow.convolution_shape(op)[2:]))  # before a fused pool
        self.biases_in_filter = op.microkernel.parameter("biases_in_filter") is not None
        self.first_pair = BIAS_PAIRS if self.biases_in_filter else 0  # the weight words' first pair
        self.pairs = pairs = self.packed.shape[1] - self.first_pair
        self.run = next((count for count in GATHERED_PIXELS if gathered_bytes(count, pairs) <= GATHER_BYTES), 1)
        self.tiles = None if op.pool is None or glow.pools_globally(op) else TiledPool(b, domain, op, view(op.dest))
        self.pool_pixels = None  # one pixel of a tiled pool's window a run: the channels' pool so far
        self.run_outputs = None  # unpooled: the run's first pixel's output (of channel 0), made opaque a run
        if self.tiles is not None:  # one pool window's pixels a run
            self.pixels, self.run = self.tiles.windows, self.tiles.pixels
            if gathered_bytes(self.run, pairs) > POOLED_GATHER_BYTES:
                self.run = 1
                self.pool_pixels = View.contiguous(b.alloca(self.out_c, i32, STACK_ALIGNMENT), (self.out_c,),
                                                   element_type=i32)
        self.blocked = (op.microkernel.parameter("blocked_pixels") is not None and self.tiles is None
                        and block == 2 and 4 * BLOCKED_PIXELS * pairs <= BLOCKED_GATHER_BYTES)
        self.weights_ahead = self.blocked and op.microkernel.parameter(WEIGHTS_AHEAD) is not None
        self.single_issue_blocks = self.blocked and not self.weights_ahead
        """A blocked product on a single-issue core (`select_kernels` gives every blocked product on a
        dual-issue core `WEIGHTS_AHEAD`): its int8 pairs' pixels loaded in halves (`pair_products`),
        its runs' outputs stored in turn (`stored_in_turn`)."""
        self.pipelined_loads = op.microkernel.parameter(PIPELINED_LOADS) is not None
        self.dead_blocks = self.blocked and getattr(getattr(domain, "requantization", None), "scaled_accumulators",
                                                    False)
        """A blocked product whose requantization table gives each dead channel (weights 0, one
        level for every input, `fold_constant_channels`) the left shift 0
        (`select_kernels.accumulator_shift_table`): a block of two such channels skips its
        products (`live_blocked_pixels`)."""
        self.stored_channels = self.dead_blocks and domain.requantization.stored_channels
        """Its channels in an order of their own (`requantization.STORED_CHANNELS`, dead ones two
        to a block: `select_kernels.dead_channel_order`), each stored to the channel its table word
        names (`stored_rows`)."""
        if self.blocked:  # [pair][pixel] words: a pair's four pixels in a run of four words (LDRs)
            self.run = BLOCKED_PIXELS
            self.gathered = View(b.alloca(BLOCKED_PIXELS * pairs, i32, STACK_ALIGNMENT),
                                 (BLOCKED_PIXELS // 2, pairs, 2), (2, BLOCKED_PIXELS, 1), 0, i32)
        else:
            slot = SLOT_WORDS if self.run > 1 else 1
            self.gathered = View.contiguous(b.alloca(gathered_bytes(self.run, pairs) // 4, i32, STACK_ALIGNMENT),
                                            (-(-self.run // 2), pairs, slot), element_type=i32)
        self.x_offset = None if op.folded_input_offset is not None else offset_pair(b, domain.input_offset)
        self.pool = None if op.pool is None or self.tiles is not None else GlobalPool(b, domain, op, view(op.dest))
        loop_pairs = op.microkernel.parameter("loop_pairs")
        self.loop_pairs = loop_pairs.value.data if loop_pairs is not None else None  # a size-first build's
        # output pair words (`layout.output_pair_filter_words`): per word, `SXTB16` and raw
        self.output_pairs = op.microkernel.parameter("output_pairs") is not None
        # blocked from fewer pairs on a dual-issue core (`layout.straight_pairs`)
        self.straight = pairs <= UNROLLED_PAIRS and self.loop_pairs is None and not self.blocked
        self.unrolled_channels = self.straight and self.tiles is None and self.pool is None \
            and self.out_c * pairs <= UNROLLED_CHANNEL_PAIRS \
            and getattr(getattr(domain, "requantization", None), "numbers", None) is not None
        self.step = self.loop_pairs or 1
        self.padded = padded_input(b, domain, op, self.src) if self.windows else None
        filter_type = op.filter.type.element_type
        self.weight_offset = 0 if self.packed.element_type != i8 or filter_type.per_channel else filter_type.offset
        # int8 words of the model's levels (`select_kernels.FilterPacking.uncentred_words`): each
        # gathered pixel's zero point times its sum, taken off its totals (`window_corrections`)
        self.corrections = None if not self.weight_offset else \
            View.contiguous(b.alloca(self.run, i32, STACK_ALIGNMENT), (self.run,), element_type=i32)

    def emit(self) -> None:
        """Every image: its runs of pixels gathered and multiplied, then the last pixels of
        the plane (two, one) and the global pool's averages."""
        b, pixels, run, tiles = self.b, self.pixels, self.run, self.tiles
        with b.loop(0, self.n_size) as n:
            if self.pool is not None:
                self.pool.start()
            if self.padded is not None:
                self.padded.copy(n.index)
            with b.loop(0, pixels // run if tiles is None else pixels) as t:
                x0 = b.mul(t.index, run) if tiles is None else t.index  # a tiled pool's: its window
                if self.pool_pixels is not None:  # the window's pixels one at a time
                    for k in range(tiles.pixels):
                        self.gather(n.index, x0, 1, first_pixel=k)
                        self.multiply(n.index, x0, 1, pool_pixel=k)
                else:
                    self.gather(n.index, x0, run)
                    self.multiply(n.index, x0, run)
            tail = pixels % run if tiles is None else 0
            for count in (2, 1):
                if tail >= count:
                    self.gather(n.index, pixels - tail, count)
                    self.multiply(n.index, pixels - tail, count)
                    tail -= count
            if self.pool is not None:
                self.pool.finish(n.index)

    def gather(self, n: Index, x0: Index, count: int, first_pixel: int = 0) -> None:
        """Pixels x0 .. x0 + count - 1 (a tiled pool's: of window x0, from its pixel
        `first_pixel`) into the buffer's first `count` slots (and, with an uncentred filter,
        their `window_corrections`)."""
        b = self.b
        if self.windows:
            pixel_at = None
            if self.tiles is not None:
                pixel = self.tiles.convolution_pixel(x0)
                pixel_at = pixel if not first_pixel else (lambda k: pixel(b.add(k, first_pixel)))
            gather_windows(b, self.domain, self.op, self.src, self.gathered, n, x0, count, self.x_offset, self.padded,
                           pixel_at, looped=self.loop_pairs is not None, by_pixel_pairs=self.straight)
            self.window_corrections(count)
            return

        def channel_pair(carried: list[SSAValue], i: Index, first: Index, second: Index) -> list[SSAValue]:
            loaded = pixel_channel_pairs(b, self.src, [n, first, x0], [n, second, x0], count, self.x_offset)
            for p, pair in enumerate(loaded):
                b.store(pair, self.gathered, [p // 2, i, p % 2])
            return carried

        over_channel_pairs(b, self.src.shape[1], channel_pair, [], downward=self.straight,
                           per_step=GATHER_STEP_PAIRS if self.straight else 1)
        self.window_corrections(count)

    def window_corrections(self, count: int) -> None:
        """With int8 words of the model's levels (zero point z): sum (w - z) x = sum w x - z sum x,
        so each of the `count` gathered pixels' z x (the sum of its gathered pairs, one `SMLAD`
        by (1, 1) a pair), once for every output channel; `outputs` takes it off each total."""
        if self.corrections is None:
            return
        b = self.b
        ones = b.integer(0x00010001)
        for p in range(count):
            with b.loop(0, self.pairs, carried=[b.integer(0)]) as i:
                i.next(smlad(b, b.load(self.gathered, [p // 2, i.index, p % 2]), ones, i.carried[0]))
            b.store(b.int_mul(i.results[0], b.integer(self.weight_offset)), self.corrections, [p])

    def block_weights(self, weights: View, indices: Sequence[Index]) -> list[SSAValue]:
        """The weight words of a block of output channels at `weights[indices]` (`weight_pairs`),
        of output pair words the word widened (channel 0's pair) and raw (`widened`)."""
        if self.output_pairs:
            return self.widened(load_word(self.b, weights, indices, aligned=True))
        return weight_pairs(self.b, weights, indices, self.block)

    def raw_block_weights(self, weights: View, indices: Sequence[Index]) -> list[SSAValue]:
        """The words `block_weights` loads, not yet widened (`widened_block_weights`)."""
        if self.packed.element_type == i8:
            return [load_word(self.b, weights, indices, aligned=True)]
        return load_words(self.b, weights, indices, self.block)

    def widened_block_weights(self, raw: list[SSAValue]) -> list[SSAValue]:
        """`block_weights` of the words `raw_block_weights` loaded."""
        return self.widened(raw[0]) if self.packed.element_type == i8 else raw

    def widened(self, word: SSAValue) -> list[SSAValue]:
        """A block's int8 filter word as the weights its products take: of output pair words,
        `SXTB16` of it (channel 0's pair) and the word as it is (256 w1 + w0 a half: channel 0's
        products plus 256 times channel 1's, `split_output_pairs`); of int8 words, `SXTB16` and
        `SXTB16 ror #8` (each channel's pair)."""
        if self.output_pairs:
            return [intrinsic(self.b, "sxtb16", word), word]
        return list(input_pairs(self.b, word, None))

    def products(self, totals: list[SSAValue], inputs: list[SSAValue], weights: list[SSAValue]) -> list[SSAValue]:
        """`totals` ([pixel][channel]) plus each pixel's input word times each channel's weight word."""
        totals = list(totals)
        for k, word in enumerate(inputs):
            for j, weight in enumerate(weights):
                totals[k * len(weights) + j] = smlad(self.b, word, weight, totals[k * len(weights) + j])
        return totals

    def raw_first_products(self, totals: list[SSAValue], inputs: list[SSAValue],
                           weights: list[SSAValue]) -> list[SSAValue]:
        """`products` of output pair words (`widened`: the `SXTB16` of the word, then the raw word)
        with every input's raw product first: those wait only on the loads, so the `SXTB16` issues
        beside one of them on a dual-issue core."""
        totals = list(totals)
        for j in reversed(range(len(weights))):
            for k, word in enumerate(inputs):
                totals[k * len(weights) + j] = smlad(self.b, word, weights[j], totals[k * len(weights) + j])
        return totals

    def constants_anew(self, after_value: SSAValue):
        """Straight, the requantization's constants made anew once `after_value` is computed
        (`constants_through`): the straight products fill the registers, and LLVM reloaded
        the rounding terms once an output (DS-CNN's pointwise layers on the M7: 414k -> 409k
        instructions each, two blocks a step). Looped (a size-first build), where they may
        stay in registers, their copies cost moves: DS-CNN on the M7 -Oz 5.48M -> 5.86M."""
        if not self.straight:
            return contextlib.nullcontext()
        return self.domain.constants_through(lambda value: opaque_after(self.b, value, after_value))

    def multiply(self, n: Index, x0: Index, count: int, pool_pixel: int | None = None) -> None:
        """Every output channel of the `count` gathered pixels from x0: looped, one block of
        output channels a step (`block_products`); straight, `multiply_straight`.
        `pool_pixel`: the one gathered pixel is that pixel of tiled pool window x0
        (`pool_pixels`); it, and an unpooled plane's last single pixel, take two blocks a
        step (each gathered word serving four channels: visual wake words' 128 -> 256 layer
        on 3 x 3 on the M4 376.8k -> 368.8k cycles; with a global pool, its 256 -> 256 layer,
        746.6k -> 760.7k: not there). Unpooled, the run's outputs are stored through a pointer to its first
        pixel's made opaque here (`run_outputs`), each store at an immediate offset from its
        channel's row: from the output's base LLVM stored at register offsets and kept the
        run's pixel indices on the stack (random-weight layers on the M4, cycles a MAC:
        256 -> 256 on 3 x 3 1.401 -> 1.286, 128 -> 128 on 6 x 6 1.301 -> 1.269; visual wake
        words M4 12,184,076 -> 12,161,195 cycles, M7 7,618,936 -> 7,539,318)."""
        b = self.b
        self.run_outputs = None if self.pool is not None or self.tiles is not None else \
            b.opaque(b.element(self.dest, [n, 0, x0]))
        if self.straight:
            assert pool_pixel is None, "a window gathered a pixel at a time is never straight"
            self.multiply_straight(n, x0, count)
            return
        if pool_pixel is not None or (count == 1 and self.pool is None):  # two blocks a step: a word, 4 channels
            blocks = self.out_c // self.block
            with b.loop(0, blocks // 2) as two:
                first = b.mul(two.index, 2)
                self.block_products(n, x0, count, [first, b.add(first, 1)], None, pool_pixel)
            if blocks % 2:
                self.block_products(n, x0, count, [blocks - 1], None, pool_pixel)
            return
        with b.loop(0, self.out_c // self.block) as o_block:
            self.block_products(n, x0, count, [o_block.index], None, pool_pixel)

    def multiply_straight(self, n: Index, x0: Index, count: int) -> None:
        """Straight, one loop step takes the blocks whose weight words are interleaved (over a
        full run, `STEP_BLOCKS` of them: two such groups), each reading them (and its biases,
        `biases_in_filter`) through a pointer of its own made opaque there (from one pointer,
        LLVM would see runs of four words and form no `LDRD`, `SLOT_WORDS`); the loop carries
        the step's pointer, advanced once the step's products are done (else LLVM advanced it
        among the last block's products and spilled). Carrying the output rows' pointer too
        took 0.1% fewer instructions on DS-CNN, 0.5% more on MobileNetV3-style on the M7.
        Unpooled, a block's products start after the stores of the block before (`after`):
        else LLVM began them among its requantization and spilled (DS-CNN's stem on the M7,
        its windows gathered by pixel pairs: 267.7k -> 264.3k instructions; with a tiled pool
        the CIFAR-sized net's stem took 3.4k fewer on the M7, 3.1k more on the M4). A single
        pixel (a plane's last, 125 = 31 x 4 + 1) takes the step's blocks together, one input
        word for four weight words a channel pair (DS-CNN's pointwise layers on the M7:
        402.0k -> 401.5k instructions each, its last pixel 4.5k -> 4.0k)."""
        b, packed = self.b, self.packed
        interleaved = packed.shape[2]
        together = straight_step_blocks(self.out_c // self.block, interleaved) if count == self.run else interleaved
        groups = together // interleaved  # of interleaved blocks, a step

        def blocks_step(step: Index, step_words: SSAValue) -> SSAValue:
            """The step's blocks; the next step's weight pointer."""
            if count == 1 and self.tiles is None:  # one pixel: the step's blocks together
                o_blocks, weights = zip(*(self.step_block(step, step_words, together, h)
                                          for h in range(together)), strict=True)
                results = self.block_products(n, x0, count, list(o_blocks), list(weights))
            else:
                for h in range(together):
                    o_block, words = self.step_block(step, step_words, together, h)
                    results = self.block_products(n, x0, count, [o_block], [words])
            return b.offset_pointer(opaque_after(b, step_words, results[-1]), groups * packed.strides[0],
                                    packed.element_type)

        steps = self.out_c // (self.block * together)
        if self.unrolled_channels and count == self.run:
            step_words = b.element(packed, [0] * 5)
            with self.domain.channels_inlined():
                for step in range(steps):
                    step_words = blocks_step(step, step_words)
            return
        with b.loop(0, steps, carried=[b.element(packed, [0] * 5)]) as blocks:
            blocks.next(blocks_step(blocks.index, blocks.carried[0]))

    def step_block(self, step: Index, step_words: SSAValue, together: int, h: int) -> tuple[Index, View]:
        """Block h of loop step `step` (of `together` blocks, their weight words from
        `step_words`) and its weights, through a pointer made opaque here."""
        b, packed = self.b, self.packed
        interleaved = packed.shape[2]
        if h and self.tiles is None:  # after the block before's stores
            after(b, [])
        offset = h // interleaved * packed.strides[0] + h % interleaved * packed.strides[2]
        block_words = b.opaque(b.offset_pointer(step_words, offset, packed.element_type))
        return b.add(b.mul(step, together), h), View(
            block_words, (packed.shape[1], self.block, 2), (packed.strides[1], packed.strides[3], 1), 0,
            packed.element_type)

    def block_products(self, n: Index, x0: Index, count: int, o_blocks: list[Index],
                       weights: list[View] | None, pool_pixel: int | None = None) -> list[SSAValue]:
        """The blocks `o_blocks` of output channels together (one, or straight, the blocks of a
        step for a single pixel) (straight, their `weights` [pair (the bias pairs first,
        `biases_in_filter`), channel, 2]) at the `count` gathered pixels from x0, their
        outputs stored or pooled; their last totals."""
        b, block = self.b, self.block
        reread = self.gathered
        if self.pairs <= REREAD_PAIRS:
            reread = dataclasses.replace(self.gathered, base=b.opaque(self.gathered.base))
        channels = [b.add(b.mul(o_block, block), j) for o_block in o_blocks for j in range(block)]
        if self.biases_in_filter:
            starts = [word for words in weights for word in load_words(b, words, [0, 0, 0], block)]
        else:
            starts = [self.domain.bias(self.bias, o) for o in channels]
        paired_starts = [starts[j - j % 2] for j in range(len(starts))] if self.output_pairs else starts
        step = BlockStep(o_blocks, channels, paired_starts, weights, reread)
        width = step.width
        pooled = self.tiles is not None or self.pool is not None
        levels_of = [self.domain.output(o, self.dest.element_type) for o in channels] if pooled else []
        folded = [None] * width  # a tiled pool's, per channel: the window's pixels so far
        if pool_pixel:  # the pixels of the window before this one, folded
            folded = [b.load(self.pool_pixels, [o]) for o in channels]
        groups = [(q, min(2, count - 2 * q)) for q in range(-(-count // 2))]
        together = STRAIGHT_PIXEL_PAIRS if self.straight and width * sum(p for _, p in groups) <= 8 else 1
        if self.blocked and count == BLOCKED_PIXELS:
            together = len(groups)
        for first in range(0, len(groups), together):
            group = groups[first:first + together]
            if self.blocked and count == BLOCKED_PIXELS:
                results = self.live_blocked_pixels(step)
            elif self.straight:
                results = self.straight_pixel_pairs(step, group, folded[0])
            else:
                results = self.looped_pixel_pairs(step, group, folded[0])
            if self.output_pairs:  # the second channels' starts loaded anew (not held through the loop)
                after(b, results)
                biases = [self.domain.bias(self.bias, o) for o in channels]
                results = split_output_pairs(b, results, biases * (len(results) // width))
            xs = [2 * q + k for q, in_pair in group for k in range(in_pair)]
            folded = self.outputs(n, x0, channels, results, xs, levels_of, folded)
        if self.tiles is not None:
            for j, o in enumerate(channels):
                if pool_pixel is not None and pool_pixel < self.tiles.pixels - 1:
                    b.store(folded[j], self.pool_pixels, [o])
                else:
                    self.tiles.store(n, o, x0, folded[j], levels_of[j])
        return results

    def straight_pixel_pairs(self, step: BlockStep, group: list[tuple[int, int]],
                             after_totals: SSAValue | None) -> list[SSAValue]:
        """Pixels 2q (and 2q + 1 when `in_pair` is 2) of the run for each (q, in_pair) of
        `group` (`STRAIGHT_PIXEL_PAIRS` at most), every channel pair in straight-line code,
        both streams at constant offsets from pointers made here: their totals
        ([pixel][channel]); read after `after_totals` is computed when given."""
        b, gathered = self.b, self.gathered
        words = View(opaque_after(b, b.element(gathered, [group[0][0], 0, 0]), after_totals),
                     gathered.shape, gathered.strides, 0, gathered.element_type)
        results = step.starts * sum(in_pair for _, in_pair in group)
        if self.packed.element_type == i8 and len(step.weights) == 1 and [n for _, n in group] == [2, 2]:
            return self.interleaved_int8_words(step.weights[0], words, group, results)
        if self.pipelined_loads and self.packed.element_type != i8 and len(step.weights) == 1 and step.width == 2 \
                and [n for _, n in group] == [2, 2]:
            return self.pipelined_int16_pairs(step.weights[0], words, results)
        for i in range(self.pairs):
            weight_words = [word for words in step.weights
                            for word in self.block_weights(words, [self.first_pair + i, 0, 0])]
            first = 0  # the group's first pixel of this pixel pair
            for q, in_pair in group:
                inputs = load_words(b, words, [q - group[0][0], i, 0], in_pair)
                taken = slice(first * step.width, (first + in_pair) * step.width)
                results[taken] = self.products(results[taken], inputs, weight_words)
                after(b, results[taken])
                first += in_pair
        return results

    def pipelined_int16_pairs(self, weights: View, words: View, totals: list[SSAValue]) -> list[SSAValue]:
        """`straight_pixel_pairs` of two pixel pairs (four pixels, `words` based at the first)
        by one block of two channels on int16 pairs, on a single-issue core (`PIPELINED_LOADS`):
        per pair the block's two weight words and the first pixel pair's two words as four
        `LDR`s in a row (the second two after an `after`, so that LLVM joins none into an
        `LDRD`), then the first pixel pair's four `SMLAD`s, the second pair's words (`LDRD`)
        and its four (`after` the totals between)."""
        b = self.b
        totals = list(totals)
        for i in range(self.pairs):
            at_weights = b.element(weights, [self.first_pair + i, 0, 0])
            at_words = b.element(words, [0, i, 0])
            w0 = b.emit(llvm.LoadOp(at_weights, i32, alignment=4))
            x0 = b.emit(llvm.LoadOp(at_words, i32, alignment=4))
            after(b, [])
            w1 = b.emit(llvm.LoadOp(b.offset_pointer(at_weights, 1, i32), i32, alignment=4))
            x1 = b.emit(llvm.LoadOp(b.offset_pointer(at_words, 1, i32), i32, alignment=4))
            totals[:4] = self.products(totals[:4], [x0, x1], [w0, w1])
            after(b, totals[:4])
            totals[4:] = self.products(totals[4:], load_words(b, words, [1, i, 0], 2), [w0, w1])
            after(b, totals[4:])
        return totals

    def interleaved_int8_words(self, weights: View, words: View, group: list[tuple[int, int]],
                               totals: list[SSAValue]) -> list[SSAValue]:
        """`straight_pixel_pairs` of two pixel pairs (four pixels, `words` based at the first)
        by one block of two channels on int8 filter words, each pair's weight word loaded
        ahead: per pair `LDRD` of the first pixel pair's words, the `SXTB16`s of the weight
        word (after the `LDRD`, `opaque_after`), its four `SMLAD`s, `LDRD` of the second
        pair's words, the two of channel 1, the next pair's weight word (`LDR`), the two of
        channel 0 (`after` between the groups). In `straight_pixel_pairs`' order (the weight
        word, widened, at each pair's start, each channel's products in turn) the M7 waited
        on the load and the `SXTB16`s: DS-CNN's 64 -> 64 pointwise loop 889 -> 850 cycles
        (llvm-mca -mcpu=cortex-m7), the model 2,543,029 -> 2,467,303 cycles at
        `DEFAULT_CONSTANT_RATIO` 1.25; on the M4 3,841,158 -> 3,851,239."""
        b = self.b
        totals = list(totals)

        def multiply(pixels: Sequence[tuple[int, SSAValue]], j: int, pair: Sequence[SSAValue]) -> list[SSAValue]:
            for pixel, x in pixels:
                totals[2 * pixel + j] = smlad(b, x, pair[j], totals[2 * pixel + j])
            return [totals[2 * pixel + j] for pixel, _ in pixels]

        raw = load_word(b, weights, [self.first_pair, 0, 0], aligned=True)
        for i in range(self.pairs):
            x0, y0 = load_words(b, words, [0, i, 0], 2)
            pair = self.widened(opaque_after(b, raw, x0))  # its SXTB16s after the LDRD
            after(b, multiply([(0, x0), (1, y0)], 0, pair) + multiply([(0, x0), (1, y0)], 1, pair))
            x1, y1 = load_words(b, words, [group[1][0] - group[0][0], i, 0], 2)
            after(b, multiply([(2, x1), (3, y1)], 1, pair))
            if i + 1 < self.pairs:
                raw = load_word(b, weights, [self.first_pair + i + 1, 0, 0], aligned=True)
            after(b, multiply([(2, x1), (3, y1)], 0, pair))
        return totals

    def live_blocked_pixels(self, step: BlockStep) -> list[SSAValue]:
        """`blocked_pixels`, skipped for a block of two dead channels where the requantization
        table marks them (`dead_blocks`: their totals then the starts, which their numbers ignore)."""
        if not self.dead_blocks:
            return self.blocked_pixels(step)
        b, table = self.b, self.domain.requantization.table
        lefts = functools.reduce(b.int_or, [b.load(table, [1, o]) for o in step.channels])
        if self.stored_channels:  # the left shifts beside the stored channels
            lefts = b.int_and(lefts, b.integer((1 << LEFT_SHIFT_BITS) - 1))
        live = b.int_compare("ne", lefts, 0)
        starts = step.starts * BLOCKED_PIXELS
        products, done = b.new_block(), b.new_block([value.type for value in starts])
        b.emit(llvm.CondBrOp(live, products, [], done, starts))
        b.block = products
        b.emit(llvm.BrOp(done, *self.blocked_pixels(step)))
        b.block = done
        return list(done.args)

    def blocked_pixels(self, step: BlockStep) -> list[SSAValue]:
        """The run's four pixels (`BLOCKED_PIXELS`) by one block of two output channels in a loop
        over the pairs, `BLOCKED_STEP_PAIRS` a step, each from the step's pointers (made opaque
        as they advance): per pair the block's weight pairs (`weight_pairs`), then each pixel
        pair's two words (after the products before, `after`: each group of loads in a run,
        which the M4 pipelines, and the registers held to 14), four `SMLAD`s each. Their totals
        ([pixel][channel]). On int8 filter words, against the separate pixel words of before
        (M4 / M7 cycles a MAC): ResNet-8's 3x3 layers of 16, 32 and 64 channels 1.68 / 1.05,
        1.51 / 0.94, 1.43 / 0.82 -> 1.70 / 0.94, 1.47 / 0.81, 1.36 / 0.76; a 128-channel pointwise
        layer 1.42 / 0.87 -> 1.39 / 0.81."""
        b, packed, gathered = self.b, self.packed, self.gathered
        o_block, = step.o_blocks
        weight_view = View(b.element(packed, block_weight_index(b, packed, o_block, self.first_pair)),
                           (self.pairs, self.block, 2), (packed.strides[1], packed.strides[3], 1), 0,
                           packed.element_type)
        per_step = blocked_step_pairs(self.pairs)

        def pair_products(totals: list[SSAValue], words: View, weights: View, i: int) -> list[SSAValue]:
            totals, weight_words = list(totals), None
            if self.packed.element_type == i8 and self.single_issue_blocks:
                for k in range(2):  # pixels 0 and 2 (k = 0), then 1 and 3
                    after(b, totals[1::2])
                    inputs = [b.load(words, [q, i, k]) for q in range(BLOCKED_PIXELS // 2)]
                    weight_words = weight_words or self.block_weights(weights, [i, 0, 0])
                    for q, word in enumerate(inputs):
                        taken = slice((2 * q + k) * self.block, (2 * q + k + 1) * self.block)
                        totals[taken] = self.products(totals[taken], [word], weight_words)
                return totals
            for q in range(BLOCKED_PIXELS // 2):  # each pixel pair's words after the products before
                after(b, [])
                weight_words = weight_words or self.block_weights(weights, [i, 0, 0])
                taken = slice(2 * q * self.block, (2 * q + 2) * self.block)
                if self.weights_ahead and self.output_pairs:  # the words apart, the raw products first
                    inputs = [b.load(words, [q, i, 0])]
                    after(b, [])  # no `LDRD`, which the M7 issues alone
                    inputs.append(b.load(words, [q, i, 1]))
                    totals[taken] = self.raw_first_products(totals[taken], inputs, weight_words)
                else:
                    inputs = [b.load(words, [q, i, k]) for k in range(2)]
                    totals[taken] = self.products(totals[taken], inputs, weight_words)
            return totals

        def pair_products_ahead(totals: list[SSAValue], words: View, weights: View, i: int, raw: list[SSAValue],
                                last: bool) -> tuple[list[SSAValue], list[SSAValue] | None]:
            """`pair_products` of a dual-issue core (`WEIGHTS_AHEAD`): pair i's weight words
            `raw` were loaded during the pair before; pair i + 1's are loaded here (not after
            the `last` pair of a run), after the third pixel's products of channel 0 and
            channel 1's first. Each pixel's word is loaded alone (`LDR`s, no `LDRD`)."""
            totals, weight_words = list(totals), self.widened_block_weights(raw)
            after(b, [])
            first = b.load(words, [0, i, 0])
            after(b, [])  # apart: no `LDRD`, which the M7 issues alone
            multiply = self.raw_first_products if self.output_pairs else self.products
            totals[:4] = multiply(totals[:4], [first, b.load(words, [0, i, 1])], weight_words)
            after(b, [])
            third, fourth = (b.load(words, [1, i, k]) for k in range(2))
            for pixel, word, j in ((2, third, 0), (3, fourth, 0), (2, third, 1)):
                totals[2 * pixel + j] = smlad(b, word, weight_words[j], totals[2 * pixel + j])
            ahead = None
            if not last:
                after(b, [totals[5]])
                ahead = self.raw_block_weights(weights, [i + 1, 0, 0])
            totals[7] = smlad(b, fourth, weight_words[1], totals[7])
            return totals, ahead

        def run_of_pairs(totals: list[SSAValue], words: View, weights: View, count: int) -> list[SSAValue]:
            """The products of `count` pairs at constant offsets from `words` and `weights`."""
            if not self.weights_ahead:
                for k in range(count):
                    totals = pair_products(totals, words, weights, k)
                return totals
            raw = self.raw_block_weights(weights, [0, 0, 0]) if count else None
            for k in range(count):
                totals, raw = pair_products_ahead(totals, words, weights, k, raw, k + 1 == count)
            return totals

        def rebased(view: View, base: SSAValue) -> View:
            return View(base, view.shape, view.strides, 0, view.element_type)

        start_words = b.element(step.reread, [0, 0, 0])
        steps = self.pairs // per_step
        if steps == 1 and per_step == self.pairs:  # straight: no loop
            # in the single-issue order on every core: with `weights_ahead` here too, visual
            # wake words on the M7 took 6,751,555 estimated cycles, not 6,643,796
            totals = step.starts * BLOCKED_PIXELS
            for k in range(per_step):
                totals = pair_products(totals, rebased(gathered, start_words), weight_view, k)
            return totals
        end_words = b.offset_pointer(start_words, steps * per_step * gathered.strides[1], gathered.element_type)
        carried = [start_words, weight_view.base, *step.starts * BLOCKED_PIXELS]
        body = b.new_block([value.type for value in carried])
        b.emit(llvm.BrOp(body, *carried))
        b.block = body
        words, weights, *totals = body.args
        totals = run_of_pairs(totals, rebased(gathered, words), rebased(weight_view, weights), per_step)
        words = b.opaque(b.offset_pointer(words, per_step * gathered.strides[1], gathered.element_type))
        weights = b.opaque(b.offset_pointer(weights, per_step * weight_view.strides[0], packed.element_type))
        more = b.int_compare("ne", b.emit(llvm.PtrToIntOp(words, i32)), b.emit(llvm.PtrToIntOp(end_words, i32)))
        done = b.new_block([value.type for value in carried])
        b.emit(llvm.CondBrOp(more, body, [words, weights, *totals], done, [words, weights, *totals]))
        b.block = done  # a do-while loop ended by its gathered pointer (the end a stack address, no counter)
        words, weights, *totals = done.args
        return run_of_pairs(totals, rebased(gathered, words), rebased(weight_view, weights), self.pairs % per_step)

    def looped_pixel_pairs(self, step: BlockStep, group: list[tuple[int, int]],
                           after_totals: SSAValue | None) -> list[SSAValue]:
        """Pixel 2q (and 2q + 1 when `in_pair` is 2) of the run, (q, in_pair) the one of
        `group`, in a loop over the channel pairs (`loop_pairs` of them a step): its totals
        ([pixel][channel]); with a tiled pool, read after `after_totals` is computed."""
        b = self.b
        (q, in_pair), = group
        words, filter_words = step.reread, self.packed
        if self.tiles is not None:  # nor the weight words shared with the pair before
            words = dataclasses.replace(self.gathered, base=opaque_after(b, self.gathered.base, after_totals))
            filter_words = dataclasses.replace(self.packed, base=opaque_after(b, self.packed.base, after_totals))

        def pair_products(totals: list[SSAValue], i: Index) -> list[SSAValue]:
            weights = [word for o_block in step.o_blocks
                       for word in self.block_weights(filter_words, block_weight_index(b, filter_words, o_block, i))]
            return self.products(totals, load_words(b, words, [q, i, 0], in_pair), weights)

        pairs, per_step = self.pairs, self.step
        with b.loop(0, pairs // per_step, carried=step.starts * in_pair) as i:
            totals = list(i.carried)
            for k in range(per_step):
                totals = pair_products(totals, b.add(b.mul(i.index, per_step), k))
            i.next(*totals)
        results = i.results
        for i in range(pairs // per_step * per_step, pairs):
            results = pair_products(results, i)
        return results

    def stored_rows(self, channels: list[Index]) -> list[Index]:
        """The output channels the kernel's `channels` are stored to: themselves, or with
        `stored_channels` what their table words hold above their left shifts."""
        if not self.stored_channels:
            return channels
        table = self.domain.requantization.table
        return [self.b.shift_right_logical(self.b.load(table, [1, o]), LEFT_SHIFT_BITS) for o in channels]

    def stored_in_turn(self, dest: View, channels: list[Index], results: list[SSAValue], xs: list[int]) -> None:
        """A run of four pixels' totals `results` ([pixel][channel]) on a single-issue core
        (blocked, or straight with `PIPELINED_LOADS`) stored channel by channel, each
        output's requantization begun only once the output before is stored (its total through
        an empty inline asm that reads the stored level and may touch memory): LLVM requantized
        a channel's four outputs together, then the next channel's, and spilled (each block of
        visual wake words' 128 -> 128 layers on the M4 stored five totals on the stack and
        loaded them back). The model on the M4 10,575,213 -> 10,533,308 estimated cycles; on the
        M7 (with `weights_ahead`) 6,667,723 -> 6,699,908: not there. The straight products'
        runs so too (their 32 -> 32 and 32 -> 64 layers, no total left on the stack): the M4
        10,518,820, code 46,150 -> 46,002 B; on int8 filter words (`interleaved_int8_words`),
        keyword spotting's pointwise layers on the M4, 3,707,289 -> 3,740,824: not there."""
        b, width = self.b, len(channels)
        level = None
        for j, (o, stored_o) in enumerate(zip(channels, self.stored_rows(channels), strict=True)):
            stored, row = self.domain.output(o, dest.element_type), Row(dest, (0, stored_o))
            for k, x in enumerate(xs):
                total = results[k * width + j]
                if level is not None:
                    total = b.emit(llvm.InlineAsmOp("", "=r,0,r,~{memory}", [total, level], [total.type],
                                                    has_side_effects=True))
                level = stored(total)
                b.store(level, dest, row.at(x))

    def outputs(self, n: Index, x0: Index, channels: list[Index], results: list[SSAValue], xs: list[int],
                levels_of: list[StoredElement], folded: list[SSAValue | None]) -> list[SSAValue | None]:
        """The totals `results` ([pixel][channel]) of the run's pixels `xs` (from x0): folded
        into a tiled pool's windows (the new `folded`), stored, or folded into the global pool."""
        b, domain, width = self.b, self.domain, len(channels)
        if self.corrections is not None:
            results = list(results)
            for k, x in enumerate(xs):
                correction = b.load(self.corrections, [x])
                for j in range(width):
                    results[k * width + j] = b.int_sub(results[k * width + j], correction)
        if self.tiles is not None:
            return [self.tiles.fold(folded[j], results[j::width], levels_of[j]) for j in range(width)]
        if self.pool is None:  # stored from the run's first pixel (`run_outputs`)
            dest = dataclasses.replace(self.dest, base=self.run_outputs, offset=0)
            if self.single_issue_blocks and len(xs) == BLOCKED_PIXELS:
                self.stored_in_turn(dest, channels, results, xs)
                return folded
            with self.constants_anew(results[0]):
                if self.pipelined_loads and len(xs) == 4:
                    self.stored_in_turn(dest, channels, results, xs)
                else:
                    store_tile(b, domain, channels, [Row(dest, (0, o)) for o in self.stored_rows(channels)],
                               results, xs)
            return folded
        with self.constants_anew(results[0]):  # the requantization's constants made anew, as for stored outputs
            def levels(j: int) -> list[SSAValue]:
                level = domain.output(channels[j], self.dest.element_type)
                return [level(results[k * width + j]) for k in range(len(xs))]

            if self.loop_pairs is None:  # the sums read together (a size-first build's: 0.01% more)
                self.pool.fold_channels(channels[0], [levels(j) for j in range(width)])
            else:
                for j, o in enumerate(channels):
                    self.pool.fold(o, levels(j))
        return folded


class TiledPool:
    """A fused pool whose windows tile the convolution's output (`arm_dsp_layout.tiled_pool`)
    in the gathered product: each run of gathered pixels is one window's, and its totals are
    pooled in registers. A max pool takes the maximum of the accumulators and requantizes
    it once (`output_is_monotonic`); else each pixel's level is folded (`pool_combine`) and
    the window finished as the generic kernel's pooled rows are (`finish_pool_row`)."""

    def __init__(self, b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, dest: View):
        self.b, self.domain = b, domain
        self.window = Window.of_fused_pool(op)
        self.kernel = self.window.kernel
        self.pixels = self.kernel[0] * self.kernel[1]
        n_size, channels, out_h, self.out_w = dest.shape
        self.windows = out_h * self.out_w
        self.in_hw = tuple(glow.convolution_shape(op)[2:])
        self.dest = dest.reshaped((n_size, channels, self.windows, 1), (*dest.strides[:2], 1, 1))
        self.after_maximum = self.window.is_max and domain.output_is_monotonic
        self.folded = None if self.after_maximum else View.contiguous(b.alloca(1, i32, STACK_ALIGNMENT), (1, 1),
                                                                       element_type=i32)

    def convolution_pixel(self, window: Index) -> Callable[[Index], tuple[Index, Index]]:
        """Pixel k of pool window `window` (row-major over the pooled plane): its row and
        column of the convolution's output."""
        b, (k_h, k_w) = self.b, self.kernel

        def pixel(k: Index) -> tuple[Index, Index]:
            y, x = b.div(window, self.out_w), b.remainder(window, self.out_w)
            return b.add(b.mul(y, k_h), b.div(k, k_w)), b.add(b.mul(x, k_w), b.remainder(k, k_w))

        return pixel

    def fold(self, folded: SSAValue | None, totals: list[SSAValue], stored: StoredElement) -> SSAValue:
        """`folded` (None: no pixel yet) with the accumulators `totals` of one channel at some
        pixels of its window: their maximum, or the pool's fold of their output levels."""
        if self.after_maximum:
            for total in totals:
                folded = total if folded is None else self.b.int_max(folded, total)
            return folded
        combine = self.domain.pool_combine(self.window)
        folded = self.domain.pool_start(self.window) if folded is None else folded
        for total in totals:
            folded = combine(folded, stored(total))
        return folded

    def store(self, n: Index, channel: Index, window: Index, folded: SSAValue, stored: StoredElement) -> None:
        """The pooled output of `channel` at `window` from its window's `fold`."""
        if self.after_maximum:
            self.b.store(stored(folded), self.dest, [n, channel, window, 0])
            return
        self.b.store(folded, self.folded, [0, 0])
        self.domain.finish_pool_row(self.window, Row(self.folded, (0,)), Row(self.dest, (n, channel, window)), 0,
                                    self.in_hw)


def opaque_after(b: KernelBuilder, pointer: SSAValue, after: SSAValue | None) -> SSAValue:
    """`pointer` made opaque (`KernelBuilder.opaque`); given `after`, also only once `after`
    is computed (an input of the empty inline asm): loads through it wait for it. A tiled
    pool's window whose pixel pairs are multiplied apart (looped, or more pixels than one
    straight group takes, `STRAIGHT_PIXEL_PAIRS`) reads the gathered words and the weight
    words so, each pair after the previous one's totals: else LLVM interleaves the pairs'
    products, or keeps the weight words of the first for the second, and spills (the
    CIFAR-sized net's stem and 2x2 max pool on the M7, a pixel pair at a time: 819k
    instructions with neither, 637k read through opaque pointers, 621k each pair after the
    one before)."""
    if after is None:
        return b.opaque(pointer)
    return b.emit(llvm.InlineAsmOp("", "=r,0,r", [pointer, after], [pointer.type]))
