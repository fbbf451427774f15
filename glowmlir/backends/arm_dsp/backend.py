"""The Arm DSP extension's microkernels: "arm-dsp" (int8 or int16 convolutions and
FullyConnected on packed int16 pairs, `emitters`) and "level-tables" (int8 adds, subs and
softmaxes on tables of levels, `level_tables`); `glowll-select-arm-dsp-kernels` picks them.
And the DSP-extension forms of the size-first backend's kernels whose shapes are data,
"shape-parameterised-dsp" and "shape-parameterised-depthwise-dsp" (`shape_parameterised`),
which `glowll-shape-parameterised-kernels{dsp=true}` picks."""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr, UnitAttr, i8, i16
from xdsl.utils.exceptions import VerifyException

from glowmlir.backends import Backend, Microkernel, PipelineOptions, SelectionOrder, serves
from glowmlir.backends.arm_dsp import layout, shape_parameterised
from glowmlir.backends.arm_dsp.target import has_arm_dsp
from glowmlir.dialects import glow, glowll
from glowmlir.dialects.quant import storage_type
from glowmlir.lowering.shape_records import DEPTHWISE_RECORD_WORDS, RECORD_WORDS, record_check

PARAMETERS = ("loop_pairs", "biases_in_filter", "blocked_pixels", "weight_pairs", "output_pairs", "band_windows",
              "weights_ahead", "ordered_planes", "pipelined_loads", "opaque_starts", "words_ahead",
              "uniform_shift", "accumulator_shifts", "stored_channels")
"""An "arm-dsp" convolution's own parameters (`#glowll.microkernel<"arm-dsp", {...}>`):
`loop_pairs` (a size-first build's, `glowll-select-arm-dsp-kernels{loop-pairs=N}`): the kernel
keeps its loop over input channel pairs a loop, taking this many pairs a step, instead of
choosing straight-line code where that is faster (a FullyConnected's gathered row: one run of
four inputs a step); `biases_in_filter` (a gathered product of
straight-line blocks with `doubled_accumulators`): the packed filter's first pair holds each
block's doubled biases (`layout.with_biases`), which the kernel reads there, not from `bias`;
`blocked_pixels` (a speed-first build's gathered product of more pairs than `UNROLLED_PAIRS`): runs
of four pixels multiplied by each block of two output channels together in one loop over the pairs
(`GatheredProduct.blocked_pixels`), with `weights_ahead` on a dual-issue core each pair's weight
words loaded during the pair before (`gathered_product.WEIGHTS_AHEAD`); `weight_pairs` (an int8
FullyConnected the flash budget allows): its weights int16 levels less their zero point, each run
of four in the order of its input pairs (`fully_connected.pair_weight_rows`); `output_pairs` (an
int8 FullyConnected whose sums allow it): its int8 weights less their zero point as words of two outputs' weights
(`fully_connected.output_pair_words`, 1x the bytes); on a pointwise convolution's gathered
product, its int8 filter words as words of two output channels' weights
(`layout.output_pair_filter_words`); `band_windows` (a speed-first build's 3x3
convolution of an even number of channels, stride 1 or 2, or unpadded 1x1 of stride 2): its
filter output pair words (`banded_windows.band_window_words`), multiplied on a widened band of
its input (`banded_windows.banded_window_product`), 1 where each tap's loads go side by side
(a single-issue core), else 0; `ordered_planes` (a stride-2 int8 depthwise convolution on a
single-issue core, `layout.orders_planes`): int8 copies of its input planes, their words
read in order (`depthwise.ordered_pair_products`), its filter the pair tiling's weight words
unslotted; `pipelined_loads` (an unpooled straight gathered product on a single-issue core): on
int16 pairs, each pair's weight words and first pixel pair's words four `LDR`s in a row, which
the core pipelines (`gathered_product.PIPELINED_LOADS`); `opaque_starts` (a speed-first build's
widened depthwise convolution of tiles of more than five outputs on a dual-issue core,
`layout.OPAQUE_STARTS`): each such tile starts from its bias made opaque and loads its words
alone, ahead of their products (`depthwise.products_ahead`), a looped plane's channel filter
copied to the stack (`depthwise.DepthwiseConvolution.stack_filter`), where it carries
`words_ahead` too (`layout.WORDS_AHEAD`: not on Helium cores); `uniform_shift` (a
speed-first build's straight gathered product of int16 pairs, or widened depthwise layer, with a
relu, `select_kernels.uniform_shift_table`): requantized at one right shift for every channel,
each channel's filter and bias scaled to it (`requantization.requantize_floored`);
`accumulator_shifts` (its value the shift: a gathered product on output pair words with a relu,
`select_kernels.accumulator_shift_table`): the same, each channel's accumulator scaled at run time;
`stored_channels` (with it, blocked and unpooled): its channels in the kernel's own order, dead
ones two to a block (`select_kernels.dead_channel_order`), each stored to the output channel its
table word names (`requantization.STORED_CHANNELS`)."""


def verify_packed_pairs(op) -> None:
    """A convolution's filter packed as `layout.pack_filter` packs it (int16 pairs, or int8 words
    `layout.int8_filter_words` where `layout.takes_int8_words`), and the
    properties of a size-first build's loops and of biases packed into the filter."""
    if isinstance(op, glowll.FullyConnectedOp):
        paired = op.microkernel.parameter("weight_pairs")
        int16_weights = storage_type(op.weights.type.element_type) == i16
        if paired is not None and not isinstance(paired, UnitAttr):
            raise VerifyException(f"{op.name}: an arm-dsp FullyConnected's weight_pairs is a unit attribute")
        output_pairs = op.microkernel.parameter("output_pairs")
        if output_pairs is not None and (not isinstance(output_pairs, UnitAttr) or paired is not None
                                         or storage_type(op.weights.type.element_type) != i8
                                         or glow.shape_of(op.weights)[0] % 2):
            raise VerifyException(f"{op.name}: an arm-dsp FullyConnected's output_pairs (a unit attribute) takes "
                                  "int8 weights of an even number of outputs, and no weight_pairs")
        if (paired is not None) != (int16_weights and storage_type(op.input.type.element_type) == i8):
            raise VerifyException(f"{op.name}: an arm-dsp FullyConnected of int8 data has int16 weights (centred) "
                                  "exactly when it has weight_pairs")
    if not isinstance(op, glowll.ConvolutionOp):
        return
    loop_pairs = op.microkernel.parameter("loop_pairs")
    if loop_pairs is not None and (not isinstance(loop_pairs, IntegerAttr) or loop_pairs.value.data < 1):
        raise VerifyException(f"{op.name}: an arm-dsp convolution's loop_pairs is 1 or more channel pairs a step")
    biases_in_filter = op.microkernel.parameter("biases_in_filter")
    if biases_in_filter is not None and (not isinstance(biases_in_filter, UnitAttr)
                                         or op.doubled_accumulators is None):
        raise VerifyException(f"{op.name}: an arm-dsp convolution's biases_in_filter (a unit attribute) goes with "
                              "doubled_accumulators")
    if op.filter_shape is None:
        raise VerifyException(f"{op.name}: a packed filter needs its filter_shape")
    output_pairs = op.microkernel.parameter("output_pairs")
    if output_pairs is not None and (not isinstance(output_pairs, UnitAttr)
                                     or storage_type(op.filter.type.element_type) != i8):
        raise VerifyException(f"{op.name}: an arm-dsp convolution's output_pairs (a unit attribute) takes a filter "
                              "of int8 words")
    expected = layout.packed_filter_shape(op)
    if storage_type(op.filter.type.element_type) == i8 and layout.takes_int8_words(op):
        if op.doubled_accumulators is None and glow.shape_of(op.filter) == expected:
            return
        raise VerifyException(f"{op.name}: a filter of int8 words must be {list(expected)}, its levels undoubled")
    if storage_type(op.filter.type.element_type) != i16 or glow.shape_of(op.filter) != expected:
        raise VerifyException(f"{op.name}: the packed filter must be int16 pairs {list(expected)}"
                              + (" or int8 words" if layout.takes_int8_words(op) else ""))


def graph_passes(options: PipelineOptions) -> list:
    """On a core with the DSP extension and no Helium, with our kernels: the int8 convolution
    of a TFLite model's NHWC input reads it in place (`glow-convolve-interleaved-rows`), its
    rows of KW*C taps of stride s*C on the DSP kernels (visual wake words' stem on the
    Cortex-M7: 9.09M -> 9.02M cycles, no 27,648-byte copy). Helium's column kernel takes
    only strides 1 and 2 along a row, and the im2col kernel the rows would get instead was
    4.5% slower on the whole of visual wake words than the transpose and the column kernel."""
    from glowmlir.transforms.convolve_interleaved_rows import ConvolveInterleavedRows

    if (options.target is None or not has_arm_dsp(options.target) or serves("arm_mve", options.target)
            or options.kernel_library is not None):
        return []
    return [ConvolveInterleavedRows()]


def verify_channel_products(op) -> None:
    """An int8 Mul of a tensor by one level per channel (`channel_products.gate_operand`)."""
    from glowmlir.backends.arm_dsp.channel_products import verify_channel_products as verify

    verify(op)


def verify_reciprocal_quantize(op) -> None:
    """A quantize of f32 to int8 (`reciprocal_quantize`)."""
    from glowmlir.backends.arm_dsp.reciprocal_quantize import verify_reciprocal_quantize as verify

    verify(op)


def glowll_passes(options: PipelineOptions) -> list:
    """On a core with the DSP extension, `glowll-select-arm-dsp-kernels` (Helium's kernels
    too on a Helium core, but at -Oz: LLVM vectorizes no loop in minimum-size code, so
    Helium's dot products would be scalar, MobileNetV2 4x slower, and its ARM low-overhead-loop
    pass aborted on the column kernel's predicated vectors). A size-first build tells the
    kernels so (`loop_pairs`): they keep their loops, taking the core's `gathered_product.LOOP_PAIRS`
    channel pairs a step. A speed-first build whose code came out over its budget gives the
    layers whose size-first kernels free the excess for fewest cycles those (`code_excess`,
    `frees_code`)."""
    from glowmlir.backends.arm_dsp.banded_windows import SINGLE_ISSUE_CPUS
    from glowmlir.backends.arm_dsp.flash_budget import DEFAULT_CONSTANT_RATIO, GLOW_CONSTANT_RATIO
    from glowmlir.backends.arm_dsp.gathered_product import LOOP_PAIRS
    from glowmlir.backends.arm_dsp.select_kernels import SelectArmDspKernels

    if options.target is None or not has_arm_dsp(options.target):
        return []
    helium = serves("arm_mve", options.target)
    loop_pairs = LOOP_PAIRS["helium" if helium else "dsp"] if options.size_first else 0
    # Constants within a budget (`flash_budget`): the flash given, else a ratio to the int8 weights
    # (Glow's own constants for a model quantized from a profile, on Helium too);
    # none in the autotuner's measuring builds (every layer measured, whatever fits).
    measuring = bool(options.forced_kernel)
    default_ratio = 0.0 if helium else DEFAULT_CONSTANT_RATIO
    ratio = 0.0 if measuring else GLOW_CONSTANT_RATIO if options.profile_quantized else default_ratio
    return [(SelectionOrder.INSTRUCTION_SET, SelectArmDspKernels(helium and not options.minimum_size, loop_pairs,
                                                                 constant_ratio=ratio,
                                                                 flash_size=0 if measuring else options.flash_size,
                                                                 single_issue=options.target.cpu in SINGLE_ISSUE_CPUS,
                                                                 code_excess=options.code_excess
                                                                 if frees_code(options) else -1))]


def frees_code(options: PipelineOptions) -> bool:
    """A speed-first build (not the autotuner's measuring one) for a core with the DSP extension
    and no Helium: its depthwise rows and planes can be looped, its FullyConnected `optsize`
    (`SelectArmDspKernels.size_first_within_budget`)."""
    return (options.target is not None and has_arm_dsp(options.target) and not serves("arm_mve", options.target)
            and not options.size_first and not options.forced_kernel)


def tuning(options: PipelineOptions) -> tuple[str, ...]:
    """The kernels the autotuner measures on a core with the DSP extension (our kernels; none
    with a kernel library, whose calls are chosen before)."""
    from glowmlir.backends.arm_dsp.select_kernels import tuning_kernels

    if options.target is None or not has_arm_dsp(options.target) or options.kernel_library is not None:
        return ()
    return tuning_kernels(serves("arm_mve", options.target) and not options.minimum_size)


PASSES = {"glowll-select-arm-dsp-kernels": ("glowmlir.backends.arm_dsp.select_kernels", "SelectArmDspKernels")}
"""Its passes for `glow-opt -p`: name -> (module, class)."""

BACKEND = Backend("arm_dsp", passes=PASSES, microkernels=(
    Microkernel("arm-dsp", "glowmlir.backends.arm_dsp.emitters", int16=True, parameters=PARAMETERS,
                lookup_tables=True, verify=verify_packed_pairs),
    Microkernel(layout.LEVEL_TABLES, "glowmlir.backends.arm_dsp.level_tables",
                ops=("glowll.elementwise", "glowll.softmax"),
                elementwise_kinds=layout.LEVEL_TABLE_ELEMENTWISE),
    Microkernel(layout.CHANNEL_PRODUCTS, "glowmlir.backends.arm_dsp.channel_products", ops=("glowll.elementwise",),
                elementwise_kinds=("mul",), verify=verify_channel_products),
    Microkernel(layout.RECIPROCAL_QUANTIZE, "glowmlir.backends.arm_dsp.reciprocal_quantize",
                ops=("glowll.elementwise",), elementwise_kinds=("quantize",), verify=verify_reciprocal_quantize),
    Microkernel(shape_parameterised.MATRIX_PRODUCT, "glowmlir.backends.arm_dsp.shape_parameterised",
                ops=("glowll.convolution",), lookup_tables=True, verify=record_check(RECORD_WORDS)),
    Microkernel(shape_parameterised.DEPTHWISE, "glowmlir.backends.arm_dsp.shape_parameterised",
                ops=("glowll.convolution",), lookup_tables=True, verify=record_check(DEPTHWISE_RECORD_WORDS)),
), graph_passes=graph_passes, glowll_passes=glowll_passes, serves=has_arm_dsp, frees_code=frees_code, tuning=tuning,
    gathers_windows=layout.gathers_windows, shape_parameterised="glowmlir.backends.arm_dsp.shape_parameterised")
