"""`glowll-select-arm-dsp-kernels`: int8 convolutions and FullyConnected onto the Arm DSP extension.

On a core with the DSP extension (Cortex-M4, M7, M33, M55: `+dsp` among the target's
features, `glow-compile` adds the pass by itself, `helium=true` on a core with MVE) every
int8 `glowll.convolution` with a constant filter the layout can pair (a row at least two
taps wide, an unpadded ungrouped 1x1, or an unpooled one of one input channel per group:
depthwise, or of a one-channel input), and every int8 `glowll.fully_connected`, gets
`microkernel = "arm-dsp"`: its kernel multiplies int16 pairs with `SMLAD`
(`backends.arm_dsp.emitters`). A convolution's filter is re-laid for it at compile time
(`backends.arm_dsp.layout.pack_filter`: int16 weight pairs in the order the kernel reads
them, zero point subtracted; or int8 words, `layout.int8_filter_words`, where the flash budget
leaves it no pairs, as output pair words in a pointwise layer, `output_pairs`) and keeps its
OIHW shape in `filter_shape`. Where the bias is
in accumulator units, the input zero point is folded into it (`folded_input_offset`: an
unpadded convolution's, and a depthwise one's, whose kernel pads its copies of the input
planes with the input zero point) and a compile-time accumulator bound may allow
`narrow_requantization` (a DSP-packed filter then holds twice its levels,
`doubled_accumulators`). With `helium=true`,
FullyConnected and every convolution of stride 1 along its rows (or of stride 2 onto rows of
at least two vectors) get `microkernel = "arm-mve"`
(`backends.arm_mve.kernels`, filter layout `lowering.vector_layout`) instead, and so do int8
Add, Sub and Mul (of operands of one shape, or broadcast onto runs of two levels or more) and
int8 softmax; without it, an int8 Add or Sub of 192 elements or more and an int8 softmax
of more than 128 levels get `microkernel = "level-tables"` (`backends.arm_dsp.level_tables`: their
terms and exps looked up in tables of the 256 levels, `SelectLevelTables`), and an int8 Mul of a
tensor by one level per channel `microkernel = "channel-products"` (`backends.arm_dsp.channel_products`,
`SelectChannelProducts`), and a quantize of f32 to int8 `microkernel = "reciprocal-quantize"`
(`backends.arm_dsp.reciprocal_quantize`: no division an element, `SelectReciprocalQuantize`). With
`loop-pairs=N` (a size-first build, `pipeline.glowll_passes`) each "arm-dsp" convolution
gets `loop_pairs = N`: its kernel keeps its loop over input channel pairs, N pairs a step.
Outputs stay bit-identical to the generic int8 kernels.

Int16 layers (int16 input and output of offset 0, int8 weights: `-quantization-precision=
Int16`) take the "arm-dsp" kernels the same way (`dsp_buffers`), on every core with the DSP
extension (Helium's kernels and its dot products take int8 only); a layer with
`wide_accumulators` sums in int64 there (`SMLALD`), its bias as it is.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, UnitAttr, f32, i8, i16, i64
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from glowmlir.backends import microkernel as registered_kernel
from glowmlir.backends.arm_dsp.banded_windows import BAND_WINDOWS, band_window_words, takes_band_windows
from glowmlir.backends.arm_dsp.flash_budget import (
    PackingCost,
    SizeFirstCost,
    choose_packed,
    choose_size_first,
    constants_budget,
    int8_constants,
    looped_depthwise_cost,
    saved_cycles,
    size_first_fully_connected_cost,
    weight_pairs_saved_cycles,
)
from glowmlir.backends.arm_dsp.gathered_product import (
    LOOP_PAIRS,
    PIPELINED_LOADS,
    UNROLLED_CHANNEL_PAIRS,
    WEIGHTS_AHEAD,
)
from glowmlir.backends.arm_dsp.layout import (
    CHANNEL_PAIRS,
    CHANNEL_PRODUCTS,
    DEPTHWISE,
    LEVEL_TABLE_ELEMENTWISE,
    LEVEL_TABLE_ELEMENTWISE_FROM,
    LEVEL_TABLE_ENTRIES,
    LEVEL_TABLES,
    OPAQUE_STARTS,
    ORDERED_PLANES,
    RECIPROCAL_QUANTIZE,
    UNROLLED_PAIRS,
    WINDOW_LOOP_PAIRS,
    WINDOW_PAIRS,
    WORDS_AHEAD,
    convolution_depthwise_plan,
    gathers,
    int8_filter_words,
    orders_planes,
    output_pair_filter_words,
    pack_filter,
    packing,
    straight_pairs,
    straight_products,
    tiled_pool,
    wide_tiling,
    widens_planes,
    with_biases,
)
from glowmlir.dialects import glow, glowll
from glowmlir.dialects.glowll import CODE_SIZE, TUNED_KERNEL, MicrokernelAttr, tuned_kernel
from glowmlir.dialects.memory import align
from glowmlir.dialects.quant import (
    UniformQuantizedType,
    is_quantized,
    is_quantized_instruction,
    storage_type,
    stored_as,
)
from glowmlir.dialects.weights import array_from_dense
from glowmlir.errors import GlowError
from glowmlir.lowering import vector_layout as column_layout
from glowmlir.lowering.quantized_kernels import STORED_EXPS
from glowmlir.lowering.requantization import (
    ACCUMULATOR_SHIFTS,
    LEFT_SHIFT_BITS,
    STORED_CHANNELS,
    UNIFORM_SHIFT,
    channel_rounding_terms,
)
from glowmlir.quantization.rescaling import (
    activation_bounds,
    centred_rows,
    largest_difference,
    weight_zero_point,
)
from glowmlir.transforms.execute_in_patches import convolution_macs, layer_macs
from glowmlir.transforms.fold_constant_channels import channel_levels, neutral_requantization
from glowmlir.transforms.int8_kernel_selection import (
    accumulator_bias,
    centred_type,
    fits_narrow_requantization,
    fold_input_offset,
    folded_bias,
    int8_buffers,
    int8_layer,
    mark_narrow_requantization,
)
from glowmlir.transforms.select_kernels import erase_if_unused, insert_weight

MICROKERNEL = "arm-dsp"
HELIUM, IM2COL = "arm-mve", "arm-mve-im2col"
"""Helium's microkernels (`backends.arm_mve`), which this pass picks on a Helium core (`helium`):
their lanes and elementwise kinds are the registry's (`registered_kernel(HELIUM)`)."""
HELIUM_ELEMENTWISE_RUNS = 2
"""The shortest innermost loop on which Helium's elementwise kernel beats the scalar one
(tests/unit/test_arm_dsp_kernel_choices.py, estimated cycles on the M55): runs of 2 and 3
levels took 39% and 62% fewer cycles on the vectors (a per-channel Mul onto 1 x 3 pixels:
283 against 738), runs of 1 (a trailing unit dimension) 10% more (514 against 461). The
rule this replaced (runs of a whole vector, 4) kept runs of 2 and 3 scalar."""
IM2COL_DEPTHS = (8, 48)
"""Taps (input channels x kernel height x width) from which dot products of gathered windows
are faster than the DSP kernel (a convolution of stride 2 along its rows) and than Helium's
column kernel (which takes 16 products for about 10 instructions and requantizes 4 outputs
at once, while a dot product costs about 20 instructions an output besides its 16 products
a VMLAVA: MobileNetV2's 16-channel pointwise layers ran 18% slower as dot products, the
DS-CNN's 64-channel ones 8% faster)."""


STRIDED_ROW_VECTORS = 2
"""Helium's column kernel takes a convolution of stride 2 along its rows (gathering every
other input column) when its output rows fill at least this many vectors: on narrower rows
most lanes of a row's last vector idle, and the DSP kernel was 3-10% ahead (a depthwise 3x3/2
onto 6 or 3 columns), while onto 12 to 24 columns the gathers took a third fewer
instructions."""


DEPTHWISE_ROW_VECTORS = (2, 3)
"""Helium's column kernel takes a depthwise convolution of stride 1 along its rows (that the
DSP kernel can take) onto rows of whole vectors, at least `DEPTHWISE_ROW_VECTORS[0]`, or of
more than `DEPTHWISE_ROW_VECTORS[1]` vectors; onto shorter rows (a row's last vector partly
filled, or one vector) the DSP kernel was ahead. Estimated M55 cycles, Helium / DSP, 3x3
pad 1, 16 channels (tests/unit/test_arm_dsp_kernel_choices.py's harness): rows of 8, 12, 16,
20, 24: 0.86, 0.91 (0.79 6 high), 0.82, 0.83, 0.73; of 14, 18, 25: 0.99, 0.81, 0.80; of 3,
4, 5, 6, 7, 9, 10: 1.60, 1.13, 1.23, 1.86, 1.12, 1.10, 1.20 (the keyword spotter's 25 x 5
planes of 64 channels: 235,620 against 112,953). Rows of 8 are about even: 8 channels 6
high took 1.14 times the DSP kernel's cycles."""


def takes_helium_columns(strides, output_width: int, depthwise: bool = False) -> bool:
    """Helium's column kernel: a convolution of stride 1 along its rows (a `depthwise` one
    onto rows as `DEPTHWISE_ROW_VECTORS` says), or of stride 2 onto rows of at least
    `STRIDED_ROW_VECTORS` vectors (`output_width`: the convolution's, before a fused pool)."""
    lanes = registered_kernel(HELIUM).lanes
    if depthwise and column_layout.takes_columns(strides):
        whole, longer = DEPTHWISE_ROW_VECTORS
        return (output_width % lanes == 0 and output_width >= whole * lanes) or output_width > longer * lanes
    return column_layout.takes_columns(strides) or (
        column_layout.takes_columns(strides, 2) and output_width >= STRIDED_ROW_VECTORS * lanes)


def takes_im2col(depth: int, columns: bool) -> bool:
    """An ungrouped convolution (unpooled, or pooled globally) of `depth` taps a window on
    dot products, where `columns` says whether Helium's column kernel could take it."""
    return depth >= IM2COL_DEPTHS[1] or (depth >= IM2COL_DEPTHS[0] and not columns)


def int16_data(op: glowll.ConvolutionOp | glowll.FullyConnectedOp) -> bool:
    """An int16 layer the DSP kernels take: int16 input (offset 0: its pairs need no
    offset) and output, int8 weights (its sums int32, or int64 with `wide_accumulators`:
    `SMLALD`)."""
    return (all(storage_type(v.type.element_type) == i16 for v in (op.dest, op.input))
            and op.input.type.element_type.offset == 0 and int8_buffers(op.operands[2]))


def dsp_buffers(op: glowll.ConvolutionOp | glowll.FullyConnectedOp) -> bool:
    """Whether the "arm-dsp" kernels take the layer's data: int8, or int16 (`int16_data`)."""
    return int8_layer(op) or int16_data(op)


FORCED_KERNELS = ("generic", MICROKERNEL, HELIUM, IM2COL, LEVEL_TABLES)
"""What `only` may name (`SelectArmDspKernels`), and what the autotuner measures (`tuning_kernels`)."""


def tuning_kernels(helium: bool) -> tuple[str, ...]:
    """The kernels the autotuner measures on a DSP core (`backend.tuning`), Helium's on a Helium one."""
    return (MICROKERNEL, HELIUM, IM2COL) if helium else (MICROKERNEL, LEVEL_TABLES)


def forced(op, only: str) -> str:
    """The kernel an instruction is given whatever the cost rules say: `only` (the test
    hook), else the one the autotuner measured fastest (`glowll.TunedKernelAttr`), else ""."""
    return only or tuned_kernel(op)


INT8_WORDS, OUTPUT_PAIR_WORDS = "int8", "output-pairs"
FILTER_WORDS = ("", INT8_WORDS, OUTPUT_PAIR_WORDS)
"""What `filter_words` may name (`SelectArmDspKernels`): "" the flash budget's choice, "int8"
int8 filter words wherever a kernel reads them, "output-pairs" the same but output pair words
wherever a pointwise layer can take them (`takes_output_pair_words`)."""


@dataclass(frozen=True)
class FilterPacking:
    """What `PackConvolutionFilter` would make of a convolution: its microkernel, packed filter
    and packing kind (`layout.packing`), or Helium's dot products (`im2col`: the filter kept)."""

    microkernel: str
    packed: np.ndarray | None = None
    kind: str | None = None
    doubled: bool = False
    int8_words: np.ndarray | None = None
    """The filter as int8 words (`layout.int8_filter_words`, undoubled), where a gathered
    product's kernel can read them (None: int16 pairs only)."""
    uncentred_words: bool = False
    """`int8_words` hold the model's levels, not less their zero point (a per-tensor
    asymmetric filter whose levels less it leave int8, read only by the gathered product:
    it subtracts the zero point times each gathered window's sum, `gathered_product`)."""
    words_kind: str | None = None
    """The packing kind of `int8_words` where it is not `kind` (a pooled window of more than
    `layout.WINDOW_TAPS` taps: row pairs as int16 pairs, window pairs as int8 words)."""
    output_pair_words: np.ndarray | None = None
    """The filter as output pair words (`layout.output_pair_filter_words`, 1x its int8 bytes)
    where a pointwise gathered product takes them (`takes_output_pair_words`): in place of its
    int8 words (`as_int8_words`), and, blocked (`blocks_output_pairs`), of its int16 pairs too."""
    blocks_output_pairs: bool = False
    """`output_pair_words` feed a blocked product (`gathered_product.BLOCKED_PIXELS`), about as fast
    as its int16 pairs: never packed as those."""

    def as_int8_words(self) -> FilterPacking:
        """The packing with the filter's int8 words (1x its int8 bytes) in place of its pairs: its
        output pair words where it has them."""
        if self.output_pair_words is not None:
            return FilterPacking(self.microkernel, self.output_pair_words, self.kind,
                                 output_pair_words=self.output_pair_words)
        return FilterPacking(self.microkernel, self.int8_words, self.words_kind or self.kind,
                             uncentred_words=self.uncentred_words)


@dataclass
class PackConvolutionFilter(RewritePattern):
    helium: bool
    loop_pairs: int = 0
    only: str = ""
    packed: set[int] | None = None
    """The `id`s of the convolutions to pack as int16 pairs (None: every one;
    `flash_budget.choose_packed`); the others that can take int8 filter words take them (on
    Helium, a layer its int16 columns are refused takes the DSP kernel's int8 words)."""
    filter_words: str = ""
    """"int8": every convolution that can take int8 filter words takes them (a test and
    tuning hook, `FILTER_WORDS`); "": as `packed` says."""
    single_issue: bool = False
    """`SelectArmDspKernels.single_issue`."""
    shift_tables: set[int] | None = None
    """The `id`s of the convolutions on output pair words whose requantization tables may take
    `accumulator_shift_table`'s third row (None: every one; `packed_within_budget`)."""

    def opaque_starts(self, op: glowll.ConvolutionOp) -> bool:
        """Whether a depthwise convolution's wide tiles start from an opaque bias on this core
        (`OPAQUE_STARTS`): a speed-first build's, on widened planes with tiles of more than five
        outputs, on a dual-issue core."""
        if self.single_issue or self.loop_pairs or not widens_planes(op.dilations.get_values(),
                                                                      int8_buffers(op.input)):
            return False
        shape = glow.shape_of(op.filter)
        plan = convolution_depthwise_plan(glow.shape_of(op.input), shape, op.strides.get_values(),
                                          op.pads.get_values(), op.dilations.get_values(), widened=True)
        return any(wide_tiling(tiling) for tiling in plan.tilings)

    def orders_planes(self, op: glowll.ConvolutionOp) -> bool:
        """Whether a depthwise convolution reads int8 planes in order on this core (`orders_planes`)."""
        return orders_planes(op.dilations.get_values(), int8_buffers(op.input), op.strides.get_values(),
                             self.single_issue)

    def packing_of(self, op: glowll.ConvolutionOp) -> FilterPacking | None:
        """The convolution's packing, or None when no kernel here takes it; changes nothing."""
        weight = op.filter.owner
        if (op.microkernel is not None or not is_quantized_instruction(op) or glow.is_nhwc(op)
                or op.residual is not None or not dsp_buffers(op)
                or not isinstance(weight, glowll.WeightOp) or weight.value is None):
            return None
        helium = self.helium and not int16_data(op)  # Helium's kernels take int8 only
        only = forced(op, self.only)
        if only not in ("", MICROKERNEL, HELIUM, IM2COL) or (only in (HELIUM, IM2COL) and not helium):
            return None
        filter_type: UniformQuantizedType = op.filter.type.element_type
        shape, group = glow.shape_of(op.filter), op.group.value.data
        offset = weight_zero_point(filter_type)
        levels = array_from_dense(weight.value)
        kind = packing(shape, op.pads.get_values(), group, op.pool is not None, tiled_pool(op))
        depthwise = group > 1 and shape[1] == 1 and kind is not None  # one the DSP kernel takes too
        columns = takes_helium_columns(op.strides.get_values(), glow.convolution_shape(op)[3], depthwise)
        windowed = ((op.pool is None or glow.pools_globally(op)) and group == 1
                    and takes_im2col(int(np.prod(shape[1:])), columns))
        if only:  # where the forced kernel can take the layer, whatever it costs
            helium = only != MICROKERNEL
            columns = only == HELIUM and column_layout.takes_columns(op.strides.get_values(), 2)
            windowed = only == IM2COL and (op.pool is None or glow.pools_globally(op)) and group == 1
        sums = (levels.astype(np.int64) - offset).reshape(shape[0], -1).sum(axis=1)
        if helium and windowed and folded_bias(op, sums) is not None:  # `select_im2col` takes it
            return FilterPacking(IM2COL)
        if only == IM2COL or (only == HELIUM and not columns):
            return None
        if helium and columns:
            block = column_layout.channel_block(shape[0], group)
            return FilterPacking(HELIUM, column_layout.pack_filter(levels.astype(np.int16) - np.int16(offset), block),
                                 kind)
        if kind is None:
            return None
        ordered = kind == DEPTHWISE and self.orders_planes(op)
        widened = widens_planes(op.dilations.get_values(), int8_buffers(op.input), ordered)
        packed = pack_filter(levels, offset, glow.shape_of(op.input), op.strides.get_values(),
                             op.dilations.get_values(), op.pads.get_values(), group, op.pool is not None,
                             tiled_pool(op), widened, ordered=ordered)
        words_kind = packing(shape, op.pads.get_values(), group, op.pool is not None, tiled_pool(op), int8_words=True)

        def words_packed(weight_offset: int) -> np.ndarray:
            return pack_filter(levels, weight_offset, glow.shape_of(op.input), op.strides.get_values(),
                               op.dilations.get_values(), op.pads.get_values(), group, op.pool is not None,
                               tiled_pool(op), widened, int8_words=True, ordered=ordered)

        words = None
        if words_kind in (CHANNEL_PAIRS, WINDOW_PAIRS):
            words = int8_filter_words(packed if words_kind == kind else words_packed(offset))
        uncentred = (words is None and offset != 0 and not filter_type.per_channel
                     and gathers(words_kind, op.strides.get_values(), op.pool is not None, glow.pools_globally(op)))
        if uncentred:  # the model's levels as int8 words, the zero point taken off per window
            words = int8_filter_words(words_packed(0))
        doubled = fits_narrow_requantization(op, centred_rows(levels, filter_type))
        if doubled:  # twice the levels: sums the requantization takes as they are (`requantize_narrow`)
            packed = packed * np.int16(2)
        output_pairs = None
        if (words is not None and not uncentred and self.filter_words != INT8_WORDS and int8_buffers(op.input)
                and takes_output_pair_words(op, kind, packed, self.loop_pairs)):
            output_pairs = output_pair_filter_words(words, max(largest_difference(op.input.type.element_type),
                                                               int(np.max(np.abs(op.input.type.element_type
                                                                                 .value_range)))))
        plan = FilterPacking(MICROKERNEL, packed, kind, doubled, words, uncentred and words is not None,
                             None if words_kind == kind else words_kind, output_pairs,
                             output_pairs is not None and packed.shape[1] > straight_pairs(kind, self.single_issue))
        return plan.as_int8_words() if self.filter_words and words is not None else plan

    def blocked(self, op: glowll.ConvolutionOp, microkernel: str, kind: str | None, packed: np.ndarray) -> bool:
        """Whether the convolution's gathered product is blocked (`gathered_product.BLOCKED_PIXELS`):
        a speed-first build's of more pairs than `straight_pairs`, blocks of two output
        channels, unpooled or pooled globally (not a tiled pool's), of int32 sums."""
        unpooled = op.pool is None or glow.pools_globally(op)
        return (microkernel == MICROKERNEL and not self.loop_pairs
                and packed.shape[1] > straight_pairs(kind, self.single_issue)
                and packed.shape[3] == 2 and unpooled and op.wide_accumulators is None
                and gathers(kind, op.strides.get_values(), op.pool is not None, glow.pools_globally(op)))

    def band_candidate(self, op: glowll.ConvolutionOp, microkernel: str, kind: str | None,
                       packed: np.ndarray) -> bool:
        """Whether `banded_windows` may take the convolution, its filter permitting
        (`band_windows_filter`): a blocked WINDOW_PAIRS one, or an unpadded unpooled 1x1 of
        stride 2 (CHANNEL_PAIRS, else on the strided pointwise row kernel)."""
        strided_pointwise = (microkernel == MICROKERNEL and not self.loop_pairs and kind == CHANNEL_PAIRS
                             and op.strides.get_values() == (2, 2) and not any(op.pads.get_values())
                             and op.pool is None and packed.shape[3] == 2 and op.wide_accumulators is None
                             and glow.shape_of(op.filter)[2:] == (1, 1))
        return strided_pointwise or (kind == WINDOW_PAIRS and self.blocked(op, microkernel, kind, packed))

    def band_words(self, op: glowll.ConvolutionOp, plan: FilterPacking, kind: str | None,
                   packed: np.ndarray) -> np.ndarray | None:
        """The convolution's filter for `banded_windows` where it runs there, else None."""
        if not self.band_candidate(op, plan.microkernel, kind, packed):
            return None
        return band_windows_filter(op, plan, kind, packed)

    def takes_band_windows(self, op: glowll.ConvolutionOp, plan: FilterPacking) -> bool:
        """Whether the convolution runs on `banded_windows` whatever the budget (its filter
        then 1x the int8 bytes: the flash budget leaves it out)."""
        return plan.packed is not None and self.band_words(op, plan, plan.kind, plan.packed) is not None

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.ConvolutionOp, rewriter: PatternRewriter) -> None:
        plan = self.packing_of(op)
        if plan is None:
            return
        left_out = self.packed is not None and id(op) not in self.packed
        if left_out and plan.microkernel == HELIUM:  # Helium's int16 columns left out: the DSP kernel's int8 words
            plan = dataclasses.replace(self, helium=False).packing_of(op) or plan
        words = plan.int8_words  # the int8 words output pair words were made of (`accumulator_shift_table`)
        if plan.blocks_output_pairs or left_out:
            if plan.int8_words is None or plan.microkernel != MICROKERNEL:
                return
            plan = plan.as_int8_words()
        output_pairs = plan.output_pair_words is not None and plan.packed is plan.output_pair_words
        weight = op.filter.owner
        filter_type: UniformQuantizedType = op.filter.type.element_type
        if plan.microkernel == IM2COL:
            select_im2col(op, array_from_dense(weight.value), weight_zero_point(filter_type), rewriter)
            return
        microkernel, packed, kind, doubled = plan.microkernel, plan.packed, plan.kind, plan.doubled
        if microkernel == MICROKERNEL:  # dead channels' shifts out of the way of the offset's folding
            neutral_requantization(op, rewriter)
        centred = centred_rows(array_from_dense(weight.value), filter_type)
        op.properties["microkernel"] = MicrokernelAttr(microkernel)
        op.properties["filter_shape"] = glow.ints(glow.shape_of(op.filter))
        loop_pairs = self.loop_pairs
        if microkernel == MICROKERNEL and not loop_pairs and kind == WINDOW_PAIRS and packed.shape[1] > UNROLLED_PAIRS:
            loop_pairs = WINDOW_LOOP_PAIRS  # a large window's gather and products looped
        if microkernel == MICROKERNEL and loop_pairs:
            op.properties["microkernel"] = op.microkernel.with_parameter("loop_pairs", IntegerAttr(loop_pairs, i64))
        band = self.band_words(op, plan, kind, packed)
        if band is not None:  # on a widened band of its input (`banded_windows`), 1x the int8 bytes
            packed, doubled = band, False
            op.properties["microkernel"] = op.microkernel.with_parameter(
                BAND_WINDOWS, IntegerAttr(int(self.single_issue), i64))
        elif self.blocked(op, plan.microkernel, kind, packed):
            # a speed-first build's looped gathered product (`gathered_product.BLOCKED_PIXELS`)
            op.properties["microkernel"] = op.microkernel.with_parameter("blocked_pixels", UnitAttr())
            if not self.single_issue:  # each pair's weight words loaded during the pair before
                op.properties["microkernel"] = op.microkernel.with_parameter(WEIGHTS_AHEAD, UnitAttr())
        elif self.single_issue and microkernel == MICROKERNEL and not loop_pairs and op.pool is None \
                and packed.shape[1] <= UNROLLED_PAIRS and packed.dtype != np.int8 \
                and gathers(kind, op.strides.get_values(), False, False):
            # a straight gathered product of int16 pairs: its pairs' words in runs of single loads
            op.properties["microkernel"] = op.microkernel.with_parameter(PIPELINED_LOADS, UnitAttr())
        if output_pairs and band is None:
            op.properties["microkernel"] = op.microkernel.with_parameter("output_pairs", UnitAttr())
        if microkernel == MICROKERNEL and kind == DEPTHWISE and self.orders_planes(op):
            op.properties["microkernel"] = op.microkernel.with_parameter(ORDERED_PLANES, UnitAttr())
        elif microkernel == MICROKERNEL and kind == DEPTHWISE and self.opaque_starts(op):
            op.properties["microkernel"] = op.microkernel.with_parameter(OPAQUE_STARTS, UnitAttr())
            if not self.helium:  # the M7: its words loaded ahead (the M55 lost so)
                op.properties["microkernel"] = op.microkernel.with_parameter(WORDS_AHEAD, UnitAttr())
        mark_narrow_requantization(op, centred)
        if doubled:
            op.properties["doubled_accumulators"] = UnitAttr()
        # Every tap of every output is inside the input, or in a padded plane (or gathered
        # window) holding the input offset.
        if not any(op.pads.get_values()) or (microkernel == MICROKERNEL and kind in (DEPTHWISE, WINDOW_PAIRS)):
            fold_input_offset(op, centred.sum(axis=1), rewriter)
        if microkernel == MICROKERNEL and not self.helium and not loop_pairs and band is None and doubled \
                and packed.dtype == np.int16 and op.pool is None and (
                    (kind == DEPTHWISE and int(np.prod(glow.shape_of(op.dest)[2:])) >= UNIFORM_SHIFT_PLANES) or (
                    gathers(kind, op.strides.get_values(), False, False)
                    and centred.shape[0] * packed.shape[1] > UNROLLED_CHANNEL_PAIRS)):
            packed = uniform_shift_table(op, kind, packed, centred, rewriter)
        elif microkernel == MICROKERNEL and not self.helium and output_pairs and band is None \
                and (self.shift_tables is None or id(op) in self.shift_tables):
            ordered = accumulator_shift_table(op, centred, rewriter, words)
            if ordered is not None:  # its channels in the kernel's order, the filter's types too
                packed, filter_type = ordered[0], ordered_channels(filter_type, ordered[1])
        if doubled:
            packed = biases_into_filter(op, kind, packed, loop_pairs > 0, self.single_issue)
        filter_words = stored_as(filter_type, i8, centred=not plan.uncentred_words) if packed.dtype == np.int8 else \
            centred_type(filter_type)
        op.operands[2] = insert_weight(f"{weight.name_.data}_{microkernel.replace('-', '_')}", packed, op, rewriter,
                                       filter_words)
        erase_if_unused(weight, rewriter)


UNIFORM_SHIFT_PLANES = 144
"""The fewest output pixels a channel of a depthwise layer requantized at one shift
(`uniform_shift_table`) has: a layer's shift is compiled into its kernel, so layers of one shape
that shared a kernel no longer do unless their shifts agree. Visual wake words on the M4: its
depthwise layers onto 12 x 12 outputs and more 45k estimated cycles fewer, 390 B less code; its
five 6 x 6 x 128 ones (one kernel before) 25k fewer, but three kernels for them (two shifts, and
one layer whose shifts spread too far), 3.8 KB more code."""


def uniform_shift_table(op: glowll.ConvolutionOp, kind: str | None, packed: np.ndarray, centred: np.ndarray,
                        rewriter: PatternRewriter) -> np.ndarray:
    """A narrow, doubled convolution of int16 pairs (`packed`: a gathered product's CHANNEL_PAIRS
    [groups, pairs, interleaved, block, 2], or a DEPTHWISE [O, ...] filter) with a fused relu,
    requantized at one right shift k, one more than its channels' largest r: each channel's
    filter and bias scaled by f = 2^(k - r), its table (multiplier, -k, terms f h + f / 2:
    `requantization.requantize_floored`, which proves the same levels). Then its output step is
    `SMMLA`, `SSAT` with `ASR #k`, `STRB` (no `ASR` by a register an output, nor the shift's
    loads and negation a channel). Returns the filter, scaled; as it is (nothing changed)
    where a scaled weight would leave int16 or a sum int32 (|a| at most |bias| + 255 x the
    channel's sum of |w|: 2 f |a| and |terms| + f |a| within int32)."""
    numbers = RightShiftNumbers.of(op, centred)
    if numbers is None:
        return packed
    right = int(numbers.rights.max()) + 1
    factors, terms = numbers.floored_terms(right)
    biases, sums = numbers.biases, factors * numbers.sums
    if kind == DEPTHWISE:  # [O, ...]
        channel_factors = factors.reshape(-1, *[1] * (packed.ndim - 1))
    else:  # channel (g I + i) b + c at [g, :, i, c]
        groups, _, interleaved, block, _ = packed.shape
        channel_factors = factors.reshape(groups, 1, interleaved, block, 1)
    scaled = packed.astype(np.int64) * channel_factors
    if (np.abs(scaled).max() > np.iinfo(np.int16).max or not fits_floored(sums, terms)
            or (2 * factors * np.abs(biases)).max() >= 2**31):
        return packed
    numbers.replace_bias(op, biases * factors, op.bias.type.element_type, rewriter)
    numbers.replace_table(op, np.stack([numbers.multipliers, np.full_like(numbers.shifts, -right), terms]), rewriter)
    op.properties["microkernel"] = op.microkernel.with_parameter(UNIFORM_SHIFT, UnitAttr())
    return scaled.astype(np.int16)


def fits_floored(sums: np.ndarray, terms: np.ndarray) -> bool:
    """Whether `requantize_floored` keeps every channel's numbers in int32: `sums` f |a|, the
    scaled accumulators' bounds; 2 f |a| (the doubling) and |terms| + f |a|."""
    return bool((2 * sums).max() < 2**31 and (np.abs(terms) + sums).max() < 2**31)


@dataclass
class RightShiftNumbers:
    """A narrow convolution's per-channel numbers where its relu clamps at or above the output
    offset and every channel shifts right (`uniform_shift_table`, `accumulator_shift_table`):
    its requantization table's multipliers and shifts, its bias, and `sums`, each channel's
    |bias| + 255 x its sum of |w| (a bound of |a|)."""

    table: SSAValue
    bias: glowll.WeightOp
    offset: int
    bounds: tuple[int, int]
    multipliers: np.ndarray
    shifts: np.ndarray
    biases: np.ndarray
    sums: np.ndarray

    @property
    def rights(self) -> np.ndarray:
        return -self.shifts

    @staticmethod
    def of(op: glowll.ConvolutionOp, centred: np.ndarray) -> RightShiftNumbers | None:
        table, bias = op.requantization, accumulator_bias(op)
        if (table is None or bias is None or getattr(op, "narrow_requantization", None) is None
                or not isinstance(table.owner, glowll.WeightOp) or table.owner.value is None):
            return None
        out_type = glow.convolved_element(op)
        bounds = activation_bounds(op, out_type)
        if bounds[0] < out_type.offset:  # the sign's rounding not taken: a relu only
            return None
        multipliers, shifts = array_from_dense(table.owner.value).astype(np.int64)
        if (shifts > 0).any():
            return None
        biases = array_from_dense(bias.value).astype(np.int64).reshape(-1)
        return RightShiftNumbers(table, bias, out_type.offset, bounds, multipliers, shifts, biases,
                                 np.abs(biases) + 255 * np.abs(centred.astype(np.int64)).sum(axis=1))

    def floored_terms(self, right: int) -> tuple[np.ndarray, np.ndarray]:
        """Each channel's factor f = 2^(right - r) and its terms f h + f / 2 at one `right`
        shift (`requantization.requantize_floored`)."""
        factors = np.left_shift(1, right - self.rights)
        return factors, factors * channel_rounding_terms(self.shifts, self.offset) + factors // 2

    def replace_bias(self, op: glowll.ConvolutionOp, biases: np.ndarray, element_type,
                     rewriter: PatternRewriter) -> None:
        op.operands[3] = insert_weight(self.bias.name_.data, biases.astype(np.int32), op, rewriter, element_type)
        erase_if_unused(self.bias, rewriter)

    def replace_table(self, op: glowll.ConvolutionOp, rows: np.ndarray, rewriter: PatternRewriter) -> None:
        old_table = self.table.owner
        op.operands[list(op.operands).index(self.table)] = insert_weight(old_table.name_.data, rows.astype(np.int32),
                                                                         op, rewriter)
        erase_if_unused(old_table, rewriter)


ACCUMULATOR_RIGHT = 16
"""The right shift `accumulator_shift_table` gives a layer: the largest one at most this that
keeps its sums in int32 (and one more than its channels' largest r at least). Layers of one
shape share their kernel only where their shifts agree (the shift is in its code): at each
layer's least shift visual wake words' five 128 -> 128 layers took four kernels (9, 10, 11,
14; code 44.5 KB -> 55.4 KB on the M7), at 16 one."""


def dead_channel_order(live: np.ndarray) -> np.ndarray | None:
    """The order in which a blocked product on output pair words takes a layer's channels (kernel
    channel o computing output channel order[o]): the live channels, then the dead ones, each in
    turn, where that puts more dead channels two to a block (`GatheredProduct.live_blocked_pixels`
    skips a block of two); else None. Visual wake words' first 128 -> 128 layer: 71 dead
    channels, 19 dead blocks in the model's order, 35 so."""
    dead = ~live
    order = np.concatenate([np.flatnonzero(live), np.flatnonzero(dead)])
    if len(order) % 2 or dead[order].reshape(-1, 2).all(axis=1).sum() <= dead.reshape(-1, 2).all(axis=1).sum():
        return None
    return order


def ordered_output_pair_words(op: glowll.ConvolutionOp, words: np.ndarray | None,
                              order: np.ndarray) -> np.ndarray | None:
    """The output pair words (`layout.output_pair_filter_words`) of the convolution's int8 filter
    words (`words` [groups, pairs, interleaved, half, channel], channel (g I + i) 2 + c) with its
    channels in `order`; None where they are not output pair words so."""
    if words is None:
        return None
    groups, pairs, interleaved, halves, block = words.shape
    rows = words.transpose(0, 2, 4, 1, 3).reshape(groups * interleaved * block, pairs, halves)[order]
    ordered = rows.reshape(groups, interleaved, block, pairs, halves).transpose(0, 3, 1, 4, 2)
    input_type = op.input.type.element_type
    return output_pair_filter_words(ordered, max(largest_difference(input_type),
                                                 int(np.max(np.abs(input_type.value_range)))))


def accumulator_shift_table(op: glowll.ConvolutionOp, centred: np.ndarray, rewriter: PatternRewriter,
                            words: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """`uniform_shift_table` for a narrow convolution whose filter cannot be scaled (output pair
    words, `layout.output_pair_filter_words`: its bytes are the int8 levels), with a fused relu:
    requantized at one right shift k (`ACCUMULATOR_RIGHT`), each channel's accumulator a scaled at
    run time instead, `a << s` with s = 1 + k - r (2 f a, f = 2^(k - r): the doubling of the
    narrow multiply in the same shift). Its table: multipliers, s, terms f h + f / 2
    (`requantization.requantize_floored`); the parameter `ACCUMULATOR_SHIFTS` k. Then the output
    step is `LSL` by the loaded s, `SMMLA`, `SSAT` with `ASR #k`, `STRB`, where the loaded right
    shift took `LSL #1`, `SMMLAR`, `ASR` by it, `SSAT`, `STRB`, and each channel's rounding term
    was made from its shift (`RSB`, `LSL`, `ASR`). A dead channel (weights 0: its level L one
    constant, `fold_constant_channels`) gets multiplier 0, s = 0 and terms L 2^k: its level L
    whatever its sums (`gathered_product.GatheredProduct.dead_blocks` skips the products of a
    block of two such channels). Nothing changed where no k > every live r keeps 2 f |a| and
    |terms| + f |a| in int32 (|a| at most |bias| + 255 x the channel's sum of |w|). A blocked,
    unpooled layer with its int8 filter `words` given takes its channels in `dead_channel_order`
    where that pairs more dead channels: its bias and table in that order, each table word of
    the left shifts with its output channel above them (`STORED_CHANNELS`). Returns the output
    pair words in the kernel's order and the order where it reordered them, else None."""
    channels = RightShiftNumbers.of(op, centred) if getattr(op, "doubled_accumulators", None) is None else None
    live = centred.any(axis=1)
    if channels is None or not live.any():
        return None
    rights = channels.rights

    def fits(right: int) -> bool:
        factors, terms = channels.floored_terms(right)
        return fits_floored((factors * channels.sums)[live], terms[live])

    right = next((k for k in range(ACCUMULATOR_RIGHT, int(rights[live].max()), -1) if fits(k)), None)
    if right is None:
        return None
    _, terms = channels.floored_terms(right)
    levels = channel_levels(channels.biases, channels.multipliers, channels.shifts, channels.offset, channels.bounds)
    numbers = np.stack([np.where(live, channels.multipliers, 0), np.where(live, 1 + right - rights, 0),
                        np.where(live, terms, levels << right)])
    order = dead_channel_order(live) if (op.pool is None and words is not None
                                         and op.microkernel.parameter("blocked_pixels") is not None) else None
    ordered = None if order is None else ordered_output_pair_words(op, words, order)
    if ordered is not None:
        numbers = numbers[:, order]
        numbers[1] |= order << LEFT_SHIFT_BITS
        channels.replace_bias(op, channels.biases[order], ordered_channels(op.bias.type.element_type, order),
                              rewriter)
        op.properties["microkernel"] = op.microkernel.with_parameter(STORED_CHANNELS, UnitAttr())
    channels.replace_table(op, numbers, rewriter)
    op.properties["microkernel"] = op.microkernel.with_parameter(ACCUMULATOR_SHIFTS, IntegerAttr(right, i64))
    return None if ordered is None else (ordered, order)


def ordered_channels(element_type, order: np.ndarray):
    """A per-channel quantized type with its channels in `order` (a per-tensor one as it is)."""
    if not isinstance(element_type, UniformQuantizedType) or not element_type.per_channel:
        return element_type
    scales = [element_type.scales.data[o].data for o in order]
    offsets = [element_type.offsets.data[o].data for o in order]
    return UniformQuantizedType(element_type.storage_type, scales, offsets, element_type.axis.data)


def fully_connected_macs(op: glowll.FullyConnectedOp) -> int:
    """The multiply-accumulates of a FullyConnected: rows x weights."""
    return glow.shape_of(op.input)[0] * int(np.prod(glow.shape_of(op.weights)))


OUTPUT_PAIRS_FROM = 16
"""The fewest input channel pairs of a pointwise layer on output pair words: each output's split
(`fully_connected.split_output_pairs`, a bias loaded, three instructions) is paid over fewer
products below. Random-weight layers on int8 words -> output pair words, estimated cycles a MAC
(M4 / M7): 8 -> 16 channels on 12 x 12 2.963 -> 3.134 / 2.591 -> 2.546; 32 -> 32 1.614 -> 1.614 /
1.211 -> 1.175; 64 -> 64 1.366 -> 1.335 / 0.961 -> 0.887; 64 -> 128 on 6 x 6 1.355 -> 1.315 /
0.917 -> 0.892; 128 -> 128 (blocked) 1.389 -> 1.301 / 0.803 -> 0.759."""


def takes_output_pair_words(op: glowll.ConvolutionOp, kind: str | None, packed: np.ndarray, loop_pairs: int) -> bool:
    """Whether a convolution's filter may be output pair words (`layout.output_pair_filter_words`,
    `gathered_product.GatheredProduct`): a 1x1 of stride 1 (unpooled or pooled globally) in a
    speed-first build of at least `OUTPUT_PAIRS_FROM` input channel pairs, its gathered product
    straight (at most `UNROLLED_PAIRS`) or blocked (at most `BLOCKED_GATHER_BYTES` gathered), of
    blocks of two output channels, int32 accumulators."""
    from glowmlir.backends.arm_dsp.gathered_product import BLOCKED_GATHER_BYTES, BLOCKED_PIXELS

    unpooled = op.pool is None or glow.pools_globally(op)
    return (kind == CHANNEL_PAIRS and not loop_pairs and tuple(glow.shape_of(op.filter)[2:]) == (1, 1) and unpooled
            and packed.ndim == 5 and packed.shape[1] >= OUTPUT_PAIRS_FROM and packed.shape[3] == 2
            and 4 * BLOCKED_PIXELS * packed.shape[1] <= BLOCKED_GATHER_BYTES and op.wide_accumulators is None
            and gathers(kind, op.strides.get_values(), op.pool is not None, glow.pools_globally(op)))


def band_windows_filter(op: glowll.ConvolutionOp, plan: FilterPacking, kind: str | None,
                        packed: np.ndarray) -> np.ndarray | None:
    """A convolution's filter as `banded_windows.band_window_words` where its kernel can take
    them (`PackConvolutionFilter.band_candidate`), else None: whether `plan` packs it as int16
    pairs or int8 words (the band's products on int8 words are the faster, at 1x the bytes)."""
    int8_words = plan.int8_words is not None or packed.dtype == np.int8
    if kind not in (WINDOW_PAIRS, CHANNEL_PAIRS) or not int8_words or plan.uncentred_words:
        return None
    filter_type = op.filter.type.element_type
    levels = array_from_dense(op.filter.owner.value)
    centred = levels.astype(np.int16) - np.int16(weight_zero_point(filter_type))
    input_type = op.input.type.element_type
    # the products take the levels themselves where the input offset is folded, else less the offset
    largest_input = max(int(np.max(np.abs(input_type.value_range))), largest_difference(input_type))
    if not takes_band_windows(op, centred, largest_input):
        return None
    return band_window_words(levels, weight_zero_point(filter_type), packed.shape[2])


def biases_into_filter(op: glowll.ConvolutionOp, kind: str | None, packed: np.ndarray, looped: bool,
                       single_issue: bool) -> np.ndarray:
    """`packed` (doubled) with the doubled biases in front (`arm_dsp_layout.with_biases`,
    `biases_in_filter`) where the kernel's blocks take straight-line products
    (`straight_products`) and the bias is a constant in accumulator units; else as it is."""
    if not takes_biases(op, kind, packed, looped, single_issue):
        return packed
    # narrow: twice the bias is within int32
    op.properties["microkernel"] = op.microkernel.with_parameter("biases_in_filter", UnitAttr())
    return with_biases(packed, 2 * array_from_dense(accumulator_bias(op).value).astype(np.int64))


def takes_biases(op: glowll.ConvolutionOp, kind: str | None, packed: np.ndarray, looped: bool,
                 single_issue: bool) -> bool:
    """Whether `biases_into_filter` puts the doubled biases in front of `packed`."""
    straight = straight_products(kind, op.strides.get_values(), op.pool is not None, glow.pools_globally(op),
                                 packed.shape[1], looped, single_issue)
    return straight and accumulator_bias(op) is not None and op.wide_accumulators is None


def select_im2col(op: glowll.ConvolutionOp, levels: np.ndarray, offset: int, rewriter: PatternRewriter) -> bool:
    """`microkernel = "arm-mve-im2col"` (dot products of gathered windows, the filter as it
    is) when the input zero point folds into the bias: the gathered padding holds it, so
    the fold is exact at the borders too."""
    centred = (levels.astype(np.int64) - offset).reshape(levels.shape[0], -1)
    fold_input_offset(op, centred.sum(axis=1), rewriter)
    if op.folded_input_offset is None:
        return False
    op.properties["microkernel"] = MicrokernelAttr(IM2COL)
    mark_narrow_requantization(op, centred)
    rewriter.notify_op_modified(op)
    return True


@dataclass
class SelectFullyConnected(RewritePattern):
    helium: bool
    only: str = ""
    loop_pairs: int = 0
    """A size-first build's (`SelectArmDspKernels.loop_pairs`): an "arm-dsp" FullyConnected gets
    it too, and its gathered row's loop takes one run of four inputs a step, not `FC_STEPS`."""
    paired: set[int] | None = None
    """The `id`s of the FullyConnected to give int16 weight pairs (`fully_connected.WEIGHT_PAIRS`;
    None: every one that can take them; `flash_budget.choose_packed`)."""
    filter_words: str = ""
    """"int8": int8 weights everywhere (`SelectArmDspKernels.filter_words`)."""

    def kernel_of(self, op: glowll.FullyConnectedOp) -> str | None:
        """The FullyConnected's microkernel here (None: none); changes nothing."""
        if op.microkernel is not None or not is_quantized_instruction(op) or not dsp_buffers(op):
            return None
        helium = self.helium and not int16_data(op)
        only = forced(op, self.only)
        if only not in ("", MICROKERNEL, HELIUM) or (only == HELIUM and not helium):
            return None
        return HELIUM if helium and only != MICROKERNEL else MICROKERNEL

    def constant_int8_weights(self, op: glowll.FullyConnectedOp) -> np.ndarray | None:
        """The int8 levels of an "arm-dsp" FullyConnected of int8 data and constant weights, else None."""
        weights = op.weights.owner
        if (self.kernel_of(op) != MICROKERNEL or not int8_layer(op) or self.filter_words == INT8_WORDS
                or not isinstance(weights, glowll.WeightOp) or weights.value is None):
            return None
        return array_from_dense(weights.value)

    def output_pairs_of(self, op: glowll.FullyConnectedOp, levels: np.ndarray | None = None,
                        folded: bool | None = None) -> np.ndarray | None:
        """The FullyConnected's weights as output pair words (`fully_connected.output_pair_words`,
        1x the int8 bytes) where its "arm-dsp" kernel can take them, else None; changes nothing.
        `levels` and `folded` (whether the input offset is folded) once the kernel is chosen."""
        from glowmlir.backends.arm_dsp.fully_connected import output_pair_words, takes_output_pairs
        from glowmlir.quantization.rescaling import largest_difference

        levels = self.constant_int8_weights(op) if levels is None else levels
        if levels is None:
            return None
        columns, depth = glow.shape_of(op.weights)
        input_type = op.input.type.element_type
        centred = centred_rows(levels, op.weights.type.element_type)
        # the products take the levels themselves where the input offset is folded, else less the offset
        # (before the fold is decided, `weight_pairs_of`: the larger)
        levels_bound, difference = int(np.max(np.abs(input_type.value_range))), largest_difference(input_type)
        largest_input = max(levels_bound, difference) if folded is None else levels_bound if folded else difference
        if not takes_output_pairs(centred, largest_input, columns, depth):
            return None
        return output_pair_words(levels, weight_zero_point(op.weights.type.element_type))

    def weight_pairs_of(self, op: glowll.FullyConnectedOp) -> np.ndarray | None:
        """The FullyConnected's weights as int16 pairs (`fully_connected.pair_weight_rows`) where
        its "arm-dsp" kernel can take them and not output pair words (as fast, in half the
        bytes), else None; changes nothing."""
        from glowmlir.backends.arm_dsp.fully_connected import pair_weight_rows, takes_weight_pairs

        levels = self.constant_int8_weights(op)
        columns, depth = glow.shape_of(op.weights)
        if levels is None or not takes_weight_pairs(depth, columns, self.loop_pairs > 0) \
                or self.output_pairs_of(op) is not None:
            return None
        return pair_weight_rows(levels, weight_zero_point(op.weights.type.element_type))

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.FullyConnectedOp, rewriter: PatternRewriter) -> None:
        from glowmlir.backends.arm_dsp.fully_connected import OUTPUT_PAIRS, WEIGHT_PAIRS

        kernel = self.kernel_of(op)
        if kernel is None:
            return
        levels = self.constant_int8_weights(op)
        pairs = self.weight_pairs_of(op) if self.paired is None or id(op) in self.paired else None
        op.properties["microkernel"] = MicrokernelAttr(kernel)
        if kernel == MICROKERNEL and self.loop_pairs:
            op.properties["microkernel"] = op.microkernel.with_parameter("loop_pairs",
                                                                        IntegerAttr(self.loop_pairs, i64))
        weights = op.weights.owner
        if isinstance(weights, glowll.WeightOp) and weights.value is not None:
            centred = centred_rows(array_from_dense(weights.value), op.weights.type.element_type)
            mark_narrow_requantization(op, centred)
            fold_input_offset(op, centred.sum(axis=1), rewriter)
        output_pairs = None if pairs is not None or levels is None else \
            self.output_pairs_of(op, levels, op.folded_input_offset is not None)
        if pairs is not None:
            op.properties["microkernel"] = op.microkernel.with_parameter(WEIGHT_PAIRS, UnitAttr())
            op.operands[2] = insert_weight(f"{weights.name_.data}_{WEIGHT_PAIRS}", pairs, op, rewriter,
                                           centred_type(op.weights.type.element_type))
            erase_if_unused(weights, rewriter)
        elif output_pairs is not None:
            op.properties["microkernel"] = op.microkernel.with_parameter(OUTPUT_PAIRS, UnitAttr())
            op.operands[2] = insert_weight(f"{weights.name_.data}_{OUTPUT_PAIRS}", output_pairs, op, rewriter,
                                           stored_as(op.weights.type.element_type, i8, centred=True))
            erase_if_unused(weights, rewriter)
        rewriter.notify_op_modified(op)


@dataclass
class SelectHeliumElementwise(RewritePattern):
    """An int8 add, sub or mul whose innermost loop is at least `HELIUM_ELEMENTWISE_RUNS`
    long (or is its only loop: the operands of one shape): `microkernel = "arm-mve"` (four
    lanes at a time, `backends.arm_mve.kernels.emit_elementwise`). A broadcast onto runs of
    one level (a trailing unit dimension) keeps the scalar kernel (`forced`: takes them too)."""

    forced: bool = False

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.ElementwiseOp, rewriter: PatternRewriter) -> None:
        if (op.microkernel is None and op.kind.data in registered_kernel(HELIUM).elementwise_kinds
                and all(is_quantized(v.type) for v in op.operands) and int8_buffers(*op.operands)):
            loops = glow.broadcast_loops(glow.shape_of(op.dest), [glow.shape_of(v) for v in op.inputs])
            tuned = tuned_kernel(op)
            if tuned and tuned != HELIUM:
                return
            if self.forced or tuned or len(loops) == 1 or loops[-1] >= HELIUM_ELEMENTWISE_RUNS:
                op.properties["microkernel"] = MicrokernelAttr(HELIUM)
                rewriter.notify_op_modified(op)


class SelectHeliumSoftmax(RewritePattern):
    """An int8 softmax: `microkernel = "arm-mve"` (exps on four lanes at a time,
    `backends.arm_mve.kernels.emit_softmax`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.SoftMaxOp, rewriter: PatternRewriter) -> None:
        if (op.microkernel is None and all(is_quantized(v.type) for v in op.operands)
                and int8_buffers(*op.operands) and tuned_kernel(op) in ("", HELIUM)):
            op.properties["microkernel"] = MicrokernelAttr(HELIUM)
            rewriter.notify_op_modified(op)


@dataclass
class SelectLevelTables(RewritePattern):
    """On the DSP extension without Helium: an int8 add or sub of at least
    `LEVEL_TABLE_ELEMENTWISE_FROM` elements (measured: a table entry costs about a fifth of
    an element's generic work), and an int8 softmax computing more exps than its table holds
    (one an element on rows of up to `quantized_kernels.STORED_EXPS` levels, else two),
    `microkernel = "level-tables"` (`backends.arm_dsp.level_tables`: the function of one
    level computed once per level, then looked up). The softmax's rule is the M7's crossing
    (when the generic kernel computed two exps an element: about 128 levels, on the M4 and
    the M33 about 90; with one, a softmax of 160 levels took 36,736 cycles generic, 51,266 on
    tables on the M4, tests/unit/test_arm_dsp_kernel_choices.py). `forced`: every one,
    whatever its size."""

    forced: bool = False

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.ElementwiseOp | glowll.SoftMaxOp, rewriter: PatternRewriter) -> None:
        if (op.microkernel is not None or not all(is_quantized(v.type) for v in op.operands)
                or not int8_buffers(*op.operands)):
            return
        elements = int(np.prod(glow.shape_of(op.dest)))
        tuned = tuned_kernel(op)
        if tuned and tuned != LEVEL_TABLES:
            return
        forced_here = self.forced or tuned == LEVEL_TABLES
        if isinstance(op, glowll.ElementwiseOp):
            worth = op.kind.data in LEVEL_TABLE_ELEMENTWISE and elements >= LEVEL_TABLE_ELEMENTWISE_FROM
        else:  # the generic kernel computes each exp once (rows of up to STORED_EXPS levels) or twice
            worth = elements * (1 if glow.shape_of(op.dest)[-1] <= STORED_EXPS else 2) > LEVEL_TABLE_ENTRIES
        if worth or (forced_here and (isinstance(op, glowll.SoftMaxOp) or op.kind.data in LEVEL_TABLE_ELEMENTWISE)):
            op.properties["microkernel"] = MicrokernelAttr(LEVEL_TABLES)
            rewriter.notify_op_modified(op)


@dataclass
class SelectChannelProducts(RewritePattern):
    """On the DSP extension without Helium: an int8 Mul of a tensor by one level per channel
    (a squeeze-excitation gate, `channel_products.gate_operand`), `microkernel =
    "channel-products"` (`backends.arm_dsp.channel_products`: the gate's terms once per
    channel, then one multiply-accumulate and a narrow requantization an element)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.ElementwiseOp, rewriter: PatternRewriter) -> None:
        from glowmlir.backends.arm_dsp.channel_products import gate_operand

        if (op.microkernel is not None or not all(is_quantized(v.type) for v in op.operands)
                or not int8_buffers(*op.operands) or tuned_kernel(op) or gate_operand(op) is None
                or any(v.type.element_type.per_channel for v in op.operands)):
            return
        op.properties["microkernel"] = MicrokernelAttr(CHANNEL_PRODUCTS)
        rewriter.notify_op_modified(op)


@dataclass
class SelectReciprocalQuantize(RewritePattern):
    """On the DSP extension without Helium: a quantize of f32 to int8, `microkernel =
    "reciprocal-quantize"` (`backends.arm_dsp.reciprocal_quantize`: a multiply by the
    reciprocal, the rare element near a half level divided again; no VDIV an element)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.ElementwiseOp, rewriter: PatternRewriter) -> None:
        if (op.microkernel is not None or op.kind.data != "quantize" or tuned_kernel(op)
                or op.inputs[0].type.element_type != f32 or not is_quantized(op.dest.type)
                or not int8_buffers(op.dest) or op.dest.type.element_type.per_channel):
            return
        op.properties["microkernel"] = MicrokernelAttr(RECIPROCAL_QUANTIZE)
        rewriter.notify_op_modified(op)


@dataclass(frozen=True)
class SelectArmDspKernels(ModulePass):
    """Marks int8 convolutions and FullyConnected for the DSP-extension kernels, packing
    filters; with `helium` (a core with MVE, the Cortex-M55) FullyConnected and the
    convolutions of stride 1 along their rows get `microkernel = "arm-mve"` instead
    (`backends.arm_mve.kernels`: FullyConnected as dot products LLVM turns into VMLAVA, convolutions
    on vectors of output columns, filters packed by `lowering.vector_layout`), and so do
    int8 Add, Sub, Mul and softmax (`SelectHeliumElementwise`, `SelectHeliumSoftmax`);
    without `helium`, large int8 Add, Sub and softmax take tables (`SelectLevelTables`). With
    `loop_pairs` (a size-first build: `pipeline.glowll_passes` gives the core's
    `backends.arm_dsp.gathered_product.LOOP_PAIRS`), each "arm-dsp" convolution gets
    `loop_pairs`: its kernel keeps its loop over input channel pairs, this many a step.

    `only` (a test hook: tests/unit/test_arm_dsp_kernel_choices.py measures each choice by
    building every candidate) gives one microkernel of `FORCED_KERNELS` wherever it can take
    a layer, whatever the cost rules above say, and no other ("generic": none). An
    instruction the autotuner chose a kernel for (`tuned_kernel`, `glowll-apply-tuned-kernels`)
    is given that one the same way, a convolution's packed filter within the constants'
    budget (its measured saving per extra byte), else the generic kernel."""

    name = "glowll-select-arm-dsp-kernels"
    helium: bool = False
    loop_pairs: int = 0
    only: str = ""
    constant_ratio: float = 0.0
    flash_size: int = 0
    filter_words: str = ""
    single_issue: bool = False
    """The core issues one instruction a cycle (`banded_windows.SINGLE_ISSUE_CPUS`): the band
    windows' loads side by side (`banded_windows.BAND_WINDOWS` = 1)."""
    code_excess: int = -1
    """Bytes of code a speed-first build of the module took over its budget, measured
    (`compiler.compile_module` builds it again with them; 0: within it): the layers whose
    size-first kernels free them for fewest estimated cycles take those, and, whatever the
    excess, the layers whose speed-first variants save nothing measurable
    (`size_first_within_budget`). -1 (`glow-opt`'s default; the autotuner's measuring builds):
    every kernel speed first."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.loop_pairs < 0:
            raise GlowError(f"glowll-select-arm-dsp-kernels{{loop-pairs={self.loop_pairs}}}: expected 0 (speed "
                            "first) or the channel pairs a step of a size-first kernel's loop")
        if self.only not in ("", *FORCED_KERNELS):
            raise GlowError(f"glowll-select-arm-dsp-kernels{{only={self.only}}}: expected one of "
                            f"{', '.join(FORCED_KERNELS)}")
        if self.constant_ratio < 0 or self.flash_size < 0:
            raise GlowError(f"glowll-select-arm-dsp-kernels{{constant-ratio={self.constant_ratio} flash-size="
                            f"{self.flash_size}}}: expected 0 (no budget) or a positive ratio or size")
        if self.filter_words not in FILTER_WORDS:
            raise GlowError(f"glowll-select-arm-dsp-kernels{{filter-words={self.filter_words}}}: expected "
                            f"{INT8_WORDS} (int8 filter words wherever a kernel reads them), {OUTPUT_PAIR_WORDS} "
                            "(output pair words where they can be, else int8 words) or nothing")
        filters = PackConvolutionFilter(self.helium, self.loop_pairs, self.only, filter_words=self.filter_words,
                                        single_issue=self.single_issue)
        fully_connected = SelectFullyConnected(self.helium, self.only, self.loop_pairs, filter_words=self.filter_words)
        filters.packed = None if self.only or self.filter_words else \
            self.packed_within_budget(op, filters, fully_connected)
        fully_connected.paired = filters.packed
        size_first = self.size_first_within_budget(op, filters, fully_connected)
        PatternRewriteWalker(filters, apply_recursively=False).rewrite_module(op)
        PatternRewriteWalker(fully_connected, apply_recursively=False).rewrite_module(op)
        for chosen in size_first:
            if isinstance(chosen, glowll.ConvolutionOp):  # its rows looped, as a size-first build's
                chosen.properties["microkernel"] = chosen.microkernel.with_parameter(
                    "loop_pairs", IntegerAttr(LOOP_PAIRS["dsp"], i64))
            else:
                chosen.attributes[CODE_SIZE] = StringAttr("optsize")
        if self.helium and self.only in ("", HELIUM):
            PatternRewriteWalker(GreedyRewritePatternApplier([SelectHeliumElementwise(self.only == HELIUM),
                                                              SelectHeliumSoftmax()]),
                                 apply_recursively=False).rewrite_module(op)
        elif self.only == LEVEL_TABLES or (not self.helium and not self.only):
            PatternRewriteWalker(SelectLevelTables(self.only == LEVEL_TABLES),
                                 apply_recursively=False).rewrite_module(op)
        if not self.helium and not self.only:
            PatternRewriteWalker(GreedyRewritePatternApplier([SelectChannelProducts(), SelectReciprocalQuantize()]),
                                 apply_recursively=False).rewrite_module(op)

    def size_first_within_budget(self, module: ModuleOp, filters: PackConvolutionFilter,
                                 fully_connected: SelectFullyConnected) -> list[glowll.InstructionOp]:
        """The instructions whose size-first kernels free the `code_excess` bytes for fewest
        estimated cycles (`flash_budget.choose_size_first`): a depthwise convolution's rows
        looped (`flash_budget.looped_depthwise_cost`: where its speed-first kernel unrolls its
        plane or takes its rows' tiles in straight-line code), a FullyConnected `optsize`.
        Without an excess, those whose speed-first variants save nothing measurable
        (`flash_budget.UNMEASURABLE_CYCLES`, within `UNMEASURABLE_SHARE` of the model's
        multiply-accumulates: `convolution_macs`, `fully_connected_macs`). Layers whose kernels come out as one function
        (equal shapes and kernel) save its bytes once and lose their cycles together. None in a
        size-first build (every kernel looped already), on Helium, with `only`, or with a
        `code_excess` of -1."""
        if self.code_excess < 0 or self.loop_pairs or self.helium or self.only or self.filter_words:
            return []
        groups: dict[tuple, list[glowll.InstructionOp]] = {}
        costs: dict[tuple, SizeFirstCost] = {}
        for layer in module.walk():
            if isinstance(layer, glowll.ConvolutionOp):
                saved, lost = self.looped_depthwise_cost(layer, filters)
            elif isinstance(layer, glowll.FullyConnectedOp) and fully_connected.kernel_of(layer) == MICROKERNEL:
                saved, lost = size_first_fully_connected_cost(fully_connected_macs(layer))
            else:
                continue
            if saved <= 0:
                continue
            key = (layer.name, tuple(tuple(glow.shape_of(v)) for v in layer.operands),
                   tuple((name, str(value)) for name, value in layer.properties.items() if name != glow.NODE_NAME))
            groups.setdefault(key, []).append(layer)
            shared = costs.get(key)
            costs[key] = SizeFirstCost(layer if shared is None else shared.op, saved,
                                       lost + (0 if shared is None else shared.lost_cycles))
        macs = convolution_macs(module) + sum(fully_connected_macs(layer) for layer in module.walk()
                                              if isinstance(layer, glowll.FullyConnectedOp))
        chosen = choose_size_first(list(costs.values()), self.code_excess, macs)
        return [layer for key, layers in groups.items() if id(costs[key].op) in chosen for layer in layers]

    @staticmethod
    def looped_depthwise_cost(conv: glowll.ConvolutionOp, filters: PackConvolutionFilter) -> tuple[int, int]:
        """(bytes saved, estimated cycles lost) by looping an "arm-dsp" depthwise convolution's
        rows (`flash_budget.looped_depthwise_cost`); (0, 0) for any other convolution."""
        from glowmlir.backends.arm_dsp.depthwise import PLANE_BYTES, straight_row_tiles, unrolls_plane

        plan = filters.packing_of(conv)
        if plan is None or plan.microkernel != MICROKERNEL or plan.kind != DEPTHWISE or conv.pool is not None:
            return 0, 0
        if filters.packed is not None and id(conv) not in filters.packed and plan.int8_words is None:
            return 0, 0  # left out of the constants' budget: the generic kernel
        ordered = filters.orders_planes(conv)
        dilations, strides = conv.dilations.get_values(), conv.strides.get_values()
        rows = convolution_depthwise_plan(glow.shape_of(conv.input), glow.shape_of(conv.filter), strides,
                                          conv.pads.get_values(), dilations,
                                          widens_planes(dilations, int8_buffers(conv.input), ordered), ordered)
        batch, channels, out_h, out_w = glow.shape_of(conv.dest)
        read = (out_h - 1) * strides[0] + (glow.shape_of(conv.filter)[2] - 1) * dilations[0] + 1
        whole = rows.widened and read * 4 * rows.row_words <= PLANE_BYTES  # one band: the kernel's own test
        unrolled = unrolls_plane(rows, out_h, out_w, 1 if whole else 2, True)
        straight = 0 < rows.tiles <= straight_row_tiles(rows, strides[1]) and rows.shifted is None
        return looped_depthwise_cost(out_h, out_w, batch * channels, strides[1], unrolled,
                                     rows.tiles if straight else 0)

    def packed_within_budget(self, module: ModuleOp, filters: PackConvolutionFilter,
                             fully_connected: SelectFullyConnected) -> set[int] | None:
        """The convolutions whose packed filters, and the FullyConnected whose int16 weight
        pairs, fit the constants' budget (`flash_budget.constants_budget`, None: every one),
        most cycles saved per extra byte first (`flash_budget.choose_packed`,
        `flash_budget.saved_cycles`, `flash_budget.weight_pairs_saved_cycles`)."""
        int8_bytes = int8_constants(module)
        budget = constants_budget(int8_bytes, self.constant_ratio, self.flash_size)
        if budget is None:
            return None
        # Convolutions packing one filter into the same words (the patches of a layer,
        # glowll-execute-in-patches) store it once (glowll-allocate-memory keeps one copy of equal
        # weights): one cost for them all, the cycles they save together.
        groups: dict[tuple, list[glowll.ConvolutionOp]] = {}
        costs: dict[tuple, PackingCost] = {}
        for conv in module.walk():
            if (not isinstance(conv, glowll.ConvolutionOp) or (plan := filters.packing_of(conv)) is None
                    or plan.blocks_output_pairs  # as fast as its int16 pairs, in its int8 bytes
                    or filters.takes_band_windows(conv, plan)):  # 1x the int8 bytes whatever is decided
                continue
            biases = plan.doubled and takes_biases(conv, plan.kind, plan.packed, filters.loop_pairs > 0,
                                                   filters.single_issue)
            extra = 0 if plan.packed is None else (align(plan.packed.nbytes) - align(conv.filter.owner.byte_size)
                                                   + (4 * glow.shape_of(conv.filter)[0] if biases else 0))
            macs = int(np.prod(glow.convolution_shape(conv))) * int(np.prod(glow.shape_of(conv.filter)[1:]))
            # the autotuner's saving is measured over the generic kernel: it ranks the layers
            # over int8 filter words too (their own cost is not measured)
            tuned = conv.attributes.get(TUNED_KERNEL)
            saved = (tuned.saved_cycles if tuned is not None and tuned.saved_cycles
                     else saved_cycles(macs, plan.int8_words is not None, plan.uncentred_words))
            key = (conv.filter, plan.doubled, None if plan.packed is None else
                   (plan.packed.shape, plan.packed.tobytes()))
            groups.setdefault(key, []).append(conv)
            shared = costs.get(key)
            costs[key] = PackingCost(conv if shared is None else shared.op, extra,
                                     saved + (0 if shared is None else shared.saved_cycles))
        for dense in module.walk():
            pairs = fully_connected.weight_pairs_of(dense) if isinstance(dense, glowll.FullyConnectedOp) else None
            if pairs is not None:
                extra = align(pairs.nbytes) - align(dense.weights.owner.byte_size)
                macs = glow.shape_of(dense.input)[0] * pairs.size
                groups[(dense,)] = [dense]
                costs[(dense,)] = PackingCost(dense, extra, weight_pairs_saved_cycles(macs))
        chosen = choose_packed(list(costs.values()), int8_bytes, budget)
        packed = {id(conv) for key, convs in groups.items() if id(costs[key].op) in chosen for conv in convs}
        # then, in what the packing leaves, the third table rows of the layers on output pair words
        # (`accumulator_shift_table`), most MACs first, for all layers of one shape or none (their
        # kernel is one where all take it: keyword spotting's four 64 -> 64 layers, one with the
        # rows, took two kernels, 5.8 KB of code more on the M4 for 14k cycles fewer)
        left = budget - int8_bytes - sum(max(cost.extra_bytes, 0) for cost in costs.values() if id(cost.op) in chosen)
        filters.shift_tables = set()
        shapes: dict[tuple, list[glowll.ConvolutionOp]] = {}
        for conv in module.walk():
            if isinstance(conv, glowll.ConvolutionOp) and id(conv) not in packed \
                    and (plan := filters.packing_of(conv)) is not None and plan.output_pair_words is not None:
                shapes.setdefault((glow.shape_of(conv.input), glow.shape_of(conv.filter), conv.pool is None),
                                  []).append(conv)
        for (_, filter_shape, _), convs in sorted(shapes.items(), key=lambda item: -sum(map(layer_macs, item[1]))):
            extra = len(convs) * (align(12 * filter_shape[0]) - align(8 * filter_shape[0]))
            if extra <= left:
                filters.shift_tables.update(id(conv) for conv in convs)
                left -= extra
        return packed
