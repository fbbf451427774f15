"""FullyConnected on the DSP extension: int8 weight rows as they are, two pairs a word, the input
row's pairs gathered once for many blocks of outputs."""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import i32
from xdsl.ir import SSAValue

from glowmlir.backends.arm_dsp.instructions import (
    STACK_ALIGNMENT,
    input_pairs,
    load_word,
    offset_pair,
    pairs_of_four,
    smlad,
)
from glowmlir.dialects import glowll
from glowmlir.lowering.int8_sums import level, start, weight_offset_correction
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import (
    ArithmeticDomain,
)

FC_BLOCKS = (4, 2, 1)
"""Outputs of a FullyConnected computed together: the first that divides the outputs."""


FC_GATHER_BYTES = 4096
"""A FullyConnected whose input pairs (two bytes an input) fit in this many bytes of stack
makes them once per input row, not once per block of outputs: MobileNetV2's classifier
(1280 inputs, 1000 outputs) on the M7: 2,211,514 -> 2,013,746 instructions."""


FC_GATHER_BLOCKS = 3
"""... and that has more blocks of outputs than this: a word's pairs cost a load, two `SXTB16`
and two stores to gather and one `LDRD` a block to read, against a load and two `SXTB16` a
block in place (DS-CNN's 64 x 12 classifier, three blocks of four, on the M7: 155
instructions more gathered)."""


def emit_fully_connected(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.FullyConnectedOp, view) -> None:
    """Per input row, `FC_BLOCKS` outputs at a time: each run of four inputs becomes two
    pairs shared by the block (`pairs_of_four`), each weight word two pairs; a tail of fewer
    than four products is added one by one. A row of at most `FC_GATHER_BYTES` / 2 inputs,
    for more than `FC_GATHER_BLOCKS` blocks, has its pairs made once, into a stack buffer
    (`gathered_row_pairs`); every block then loads its weight words and the two gathered words
    first, one run of loads (`in_order`), and multiplies after: on the Cortex-M4 neighbouring
    loads pipeline (N + 1 cycles; a load before an unrelated instruction costs 2), and LLVM
    otherwise put each load beside its `SXTB16`s (the anomaly detector on the M4: 582,358 ->
    505,032 estimated cycles, 450,629 -> 449,239 instructions; on the M7 368,226 -> 283,095)."""
    dest, src, weights, bias = view(op.dest), view(op.input), view(op.weights), view(op.bias)
    rows, columns = dest.shape
    depth = src.shape[1]
    weight_offset = domain.weight_offset
    folded = op.folded_input_offset is not None
    # Folded: sum x * (w - w_offset) = sum x * w - w_offset * sum x, the input sum once per row.
    x_offset = None if folded else offset_pair(b, domain.input_offset)
    w_offset = None if folded else offset_pair(b, weight_offset)
    words, tail = depth // 4, range(depth // 4 * 4, depth)
    block = next(size for size in FC_BLOCKS if columns % size == 0)
    gathered = View.contiguous(b.alloca(2 * words, i32, STACK_ALIGNMENT), (words, 2), element_type=i32) \
        if words and 2 * depth <= FC_GATHER_BYTES and columns // block > FC_GATHER_BLOCKS else None
    with b.loop(0, rows) as m:
        correction = weight_offset_correction(b, domain, op, src, m.index)
        if gathered is not None:
            gathered_row_pairs(b, src, m.index, x_offset, gathered)
        with b.loop(0, columns // block) as n_block:
            outputs = [b.add(b.mul(n_block.index, block), j) for j in range(block)]
            starts = [start(b, domain, bias, n, correction) for n in outputs]

            def words_at(totals: list[SSAValue], word: Index) -> list[SSAValue]:
                """The products of the run of four inputs `word` at each output."""
                column = b.mul(word, 4)
                if gathered is None:
                    inputs = pairs_of_four(b, src, [m.index, column], x_offset)
                    weight_words = [load_word(b, weights, [n, column]) for n in outputs]
                else:  # one run of loads (N+1 cycles on the M4), then the products
                    weight_words = in_order(b, [load_word(b, weights, [n, column]) for n in outputs])
                    inputs = in_order(b, [load_word(b, gathered, [word, half]) for half in range(2)])
                for j, weight_word in enumerate(weight_words):
                    for pair, weight in zip(inputs, input_pairs(b, weight_word, w_offset)):
                        totals[j] = smlad(b, pair, weight, totals[j])
                return totals if gathered is None else in_order(b, totals)

            with b.loop(0, words, carried=starts) as k:
                k.next(*words_at(list(k.carried), k.index))
            totals = k.results
            for n, total in zip(outputs, totals):
                for column in tail:
                    if folded:
                        product = b.int_mul(level(b, src, [m.index, column]), level(b, weights, [n, column]))
                        total = b.int_add(total, product)
                    else:
                        total = domain.multiply_accumulate(total, domain.input(src, [m.index, column]),
                                                           domain.weight(weights, [n, column]))
                b.store(domain.output(n, dest.element_type)(total), dest, [m.index, n])


def gathered_row_pairs(b: KernelBuilder, src: View, m: Index, x_offset: SSAValue | None, gathered: View) -> None:
    """The pairs of each run of four inputs of row m (`pairs_of_four`) into `gathered` [words, 2]."""
    with b.loop(0, gathered.shape[0]) as word:
        pairs = pairs_of_four(b, src, [m, b.mul(word.index, 4)], x_offset)
        for half, pair in enumerate(pairs):
            b.store(pair, gathered, [word.index, half])


def in_order(b: KernelBuilder, values: list[SSAValue]) -> list[SSAValue]:
    """`values` through empty inline asms that may touch memory (no instruction, nor a
    register move: each result is tied to its operand): what uses them comes after every load
    before them, and the loads after them wait for them."""
    return [b.emit(llvm.InlineAsmOp("", "=r,0,~{memory}", [v], [v.type], has_side_effects=True)) for v in values]
