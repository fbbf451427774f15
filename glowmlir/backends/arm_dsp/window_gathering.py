"""The gathered product's windows: each output pixel's taps (a WINDOW_PAIRS convolution) gathered
once as pairs, in the packed filter's order."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.ir import SSAValue

from glowmlir.backends.arm_dsp.instructions import intrinsic, level, pack_halves, pairs_of_four
from glowmlir.backends.arm_dsp.layout import (
    window_row_order,
)
from glowmlir.backends.arm_dsp.stack_copies import PaddedInput
from glowmlir.dialects import glow, glowll
from glowmlir.lowering.kernel_builder import Index, KernelBuilder, View
from glowmlir.lowering.loop_skeletons import (
    ArithmeticDomain,
)


def gather_windows(b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, src: View, gathered: View,
                   n: Index, x0: Index, count: int, x_offset: SSAValue | None,
                   padded: PaddedInput | None = None, pixel_at: Callable[[Index], tuple[Index, Index]] | None = None,
                   looped: bool = False, by_pixel_pairs: bool = False) -> None:
    """The windows of output pixels x0 .. x0 + count - 1 (row-major over the output plane; or
    the pixels `pixel_at(k)` = (row, column), k < count) into `gathered` ([pixel pair, tap
    pair, slot]) as pairs of taps (c, ky, kx) in the packed filter's order, an odd last tap
    paired with 0: a tap in the padding is the input zero point (the folded bias takes off
    its product; not folded, the pair less `x_offset` is 0). A window wholly inside the
    input, or any window of the `padded` copy of image n, loads its taps at constant offsets
    from its origin. `looped` (a size-first build): the taps of one input channel at a time
    (two when a channel's are odd) in a loop. `by_pixel_pairs` (straight products,
    `UNROLLED_PAIRS`), when every window is inside: two pixels' windows a loop step, each tap
    pair of the two side by side stored with one `STRD` (DS-CNN's stem on the M7: 66
    instructions a pixel, 108 a pixel pair). Over more pairs the code doubled for little: the
    int16 windows of `test_arm_dsp_kernels` on the M55 took 12 KB more."""
    _, in_c, in_h, in_w = src.shape
    _, _, k_h, k_w = op.filter_shape.get_values()
    sy, sx = op.strides.get_values()
    dy, dx = op.dilations.get_values()
    pt, pl, _, _ = op.pads.get_values()
    out_w = glow.convolution_shape(op)[3]
    zero_point = b.int_value(domain.input_offset)
    rows_inside, columns_inside = in_h - (k_h - 1) * dy, in_w - (k_w - 1) * dx  # window origins inside

    def row_major(k: Index) -> tuple[Index, Index]:
        pixel = b.add(x0, k)
        return b.div(pixel, out_w), b.remainder(pixel, out_w)

    def origin(k: Index) -> tuple[Index, Index]:
        """The row and column of pixel k's window's first tap (in the padded copy, if any)."""
        out_y, out_x = (pixel_at or row_major)(k)
        top, left = b.mul(out_y, sy), b.mul(out_x, sx)
        return (top, left) if padded is not None else (b.sub(top, pt), b.sub(left, pl))

    def window_pairs(k: Index, clamped: bool, first: Index, channels: int) -> list[SSAValue]:
        """The pairs of taps of pixel k's window in input channels first .. first + channels - 1;
        `clamped`: some taps may be outside the input (clamped loads, the zero point where
        outside), else all are inside (it or its padded copy)."""
        top, left = origin(k)

        def coordinates(start: Index, step: int, taps: int, size: int) -> list[tuple[Index, SSAValue | None]]:
            """(coordinate, clamped into the input when padded, whether it is inside) per tap."""
            found = []
            for t in range(taps):
                at = b.add(start, t * step)
                found.append((b.min(b.max(at, 0), size - 1), b.in_range(at, size)) if clamped else (at, None))
            return found

        rows, columns = coordinates(top, dy, k_h, in_h), coordinates(left, dx, k_w, in_w)
        view, prefix = (src, [n]) if padded is None else (padded.view, [])
        if not clamped and k_w % 4 == 0 and dx == 1:  # a word of four taps: two pairs as they are
            return [pair for c, ky in np.ndindex(channels, k_h) for x, _ in columns[::4]
                    for pair in pairs_of_four(b, view, [*prefix, b.add(first, c), rows[ky][0], x], x_offset)]
        levels = []
        for c, ky in np.ndindex(channels, k_h):
            y, row_inside = rows[ky]
            for kx in window_row_order(k_w, dx):
                x, column_inside = columns[kx]
                loaded = level(b, view, [*prefix, b.add(first, c), y, x])
                levels.append(b.select(b.int_and(row_inside, column_inside), loaded, zero_point)
                              if clamped else loaded)
        if len(levels) % 2:
            levels.append(b.integer(0))
        pairs = [pack_halves(b, levels[2 * i], levels[2 * i + 1]) for i in range(len(levels) // 2)]
        if x_offset is not None:
            pairs = [intrinsic(b, "sadd16", pair, x_offset) for pair in pairs]
        return pairs

    def window(k: Index, clamped: bool) -> None:
        """Pixel k's taps into its slots."""
        def channel_pairs(first: Index, channels: int, first_pair: Index) -> None:
            for i, pair in enumerate(window_pairs(k, clamped, first, channels)):
                b.store(pair, gathered, [b.div(k, 2), b.add(first_pair, i), b.remainder(k, 2)])

        step = 1 if k_h * k_w % 2 == 0 else 2  # channels of whole pairs
        if not looped or in_c < 2 * step:
            channel_pairs(0, in_c, 0)
            return
        with b.loop(0, in_c // step) as c:
            channel_pairs(b.mul(c.index, step), step, b.mul(c.index, step * k_h * k_w // 2))
        if in_c % step:
            channel_pairs(in_c - in_c % step, in_c % step, (in_c - in_c % step) * k_h * k_w // 2)

    inside = padded is not None or not any(op.pads.get_values())
    paired = inside and by_pixel_pairs and count > 1
    if paired:  # each tap pair of two pixels side by side: one STRD
        with b.loop(0, count // 2) as q:
            both = [window_pairs(b.add(b.mul(q.index, 2), p), False, 0, in_c) for p in range(2)]
            for i, pixel_pairs in enumerate(zip(*both, strict=True)):
                for p, pair in enumerate(pixel_pairs):
                    b.store(pair, gathered, [q.index, i, p])
    with b.loop(count // 2 * 2 if paired else 0, count) as k:
        if inside:
            window(k.index, False)
        elif rows_inside <= 0 or columns_inside <= 0:
            window(k.index, True)
        else:  # most windows of a large input lie inside it: their taps need no clamping
            top, left = origin(k.index)
            interior = b.int_and(b.in_range(top, rows_inside), b.in_range(left, columns_inside))
            with b.when(interior):
                window(k.index, False)
            with b.when(b.int_xor(interior, b.constant(1, interior.type))):
                window(k.index, True)
