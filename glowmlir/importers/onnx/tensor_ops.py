"""Ops that move, select or reshape data: Reshape, Transpose, Concat, Slice, Split, Pad,
Expand, Gather, Shape, ..."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import i1
from xdsl.ir import SSAValue

from glowmlir.dialects import glow
from glowmlir.dialects.weights import dense_from_array
from glowmlir.importers.onnx.builders import binary, concat_values, like, reshape_to, slice_axis
from glowmlir.importers.onnx.importer import OnnxImporter, imports


@imports("Identity", "Dropout")
def _identity(importer: OnnxImporter, node, attrs):
    if node.op_type == "Dropout" and len(node.input) > 2 and node.input[2]:
        training = importer.known(node.input[2])
        if training is None or training.any():
            raise importer.error("training-mode Dropout is not supported (inference only)")
    value = importer.values[node.input[0]]
    shape = value.shape if isinstance(value, np.ndarray) else glow.shape_of(value)
    return [value, np.ones(shape, bool)]  # at inference Dropout keeps everything


@imports("Reshape")
def _reshape(importer: OnnxImporter, node, attrs):
    x = importer.tensor(node.input[0])
    target = attrs["shape"] if importer.opset < 5 else importer.required_known(node.input[1], "the shape")
    in_shape = glow.shape_of(x)
    shape = [in_shape[i] if d == 0 and not attrs.get("allowzero", 0) else int(d) for i, d in enumerate(target)]
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1]))
        shape[shape.index(-1)] = int(np.prod(in_shape)) // max(known, 1)
    if int(np.prod(shape)) != int(np.prod(in_shape)):
        raise importer.error(f"cannot reshape {list(in_shape)} to {list(target)}")
    return [reshape_to(importer, x, shape)]


@imports("Flatten")
def _flatten(importer: OnnxImporter, node, attrs):
    x = importer.tensor(node.input[0])
    shape = glow.shape_of(x)
    axis = importer.axis(attrs.get("axis", 1), len(shape), past_the_end=True)
    return [reshape_to(importer, x, (int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))))]


@imports("Squeeze", "Unsqueeze")
def _squeeze(importer: OnnxImporter, node, attrs):
    x = importer.tensor(node.input[0])
    shape = list(glow.shape_of(x))
    if importer.opset < 13:
        axes = attrs.get("axes")
    else:
        axes = importer.required_known(node.input[1], "axes") if len(node.input) > 1 and node.input[1] else None
    if node.op_type == "Squeeze":
        axes = [a % len(shape) for a in axes] if axes is not None else [i for i, d in enumerate(shape) if d == 1]
        new_shape = [d for i, d in enumerate(shape) if i not in axes]
    else:
        rank = len(shape) + len(axes)
        new_shape = shape
        for axis in sorted(int(a) % rank for a in axes):
            new_shape.insert(axis, 1)
    return [reshape_to(importer, x, new_shape)]


@imports("Transpose")
def _transpose(importer: OnnxImporter, node, attrs):
    x = importer.tensor(node.input[0])
    shape = glow.shape_of(x)
    return [importer.add(glow.transpose(x, list(attrs.get("perm", range(len(shape) - 1, -1, -1)))))]


@imports("Concat")
def _concat(importer: OnnxImporter, node, attrs):
    values = [importer.tensor(name) for name in node.input]
    return [concat_values(importer, values, importer.axis(attrs["axis"], len(glow.shape_of(values[0]))))]


@imports("Slice")
def _slice(importer: OnnxImporter, node, attrs):
    x = importer.tensor(node.input[0])
    shape = glow.shape_of(x)

    def operand(index, what):
        return (importer.required_known(node.input[index], what) if len(node.input) > index and node.input[index]
                else None)

    if importer.opset < 10:
        starts, ends, axes, steps = attrs["starts"], attrs["ends"], attrs.get("axes"), None
    else:
        starts, ends, axes, steps = operand(1, "starts"), operand(2, "ends"), operand(3, "axes"), operand(4, "steps")
    axes = list(range(len(starts))) if axes is None else [int(a) % len(shape) for a in axes]
    steps = [1] * len(starts) if steps is None else [int(s) for s in steps]
    begin, step, out = [0] * len(shape), [1] * len(shape), list(shape)
    for axis, start, end, s in zip(axes, starts, ends, steps):
        if s < 1:
            raise importer.error("Slice with a negative step is not supported")
        size = shape[axis]
        start, end = (int(v) + size if v < 0 else int(v) for v in (max(start, -size), max(end, -size - 1)))
        start, end = min(max(start, 0), size), min(max(end, 0), size)
        begin[axis], step[axis], out[axis] = start, s, max(0, -(-(end - start) // s))
    if 0 in out:
        raise importer.error("Slice produces an empty tensor")
    return [importer.add(glow.SliceOp(x, begin, out, step))]


def _pad_by_copies(importer: OnnxImporter, x: SSAValue, pads: list[int], mode: str) -> SSAValue:
    """Edge, reflect and wrap padding as a Concat of slices of the input, axis by axis."""
    rank = len(glow.shape_of(x))
    for axis in range(rank):
        begin, end = pads[axis], pads[axis + rank]
        size = glow.shape_of(x)[axis]
        if not begin and not end:
            continue
        if mode == "reflect" and max(begin, end) >= size:
            raise importer.error(f"reflect padding of {max(begin, end)} needs more than {size} elements")
        if mode == "wrap":
            left = [slice_axis(importer, x, axis, size - begin, size)] if begin else []
            right = [slice_axis(importer, x, axis, 0, end)] if end else []
        else:  # one element per padded position: the edge, or its mirror image
            left_index = (lambda k: 0) if mode == "edge" else (lambda k: begin - k)
            right_index = (lambda k: size - 1) if mode == "edge" else (lambda k: size - 2 - k)
            left = [slice_axis(importer, x, axis, left_index(k), left_index(k) + 1) for k in range(begin)]
            right = [slice_axis(importer, x, axis, right_index(k), right_index(k) + 1) for k in range(end)]
        x = concat_values(importer, [*left, x, *right], axis)
    return x


@imports("Pad")
def _pad(importer: OnnxImporter, node, attrs):
    x = importer.tensor(node.input[0])
    mode = attrs.get("mode", "constant")
    if mode not in ("constant", "edge", "reflect", "wrap"):
        raise importer.error(f"Pad mode \"{mode}\" is not supported")
    if importer.opset < 11:
        pads, value = list(attrs["pads"]), attrs.get("value", 0.0)
    else:
        pads = [int(p) for p in importer.required_known(node.input[1], "pads")]
        value = importer.known(node.input[2]) if len(node.input) > 2 and node.input[2] else 0.0
        if len(node.input) > 3 and node.input[3]:
            raise importer.error("Pad with axes is not supported")
    if min(pads) < 0:  # a negative pad crops: a slice first, then the positive pads
        rank = len(glow.shape_of(x))
        shape = glow.shape_of(x)
        begin = [max(0, -p) for p in pads[:rank]]
        size = [shape[d] - begin[d] - max(0, -pads[rank + d]) for d in range(rank)]
        if min(size) < 1:
            raise importer.error(f"pads {pads} crop all of {list(shape)}")
        x = importer.add(glow.SliceOp(x, begin, size))
        pads = [max(0, p) for p in pads]
    if not any(pads):
        return [x]
    if mode != "constant":
        return [_pad_by_copies(importer, x, pads, mode)]
    return [importer.add(glow.PadOp(x, pads, float(np.asarray(value).reshape(-1)[0])))]


@imports("Tile")
def _tile(importer: OnnxImporter, node, attrs):
    """Tile with constant repeats: the input seen as [1, d0, 1, d1, ...], broadcast to
    [r0, d0, r1, d1, ...] and reshaped to [r0 d0, r1 d1, ...]."""
    x = importer.tensor(node.input[0])
    shape = glow.shape_of(x)
    repeats = [int(r) for r in importer.required_known(node.input[1], "repeats").reshape(-1)]
    if len(repeats) != len(shape) or min(repeats, default=1) < 1:
        raise importer.error(f"repeats {repeats} must hold one positive count per axis of {list(shape)}")
    spread = reshape_to(importer, x, [d for size in shape for d in (1, size)])
    tiled = broadcast_to(importer, spread, [d for count, size in zip(repeats, shape) for d in (count, size)])
    return [reshape_to(importer, tiled, [count * size for count, size in zip(repeats, shape)])]


@imports("DepthToSpace", "SpaceToDepth")
def _depth_to_space(importer: OnnxImporter, node, attrs):
    """Blocks of channels moved into space (or back): a reshape to rank 6, a transpose and a
    reshape, with the orders ONNX defines (the DCR and CRD modes)."""
    x = importer.tensor(node.input[0])
    if len(glow.shape_of(x)) != 4:
        raise importer.error(f"{node.op_type} needs a rank-4 NCHW input")
    n, c, h, w = glow.shape_of(x)
    block = int(attrs["blocksize"])
    if node.op_type == "SpaceToDepth":
        if h % block or w % block:
            raise importer.error(f"blocksize {block} does not divide the spatial size {h}x{w}")
        split = (n, c, h // block, block, w // block, block)
        perm = (0, 1, 3, 5, 2, 4) if attrs.get("mode", "DCR") == "CRD" else (0, 3, 5, 1, 2, 4)
        result = (n, c * block * block, h // block, w // block)
    else:
        if c % (block * block):
            raise importer.error(f"blocksize {block} squared does not divide the {c} channels")
        depth = c // (block * block)
        if attrs.get("mode", "DCR") == "CRD":
            split, perm = (n, depth, block, block, h, w), (0, 1, 4, 2, 5, 3)
        else:
            split, perm = (n, block, block, depth, h, w), (0, 3, 4, 1, 5, 2)
        result = (n, depth, h * block, w * block)
    moved = importer.add(glow.transpose(reshape_to(importer, x, split), list(perm)))
    return [reshape_to(importer, moved, result)]


@imports("Split")
def _split(importer: OnnxImporter, node, attrs):
    """Split becomes one Slice per output."""
    x = importer.tensor(node.input[0])
    shape = glow.shape_of(x)
    axis = attrs.get("axis", 0) % len(shape)
    outputs = [o for o in node.output]
    if importer.opset < 13 and "split" in attrs:
        sizes = list(attrs["split"])
    elif importer.opset >= 13 and len(node.input) > 1 and node.input[1]:
        sizes = [int(v) for v in importer.required_known(node.input[1], "split")]
    else:
        parts = attrs.get("num_outputs", len(outputs))
        chunk = -(-shape[axis] // parts)
        sizes = [min(chunk, shape[axis] - i * chunk) for i in range(parts)]
    if sum(sizes) != shape[axis] or len(sizes) != len(outputs):
        raise importer.error(f"split sizes {sizes} do not divide axis {axis} of {list(shape)}")
    if 0 in sizes:
        raise importer.error("Split into an empty part is not supported")
    results, start = [], 0
    for size in sizes:
        results.append(slice_axis(importer, x, axis, start, start + size))
        start += size
    return results


@imports("Trilu")
def _trilu(importer: OnnxImporter, node, attrs):
    """The upper (or lower) triangle of the last two dimensions: a select with a constant mask."""
    x = importer.tensor(node.input[0])
    k = int(importer.required_known(node.input[1], "k")) if len(node.input) > 1 and node.input[1] else 0
    rows, columns = glow.shape_of(x)[-2:]
    diagonal = np.arange(columns)[None, :] - np.arange(rows)[:, None]
    mask = diagonal >= k if attrs.get("upper", 1) else diagonal <= k
    kept = importer.add(glow.ConstantOp(importer.names(f"{node.output[0]}_mask"), dense_from_array(mask)))
    zeros = importer.add(glow.SplatOp(0.0, like(x, [1])))
    return [importer.add(glow.SelectOp(kept, x, zeros))]


@imports("Expand")
def _expand(importer: OnnxImporter, node, attrs):
    x = importer.tensor(node.input[0])
    target = importer.required_known(node.input[1], "the shape")
    return [broadcast_to(importer, x, glow.broadcast_shapes(glow.shape_of(x), [int(d) for d in target]))]


def broadcast_to(importer: OnnxImporter, x: SSAValue, shape) -> SSAValue:
    """x broadcast to `shape` (numpy's rules): x combined with a splat of the neutral value."""
    if tuple(shape) == glow.shape_of(x):
        return x
    zeros = importer.add(glow.SplatOp(0.0, like(x, shape)))
    combine = glow.OrOp if x.type.element_type == i1 else glow.AddOp  # booleans: or with false
    return binary(importer, combine, x, zeros)


@imports("Gather")
def _gather(importer: OnnxImporter, node, attrs):
    """Gather with constant indices: one Slice per index, concatenated; with run-time
    indices, a `glow.gather`."""
    x = importer.tensor(node.input[0])
    shape = glow.shape_of(x)
    axis = importer.axis(attrs.get("axis", 0), len(shape))
    indices = importer.known(node.input[1])
    if indices is None:
        index_value = importer.tensor(node.input[1])
        return [importer.add(glow.GatherOp(x, index_value, axis))]
    glow.check_indices(indices, shape[axis])
    if indices.size == 0:
        raise importer.error("no indices: the result would be an empty tensor, which a bundle cannot hold")
    flat = [int(i) % shape[axis] for i in indices.reshape(-1)]
    pieces = [slice_axis(importer, x, axis, index, index + 1) for index in flat]
    gathered = pieces[0] if len(pieces) == 1 else concat_values(importer, pieces, axis)
    result_shape = list(shape[:axis]) + list(indices.shape) + list(shape[axis + 1:])
    return [reshape_to(importer, gathered, result_shape)]


@imports("Size")
def _size(importer: OnnxImporter, node, attrs):
    return [np.array(int(np.prod(glow.shape_of(importer.tensor(node.input[0])))), np.int64)]


@imports("ScatterND")
def _scatter_nd(importer: OnnxImporter, node, attrs):
    data, indices, updates = (importer.tensor(name) for name in node.input[:3])
    return [importer.add(glow.ScatterNDOp(data, indices, updates, attrs.get("reduction", "none")))]


@imports("GatherElements")
def _gather_elements(importer: OnnxImporter, node, attrs):
    x, indices = importer.tensor(node.input[0]), importer.tensor(node.input[1])
    axis = attrs.get("axis", 0) % len(glow.shape_of(x))
    return [importer.add(glow.GatherElementsOp(x, indices, axis))]


@imports("Shape")
def _shape(importer: OnnxImporter, node, attrs):
    shape = np.array(glow.shape_of(importer.tensor(node.input[0])), np.int64)
    start, end = attrs.get("start", 0), attrs.get("end", len(shape))
    return [shape[start:end]]
