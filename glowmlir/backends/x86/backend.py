"""The AVX-512 microkernels: "x86-vnni" (int8 convolutions and FullyConnected on `vpdpbusd`,
`vnni_kernels`), "x86-vnni-depthwise" (depthwise convolutions, with VBMI,
`vnni_depthwise`), "x86-vnni-shape-parameterised" (the size-first matrix product on VNNI,
`vnni_shape_parameterised`, its selection `shape_parameterised`), "x86-avx512" (int8 adds,
subs, muls) and "x86-vbmi" (int8 lookup tables on `vpermi2b`); `glowll-select-x86-vnni-kernels`
picks them."""

from __future__ import annotations

from xdsl.dialects.builtin import i8
from xdsl.utils.exceptions import VerifyException

from glowmlir.backends import Backend, Microkernel, PipelineOptions, SelectionOrder
from glowmlir.backends.x86 import layout
from glowmlir.backends.x86.target import has_avx512_vnni
from glowmlir.dialects import glow, glowll
from glowmlir.dialects.quant import storage_type
from glowmlir.lowering.shape_records import RECORD_WORDS, record_check


def verify_vnni_filter(op) -> None:
    """An ungrouped convolution's filter (FullyConnected's weights) packed in [O / 16, C / 4,
    KH, KW, 16, 4] int8 blocks (`layout.pack_filter`)."""
    convolution = isinstance(op, glowll.ConvolutionOp)
    if convolution and (op.filter_shape is None or op.group.value.data != 1):
        raise VerifyException(f"{op.name}: the {op.microkernel.data} microkernel takes an ungrouped convolution "
                              "with its filter_shape")
    filter_shape = (op.filter_shape.get_values() if convolution
                    else (glow.shape_of(op.dest)[1], glow.shape_of(op.input)[1], 1, 1))
    expected = layout.packed_filter_shape(filter_shape, op.dilations.get_values() if convolution else (1, 1))
    if storage_type(op.operands[2].type.element_type) != i8 or glow.shape_of(op.operands[2]) != expected:
        raise VerifyException(f"{op.name}: the packed filter must be int8 blocks {list(expected)}")


def verify_depthwise_filter(op) -> None:
    """A depthwise convolution whose int8 filter [C, 1, KH, KW] and plane the kernel takes
    (`layout.DepthwiseGeometry.takes`)."""
    if not isinstance(op, glowll.ConvolutionOp):
        return
    channels = glow.shape_of(op.input)[1]
    shape = glow.shape_of(op.filter)
    if (op.group.value.data != channels or storage_type(op.filter.type.element_type) != i8 or len(shape) != 4
            or shape[:2] != (channels, 1) or not (geometry := layout.DepthwiseGeometry.of(op)).takes()):
        raise VerifyException(f"{op.name}: the x86-vnni-depthwise microkernel takes a depthwise convolution of an "
                              "int8 filter [C, 1, KH, KW] whose taps and plane it holds")
    classes = len(geometry.start_classes())
    if glowll.bias_rows(op) not in ((None, 0) if classes == 0 else (classes,)):
        raise VerifyException(f"{op.name}: x86-vnni-depthwise's {glowll.BIAS_ROWS} must be its plane's classes of "
                              f"output rows with kernel rows in the padding ({classes})")


def verify_shape_parameterised(op) -> None:
    record_check(RECORD_WORDS)(op)
    verify_vnni_filter(op)


def glowll_passes(options: PipelineOptions) -> list:
    """On an AVX-512 VNNI target, `glowll-select-x86-vnni-kernels` (with VBMI: lookup tables and
    depthwise convolutions of small planes too); a model quantized from a profile keeps Glow's
    constants (`PipelineOptions.profile_quantized`), a -flash-size its budget."""
    from glowmlir.backends.x86.select_kernels import SelectVnniKernels
    from glowmlir.backends.x86.target import has_avx512_vbmi, has_fma
    from glowmlir.transforms.flash_budget import GLOW_CONSTANT_RATIO

    if options.target is None or not has_avx512_vnni(options.target):
        return []
    vbmi = has_avx512_vbmi(options.target)
    ratio = GLOW_CONSTANT_RATIO if options.profile_quantized else 0.0
    selection = SelectVnniKernels(lookup_tables=vbmi, depthwise=vbmi, float_forms=True,
                                  fused_multiply_add=has_fma(options.target), constant_ratio=ratio,
                                  flash_size=options.flash_size,
                                  shallow_channels=layout.shallow_pointwise_channels(options.target.resolved_cpu))
    return [(SelectionOrder.INSTRUCTION_SET, selection)]


PASSES = {"glowll-select-x86-vnni-kernels": ("glowmlir.backends.x86.select_kernels", "SelectVnniKernels")}
"""Its passes for `glow-opt -p`: name -> (module, class)."""

BACKEND = Backend("x86", passes=PASSES, microkernels=(
    Microkernel(layout.MICROKERNEL, "glowmlir.backends.x86.vnni_kernels", parameters=(layout.BYTE_PERMUTES,),
                plane_free_parameters=(layout.BYTE_PERMUTES,), packed_weights=True, lookup_tables=True,
                verify=verify_vnni_filter),
    Microkernel(layout.DEPTHWISE_MICROKERNEL, "glowmlir.backends.x86.vnni_depthwise", ops=("glowll.convolution",),
                parameters=(layout.REST_LEVELS, glowll.BIAS_ROWS), plane_free_parameters=(layout.REST_LEVELS,),
                lookup_tables=True,
                verify=verify_depthwise_filter),
    Microkernel(layout.SHAPE_PARAMETERISED_MICROKERNEL, "glowmlir.backends.x86.vnni_shape_parameterised",
                packed_weights=True, loaded_numbers=layout.SHAPE_PARAMETERISED_LOADED_NUMBERS, lookup_tables=True,
                verify=verify_shape_parameterised),
    Microkernel(layout.ELEMENTWISE_MICROKERNEL, "glowmlir.lowering.vector_elementwise", ops=("glowll.elementwise",),
                elementwise_kinds=layout.ELEMENTWISE_KINDS),
    Microkernel(layout.LOOKUP_TABLE_MICROKERNEL, "glowmlir.backends.x86.vnni_kernels",
                ops=("glowll.int_lookup_table",)),
), glowll_passes=glowll_passes, serves=has_avx512_vnni,
    shape_parameterised="glowmlir.backends.x86.shape_parameterised")
