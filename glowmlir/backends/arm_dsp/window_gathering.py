"""The gathered product's windows: each output pixel's taps (a WINDOW_PAIRS convolution) gathered
once as pairs, in the packed filter's order."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from xdsl.ir import SSAValue

from glowmlir.backends.arm_dsp.instructions import intrinsic, pack_halves, pairs_of_four
from glowmlir.backends.arm_dsp.layout import (
    window_row_order,
    word_taps,
)
from glowmlir.backends.arm_dsp.stack_copies import PaddedInput
from glowmlir.dialects import glow, glowll
from glowmlir.lowering.int8_sums import level
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
    WindowGathering(b, domain, op, src, gathered, n, x0, x_offset, padded, pixel_at, looped).gather(
        count, by_pixel_pairs)


STRAIGHT_WINDOWS = 4
"""A run of at most this many pixels of straight products (`layout.UNROLLED_PAIRS`, at most 64
taps a window) whose input is padded but too large to copy (`stack_copies.PADDED_INPUT_BYTES`)
is tested once for lying wholly inside the input, then gathered in straight-line code
(`WindowGathering.straight_run`), where each pixel was tested and its slots' addresses
computed at run time: visual wake words' stem (96 x 96 x 3, SAME, stride 2, runs of four
pixels) on the M4 1,043,735 -> 903,452 estimated cycles, on the M7 674,144 -> 578,216 (in a
random-weight net of its first five layers)."""


class WindowOrigin(NamedTuple):
    """Where a window's taps are read: tap (c, ky, kx) at `view[*prefix, c, top + ky dy,
    left + kx dx]`."""

    view: View
    prefix: list[Index]
    top: Index
    left: Index


class WindowGathering:
    """The windows of a run of output pixels of image n from pixel x0 (`gather_windows`): the
    convolution's window, where its taps are read (the input, or its `padded` copy) and the
    zero point a tap outside it takes."""

    def __init__(self, b: KernelBuilder, domain: ArithmeticDomain, op: glowll.ConvolutionOp, src: View,
                 gathered: View, n: Index, x0: Index, x_offset: SSAValue | None, padded: PaddedInput | None,
                 pixel_at: Callable[[Index], tuple[Index, Index]] | None, looped: bool):
        self.b, self.src, self.gathered, self.n, self.x0, self.x_offset = b, src, gathered, n, x0, x_offset
        self.padded, self.pixel_at, self.looped = padded, pixel_at, looped
        _, self.in_c, self.in_h, self.in_w = src.shape
        _, _, self.k_h, self.k_w = op.filter_shape.get_values()
        self.sy, self.sx = op.strides.get_values()
        self.dy, self.dx = op.dilations.get_values()
        self.pt, self.pl, _, _ = op.pads.get_values()
        self.out_w = glow.convolution_shape(op)[3]
        self.zero_point = b.int_value(domain.input_offset)
        self.inside = padded is not None or not any(op.pads.get_values())  # every window

    def gather(self, count: int, by_pixel_pairs: bool) -> None:
        """The `count` pixels' windows into their slots (two pixels' a step, `by_pixel_pairs`)."""
        b, in_h, in_w = self.b, self.in_h, self.in_w
        rows_inside = in_h - (self.k_h - 1) * self.dy  # window origins inside
        columns_inside = in_w - (self.k_w - 1) * self.dx
        paired = self.inside and by_pixel_pairs and count > 1
        if paired:  # each tap pair of two pixels side by side: one STRD
            with b.loop(0, count // 2) as q:
                both = [self.window_pairs(b.add(b.mul(q.index, 2), p), False, 0, self.in_c) for p in range(2)]
                for i, pixel_pairs in enumerate(zip(*both, strict=True)):
                    for p, pair in enumerate(pixel_pairs):
                        b.store(pair, self.gathered, [q.index, i, p])
        if (not self.inside and by_pixel_pairs and 1 < count <= STRAIGHT_WINDOWS and self.pixel_at is None
                and rows_inside > 0 and columns_inside > 0):
            self.straight_run(count, rows_inside, columns_inside)
            return
        with b.loop(count // 2 * 2 if paired else 0, count) as k:
            if self.inside:
                self.window(k.index, False)
            elif rows_inside <= 0 or columns_inside <= 0:
                self.window(k.index, True)
            else:  # most windows of a large input lie inside it: their taps need no clamping
                self.window_tested(k.index, rows_inside, columns_inside)

    def straight_run(self, count: int, rows_inside: int, columns_inside: int) -> None:
        """A run of `count` pixels (`STRAIGHT_WINDOWS` at most) of a padded input too large to
        copy: when every window of the run lies inside the input (one test a run), each
        window is gathered in straight-line code, its taps and its slots at constant offsets;
        else the pixels one at a time, each tested. The run is inside when its first window
        and the window `count - 1` output columns to its right are: one division of x0 by the
        output width, where each pixel's took one. A run that wraps to the next output row
        never passes (an output column past the last one has a window past the input's side,
        its first column at least `columns_inside`), so the windows between lie in one row,
        `sx` columns apart, and every tap is at a constant offset from one pointer to the run's
        first window (made opaque: LLVM had kept a register offset a column and computed each).
        A run that is not inside takes its pixels from an opaque x0: else LLVM's loop strength
        reduction carried five of their addresses on the stack over every run. Visual wake
        words' stem (`glow-run -cycles -profile`, estimated cycles) on the M4 810,952 ->
        791,238 (one test, one pointer) -> 770,566 (the opaque x0), on the M7 523,252 ->
        517,453 -> 505,372."""
        b = self.b
        top, left = self.origin(0)
        last = b.add(left, (count - 1) * self.sx)  # the run's last window's first column, if in the same row
        interior = b.int_and(b.int_and(b.in_range(top, rows_inside), b.in_range(left, columns_inside)),
                             b.in_range(last, columns_inside))
        with b.when(interior):  # every tap at a constant offset from the run's first window's
            view = self.src
            first = b.opaque(b.element(view, [self.n, 0, top, left]))
            run = WindowOrigin(View(first, view.shape[1:], view.strides[1:], 0, view.element_type), [], 0, 0)
            for k in range(count):
                self.window(k, False, run._replace(left=k * self.sx))
        with b.when(b.int_xor(interior, b.constant(1, interior.type))):
            tested = copy.copy(self)  # from an opaque x0: no induction variables of the loop over runs
            tested.x0 = b.opaque(self.x0) if isinstance(self.x0, SSAValue) else self.x0
            with b.loop(0, count) as k:
                tested.window_tested(k.index, rows_inside, columns_inside)

    def window_inside(self, k: Index, rows_inside: int, columns_inside: int) -> SSAValue:
        """Whether pixel k's window lies inside the input (its taps need no clamping)."""
        top, left = self.origin(k)
        return self.b.int_and(self.b.in_range(top, rows_inside), self.b.in_range(left, columns_inside))

    def window_tested(self, k: Index, rows_inside: int, columns_inside: int) -> None:
        """Pixel k's window, gathered unclamped where it lies inside the input, clamped else."""
        b = self.b
        inside = self.window_inside(k, rows_inside, columns_inside)
        with b.when(inside):
            self.window(k, False)
        with b.when(b.int_xor(inside, b.constant(1, inside.type))):
            self.window(k, True)

    def row_major(self, k: Index) -> tuple[Index, Index]:
        pixel = self.b.add(self.x0, k)
        return self.b.div(pixel, self.out_w), self.b.remainder(pixel, self.out_w)

    def origin(self, k: Index) -> tuple[Index, Index]:
        """The row and column of pixel k's window's first tap (in the padded copy, if any)."""
        b = self.b
        out_y, out_x = (self.pixel_at or self.row_major)(k)
        top, left = b.mul(out_y, self.sy), b.mul(out_x, self.sx)
        return (top, left) if self.padded is not None else (b.sub(top, self.pt), b.sub(left, self.pl))

    def coordinates(self, start: Index, step: int, taps: int, size: int,
                    clamped: bool) -> list[tuple[Index, SSAValue | None]]:
        """(coordinate, clamped into the input when `clamped`, whether it is inside) per tap."""
        b, found = self.b, []
        for t in range(taps):
            at = b.add(start, t * step)
            found.append((b.min(b.max(at, 0), size - 1), b.in_range(at, size)) if clamped else (at, None))
        return found

    def window_pairs(self, k: Index, clamped: bool, first: Index, channels: int,
                     origin: WindowOrigin | None = None) -> list[SSAValue]:
        """The pairs of taps of pixel k's window (from its `origin` when given) in input
        channels first .. first + channels - 1; `clamped`: some taps may be outside the input
        (clamped loads, the zero point where outside), else all are inside (it or its padded
        copy)."""
        b, k_h, k_w, dx = self.b, self.k_h, self.k_w, self.dx
        view, prefix, top, left = origin or WindowOrigin(
            *((self.src, [self.n]) if self.padded is None else (self.padded.view, [])), *self.origin(k))
        rows = self.coordinates(top, self.dy, k_h, self.in_h, clamped)
        columns = self.coordinates(left, dx, k_w, self.in_w, clamped)
        words = word_taps(self.in_c, k_w, dx)  # each row's first taps, four a word (`window_tap_order`)

        def tap(c: int, ky: int, kx: int) -> SSAValue:
            """Tap (c, ky, kx)'s level: the zero point where `clamped` and outside the input."""
            (y, row_inside), (x, column_inside) = rows[ky], columns[kx]
            loaded = level(b, view, [*prefix, b.add(first, c), y, x])
            return b.select(b.int_and(row_inside, column_inside), loaded, self.zero_point) if clamped else loaded

        row_pairs, levels = [], []
        for c, ky in np.ndindex(channels, k_h):
            if not clamped:  # a word of four taps: two pairs as they are
                row_pairs += [pair for x, _ in columns[:words:4]
                              for pair in pairs_of_four(b, view, [*prefix, b.add(first, c), rows[ky][0], x],
                                                        self.x_offset)]
                continue
            levels += [tap(c, ky, kx) for kx in window_row_order(words, dx)]
        for c, ky in np.ndindex(channels, k_h):  # the rows' other taps, one by one
            levels += [tap(c, ky, kx) for kx in range(words, k_w)]
        if len(levels) % 2:
            levels.append(b.integer(0))
        pairs = [pack_halves(b, levels[2 * i], levels[2 * i + 1]) for i in range(len(levels) // 2)]
        if self.x_offset is not None:
            pairs = [intrinsic(b, "sadd16", pair, self.x_offset) for pair in pairs]
        return row_pairs + pairs

    def window(self, k: Index, clamped: bool, origin: WindowOrigin | None = None) -> None:
        """Pixel k's taps (from its window's `origin` when given) into its slots (`looped`: a
        loop over its input channels)."""
        b, in_c, taps = self.b, self.in_c, self.k_h * self.k_w

        def channel_pairs(first: Index, channels: int, first_pair: Index) -> None:
            for i, pair in enumerate(self.window_pairs(k, clamped, first, channels, origin)):
                b.store(pair, self.gathered, [b.div(k, 2), b.add(first_pair, i), b.remainder(k, 2)])

        step = 1 if taps % 2 == 0 else 2  # channels of whole pairs
        if not self.looped or in_c < 2 * step:
            channel_pairs(0, in_c, 0)
            return
        with b.loop(0, in_c // step) as c:
            channel_pairs(b.mul(c.index, step), step, b.mul(c.index, step * taps // 2))
        if in_c % step:
            channel_pairs(in_c - in_c % step, in_c % step, (in_c - in_c % step) * taps // 2)
