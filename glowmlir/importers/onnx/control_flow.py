"""Control flow whose course is known at compile time: a Loop is unrolled (its trip count and
condition must be constants), an If with a constant condition becomes the branch it takes."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from glowmlir.dialects import glow
from glowmlir.dialects.weights import dense_from_array
from glowmlir.importers.onnx.builders import concat_values, reshape_to
from glowmlir.importers.onnx.importer import OnnxImporter, Value, imports

MAX_UNROLLED_ITERATIONS = 4096
"""A Loop that would run longer is refused: each iteration is a copy of its body in the bundle."""


def _stacked(importer: OnnxImporter, values: list[Value], name: str) -> Value:
    """The per-iteration values of a scan output, stacked along a new first axis."""
    if not values:
        raise importer.error(f"scan output \"{name}\" produces an empty tensor (no iteration ran)")
    if all(isinstance(v, np.ndarray) for v in values):
        return np.stack(values)
    pieces = []
    for value in values:
        if isinstance(value, np.ndarray):
            value = importer.add(glow.ConstantOp(importer.names(name), dense_from_array(value)))
        pieces.append(reshape_to(importer, value, (1, *glow.shape_of(value))))
    return pieces[0] if len(pieces) == 1 else concat_values(importer, pieces, 0)


def _known_condition(importer: OnnxImporter, value: Value, what: str) -> bool:
    if isinstance(value, SSAValue):
        how = "unrolled" if importer.node.op_type == "Loop" else "replaced by the branch it takes"
        raise importer.error(f"{what} is computed at run time, which is not supported: the "
                             f"{importer.node.op_type} is {how} at compile time")
    return bool(np.asarray(value).reshape(-1)[0])


def _as_declared(graph_input, value: np.ndarray) -> np.ndarray:
    """A scalar loop input in the shape the body declares for it (some exporters declare [1];
    onnxruntime then hands over that shape)."""
    tensor_type = graph_input.type.tensor_type
    if tensor_type.HasField("shape") and all(d.dim_value == 1 for d in tensor_type.shape.dim):
        return value.reshape([1] * len(tensor_type.shape.dim))
    return value


@imports("Loop")
def _loop(importer: OnnxImporter, node, attrs):
    """The body imported once per iteration, carried values threaded through, scan outputs
    stacked."""
    body = attrs["body"]
    trip_name = node.input[0] if node.input else ""
    condition_name = node.input[1] if len(node.input) > 1 else ""
    trips = int(importer.required_known(trip_name, "the trip count").reshape(-1)[0]) if trip_name else None
    going = _known_condition(importer, importer.values[condition_name], "the condition") if condition_name else True
    if trips is None and not condition_name:
        raise importer.error("a Loop with neither a trip count nor a condition never ends")
    carried = [importer.values[name] for name in node.input[2:]]
    scans: list[list[Value]] = [[] for _ in body.output[1 + len(carried):]]
    iteration = 0
    while going and (trips is None or iteration < trips):
        if iteration == MAX_UNROLLED_ITERATIONS:
            raise importer.error(f"the Loop runs more than {MAX_UNROLLED_ITERATIONS} iterations, too many to unroll")
        counters = [_as_declared(declared, value) for declared, value in
                    zip(body.input, (np.array(iteration, np.int64), np.array(going)))]
        outputs = importer.import_subgraph(body, [*counters, *carried])
        going = _known_condition(importer, outputs[0], "the condition the body computes")
        carried = outputs[1:1 + len(carried)]
        for scan, value in zip(scans, outputs[1 + len(carried):]):
            scan.append(value)
        iteration += 1
    scan_outputs = body.output[1 + len(carried):]
    return carried + [_stacked(importer, scan, output.name) for scan, output in zip(scans, scan_outputs)]


@imports("If")
def _if(importer: OnnxImporter, node, attrs):
    condition = _known_condition(importer, importer.values[node.input[0]], "the condition")
    return importer.import_subgraph(attrs["then_branch" if condition else "else_branch"], [])
