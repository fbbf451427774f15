"""The banded window product: a WINDOW_PAIRS convolution of an even number of input channels,
stride 1 or 2 (or an unpadded 1x1 one of stride 2), as an implicit matrix product over a band
of its input widened once per output row, on output pair words (`BAND_WINDOWS`), with no
window gathered."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import i32

from glowmlir.backends.arm_dsp.fully_connected import split_output_pairs
from glowmlir.backends.arm_dsp.instructions import (
    STACK_ALIGNMENT,
    after,
    intrinsic,
    offset_pair,
    pack_halves,
    pixel_channel_pairs,
    smlad,
)
from glowmlir.backends.arm_dsp.layout import output_pair_bytes, output_pair_sums_fit
from glowmlir.backends.arm_dsp.row_kernels import block_weight_index, store_tile
from glowmlir.dialects import glowll
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import ArithmeticDomain, Row, load_word

BAND_WINDOWS = "band_windows"
"""The microkernel parameter of a convolution whose filter holds `band_window_words` and
whose kernel is `banded_window_product`: 1 on a single-issue core (`SINGLE_ISSUE_CPUS`), else 0."""

BAND_PIXELS = 3
"""Output pixels of a row that one loop over the input channel pairs multiplies by a block of
two output channels: six accumulators (an output pair's two per pixel), the three pixels'
input words sliding along the band's row one word a tap (`banded_window_product`), a weight
word and its `SXTB16`, and the loop's two pointers: 13 of the 14 registers."""


SINGLE_ISSUE_CPUS = ("cortex-m4", "cortex-m33")
"""Cores that issue one instruction a cycle, where a run of N neighbouring loads takes N + 1
cycles (`BAND_WINDOWS` = 1: each tap's loads side by side, after the products before; LLVM
spread them among the `SMLAD`s, two cycles each). MLPerf Tiny's ResNet-8 on the M4 16.65M ->
16.30M estimated cycles; on the dual-issue M7, whose loads issue beside the products, so
9.90M -> 10.68M. There each band row's first loads (of the run's pixels) after the products
before took ResNet-8's default build 9.68M -> 9.62M with one channel pair a loop step, but
with four (`TAPS_PER_STEP`) they are only a 1x1's: 9.43M (each row's) -> 9.33M (a 1x1's;
none: 9.38M, each pair's first row's: 9.51M); a KxK's loads LLVM schedules."""


TAPS_PER_STEP = 36
"""Taps a step of the loop over channel pairs takes at most (`PAIRS_PER_STEP`, the most that
divide the channel pairs): four channel pairs of a 3x3 window, eight of a 1x1, the loop's
overhead (two pointer steps, the end reloaded, a compare and branch) paid once for them.
MLPerf Tiny's ResNet-8 default build, one pair of a 3x3 a step (9) -> two (18) -> four (36):
M7 9,617,749 -> 9,462,860 -> 9,432,801 estimated cycles; M4 15,815,011 -> 15,338,390 ->
14,997,438 (`glow-run -board=mps2-an500 / mps2-an386 -cycles`)."""

BLOCKS_OUTSIDE_RUNS = (16, 8)
"""The most input channel pairs of a layer whose row loops over the blocks of output channels
outside its runs of pixels (a block's biases and requantization set up once a row, kept on the
stack, not once a run), on a dual-issue and on a single-issue core (`BAND_WINDOWS` 0 and 1);
with more, the runs outside. Most of the difference is LLVM's schedule of the loop step, which
the code around it moves: llvm-mca's Cortex-M7 model of a 3x3 of 16 channels' run, step 254 ->
244 cycles, set-up and outputs 73 -> 62; of 64 channels', step 246 -> 259 (the same 352
instructions), outputs 47 -> 46. MLPerf Tiny's ResNet-8 default build (`glow-run -cycles`),
blocks outside the runs of at most 0 / 8 / 16 / 32 pairs: M7 9,328,918 / 9,155,171 / 9,128,042 /
9,152,408 estimated cycles; M4 14,997,438 / 14,887,069 / 14,984,800."""

PAIRS_PER_STEP = (8, 4, 2, 1)
"""The channel pairs a step of the loop may take, the most first."""


def band_window_words(levels: np.ndarray, offset: int, interleaved: int) -> np.ndarray | None:
    """An OIHW int8 filter (levels of zero point `offset`) as the int8 words of a WINDOW_PAIRS
    filter's shape [O / (2 x interleaved), C / 2 x KH x KW, interleaved, 2, 2] whose pair i is
    (channel pair cp, ky, kx) in that order (not the window's taps in the filter's order) and
    whose block of output channels (2j, 2j + 1) holds output pair words
    (`fully_connected.output_pair_words`): (w[2j, 2cp], w[2j + 1, 2cp] - borrow, w[2j, 2cp + 1],
    w[2j + 1, 2cp + 1] - borrow) at (ky, kx), each halfword 256 w[2j + 1] + w[2j] read as int16
    and `SXTB16` of the word w[2j]'s pair. None where the channels or outputs are odd or a
    level (less its zero point, or borrowed) leaves int8."""
    centred = levels.astype(np.int16) - np.int16(offset)
    out_c, in_c, k_h, k_w = centred.shape
    if out_c % (2 * interleaved) or in_c % 2 or centred.min(initial=0) < -128 or centred.max(initial=0) > 127:
        return None
    words = output_pair_bytes(centred[0::2], centred[1::2])  # [block, C, KH, KW, channel of the pair]
    if words is None:
        return None
    words = words.reshape(out_c // 2, in_c // 2, 2, k_h, k_w, 2).transpose(0, 1, 3, 4, 2, 5)
    words = words.reshape(out_c // (2 * interleaved), interleaved, -1, 2, 2).transpose(0, 2, 1, 3, 4)
    return words.copy()


def takes_band_windows(op: glowll.ConvolutionOp, centred: np.ndarray, largest_input: int) -> bool:
    """Whether a convolution (OIHW `centred` filter levels; `largest_input` the largest |input|
    its products take) may run on `banded_window_product`: stride 1 or 2, dilation 1, ungrouped
    and unpooled, an even number of input and output channels, and each odd output's sums
    below `OUTPUT_PAIR_LIMIT`."""
    out_c, in_c, _, _ = centred.shape
    return (op.strides.get_values() in ((1, 1), (2, 2)) and op.dilations.get_values() == (1, 1)
            and op.group.value.data == 1 and op.pool is None and out_c % 2 == 0 and in_c % 2 == 0
            and pair_sums_fit(centred, largest_input))


def pair_sums_fit(centred: np.ndarray, largest_input: int) -> bool:
    """Whether each odd output channel's sums (OIHW `centred` filter levels, inputs of at most
    `largest_input` in magnitude) stay below `OUTPUT_PAIR_LIMIT`: S1 is then exact from
    S0 + 256 S1 and S0."""
    return output_pair_sums_fit(centred[1::2].reshape(centred.shape[0] // 2, -1), largest_input)


def banded_window_product(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view) -> None:
    """A `BAND_WINDOWS` convolution. Per output row, the KH input rows its windows read are
    widened into a stack band [C / 2, KH, pad left + W + pad right] of words, each the pair
    (channel 2cp, channel 2cp + 1) of one column (less the input offset when it is not
    folded), the padding's words the input zero point's: every tap (cp, ky, kx) of output
    pixel x is the band's word (cp, ky, x + kx). Each run of `BAND_PIXELS` pixels of the row
    is then multiplied by each block of two output channels in a loop over the channel pairs:
    per (cp, ky) the run's words of row ky loaded once, and for each kx one more (the run's
    words slide by one), the weight word (`band_window_words`) and its `SXTB16`, two `SMLAD`s
    a pixel (the pair's sums S0 + 256 S1 and S0, split after the loop,
    `fully_connected.split_output_pairs`). No window is gathered: the band's words are widened
    once for KH output rows."""
    BandedWindows(b, domain, op, view).emit()


@dataclass(frozen=True)
class OutputBlock:
    """A block of two output channels (`BandedWindows.output_block`): its index, channels,
    biases in accumulator units and output steps (`ArithmeticDomain.output`)."""

    index: Index
    channels: list[Index]
    starts: list
    stored: list | None = None
    """Each channel's output step, or None: `store_tile` sets them up as it stores."""


class BandedWindows:
    """The views, band and plan of one `banded_window_product`."""

    def __init__(self, b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view):
        self.b, self.domain, self.op = b, domain, op
        self.src, self.packed, self.bias = view(op.input), view(op.filter), view(op.bias)
        whole = view(op.dest)
        n_size, out_c, out_h, out_w = whole.shape
        self.dest = whole.reshaped((n_size, out_c, out_h * out_w), (out_c * out_h * out_w, out_h * out_w, 1))
        self.out_h, self.out_w, self.out_c, self.n_size = out_h, out_w, out_c, n_size
        _, in_c, self.in_h, self.in_w = self.src.shape
        _, _, self.k_h, self.k_w = op.filter_shape.get_values()
        self.pt, self.pl, _, pr = op.pads.get_values()
        self.stride, _ = op.strides.get_values()
        self.band_w = -(-(self.pl + self.in_w + pr) // self.stride)  # the words of a row's phase
        self.channel_pairs = in_c // 2
        shape = (self.channel_pairs, self.k_h, self.stride, self.band_w)
        self.band = View.contiguous(b.alloca(int(np.prod(shape)), i32, STACK_ALIGNMENT), shape, element_type=i32)
        self.x_offset = None if op.folded_input_offset is not None else offset_pair(b, domain.input_offset)
        self.loads_side_by_side = op.microkernel.parameter(BAND_WINDOWS).value.data == 1
        self.blocks_outside_runs = self.channel_pairs <= BLOCKS_OUTSIDE_RUNS[int(self.loads_side_by_side)]
        self.pairs_per_step = next(step for step in PAIRS_PER_STEP
                                   if self.channel_pairs % step == 0 and step * self.k_h * self.k_w <= TAPS_PER_STEP)

    def padding_word(self):
        """The band's word of two padding taps: the input zero point in both halves (less the
        offset when it is not folded, 0)."""
        b = self.b
        zero_point = b.int_value(self.domain.input_offset)
        word = pack_halves(b, zero_point, zero_point)
        return word if self.x_offset is None else intrinsic(b, "sadd16", word, self.x_offset)

    def emit(self) -> None:
        b = self.b
        padding = self.padding_word()
        with b.loops(self.band.shape) as at:
            b.store(padding, self.band, at)
        with b.loops([self.n_size, self.out_h]) as (n, y):
            self.widen_band(n, y, padding)
            runs, tail = divmod(self.out_w, BAND_PIXELS)
            if self.blocks_outside_runs:  # per block: its set-up, then the row's runs
                with b.loop(0, self.out_c // 2) as o_block:
                    block = self.output_block(o_block.index)
                    with b.loop(0, runs) as run:
                        self.run(n, y, block, b.mul(run.index, BAND_PIXELS), BAND_PIXELS)
                    if tail:
                        self.run(n, y, block, self.out_w - tail, tail)
            else:  # per run: each block, set up
                with b.loop(0, runs) as run:
                    self.blocks_of_run(n, y, b.mul(run.index, BAND_PIXELS), BAND_PIXELS)
                if tail:
                    self.blocks_of_run(n, y, self.out_w - tail, tail)

    def widen_band(self, n: Index, y: Index, padding) -> None:
        """The input rows of output row y's windows into the band: a row inside the input as
        channel pairs of its columns (its padding columns keep the zero point's words), a row
        in the padding all the zero point's."""
        b, width = self.b, self.in_w
        for ky in range(self.k_h):
            row = b.sub(b.add(b.mul(y, self.stride), ky), self.pt)
            inside = b.in_range(row, self.in_h)
            with b.when(inside):
                with b.loop(0, self.channel_pairs) as cp:
                    first, second = b.mul(cp.index, 2), b.add(b.mul(cp.index, 2), 1)

                    def widen(x: Index, count: int, cp=cp.index, first=first, second=second) -> None:
                        pairs = pixel_channel_pairs(b, self.src, [n, first, row, x], [n, second, row, x], count,
                                                    self.x_offset)
                        for p, pair in enumerate(pairs):  # x a constant, or a multiple of 4 (of the stride)
                            if isinstance(x, int):
                                column = self.pl + x + p
                                at = [column % self.stride, column // self.stride]
                            else:
                                column = self.pl + p
                                at = [column % self.stride, b.add(b.div(x, self.stride), column // self.stride)]
                            b.store(pair, self.band, [cp, ky, *at])

                    with b.loop(0, width // 4) as quad:
                        widen(b.mul(quad.index, 4), 4)
                    done = width // 4 * 4
                    for count in (2, 1):
                        if width - done >= count:
                            widen(done, count)
                            done += count
            if self.pt or self.k_h - 1 - self.pt:  # rows of the padding above or below
                with b.when(b.int_xor(inside, b.constant(1, inside.type))):
                    with b.loops([self.channel_pairs, self.stride, self.band_w]) as (cp, phase, x):
                        b.store(padding, self.band, [cp, ky, phase, x])

    def blocks_of_run(self, n: Index, y: Index, x0: Index, count: int) -> None:
        """Output pixels x0 .. x0 + count - 1 of row y, every block of two output channels,
        each set up for this run."""
        with self.b.loop(0, self.out_c // 2) as o_block:
            self.run(n, y, self.output_block(o_block.index, steps=False), x0, count)

    def output_block(self, o_block: Index, steps: bool = True) -> OutputBlock:
        """Block `o_block`'s two output channels and their biases; `steps`: their output steps
        too, set up once for a row's runs (else `store_tile` sets them up as it stores)."""
        channels = [self.b.mul(o_block, 2), self.b.add(self.b.mul(o_block, 2), 1)]
        return OutputBlock(o_block, channels, [self.domain.bias(self.bias, o) for o in channels],
                           [self.domain.output(o, self.dest.element_type) for o in channels] if steps else None)

    def run(self, n: Index, y: Index, block: OutputBlock, x0: Index, count: int) -> None:
        """Output pixels x0 .. x0 + count - 1 of row y by one block of two output channels."""
        b = self.b
        totals = self.products(block.index, x0, count, block.starts[0])
        results = []
        for p in range(count):  # [pixel][channel]
            results += split_output_pairs(b, totals[2 * p:2 * p + 2], block.starts)
        outputs = [Row(self.dest, (n, o)) for o in block.channels]
        first = b.add(b.mul(y, self.out_w), x0)
        store_tile(b, self.domain, block.channels, outputs, results, [b.add(first, p) for p in range(count)],
                   block.stored)

    def products(self, o_block: Index, x0: Index, count: int, start) -> list:
        """The totals (S0, S0 + 256 S1 per pixel, both from `start`) of `count` pixels from
        column x0 by block `o_block`, in a do-while loop over the channel pairs ended by the
        band's pointer, both pointers advanced once a step through an opaque value."""
        b, band, packed, k_h, k_w = self.b, self.band, self.packed, self.k_h, self.k_w
        weight_stride = packed.strides[1]  # elements (bytes) from one pair's word to the next
        start_band = b.element(band, [0, 0, 0, x0])
        start_weights = b.element(packed, block_weight_index(b, packed, o_block, 0))
        band_step = k_h * self.stride * self.band_w  # words a channel pair
        end_band = b.offset_pointer(start_band, self.channel_pairs * band_step, i32)
        carried = [start_band, start_weights, *[start] * (2 * count)]
        body = b.new_block([value.type for value in carried])
        b.emit(llvm.BrOp(body, *carried))
        b.block = body
        words_at, weights_at, *totals = body.args
        per_step = self.pairs_per_step
        for pair in range(per_step):
            row_words = View(words_at, band.shape[1:], band.strides[1:], pair * band_step, i32)
            weights = View(weights_at, (k_h * k_w,), (weight_stride,), pair * k_h * k_w * weight_stride,
                           packed.element_type)
            totals = self.pair_products(row_words, weights, count, totals)
        words_at = b.opaque(b.offset_pointer(words_at, per_step * band_step, i32))
        weights_at = b.opaque(b.offset_pointer(weights_at, per_step * k_h * k_w * weight_stride, packed.element_type))
        more = b.int_compare("ne", b.emit(llvm.PtrToIntOp(words_at, i32)), b.emit(llvm.PtrToIntOp(end_band, i32)))
        done = b.new_block([value.type for value in carried])
        b.emit(llvm.CondBrOp(more, body, [words_at, weights_at, *totals], done, [words_at, weights_at, *totals]))
        b.block = done
        return list(done.args[2:])

    def pair_products(self, row_words: View, weights: View, count: int, totals: list) -> list:
        """`totals` plus the products of one channel pair's taps (its band rows `row_words`
        [ky, phase, word] from the run's first pixel, its weight words `weights`)."""
        b, k_h, k_w = self.b, self.k_h, self.k_w
        totals = list(totals)
        for ky, phase in np.ndindex(k_h, self.stride):
            inputs = []
            for kx in range(phase, k_w, self.stride):  # the taps of this phase: the run's words slide by one
                if self.loads_side_by_side or (k_h * k_w == 1 and not inputs):  # (dual-issue: a 1x1's)
                    after(b, totals)  # this tap's loads side by side, after the products before
                shift = kx // self.stride
                if inputs:
                    inputs = [*inputs[1:], b.load(row_words, [ky, phase, count - 1 + shift])]
                else:
                    inputs = [b.load(row_words, [ky, phase, shift + p]) for p in range(count)]
                word = load_word(b, weights, [ky * k_w + kx], aligned=True)
                low = intrinsic(b, "sxtb16", word)
                for p, x in enumerate(inputs):
                    totals[2 * p] = smlad(b, x, low, totals[2 * p])
                    totals[2 * p + 1] = smlad(b, x, word, totals[2 * p + 1])
        return totals


def band_windows_of(op: glowll.ConvolutionOp) -> bool:
    """Whether the convolution runs on `banded_window_product`."""
    return op.microkernel is not None and op.microkernel.parameter(BAND_WINDOWS) is not None


__all__ = ["BAND_WINDOWS", "band_window_words", "band_windows_of", "banded_window_product", "pair_sums_fit",
           "takes_band_windows"]
