"""`glowll-select-vector-columns`: float convolutions onto the vectors of output columns.

On a target with a vector unit (`glow-compile` adds the pass for the host and other x86-64
or AArch64 targets, with the tile of the target's registers: AVX-512 16 lanes x 16
accumulators, AVX/AVX2 8 x 12, SSE 4 x 12, NEON 4 x 16; see `VectorTile.of_features`), every
f32 NCHW `glowll.convolution` of stride 1 or 2 along its rows with a constant filter gets
`microkernel = "vector-columns"` (an unpooled depthwise one without a residual
`"vector-depthwise"`, output rows of a plane in a tile; on AVX and AVX-512 an ungrouped one
of enough products per output `"vector-channels"`, output channels in the lanes) and
`vector_tile = array<i64: lanes, accumulators>` (the vector width, at most the target's, that
takes the fewest vectors per output row); its
filter is re-laid at compile time in blocks of output channels, as the kernel reads it
(`lowering.vector_layout.pack_filter`), and `filter_shape` keeps its OIHW shape. The kernel
(`lowering.vector_columns` with `float_kernels.FloatColumns`) keeps a tile of output columns x
channels in vector registers over all the taps: one load of input columns and one FMA per
channel a tap, instead of loading and storing the output row at every tap. Sums are taken in
the same order as the generic kernel's, one FMA per product.

Where masked loads are single instructions (AVX, AVX-512), an int8 depthwise convolution
(unpooled, no residual, stride 1 or 2 along its rows) gets `microkernel =
"vector-depthwise-int8"`: the float depthwise tile on int32 lanes (`backends.host_vector.int8_depthwise`),
its filter int16 less its zero point; a "same"-padded one of a small plane
`"vector-planes-int8"`, each plane one tile. There too, an int8 ungrouped convolution that
no instruction set's kernel took (AVX-512 VNNI's run first) gets `"vector-pointwise-int8"`
if it is an unpadded 1x1 of stride 1, else, of stride 1 or 2 along its rows,
`"vector-im2col-int8"` if it has few taps (a stem, `int8_im2col.takes_im2col`), else
`"vector-columns-int8"` (`select_int8_pointwise`: two int16 products a `vpmaddwd` lane). There
too, an int8 Add, Sub or Mul (of one shape or broadcast) that no instruction set's kernel took gets
`"vector-elementwise-int8"` (16 levels a step on int32 lanes, `lowering.vector_elementwise`;
a Mul whose output step has a proved float form its `float_step = array<f32: scale, offset,
negative_offset>`, an Add or Sub proved equal to a float form on every pair of levels its
`float_add = array<f32: first_scale, second_scale, threshold, offset, negative_offset>`, and
where the target has AVX2's packs the `shuffles` parameter: 32 levels a step as bytes; a
Mul by a gate a channel its proved int16 form on AVX2, `int16_gate = array<i32: first, last>`
and its table, a weight, as `gate_table`: `gate_products`),
and, wherever the target has byte shuffles (`shuffles`: AVX2, AVX-512BW, NEON), an int8 lookup
table `"vector-lookup-int8"` (`table_lookup`: a vector of levels a step,
`#glowll.microkernel<"vector-lookup-int8", {shuffles = "avx2"}>`).

On AArch64 (`products=neon`: `target.pair_products`) the int8 convolutions take the same
tiles without masked loads (an edge vector's masked loads lane by lane; no
vector-planes-int8): a pair product is `smlal` and `smlal2` into split sums
(`int8_depthwise.split_products`, two registers a sum, so the tiles take half the
accumulators), their microkernel `#glowll.microkernel<"vector-pointwise-int8", {products =
"neon"}>`; a 1x1 of a plane of 8 pixels or more whose levels keep every int16 lane exact
takes int8 products instead, eight an instruction (`{products = "neon-bytes"}`,
`int8_byte_products`, `select_int8_pointwise.takes_byte_products`), and so does a depthwise
layer whose filter less its zero point is int8 (every per-channel one) and whose pads are
narrower than its kernel (`{products = "neon-bytes", int16_taps = g}`, `int8_byte_depthwise`:
its filter int8, tiles of up to 4 rows of vectors of 8 pixels); a row narrower than a
vector (a squeeze-excitation 1x1 on one pixel) keeps the generic kernel there
(`select_int8_pointwise.takes_pair_lanes`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, ModuleOp, StringAttr, f32, i8, i16, i64
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from glowmlir.backends.host_vector.byte_elementwise import BYTE_STEP_SHUFFLES
from glowmlir.backends.host_vector.gate_products import Int16Gate, mul_int16_gate
from glowmlir.backends.host_vector.int8_byte_depthwise import (
    BYTE_LANES,
    INT16_TAPS,
    WIDE_TAPS,
    int16_taps,
    takes_byte_depthwise,
    wide_taps,
)
from glowmlir.backends.host_vector.int8_depthwise import NEON_BYTES, PAIR_PRODUCTS
from glowmlir.backends.host_vector.quantize import proved_division, takes_vector_quantize
from glowmlir.backends.host_vector.select_int8_pointwise import (
    PackInt8Columns,
    PackInt8Pointwise,
    doubled_if_narrow,
    fuse_bias_into_step,
    mark_pair_products,
)
from glowmlir.backends.host_vector.table_lookup import SHUFFLE_BYTES
from glowmlir.dialects import glow, glowll
from glowmlir.dialects.glowll import MicrokernelAttr
from glowmlir.dialects.quant import is_quantized_instruction, stored_as
from glowmlir.dialects.weights import array_from_dense
from glowmlir.errors import GlowError
from glowmlir.lowering import vector_layout as column_layout
from glowmlir.lowering.vector_elementwise import KINDS as ELEMENTWISE_KINDS
from glowmlir.lowering.vector_elementwise import add_float_form, mul_float_gate, mul_float_step
from glowmlir.quantization.rescaling import weight_zero_point
from glowmlir.transforms.int8_kernel_selection import (
    SelectInt8Elementwise,
    centred_type,
    fold_input_offset,
    int8_buffers,
    mark_channel_float_steps,
    mark_float_step,
    mark_narrow_requantization,
)
from glowmlir.transforms.select_kernels import erase_if_unused, insert_weight

LARGEST_STRIDE = 2
"""Along a row: a vector of stride 2 is two loads and one shuffle (the even lanes)."""


@dataclass
class PackFloatConvolution(RewritePattern):
    tile: column_layout.VectorTile

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.ConvolutionOp, rewriter: PatternRewriter) -> None:
        weight = op.filter.owner
        if (op.microkernel is not None or glow.is_nhwc(op)
                or any(v.type.element_type != f32 for v in (op.dest, op.input, op.filter))
                or not isinstance(weight, glowll.WeightOp) or weight.value is None):
            return
        shape = glow.shape_of(op.filter)
        _, _, height, width = glow.convolution_shape(op)  # before a fused pool
        strides, pads, pooled = op.strides.get_values(), op.pads.get_values(), op.pool is not None
        accumulators = self.tile.accumulators
        microkernel, block = column_layout.COLUMNS, None
        depthwise_tile = column_layout.depthwise_tile(shape, op.group.value.data, height, width, self.tile)
        if (depthwise_tile is not None and not pooled and getattr(op, "residual", None) is None
                and column_layout.takes_columns(strides, LARGEST_STRIDE)):
            lanes, rows = depthwise_tile.lanes, depthwise_tile.rows
            self.pack(op, weight, rewriter, column_layout.DEPTHWISE, 1, (lanes, rows * depthwise_tile.vectors, rows))
            return
        row_width = column_layout.row_width(shape, strides, pads, pooled, height, width)
        channel_tile = column_layout.channel_tile(shape, op.group.value.data, row_width, self.tile)
        if channel_tile is None and not column_layout.takes_columns(strides, LARGEST_STRIDE):
            return
        if channel_tile is None and not pooled:
            block = column_layout.planes_block(shape, strides, pads, op.dilations.get_values(), op.group.value.data,
                                               height, width, self.tile)
        if channel_tile is not None:
            microkernel, lanes = column_layout.CHANNELS, channel_tile.lanes
            block, accumulators = channel_tile.block, channel_tile.pixels
        elif block is not None:
            microkernel, lanes = column_layout.PLANES, self.tile.lanes
        else:
            lanes = column_layout.row_lanes(self.tile.lanes, row_width)
            block = column_layout.row_block(shape[0], op.group.value.data, row_width, lanes, self.tile.accumulators)
        self.pack(op, weight, rewriter, microkernel, block, (lanes, accumulators))

    @staticmethod
    def pack(op: glowll.ConvolutionOp, weight: glowll.WeightOp, rewriter: PatternRewriter, microkernel: str,
             block: int, vector_tile: tuple[int, ...], levels: np.ndarray | None = None, element_type=None) -> None:
        """`op` onto `microkernel`, its filter packed in blocks of `block` output channels (the
        weight's values, or `levels` of `element_type`)."""
        shape = glow.shape_of(op.filter)
        packed = column_layout.pack_filter(array_from_dense(weight.value) if levels is None else levels, block)
        op.operands[2] = insert_weight(f"{weight.name_.data}_columns", packed, op, rewriter, element_type)
        op.properties["microkernel"] = MicrokernelAttr(microkernel)
        op.properties["filter_shape"] = glow.ints(shape)
        op.properties["vector_tile"] = glow.ints(vector_tile)
        erase_if_unused(weight, rewriter)


MOST_BYTE_DEPTHWISE_ROWS = 4
"""Output rows a NEON depthwise tile on int8 products takes (`PackInt8Depthwise.pack_bytes`)."""
BYTE_DEPTHWISE_SUMS = 4
"""Vectors of sums a NEON depthwise tile on int8 products keeps (two registers each)."""
MOST_INT8_DEPTHWISE_ROWS = 8
"""Output rows an int8 depthwise tile takes (the float tile's 4, `column_layout.depthwise_tile`,
leave registers for its k_h x k_w weights; the int8 tile's are ceil(k_w / 2) words a kernel
row): each input row's pairs, interleaved and widened once, serve every row of the tile whose
window covers it (a 3x3 on 6x96: 8 widenings a row for 6 rows, not 9 for 4). A tile of fewer
rows takes as many vectors of a row as keep that many accumulators (a 5x5 on 3x96: 3 x 2, on
2x96: 2 x 4, which loads each input row's windows for four vectors at once: the
PP-OCR-cls-style 5x5 of 200 channels on 2x96 11% faster than on 2 x 2), which the output
step packs and stores as one."""


@dataclass
class PackInt8Depthwise(RewritePattern):
    """An int8 depthwise convolution (unpooled, no residual, stride 1 or 2 along its rows)
    onto the vector-depthwise tiles on int32 lanes (up to `MOST_INT8_DEPTHWISE_ROWS` rows),
    where masked loads are single
    instructions, or a "same"-padded one of a small plane onto vector-planes-int8 (each
    plane one tile, `column_layout.int8_plane_vectors`): its filter int16 less its zero
    point (on the tiles doubled where the requantization is narrow, `doubled_if_narrow`);
    on vector-planes-int8, the input zero point folded into its bias where that fits
    (`fold_input_offset`)."""

    tile: column_layout.VectorTile
    products: str = ""
    """As `PackInt8Pointwise.products` (a target without masked loads: the tiles only)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.ConvolutionOp, rewriter: PatternRewriter) -> None:
        weight = op.filter.owner
        if (op.microkernel is not None or not (self.tile.masked_loads or self.products)
                or not is_quantized_instruction(op)
                or glow.is_nhwc(op) or op.pool is not None or op.residual is not None
                or not int8_buffers(op.dest, op.input, op.filter) or not isinstance(weight, glowll.WeightOp)
                or weight.value is None or not column_layout.takes_columns(op.strides.get_values(), LARGEST_STRIDE)):
            return
        _, _, height, width = glow.convolution_shape(op)
        shape, group = glow.shape_of(op.filter), op.group.value.data
        planes = column_layout.int8_plane_vectors(shape, op.strides.get_values(), op.pads.get_values(),
                                                  op.dilations.get_values(), group, height, width, self.tile)
        tile = column_layout.depthwise_tile(shape, group, height, width, self.tile)
        if planes is not None:
            microkernel, vector_tile = column_layout.INT8_PLANES, (self.tile.lanes, planes)
        elif tile is not None:
            rows = min(height, MOST_INT8_DEPTHWISE_ROWS)
            vectors = max(1, tile.rows * tile.vectors // rows, MOST_INT8_DEPTHWISE_ROWS // rows)
            microkernel, vector_tile = column_layout.INT8_DEPTHWISE, (tile.lanes, rows * vectors, rows)
        else:
            return
        filter_type = op.filter.type.element_type
        centred = array_from_dense(weight.value).astype(np.int16) - np.int16(weight_zero_point(filter_type))
        channel_taps = centred.reshape(centred.shape[0], -1)
        mark_narrow_requantization(op, channel_taps)
        mark_float_step(op, channel_taps, self.tile.fused_multiply_add)
        mark_channel_float_steps(op, channel_taps, self.tile.fused_multiply_add, rewriter)
        if (tile is not None and planes is None and self.products
                and takes_byte_depthwise(centred, op.pads.get_values(), shape[2:])):
            self.pack_bytes(op, weight, rewriter, centred, height, filter_type)
            return
        # on the tiles: the bias in the fused step's single; not on NEON, where it cost more
        # than the bias add it saves (5x5 of 200 on 2x96 under a relu: 337,654 -> 412,853
        # instructions, its code 3,988 -> 4,792 B; the 3x3 and the 5x5 of 88 -4% and -5%)
        if planes is None and self.tile.fused_multiply_add and not self.products:
            fuse_bias_into_step(op, channel_taps, rewriter)
        packed = centred if planes is not None else doubled_if_narrow(op, centred)
        PackFloatConvolution.pack(op, weight, rewriter, microkernel, 1, vector_tile, packed, centred_type(filter_type))
        mark_pair_products(op, self.products)
        if planes is not None:  # every tap is loaded, the padding's as the input zero point
            fold_input_offset(op, channel_taps.sum(axis=1, dtype=np.int64), rewriter)

    @staticmethod
    def pack_bytes(op: glowll.ConvolutionOp, weight: glowll.WeightOp, rewriter: PatternRewriter, centred: np.ndarray,
                   height: int, filter_type) -> None:
        """On NEON's int8 products (`int8_byte_depthwise`): the filter int8 less its zero point
        (int16 where some kernel positions leave int8: its `wide_taps`), tiles of
        `BYTE_DEPTHWISE_SUMS` sums of `int8_byte_depthwise.BYTE_LANES` pixels (up to 4 rows),
        the int16 runs of kernel columns its weights allow (`int16_taps`)."""
        rows = min(height, MOST_BYTE_DEPTHWISE_ROWS)
        vector_tile = (BYTE_LANES, rows * max(1, BYTE_DEPTHWISE_SUMS // rows), rows)
        levels = centred.reshape(centred.shape[0], *centred.shape[2:])
        wide = wide_taps(levels)
        storage = i16 if wide else i8
        PackFloatConvolution.pack(op, weight, rewriter, column_layout.INT8_DEPTHWISE, 1, vector_tile,
                                  centred.astype(np.int16 if wide else np.int8),
                                  stored_as(filter_type, storage, centred=True))
        parameters = {PAIR_PRODUCTS: StringAttr(NEON_BYTES), INT16_TAPS: IntegerAttr(int16_taps(levels), i64)}
        if wide:
            parameters[WIDE_TAPS] = DenseArrayBase.from_list(i64, wide)
        op.properties["microkernel"] = MicrokernelAttr(column_layout.INT8_DEPTHWISE, parameters)


@dataclass
class MarkFloatStep(RewritePattern):
    """An int8 Mul on `vector-elementwise-int8` by a gate fixed along x's runs whose int16
    form is proved (`gate_products.mul_int16_gate`; with `int16_gate`, the target's
    `vpmulhrsw`) gets it as its `int16_gate` property and its table as its `gate_table`
    operand (a weight, `gate_table`); else one whose fused multiply-add form is proved
    (`vector_elementwise.mul_float_gate`; with `fused_multiply_add`, the target's) gets it
    as its `float_gate` property, and with `int16_gate` the int16 rows of the gate levels
    that have one beside it (a hybrid, the others' rows marked: `mul_int16_gate(op, partial=True)`);
    any other int8 Mul whose output step has a proved float form (`vector_elementwise.mul_float_step`;
    fused where proved with `fused_multiply_add`, `FloatStep.fused`), as its `float_step`
    property; an int8 Add or Sub whose whole arithmetic has one (`vector_elementwise.add_float_form`;
    fused where proved with `fused_multiply_add`, `FloatAdd.fused`), as its `float_add`
    property, and on byte shuffles with AVX2's packs (`shuffles` one of
    `byte_elementwise.BYTE_STEP_SHUFFLES`) the kernel's `shuffles` parameter (32 levels a step,
    16 on NEON, as bytes, `byte_elementwise.emit_byte_steps`)."""

    fused_multiply_add: bool = False
    shuffles: str = ""
    int16_gate: bool = False
    products: str = ""
    tables: dict = field(default_factory=dict)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.ElementwiseOp, rewriter: PatternRewriter) -> None:
        if (op.float_step is not None or op.float_add is not None or op.float_gate is not None
                or op.int16_gate is not None or op.microkernel is None
                or op.microkernel.data != column_layout.INT8_ELEMENTWISE):
            return
        int16 = mul_int16_gate(op, partial=True) if self.int16_gate and op.kind.data == "mul" else None
        complete = int16 is not None and int16.complete
        gate = mul_float_gate(op) if not complete and self.fused_multiply_add and op.kind.data == "mul" else None
        if int16 is not None and (complete or gate is not None):  # (a hybrid: its marked rows' levels the fma form's)
            gated = glowll.with_operands(op, gate_table=self.gate_table(int16, op, rewriter))
            gated.properties["int16_gate"] = int16.attribute()
            if self.products:  # NEON's sqrdmulh (`gate_products.HIGH_PRODUCTS`), not AVX2's vpmulhrsw
                gated.properties["microkernel"] = MicrokernelAttr(column_layout.INT8_ELEMENTWISE,
                                                                  {"products": StringAttr(self.products)})
            if gate is not None:
                gated.properties["float_gate"] = gate.attribute()
            rewriter.replace(op, gated, [])
            return
        if gate is not None:
            op.properties["float_gate"] = gate.attribute()
            rewriter.notify_op_modified(op)
            return
        kind = op.kind.data
        step = (mul_float_step(op, self.fused_multiply_add) if kind == "mul"
                else add_float_form(op, self.fused_multiply_add) if kind in ("add", "sub") else None)
        if step is not None:
            op.properties[glowll.FLOAT_FORM_PROPERTY[op.kind.data]] = step.attribute()
            if self.shuffles in BYTE_STEP_SHUFFLES:
                op.properties["microkernel"] = MicrokernelAttr(column_layout.INT8_ELEMENTWISE,
                                                               {"shuffles": StringAttr(self.shuffles)})
            rewriter.notify_op_modified(op)

    def gate_table(self, form: Int16Gate, op: glowll.ElementwiseOp, rewriter: PatternRewriter) -> SSAValue:
        """The weight holding `form`'s table: one a table of the module (Muls of the same types
        and gate levels in a block share it), inserted before the first Mul that reads it."""
        key = (op.parent_block(), form.first, form.table.tobytes())
        if key not in self.tables:
            self.tables[key] = insert_weight(f"int16_gate_table_{len(self.tables)}", form.table, op, rewriter, i16)
        return self.tables[key]


@dataclass
class SelectVectorLookup(RewritePattern):
    """An int8 lookup table that no instruction set's kernel took onto `vector-lookup-int8`
    on the byte shuffles `shuffles` (`table_lookup.SHUFFLE_BYTES`)."""

    shuffles: str

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.IntLookupTableOp, rewriter: PatternRewriter) -> None:
        if op.microkernel is None and int8_buffers(op.dest, op.input, op.table):
            op.properties["microkernel"] = MicrokernelAttr(column_layout.INT8_LOOKUP,
                                                           {"shuffles": StringAttr(self.shuffles)})
            rewriter.notify_op_modified(op)


@dataclass
class SelectVectorQuantize(RewritePattern):
    """A quantize of f32 to per-tensor int8 that no kernel took: `microkernel =
    "vector-quantize-int8"` (`backends.host_vector.quantize`); with `reciprocal` (AVX2 with
    FMA3), where `reciprocal_division` proves the scale, its `reciprocal` parameter (half the
    vectors divided by it, `quantize.halved_levels`)."""

    reciprocal: bool = False

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glowll.ElementwiseOp, rewriter: PatternRewriter) -> None:
        if op.microkernel is None and takes_vector_quantize(op):
            division = proved_division(op) if self.reciprocal else None
            parameters = {} if division is None else {"reciprocal": FloatAttr(division.reciprocal, f32)}
            op.properties["microkernel"] = MicrokernelAttr(column_layout.INT8_QUANTIZE, parameters)
            rewriter.notify_op_modified(op)


@dataclass(frozen=True)
class SelectVectorColumns(ModulePass):
    """Marks float convolutions of stride 1 or 2 along their rows for the column-vector kernel
    (`lanes` f32 lanes a vector register, `accumulators` registers a tile keeps), packing
    their filters; with `planes` (a target with run-time masked loads), "same"-padded ones of
    stride 1 for the vector-planes kernel where that computes fewer lanes; with `registers`
    (the target's vector registers), unpooled depthwise ones without a residual for the
    vector-depthwise kernel, and with `planes` too, such int8 ones for vector-depthwise-int8
    (those of small "same"-padded planes for vector-planes-int8), int8 Add, Sub and Mul
    for vector-elementwise-int8; with `shuffles` (`target.byte_shuffles`), int8 lookup
    tables for vector-lookup-int8; a quantize of f32 to int8 for vector-quantize-int8 (with
    `shuffles` of AVX2 and `fused_multiply_add`, its proved `reciprocal`); with
    `fused_multiply_add` (`target.fused_multiply_add`: the target's fused multiply-adds), the
    int8 convolutions' and Muls' float output steps proved in their fused form first
    (`FloatStep.fused`), an int8 Mul by a gate a run on its proved fma form (`float_gate`) and
    int8 1x1s' bias and output offset folded into one fused float step where it is proved
    (`select_int8_pointwise.fuse_bias_into_step`); with `int16_gate` (`target.int16_high_products`:
    AVX2's `vpmulhrsw`), an int8 Mul by a gate a run on its proved int16 form first (`int16_gate`)."""

    name = "glowll-select-vector-columns"
    lanes: int = 8
    accumulators: int = 12
    planes: bool = False
    registers: int = 0
    shuffles: str = ""
    fused_multiply_add: bool = False
    int16_gate: bool = False
    products: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.lanes not in (4, 8, 16) or not 1 <= self.accumulators <= 32:
            raise GlowError(f"glowll-select-vector-columns{{lanes={self.lanes} accumulators={self.accumulators}}}: "
                            "expected lanes 4, 8 or 16 and 1 to 32 accumulators")
        if self.products not in ("", "neon"):
            raise GlowError(f"glowll-select-vector-columns{{products={self.products}}}: expected neon (or none: "
                            "vpmaddwd)")
        tile = column_layout.VectorTile(self.lanes, self.accumulators, self.planes, self.registers,
                                        self.fused_multiply_add)
        PatternRewriteWalker(PackFloatConvolution(tile), apply_recursively=False).rewrite_module(op)
        # NEON's split sums take two registers a sum (`HostInt8Columns.split`): half the accumulators
        int8_tile = dataclasses.replace(tile, accumulators=max(1, tile.accumulators // 2)) if self.products else tile
        PatternRewriteWalker(PackInt8Depthwise(int8_tile, self.products), apply_recursively=False).rewrite_module(op)
        PatternRewriteWalker(PackInt8Pointwise(int8_tile, self.products), apply_recursively=False).rewrite_module(op)
        PatternRewriteWalker(PackInt8Columns(int8_tile, self.products), apply_recursively=False).rewrite_module(op)
        if self.planes or self.products:  # masked loads for the last run (NEON's lane by lane)
            PatternRewriteWalker(SelectInt8Elementwise(column_layout.INT8_ELEMENTWISE, ELEMENTWISE_KINDS),
                                 apply_recursively=False).rewrite_module(op)
            PatternRewriteWalker(MarkFloatStep(self.fused_multiply_add, self.shuffles, self.int16_gate,
                                                       self.products),
                                 apply_recursively=False).rewrite_module(op)
        if self.shuffles:
            if self.shuffles not in SHUFFLE_BYTES:
                raise GlowError(f"glowll-select-vector-columns{{shuffles={self.shuffles}}}: expected one of "
                                f"{', '.join(SHUFFLE_BYTES)}")
            PatternRewriteWalker(SelectVectorLookup(self.shuffles), apply_recursively=False).rewrite_module(op)
        reciprocal = self.fused_multiply_add and self.shuffles in ("avx2", "avx512bw")  # AVX2's packs, FMA3
        PatternRewriteWalker(SelectVectorQuantize(reciprocal), apply_recursively=False).rewrite_module(op)
