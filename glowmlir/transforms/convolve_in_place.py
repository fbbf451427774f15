"""`glowll-convolve-in-place`: convolutions that write over their dying input (TinyEngine's
in-place layers), for a plan below the layer-by-layer bound (`-ram-size`, see `memory_plans`).

Layer by layer, a convolution's input and output are live together. Two kinds need less:

* A depthwise convolution (one input channel per group, NCHW) computes each channel from
  that channel's plane alone. It becomes one convolution per slice of `staged_channels`
  channels, into a staging buffer of one slice's output, each followed by a `glowll.copy`
  of that slice over its own (now dead) input planes: the output is a view of the input's
  buffer (smaller, at stride 2: a slice's output ends before the next slice's input
  starts). The kernels need nothing new: each slice is an ordinary depthwise convolution
  on a contiguous view, whose filter, bias and requantization are that slice's weights.
  RAM: input + one slice's output, instead of input + output.
* A convolution whose output only the add right after it reads, beside a residual of the same
  shape that dies there (ResNet's second convolution of a block, or its 1x1 shortcut), becomes
  one convolution per slice of `staged_channels` output channels into a staging buffer, each
  followed by the add of that slice over the residual's own channels (the add in place: each
  element read before it is written, at the same position). The add's output is a view of
  the residual. RAM: input + residual + one slice, instead of input + residual + output.
* A pointwise convolution (1x1, stride 1, unpadded, ungrouped, unpooled, no more output
  than input channels) whose kernel stages each run of pixels before writing it: its
  output becomes a view of its input (offset 0), and the op is marked `in_place`. Which
  kernels stage so is their microkernel's answer (`writes_over_input(op)` in its emitters
  module): the Arm DSP gathered product copies a run of pixels' channels to its stack
  before it stores that run's outputs, Helium's `arm-mve-im2col` one pixel's (NCHW: output
  (o, p) lies on input (o, p), o < C, of a pixel already gathered).
* Any other such pointwise convolution (NCHW, batch 1: the host's kernels, the portable
  ones, a size-first build's, whose shared skeletons compute blocks of output channels over
  whole planes) runs in blocks of rows (`pointwise_rows`, before kernel selection, on a
  target none of whose kernels stage their pixels, `kernels_stage_pointwise_pixels`; after
  it, with `pointwise`, a layer its kernel did not take so, such as Helium's column
  kernel's, unless that kernel carries parameters that may depend on the plane): each
  block's input rows gathered (`glowll.extract_tensor`) into a stage, convolved into a
  second stage, which is inserted (`glowll.insert_tensor`) over the output's rows, a view of
  the input (output (o, y, x) lies on input (o, y, x), o < C, of a row already gathered).
  Each block is an ordinary convolution of the same shape and weights: one kernel serves
  them all. RAM: input + a block of input and output rows, instead of input + output.

* A convolution (batch 1, NCHW, unpooled, undilated) of the network's NHWC input, which the
  lowering transposes whole into an activation buffer of the kernels' layout first, reads the
  input's rows itself (`stem_rows`): in blocks of output rows, each block's input rows (its
  windows', a view of the NHWC input) transposed into a stage, convolved (the top pad at the
  first block only, the bottom one at the last) into a second stage and inserted into the
  output. RAM: a block's rows instead of the whole transposed input (VWW: 27,648 bytes).

The kernel libraries take no aliased buffers (CMSIS-NN's convolutions write `output_data`
while reading `input_data` through other pixels' windows or its im2col buffer; HiFi4's NNLib
states the same): their layers (NHWC) stay out of place, and every slice above gives its
kernel distinct input and output buffers.

Only buffers planned in the activations region are shared (an alloc the input is all of,
which dies at the convolution); inputs and outputs of the network keep their own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import MemRefType, ModuleOp, UnitAttr
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from glowmlir.dialects import glow, glowll
from glowmlir.dialects.quant import UniformQuantizedType
from glowmlir.dialects.weights import array_from_dense, dense_from_array

STAGED_CHANNELS = 16
"""Channels a depthwise slice computes into the staging buffer (DS-CNN's 64 channels of 25 x 5:
four slices, a 2,000-byte stage)."""


def _instructions(function: glowll.FunctionOp) -> list[glowll.InstructionOp]:
    return [op for op in function.body.block.ops if isinstance(op, glowll.InstructionOp)]


def _dies_at(value: SSAValue, op: glowll.InstructionOp, instructions: list[glowll.InstructionOp]) -> bool:
    """Whether `value` is an activation buffer (or a view of one) no instruction after `op` touches."""
    root, _ = glowll.root_buffer(value)
    if not isinstance(root, glowll.AllocOp):
        return False
    last = max(i for i, other in enumerate(instructions)
               if any(glowll.root_buffer(operand)[0] is root for operand in other.operands))
    return instructions[last] is op


def _first_written_by(value: SSAValue, op: glowll.InstructionOp, instructions) -> bool:
    """Whether no instruction before `op` touches `value` (not a stage earlier slices wrote)."""
    before = instructions[:instructions.index(op)]
    return not any(value in other.operands for other in before)


def _own_buffers(op: glowll.ConvolutionOp, instructions) -> bool:
    """Input dying here and output a fresh activation buffer of the same element size, no
    larger, first written here: the output may live in the input's memory."""
    dest, source = op.dest, op.input
    return (isinstance(dest.owner, glowll.AllocOp) and _dies_at(source, op, instructions)
            and _first_written_by(dest, op, instructions)
            and dest.type.element_type.compile_time_size == source.type.element_type.compile_time_size
            and dest.type.element_count() <= source.type.element_count()
            and op.residual is None and op.lookup_table is None and op.parameters is None)


def _sliced_type(memref: MemRefType, axis: int, start: int, count: int) -> MemRefType:
    """`memref` with `count` indices from `start` along `axis`, a per-channel type's scales too."""
    shape = list(memref.get_shape())
    shape[axis] = count
    element = memref.element_type
    if isinstance(element, UniformQuantizedType) and element.per_channel and element.axis.data == axis:
        element = UniformQuantizedType(element.storage_type, list(element.scale_array()[start:start + count]),
                                       list(element.offset_array()[start:start + count]), axis)
    return MemRefType(element, shape)


def _weight_slice(weight: SSAValue, axis: int, start: int, count: int) -> glowll.WeightOp:
    owner = weight.owner
    assert isinstance(owner, glowll.WeightOp) and owner.value is not None
    values = np.take(array_from_dense(owner.value), range(start, start + count), axis=axis)
    return glowll.WeightOp(f"{owner.name_.data}_channels_{start}_{start + count}",
                           _sliced_type(weight.type, axis, start, count), dense_from_array(values))


def is_stageable_depthwise(op: glowll.ConvolutionOp, channels: int = STAGED_CHANNELS) -> bool:
    """An NCHW depthwise convolution of plain weights whose channels divide into slices."""
    in_c = glow.shape_of(op.input)[1]
    out_c = glow.shape_of(op.dest)[1]
    weights = [op.filter, op.bias] + ([op.requantization] if op.requantization is not None else [])
    return (op.microkernel is None and not glow.is_nhwc(op) and op.group.value.data == in_c == out_c
            and in_c > _slice_channels(in_c, channels) and op.weight_scales is None
            and all(isinstance(w.owner, glowll.WeightOp) and w.owner.value is not None for w in weights))


def _slice_channels(channels: int, most: int) -> int:
    return max(d for d in range(1, min(channels, most) + 1) if channels % d == 0)


def stage_depthwise(op: glowll.ConvolutionOp, channels: int = STAGED_CHANNELS) -> None:
    """Replaces `op` by its channel slices into a staging buffer, each copied over its input."""
    block = op.parent_block()
    n, in_c, in_h, in_w = glow.shape_of(op.input)
    _, out_c, out_h, out_w = glow.shape_of(op.dest)
    step = _slice_channels(in_c, channels)
    stage = glowll.AllocOp(_sliced_type(op.dest.type, 1, 0, step))
    output = glowll.TensorViewOp(op.input, op.dest.type, 0)
    block.insert_ops_before([stage, output], op)
    for start in range(0, in_c, step):
        source = glowll.TensorViewOp(op.input, _sliced_type(op.input.type, 1, start, step), start * in_h * in_w)
        into = glowll.TensorViewOp(op.input, _sliced_type(op.dest.type, 1, start, step), start * out_h * out_w)
        weights = {op.filter: _weight_slice(op.filter, 0, start, step), op.bias: _weight_slice(op.bias, 0, start, step)}
        if op.requantization is not None:
            weights[op.requantization] = _weight_slice(op.requantization, 1, start, step)
        block.insert_ops_before([source, into, *weights.values()], op)
        named = {"dest": stage.buffer, "input": source.buffer, "filter": weights[op.filter].buffer,
                 "bias": weights[op.bias].buffer}
        if op.requantization is not None:
            named["requantization"] = weights[op.requantization].buffer
        part = glowll.with_operands(op, **named)
        part.properties["group"] = glow.i64_attr(step)
        block.insert_op_before(part, op)
        block.insert_op_before(_named_after(op, glowll.CopyOp(into.buffer, stage.buffer)), op)
    _replace_result(op, output.buffer)
    _erase_unused_weights(block)


def _named_after(op: glowll.InstructionOp, instruction: glowll.InstructionOp) -> glowll.InstructionOp:
    """`instruction` (a copy a rewrite of `op` adds) with `op`'s node name, for the profiles."""
    if glow.NODE_NAME in op.attributes:
        instruction.attributes[glow.NODE_NAME] = op.attributes[glow.NODE_NAME]
    return instruction


def _replace_result(op: glowll.InstructionOp, output: SSAValue) -> None:
    """Erases `op` and its dest's alloc, whose readers read `output` instead."""
    dest = op.dest.owner
    op.detach()
    op.erase()
    dest.buffer.replace_all_uses_with(output)
    dest.detach()
    dest.erase()


def _next_instruction(op: glowll.InstructionOp) -> glowll.InstructionOp | None:
    following = op.next_op
    while following is not None and not isinstance(following, glowll.InstructionOp):
        following = following.next_op
    return following


def residual_add_of(op: glowll.ConvolutionOp, instructions, channels: int = STAGED_CHANNELS
                    ) -> glowll.ElementwiseOp | None:
    """The add right after `op` that alone reads its output, with an other operand of the add's
    shape and element size that dies there (a residual): `op` may be staged by output
    channels, each slice added over its own part of that operand."""
    add = _next_instruction(op)
    out_c = glow.shape_of(op.dest)[1]
    if (not isinstance(add, glowll.ElementwiseOp) or add.kind.data != "add" or len(add.inputs) != 2
            or op.dest not in add.inputs or not isinstance(op.dest.owner, glowll.AllocOp)
            or not isinstance(add.dest.owner, glowll.AllocOp) or op.group.value.data != 1 or glow.is_nhwc(op)
            or op.microkernel is not None or add.microkernel is not None or op.weight_scales is not None
            or op.residual is not None or op.lookup_table is not None or op.parameters is not None
            or out_c <= _slice_channels(out_c, channels)):
        return None
    other = add.inputs[1] if add.inputs[0] is op.dest else add.inputs[0]
    if (other is op.dest or other.type.get_shape() != add.dest.type.get_shape()
            or other.type.get_shape() != op.dest.type.get_shape()
            or other.type.element_type.compile_time_size != add.dest.type.element_type.compile_time_size
            or not _dies_at(other, add, instructions) or not _dies_at(op.dest, add, instructions)
            or glowll.root_buffer(other)[0] is glowll.root_buffer(op.input)[0]):
        return None
    weights = [op.filter, op.bias] + ([op.requantization] if op.requantization is not None else [])
    if not all(isinstance(w.owner, glowll.WeightOp) and w.owner.value is not None for w in weights):
        return None
    return add


def stage_residual(op: glowll.ConvolutionOp, add: glowll.ElementwiseOp, channels: int = STAGED_CHANNELS) -> None:
    """Replaces `op` and its residual `add` by slices of output channels: each slice convolved
    into a staging buffer, then added over its own channels of the residual, which becomes the
    add's output (a view of the residual's memory)."""
    block = op.parent_block()
    _, out_c, out_h, out_w = glow.shape_of(op.dest)
    step = _slice_channels(out_c, channels)
    other = add.inputs[1] if add.inputs[0] is op.dest else add.inputs[0]
    stage = glowll.AllocOp(_sliced_type(op.dest.type, 1, 0, step))
    output = glowll.TensorViewOp(other, add.dest.type, 0)
    block.insert_ops_before([stage, output], op)
    plane = out_h * out_w
    for start in range(0, out_c, step):
        part_of_other = glowll.TensorViewOp(other, _sliced_type(other.type, 1, start, step), start * plane)
        into = glowll.TensorViewOp(other, _sliced_type(add.dest.type, 1, start, step), start * plane)
        weights = {op.filter: _weight_slice(op.filter, 0, start, step), op.bias: _weight_slice(op.bias, 0, start, step)}
        if op.requantization is not None:
            weights[op.requantization] = _weight_slice(op.requantization, 1, start, step)
        block.insert_ops_before([part_of_other, into, *weights.values()], op)
        named = {"dest": stage.buffer, "filter": weights[op.filter].buffer, "bias": weights[op.bias].buffer}
        if op.requantization is not None:
            named["requantization"] = weights[op.requantization].buffer
        sources = [stage.buffer if source is op.dest else part_of_other.buffer for source in add.inputs]
        block.insert_ops_before([glowll.with_operands(op, **named),
                                 glowll.with_operands(add, dest=into.buffer, inputs=sources)], op)
    conv_dest, add_dest = op.dest.owner, add.dest.owner
    for erased in (add, op):
        erased.detach()
        erased.erase()
    add_dest.buffer.replace_all_uses_with(output.buffer)
    for buffer in (add_dest, conv_dest):
        buffer.detach()
        buffer.erase()
    _erase_unused_weights(block)


def _erase_unused_weights(block) -> None:
    for weight in [o for o in block.ops if isinstance(o, glowll.WeightOp)]:
        if not weight.buffer.uses:
            weight.detach()
            weight.erase()


def writes_over_input(op: glowll.ConvolutionOp) -> bool:
    """Whether `op`'s kernel may write its output over its input (see the module doc)."""
    if op.microkernel is None:
        return False
    from glowmlir.backends import microkernel

    kernel = microkernel(op.microkernel.data)
    answer = getattr(kernel.emitters(), "writes_over_input", None) if kernel is not None else None
    return answer is not None and answer(op)


def _is_narrowing_pointwise(op: glowll.ConvolutionOp) -> bool:
    """An NCHW 1x1 convolution (stride 1, unpadded, ungrouped, unpooled) to no more channels."""
    _, out_c, out_h, out_w = glow.shape_of(op.dest)
    _, in_c, in_h, in_w = glow.shape_of(op.input)
    return (op.pool is None and op.group.value.data == 1 and (out_h, out_w) == (in_h, in_w) and out_c <= in_c
            and not glow.is_nhwc(op) and tuple(op.strides.get_values()) == (1, 1)
            and not any(op.pads.get_values()))


def is_in_place_pointwise(op: glowll.ConvolutionOp) -> bool:
    return _is_narrowing_pointwise(op) and writes_over_input(op)


def kernels_stage_pointwise_pixels(options) -> bool:
    """Whether a backend serving `options.target` (a `PipelineOptions`) has a kernel that
    writes a pointwise convolution over its input (`writes_over_input` in its emitters),
    outside a size-first build (whose layers read their numbers from records, `parameters`,
    and stay out of place): there the pointwise layers are left to it, elsewhere they run
    in blocks of rows (`pointwise_rows`)."""
    from glowmlir.backends import backends

    if options.target is None or options.size_first:
        return False
    return any(hasattr(kernel.emitters(), "writes_over_input")
               for backend in backends() if backend.serves is not None and backend.serves(options.target)
               for kernel in backend.microkernels)


def _plane_parameters(op: glowll.ConvolutionOp) -> bool:
    """Whether the op's kernel was chosen with a parameter that may depend on its plane."""
    if op.microkernel is None:
        return False
    from glowmlir.backends import microkernel

    plane_free = microkernel(op.microkernel.data).plane_free_parameters
    return any(name not in plane_free for name in op.microkernel.kernel_parameters.data)


def row_block(op: glowll.ConvolutionOp, channels: int = STAGED_CHANNELS) -> int:
    """Rows a block of `pointwise_rows` takes: the most that divide the height with the input
    block no larger than `channels` whole input planes (0: `op` does not take blocks)."""
    n, in_c, height, _ = glow.shape_of(op.input)
    out_c = glow.shape_of(op.dest)[1]
    # One output channel: a block of rows is contiguous in the output, and glowll-share-buffers
    # would have the convolution write its stage straight there, over rows still to be read.
    # After kernel selection, a kernel chosen with parameters (`#glowll.microkernel<"k", {...}>`)
    # may depend on the plane: not sliced, unless they are the target's (`plane_free_parameters`).
    if n != 1 or out_c < 2 or not _is_narrowing_pointwise(op) or _plane_parameters(op):
        return 0
    rows = _slice_channels(height, max(1, channels * height // in_c))
    return rows if rows < height else 0


def pointwise_rows(op: glowll.ConvolutionOp, rows: int) -> None:
    """Replaces `op` by blocks of `rows` rows: each block's input rows gathered into a stage,
    convolved into a second stage, inserted over the output's rows, a view of the input."""
    block = op.parent_block()
    height = glow.shape_of(op.input)[2]
    gathered = glowll.AllocOp(_sliced_type(op.input.type, 2, 0, rows))
    computed = glowll.AllocOp(_sliced_type(op.dest.type, 2, 0, rows))
    output = glowll.TensorViewOp(op.input, op.dest.type, 0)
    block.insert_ops_before([gathered, computed, output], op)
    for top in range(0, height, rows):
        extract = glowll.ExtractTensorOp(gathered.buffer, op.input, starts=[0, 0, top, 0], steps=[1, 1, 1, 1])
        part = glowll.with_operands(op, dest=computed.buffer, input=gathered.buffer)
        insert = glowll.InsertTensorOp(output.buffer, computed.buffer, offsets=[0, 0, top, 0])
        block.insert_ops_before([_named_after(op, extract), part, _named_after(op, insert)], op)
    _replace_result(op, output.buffer)


def pointwise_in_place(op: glowll.ConvolutionOp) -> None:
    """`op` writes over its input: its output a view of the input's buffer, marked `in_place`."""
    block = op.parent_block()
    output = glowll.TensorViewOp(op.input, op.dest.type, 0)
    block.insert_op_before(output, op)
    dest = op.dest.owner
    dest.buffer.replace_all_uses_with(output.buffer)
    dest.detach()
    dest.erase()
    op.properties["in_place"] = UnitAttr()


def input_transposed_for(op: glowll.ConvolutionOp, instructions) -> glowll.TransposeOp | None:
    """The transpose of the network's NHWC input to NCHW that alone writes `op`'s input, a
    buffer no other instruction touches: `op` (batch 1, unpooled, undilated) may read the input's
    rows itself (`stem_rows`)."""
    root = op.input.owner
    touching = [other for other in instructions if op.input in other.operands]
    transpose = touching[0] if len(touching) == 2 and touching[1] is op else None
    if (not isinstance(root, glowll.AllocOp) or not isinstance(transpose, glowll.TransposeOp)
            or transpose.dest is not op.input or tuple(transpose.perm.get_values()) != (0, 3, 1, 2)
            or not isinstance(transpose.input.owner, glowll.PlaceholderOp) or glow.is_nhwc(op)
            or glow.shape_of(op.input)[0] != 1 or op.pool is not None or op.residual is not None
            or any(d != 1 for d in op.dilations.get_values()) or not isinstance(op.dest.owner, glowll.AllocOp)):
        return None
    return transpose


STEM_BLOCKS = 4
"""`stem_rows` reads the input in blocks of at most 1/STEM_BLOCKS of its rows (its cost, a
kernel call and a transpose a block, does not grow with the plan's smaller slices)."""


def stem_block(op: glowll.ConvolutionOp) -> int:
    """Output rows a block of `stem_rows` takes: the most that divide the height with their
    input rows (their windows') no more than 1/`STEM_BLOCKS` of the input's (0: the whole)."""
    out_h, in_h = glow.shape_of(op.dest)[2], glow.shape_of(op.input)[2]
    stride, window = op.strides.get_values()[0], glow.shape_of(op.filter)[2]
    rows = _slice_channels(out_h, max(1, (in_h // STEM_BLOCKS - window) // stride + 1))
    return rows if rows < out_h else 0


def stem_rows(op: glowll.ConvolutionOp, transpose: glowll.TransposeOp, rows: int) -> None:
    """Replaces `transpose` and `op` by blocks of `rows` output rows: each block's input rows
    (a view of the NHWC input) transposed into a stage, convolved (the pads of the image's top
    and bottom edges at the first and last blocks only) into a second stage, inserted into the
    output's rows. No whole-tensor copy of the input in the kernels' layout is made."""
    block = op.parent_block()
    _, channels, height, width = glow.shape_of(op.input)
    out_h = glow.shape_of(op.dest)[2]
    stride, window = op.strides.get_values()[0], glow.shape_of(op.filter)[2]
    top, left, bottom, right = op.pads.get_values()
    computed = glowll.AllocOp(_sliced_type(op.dest.type, 2, 0, rows))
    block.insert_op_before(computed, transpose)
    for first in range(0, out_h, rows):
        start, end = first * stride - top, (first + rows - 1) * stride - top + window  # the windows' rows
        low, high = max(0, start), min(height, end)
        nhwc = transpose.input.type
        source = glowll.TensorViewOp(transpose.input, _sliced_type(nhwc, 1, 0, high - low), low * width * channels)
        gathered = glowll.AllocOp(_sliced_type(op.input.type, 2, 0, high - low))
        part = glowll.with_operands(op, dest=computed.buffer, input=gathered.buffer)
        part.properties["pads"] = glow.ints([low - start, left, end - high, right])
        insert = glowll.InsertTensorOp(op.dest, computed.buffer, offsets=[0, 0, first, 0])
        copy = glowll.TransposeOp(gathered.buffer, source.buffer, perm=[0, 3, 1, 2])
        block.insert_ops_before([source, gathered, _named_after(op, copy), part, _named_after(op, insert)], op)
    whole = transpose.dest.owner
    for erased in (op, transpose, whole):
        erased.detach()
        erased.erase()


def convolve_in_place(function: glowll.FunctionOp, depthwise: bool, pointwise: bool,
                      channels: int = STAGED_CHANNELS, rows: bool = False) -> int:
    """The in-place rewrites of `function`'s convolutions; returns how many were made."""
    made = 0
    for op in [o for o in _instructions(function) if isinstance(o, glowll.ConvolutionOp)]:
        instructions = _instructions(function)
        if depthwise and (add := residual_add_of(op, instructions, channels)) is not None:
            stage_residual(op, add, channels)
            made += 1
        elif (depthwise and (transpose := input_transposed_for(op, instructions)) is not None
              and (block := stem_block(op))):
            stem_rows(op, transpose, block)
            made += 1
        elif not _own_buffers(op, instructions):
            continue
        elif depthwise and is_stageable_depthwise(op, channels):
            stage_depthwise(op, channels)
            made += 1
        elif pointwise and is_in_place_pointwise(op):
            pointwise_in_place(op)
            made += 1
        elif (rows or pointwise) and (block := row_block(op, channels)):
            pointwise_rows(op, block)
            made += 1
    return made


@dataclass(frozen=True)
class ConvolveInPlace(ModulePass):
    """Depthwise convolutions staged by channel slices over their input, convolutions
    before a residual add by output channel slices added over the residual and the network
    input's convolution reading its NHWC rows (`depthwise`, before kernel selection: the slices
    are selected as any convolution), pointwise ones
    in blocks of rows over their input (`pointwise_rows`, before kernel selection too, on a
    target whose kernels do not stage their pixels) or written over their input where their
    kernel stages its pixels (`pointwise`, after kernel selection)."""

    name = "glowll-convolve-in-place"
    depthwise: bool = True
    pointwise: bool = False
    staged_channels: int = STAGED_CHANNELS
    pointwise_rows: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in op.body.block.ops:
            if isinstance(function, glowll.FunctionOp):
                convolve_in_place(function, self.depthwise, self.pointwise, self.staged_channels,
                                  self.pointwise_rows)
