"""How each `glow` op takes its quantized form, op by op (`FunctionQuantizer`, Glow's
FunctionQuantizer): what `glow-quantize` (types from a profile) and `glow-quantize-from-model`
(types from the model's own quantize ops) share. See `quantize` for the parameters."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import FloatAttr, StringAttr, TensorType, f32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from glowmlir.dialects import glow
from glowmlir.dialects.quant import STORAGE_TYPES, UniformQuantizedType, finer_levels, is_quantized
from glowmlir.dialects.weights import array_from_dense, dense_from_array
from glowmlir.errors import GlowError, GlowWarning
from glowmlir.quantization.glow_names import PROFILE_NAME
from glowmlir.quantization.lookup_tables import (
    TABLE_FUNCTION,
    interpolated_table,
    table_function_attribute,
    varying_span,
)
from glowmlir.quantization.params import (
    QuantParams,
    choose_params,
    dequantize_as,
    percentile_range,
    quantize,
    quantize_per_channel,
)
from glowmlir.quantization.profile import NodeProfile, Profile
from glowmlir.quantization.rescaling import (
    FINER_LEVEL_BITS,
    RESAMPLE_FRACTION_BITS,
    SOFTMAX_OUTPUTS,
    bias_scales,
    centred_rows,
    quantize_level,
    wide_bias_limits,
)
from glowmlir.transforms.constants import typed_constant
from glowmlir.transforms.profile_keys import profile_entry
from glowmlir.transforms.quantization_options import QuantizationOptions

KEPT_FLOAT = "kept_float"
"""On a compute op quantization left in float: why (`NO_INTEGER_KERNEL`, `KEPT_BY_OPTION`);
`-dump-graph` shows it and `glow-compile` counts these ops in its summary."""


NO_INTEGER_KERNEL = "no int8 kernel"


NO_INT16_KERNEL = "no int16 kernel"


WEIGHT_PRECISION = "Int8"
"""Weights are int8 with Int8 activations and with Int16 ones (TFLite's 16x8 scheme; Glow
would quantize them to int16 too)."""


KEPT_BY_OPTION = "-keep-original-precision-for-nodes"


def with_element_type(value_type: TensorType, element_type: Attribute) -> TensorType:
    return TensorType(element_type, value_type.get_shape())


class FunctionQuantizer:
    """Converts one `glow.function`, op by op in order (producers before users)."""

    def __init__(self, function: glow.FunctionOp, profile: Profile, config: QuantizationOptions):
        self.function, self.profile, self.config = function, profile, config
        self.quantized: dict[tuple[SSAValue, Attribute], SSAValue] = {}
        self.dequantized: dict[SSAValue, SSAValue] = {}
        self.skipped: list[str] = []
        self.requantized: set[SSAValue] = set()  # the results this pass gave quantized types
        self._profiled: dict[SSAValue, UniformQuantizedType | None] = {}

    follows_dequantized = False
    """Whether data movement after a `glow.dequantize` takes the quantized data instead."""

    # ----------------------------------------------------------------- parameters

    def element(self, params: QuantParams, precision: str | None = None) -> UniformQuantizedType:
        return UniformQuantizedType(STORAGE_TYPES[precision or self.config.precision], params.scale, params.offset)

    @property
    def activation_schema(self) -> str:
        """The schema of activations: the configured one; symmetric for Int16 (16x8: offset 0)."""
        if self.config.precision == "Int16" and self.config.schema in ("asymmetric", "symmetric_with_uint8"):
            return "symmetric"
        return self.config.schema

    def profiled(self, value: SSAValue) -> UniformQuantizedType | None:
        """The quantized type of a float value from its profile entry (None: not profiled),
        chosen once: at the first ask, from the users the value has in the float graph (a
        user converted before another inserts a `glow.quantize` of the value, which would
        take KL's eligibility away from the rest and quantize the value twice)."""
        if value not in self._profiled:
            entry = profile_entry(value, self.profile)
            if entry is None:
                self._profiled[value] = None
            else:
                calibration = self.config.calibration
                if calibration == "KL" and not _feeds_only_weighted_ops(value):
                    calibration = "None"
                span = _varying_span(value, entry.min, entry.max)
                if span == (entry.min, entry.max):
                    params = choose_params(entry.min, entry.max, self.activation_schema, self.config.precision,
                                           entry.histogram, calibration, self.config.percentile)
                else:  # the span of the profiled range lookup tables tell apart (within Percentile's, if asked)
                    if calibration == "Percentile":
                        kept = percentile_range(entry.histogram, entry.min, entry.max, self.config.percentile)
                        span = max(span[0], kept[0]), min(span[1], kept[1])
                    params = choose_params(*span, self.activation_schema, self.config.precision)
                self._profiled[value] = self.element(params)
        return self._profiled[value]

    def input_type(self, value: SSAValue) -> UniformQuantizedType | None:
        """The quantized type an operand has (already quantized) or would get: a constant's
        from its own range (data, not weights: of the activations' precision), any other
        value's from its profile."""
        if is_quantized(value.type):
            return value.type.element_type
        if isinstance(value.owner, glow.DequantizeOp):  # e.g. an int8q model input
            return value.owner.input.type.element_type
        if isinstance(value.owner, glow.ConstantOp) and value.owner.value is not None:
            return self.constant_type(value.owner, None, self.config.precision)
        return self.profiled(value)

    def constant_type(self, constant: glow.ConstantOp, channel_axis: int | None,
                      precision: str = WEIGHT_PRECISION) -> UniformQuantizedType:
        """A float constant's quantized type: the one a quantized model's file gives it
        (`glow.MODEL_QUANTIZATION`, if it fits the constant's shape and `precision`), else
        from its own range."""
        given = constant.attributes.get(glow.MODEL_QUANTIZATION)
        shape = glow.shape_of(constant.result)
        if isinstance(given, UniformQuantizedType) and _precision(given) == precision and (
                not given.per_channel or (given.axis.data < len(shape)
                                          and len(given.scale_array()) == shape[given.axis.data])):
            return given
        return _weight_type(self, array_from_dense(constant.value), channel_axis, precision)

    # ----------------------------------------------------------------- rewriting

    def insert(self, op: Operation, before: Operation) -> SSAValue:
        Rewriter.insert_op(op, InsertPoint.before(before))
        return op.results[0]

    def as_type(self, value: SSAValue, element: UniformQuantizedType, user: Operation) -> SSAValue:
        """`value` with the quantized element type `element`, converting where needed."""
        if value.type.element_type == element:
            return value
        cache = (value, element)
        if cache not in self.quantized:
            new_type = with_element_type(value.type, element)
            source = value.owner
            if isinstance(source, glow.ConstantOp) and not is_quantized(value.type) and source.value is not None:
                self.quantized[cache] = _quantized_constant(value, element, user)
            else:
                conversion = glow.RescaleQuantizedOp if is_quantized(value.type) else glow.QuantizeOp
                self.quantized[cache] = self.insert(conversion(value, new_type), user)
        return self.quantized[cache]

    def as_float(self, value: SSAValue, user: Operation) -> SSAValue:
        if not is_quantized(value.type):
            return value
        if value not in self.dequantized:
            self.dequantized[value] = self.insert(glow.DequantizeOp(value), user)
        return self.dequantized[value]

    # ----------------------------------------------------------------- the walk

    def run(self) -> None:
        for op in list(self.function.body.block.ops):
            if isinstance(op, glow.PlaceholderOp | glow.ConstantOp | glow.SplatOp | glow.ConversionOp):
                continue
            convert = self.converter(op)
            if convert is None or not convert(self, op):
                if self.stays_float(op):
                    name = op.attributes.get(glow.NODE_NAME)
                    self.skipped.append(name.data if name else op.name)
                    op.attributes[KEPT_FLOAT] = StringAttr(
                        NO_INTEGER_KERNEL if self.config.precision == "Int8" else NO_INT16_KERNEL)
                elif self.kept_by_option(op):
                    op.attributes[KEPT_FLOAT] = StringAttr(KEPT_BY_OPTION)
                self.keep_float(op)
        for op in list(self.function.body.block.ops):  # the float weights that were quantized
            if isinstance(op, glow.ConstantOp) and not op.result.uses:
                Rewriter.erase_op(op)
        if self.config.assert_all_nodes_quantized and self.skipped:
            raise GlowError(f"-assert-all-nodes-quantized: node \"{self.skipped[0]}\" was not quantized")

    def stays_float(self, op: Operation) -> bool:
        """Whether an op left unquantized is a float computation `-assert-all-nodes-quantized`
        refuses: any compute op with a float result, except the kinds kept float by
        `-keep-original-precision-for-nodes` and data movement (which follows its input)."""
        return (_computes_float(op) and glow.node_kind(op) not in self.config.keep_original_precision_for_nodes
                and type(op) not in glow.input_quantization_ops())

    def kept_by_option(self, op: Operation) -> bool:
        """A float compute op of a kind `-keep-original-precision-for-nodes` names."""
        return _computes_float(op) and glow.node_kind(op) in self.config.keep_original_precision_for_nodes

    def keep_float(self, op: Operation) -> None:
        """An op left unquantized computes on float operands (dequantized where needed)."""
        for index, operand in enumerate(op.operands):
            op.operands[index] = self.as_float(operand, op)

    def set_result(self, op: Operation, element: Attribute) -> None:
        self.requantized.add(Rewriter.replace_value_with_new_type(
            op.results[0], with_element_type(op.results[0].type, element)))

    def converter(self, op: Operation) -> Callable[[Operation], bool] | None:
        kind = glow.node_kind(op) if type(op) in glow.glow_kinds() else None
        keep, facts = self.config.keep_original_precision_for_nodes, getattr(op, "FACTS", None)
        if kind is None and facts is not None and facts.glow_kind not in keep:
            if type(op) in lookup_table_ops():
                return _convert_to_lookup_table
            return _REWRITTEN_CONVERTERS.get(type(op))
        if kind is None or kind in self.config.keep_original_precision_for_nodes:
            return None
        if any(not is_quantized(v.type) and v.type.element_type != f32 for v in _data_operands(op)):
            return None
        if type(op) in _CONVERTERS:
            return _CONVERTERS[type(op)]
        if type(op) in glow.input_quantization_ops():  # from the op's facts
            return _convert_follow_input
        return _convert_generic


def _data_operands(op: Operation) -> list[SSAValue]:
    """The operands holding an op's data: all of them but a resample's taps (integer indices)."""
    return [v for v in op.operands if not (isinstance(op, glow.ResampleOp) and v is op.taps)]


def _computes_float(op: Operation) -> bool:
    """An op with facts (a compute or data-movement op) and a float result."""
    return (isinstance(getattr(op, "FACTS", None), glow.OpFacts) and bool(op.results)
            and op.results[0].type.element_type == f32)


def _precision(element: UniformQuantizedType) -> str:
    return {8: "Int8", 16: "Int16", 32: "Int32", 64: "Int64"}[element.bitwidth]


def _convert_follow_input(q: FunctionQuantizer, op: Operation) -> bool:
    """Data movement keeps its input's type; only worth it when the input is quantized (in a
    quantized model: or dequantized from quantized data)."""
    if not is_quantized(op.operands[0].type):
        if not (q.follows_dequantized and isinstance(op.operands[0].owner, glow.DequantizeOp)):
            return False
        op.operands[0] = op.operands[0].owner.input
    element = op.operands[0].type.element_type
    if isinstance(op, glow.PadOp):
        level = quantize_level(op.value.value.data, element)
        op.properties["value"] = FloatAttr(float(level), f32)  # the pad value, in the quantized domain
    q.set_result(op, element)
    return True


def _convert_generic(q: FunctionQuantizer, op: Operation) -> bool:
    """Relu, Clip, Add, Mul: each input keeps (or gets) its own parameters; the result has its profile's."""
    result = q.profiled(op.results[0])
    inputs = [q.input_type(v) for v in op.operands]
    if result is None or None in inputs:
        return False
    for index, (value, element) in enumerate(zip(list(op.operands), inputs)):
        op.operands[index] = q.as_type(value, element, op)
    q.set_result(op, result)
    return True


@functools.cache
def lookup_table_ops() -> tuple[type[Operation], ...]:
    """The unary elementwise ops with no integer kernel of their own but a numpy semantics:
    quantized, each becomes a `glow.int_lookup_table` computed from that semantics (256 entries
    for int8, 513 interpolated for int16)."""
    return tuple(op for op in glow.numpy_semantics() if op.FACTS.arity == 1 and not op.FACTS.quantizable
                 and not op.FACTS.mixed_types and not issubclass(op, glow.ConversionOp))


def _convert_to_lookup_table(q: FunctionQuantizer, op: Operation) -> bool:
    """A unary function of int8 data as the 256-entry table of its results (Glow's
    IntLookupTable, TFLite's int8 LUT ops): each input level dequantized, the op's numpy
    semantics applied, the result quantized with the op's profiled parameters. Of int16
    data: the 513-entry interpolated table (`lookup_tables.interpolated_table`)."""
    element, result = q.input_type(op.operands[0]), q.profiled(op.results[0])
    if element is None or result is None or element.per_channel or element.bitwidth != result.bitwidth:
        return False
    if element.bitwidth == 16:
        levels = interpolated_table(lambda reals: op.FACTS.numpy(op, reals), element, result)
    else:
        inputs = np.arange(-128, 128, dtype=np.float32)
        with np.errstate(all="ignore"):
            reals = op.FACTS.numpy(op, (inputs - np.float32(element.offset)) * np.float32(element.scale))
        finite = np.nan_to_num(np.asarray(reals, np.float32), nan=0.0)
        levels = quantize(finite, QuantParams(result.scale, result.offset))
    name = op.attributes[glow.NODE_NAME].data if glow.NODE_NAME in op.attributes else op.name
    table = typed_constant(f"{name}_table", levels, result)
    lookup = glow.IntLookupTableOp(q.as_type(op.operands[0], element, op), table.result)
    lookup.attributes[TABLE_FUNCTION] = table_function_attribute(op)
    q.requantized.add(_rewritten(q, op, [table, lookup]))
    return True


def _rewritten(q: FunctionQuantizer, op: Operation, replacement: list[Operation]) -> SSAValue:
    """Replaces `op` by the ops `replacement` (the last gives its result), keeping its names."""
    for new in replacement:
        Rewriter.insert_op(new, InsertPoint.before(op))
    last = replacement[-1]
    last.attributes.update({k: v for k, v in op.attributes.items() if k in (glow.NODE_NAME, PROFILE_NAME)})
    Rewriter.replace_op(op, [], [last.results[0]])
    return last.results[0]


def _convert_division(q: FunctionQuantizer, op: glow.DivOp) -> bool:
    """x / c with a constant c: an int8 (int16) Mul by the constant 1 / c; x / y with a tensor
    y: an int8 Div (an integer division by y's level, `rescaling.divide_levels`; none for int16)."""
    divisor = op.rhs.owner
    if not isinstance(divisor, glow.ConstantOp) or divisor.value is None or is_quantized(op.rhs.type):
        # `rescaling.divide_levels` multiplies an int8 level by a 15-bit M within 32 bits
        return q.config.precision == "Int8" and _convert_generic(q, op)
    with np.errstate(divide="ignore"):
        reciprocal = np.float32(1) / array_from_dense(divisor.value).astype(np.float32)
    if not np.isfinite(reciprocal).all() or q.input_type(op.lhs) is None or q.profiled(op.result) is None:
        return False
    constant = glow.ConstantOp(f"{divisor.name_.data}_reciprocal", dense_from_array(reciprocal))
    Rewriter.insert_op(constant, InsertPoint.before(op))
    product = _rewritten(q, op, [glow.MulOp(op.lhs, constant.result)]).owner
    return _convert_generic(q, product)


def _convert_leaky_relu(q: FunctionQuantizer, op: glow.LeakyReluOp) -> bool:
    """An int8 LeakyRelu (TFLite's: each side its own multiplier, `rescaling.sign_multipliers`);
    a negative alpha has no (positive) multiplier: it becomes a lookup table."""
    if op.alpha.value.data < 0:
        return _convert_to_lookup_table(q, op)
    return _convert_generic(q, op)


def _convert_resample(q: FunctionQuantizer, op: glow.ResampleOp) -> bool:
    """One axis of a Resize: int8 taps weighted by Q1.14 integers (`RESAMPLE_FRACTION_BITS`),
    requantized to the result's profiled parameters. The axes before a Resize's last have no
    profile entry (no name): they keep their input's parameters (a weighted mean of taps
    stays in their range), a bilinear one with `FINER_LEVEL_BITS` more fractional bits in
    int16, so that the resize rounds to int8 once."""
    element = q.input_type(op.input)
    if element is None or element.per_channel:
        return False
    result = q.profiled(op.result)
    if result is None:
        nearest = glow.shape_of(op.taps)[1] == 1
        result = element if nearest or element.bitwidth != 8 else _finer(element)
    weights = UniformQuantizedType(STORAGE_TYPES["Int16"], 2.0 ** -RESAMPLE_FRACTION_BITS, 0)
    op.operands[0] = q.as_type(op.input, element, op)
    op.operands[2] = q.as_type(op.weights, weights, op)
    q.set_result(op, result)
    return True


def _finer(element: UniformQuantizedType) -> UniformQuantizedType:
    """An int8 type's levels in int16 with `FINER_LEVEL_BITS` more fractional bits (scale
    / 256, offset x 256): every int8 level is one of its levels, exactly."""
    return finer_levels(element, FINER_LEVEL_BITS)


POOL_NARROWING = 2.0
"""How much finer than its input's scale an int8 average's profiled scale must be for the
average to be taken at its own scale (`_averaged`): at least one bit."""


WIDENED_POOL_TAPS = 1 << 16
"""A window of fewer taps than this sums int16 levels (at most 2^15 in magnitude) within
int32: only such averages are widened (`_averaged`)."""


def _averaged(q: FunctionQuantizer, pool: glow.AvgPoolOp, source: SSAValue, element: UniformQuantizedType,
              result: UniformQuantizedType | None, user: Operation) -> list[Operation]:
    """Types an int8 (int16) average `pool` of `source` (of type `element`): it keeps its
    input's type, unless it is int8 and its profiled type `result` is much finer
    (`POOL_NARROWING`), as a global average pool's is (the mean of a plane of HardSwish or
    ReLU outputs spans a fraction of their range; squeeze-excitation and the classifier
    read it). Then the average is taken at its own profiled scale, as onnxruntime quantizes
    a GlobalAveragePool's output and TFLite's int8 Mean rescales to its output's: the input
    widened exactly to int16 (`_finer`: each level x 256), averaged there by the same pool
    kernel (rounded to 1/256 of an input level) and rescaled to `result` once, where the
    int16 sum fits in int32 (`WIDENED_POOL_TAPS`). Returns [pool] or [pool, that rescale];
    the widening is inserted before `user`."""
    taps = int(np.prod(glow.int_values(pool.kernel)))
    narrow = result is not None and element.bitwidth == 8 and not element.per_channel and \
        result.scale * POOL_NARROWING <= element.scale and taps < WIDENED_POOL_TAPS
    pooled = _finer(element) if narrow else element
    pool.operands[0] = q.as_type(source, pooled, user)
    Rewriter.replace_value_with_new_type(pool.results[0], with_element_type(pool.results[0].type, pooled))
    if not narrow:
        return [pool]
    return [pool, glow.RescaleQuantizedOp(pool.results[0], with_element_type(pool.results[0].type, result))]


def _convert_avg_pool(q: FunctionQuantizer, op: glow.AvgPoolOp) -> bool:
    """An int8 AvgPool: at its input's scale, or its own profiled one (`_averaged`)."""
    if not is_quantized(op.input.type):
        return _convert_follow_input(q, op)
    ops = _averaged(q, op, op.input, op.input.type.element_type, q.profiled(op.result), op)
    q.requantized.add(ops[-1].results[0])
    if len(ops) == 2:
        Rewriter.insert_op(ops[1], InsertPoint.after(op))
        op.results[0].replace_uses_with_if(ops[1].results[0], lambda use: use.operation is not ops[1])
    return True


def _convert_spatial_mean(q: FunctionQuantizer, op: glow.ReduceOp) -> bool:
    """The mean over the spatial axes of an NCHW tensor (global average pooling, as PyTorch
    exports it): an int8 AvgPool over the whole plane (typed by `_averaged`)."""
    shape = glow.shape_of(op.input)
    element = q.input_type(op.input)
    if op.kind.data != "mean" or len(shape) != 4 or sorted(op.axes.get_values()) != [2, 3] or element is None:
        return False
    pool = glow.AvgPoolOp(op.input, kernel=list(shape[2:]), strides=[1, 1], pads=[0, 0, 0, 0])
    ops = _averaged(q, pool, op.input, element, q.profiled(op.result), op)
    if glow.shape_of(op.result) != glow.shape_of(pool.result):
        reshape = glow.ReshapeOp(ops[-1].results[0], glow.shape_of(op.result))
        averaged = ops[-1].results[0].type.element_type
        Rewriter.replace_value_with_new_type(reshape.result, with_element_type(reshape.result.type, averaged))
        ops.append(reshape)
    q.requantized.add(_rewritten(q, op, ops))
    return True


def _convert_concat(q: FunctionQuantizer, op: glow.ConcatOp) -> bool:
    result = q.profiled(op.result)
    if result is None or any(q.input_type(v) is None for v in op.inputs):
        return False
    for index, value in enumerate(list(op.operands)):
        op.operands[index] = q.as_type(value, result, op)
    q.set_result(op, result)
    return True


def _convert_softmax(q: FunctionQuantizer, op: glow.SoftMaxOp) -> bool:
    element = q.input_type(op.input)
    last_axis = op.axis.value.data == len(glow.shape_of(op.input)) - 1
    if element is None or not last_axis or op.log is not None:
        return False
    op.operands[0] = q.as_type(op.input, element, op)
    q.set_result(op, q.element(QuantParams(*SOFTMAX_OUTPUTS[q.config.precision])))
    return True


def _weight_type(q: FunctionQuantizer, weights: np.ndarray, channel_axis: int | None,
                 precision: str = WEIGHT_PRECISION) -> UniformQuantizedType:
    """A weight's type from its own range: per tensor, or symmetric per channel; a constant
    operand of data (`precision` Int16: a Mul's, an Add's) is symmetric as int16 data is."""
    schema = q.config.schema if precision == WEIGHT_PRECISION else q.activation_schema
    if (channel_axis is not None or q.config.symmetric_weights) and schema in ("asymmetric", "symmetric_with_uint8"):
        schema = "symmetric"  # TFLite's int8 spec: symmetric weights, as kernel libraries want
    if channel_axis is None:
        histogram, calibration = None, "None"
        if q.config.calibrate_constants and q.config.calibration != "None":  # Glow: constants skip it otherwise
            bins = max((len(entry.histogram) for entry in q.profile.entries.values()), default=0)
            histogram, calibration = np.histogram(weights, bins=max(bins, 1))[0], q.config.calibration
        return q.element(choose_params(float(weights.min()), float(weights.max()), schema, precision,
                                       histogram, calibration, q.config.percentile), precision)
    moved = np.moveaxis(weights, channel_axis, 0).reshape(weights.shape[channel_axis], -1)
    params = [choose_params(float(row.min()), float(row.max()), schema, precision) for row in moved]
    return UniformQuantizedType(STORAGE_TYPES[precision], [p.scale for p in params],
                                [p.offset for p in params], channel_axis)


def _bias_type(q: FunctionQuantizer, bias: np.ndarray, input_scale: float,
               weights: UniformQuantizedType) -> UniformQuantizedType:
    """Int32: scale = input scale x weight scale, offset 0. Int8 (Glow's rule): that product
    when it is at least the bias's own scale or the bias is all zeros, else the bias's own."""
    products = bias_scales(UniformQuantizedType(STORAGE_TYPES["Int8"], input_scale, 0), weights)
    if weights.per_channel:
        return UniformQuantizedType(STORAGE_TYPES["Int32"], products.tolist(), [0] * products.size, 0)
    product = float(products[0])
    if q.config.precision_bias == "Int32":
        return UniformQuantizedType(STORAGE_TYPES["Int32"], product, 0)
    own = choose_params(float(bias.min()), float(bias.max()), q.config.schema, "Int8")
    if product >= own.scale or not bias.any():
        return UniformQuantizedType(STORAGE_TYPES["Int8"], product, 0)
    return UniformQuantizedType(STORAGE_TYPES["Int8"], own.scale, own.offset)


def _quantized_levels(data: np.ndarray, element: UniformQuantizedType) -> np.ndarray:
    """`data` quantized to `element` (per tensor or per channel)."""
    if element.per_channel:
        return quantize_per_channel(data, element.scale_array(), element.offset_array(), element.axis.data,
                                    _precision(element))
    return quantize(data, QuantParams(element.scale, element.offset), _precision(element))


def _quantized_constant(value: SSAValue, element: UniformQuantizedType, user: Operation) -> SSAValue:
    """A new constant holding `value`'s data quantized to `element` (per tensor or per channel)."""
    source = value.owner
    return _levels_constant(source.name_.data, _quantized_levels(array_from_dense(source.value), element), element,
                            user)


def _levels_constant(name: str, levels: np.ndarray, element: UniformQuantizedType, user: Operation) -> SSAValue:
    """A new constant `name` holding `levels` of `element`, before `user`."""
    op = typed_constant(name, levels, element)
    Rewriter.insert_op(op, InsertPoint.before(user))
    return op.result


def _quantized_bias(op: glow.ConvolutionOp | glow.FullyConnectedOp, bias_type: UniformQuantizedType,
                    input_type: UniformQuantizedType, weights: SSAValue, output_axis: int) -> SSAValue:
    """The bias constant of `bias_type`, except that an Int32 bias whose levels leave int32
    (accumulator units input x weight scale: 2^8 times finer with int16 data than int8's, so a
    bias of a few units over a narrow input range can) is not saturated silently:

    * int16 data: the bias becomes Int64, exact (TFLite's 16x8 scheme and CMSIS-NN's s16
      kernels take int64 biases); the layer then sums in int64 (`needs_wide_accumulators`).
      A level whose accumulator could reach `WIDE_ACCUMULATOR_LIMIT` is clamped there, with
      a warning (a bias 2^47 input x weight scales away from 0: far beyond any output range);
    * int8 data: the int32 kernels and libraries keep int32 biases: it saturates, with a warning.
    """
    if bias_type.bitwidth != 32:
        return _quantized_constant(op.bias, bias_type, op)
    wide_type = bias_type.with_storage_type(STORAGE_TYPES["Int64"])
    levels = _quantized_levels(array_from_dense(op.bias.owner.value), wide_type)
    int32 = np.iinfo(np.int32)
    constant_name = op.bias.owner.name_.data
    if levels.min(initial=0) >= int32.min and levels.max(initial=0) <= int32.max:
        return _levels_constant(constant_name, levels.astype(np.int32), bias_type, op)
    name = op.attributes.get(glow.NODE_NAME)
    name = name.data if name else op.name
    if input_type.bitwidth == 8:  # the Int32 levels: the Int64 ones saturated (both clip the same float32 levels)
        warnings.warn(GlowWarning(f"node \"{name}\": its bias exceeds int32 in accumulator units (input x weight "
                                  "scale) and saturates; -quantization-precision=Int16 keeps it in int64"))
        return _levels_constant(constant_name, np.clip(levels, int32.min, int32.max).astype(np.int32), bias_type, op)
    centred = centred_rows(array_from_dense(weights.owner.value), weights.type.element_type, output_axis)
    limits = wide_bias_limits(input_type, centred)
    if (np.abs(levels) > limits).any():
        warnings.warn(GlowWarning(f"node \"{name}\": its bias exceeds 2^47 int16 accumulator units (input x weight "
                                  "scale) and is clamped there"))
        levels = np.clip(levels, -limits, limits)
    return _levels_constant(constant_name, levels, wide_type, op)


def _convert_weighted(q: FunctionQuantizer, op: glow.ConvolutionOp | glow.FullyConnectedOp) -> bool:
    """Convolution and FullyConnected: quantized input, constant weights and bias."""
    weights_value = op.filter if isinstance(op, glow.ConvolutionOp) else op.weights
    result = q.profiled(op.result)
    element = q.input_type(op.input)
    weights, bias = (v.owner.value if isinstance(v.owner, glow.ConstantOp) else None for v in (weights_value, op.bias))
    if result is None or element is None or weights is None or bias is None:
        return False
    if isinstance(op, glow.ConvolutionOp) and (op.residual is not None or op.pool is not None):
        return False
    channel_axis = 0 if q.config.channelwise and isinstance(op, glow.ConvolutionOp) else None
    weight_type = q.constant_type(weights_value.owner, channel_axis)
    if q.config.bias_correction:
        _bias_corrected(q, op, weight_type, element)
        bias = op.bias.owner.value
    bias_type = _bias_type(q, array_from_dense(bias), element.scale, weight_type)
    op.operands[0] = q.as_type(op.input, element, op)
    op.operands[1] = _quantized_constant(weights_value, weight_type, op)
    output_axis = 0 if isinstance(op, glow.ConvolutionOp) else 1
    op.operands[2] = _quantized_bias(op, bias_type, element, op.operands[1], output_axis)
    if q.config.symmetric_weights and bias_type.bitwidth == 8:
        op.operands[2] = _widened_bias(op.bias, element.scale, weight_type, op)
    q.set_result(op, result)
    return True


def _feeds_only_weighted_ops(value: SSAValue) -> bool:
    """Whether every user of `value` is a Convolution or FullyConnected reading it as its
    input: the only values KL calibration may narrow. Clipping a tail moves the mean of what
    is quantized, and only there does bias correction cancel that shift (`_clipping_shift`);
    into an Add, a Mul, a pool or a lookup table it would pass on uncorrected (on the
    MobileNetV3-style net, KL's window on the input of a HardSwish cost 2 of 200 inputs' top-1
    agreement at a lower RMS error)."""
    return bool(value.uses) and all(isinstance(use.operation, (glow.ConvolutionOp, glow.FullyConnectedOp))
                                    and use.index == 0 for use in value.uses)


def _varying_span(value: SSAValue, low: float, high: float) -> tuple[float, float]:
    """The part of `value`'s profiled range [low, high] outside which every user's result stays the
    same, where all its users are lookup-table ops (`lookup_tables.varying_span`). Quantized to
    that span, the value saturates only where the tables would give the same entry anyway, and
    its levels are spent where the tables tell values apart (as onnxruntime quantizes a
    convolution followed by Relu or Clip with their output's range; our fused Relu does the
    same). [low, high] itself where some user is another op."""
    users = [use.operation for use in value.uses]
    if not users or any(type(user) not in lookup_table_ops() for user in users):
        return low, high
    return varying_span([functools.partial(user.FACTS.numpy, user) for user in users], low, high)


def _bias_corrected(q: FunctionQuantizer, op: glow.ConvolutionOp | glow.FullyConnectedOp,
                    weight_type: UniformQuantizedType, input_type: UniformQuantizedType) -> None:
    """Bias correction (Nagel et al. 2019, "Data-Free Quantization", section 4.2, with the means
    measured): gives `op` a float bias that cancels the mean error of its integer form.

    Over the inputs, output channel o of the int8 op has the mean sum_i w_q[o, i] mean(x_q,i)
    where float has sum_i w[o, i] mean(x_i): the difference is an error that is the same for
    every input. Weight rounding makes most of it (issue 17: on the DS-CNN-style net, 0.021
    RMS of the logits' 0.025 error); a calibrated input range that clips (KL, Percentile)
    moves mean(x_q) too. The profile's per-channel means of the input
    (`NodeProfile.channel_means`, which glow-profile records) and the shift clipping to the
    input's range makes to its histogram's mean (`_clipping_shift`, one for the tensor) give
    that difference; the bias absorbs it. A tap that reads the zero padding at some output
    positions counts for the share of positions where it reads the input (`_taps_inside`: on
    a 4x4 map a 3x3 window's corner taps read it at 9 of 16). Without the means (a profile
    Glow wrote), the bias stays."""
    entry = profile_entry(op.input, q.profile)
    if entry is None or entry.channel_means is None or input_type.per_channel:
        return
    weights_value = op.filter if isinstance(op, glow.ConvolutionOp) else op.weights
    weights = array_from_dense(weights_value.owner.value).astype(np.float64)
    levels = _quantized_levels(weights, weight_type)
    rounded = dequantize_as(levels, weight_type).astype(np.float64)
    means = entry.channel_means
    if isinstance(op, glow.ConvolutionOp):  # [O, C / group, kH, kW]: output o reads its group's channels
        outputs, group_inputs, group = weights.shape[0], weights.shape[1], op.group.value.data
        if means.size != group_inputs * group:
            return
        group_means = means.reshape(group, group_inputs)[np.arange(outputs) // (outputs // group)]
        inside = _taps_inside(op, weights.shape[2:])

        def output_means(w: np.ndarray, m: np.ndarray) -> np.ndarray:
            return ((w * inside).sum(axis=(2, 3)) * m).sum(axis=1)
    else:  # [inputs, outputs]
        if means.size != weights.shape[0]:
            return
        group_means = means

        def output_means(w: np.ndarray, m: np.ndarray) -> np.ndarray:
            return m @ w
    quantized_means = group_means + _clipping_shift(entry, input_type)
    error = output_means(rounded, quantized_means) - output_means(weights, group_means)
    bias = array_from_dense(op.bias.owner.value).astype(np.float64) - error
    corrected = glow.ConstantOp(op.bias.owner.name_.data, dense_from_array(bias.astype(np.float32)))
    Rewriter.insert_op(corrected, InsertPoint.before(op))
    op.operands[2] = corrected.result


def _taps_inside(op: glow.ConvolutionOp, kernel: tuple[int, ...]) -> np.ndarray:
    """[kH, kW]: the share of the NCHW convolution's output positions at which each filter
    tap reads the input rather than the zero padding (1 everywhere without padding)."""
    spatial = glow.shape_of(op.input)[2:]
    strides, pads, dilations = (glow.int_values(values) for values in (op.strides, op.pads, op.dilations))
    shares = []
    for axis, (size, taps, outputs) in enumerate(zip(spatial, kernel, glow.convolution_shape(op)[2:])):
        begin = pads[axis]
        read = np.arange(outputs)[:, None] * strides[axis] - begin + np.arange(taps)[None, :] * dilations[axis]
        shares.append(((read >= 0) & (read < size)).mean(axis=0))
    return np.outer(*shares)


def _clipping_shift(entry: NodeProfile, element: UniformQuantizedType) -> float:
    """How far clipping to `element`'s real range moves the mean of the profiled values (each
    at its histogram bin's centre): 0 for a min/max range, negative where a calibrated range
    cuts a ReLU's tail."""
    counts = entry.histogram
    if counts.sum() <= 0:
        return 0.0
    low, high = ((np.array(element.value_range, dtype=np.float64) - element.offset) * element.scale).tolist()
    centres = entry.min + (np.arange(counts.size) + 0.5) * ((entry.max - entry.min) / counts.size)
    return float((counts * (np.clip(centres, low, high) - centres)).sum() / counts.sum())


def _widened_bias(bias: SSAValue, input_scale: float, weights: UniformQuantizedType, user: Operation) -> SSAValue:
    """An Int8 bias as the Int32 bias a kernel library adds to its accumulators: the same
    values (the int8 levels, dequantized) in units of input scale x weight scale, offset 0.

    Exact when the int8 scale is an integer multiple of that product and its offset is 0:
    always with Glow's Int8 bias rule under symmetric_with_power2_scale (both are powers of
    two and the bias scale is at least the product) and whenever the rule picked the product.
    Otherwise each level is rounded to the nearest, an error of at most half an accumulator
    unit (input scale x weight scale / 2), below what the requantized output can show."""
    source = bias.owner
    levels = array_from_dense(source.value).astype(np.int64)
    int8_type = bias.type.element_type
    product = float(bias_scales(UniformQuantizedType(STORAGE_TYPES["Int8"], input_scale, 0), weights)[0])
    ratio = np.float64(int8_type.scale) / np.float64(product)
    widened = np.rint((levels - int8_type.offset) * ratio).astype(np.int32)
    return _levels_constant(source.name_.data, widened, UniformQuantizedType(STORAGE_TYPES["Int32"], product, 0), user)


_REWRITTEN_CONVERTERS: dict[type, Callable] = {
    glow.ReduceOp: _convert_spatial_mean,
}
"""Ops with no integer kernel that become ones that have one: the spatial mean (an AvgPool)."""


_CONVERTERS: dict[type, Callable] = {
    glow.ConvolutionOp: _convert_weighted,
    glow.FullyConnectedOp: _convert_weighted,
    glow.ConcatOp: _convert_concat,
    glow.SoftMaxOp: _convert_softmax,
    glow.DivOp: _convert_division,
    glow.LeakyReluOp: _convert_leaky_relu,
    glow.ResampleOp: _convert_resample,
    glow.AvgPoolOp: _convert_avg_pool,
}


def is_model_quantize(op: Operation) -> bool:
    """A `glow.quantize` a quantized model's file states (ONNX QuantizeLinear)."""
    return isinstance(op, glow.QuantizeOp) and glow.MODEL_QUANTIZATION in op.attributes
