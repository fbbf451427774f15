"""A 256-entry int8 lookup table on a host's byte shuffles (`microkernel =
"vector-lookup-int8"` for a stand-alone `glowll.int_lookup_table`: the host vector unit's int8
convolution kernels take no fused table, docs/quantization.md).

`vpshufb` (SSSE3, AVX2, AVX-512BW) looks up 16 entries at once, by each byte's low four bits,
and gives 0 where the byte's sign bit is set. The table is taken as 16 sub-tables of 16
entries, eight for the levels 0..127 (`T[k]`: levels 16k..16k+15) and eight for -128..-1
(indexed by the level + 128, i.e. the level ^ 0x80), in eight pairs (T[k], T[k - 8]). Pair
k's two shuffles, by the level and by the level ^ 0x80, ORed, give in each lane the entry of
sub-table k of the level's half (the other half's shuffle is 0 there: its index's sign bit
is set); a tree of seven byte blends then picks, by the level's bits 4, 5 and 6, the pair
that holds the level (`blended_lookup`). 16 shuffles, 8 ORs, 7 blends, 3 additions (bits 6,
5 and 4 moved to the sign bit, which a blend reads) and an XOR: 35 instructions for 16, 32 or
64 levels (xmm, ymm, zmm), against a load and a store a level one lane at a time;
`glowll-select-vector-columns` takes the ymm or zmm form (`SHUFFLE_BYTES`). The chain it
replaced (each sub-table XORed with the one before, the XORs of 16 shuffles by the level less
16k telescoping: 47 instructions) ran a 38,400-level HardSwish table in 6.5 µs on the AVX2
host, the tree in 5.2 (docs/quantization.md, "The host's lookup tables on a blend tree").
On AArch64, NEON's `tbl`/`tbx` read 64 entries (four registers) at once: one `tbl` and three
`tbx` for 16 levels (`neon_lookup`). On AVX2 a HardSwish table whose entries an int16
`vpmulhrsw` form is proved to give, all 256 of them, is computed instead (`arithmetic_form`,
`table_arithmetic`: 19 instructions per 32 levels, no shuffles).
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, VectorType, i8, i32
from xdsl.ir import SSAValue

from glowmlir.backends.host_vector.int8_depthwise import NEON_BYTES, products_of
from glowmlir.backends.host_vector.table_arithmetic import HardSwishForm, computed_entries, hard_swish_form
from glowmlir.dialects import glowll
from glowmlir.dialects.quant import UniformQuantizedType
from glowmlir.dialects.weights import array_from_dense
from glowmlir.lowering.fused_tables import looked_up_by_vectors
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.vector_columns import in_runs, load_vector, store_vector

PSHUFB = {16: "llvm.x86.ssse3.pshuf.b.128", 32: "llvm.x86.avx2.pshuf.b", 64: "llvm.x86.avx512.pshuf.b.512"}
"""`vpshufb` by vector bytes: each 128-bit lane looked up in its own 16 bytes."""

SHUFFLE_BYTES = {"avx2": 32, "avx512bw": 64, "neon": 16}
"""Levels a stand-alone lookup takes a step, by the target's byte shuffles
(`host_vector.target.byte_shuffles`)."""

NEON_REGISTERS = 4
"""Table registers a NEON `tbl`/`tbx` reads: 64 entries."""

SUB_TABLE = 16
"""Entries a shuffle indexes (a 128-bit lane)."""


def shuffles_of(op: glowll.IntLookupTableOp) -> str:
    """A stand-alone lookup's byte shuffles: its microkernel's `shuffles` parameter."""
    return op.microkernel.parameter("shuffles").data


def sub_tables(b: KernelBuilder, table_by_level: View, width: int,
               entries: np.ndarray | None = None) -> list[tuple[SSAValue, SSAValue]]:
    """The table's eight pairs of sub-tables (`T[k]`: levels 16k..16k+15, and `T[k - 8]`:
    levels 16k - 128..16k - 113), every 128-bit lane of a `width`-byte vector the same 16
    entries; `table_by_level` indexed by the level (-128..127). Where the table's `entries` are
    known at compile time (by level, -128..127), equal sub-tables are one value, and pairs of
    equal sub-tables one pair (`blended_lookup` shuffles and blends them once: a HardSwish's or
    HardSigmoid's flat ends)."""
    order = DenseArrayBase.from_list(i32, [lane % SUB_TABLE for lane in range(width)])
    loaded: dict[object, SSAValue] = {}

    def sub_table(first: int) -> SSAValue:
        key = first if entries is None else entries[128 + first:][:SUB_TABLE].tobytes()
        if key not in loaded:
            entries_k = load_vector(b, table_by_level, [first], SUB_TABLE)
            if width != SUB_TABLE:
                entries_k = b.emit(llvm.ShuffleVectorOp(entries_k, entries_k, order, VectorType(i8, [width])))
            loaded[key] = entries_k
        return loaded[key]

    return [(sub_table(SUB_TABLE * k), sub_table(SUB_TABLE * k - 128)) for k in range(128 // SUB_TABLE)]


def blended_lookup(b: KernelBuilder, pairs: list[tuple[SSAValue, SSAValue]], levels: SSAValue) -> SSAValue:
    """Each int8 level of `levels` (16, 32 or 64 of them) replaced by its table entry, from
    `sub_tables` of the same width (the module doc): pair k's two sub-tables shuffled by the
    level and by the level ^ 0x80 and ORed, then the eight chosen between by a tree of seven
    byte blends on the level's bits 4, 5 and 6 (each moved to the sign bit, which a blend
    reads, by doubling the level: bit 6 once, bit 5 twice, bit 4 three times). A pair equal to
    another is shuffled once, and a blend of one value with itself is none."""
    vector = levels.type
    intrinsic = PSHUFB[vector.get_shape()[0]]
    other_half = b.int_xor(levels, b.constant(-128, vector))
    shuffled: dict[tuple[SSAValue, SSAValue], SSAValue] = {}
    for pair in pairs:
        if pair not in shuffled:
            high, low = (b.emit(llvm.CallIntrinsicOp(intrinsic, [table, index], [vector]))
                         for table, index in zip(pair, (levels, other_half)))
            shuffled[pair] = b.int_or(high, low)
    chosen = [shuffled[pair] for pair in pairs]
    bit_6 = b.int_add(levels, levels)
    bit_5 = b.int_add(bit_6, bit_6)
    bit_4 = b.int_add(bit_5, bit_5)
    for bit in (bit_4, bit_5, bit_6):
        set_lanes = None
        chosen_by_bit = []
        for clear, set_ in zip(chosen[::2], chosen[1::2]):
            if clear is not set_ and set_lanes is None:
                set_lanes = b.int_compare("slt", bit, b.constant(0, vector))
            chosen_by_bit.append(clear if clear is set_ else b.select(set_lanes, set_, clear))
        chosen = chosen_by_bit
    return chosen[0]


def neon_lookup(b: KernelBuilder, quarters: list[SSAValue], levels: SSAValue) -> SSAValue:
    """16 int8 levels looked up on NEON: the table's four quarters of 64 entries, each four
    registers; `tbl` reads the first by the level + 128 (an index of 64 or more gives 0), and
    `tbx` each next one by the index less 64 more (an index out of its range keeps the lane)."""
    vector = levels.type
    index = b.int_xor(levels, b.constant(-128, vector))  # level + 128, as an unsigned byte
    entries = b.emit(llvm.CallIntrinsicOp("llvm.aarch64.neon.tbl4.v16i8", [*quarters[0], index], [vector]))
    for quarter in quarters[1:]:
        index = b.int_sub(index, b.constant(4 * SUB_TABLE, vector))
        entries = b.emit(llvm.CallIntrinsicOp("llvm.aarch64.neon.tbx4.v16i8", [entries, *quarter, index], [vector]))
    return entries


def neon_quarters(b: KernelBuilder, table: View) -> list[list[SSAValue]]:
    """A 256-entry table (`table` indexed from its first entry, the level -128's) as `neon_lookup`'s
    four quarters of four registers."""
    return [[load_vector(b, table, [SUB_TABLE * (NEON_REGISTERS * q + r)], SUB_TABLE) for r in range(NEON_REGISTERS)]
            for q in range(256 // (NEON_REGISTERS * SUB_TABLE))]


class NeonTable:
    """A convolution's fused lookup table (`glowll-fuse-lookup-tables`) on NEON's `tbl`/`tbx`
    (`fused_tables.TableInRegisters`): each output step loads its quarters (`ld1` of four
    registers, 64 bytes, each) and looks its levels up 16 at a time by `neon_lookup` (8 levels
    widened to 16, more cut into 16s), where a table read a level took a load and a lane insert
    each. The quarters are loaded where they are used: loaded once a kernel, LLVM spilled
    them to the stack beside the tiles' registers and copied them into `tbl`'s consecutive
    registers (the 1x1 16 -> 88 on 3 x 96 with a table: 209,431 instructions, against
    191,642 with the table apart; see docs/quantization.md, stop 68)."""

    def __init__(self, b: KernelBuilder, table_by_level: View):
        self.b, self.by_level = b, table_by_level
        self.first = table_by_level.reshaped(table_by_level.shape, table_by_level.strides, table_by_level.offset - 128)

    def look_up(self, levels: SSAValue) -> SSAValue:
        b = self.b
        quarters = neon_quarters(b, self.first) if isinstance(levels.type, VectorType) else None
        return looked_up_by_vectors(b, levels, self.by_level, SUB_TABLE, lambda part: neon_lookup(b, quarters, part))


def neon_applies_tables(op: glowll.ConvolutionOp) -> bool:
    """Whether a host vector int8 convolution kernel applies a fused lookup table
    (`Microkernel.lookup_tables`): on NEON's products (`products = "neon"` or `"neon-bytes"`),
    by `NeonTable`."""
    return products_of(op) in ("neon", NEON_BYTES)


def neon_tables_in_registers(b: KernelBuilder, domain, op: glowll.ConvolutionOp) -> None:
    """At a NEON int8 kernel's entry (`neon_applies_tables`), its fused table as a `NeonTable`
    in place of the domain's view of it."""
    if isinstance(domain.lookup_table, View) and neon_applies_tables(op):
        domain.lookup_table = NeonTable(b, domain.lookup_table)


def constant_entries(op: glowll.IntLookupTableOp) -> np.ndarray | None:
    """The table's 256 entries by level (-128..127) where it is a constant weight, else None."""
    weight = op.table.owner
    if isinstance(weight, glowll.WeightOp) and weight.value is not None:
        return array_from_dense(weight.value).reshape(-1)
    return None


def arithmetic_form(op: glowll.IntLookupTableOp) -> HardSwishForm | None:
    """The int16 form (`table_arithmetic`) proved to give every entry of the op's constant
    table between its int8 types, on AVX2; None where there is none (the table is looked up)."""
    entries = constant_entries(op)
    types = [value.type.element_type for value in (op.input, op.dest)]
    if shuffles_of(op) != "avx2" or entries is None or not all(
            isinstance(t, UniformQuantizedType) and not t.per_channel for t in types):
        return None
    input_type, output_type = types
    return hard_swish_form(entries.astype(np.int64), input_type.scale, input_type.offset, output_type.scale,
                           output_type.offset)


def emit_int_lookup_table(b: KernelBuilder, op: glowll.IntLookupTableOp, view) -> None:
    """dest[i] = table[input[i] + 128], `SHUFFLE_BYTES` levels a step by the table's int16
    form where one is proved (`arithmetic_form`), else by `blended_lookup` (x86) or
    `neon_lookup` (the last step's lanes masked)."""
    b.optimize_for_size = True
    dest, source, table = view(op.dest), view(op.input), view(op.table)
    shuffles = shuffles_of(op)
    width = SHUFFLE_BYTES[shuffles]
    size = math.prod(dest.shape)
    flat_dest, flat_source = dest.reshaped((size,), (1,)), source.reshaped((size,), (1,))
    form = arithmetic_form(op)
    if form is not None:
        def entries_of(levels: SSAValue) -> SSAValue:
            return computed_entries(b, form, levels)
    elif shuffles == "neon":
        quarters = neon_quarters(b, table)

        def entries_of(levels: SSAValue) -> SSAValue:
            return neon_lookup(b, quarters, levels)
    else:
        pairs = sub_tables(b, table.reshaped(table.shape, table.strides, table.offset + 128), width,
                           constant_entries(op))

        def entries_of(levels: SSAValue) -> SSAValue:
            return blended_lookup(b, pairs, levels)

    def look_up(at: Index, count: int) -> None:
        loaded = None if count == width else [lane < count for lane in range(width)]
        levels = load_vector(b, flat_source, [at], width, loaded)
        store_vector(b, entries_of(levels), flat_dest, [at], loaded)

    in_runs(b, size, width, look_up)
