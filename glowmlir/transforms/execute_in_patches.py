"""`glowll-execute-in-patches{cut=<layer> patches=<n>}`: the first, high-resolution layers of a
network run patch by patch (MCUNetV2's patch-based inference), so that only one patch's
intermediate buffers are live at a time.

The *stage* is the cut instruction (named by its `name` attribute, or by its index among the
function's instructions) and every instruction it depends on. The cut's output is split into
an n x n grid of spatial patches; for each patch, every instruction of the stage runs on the
sub-region of its output the patch needs — its receptive field, the halo between neighbouring
patches recomputed — and the cut writes its part of the whole output buffer:

    glowll.extract_tensor %in_p, %input {starts = ...}      the patch's part of the stage input
    glowll.convolution %a_p, %in_p, ... {pads = ...}        each layer on the patch's region
    ...
    glowll.convolution %cut_p, %b_p, ...
    glowll.insert_tensor %cut, %cut_p {offsets = ...}       into the whole cut output

The kernels are the whole-tensor ones, run on smaller buffers: a window's pads are kept only
at the true borders of the image, each side's pad being what the whole-tensor kernel reads
there; at a patch border the halo is real data, so the pads there are 0. Each patch's region
of a layer is therefore computed exactly as the whole-tensor layer computes it (the same bits).
A buffer two layers of the stage read at different regions (a residual branch) is computed
over their union, and each reader takes its region with an `extract_tensor`.

It runs on the glowll IR right after `lower-glow-to-glowll`: there the buffers and the order of
the instructions are explicit, so the memory plan (`glowll-allocate-memory`) sees each patch's
buffers live only while that patch runs, and the kernel selection passes that follow choose the
kernels of each patch's layers as they do for any layer. The glow graph has no order: patch
by patch would be a scheduling constraint every graph pass would have to keep.

The stage's instructions are convolutions (with a fused activation, pool or residual),
max and average pools, elementwise ops and transposes (the layout change of the input); a
buffer of the stage other than the cut's output must be read by the stage alone.
`patched(module, cut, patches)` gives the transformed copy of a module and the extra
multiply-accumulates the halos cost; `patch_cost(cut, patches)` what a plan would cost and
hold without rewriting anything (for a planner choosing the cut and the patches, `plan_choice`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import MemRefType, ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from glowmlir.dialects import glow, glowll
from glowmlir.errors import GlowError

Region = tuple[tuple[int, int], ...]
"""[lo, hi) along every axis of a buffer."""

WINDOWED = (glowll.ConvolutionOp, glowll.MaxPoolOp, glowll.AvgPoolOp)
PATCHABLE = (*WINDOWED, glowll.ElementwiseOp, glowll.TransposeOp)


def _fail(message: str) -> None:
    raise GlowError(f"glowll-execute-in-patches: {message}")


def _name(op: Operation) -> str:
    name = op.attributes.get("name")
    return name.data if name is not None else op.name


def spatial_axes(op: Operation) -> tuple[int, int]:
    """The height and width axes of a windowed instruction's buffers (NCHW, or NHWC)."""
    return (1, 2) if glow.is_nhwc(op) else (2, 3)


def whole(value: SSAValue) -> Region:
    return tuple((0, size) for size in glow.shape_of(value))


def _shape(region: Region) -> tuple[int, ...]:
    return tuple(hi - lo for lo, hi in region)


def _union(a: Region | None, b: Region) -> Region:
    return b if a is None else tuple((min(x0, y0), max(x1, y1)) for (x0, x1), (y0, y1) in zip(a, b, strict=True))


def _window_input(out: tuple[int, int], kernel: int, stride: int, pad: int, dilation: int,
                  extent: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """The input rows [lo, hi) a window reads for output rows `out`, within [0, extent), and
    the pads (before, after) standing for what lies outside."""
    lo = out[0] * stride - pad
    hi = (out[1] - 1) * stride - pad + (kernel - 1) * dilation + 1
    clipped = (max(lo, 0), min(hi, extent))
    return clipped, (clipped[0] - lo, hi - clipped[1])


def _through_window(out: Region, axes: tuple[int, int], input_shape: Sequence[int], kernel: Sequence[int],
                    strides: Sequence[int], pads: Sequence[int],
                    dilations: Sequence[int] = (1, 1)) -> tuple[Region, list[int]]:
    """The input region of a window whose output region is `out` (same rank; the non-spatial
    axes: the whole input's), and the window's pads (top, left, bottom, right) for that region."""
    region = [(0, size) for size in input_shape]
    new_pads = [0, 0, 0, 0]
    for i, axis in enumerate(axes):
        region[axis], (new_pads[i], new_pads[i + 2]) = _window_input(
            out[axis], kernel[i], strides[i], pads[i], dilations[i], input_shape[axis])
    return tuple(region), new_pads


@dataclass
class _Step:
    """One stage instruction's needs for one patch: its sources' regions and its new window."""

    sources: dict[int, Region]  # operand index -> region read
    properties: dict[str, list[int]]  # pads (and pool_pads) for the patch
    convolved: Region | None = None  # a convolution's own output region (before a fused pool)


def _needs(op: Operation, out: Region) -> _Step:
    """What `op` reads to write the region `out` of its dest."""
    if isinstance(op, glowll.ConvolutionOp):
        axes = spatial_axes(op)
        properties = {}
        if op.pool is not None:  # out is a region of the pooled result: first the convolution's own output
            convolved = glow.convolution_shape(op)
            out, properties["pool_pads"] = _through_window(
                out, axes, convolved, op.pool_kernel.get_values(), op.pool_strides.get_values(),
                op.pool_pads.get_values())
        filter_shape = glow.shape_of(op.filter) if op.filter_shape is None else op.filter_shape.get_values()
        kernel = filter_shape[1:3] if glow.is_nhwc(op) else filter_shape[2:4]
        region, properties["pads"] = _through_window(out, axes, glow.shape_of(op.input), kernel,
                                                     op.strides.get_values(), op.pads.get_values(),
                                                     op.dilations.get_values())
        sources = {op.operands.index(op.input): region}
        if op.residual is not None:
            sources[op.operands.index(op.residual)] = out
        return _Step(sources, properties, out)
    if isinstance(op, glowll.MaxPoolOp | glowll.AvgPoolOp):
        region, pads = _through_window(out, spatial_axes(op), glow.shape_of(op.input), op.kernel.get_values(),
                                       op.strides.get_values(), op.pads.get_values())
        return _Step({1: region}, {"pads": pads})
    if isinstance(op, glowll.TransposeOp):
        perm = op.perm.get_values()
        region = [None] * len(perm)
        for axis, source_axis in enumerate(perm):
            region[source_axis] = out[axis]
        return _Step({1: tuple(region)}, {})
    assert isinstance(op, glowll.ElementwiseOp)
    sources = {}
    for index, value in enumerate(op.inputs, start=1):  # broadcast axes (size 1 where dest's is not) whole
        shape = glow.shape_of(value)
        offset = len(out) - len(shape)
        sources[index] = tuple((0, 1) if size == 1 and out[offset + axis] != (0, 1) else out[offset + axis]
                               for axis, size in enumerate(shape))
    return _Step(sources, {})


def find_cut(function: glowll.FunctionOp, cut: str) -> glowll.InstructionOp:
    """The instruction named `cut`, or the `cut`-th instruction (from 0) of the function."""
    instructions = [op for op in function.body.block.ops if isinstance(op, glowll.InstructionOp)]
    named = [op for op in instructions if _name(op) == cut]
    if named:
        return named[-1]
    if cut.isdigit() and int(cut) < len(instructions):
        return instructions[int(cut)]
    _fail(f"cut=\"{cut}\": no instruction of that name, nor an index below {len(instructions)}")


def stage_of(cut: glowll.InstructionOp) -> list[glowll.InstructionOp]:
    """The cut and the instructions it depends on, in program order; refuses a stage it
    cannot run patch by patch."""
    block = cut.parent
    writers: dict[SSAValue, list[glowll.InstructionOp]] = {}
    for op in block.ops:
        if isinstance(op, glowll.InstructionOp):
            writers.setdefault(op.dest, []).append(op)
    stage, pending = {cut}, [cut]
    while pending:
        op = pending.pop()
        if not isinstance(op, PATCHABLE):
            _fail(f"\"{_name(op)}\" ({op.name}) cannot run on a patch (convolutions, pools, elementwise ops and "
                  f"transposes can)")
        for source in op.sources:
            for writer in writers.get(source, []):
                if writer not in stage:
                    stage.add(writer)
                    pending.append(writer)
    for op in stage:
        if len(writers[op.dest]) > 1 or op.dest in op.sources:
            _fail(f"\"{_name(op)}\" writes a buffer another instruction writes too (in place)")
        if op is not cut:
            if not isinstance(op.dest.owner, glowll.AllocOp):
                _fail(f"\"{_name(op)}\" writes {op.dest.owner.name}, not a scratch buffer of its own")
            readers = {use.operation for use in op.dest.uses} - {op}
            if outside := [reader for reader in readers if reader not in stage]:
                _fail(f"\"{_name(op)}\"'s output is read after the cut (by \"{_name(outside[0])}\"): only the "
                      f"cut's output may be")
    if glow.shape_of(cut.dest) and len(glow.shape_of(cut.dest)) != 4:
        _fail(f"cut \"{_name(cut)}\": a 4-D output to split into patches, not {list(glow.shape_of(cut.dest))}")
    return sorted(stage, key=block.get_operation_index)


def patch_regions(cut: glowll.InstructionOp, patches: int) -> list[Region]:
    """The n x n grid of regions of the cut's output, row by row (even splits of its height and width)."""
    shape = glow.shape_of(cut.dest)
    axes = spatial_axes(cut) if isinstance(cut, WINDOWED) else (2, 3)
    height, width = (shape[axis] for axis in axes)
    if not 1 <= patches <= min(height, width):
        _fail(f"patches={patches}: between 1 and {min(height, width)} (the cut's output is {height}x{width})")

    def bounds(extent: int) -> list[tuple[int, int]]:
        edges = [round(i * extent / patches) for i in range(patches + 1)]
        return list(zip(edges, edges[1:], strict=False))

    regions = []
    for rows in bounds(height):
        for columns in bounds(width):
            region = [(0, size) for size in shape]
            region[axes[0]], region[axes[1]] = rows, columns
            regions.append(tuple(region))
    return regions


def _buffer(region: Region, like: SSAValue, before: Operation) -> SSAValue:
    alloc = glowll.AllocOp(MemRefType(like.type.element_type, list(_shape(region))))
    Rewriter.insert_op(alloc, InsertPoint.before(before))
    return alloc.buffer


def _patch_steps(stage: list[glowll.InstructionOp], region: Region
                 ) -> tuple[dict[SSAValue, Region], dict[Operation, _Step]]:
    """What each stage instruction computes and reads for the patch `region` of the cut's
    output: the region of every buffer the patch needs, and each instruction's step."""
    needed: dict[SSAValue, Region] = {stage[-1].dest: region}
    steps: dict[Operation, _Step] = {}
    for op in reversed(stage):
        steps[op] = step = _needs(op, needed[op.dest])
        for operand, source_region in step.sources.items():
            needed[op.operands[operand]] = _union(needed.get(op.operands[operand]), source_region)
    return needed, steps


def _emit_patch(stage: list[glowll.InstructionOp], region: Region, index: int, before: Operation) -> None:
    """The stage's instructions for the patch `region` of the cut's output, ahead of `before`."""
    cut = stage[-1]
    needed, steps = _patch_steps(stage, region)
    patch_buffers: dict[SSAValue, SSAValue] = {}  # a stage buffer -> its patch's buffer (over needed[...])

    def read(value: SSAValue, wanted: Region) -> SSAValue:
        """`value`'s `wanted` region as a buffer of its own (the patch buffer itself if it is just that)."""
        have = needed[value] if value in patch_buffers else whole(value)
        source = patch_buffers.get(value, value)
        if have == wanted:
            return source
        part = _buffer(wanted, value, before)
        Rewriter.insert_op(glowll.ExtractTensorOp(part, source, starts=[w[0] - h[0] for w, h in zip(wanted, have)],
                                                  steps=[1] * len(wanted)), InsertPoint.before(before))
        return part

    for op in stage:
        step = steps[op]
        if isinstance(op, glowll.TransposeOp) and op.input not in patch_buffers and op is not cut \
                and _gathers_planes(op):
            patch_buffers[op.dest] = _buffer(needed[op.dest], op.dest, before)
            _gather_planes(op, step.sources[1], patch_buffers[op.dest], before)
            continue
        operands = list(op.operands)
        for operand, source_region in step.sources.items():
            operands[operand] = read(op.operands[operand], source_region)
        whole_output = op is cut and needed[op.dest] == whole(op.dest)
        operands[0] = op.dest if whole_output else _buffer(needed[op.dest], op.dest, before)
        patch_buffers[op.dest] = operands[0]
        patch_op = op.clone()
        patch_op.operands = operands
        for key, values in step.properties.items():
            patch_op.properties[key] = glow.ints(values)
        if "name" in op.attributes:
            patch_op.attributes["name"] = StringAttr(f"{_name(op)}_patch{index}")
        Rewriter.insert_op(patch_op, InsertPoint.before(before))
        if op is cut and not whole_output:
            Rewriter.insert_op(glowll.InsertTensorOp(op.dest, operands[0], offsets=[lo for lo, _ in region]),
                               InsertPoint.before(before))


def _gathers_planes(op: glowll.TransposeOp) -> bool:
    """A transpose keeping the order of its last two axes (NHWC to NCHW): each of its planes
    is a strided part of its input."""
    perm = op.perm.get_values()
    return len(perm) >= 2 and perm[-2] < perm[-1]


def _gather_planes(op: glowll.TransposeOp, source: Region, dest: SSAValue, before: Operation) -> None:
    """The transpose of the `source` region of a stage input, straight from the whole input:
    one `extract_tensor` per plane of dest (a view of it), so that no copy of the patch's input
    in the input's layout is made first."""
    perm = op.perm.get_values()
    shape = glow.shape_of(dest)
    plane = shape[-2] * shape[-1]
    for index, outer in enumerate(np.ndindex(*shape[:-2])):
        view_shape, starts = [1] * len(perm), [lo for lo, _ in source]
        for axis, position in enumerate(outer):
            starts[perm[axis]] += position
        view_shape[perm[-2]], view_shape[perm[-1]] = shape[-2], shape[-1]
        view = glowll.TensorViewOp(dest, MemRefType(dest.type.element_type, view_shape), index * plane)
        Rewriter.insert_op(view, InsertPoint.before(before))
        Rewriter.insert_op(glowll.ExtractTensorOp(view.buffer, op.input, starts=starts, steps=[1] * len(perm)),
                           InsertPoint.before(before))


def execute_in_patches(function: glowll.FunctionOp, cut: str, patches: int) -> None:
    """Rewrites `function` so that the stage up to `cut` runs over an n x n grid of patches."""
    cut_op = find_cut(function, cut)
    stage = stage_of(cut_op)
    for index, region in enumerate(patch_regions(cut_op, patches)):
        _emit_patch(stage, region, index, cut_op)
    for op in reversed(stage):
        buffer = op.dest
        Rewriter.erase_op(op)
        if op is not cut_op and not buffer.uses:
            Rewriter.erase_op(buffer.owner)


def convolution_macs(module: ModuleOp) -> int:
    """The multiply-accumulates of the module's glowll convolutions (before any fused pool)."""
    return sum(layer_macs(op) for op in module.walk() if isinstance(op, glowll.ConvolutionOp))


def layer_macs(op: glowll.ConvolutionOp) -> int:
    """The multiply-accumulates of one glowll convolution (before any fused pool)."""
    return int(np.prod(glow.convolution_shape(op))) * _filter_size(op)


def _filter_size(op: glowll.ConvolutionOp) -> int:
    """The multiply-accumulates of one output element."""
    filter_shape = glow.shape_of(op.filter) if op.filter_shape is None else op.filter_shape.get_values()
    return int(np.prod(filter_shape[1:]))


def _bytes(value: SSAValue, region: Region) -> int:
    return int(np.prod(_shape(region))) * value.type.element_type.compile_time_size


@dataclass(frozen=True)
class PatchCost:
    """What running a stage patch by patch costs and holds, from the regions alone (no rewriting;
    the planner weighs many (cut, patches) with it): the multiply-accumulates the halos add,
    the instructions the patches run beyond one patch's, the bytes of every patch's regions copied (the
    parts extracted from whole buffers, the cut's parts inserted), and the bytes live while
    the stage runs: the cut's whole output and the largest input + output regions of one
    patch's instruction (an estimate: the kernels chosen later may hold a buffer less)."""

    extra_macs: int
    extra_instructions: int
    copied_bytes: int
    stage_bytes: int


def patch_cost(cut: glowll.InstructionOp, patches: int) -> PatchCost:
    """The cost of `glowll-execute-in-patches` at `cut` with `patches` per side (the stage is
    refused as the pass refuses it)."""
    stage = stage_of(cut)
    macs = sum(int(np.prod(glow.convolution_shape(op))) * _filter_size(op)
               for op in stage if isinstance(op, glowll.ConvolutionOp))
    cut_bytes = glowll.byte_size(cut.dest.type)
    patch_macs = copied = live = 0
    written = {op.dest for op in stage}
    regions = patch_regions(cut, patches)
    for region in regions:
        needed, steps = _patch_steps(stage, region)
        for op in stage:
            step = steps[op]
            if step.convolved is not None:
                patch_macs += int(np.prod(_shape(step.convolved))) * _filter_size(op)
            reads = 0
            gathered = (isinstance(op, glowll.TransposeOp) and op.input not in written and op is not cut
                        and _gathers_planes(op))  # planes gathered straight from the whole input
            for operand, source_region in ({} if gathered else step.sources).items():
                value = op.operands[operand]
                if not isinstance(value.owner, glowll.AllocOp) and source_region == whole(value):
                    continue  # a whole stage input (the network's input) read as it is
                reads += _bytes(value, source_region)
                if source_region != (needed[value] if value in written else whole(value)):
                    copied += _bytes(value, source_region)
            writes = _bytes(op.dest, needed[op.dest])
            if op is cut:
                copied += writes
            live = max(live, cut_bytes + reads + (writes if op is not cut or len(regions) > 1 else 0))
    return PatchCost(patch_macs - macs, len(stage) * (len(regions) - 1), copied, live)


@dataclass(frozen=True)
class PatchedModule:
    """A module whose first stage runs patch by patch, and the MACs the halos add."""

    module: ModuleOp
    extra_macs: int
    macs: int  # of the module before patching


def patched(module: ModuleOp, cut: str, patches: int) -> PatchedModule:
    """A copy of `module` (glowll, as `lower-glow-to-glowll` leaves it) whose stage up to `cut`
    runs over `patches` x `patches` patches; `module` itself is left as it is."""
    copy = module.clone()
    ExecuteInPatches(cut, patches).apply(Context(), copy)
    before = convolution_macs(module)
    return PatchedModule(copy, convolution_macs(copy) - before, before)


@dataclass(frozen=True)
class ExecuteInPatches(ModulePass):
    """The stage up to the instruction `cut` (name or index) runs over `patches` x `patches`
    spatial patches of the cut's output."""

    name = "glowll-execute-in-patches"

    cut: str | int = ""
    patches: int = 2

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.cut == "":
            _fail("give the cut: cut=<instruction name or index>")
        for function in op.body.block.ops:
            if isinstance(function, glowll.FunctionOp):
                execute_in_patches(function, str(self.cut), self.patches)
