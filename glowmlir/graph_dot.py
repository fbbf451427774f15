"""`-dump-graph-DAG`: a `glow.function` as a Graphviz DOT digraph."""

from __future__ import annotations

from xdsl.ir import Operation

from glowmlir.dialects import glow


def _label(op: Operation) -> str:
    kind = op.name.removeprefix("glow.")
    if isinstance(op, glow.PlaceholderOp | glow.ConstantOp | glow.SaveOp):
        kind += f"\\n{op.name_.data}"
    if op.results:
        kind += "\\n" + "x".join(str(d) for d in glow.shape_of(op.results[0]))
    return kind


def graph_dot(module: Operation) -> str:
    """One node per op (placeholders, constants and saves included), one edge per use."""
    lines = ["digraph DAG {", "  rankdir=TB;"]
    ids: dict[Operation, str] = {}
    for function in (op for op in module.walk() if isinstance(op, glow.FunctionOp)):
        for op in function.body.block.ops:
            ids[op] = f"n{len(ids)}"
            shape = "box" if isinstance(op, glow.ConstantOp | glow.PlaceholderOp | glow.SaveOp) else "ellipse"
            lines.append(f'  {ids[op]} [label="{_label(op)}", shape={shape}];')
            for operand in op.operands:
                lines.append(f"  {ids[operand.owner]} -> {ids[op]};")
    lines.append("}")
    return "\n".join(lines) + "\n"
