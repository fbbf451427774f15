"""How many cycles (estimated) a convolution with a fused pool costs on our kernel, and the same
convolution and pool as CMSIS-NN calls: the estimates `glow-choose-conv-pool-kernels`
compares (`-use-cmsis`).

For a convolution of `outputs` full-resolution results (batch x channels x rows x columns,
before the pool), `macs` = outputs x kernel height x kernel width x input channels per
group, and `row_copies` = output pixels x kernel height (CMSIS-NN's im2col copies one
kernel row of input per output pixel and converts it to int16; a 1x1 convolution has one):

    ours     = ours_per_mac x macs + ours_per_output x outputs
               (dsp, a convolution our DSP kernels run as a gathered product,
               `Backend.gathers_windows`: per MAC x macs + per gathered tap x gathered,
               `gathered` = output pixels x taps a window, each pixel's taps gathered once
               for all output channels; Helium: ours_per_vector_mac x vector_macs instead
               of the MACs: its column kernel computes whole vectors of 4 output columns,
               partly idle at a row's edges)
    CMSIS-NN = library_per_mac x macs + library_per_output x outputs
               + library_per_row_copy x row_copies          (convolution and pool calls)

The pool's own work is per full-resolution output (every output is read once), so it is in
the per-output constant. The constants were fitted (least squares on the relative error)
to counts measured on QEMU per layer (`glow-run -profile`'s layer counter): our fused
kernel at -O3 with -use-cmsis (`bench/bench_conv_pool_costs.py`, which measures and fits
them), and the real CMSIS-NN (github.com/ARM-software/CMSIS-NN at 99f736a6, every source
built with arm-none-eabi-gcc for the core and linked where the tests link the stand-ins; not
part of this repository) running the same layer unfused: in cycles -O3 for the M4 (dsp) and
the M55 (helium) and the M3 (generic; the instruction columns: -O2). The layers:
LeNet's two convolutions, the CIFAR-10-sized test net's two, the DS-CNN-style net's last
pointwise one and MobileNetV2's last (global mean), and eight single-layer nets (all in
tests/support/cmsis_nn/conv_pool_costs.json, against which the tests check these
constants). Instructions are not cycles: every class is fitted to estimated cycles
(`glowmlir.runtime.cycles`; the table's `*_cycles` columns, `CostFigures.unit`): dsp on the
M4 and generic on the M3, whose estimates follow their manuals' timing tables, helium on the
M55, whose estimate is a model's (llvm-mca's Cortex-M55 scheduling model), with the real
CMSIS-NN's Helium build (-O3 for cortex-m55, its MVE path) on the other side.

Fit on those layers (largest error of an estimate; the choice agrees with the measured
faster side):

| core class | cores measured | ours | CMSIS-NN | same winner |
|---|---|---|---|---|
| dsp (cycles) | M4 (M7, M33 run the same code) | 20.1% | 13.2% | 13 of 14 (the other within 12%) |
| generic (cycles) | M3 (M0, M0+: the M3's figures) | 23.0% | 9.4% | 12 of 14 |
| helium (cycles) | M55 (ours: the Helium column kernel; CMSIS-NN's MVE path) | 23.8% | 9.1% | 8 of 8 |

Where the estimate picks the other side the two are within 12% of each other measured on
the M4 (32x32k3h8max: ours 1,501,942 vs CMSIS-NN 1,343,463 cycles) and 11% on the M3. On
the M55 our largest error is an 8-channel 3x3 layer (measured 367,558 cycles, estimated
280,093; CMSIS-NN measured 214,918, estimated 219,637: the same winner); in cycles the
3-channel 3x3 layer is ours (609,134 vs CMSIS-NN 628,890; in instructions it was the
library's, 631,777 vs 569,093) and so is the 16-channel 1x1 (123,125 vs 140,880). The
library's -O3 M4 build runs these layers within 3.4% of its -O2 build's cycles, its -O3 M3
build within 2.3% (LeNet's conv1 2,838,001 vs 2,900,284; refitted 2026-11-29: per output
48.94 for 47.93, per row copy 289.87 for 305.9, largest error 9.4%). Our dsp
figures are today's kernels' (2026-11-26; the row-pairs kernel the first fit saw took
LeNet's conv1 662,648 instructions, the gathered product 336,544); the generic ones were
fitted before and still hold (the M3's kernels measured within 5% of the first fit's
counts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from glowmlir.backends import named
from glowmlir.dialects import glow
from glowmlir.lowering.vector_layout import interior_columns


@dataclass(frozen=True)
class ConvolutionWork:
    """The sizes the estimates take, of a convolution without its pool."""

    macs: int
    outputs: int
    row_copies: int
    vector_macs: int = 0
    """MACs counted in whole vectors of `VECTOR_LANES` output columns, as Helium's column
    kernel computes them (a row's edge vectors are partly idle; see `row_vectors`)."""
    gathered: int = 0
    """Taps our DSP kernels gather once per output pixel, for all output channels (pixels x
    taps of a window), when the convolution runs on their gathered product
    (`Backend.gathers_windows`); 0 when it runs on their row kernels."""

    @staticmethod
    def of(conv: glow.ConvolutionOp) -> ConvolutionWork:
        """Of a `glow` convolution (fused pool or not, NCHW or NHWC)."""
        filter_shape, nhwc = glow.shape_of(conv.filter), glow.is_nhwc(conv)
        unpooled = glow.convolution_shape(conv)  # NCHW
        kernel_height, kernel_width = filter_shape[1:3] if nhwc else filter_shape[2:4]
        width = unpooled[3]
        in_width = glow.shape_of(conv.input)[2 if nhwc else 3]
        outputs, pixels = math.prod(unpooled), math.prod(unpooled) // unpooled[1]
        taps = math.prod(filter_shape[1:])
        vectors = row_vectors(in_width, width, kernel_width, conv.dilations.get_values()[1], conv.pads.get_values()[1],
                              conv.strides.get_values()[1])
        gathered = named(OURS).gathers_windows(conv)
        return ConvolutionWork(outputs * taps, outputs, pixels * kernel_height,
                               outputs // width * vectors * VECTOR_LANES * taps, pixels * taps if gathered else 0)


OURS = "arm_dsp"
"""The backend of our kernels on a Cortex-M core, whose work `ConvolutionWork` counts (asked
through the registry: `Backend.gathers_windows`)."""

VECTOR_LANES = 4
"""Lanes of Helium's column kernel (int32 in a Q register)."""


def row_vectors(in_width: int, width: int, kernel: int, dilation: int, pad_left: int, stride: int) -> int:
    """Vectors of `VECTOR_LANES` columns Helium's column kernel takes for an output row:
    tiles over the columns whose taps are all inside the input, predicated vectors over the
    columns before and after them (`lowering.vector_columns`)."""
    first, end = interior_columns(in_width, width, kernel, dilation, pad_left, stride)
    interior = (end - first) // VECTOR_LANES
    after = width - first - interior * VECTOR_LANES
    return -(-first // VECTOR_LANES) + interior + -(-after // VECTOR_LANES)


@dataclass(frozen=True)
class CostFigures:
    """Cycles (or instructions: `unit`) per unit of work, one core class (see the module doc)."""

    ours_per_mac: float
    ours_per_output: float
    library_per_mac: float
    library_per_output: float
    library_per_row_copy: float
    ours_per_vector_mac: float = 0.0
    ours_gathered: tuple[float, float, float] | None = None
    """dsp: per MAC, per gathered tap and per output of a convolution on our gathered product
    (`ConvolutionWork.gathered`); `ours_per_mac` and `ours_per_output` are then our row kernels'."""
    unit: str = "instructions"  # what the figures count: "instructions" or (estimated) "cycles"

    def ours(self, work: ConvolutionWork) -> int:
        if work.gathered and self.ours_gathered is not None:
            per_mac, per_tap, per_output = self.ours_gathered
            return round(per_mac * work.macs + per_tap * work.gathered + per_output * work.outputs)
        return round(self.ours_per_mac * work.macs + self.ours_per_vector_mac * work.vector_macs
                     + self.ours_per_output * work.outputs)

    def library(self, work: ConvolutionWork) -> int:
        return round(self.library_per_mac * work.macs + self.library_per_output * work.outputs
                     + self.library_per_row_copy * work.row_copies)


COSTS = {
    "dsp": CostFigures(2.064, 6.851, 2.051, 46.43, 331.93, ours_gathered=(1.262, 8.147, 0.0), unit="cycles"),
    "generic": CostFigures(5.384, 24.06, 4.738, 48.94, 289.87, unit="cycles"),
    "helium": CostFigures(0.0, 5.382, 0.179, 18.39, 119.17, ours_per_vector_mac=0.700, unit="cycles"),
}
"""Core class -> its fitted figures; see `core_class`. Estimated cycles
(`glowmlir.runtime.cycles`), fitted 2026-11-28: dsp and generic on the M4 and the M3 (their
manuals' timings), helium on the M55 (llvm-mca's model)."""


def core_class(target) -> str:
    """The `COSTS` key of a target's core: "helium" (Cortex-M55), "dsp" (M4, M7, M33: our
    DSP-extension kernels, CMSIS-NN's DSP path), "generic" (M0, M0+, M3); "" for a target
    that is not a Cortex-M (no figures: the fusion is kept)."""
    from glowmlir.backends import serves

    if serves("arm_mve", target):
        return "helium"
    if serves("arm_dsp", target):
        return "dsp"
    if target.triple.startswith(("thumbv6m", "thumbv7m", "thumbv8m.base")):
        return "generic"
    return ""
