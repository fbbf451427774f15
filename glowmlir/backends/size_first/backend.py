"""The size-first microkernels: int8 matrix products and depthwise convolutions whose shapes
are data (`kernels`), read from a layer's parameters record (`record`);
`glowll-shape-parameterised-kernels` picks them, or a backend's forms of them
(`Backend.shape_parameterised`: the Arm DSP extension's, AVX-512 VNNI's)."""

from __future__ import annotations

from glowmlir.backends import Backend, Microkernel, PipelineOptions, SelectionOrder, serves
from glowmlir.backends.size_first import record
from glowmlir.lowering.shape_records import DEPTHWISE_RECORD_WORDS, RECORD_WORDS, record_check


def _kernel(name: str, words: int) -> Microkernel:
    return Microkernel(name, "glowmlir.backends.size_first.kernels", lookup_tables=True, verify=record_check(words))


def glowll_passes(options: PipelineOptions) -> list:
    """In a size-first build (-Os/-Oz) the int8 layers' quantization numbers become data, so
    that equal-shaped layers share a kernel (on a VNNI host at -O3 too, for the layers that
    have an equal-shaped partner). At -Oz, and at -Os on a core without the DSP extension or
    VNNI (whose kernels the shape-parameterised one would slow most), int8 pointwise
    convolutions and FullyConnected of many shapes share one kernel that reads its shapes
    from the record, and depthwise convolutions one per kernel size
    (`glowll-shape-parameterised-kernels`, docs/code-size.md); on a VNNI host at -O3 and -Os,
    the matrix product's VNNI form, unless a constants budget weighs each layer's VNNI filter
    (a model quantized from a profile, or -flash-size: `glowll-select-x86-vnni-kernels`)."""
    from glowmlir.backends.size_first.quantization_records import QuantizationRecords
    from glowmlir.backends.size_first.select_kernels import ShapeParameterisedKernels

    if options.target is None:
        return []
    dsp, vnni = serves("arm_dsp", options.target), serves("x86", options.target)
    passes = []
    if options.size_first and (options.minimum_size or not (dsp or vnni)):
        passes.append((SelectionOrder.SHARED_SHAPES, ShapeParameterisedKernels(dsp=dsp)))
    elif vnni and not (options.profile_quantized or options.flash_size):
        passes.append((SelectionOrder.SHARED_SHAPES, ShapeParameterisedKernels(vnni=True)))
    if options.size_first or vnni:  # on a VNNI host at -O3 only layers that may share a kernel
        passes.append((SelectionOrder.RECORDS, QuantizationRecords(partnered=not options.size_first)))
    return passes


PASSES = {"glowll-quantization-records": ("glowmlir.backends.size_first.quantization_records", "QuantizationRecords"),
          "glowll-shape-parameterised-kernels":
              ("glowmlir.backends.size_first.select_kernels", "ShapeParameterisedKernels")}
"""Its passes for `glow-opt -p`: name -> (module, class)."""

BACKEND = Backend("size_first", passes=PASSES, microkernels=(
    _kernel(record.MICROKERNEL, RECORD_WORDS), _kernel(record.DEPTHWISE_MICROKERNEL, DEPTHWISE_RECORD_WORDS),
), glowll_passes=glowll_passes)
