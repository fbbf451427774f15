"""A 256-entry int8 lookup table on a host's byte shuffles (`microkernel =
"vector-lookup-int8"` for a stand-alone `glowll.int_lookup_table`, and the fused tables of the
host's int8 convolution kernels).

`vpshufb` (SSSE3, AVX2, AVX-512BW) looks up 16 entries at once, by each byte's low four bits,
and gives 0 where the byte's sign bit is set. The table is taken as 16 sub-tables of 16
entries, eight for the levels 0..127 (`T[k]`: levels 16k..16k+15) and eight for -128..-1
(indexed by the level + 128), each sub-table XORed with the one before it (`D[0] = T[0]`,
`D[k] = T[k] ^ T[k - 1]`, computed once per kernel). Along a half, the lookup XORs
`vpshufb(D[k], x)` for k = 0..7 while x = the level less 16k by a saturating subtraction: x
stays non-negative for k <= level >> 4, so the XORs telescope to `T[level >> 4][level & 15]`,
and is negative past it (as is every x of a level of the other half: saturation keeps it
so), so those shuffles add 0. One shuffle, one XOR and one subtraction a sub-table: 47
instructions for 16, 32 or 64 levels (xmm, ymm, zmm), against a load and a store a level
one lane at a time; `glowll-select-vector-columns` takes the ymm or zmm form (`SHUFFLE_BYTES`).
On AArch64, NEON's `tbl`/`tbx` read 64 entries (four registers) at once: one `tbl` and three
`tbx` for 16 levels (`neon_lookup`).
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, VectorType, i8, i32
from xdsl.ir import SSAValue

from glowmlir.dialects import glowll
from glowmlir.dialects.weights import array_from_dense
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


def differences(b: KernelBuilder, table_by_level: View, width: int,
                entries: np.ndarray | None = None) -> list[list[SSAValue | None]]:
    """The sub-tables of the levels 0..127 and of -128..-1, each XORed with the one before it
    (`D[k] = T[k] ^ T[k - 1]`), every 128-bit lane of a `width`-byte vector the same 16
    entries; `table_by_level` indexed by the level (-128..127). Where the table's `entries`
    are known at compile time (by level, -128..127), a D[k] that is all zeros (T[k] the same
    16 entries as T[k - 1], as in a HardSwish's or HardSigmoid's flat ends) is None: its
    shuffle would add nothing (`shuffled_lookup` skips it)."""
    order = DenseArrayBase.from_list(i32, [lane % SUB_TABLE for lane in range(width)])
    halves = []
    for first in (0, -128):
        sub_tables = []
        for k in range(128 // SUB_TABLE):
            entries_k = load_vector(b, table_by_level, [first + SUB_TABLE * k], SUB_TABLE)
            if width != SUB_TABLE:
                entries_k = b.emit(llvm.ShuffleVectorOp(entries_k, entries_k, order, VectorType(i8, [width])))
            sub_tables.append(entries_k)
        known = None if entries is None else [
            entries[128 + first + SUB_TABLE * k:][:SUB_TABLE] for k in range(128 // SUB_TABLE)]
        halves.append([sub_tables[0], *(
            None if known is not None and np.array_equal(known[k], known[k - 1]) else b.int_xor(t, before)
            for k, (before, t) in enumerate(zip(sub_tables, sub_tables[1:]), start=1))])
    return halves


def shuffled_lookup(b: KernelBuilder, tables: list[list[SSAValue | None]], levels: SSAValue) -> SSAValue:
    """Each int8 level of `levels` (16, 32 or 64 of them) replaced by its table entry, from
    `differences` of the same width (the module doc). A skipped sub-table (None) costs
    nothing: the index's saturating subtractions of 16 before the next one are made as one of
    16 m (an index at or above 16 m is exact either way, one below it negative either way)."""
    vector = levels.type
    lanes = vector.get_shape()[0]
    intrinsic = PSHUFB[lanes]
    entries = None
    for sub_tables, start in zip(tables, (levels, b.int_xor(levels, b.constant(-128, vector)))):
        index, pending = start, 0
        for k, table in enumerate(sub_tables):
            pending += 1 if k else 0
            if table is None:
                continue
            if pending:
                index = b.emit(llvm.CallIntrinsicOp(f"llvm.ssub.sat.v{lanes}i8",
                                                    [index, b.constant(SUB_TABLE * pending, vector)], [vector]))
                pending = 0
            part = b.emit(llvm.CallIntrinsicOp(intrinsic, [table, index], [vector]))
            entries = part if entries is None else b.int_xor(entries, part)
    return entries


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


def constant_entries(op: glowll.IntLookupTableOp) -> np.ndarray | None:
    """The table's 256 entries by level (-128..127) where it is a constant weight, else None."""
    weight = op.table.owner
    if isinstance(weight, glowll.WeightOp) and weight.value is not None:
        return array_from_dense(weight.value).reshape(-1)
    return None


def emit_int_lookup_table(b: KernelBuilder, op: glowll.IntLookupTableOp, view) -> None:
    """dest[i] = table[input[i] + 128], `SHUFFLE_BYTES` levels a step by `shuffled_lookup`
    (x86) or `neon_lookup` (the last step's lanes masked)."""
    b.optimize_for_size = True
    dest, source, table = view(op.dest), view(op.input), view(op.table)
    shuffles = shuffles_of(op)
    width = SHUFFLE_BYTES[shuffles]
    size = math.prod(dest.shape)
    flat_dest, flat_source = dest.reshaped((size,), (1,)), source.reshaped((size,), (1,))
    if shuffles == "neon":
        quarters = [[load_vector(b, table, [SUB_TABLE * (NEON_REGISTERS * q + r)], SUB_TABLE)
                     for r in range(NEON_REGISTERS)] for q in range(256 // (NEON_REGISTERS * SUB_TABLE))]

        def entries_of(levels: SSAValue) -> SSAValue:
            return neon_lookup(b, quarters, levels)
    else:
        tables = differences(b, table.reshaped(table.shape, table.strides, table.offset + 128), width,
                             constant_entries(op))

        def entries_of(levels: SSAValue) -> SSAValue:
            return shuffled_lookup(b, tables, levels)

    def look_up(at: Index, count: int) -> None:
        loaded = None if count == width else [lane < count for lane in range(width)]
        levels = load_vector(b, flat_source, [at], width, loaded)
        store_vector(b, entries_of(levels), flat_dest, [at], loaded)

    in_runs(b, size, width, look_up)
