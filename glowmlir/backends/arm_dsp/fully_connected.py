"""FullyConnected on the DSP extension: int8 weight rows as they are, two pairs a word; on
gathered rows, output pair words (`OUTPUT_PAIRS`: two outputs' int8 weights a word, one `SXTB16`
for two `SMLAD`s) or, where those do not fit and the flash budget leaves room, rows of int16
weight pairs (`WEIGHT_PAIRS`); the input row's pairs gathered once for many blocks of outputs."""

from __future__ import annotations

import functools

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import i32
from xdsl.ir import SSAValue

from glowmlir.backends.arm_dsp.instructions import (
    STACK_ALIGNMENT,
    input_pairs,
    intrinsic,
    load_word,
    offset_pair,
    pairs_of_four,
    smlad,
)
from glowmlir.backends.arm_dsp.layout import output_pair_bytes, output_pair_sums_fit
from glowmlir.dialects import glowll
from glowmlir.lowering.int8_sums import level, start, weight_offset_correction
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import (
    ArithmeticDomain,
)

WEIGHT_PAIRS = "weight_pairs"
"""The microkernel parameter of a FullyConnected whose weights are int16 pairs (`pair_weight_rows`):
one load and one `SMLAD` a pair of products, where an int8 word takes one load, two `SXTB16`s
and two `SMLAD`s for four (`flash_budget.FC_PAIRS_SAVED_CYCLES_PER_MAC`)."""


def pair_weight_rows(levels: np.ndarray, offset: int) -> np.ndarray:
    """FullyConnected weights [outputs, depth] (int8 levels of zero point `offset`) as int16
    levels less the zero point, each run of four inputs' weights in the order of its input
    pairs (`pairs_of_four`: inputs 0 and 2, then 1 and 3), so that a word of the row is the
    weight pair of one input pair; the tail after the last run as it is."""
    centred = levels.astype(np.int16) - np.int16(offset)
    runs = centred.shape[1] // 4 * 4
    paired = centred.copy()
    paired[:, :runs] = centred[:, :runs].reshape(centred.shape[0], -1, 2, 2).transpose(0, 1, 3, 2).reshape(
        centred.shape[0], runs)
    return paired


OUTPUT_PAIRS = "output_pairs"
"""The microkernel parameter of a FullyConnected whose int8 weights are laid out as words of
two outputs' weights (`output_pair_words`, 1x the int8 bytes): per word, one `SXTB16` and two
`SMLAD`s, where an int8 word of one output takes two `SXTB16`s."""



def output_pair_words(levels: np.ndarray, offset: int) -> np.ndarray | None:
    """FullyConnected weights [outputs, depth] (int8 levels of zero point `offset`) as words of
    output pairs: for outputs 2p, 2p+1 and a run of four inputs, row 2p's word holds (w[2p, 0],
    w[2p+1, 0] - borrow, w[2p, 2], w[2p+1, 2] - borrow) and row 2p+1's the same of inputs 1 and 3,
    where borrow is 1 when the byte before is negative: each halfword, read as int16, is
    256 w[2p+1, k] + w[2p, k], and `SXTB16` of the word gives (w[2p, k], w[2p, k+2]). The tail
    after the last run as it is. None where a level less its zero point, or a borrowed byte,
    leaves int8, or the outputs are odd."""
    centred = levels.astype(np.int16) - np.int16(offset)
    outputs, depth = centred.shape
    runs = depth // 4 * 4
    if outputs % 2 or centred.min(initial=0) < -128 or centred.max(initial=0) > 127:
        return None
    first = centred[0::2, :runs].reshape(outputs // 2, -1, 2, 2)  # [pair, run, (k0, k2) / (k1, k3) ... ]
    second = centred[1::2, :runs].reshape(outputs // 2, -1, 2, 2)
    first, second = first.transpose(0, 1, 3, 2), second.transpose(0, 1, 3, 2)  # [pair, run, half, (k, k+2)]
    words = output_pair_bytes(first, second)  # [pair, run, half, (k, k+2), (2p, 2p+1)]
    if words is None:
        return None
    laid = centred.astype(np.int8)
    laid[:, :runs] = words.reshape(outputs // 2, -1, 2, 4).transpose(0, 2, 1, 3).reshape(outputs, runs)
    return laid


def takes_output_pairs(centred: np.ndarray, largest_input: int, columns: int, depth: int) -> bool:
    """Whether a FullyConnected may take `OUTPUT_PAIRS` (in a speed-first build or a size-first
    one: fewer instructions either way): gathered rows of blocks of an even number of outputs,
    each odd output's sums over its runs of four below `OUTPUT_PAIR_LIMIT` (`largest_input`:
    the largest |input| its products take)."""
    block = next(size for size in FC_BLOCKS if columns % size == 0)
    return (block % 2 == 0 and gathers_rows(depth, columns)
            and output_pair_sums_fit(centred[1::2, :depth // 4 * 4], largest_input))


def takes_weight_pairs(depth: int, columns: int, loop_pairs: bool) -> bool:
    """Whether a FullyConnected of `depth` inputs and `columns` outputs may take int16 weight
    pairs: a speed-first build's (not `loop_pairs`) gathered rows (`gathers_rows`)."""
    return not loop_pairs and gathers_rows(depth, columns)


def gathers_rows(depth: int, columns: int) -> bool:
    """Whether the kernel gathers each input row's pairs once (`FC_GATHER_BYTES`, `FC_GATHER_BLOCKS`)."""
    block = next(size for size in FC_BLOCKS if columns % size == 0)
    return depth >= 4 and 2 * depth <= FC_GATHER_BYTES and columns // block > FC_GATHER_BLOCKS


FC_BLOCKS = (4, 2, 1)
"""Outputs of a FullyConnected computed together: the first that divides the outputs."""


FC_GATHER_BYTES = 4096
"""A FullyConnected whose input pairs (two bytes an input) fit in this many bytes of stack
makes them once per input row, not once per block of outputs: MobileNetV2's classifier
(1280 inputs, 1000 outputs) on the M7: 2,211,514 -> 2,013,746 instructions."""


FC_GATHER_BLOCKS = 3
"""... and that has more blocks of outputs than this: a word's pairs cost a load, two `SXTB16`
and two stores to gather and two loads a block to read, against a load and two `SXTB16` a
block in place (DS-CNN's 64 x 12 classifier, three blocks of four, on the M7: 155
instructions more gathered)."""


FC_STEPS = 16
"""Runs of four inputs a gathered row's loop takes per iteration (all of a shorter row): the
anomaly detector (ten layers, eight of 128 or 640 inputs) on the M4 at 1, 4, 8 and 16 steps:
505,685, 468,597, 431,957 and 421,758 estimated cycles, 5.2, -, 9.5 and 15.3 KB of code; on
the M7 (8, 16) 278,879 and 273,333."""


def emit_fully_connected(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.FullyConnectedOp, view) -> None:
    """Per input row, `FC_BLOCKS` outputs at a time: each run of four inputs becomes two
    pairs shared by the block (`pairs_of_four`), each weight word two pairs; a tail of fewer
    than four products is added one by one. A row of at most `FC_GATHER_BYTES` / 2 inputs,
    for more than `FC_GATHER_BLOCKS` blocks, has its pairs made once, into a stack buffer
    (`gathered_row_pairs`); every block then loads its weight words and the two gathered words
    first, one run of loads (`in_order`), and multiplies after: on the Cortex-M4 neighbouring
    loads pipeline (N + 1 cycles; a load before an unrelated instruction costs 2), and LLVM
    otherwise put each load beside its `SXTB16`s (the anomaly detector on the M4: 582,358 ->
    505,032 estimated cycles, 450,629 -> 449,239 instructions; on the M7 368,226 -> 283,095),
    `FC_STEPS` runs a loop iteration (`gathered_products`; one in a size-first build). On
    `OUTPUT_PAIRS` weights a block's outputs go in pairs (`output_pairs_run`,
    `split_output_pairs`), on `WEIGHT_PAIRS` ones each word is a weight pair
    (`gathered_pairs_run`); both centred (weight offset 0)."""
    dest, src, weights, bias = view(op.dest), view(op.input), view(op.weights), view(op.bias)
    rows, columns = dest.shape
    depth = src.shape[1]
    weight_offset = domain.weight_offset
    folded = op.folded_input_offset is not None
    paired = op.microkernel.parameter(WEIGHT_PAIRS) is not None  # centred: weight offset 0
    output_pairs = op.microkernel.parameter(OUTPUT_PAIRS) is not None  # centred too
    # Folded: sum x * (w - w_offset) = sum x * w - w_offset * sum x, the input sum once per row.
    x_offset = None if folded else offset_pair(b, domain.input_offset)
    w_offset = None if folded else offset_pair(b, weight_offset)
    words, tail = depth // 4, range(depth // 4 * 4, depth)
    block = next(size for size in FC_BLOCKS if columns % size == 0)
    gathered = View.contiguous(b.alloca(2 * words, i32, STACK_ALIGNMENT), (2, words), element_type=i32) \
        if gathers_rows(depth, columns) else None
    w_offset = None if paired or output_pairs else w_offset
    with b.loop(0, rows) as m:
        correction = weight_offset_correction(b, domain, op, src, m.index)
        if gathered is not None:
            gathered_row_pairs(b, src, m.index, x_offset, gathered)
        with b.loop(0, columns // block) as n_block:
            outputs = [b.add(b.mul(n_block.index, block), j) for j in range(block)]
            starts = [start(b, domain, bias, n, correction) for n in outputs]

            if gathered is None:
                totals = in_place_products(b, src, weights, m.index, outputs, starts, x_offset, w_offset, words,
                                           paired)
            else:
                steps = 1 if op.microkernel.parameter("loop_pairs") is not None else FC_STEPS  # size first
                pairs_run = functools.partial(output_pairs_run, by_input_pair=steps > 1)
                run = gathered_pairs_run if paired else pairs_run if output_pairs else gathered_run
                paired_starts = [starts[j - j % 2] for j in range(block)] if output_pairs else starts
                totals = gathered_products(b, weights, gathered, outputs, paired_starts, w_offset, words, steps,
                                           run)
                if output_pairs:
                    totals = split_output_pairs(b, totals, starts)
            for n, total in zip(outputs, totals):
                for column in tail:
                    if folded:
                        product = b.int_mul(level(b, src, [m.index, column]), level(b, weights, [n, column]))
                        total = b.int_add(total, product)
                    else:
                        total = domain.multiply_accumulate(total, domain.input(src, [m.index, column]),
                                                           domain.weight(weights, [n, column]))
                b.store(domain.output(n, dest.element_type)(total), dest, [m.index, n])


def products(b: KernelBuilder, inputs: list[SSAValue], weight_words: list[SSAValue], w_offset: SSAValue | None,
             totals: list[SSAValue]) -> list[SSAValue]:
    """`totals` plus the products of a run of four inputs (its two pairs) and each output's
    weight word."""
    for j, weight_word in enumerate(weight_words):  # each word widened beside its products (registers)
        totals[j:j + 1] = pair_products(b, inputs, [input_pairs(b, weight_word, w_offset)], totals[j:j + 1])
    return totals


def pair_products(b: KernelBuilder, inputs: list[SSAValue], weight_pairs: list[list[SSAValue]],
                  totals: list[SSAValue]) -> list[SSAValue]:
    """`totals` plus the products of input pairs and each output's weight pairs."""
    for j, pairs in enumerate(weight_pairs):
        for pair, weight in zip(inputs, pairs):
            totals[j] = smlad(b, pair, weight, totals[j])
    return totals


def in_place_products(b: KernelBuilder, src: View, weights: View, m: Index, outputs: list[Index],
                      starts: list[SSAValue], x_offset: SSAValue | None, w_offset: SSAValue | None,
                      words: int, paired: bool = False) -> list[SSAValue]:
    """The totals of a block of outputs over the runs of four inputs of row m, each run's pairs
    made where it is used (`pairs_of_four`); `paired`: the weights int16 pairs, two words a run."""
    with b.loop(0, words, carried=starts) as k:
        column = b.mul(k.index, 4)
        inputs = list(pairs_of_four(b, src, [m, column], x_offset))
        if paired:
            weight_pairs = [[load_word(b, weights, [n, b.add(column, 2 * half)]) for half in range(2)]
                            for n in outputs]
            k.next(*pair_products(b, inputs, weight_pairs, list(k.carried)))
        else:
            k.next(*products(b, inputs, [load_word(b, weights, [n, column]) for n in outputs], w_offset,
                             list(k.carried)))
    return k.results


def gathered_products(b: KernelBuilder, weights: View, gathered: View, outputs: list[Index],
                      starts: list[SSAValue], w_offset: SSAValue | None, words: int, steps: int,
                      run=None) -> list[SSAValue]:
    """The totals of a block of outputs over a gathered row, `steps` runs of four inputs a
    loop iteration, read through pointers the loop carries (constant offsets from them, no
    index: LLVM kept an index and spilled). Each run loads its weight words and its two pairs
    (`gathered` holds each run's first pairs, then its second ones: never neighbours, which
    LLVM would load as one `LDRD`, 3 cycles and the end of a run of loads) before its products
    (`in_order`), and its totals are made before the next run's loads (`run`: `gathered_run`,
    or `gathered_pairs_run` on int16 weight pairs, `output_pairs_run` on output pair words)."""
    steps = min(steps, words)
    run = run or gathered_run

    def block_from(weight_at: SSAValue) -> View:
        """The block's weight rows from the column at `weight_at` on."""
        return View(weight_at, (len(outputs), weights.shape[1]), weights.strides, 0, weights.element_type)

    def pairs_from(pairs_at: SSAValue) -> View:
        return View(pairs_at, gathered.shape, gathered.strides, 0, i32)

    with b.loop(0, words // steps, carried=[b.element(weights, [outputs[0], 0]), gathered.base, *starts]) as k:
        weight_at, pairs_at, *totals = k.carried
        for step in range(steps):
            totals = run(b, block_from(weight_at), pairs_from(pairs_at), step, w_offset, totals)
        k.next(b.offset_pointer(weight_at, 4 * steps, weights.element_type),
               b.offset_pointer(pairs_at, steps, i32), *totals)
    weight_at, pairs_at, *totals = k.results
    for step in range(words % steps):
        totals = run(b, block_from(weight_at), pairs_from(pairs_at), step, w_offset, totals)
    return totals


def gathered_run(b: KernelBuilder, rows: View, pairs: View, word: int, w_offset: SSAValue | None,
                 totals: list[SSAValue]) -> list[SSAValue]:
    """`totals` plus the products of the run of four inputs `word` (from `rows` and `pairs`):
    its loads, one run, first."""
    loaded = in_order(b, [*(load_word(b, rows, [j, 4 * word]) for j in range(rows.shape[0])),
                          *(load_word(b, pairs, [half, word]) for half in range(2))])
    weight_words, inputs = loaded[:-2], loaded[-2:]
    return in_order(b, products(b, inputs, weight_words, w_offset, totals))


def gathered_pairs_run(b: KernelBuilder, rows: View, pairs: View, word: int, w_offset: None,
                       totals: list[SSAValue]) -> list[SSAValue]:
    """`totals` plus the products of the run of four inputs `word` on int16 weight pairs
    (`pair_weight_rows`): per input pair, its weight words and the pair loaded (one run), then
    multiplied."""
    for half in range(2):
        loaded = in_order(b, [load_word(b, pairs, [half, word]),
                              *(load_word(b, rows, [j, 4 * word + 2 * half]) for j in range(rows.shape[0]))])
        totals = in_order(b, pair_products(b, loaded[:1], [[w] for w in loaded[1:]], totals))
    return totals


def output_pairs_run(b: KernelBuilder, rows: View, pairs: View, word: int, w_offset: None,
                     totals: list[SSAValue], by_input_pair: bool = True) -> list[SSAValue]:
    """`totals` plus the products of the run of four inputs `word` on output pair words
    (`output_pair_words`): per pair of outputs, its two words (the run's input pairs 0 and 1)
    each multiplied by its input pair twice, widened by `SXTB16` into the first output's
    total and as it is into the second's (256 times its products plus the first's:
    `split_output_pairs`). `by_input_pair`: the products of input pair 0 for every output
    pair, then of pair 1, so that an accumulator's two products are apart (the anomaly
    detector on the M7: 233,187 -> 225,950 estimated cycles, its 640 -> 128 layer 71,524 ->
    65,062; on the M4 359,100 -> 359,547); else each output pair's in turn (a size-first
    build's one run a step: at -Os the M4 522,496 -> 489,792, the M7 315,945 -> 298,317)."""
    loaded = in_order(b, [*(load_word(b, rows, [j, 4 * word]) for j in range(rows.shape[0])),
                          *(load_word(b, pairs, [half, word]) for half in range(2))])
    weight_words, inputs = loaded[:-2], loaded[-2:]
    totals = list(totals)
    order = [(half, first) for half in range(2) for first in range(0, len(weight_words), 2)]
    for half, first in sorted(order, key=lambda at: at if by_input_pair else at[::-1]):
        weight_word = weight_words[first + half]
        totals[first] = smlad(b, inputs[half], intrinsic(b, "sxtb16", weight_word), totals[first])
        totals[first + 1] = smlad(b, inputs[half], weight_word, totals[first + 1])
    return in_order(b, totals)


def split_output_pairs(b: KernelBuilder, totals: list[SSAValue], starts: list[SSAValue]) -> list[SSAValue]:
    """The totals of output pairs (`output_pairs_run`, both started at the first output's start):
    the first's as it is; the second's its start plus the difference, shifted right by 8."""
    split = list(totals)
    for first in range(0, len(totals), 2):
        difference = b.int_sub(totals[first + 1], totals[first])
        split[first + 1] = b.int_add(starts[first + 1], b.shift_right(difference, 8))
    return split


def gathered_row_pairs(b: KernelBuilder, src: View, m: Index, x_offset: SSAValue | None, gathered: View) -> None:
    """The pairs of each run of four inputs of row m (`pairs_of_four`) into `gathered`
    [2, words]: the first pairs, then the second ones."""
    with b.loop(0, gathered.shape[1]) as word:
        pairs = pairs_of_four(b, src, [m, b.mul(word.index, 4)], x_offset)
        for half, pair in enumerate(pairs):
            b.store(pair, gathered, [half, word.index])


def in_order(b: KernelBuilder, values: list[SSAValue]) -> list[SSAValue]:
    """`values` through empty inline asms that may touch memory (no instruction, nor a
    register move: each result is tied to its operand): what uses them comes after every load
    before them, and the loads after them wait for them."""
    return [b.emit(llvm.InlineAsmOp("", "=r,0,~{memory}", [v], [v.type], has_side_effects=True)) for v in values]
