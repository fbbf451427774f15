"""The microkernels of a host's vector unit: float convolutions on register tiles of vectors
of output columns ("vector-columns"), of whole planes ("vector-planes"), of output channels
("vector-channels") and of a depthwise convolution's rows ("vector-depthwise"), all emitted
by `float_kernels`; int8 depthwise ones on int32 lanes ("vector-depthwise-int8",
"vector-planes-int8", `int8_depthwise`); int8 ungrouped ones, two int16 products a lane
("vector-pointwise-int8" for 1x1s, `int8_pointwise`; "vector-im2col-int8" for few taps, a stem,
`int8_im2col`; "vector-columns-int8", `int8_columns`; on NEON with the parameter
`products = "neon"`, `int8_depthwise.split_products`, or for 1x1s `products = "neon-bytes"`,
eight int8 products an instruction, `int8_byte_products`);
int8 Add, Sub and Mul on int32 lanes ("vector-elementwise-int8", `lowering.vector_elementwise`);
int8 lookup tables on byte shuffles ("vector-lookup-int8", `table_lookup`); float to int8
quantizes 32 levels a step ("vector-quantize-int8", `quantize`).
`glowll-select-vector-columns` picks them. On NEON (`products = "neon"` or `"neon-bytes"`) the
int8 convolution kernels apply a fused lookup table (`Microkernel.lookup_tables`,
`table_lookup.neon_applies_tables`): it is looked up 16 levels at a time by `tbl`/`tbx` in
the output step (`table_lookup.NeonTable`, its quarters loaded where a lookup uses them), as
the stand-alone lookup does, without its pass over memory. On x86 they apply none: their
output step would look each vector of 8 or 16 levels up one lane at a time (or by 16-byte
shuffles, the 16 sub-tables spilled from AVX2's 16 registers), slower than a table kept apart
on `vector-lookup-int8`, 32 or 64 levels a step (the PP-OCR-cls-style net: int8 / float 1.62
fused by shuffles, 0.80 apart). A HardSwish table computed by its proved int16 form
(`table_arithmetic`) in the output step was slower too: its constants take AVX2 registers the
tiles' accumulators need (PaddleOCR's cls model in AVX2 code: 307 µs a run against 293 with
the tables apart, flash 415,725 against 409,317 B, RAM 199,744 against 205,888 B;
docs/quantization.md, stop 68)."""

from __future__ import annotations

import math

from xdsl.dialects.builtin import DenseArrayBase, f32, i8, i16, i32
from xdsl.utils.exceptions import VerifyException

from glowmlir.backends import Backend, Microkernel, PipelineOptions, SelectionOrder
from glowmlir.backends.host_vector.int8_byte_depthwise import INT16_TAPS, WIDE_TAPS
from glowmlir.backends.host_vector.int8_depthwise import NEON_BYTES, PAIR_PRODUCTS, products_of
from glowmlir.backends.host_vector.quantize import takes_quantized_levels, verify_reciprocal, verify_vector_quantize
from glowmlir.backends.host_vector.table_lookup import neon_applies_tables
from glowmlir.backends.host_vector.target import (
    X86_FEATURE_BASES,
    byte_shuffles,
    cache_bytes,
    int16_high_products,
    pair_products,
    vector_tile,
)
from glowmlir.dialects import glow, glowll
from glowmlir.dialects.quant import storage_type
from glowmlir.lowering import vector_layout as layout
from glowmlir.lowering.vector_elementwise import KINDS as ELEMENTWISE_KINDS
from glowmlir.lowering.vector_layout import verify_column_filter


def runs_on_planes(conv, tile) -> bool:
    """A float convolution that alone would run on whole planes, computing fewer lanes than its
    rows (`layout.prefers_planes`): fused with a pool, it would be computed row by row."""
    if glow.is_nhwc(conv) or any(glow.element_of(v) != f32 for v in (conv.input, conv.result)):
        return False
    height, width = glow.shape_of(conv.result)[2:]
    return layout.prefers_planes(glow.shape_of(conv.filter), conv.strides.get_values(), conv.pads.get_values(),
                                 conv.dilations.get_values(), conv.group.value.data, height, width, tile)


def verify_pair_words(op) -> None:
    """A 1x1 convolution's filter as int32 words of two input channels' weights
    (`int8_pointwise.pair_words`)."""
    from glowmlir.backends.host_vector.int8_pointwise import pair_words_shape

    if not isinstance(op, glowll.ConvolutionOp):
        return
    if op.filter_shape is None or op.vector_tile is None:
        raise VerifyException(f"{op.name}: vector-pointwise-int8 needs its filter_shape and vector_tile")
    block = glow.shape_of(op.filter)[-1]
    filter_shape = op.filter_shape.get_values()
    if (op.group.value.data != 1 or filter_shape[2:] != (1, 1) or filter_shape[0] % block
            or storage_type(op.filter.type.element_type) != i32
            or glow.shape_of(op.filter) != pair_words_shape(filter_shape, block)):
        raise VerifyException(f"{op.name}: vector-pointwise-int8 takes an ungrouped 1x1 convolution, its filter "
                              f"int32 words {list(pair_words_shape(filter_shape, block))}")


def verify_tap_pair_words(op) -> None:
    """An ungrouped convolution's filter as int32 words of two kernel columns' weights in
    blocks of output channels (`int8_columns.tap_pair_words`)."""
    from glowmlir.backends.host_vector.int8_columns import tap_pair_words_shape

    if not isinstance(op, glowll.ConvolutionOp):
        return
    if op.filter_shape is None:
        raise VerifyException(f"{op.name}: vector-columns-int8 needs its filter_shape")
    block = glow.shape_of(op.filter)[-1]
    filter_shape = op.filter_shape.get_values()
    expected = tap_pair_words_shape(filter_shape, block)
    if (op.group.value.data != 1 or filter_shape[0] % block or storage_type(op.filter.type.element_type) != i32
            or glow.shape_of(op.filter) != expected):
        raise VerifyException(f"{op.name}: vector-columns-int8 takes an ungrouped convolution, its filter "
                              f"int32 words {list(expected)}")


def verify_im2col_words(op) -> None:
    """A convolution of few taps' filter as int32 words of two taps' weights in
    `int8_im2col.im2col_taps`' order (`int8_pointwise.pair_words` of [O, taps])."""
    from glowmlir.backends.host_vector.int8_im2col import takes_im2col
    from glowmlir.backends.host_vector.int8_pointwise import pair_words_shape

    if not isinstance(op, glowll.ConvolutionOp):
        return
    if op.filter_shape is None or op.vector_tile is None:
        raise VerifyException(f"{op.name}: vector-im2col-int8 needs its filter_shape and vector_tile")
    block = glow.shape_of(op.filter)[-1]
    out_c, *taps = op.filter_shape.get_values()
    expected = pair_words_shape((out_c, math.prod(taps)), block)
    if (not takes_im2col(op.filter_shape.get_values(), op.group.value.data) or out_c % block
            or storage_type(op.filter.type.element_type) != i32 or glow.shape_of(op.filter) != expected):
        raise VerifyException(f"{op.name}: vector-im2col-int8 takes an ungrouped convolution of few taps, its "
                              f"filter int32 words {list(expected)}")
    levels = op.microkernel.parameter(glowll.QUANTIZED_INPUT)
    if levels is None:
        if op.microkernel.parameter("reciprocal") is not None:
            raise VerifyException(f"{op.name}: vector-im2col-int8 takes a reciprocal only with its quantized_input")
        return
    if (op.input.type.element_type != f32 or not takes_quantized_levels(levels)
            or op.dilations.get_values()[0] != 1 or op.in_place is not None):
        raise VerifyException(f"{op.name}: vector-im2col-int8's quantized_input (a quantize folded in) is the "
                              "per-tensor int8 type of finite clamp bound its f32 input is quantized to, its rows "
                              "undilated, not in place")
    verify_reciprocal(op, levels)


def _float(name: str) -> Microkernel:
    return Microkernel(name, "glowmlir.backends.host_vector.float_kernels", ops=("glowll.convolution",), numbers="f32",
                       tiled=True, verify=verify_column_filter)


def verify_depthwise_filter(op) -> None:
    """`verify_column_filter`; on NEON's int8 products (`int8_byte_depthwise`) the filter
    [C, 1, KH, KW, 1] less its zero point, int8, or int16 with `wide_taps` (kernel positions in
    [0, KH KW)), its `int16_taps` a count of kernel columns."""
    if not isinstance(op, glowll.ConvolutionOp) or products_of(op) != NEON_BYTES:
        verify_column_filter(op)
        return
    taps, wide = op.microkernel.parameter(INT16_TAPS), op.microkernel.parameter(WIDE_TAPS)
    filter_shape = op.filter_shape.get_values() if op.filter_shape is not None else ()
    positions = wide.get_values() if isinstance(wide, DenseArrayBase) else ()
    if (len(filter_shape) != 4 or op.group.value.data != filter_shape[0] or filter_shape[1] != 1
            or storage_type(op.filter.type.element_type) != (i8 if wide is None else i16)
            or glow.shape_of(op.filter) != (filter_shape[0], 1, *filter_shape[2:], 1)
            or taps is None or not 1 <= taps.value.data <= filter_shape[3]
            or (wide is not None and not (positions and all(0 <= tap < filter_shape[2] * filter_shape[3]
                                                              for tap in positions)))):
        raise VerifyException(f"{op.name}: a depthwise layer on NEON's int8 products takes its filter int8 "
                              "[C, 1, KH, KW, 1] (int16 with wide_taps, kernel positions below KH x KW) "
                              "and an int16_taps of 1 to KW kernel columns")


def _int8(name: str) -> Microkernel:
    return Microkernel(name, "glowmlir.backends.host_vector.int8_byte_depthwise", ops=("glowll.convolution",),
                       tiled=True, parameters=(PAIR_PRODUCTS, INT16_TAPS, WIDE_TAPS),
                       plane_free_parameters=(PAIR_PRODUCTS, INT16_TAPS, WIDE_TAPS), verify=verify_depthwise_filter,
                       lookup_tables=neon_applies_tables)


def glowll_passes(options: PipelineOptions) -> list:
    """On a target with a vector unit, `glowll-select-vector-columns` on its tile, then
    `glowll-fold-input-quantize` (the kernels chosen)."""
    from glowmlir.backends.host_vector.fold_input_quantize import FoldInputQuantize
    from glowmlir.backends.host_vector.select_kernels import SelectVectorColumns

    tile = options.target.vector_tile if options.target is not None else None
    if tile is None:
        return []
    target = options.target
    shuffles = byte_shuffles(target.resolved_triple, target.feature_list)
    return [(SelectionOrder.VECTOR_UNIT, SelectVectorColumns(tile.lanes, tile.accumulators, tile.masked_loads,
                                                             tile.registers, shuffles, tile.fused_multiply_add,
                                                             int16_high_products(target.resolved_triple,
                                                                                 target.feature_list),
                                                             pair_products(target.resolved_triple))),
            (SelectionOrder.VECTOR_UNIT, FoldInputQuantize())]


PASSES = {"glowll-select-vector-columns": ("glowmlir.backends.host_vector.select_kernels", "SelectVectorColumns"),
          "glowll-fold-input-quantize": ("glowmlir.backends.host_vector.fold_input_quantize", "FoldInputQuantize")}
"""Its passes for `glow-opt -p`: name -> (module, class)."""

BACKEND = Backend("host_vector", passes=PASSES, microkernels=(
    _int8(layout.INT8_DEPTHWISE), _int8(layout.INT8_PLANES),
    Microkernel(layout.INT8_COLUMNS, "glowmlir.backends.host_vector.int8_columns", ops=("glowll.convolution",),
                tiled=True, parameters=(PAIR_PRODUCTS,), plane_free_parameters=(PAIR_PRODUCTS,),
                verify=verify_tap_pair_words, lookup_tables=neon_applies_tables),
    Microkernel(layout.INT8_POINTWISE, "glowmlir.backends.host_vector.int8_pointwise", ops=("glowll.convolution",),
                tiled=True, parameters=(PAIR_PRODUCTS,), plane_free_parameters=(PAIR_PRODUCTS,),
                verify=verify_pair_words, lookup_tables=neon_applies_tables),
    Microkernel(layout.INT8_IM2COL, "glowmlir.backends.host_vector.int8_im2col", ops=("glowll.convolution",),
                tiled=True, parameters=(glowll.QUANTIZED_INPUT, "reciprocal", PAIR_PRODUCTS),
                plane_free_parameters=(PAIR_PRODUCTS,), verify=verify_im2col_words,
                lookup_tables=neon_applies_tables),
    Microkernel(layout.INT8_ELEMENTWISE, "glowmlir.backends.host_vector.byte_elementwise", ops=("glowll.elementwise",),
                elementwise_kinds=ELEMENTWISE_KINDS, parameters=("shuffles", "products")),
    Microkernel(layout.INT8_LOOKUP, "glowmlir.backends.host_vector.table_lookup", ops=("glowll.int_lookup_table",),
                parameters=("shuffles",)),
    Microkernel(layout.INT8_QUANTIZE, "glowmlir.backends.host_vector.quantize", ops=("glowll.elementwise",),
                elementwise_kinds=("quantize",), parameters=("reciprocal",), verify=verify_vector_quantize),
    _float(layout.COLUMNS), _float(layout.PLANES), _float(layout.CHANNELS), _float(layout.DEPTHWISE),
), prefers_unfused=runs_on_planes, glowll_passes=glowll_passes, vector_tile=vector_tile, cache_bytes=cache_bytes,
    feature_bases=X86_FEATURE_BASES)
