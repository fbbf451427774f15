"""`lower-glow-to-glowll`: Glow's IRGen, from tensors to buffers.

Each `glow.function` becomes a `glowll.function` in the same order:
placeholders become input `glowll.placeholder`s, constants `glowll.weight`s, every
compute result a `glowll.alloc` written by one instruction. A value that only feeds a
`glow.save` is written straight into its output placeholder, so no final copy is made.
Buffers get no offsets here: `glowll-allocate-memory` places them.

State (`glow.state`) becomes a state `glowll.placeholder`, which keeps its bytes between
calls. A state i32 [1] placeholder, the ready word, comes first: the function starts by
initialising every state from its initial value (`glowll.initialize_state`: a weight, or a
fill for a uniform one) unless the ready word holds `glowll.STATE_READY`, and then writes
that there. A `glow.state_store` becomes a copy into the state placeholder after every other
instruction, when no instruction reads the value the call started with any more (a value
that is itself a state's is copied aside first).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import MemRefType, ModuleOp, UnitAttr, f32, i32
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from glowmlir.dialects import glow, glowll
from glowmlir.dialects.quant import UniformQuantizedType
from glowmlir.dialects.weights import array_from_dense, dense_from_array, release_weights, transposed
from glowmlir.errors import GlowError
from glowmlir.lowering import replace_functions
from glowmlir.quantization.rescaling import bias_scales, centred_rows, needs_wide_accumulators, output_multipliers


def _memref(value: SSAValue) -> MemRefType:
    return MemRefType(value.type.element_type, value.type.get_shape())


def _fused_activation(op: glow.FusedActivationMixin) -> dict:
    """The fused activation of a glow op, as the glowll builders take it."""
    return {"activation": op.activation, "clip_min": op.clip_min, "clip_max": op.clip_max}


class _FunctionLowering:
    def __init__(self, function: glow.FunctionOp):
        self.function = function
        self.block = Block()
        self.buffers: dict[SSAValue, SSAValue] = {}
        self.outputs: dict[SSAValue, SSAValue] = {}
        self.outputs_of_saves: dict[glow.SaveOp, SSAValue] = {}

    def add(self, op: Operation) -> SSAValue | None:
        self.block.add_op(op)
        return op.results[0] if op.results else None

    def buffer(self, value: SSAValue) -> SSAValue:
        """The buffer holding `value`; a constant's weight buffer is declared at its first use."""
        if value not in self.buffers and isinstance(value.owner, glow.ConstantOp):
            constant = value.owner
            self.buffers[value] = self.add(glowll.WeightOp(constant.name_.data, _memref(value), constant.value))
        return self.buffers[value]

    def result_buffer(self, value: SSAValue) -> SSAValue:
        """The buffer an instruction writes `value` into: its output placeholder, or a new alloc."""
        if value in self.outputs:
            buffer = self.outputs[value]
        else:
            buffer = self.add(glowll.AllocOp(_memref(value)))
        self.buffers[value] = buffer
        return buffer

    def instruction(self, op_type: type[glowll.InstructionOp], result: SSAValue, sources, **properties) -> None:
        """Adds `op_type(dest, *sources' buffers, **properties)` writing `result`."""
        dest = self.result_buffer(result)
        self.add(op_type(dest, *(self.buffer(s) for s in sources), **properties))

    def run(self) -> glowll.FunctionOp:
        ops = list(self.function.body.block.ops)
        # Output placeholders come first in the mutable region's order, after the inputs;
        # declare them up front so producers can write into them.
        placeholders = [op for op in ops if isinstance(op, glow.PlaceholderOp)]
        for op in placeholders:
            self.buffers[op.result] = self.add(glow.with_attributes_of(glowll.PlaceholderOp(
                glowll.PlaceholderKind.INPUT, op.name_, _memref(op.result)), op))
        for save in (op for op in ops if isinstance(op, glow.SaveOp)):
            output = self.add(glow.with_attributes_of(glowll.PlaceholderOp(
                glowll.PlaceholderKind.OUTPUT, save.name_, _memref(save.input)), save))
            self.outputs_of_saves[save] = output
            # The op computing the saved value (seen through reshapes, which are views)
            # writes straight into the output placeholder.
            source = save.input
            while isinstance(source.owner, glow.ReshapeOp) and source.has_one_use():
                source = source.owner.input
            producer = source.owner
            if (source.has_one_use() and isinstance(producer, Operation) and source not in self.outputs
                    and not isinstance(producer, glow.PlaceholderOp | glow.StateOp | glow.ConstantOp
                                       | glow.ReshapeOp)):
                self.outputs[source] = output if source is save.input else \
                    self.add(glowll.TensorViewOp(output, _memref(source)))
        self.declare_states([op for op in ops if isinstance(op, glow.StateOp)])
        stores = [op for op in ops if isinstance(op, glow.StateStoreOp)]
        for op in ops:
            if not isinstance(op, glow.PlaceholderOp | glow.StateOp | glow.StateStoreOp):
                self.lower(op)
        self.store_states(stores)
        return glowll.FunctionOp(self.function.sym_name.data, Region(self.block))

    def declare_states(self, states: list[glow.StateOp]) -> None:
        """The state placeholders after the ready word, each initialised unless it is ready."""
        if not states:
            return
        taken = {state.name_.data for state in states}
        ready_name = next(name for name in (f"states_ready{'_' * k}" for k in range(len(taken) + 1))
                          if name not in taken)
        ready = self.add(glowll.PlaceholderOp(glowll.PlaceholderKind.STATE, ready_name, MemRefType(i32, [1])))
        for state in states:
            buffer = self.buffers[state.result] = self.add(glow.with_attributes_of(glowll.PlaceholderOp(
                glowll.PlaceholderKind.STATE, state.name_, _memref(state.result)), state))
            if state.value is None:
                raise GlowError(f"glow.state \"{state.name_.data}\": its initial value is elided (pass its "
                                f"--weights-file)")
            initial = array_from_dense(state.value)
            if (initial == initial.flat[0]).all():
                self.add(glowll.InitializeStateOp(buffer, ready, fill=float(initial.flat[0])))
            else:
                weight = self.add(glowll.WeightOp(f"{state.name_.data}_initial", _memref(state.result), state.value))
                self.add(glowll.InitializeStateOp(buffer, ready, weight))
        self.add(glowll.ElementwiseOp(ready, [], "splat", value=float(glowll.STATE_READY)))

    def store_states(self, stores: list[glow.StateStoreOp]) -> None:
        """Each stored value copied into its state, after every instruction reading the old one."""
        states = {op.name_.data: buffer for value, buffer in self.buffers.items()
                  if isinstance(op := value.owner, glow.StateOp)}
        sources = []
        for store in stores:
            source = self.buffer(store.input)
            root, _ = glowll.root_buffer(source)
            if isinstance(root, glowll.PlaceholderOp) and root.kind.data == glowll.PlaceholderKind.STATE:
                aside = self.add(glowll.AllocOp(_memref(store.input)))  # another state's old value
                self.add(glowll.CopyOp(aside, source))
                source = aside
            sources.append(source)
        for store, source in zip(stores, sources, strict=True):
            self.add(glowll.CopyOp(states[store.name_.data], source))

    def lower(self, op: Operation) -> None:
        lowering = _LOWERINGS.get(type(op))
        if lowering is None and glow.elementwise_kind(op) is not None:  # from the op's facts
            lowering = _lower_elementwise
        if lowering is None:
            needed = _DECOMPOSED_BY.get(type(op), "glow-fold-batchnorm")
            raise GlowError(f"{op.name}: no lowering to glowll (run {needed} first?)")
        if isinstance(op, glow.ConvolutionOp | glow.PoolOp) and len(glow.shape_of(op.input)) != 4:
            spatial = len(glow.shape_of(op.input)) - 2
            raise GlowError(f"{op.name}: only 2-D windows lower to glowll, this one is {spatial}-D (run "
                            f"glow-decompose-1d-windows, -3d-convolution and -3d-pools first)")
        last_before = self.block.last_op
        lowering(self, op)
        # the graph node each instruction computes, and the kernel chosen for it, for reports
        reported = {key: op.attributes[key] for key in (glow.NODE_NAME, glow.KERNEL_CHOICE) if key in op.attributes}
        new = last_before.next_op if last_before is not None else self.block.first_op
        while reported and new is not None:
            if isinstance(new, glowll.InstructionOp):
                new.attributes.update(reported)
            new = new.next_op


_DECOMPOSED_BY = {glow.ConvTransposeOp: "glow-decompose-conv-transpose"}
"""The pass that rewrites an op with no lowering of its own into ops that have one."""


def _lower_save(lowering: _FunctionLowering, op: glow.SaveOp) -> None:
    output, source = lowering.outputs_of_saves[op], lowering.buffer(op.input)
    if glowll.root_buffer(source) != (output.owner, 0):  # not written in place: copy it
        lowering.add(glowll.CopyOp(output, source))


def _lower_reshape(lowering: _FunctionLowering, op: glow.ReshapeOp) -> None:
    """A reshape is a view of its input's buffer: no instruction, no memory."""
    lowering.buffers[op.result] = lowering.add(glowll.TensorViewOp(lowering.buffer(op.input), _memref(op.result)))


def _lower_splat(lowering: _FunctionLowering, op: glow.SplatOp) -> None:
    lowering.add(glowll.ElementwiseOp(lowering.result_buffer(op.result), [], "splat", value=op.value))


def _weight_scales(lowering: _FunctionLowering, levels: SSAValue, axis: int, channels: int) -> SSAValue:
    """The f32 [channels] weight `<constant>_scales` of the scale of each output channel of the
    dequantized-on-use int8 constant `levels` (quantized per tensor: the one scale, repeated),
    whose output channels are along `axis`."""
    element = levels.type.element_type
    if element.per_channel and element.axis.data != axis:
        raise GlowError(f"\"{levels.owner.name_.data}\": weights dequantized on use are quantized per output "
                        f"channel (axis {axis}), not along axis {element.axis.data}")
    scales = element.scale_array() if element.per_channel else np.full(channels, element.scale)
    return lowering.add(glowll.WeightOp(levels.owner.name_.data + "_scales", MemRefType(f32, [channels]),
                                        dense_from_array(np.asarray(scales, np.float32))))


def _lower_convolution(lowering: _FunctionLowering, op: glow.ConvolutionOp) -> None:
    levels = glow.dequantized_on_use(op.filter)
    sources = [lowering.buffer(v) for v in (op.input, op.filter if levels is None else levels, op.bias)]
    weight_scales = None if levels is None else _weight_scales(lowering, levels, 0, glow.shape_of(levels)[0])
    residual = lowering.buffer(op.residual) if op.residual is not None else None
    requantization = _requantization_table(lowering, op, op.filter)
    dest = lowering.result_buffer(op.result)
    convolution = glowll.ConvolutionOp(dest, *sources, strides=op.strides, pads=op.pads, dilations=op.dilations,
                                       group=op.group, layout=op.layout, **_fused_activation(op), pool=op.pool,
                                       pool_kernel=op.pool_kernel, pool_strides=op.pool_strides, pool_pads=op.pool_pads,
                                       pool_count_include_pad=op.pool_count_include_pad is not None,
                                       pool_widening=op.pool_widening, residual=residual, requantization=requantization,
                                       weight_scales=weight_scales)
    convolution.properties.update(_accumulators(op, op.filter))
    lowering.add(convolution)


def _accumulators(op: glow.ConvolutionOp | glow.FullyConnectedOp, weights: SSAValue, channel_axis: int = 0) -> dict:
    """`wide_accumulators` for a quantized op of int16 data whose int32 sums could overflow
    (`needs_wide_accumulators`, from its constant weights and bias; unknown ones: always)."""
    input_type = op.input.type.element_type
    if not isinstance(input_type, UniformQuantizedType) or input_type.bitwidth <= 8:
        return {}
    weight_type, bias_type = weights.type.element_type, op.bias.type.element_type
    constants = [v.owner.value if isinstance(v.owner, glow.ConstantOp) else None for v in (weights, op.bias)]
    if None in constants:
        return {"wide_accumulators": UnitAttr()}
    centred = centred_rows(array_from_dense(constants[0]), weight_type, channel_axis)
    in_accumulator_units = bias_type.scale_array() / bias_scales(input_type, weight_type)
    bias = np.ceil(np.abs(array_from_dense(constants[1]).astype(np.int64) - bias_type.offset_array())
                   * in_accumulator_units).astype(np.int64)
    return {"wide_accumulators": UnitAttr()} if needs_wide_accumulators(input_type, centred, bias) else {}


def _requantization_table(lowering: _FunctionLowering, op: Operation, weights: SSAValue) -> SSAValue | None:
    """With per-channel quantized weights: the i32 [2, channels] weight holding each output
    channel's requantization multiplier, then its shift (None otherwise)."""
    weight_type = weights.type.element_type
    if not (isinstance(weight_type, UniformQuantizedType) and weight_type.per_channel):
        return None
    multipliers, shifts = output_multipliers(op.input.type.element_type, weight_type, glow.convolved_element(op))
    return lowering.add(glowll.WeightOp(weights.owner.name_.data + "_requantization",
                                        MemRefType(i32, [2, len(multipliers)]),
                                        dense_from_array(np.stack([multipliers, shifts]))))


def _lower_fully_connected(lowering: _FunctionLowering, op: glow.FullyConnectedOp) -> None:
    # glowll wants [out, in] weights: transpose a constant here, anything else at run time.
    depth, columns = glow.shape_of(op.weights)
    levels = glow.dequantized_on_use(op.weights)
    stored = op.weights if levels is None else levels
    element = stored.type.element_type
    if isinstance(element, UniformQuantizedType) and element.per_channel:  # one scale per output: axis 1 -> 0
        element = UniformQuantizedType(element.storage_type, element.scale_array().tolist(),
                                       element.offset_array().tolist(), 0)
    transposed_type = MemRefType(element, [columns, depth])
    requantization = _requantization_table(lowering, op, op.weights)
    constant = stored.owner
    if isinstance(constant, glow.ConstantOp) and constant.value is not None:
        weights = lowering.add(glowll.WeightOp(constant.name_.data + "_transposed", transposed_type,
                                               dense_from_array(transposed(array_from_dense(constant.value)))))
    else:
        weights = lowering.add(glowll.AllocOp(transposed_type))
        lowering.add(glowll.TransposeOp(weights, lowering.buffer(op.weights), perm=[1, 0]))
    dest = lowering.result_buffer(op.result)
    weight_scales = None
    if levels is not None:
        weight_scales = _weight_scales(lowering, levels, 1, columns)
    fully_connected = glowll.FullyConnectedOp(dest, lowering.buffer(op.input), weights, lowering.buffer(op.bias),
                                              **_fused_activation(op), requantization=requantization,
                                              weight_scales=weight_scales)
    fully_connected.properties.update(_accumulators(op, op.weights, channel_axis=1))
    lowering.add(fully_connected)


def _lower_scatter_nd(lowering: _FunctionLowering, op: glow.ScatterNDOp) -> None:
    """The data copied into the result, then the updates scattered over it."""
    dest = lowering.result_buffer(op.result)
    lowering.add(glowll.CopyOp(dest, lowering.buffer(op.data)))
    lowering.add(glowll.ScatterNDOp(dest, lowering.buffer(op.indices), lowering.buffer(op.updates),
                                    reduction=op.reduction))


def _lower_pool(lowering: _FunctionLowering, op: glow.PoolOp) -> None:
    window = {"kernel": op.kernel, "strides": op.strides, "pads": op.pads, "layout": op.layout}
    if isinstance(op, glow.MaxPoolOp):
        lowering.instruction(glowll.MaxPoolOp, op.result, [op.input], **window)
    else:
        lowering.instruction(glowll.AvgPoolOp, op.result, [op.input], **window,
                             count_include_pad=op.count_include_pad is not None)


def _elementwise(lowering: _FunctionLowering, op: Operation, kind: str, **properties) -> None:
    dest = lowering.result_buffer(op.results[0])  # before the sources' weights, as every instruction
    lowering.add(glowll.ElementwiseOp(dest, [lowering.buffer(s) for s in op.operands], kind, **properties))


def _lower_elementwise(lowering: _FunctionLowering, op: Operation) -> None:
    """The op's kind (its facts); a dequantization marked dequantized on use
    (`glow.DEQUANTIZE_ON_USE`) is none: its levels are the layers' weights."""
    if isinstance(op, glow.DequantizeOp) and glow.dequantized_on_use(op.result) is not None:
        return
    properties = {name: getattr(op, name) for name in ("alpha", "beta", "predicate") if hasattr(op, name)}
    if isinstance(op, glow.FusedActivationMixin):
        properties |= _fused_activation(op)
    if isinstance(op, glow.ClipOp):
        properties |= {"clip_min": op.min, "clip_max": op.max}
    _elementwise(lowering, op, glow.elementwise_kind(op), **properties)


def _lower_simple(op_type: type[glowll.InstructionOp], *properties: str, flags: tuple[str, ...] = ()) -> Callable:
    """Lowers a glow op to `op_type` over the same operands, passing on the named properties
    (and the unit properties `flags` as booleans)."""

    def lower(lowering: _FunctionLowering, op: Operation) -> None:
        lowering.instruction(op_type, op.results[0], op.operands, **{name: getattr(op, name) for name in properties},
                             **{name: getattr(op, name) is not None for name in flags})

    return lower


def _kept_dimensions_buffer(lowering: _FunctionLowering, result: SSAValue, kept: list[int]) -> SSAValue:
    """The buffer a reduction writes (the reduced dimensions kept as 1); a result that drops
    them is a view of it."""
    if tuple(kept) == glow.shape_of(result):
        return lowering.result_buffer(result)
    dest = lowering.add(glowll.AllocOp(MemRefType(result.type.element_type, kept)))
    lowering.buffers[result] = lowering.add(glowll.TensorViewOp(dest, _memref(result)))
    return dest


def _lower_reduce(lowering: _FunctionLowering, op: glow.ReduceOp) -> None:
    axes = set(op.axes.get_values())
    kept = [1 if d in axes else size for d, size in enumerate(glow.shape_of(op.input))]
    dest = _kept_dimensions_buffer(lowering, op.result, kept)
    lowering.add(glowll.ReduceOp(dest, lowering.buffer(op.input), kind=op.kind, axes=op.axes))


def _lower_arg_reduce(lowering: _FunctionLowering, op: glow.ArgReduceOp) -> None:
    axis = op.axis.value.data
    kept = [1 if d == axis else size for d, size in enumerate(glow.shape_of(op.input))]
    dest = _kept_dimensions_buffer(lowering, op.result, kept)
    lowering.add(glowll.ArgReduceOp(dest, lowering.buffer(op.input), kind=op.kind, axis=op.axis,
                                    select_last_index=op.select_last_index is not None))


def _lower_concat(lowering: _FunctionLowering, op: glow.ConcatOp) -> None:
    dest = lowering.result_buffer(op.result)
    axis, offset = op.axis.value.data, 0
    for value in op.inputs:
        offsets = [0] * len(glow.shape_of(value))
        offsets[axis] = offset
        lowering.add(glowll.InsertTensorOp(dest, lowering.buffer(value), offsets=offsets))
        offset += glow.shape_of(value)[axis]


def _lower_pad(lowering: _FunctionLowering, op: glow.PadOp) -> None:
    dest = lowering.result_buffer(op.result)
    rank = len(glow.shape_of(op.input))
    lowering.add(glowll.ElementwiseOp(dest, [], "splat", value=op.value))
    lowering.add(glowll.InsertTensorOp(dest, lowering.buffer(op.input), offsets=op.pads.get_values()[:rank]))


_LOWERINGS: dict[type, Callable[[_FunctionLowering, Operation], None]] = {
    glow.ConstantOp: lambda lowering, op: None,  # declared where first used
    glow.SaveOp: _lower_save,
    glow.SplatOp: _lower_splat,
    glow.ConvolutionOp: _lower_convolution,
    glow.FullyConnectedOp: _lower_fully_connected,
    glow.MaxPoolOp: _lower_pool,
    glow.AvgPoolOp: _lower_pool,
    glow.MatMulOp: _lower_simple(glowll.MatMulOp),
    glow.SoftMaxOp: _lower_simple(glowll.SoftMaxOp, "axis", flags=("log",)),
    glow.LocalResponseNormalizationOp: _lower_simple(glowll.LocalResponseNormalizationOp,
                                                     "size", "alpha", "beta", "bias"),
    glow.ReshapeOp: _lower_reshape,
    glow.TransposeOp: _lower_simple(glowll.TransposeOp, "perm"),
    glow.SliceOp: _lower_simple(glowll.ExtractTensorOp, "starts", "steps"),
    glow.ConcatOp: _lower_concat,
    glow.ReduceOp: _lower_reduce,
    glow.ArgReduceOp: _lower_arg_reduce,
    glow.GatherOp: _lower_simple(glowll.GatherOp, "axis"),
    glow.ScatterNDOp: _lower_scatter_nd,
    glow.IntLookupTableOp: _lower_simple(glowll.IntLookupTableOp),
    glow.GatherElementsOp: _lower_simple(glowll.GatherElementsOp, "axis"),
    glow.PadOp: _lower_pad,
    glow.ResampleOp: _lower_simple(glowll.ResampleOp, "axis"),
}


@dataclass(frozen=True)
class LowerGlowToGlowLL(ModulePass):
    """Turns every `glow.function` into a `glowll.function` (buffers not yet placed)."""

    name = "lower-glow-to-glowll"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        replace_functions(op, glow.FunctionOp, _lowered)


def _lowered(function: glow.FunctionOp) -> list[Operation]:
    """The glowll function of a glow function, whose constants then let their weights go: the
    glowll weights share the arrays they keep, and a selection pass that packs a filter
    frees the unpacked one only if nothing else holds it (`release_weights`)."""
    lowered = _FunctionLowering(function).run()
    for op in function.walk():
        if isinstance(op, glow.ConstantOp):
            release_weights(op)
    return [lowered]


