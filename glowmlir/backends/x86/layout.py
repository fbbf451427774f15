"""The data layout of the int8 kernels on AVX-512 VNNI (`backends.x86.vnni_kernels`).

`vpdpbusd` adds to each int32 lane the four products of that lane's four unsigned bytes of
one operand and four signed bytes of the other. The kernels put output channels in the 16
lanes of a zmm register and take the input channels four at a time:

* the filter, OIHW, is stored as the kernel reads it (`pack_filter`): per block of 16 output
  channels, per group of 4 input channels and tap, 64 signed bytes, lane by lane the 4
  weights of the group, the filter's levels as they are; channels past the filter's zero,
  or, where the last block overlaps the one before (`pack_filter`), its last 16 channels;
* the input is unsigned: the kernel stores each int8 level x as the byte u = x ^ 0x80 =
  x + 128 (`x86_vnni.pack_input`, with the padding as the input zero point U = x_offset +
  128), and the weights are the filter's int8 levels w as they are, so with K taps an output
  `sum (x - x_offset)(w - w_offset) = sum u w - U sum w - w_offset sum u + w_offset U K`:
  the second and fourth terms go into the bias at compile time (`folded_bias`), the third,
  a sum over the input window alone, the kernel subtracts per pixel when w_offset is not 0.
  Sums wrap modulo 2^32 as the generic kernel's do, so the outputs are its own, bit for bit.

FullyConnected is the same product over one pixel: its [N, K] weights are packed as a 1x1
filter of K input channels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MICROKERNEL = "x86-vnni"
BYTE_PERMUTES = "byte_permutes"
"""The x86-vnni microkernel's parameter (a unit: `#glowll.microkernel<"x86-vnni", {byte_permutes}>`)
for a target with AVX-512 VBMI: a fused lookup table is applied by `vpermi2b`
(`vnni_kernels.PermutedTable`), not lane by lane."""
LOOKUP_TABLE_MICROKERNEL = "x86-vbmi"
"""An int8 lookup table's: 64 levels at once by `vpermi2b` (AVX-512 VBMI)."""
LANES = 16
"""int32 accumulators in a zmm register: output channels a block computes."""
GROUP = 4
"""Bytes `vpdpbusd` multiplies into one lane: input channels taken together."""
UNSIGNED_SHIFT = 128
"""x ^ 0x80 = x + 128: an int8 level as the unsigned byte `vpdpbusd` takes."""
ELEMENTWISE_MICROKERNEL = "x86-avx512"
"""An int8 `glowll.elementwise`'s AVX-512 microkernel: 16 levels at once on int32 lanes
(`lowering.vector_elementwise`), for these kinds (`ELEMENTWISE_KINDS`, operands of one shape or broadcast)."""
ELEMENTWISE_KINDS = ("add", "sub", "mul")

LARGEST_PACKED_INPUT = 512 * 1024
"""Bytes of the stack copy of a convolution's input (its channels in groups of 4, its
padding written out) above which a convolution keeps the generic int8 kernel."""
SHALLOW_POINTWISE_CHANNELS = 16
"""Input channels up to which an unpadded 1x1 convolution of stride 1 over more than one pixel
is left to the host vector unit's vector-pointwise-int8 on an AMD Zen core (`shallow_pointwise_channels`):
four or fewer `vpdpbusd` an output vector pay little for the input's copy and the stack tile each
block requantizes through (PP-OCR-cls-style's expand 1x1s of 8 and 16 input channels on 6x96 and
3x96, Zen 4: x86-vnni 1.75, 2.60 and 2.06 us, vector-pointwise-int8 1.07, 1.29 and 1.59 us;
docs/quantization.md, "Stop 60, on a Zen 4 host")."""
SHALLOWER_POINTWISE_CHANNELS = 0
"""`SHALLOW_POINTWISE_CHANNELS` on other cores (Intel's; a CPU not named): none. There x86-vnni
takes every 1x1 faster than vector-pointwise-int8 since its per-tensor layers have float output
steps in registers (`vnni_kernels.channel_rows`' pixel tiles), 8 input channels too (8->8 on
24x96, 8->24 on 12x96, 8->32 on 6x96, an Intel Xeon of AVX-512 VNNI: 0.96, 0.82 and 0.94x float
against vector-pointwise-int8's 1.10, 1.05 and 1.19x; docs/quantization.md, "Stop 67")."""


def shallow_pointwise_channels(cpu: str) -> int:
    """The input channels up to which a 1x1 is left to vector-pointwise-int8 on `cpu` (LLVM's
    name: "znver4" is an AMD Zen 4 core, which executes a 512-bit operation as two 256-bit halves)."""
    return SHALLOW_POINTWISE_CHANNELS if cpu.startswith("znver") else SHALLOWER_POINTWISE_CHANNELS


VECTOR_UNIT_LEVEL_BYTES = 2
"""Bytes a level of an unpooled, unpadded 1x1 filter of stride 1 takes where x86-vnni does not
take the layer: the host vector unit's vector-pointwise-int8 holds it as int16 halves of pair
words, 2 B a level. x86-vnni's packed filter (a byte a level, padded to whole blocks) costs
constants only beyond that (`select_kernels.vnni_packing_cost`): within Glow's constants the
PP-OCR cls model's 1x1s of 88 to 200 outputs take x86-vnni, and the host build's constants
fall 243,648 -> 175,424 B."""


def groups(channels: int) -> int:
    return -(-channels // GROUP)


def blocks(channels: int) -> int:
    return -(-channels // LANES)


def columns_in_bytes(filter_shape: Sequence[int], dilations: Sequence[int]) -> bool:
    """A filter of one input channel, over one column wide, its kernel columns one apart:
    four kernel columns take the four bytes of a word as four channels would (the filter
    packed as if OIHW were [O, KW, KH, 1], the input's words holding four adjacent columns:
    DS-CNN's 10x4 stem one `vpdpbusd` a kernel row, not four of one byte each)."""
    return filter_shape[1] == 1 and filter_shape[3] > 1 and dilations[1] == 1


def last_block_overlaps(filter_shape: Sequence[int]) -> bool:
    """Whether a VNNI convolution of this OIHW filter computes its last block of channels as
    the last 16 (over 16 channels, not a multiple): one kind of block, one copy of its code
    (LeNet's two convolutions 13.9 -> 9.8 KB, the net 1.1x slower). Not a 1x1 one: the
    MobileNets' hot layers, where the channels computed twice cost 5% of the net's time."""
    return tuple(filter_shape[2:]) != (1, 1)


def pack_filter(levels: np.ndarray, dilations: Sequence[int] = (1, 1), last_block_overlaps: bool = False) -> np.ndarray:
    """An OIHW int8 filter as [O / 16, C / 4, KH, KW, 16, 4] int8, zero-padded to whole blocks
    and groups (with `columns_in_bytes`, as [O / 16, KW / 4, KH, 1, 16, 4]). With
    `last_block_overlaps` and over 16 channels, the last block is the last 16 channels (O-16
    to O-1, some of them also the block before's), not padded."""
    if columns_in_bytes(levels.shape, dilations):
        levels = levels.transpose(0, 3, 2, 1)
    out_c, in_c, k_h, k_w = levels.shape
    if last_block_overlaps and out_c > LANES:
        levels = levels[[*range(out_c // LANES * LANES), *range(out_c - LANES, out_c)][:blocks(out_c) * LANES]]
    padded = np.zeros((blocks(out_c) * LANES, groups(in_c) * GROUP, k_h, k_w), np.int8)
    padded[:len(levels), :in_c] = levels
    return padded.reshape(blocks(out_c), LANES, groups(in_c), GROUP, k_h, k_w).transpose(0, 2, 4, 5, 1, 3).copy()


def packed_filter_shape(filter_shape: Sequence[int], dilations: Sequence[int] = (1, 1)) -> tuple[int, ...]:
    out_c, in_c, k_h, k_w = filter_shape
    if columns_in_bytes(filter_shape, dilations):
        in_c, k_w = k_w, 1
    return (blocks(out_c), groups(in_c), k_h, k_w, LANES, GROUP)


def folded_bias(bias: np.ndarray, levels: np.ndarray, input_offset: int, weight_offset: int) -> np.ndarray:
    """bias - U * sum w + w_offset * U * K for each output of an OIHW filter (U = x_offset +
    128, K taps an output), as int32 modulo 2^32."""
    shifted_offset = input_offset + UNSIGNED_SHIFT
    rows = levels.reshape(levels.shape[0], -1).astype(np.int64)
    folded = bias.astype(np.int64) - shifted_offset * rows.sum(axis=1) + weight_offset * shifted_offset * rows.shape[1]
    return ((folded + 2**31) % 2**32 - 2**31).astype(np.int32)


def padded_start_biases(folded: np.ndarray, centred: np.ndarray, input_offset: int,
                        classes: list[tuple[int, int, tuple[int, ...]]]) -> np.ndarray:
    """[classes, C]: each class of output rows' (`DepthwiseGeometry.start_classes`) start, the
    `folded_bias` plus the products of its kernel rows wholly in the padding with the input zero
    point's unsigned bytes U (U times the sum of those rows' levels less their zero point,
    `centred`: [C, 1, KH, KW]), as int32 modulo 2^32: what the kernel's `vpdpbusd`s of those
    rows would add, made at compile time."""
    shifted_offset = input_offset + UNSIGNED_SHIFT
    row_sums = centred.astype(np.int64).sum(axis=(1, 3))  # [C, KH]
    starts = np.stack([folded.astype(np.int64) + shifted_offset * row_sums[:, list(padded)].sum(axis=1)
                       for _, _, padded in classes])
    return ((starts + 2**31) % 2**32 - 2**31).astype(np.int32)


def packed_input_bytes(input_shape: Sequence[int], pads: Sequence[int]) -> int:
    """Bytes of the convolution's unsigned input copy: [N, C / 4, H + pads, W + pads, 4]."""
    n, channels, height, width = input_shape
    top, left, bottom, right = pads
    return n * groups(channels) * (height + top + bottom) * (width + left + right) * GROUP


# ----------------------------------------------------------------------------- depthwise on byte permutes

DEPTHWISE_MICROKERNEL = "x86-vnni-depthwise"
"""An int8 depthwise convolution: four taps of a kernel row a `vpdpbusd`, the input bytes of
each output's taps gathered by one byte permute (AVX-512 VBMI), in one of three forms by the
plane (`vnni_depthwise.form_of`)."""
REST_LEVELS = "rest_levels"
"""The x86-vnni-depthwise microkernel's parameter (a unit) for a filter some of whose levels
less their zero point leave int8: its channels take rest words where they have some (a
loop over parts); without it, the kernel has no such loop."""
WINDOW = 64
"""Bytes of input one load brings (a zmm register): a permute picks any of them for any lane."""
MOST_DEPTHWISE_VECTORS = 16
"""Vectors of 16 outputs a plane may take in the per-vector form (each is code of its own, its
permutes fixed at compile time); larger planes take the rows form, which loops over rows."""
SHORT_PLANE_ROWS = 4
"""Output rows up to which a plane whose rows are at least a vector wide takes the short form
(`DepthwiseGeometry.short`: every input row's permutes made once for all the output rows that
read it)."""
LARGEST_PADDED_PLANE = 64 * 1024
"""Bytes of the rows form's stack copy of one channel's plane (`DepthwiseGeometry.padded_plane`)
above which a depthwise convolution keeps the host vector unit's kernels."""


def has_rest_levels(centred: np.ndarray) -> bool:
    """Whether some level less its zero point leaves int8 (`REST_LEVELS`)."""
    return int(centred.max(initial=0)) > 127 or int(centred.min(initial=0)) < -128


def depthwise_levels_fit(centred: np.ndarray) -> bool:
    """Whether a depthwise filter's levels less their zero point split into the kernel's two
    int8 parts (`vnni_depthwise.channel_words`: the difference saturated to int8, and the
    rest): each in [-255, 254] (a level 127 of zero point -128, 255 from it, does not)."""
    return int(centred.max(initial=0)) <= 254 and int(centred.min(initial=0)) >= -255


@dataclass(frozen=True)
class PermutedTaps:
    """Four taps of kernel row `ky` (columns 4 * quad on) for 16 outputs: `order`, 64 byte
    indices into a window of input bytes (lane i's byte j at 4i + j), `WINDOW` where the tap
    lies in the padding or past the kernel (the byte is then the input zero point)."""

    ky: int
    quad: int
    order: tuple[int, ...]


@dataclass(frozen=True)
class InputWindow:
    """`WINDOW` input bytes of a plane from `start`, and the taps permuted out of them."""

    start: int
    taps: tuple[PermutedTaps, ...]


@dataclass(frozen=True)
class DepthwiseGeometry:
    in_hw: tuple[int, int]
    out_hw: tuple[int, int]
    kernel: tuple[int, int]
    strides: tuple[int, int]
    pads: tuple[int, int]  # top, left
    dilations: tuple[int, int]

    @staticmethod
    def of(op) -> DepthwiseGeometry:
        """The geometry of a depthwise `glowll.convolution` (OIHW filter, NCHW planes)."""
        from glowmlir.dialects import glow

        return DepthwiseGeometry(tuple(glow.shape_of(op.input)[2:]), tuple(glow.convolution_shape(op)[2:]),
                                 tuple(op.filter_shape.get_values()[2:]) if op.filter_shape is not None
                                 else tuple(glow.shape_of(op.filter)[2:]), tuple(op.strides.get_values()),
                                 tuple(op.pads.get_values()[:2]), tuple(op.dilations.get_values()))

    def windows(self, first: int, count: int) -> tuple[list[InputWindow], list[tuple[int, int]]] | None:
        """The loads and permutes of the outputs [first, first + count) of a plane (row-major),
        and the (ky, quad) whose taps all lie in the padding for them all; None if some four
        taps span more than a window."""
        (in_h, in_w), (_, out_w) = self.in_hw, self.out_hw
        k_h, k_w = self.kernel
        spans, padding = [], []
        for ky in range(k_h):
            for quad in range(groups(k_w)):
                flat: list[int | None] = []
                for lane in range(LANES):
                    y, x = divmod(first + lane, out_w)
                    for kx in range(4 * quad, 4 * quad + GROUP):
                        iy = y * self.strides[0] + ky * self.dilations[0] - self.pads[0]
                        ix = x * self.strides[1] + kx * self.dilations[1] - self.pads[1]
                        inside = lane < count and kx < k_w and 0 <= iy < in_h and 0 <= ix < in_w
                        flat.append(iy * in_w + ix if inside else None)
                read = [f for f in flat if f is not None]
                if not read:
                    padding.append((ky, quad))
                elif max(read) - min(read) >= WINDOW:
                    return None
                else:
                    spans.append((min(read), max(read), ky, quad, flat))
        windows: list[tuple[int, list]] = []
        for low, high, ky, quad, flat in sorted(spans, key=lambda span: span[0]):
            if not windows or high >= windows[-1][0] + WINDOW:
                windows.append((low, []))
            start = windows[-1][0]
            windows[-1][1].append(PermutedTaps(ky, quad, tuple(WINDOW if f is None else f - start for f in flat)))
        return [InputWindow(start, tuple(taps)) for start, taps in windows], padding

    def vectors(self) -> int:
        return -(-self.out_hw[0] * self.out_hw[1] // LANES)

    def fits(self) -> bool:
        """Whether the per-vector form takes the plane: few enough vectors, each tap's bytes in a window."""
        plane = self.out_hw[0] * self.out_hw[1]
        return self.vectors() <= MOST_DEPTHWISE_VECTORS and all(
            self.windows(first, min(LANES, plane - first)) is not None for first in range(0, plane, LANES))

    def row_vectors(self) -> int:
        """Vectors of 16 outputs an output row takes in the rows form (the last one partial)."""
        return -(-self.out_hw[1] // LANES)

    def tap_bytes(self, lane: int, kx: int) -> int:
        """The rows form's byte of tap column `kx` of lane `lane` in a window that starts at its
        vector's first input column (the padding's columns written out)."""
        return lane * self.strides[1] + kx * self.dilations[1]

    def window_bytes(self) -> int:
        """Bytes of the rows form's window loads: 16, 32 or 64, the fewest that hold every tap
        of a vector's kernel row (LLVM loads the narrower vectors by `vpermb`'s operand)."""
        return next(size for size in (16, 32, WINDOW) if self.tap_bytes(LANES - 1, self.kernel[1] - 1) < size)

    def padded_plane(self) -> tuple[int, int]:
        """(rows, bytes a row) of the rows form's stack copy of a channel's plane: the input rows
        some output reads (rows in the padding are not read: their products go into the
        start of the output rows that have them, `padded_rows`), each row from the left
        padding on, long enough for a window (`window_bytes`) from its last vector's first
        column (a multiple of `WINDOW`)."""
        (in_h, _), (out_h, _) = self.in_hw, self.out_hw
        last_row = (out_h - 1) * self.strides[0] + (self.kernel[0] - 1) * self.dilations[0] - self.pads[0]
        row_bytes = (self.row_vectors() - 1) * LANES * self.strides[1] + self.window_bytes()
        return min(in_h, last_row + 1), -(-row_bytes // WINDOW) * WINDOW

    def padded_rows(self, y: int) -> tuple[int, ...]:
        """The kernel rows of output row `y` that lie wholly in the padding (above or below the input)."""
        top = y * self.strides[0] - self.pads[0]
        return tuple(ky for ky in range(self.kernel[0]) if not 0 <= top + ky * self.dilations[0] < self.in_hw[0])

    def row_classes(self) -> list[tuple[int, int, tuple[int, ...]]]:
        """The output rows as runs [first, stop) of one set of `padded_rows` each, top to bottom."""
        runs: list[tuple[int, int, tuple[int, ...]]] = []
        for y in range(self.out_hw[0]):
            padded = self.padded_rows(y)
            if runs and runs[-1][2] == padded:
                runs[-1] = (runs[-1][0], y + 1, padded)
            else:
                runs.append((y, y + 1, padded))
        return runs

    def start_classes(self) -> list[tuple[int, int, tuple[int, ...]]]:
        """The `row_classes` whose sums start from a row of their own in the bias
        (`padded_start_biases`): those of the short and rows forms (`vnni_depthwise.form_of`)
        where some output rows have kernel rows in the padding; [] otherwise."""
        classes = self.row_classes()
        return classes if not self.per_vector() and any(padded for _, _, padded in classes) else []

    def per_vector(self) -> bool:
        """Whether the plane takes the per-vector form (`vnni_depthwise.form_of`): not short, and
        `fits`."""
        return not self.short() and self.fits()

    def rows_fit(self) -> bool:
        """Whether the rows form takes the plane: each vector's taps of a kernel row within a
        window, the plane's copy at most `LARGEST_PADDED_PLANE` bytes."""
        rows, row_bytes = self.padded_plane()
        return (self.tap_bytes(LANES - 1, self.kernel[1] - 1) < WINDOW and rows > 0
                and rows * row_bytes <= LARGEST_PADDED_PLANE)

    def short(self) -> bool:
        """Whether the short form takes the plane: at most `SHORT_PLANE_ROWS` output rows, each at
        least a vector wide (PP-OCR-cls-style's 2 x 96 and 3 x 96), its rows as the rows form's."""
        return self.out_hw[0] <= SHORT_PLANE_ROWS and self.out_hw[1] >= LANES and self.rows_fit()

    def column_words(self) -> tuple[tuple[int | None, ...], ...]:
        """The short form's words for the kernel's last column, one an output row, where that
        column is a quad of its own with one tap (KW = 4q + 1: a 5x5's fifth) and the copied
        rows are at most four, one kernel row apart: the column of every input row then takes
        one operand (its bytes one an input row) and one `vpdpbusd` an output row, not one a
        kernel row. Each word's byte t holds the tap (its index in KH x KW) of the kernel row
        that reads input row t, None where none does; () where the form has no such words."""
        k_h, k_w = self.kernel
        rows = self.padded_plane()[0]
        if not (self.short() and k_w % GROUP == 1 and self.dilations[0] == 1 and rows <= GROUP
                and (k_h * groups(k_w) + self.out_hw[0]) * GROUP <= WINDOW):
            return ()
        words = []
        for y in range(self.out_hw[0]):
            top = y * self.strides[0] - self.pads[0]
            words.append(tuple((row - top) * k_w + k_w - 1 if row < rows and 0 <= row - top < k_h else None
                               for row in range(GROUP)))
        return tuple(words)

    def takes(self) -> bool:
        """Whether x86-vnni-depthwise takes the layer: a channel's taps and its words in a
        window each (`vnni_depthwise.channel_words`), the plane in either form."""
        k_h, k_w = self.kernel
        return k_h * k_w <= WINDOW and k_h * groups(k_w) * GROUP <= WINDOW and (self.fits() or self.rows_fit())


SHAPE_PARAMETERISED_MICROKERNEL = "x86-vnni-shape-parameterised"
"""The size-first matrix product's form for AVX-512 VNNI (`vnni_shape_parameterised`: a multiple of
4 input channels, a convolution of one pixel or of at least 16)."""
SHAPE_PARAMETERISED_LOADED_NUMBERS = ("output_offset",)
"""The numbers the VNNI form loads from the record even when they are 0: its code for them
(an add in the rounding term, a clamp) is the same for any value, so layers that differ in
them share the kernel."""
