"""Int8 kernels on Helium, the M-profile vector extension (MVE: Cortex-M55).

Written as LLVM vector IR on `<4 x i32>`, which the Arm backend selects to MVE directly:
a sign-extending load of four int8 is `VLDRB.S32`, a weight broadcast over the lanes and
multiplied into an accumulator is `VMLA.I32 q, q, r`, and counted loops become
low-overhead loops (`DLS`/`LE`). The layout is `libraries.arm_mve_layout`'s.

* `convolution_rows`: a convolution of stride 1 along its rows. A tile of `ACCUMULATORS`
  vectors (4 output channels x 4 columns, 2 x 8 or 1 x 16) stays in Q registers over the
  input channels, kernel rows and taps; outputs whose taps reach into the padding, and the
  columns left over, are computed one at a time. Requantization runs per lane.
* `emit_fully_connected`: each output a plain dot product of int8 rows, which LLVM
  vectorizes into `VMLAVA.S8` (16 products an instruction).

Every output is exactly the int32 sum the generic int8 kernel computes, so outputs are
bit-identical to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import llvm
from xdsl.dialects.builtin import VectorType, i1, i8, i32
from xdsl.ir import SSAValue

from glowmlir.dialects import glowll
from glowmlir.libraries.arm_mve_layout import LANES, interior_columns, tile_vectors
from glowmlir.lowering import loop_skeletons
from glowmlir.lowering.arm_dsp import (
    kernel_rows_inside,
    level,
    one_row_per_channel,
    start,
    weight_offset_correction,
)
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import ArithmeticDomain, Row
from glowmlir.lowering.requantization import divide_by_power_of_two, shift_split

if TYPE_CHECKING:  # the int8 domain's module picks these kernels
    from glowmlir.lowering.quantized_kernels import QuantizedArithmetic

VECTOR = VectorType(i32, [LANES])
"""One Q register as int32 lanes."""

# ----------------------------------------------------------------------------- vector values


def splat(b: KernelBuilder, value: SSAValue) -> SSAValue:
    """`value` in every lane (`VDUP`, or the scalar operand of `VMLA`)."""
    return b.splat(value, VECTOR)


def input_vector(b: KernelBuilder, view: View, indices: list[Index], offset: int) -> SSAValue:
    """`LANES` consecutive int8 levels from `view[indices]`, widened to int32, minus `offset`."""
    loaded = b.emit(llvm.LoadOp(b.element(view, indices), VectorType(i8, [LANES]), alignment=1))
    widened = b.emit(llvm.SExtOp(loaded, VECTOR))
    return widened if offset == 0 else b.int_add(widened, -offset)


def masked_input_vector(b: KernelBuilder, view: View, indices: list[Index], loaded: list[bool],
                        offset: int) -> SSAValue:
    """`input_vector` with only the lanes `loaded` read (a predicated `VLDRB`): the others,
    which may lie before the row or past its end, hold `offset` (the level of a real 0), so
    they come out 0. The first lane's column (`indices[-1]`) may be negative."""
    row_start = b.element(view, [*indices[:-1], 0])
    column = indices[-1]
    address = b.emit(llvm.GEPOp(row_start, [llvm.GEP_USE_SSA_VAL], i8, ssa_indices=[b.index(column)]))
    narrow = VectorType(i8, [LANES])
    loaded_bytes = b.emit(llvm.CallIntrinsicOp(
        f"llvm.masked.load.{_mangled(narrow)}.p0",
        [address, b.integer(1), lane_mask(b, loaded), b.int_value(offset, narrow)],
        [narrow]))
    widened = b.emit(llvm.SExtOp(loaded_bytes, VECTOR))
    return widened if offset == 0 else b.int_add(widened, -offset)


def lane_mask(b: KernelBuilder, lanes: list[bool]) -> SSAValue:
    """A constant `<LANES x i1>` predicate."""
    mask = b.emit(llvm.UndefOp(VectorType(i1, [len(lanes)])))
    for lane, on in enumerate(lanes):
        mask = b.emit(llvm.InsertElementOp(mask, b.integer(int(on), i1), b.integer(lane)))
    return mask


def _mangled(vector: VectorType) -> str:
    """An intrinsic's type suffix: v4i8, v4i32."""
    return f"v{vector.get_shape()[0]}i{vector.element_type.width.data}"


def store_lanes(b: KernelBuilder, domain: QuantizedArithmetic, channel: Index, total: SSAValue, output: Row,
                x: Index, stored: list[bool] | None = None) -> None:
    """A vector of accumulators of one output channel into `output` from column x: through
    the domain's output step (requantization, clamping, narrowing), lanes side by side, or
    as they are when the domain keeps accumulators (a fused max pool); only the lanes
    `stored` says (all if None: a predicated store otherwise)."""
    storage = output.view.element_type
    if domain.output(channel, storage) is not None:
        total = b.truncate(requantized(b, domain, channel, total), VectorType(storage, [LANES]))
    address = b.element(output.view, output.at(x))
    if stored is None:
        # a GEP of the vector's type: llvmlite stores only through a pointer to the value's type
        address = b.emit(llvm.GEPOp(address, [0], total.type, inbounds=True))
        b.emit(llvm.StoreOp(total, address, alignment=1))
        return
    b.emit(llvm.CallIntrinsicOp(f"llvm.masked.store.{_mangled(total.type)}.p0",
                                [total, address, b.integer(1), lane_mask(b, stored)], []))


def requantized(b: KernelBuilder, domain: QuantizedArithmetic, channel: Index, total: SSAValue) -> SSAValue:
    """`clamp(requantize(total, M, S) + y_offset)` lane by lane: the doubling high multiply is
    `VQRDMULH` (the same rounding, and no lane can saturate: M > 0), the rest
    `requantization.divide_by_power_of_two` on vectors."""
    multiplier, shift = domain.requantization.of(channel)
    left, right = shift_split(b, shift)
    vector = total.type
    if not (isinstance(left, int) and left == 0):
        total = b.shift_left(total, left if isinstance(left, int) else b.splat(left, vector))
    multipliers = b.int_value(multiplier, vector) if isinstance(multiplier, int) else b.splat(multiplier, vector)
    high = b.emit(llvm.CallIntrinsicOp("llvm.arm.mve.vqrdmulh.v4i32", [total, multipliers], [vector]))
    high = divide_by_power_of_two(b, high, right if isinstance(right, int) else b.splat(right, vector))
    return b.clamp(b.int_add(high, domain.out_type.offset), domain.low, domain.high)


# ----------------------------------------------------------------------------- convolution


def convolution_rows(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, src: View, packed: View,
                     bias: View, n: Index, channels: list[Index], y: Index, outputs: list[Row], width: int,
                     accumulators: None = None, residual: None = None) -> None:
    """Convolution output row `y` of the output channels `channels` (one block) into
    `outputs` (`loop_skeletons.convolution_rows`' contract): tiles of vectors over the
    columns whose taps are all inside the input row, the other columns one by one."""
    _, _, in_h, in_w = src.shape
    out_c, group_c, k_h, k_w = op.filter_shape.get_values()
    _, pl, _, _ = op.pads.get_values()
    _, dx = op.dilations.get_values()
    group = op.group.value.data
    block = len(channels)
    first_channel = b.mul(b.div(channels[0], out_c // group), group_c) if group > 1 else 0
    o_block = b.div(channels[0], block) if block > 1 else channels[0]
    folded = op.folded_input_offset is not None
    top, ky_lo, ky_hi = kernel_rows_inside(b, op, y, in_h, k_h)

    def over_taps(totals: list[SSAValue], taps) -> list[SSAValue]:
        """`totals` after `taps(sums, channel, c, in_y, ky)` of every input channel and kernel row."""
        with b.loop(0, group_c, carried=totals) as c:
            with b.loop(ky_lo, ky_hi, carried=c.carried) as ky:
                in_y = b.add(top, b.mul(ky.index, op.dilations.get_values()[0]))
                ky.next(*taps(list(ky.carried), b.add(first_channel, c.index), c.index, in_y, ky.index))
            c.next(*ky.results)
        return c.results

    def tile(x0: Index, vectors: int) -> None:
        """`vectors` x `LANES` outputs from column x0, all taps inside the input."""
        def taps(sums, channel, c, in_y, ky):
            for kx in range(k_w):
                first = b.add(x0, kx * dx - pl)
                inputs = [input_vector(b, src, [n, channel, in_y, b.add(first, v * LANES)],
                                       0 if folded else domain.in_type.offset) for v in range(vectors)]
                for j in range(block):
                    weight = splat(b, domain.weight(packed, [o_block, c, ky, kx, j]))
                    for v, pixels in enumerate(inputs):
                        sums[v * block + j] = b.emit(llvm.AddOp(sums[v * block + j],
                                                                b.emit(llvm.MulOp(pixels, weight))))
            return sums

        starts = [splat(b, domain.bias(bias, o)) for o in channels]
        totals = over_taps(starts * vectors, taps)  # [v * block + j]
        for v in range(vectors):
            for j, output in enumerate(outputs):
                store_lanes(b, domain, channels[j], totals[v * block + j], output, b.add(x0, v * LANES))

    def edge_tile(x0: int, count: int) -> None:
        """`count` <= `LANES` outputs from column x0 (a compile-time column) in one vector per
        channel, with tail predication: a tap's lanes in the padding or past the row are not
        loaded (they hold the input offset: nothing is added), lanes past `count` not stored."""
        stored = [lane < count for lane in range(LANES)]

        def taps(sums, channel, c, in_y, ky):
            for kx in range(k_w):
                column = x0 - pl + kx * dx
                loaded = [stored[lane] and 0 <= column + lane < in_w for lane in range(LANES)]
                if not any(loaded):
                    continue
                at = [n, channel, in_y, column]
                offset = 0 if folded else domain.in_type.offset
                pixels = (input_vector(b, src, at, offset) if all(loaded) else
                          masked_input_vector(b, src, at, loaded, offset))
                for j in range(block):
                    weight = splat(b, domain.weight(packed, [o_block, c, ky, kx, j]))
                    sums[j] = b.emit(llvm.AddOp(sums[j], b.emit(llvm.MulOp(pixels, weight))))
            return sums

        totals = over_taps([splat(b, domain.bias(bias, o)) for o in channels], taps)
        for j, output in enumerate(outputs):
            store_lanes(b, domain, channels[j], totals[j], output, x0, None if all(stored) else stored)

    first, end = interior_columns(in_w, width, k_w, dx, pl)
    x = first
    for vectors in sorted({min(tile_vectors(block), max(1, (end - first) // LANES)), 1}, reverse=True):
        columns = vectors * LANES
        tiles = (end - x) // columns
        if tiles:
            with b.loop(0, tiles) as t:
                tile(b.add(x, b.mul(t.index, columns)), vectors)
            x += tiles * columns
    for lo, hi in ((0, first), (x, width)):
        for x0 in range(lo, hi, LANES):
            edge_tile(x0, min(LANES, hi - x0))


def emit_convolution(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, view) -> None:
    """A convolution packed for Helium: the shared skeleton with `convolution_rows`; an
    unpooled, unpadded 1x1 convolution sees each channel's pixels as one row."""
    block = view(op.filter).shape[4]
    if (op.pool is None and not any(op.pads.get_values()) and tuple(op.filter_shape.get_values())[2:] == (1, 1)
            and tuple(op.strides.get_values()) == (1, 1)):
        one_row_per_channel(b, domain, op, view, convolution_rows, block)
    else:
        loop_skeletons.emit_convolution(b, domain, op, view, convolution_rows, block)


# ----------------------------------------------------------------------------- fully connected


def emit_fully_connected(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.FullyConnectedOp, view) -> None:
    """Each output one dot product of int8 rows, written plainly so that LLVM vectorizes it
    for MVE into VMLAVA.S8 (16 products an instruction): with the input offset folded, the
    levels as they are and `- w_offset * sum x` once per row; else the generic
    products with their zero points."""
    dest, src, weights, bias = view(op.dest), view(op.input), view(op.weights), view(op.bias)
    rows, columns = dest.shape
    depth = src.shape[1]
    folded = op.folded_input_offset is not None
    with b.loop(0, rows) as m:
        correction = weight_offset_correction(b, domain, op, src, m.index)
        with b.loop(0, columns) as n:
            with b.loop(0, depth, carried=[start(b, domain, bias, n.index, correction)]) as k:
                if folded:
                    product = b.int_mul(level(b, src, [m.index, k.index]), level(b, weights, [n.index, k.index]))
                    k.next(b.int_add(k.carried[0], product))
                else:
                    k.next(domain.multiply_accumulate(k.carried[0], domain.input(src, [m.index, k.index]),
                                                      domain.weight(weights, [n.index, k.index])))
            b.store(domain.output(n.index, dest.element_type)(k.results[0]), dest, [m.index, n.index])
