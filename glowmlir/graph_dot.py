"""`-dump-graph-DAG`: a `glow.function` as a Graphviz DOT digraph, or drawn by Graphviz.

Each node shows what a Glow user looks for in a graph picture: the node's kind and name, what
was fused into it (`+ relu`, `+ maxpool 2x2 /2`, `+ residual add`) and its result — shape and
element type, with the scale and offset of a quantized type (`i8 scale=0.0235 offset=-3`).
Placeholders, saves and constants are boxes (constants small, grey); quantize, dequantize and
rescale nodes are drawn in orange, so float islands in a quantized graph stand out.

`-dump-graph-DAG=FILE.dot` (or any other name) writes DOT, as Glow does; `FILE.svg` and
`FILE.png` run Graphviz's `dot` (installed by scripts/setup.sh).
"""

from __future__ import annotations

import os
import shutil
import subprocess

from xdsl.ir import Attribute, Operation, SSAValue

from glowmlir.dialects import glow
from glowmlir.dialects.quant import UniformQuantizedType
from glowmlir.errors import GlowError

PICTURE_FORMATS = {".svg": "svg", ".png": "png"}
"""File extensions Graphviz draws; any other name gets DOT text."""

_CONVERSION_COLOUR = "orange"
_STORAGE_OPS = (glow.PlaceholderOp, glow.SaveOp)


def _escaped(text: str) -> str:
    """Text inside a DOT double-quoted string (`\\n` separates lines)."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def element_text(element: Attribute) -> str:
    """`f32`, `i8 scale=0.0235 offset=-3`, `i8 per-channel (20 scales)`."""
    if isinstance(element, UniformQuantizedType):
        storage = f"i{element.bitwidth}"
        if element.per_channel:
            return f"{storage} per-channel ({len(element.scales.data)} scales)"
        return f"{storage} scale={element.scale:.4g} offset={element.offset}"
    return str(element)


def value_text(value: SSAValue) -> str:
    """`1x20x12x12 i8 scale=0.0134 offset=5`."""
    shape = "x".join(str(d) for d in glow.shape_of(value)) or "scalar"
    return f"{shape} {element_text(value.type.element_type)}"


def fused_parts(op: Operation) -> list[str]:
    """What fusion put into `op`: its residual add, pool window and activation, in the order
    they apply."""
    parts = []
    if getattr(op, "residual", None) is not None:
        parts.append("+ residual add")
    pool = getattr(op, "pool", None)
    if pool is not None:
        kernel = "x".join(str(k) for k in op.pool_kernel.get_values())
        strides = op.pool_strides.get_values()
        stride = str(strides[0]) if len(set(strides)) == 1 else "x".join(map(str, strides))
        parts.append(f"+ {pool.data.value}pool {kernel} /{stride}")
    activation = getattr(op, "activation", None)
    if activation is not None:
        bounds = f" [{op.clip_min.value.data:g}, {op.clip_max.value.data:g}]" if op.clip_min is not None else ""
        parts.append(f"+ {activation.data.value}{bounds}")
    return parts


def _label(op: Operation) -> list[str]:
    lines = [op.name.removeprefix("glow.")]
    if isinstance(op, glow.PlaceholderOp | glow.ConstantOp | glow.SaveOp):
        lines.append(op.name_.data)
    elif glow.NODE_NAME in op.attributes:
        lines.append(op.attributes[glow.NODE_NAME].data)
    lines += fused_parts(op)
    if isinstance(op, glow.SaveOp):
        lines.append(value_text(op.input))
    elif op.results:
        lines.append(value_text(op.results[0]))
    return lines


def _style(op: Operation) -> str:
    if isinstance(op, glow.ConstantOp):
        return 'shape=box, style=filled, fillcolor=gray92, fontsize=9'
    if isinstance(op, _STORAGE_OPS):
        return 'shape=box, style="filled,bold", fillcolor=lightblue'
    if isinstance(op, glow.ConversionOp | glow.ConvertOp):
        return f"shape=ellipse, style=filled, fillcolor={_CONVERSION_COLOUR}"
    return "shape=ellipse"


def graph_dot(module: Operation) -> str:
    """One node per op (placeholders, constants and saves included), one edge per use."""
    lines = ["digraph DAG {", "  rankdir=TB;", '  node [fontname="Helvetica", fontsize=11];']
    ids: dict[Operation, str] = {}
    for function in (op for op in module.walk() if isinstance(op, glow.FunctionOp)):
        for op in function.body.block.ops:
            ids[op] = f"n{len(ids)}"
            label = "\\n".join(_escaped(line) for line in _label(op))
            lines.append(f'  {ids[op]} [label="{label}", {_style(op)}];')
            for operand in op.operands:
                lines.append(f"  {ids[operand.owner]} -> {ids[op]};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def graph_format(path: str) -> str | None:
    """The Graphviz format a `-dump-graph-DAG` path asks for (None: DOT text)."""
    return PICTURE_FORMATS.get(os.path.splitext(path)[1].lower())


def check_graphviz(path: str, option: str = "-dump-graph-DAG") -> None:
    """A picture needs Graphviz's `dot`: refused before any work when it is not installed."""
    if graph_format(path) is not None and shutil.which("dot") is None:
        raise GlowError(f"{option}=\"{path}\": drawing {graph_format(path).upper()} needs Graphviz's \"dot\" "
                        f"(apt-get install graphviz, or scripts/setup.sh); a .dot file needs nothing")


def render_graph(dot: str, path: str, option: str = "-dump-graph-DAG") -> bytes:
    """The file `path` asks for: DOT text, or the picture Graphviz draws of it."""
    picture = graph_format(path)
    if picture is None:
        return dot.encode()
    check_graphviz(path, option)
    result = subprocess.run(["dot", f"-T{picture}"], input=dot.encode(), capture_output=True)
    if result.returncode:
        message = result.stderr.decode(errors="replace").strip().splitlines()
        raise GlowError(f"{option}=\"{path}\": Graphviz's dot failed: {message[0] if message else 'no message'}")
    return result.stdout
