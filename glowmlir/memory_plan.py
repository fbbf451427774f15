"""The activations memory plan, and its picture: `glow-compile -memory-plan=FILE.svg|png|html`.

The picture is the one Glow and TFLite Micro users draw of an arena: x is the instruction in
schedule order, y the byte offset in the `activations` region, and each planned buffer a
rectangle from the first to the last instruction touching it, labelled with the graph node that
writes it. Colours tell buffers apart:

* activation: the result of one node;
* in place: a buffer several nodes write (`glowll-share-buffers` made a result overwrite its
  source, or wrote a concatenation's parts in place);
* fused: the result of a convolution with a fused pool or residual add (its full-resolution
  output is never stored);
* library scratch: scratch memory a CMSIS-NN or HiFi 4 call asks for;
* staging: the stage of an in-place plan's sliced convolution (`glowll-convolve-in-place`),
  which each slice writes before it is copied or added over the buffer it works in place in.

Lines mark the region's size (ACTIVATIONS_MEM_SIZE), the lower bound (the most bytes live at
once, which no placement beats) and the instruction where that peak is reached. The SVG and HTML
forms carry a hover text per rectangle (node, instruction, offset, size, live range); each
rectangle's SVG element has the id `buffer-<k>` (k in the plan's order).
"""

from __future__ import annotations

import io
import os
import re
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from html import escape

from glowmlir.dialects import glow, glowll
from glowmlir.dialects.memory import SCRATCH_ATTRIBUTE
from glowmlir.errors import GlowError

PICTURE_FORMATS = (".svg", ".png", ".html")
ROLES = {"activation": "#8fb8de", "in place": "#f2b26b", "fused": "#9fd39a", "library scratch": "#d9a3d9",
         "staging": "#e8d36b"}
"""Each kind of buffer and its colour."""


@dataclass(frozen=True)
class PlannedBuffer:
    """One `glowll.alloc` as placed: `size` bytes at `offset`, live over instructions `first..last`."""

    node: str  # the graph node writing it first
    instruction: str  # that node's low-level instruction (convolution, add, ...)
    offset: int
    size: int
    first: int
    last: int
    role: str  # a key of ROLES
    writers: int = 1  # how many instructions write it


@dataclass(frozen=True)
class MemoryPlan:
    network: str
    buffers: tuple[PlannedBuffer, ...]
    instructions: tuple[str, ...]  # the node each instruction computes, in schedule order
    region_size: int
    lower_bound: int

    @staticmethod
    def of(function: glowll.FunctionOp) -> MemoryPlan:
        """The plan `glowll-allocate-memory` left on `function`."""
        from glowmlir.transforms.allocate_memory import live_ranges

        if function.activations_size is None:
            raise GlowError(f"{function.sym_name.data}: memory is not allocated (run glowll-allocate-memory)")
        instructions = [op for op in function.body.block.ops if isinstance(op, glowll.InstructionOp)]
        writers: dict[glowll.AllocOp, list[glowll.InstructionOp]] = {}
        in_place: set[glowll.AllocOp] = set()
        for op in instructions:
            root, _ = glowll.root_buffer(op.operands[0])
            if isinstance(root, glowll.AllocOp):
                writers.setdefault(root, []).append(op)
                if any(glowll.root_buffer(source)[0] is root for source in op.operands[1:]):
                    in_place.add(root)
        buffers = []
        for alloc, (first, last) in live_ranges(function).items():
            written_by = writers.get(alloc, [])
            writer = written_by[0] if written_by else instructions[first]
            if SCRATCH_ATTRIBUTE in alloc.attributes:
                role = "library scratch"
            elif len(written_by) > 1 and all(isinstance(w, glowll.ConvolutionOp) and w.dest is alloc.buffer
                                             for w in written_by):
                role = "staging"
            elif alloc in in_place or len(written_by) > 1:
                role = "in place"
            elif isinstance(writer, glowll.ConvolutionOp) and (writer.pool is not None or writer.residual is not None):
                role = "fused"
            else:
                role = "activation"
            buffers.append(PlannedBuffer(_node_name(writer), writer.name.removeprefix("glowll."),
                                         alloc.offset.value.data, alloc.byte_size, first, last, role,
                                         max(len(written_by), 1)))
        buffers.sort(key=lambda b: (b.first, b.offset))
        return MemoryPlan(function.sym_name.data, tuple(buffers), tuple(_node_name(op) for op in instructions),
                          function.activations_size.value.data, function.activations_lower_bound.value.data)

    def live_bytes(self, instruction: int) -> int:
        return sum(b.size for b in self.buffers if b.first <= instruction <= b.last)

    @property
    def peak_instruction(self) -> int:
        """The first instruction at which the most bytes are live."""
        if not self.instructions:
            return 0
        return max(range(len(self.instructions)), key=lambda t: (self.live_bytes(t), -t))

    def hover_text(self, buffer: PlannedBuffer) -> str:
        writers = f", written by {buffer.writers} instructions" if buffer.writers > 1 else ""
        return (f"{buffer.node} ({buffer.instruction}, {buffer.role}{writers}): {buffer.size:,} bytes at offset "
                f"{buffer.offset:,}, live over instructions {buffer.first}..{buffer.last}")

    def picture(self, extension: str) -> bytes:
        """The picture as `.svg`, `.png` or `.html` bytes."""
        import matplotlib

        figure = self._figure()
        if extension == ".png":
            data = io.BytesIO()
            figure.savefig(data, format="png", dpi=110, metadata={"Software": None})
            return data.getvalue()
        data = io.StringIO()
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": self.network}):  # text stays text
            figure.savefig(data, format="svg", metadata={"Date": None, "Creator": None})
        svg = self._with_hover_texts(data.getvalue())
        if extension == ".svg":
            return svg.encode()
        rows = "\n".join(f"<tr><td>{k}</td><td>{escape(b.node)}</td><td>{b.instruction}</td><td>{b.role}</td>"
                         f"<td>{b.offset:,}</td><td>{b.size:,}</td><td>{b.first}..{b.last}</td></tr>"
                         for k, b in enumerate(self.buffers))
        return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>memory plan of {escape(self.network)}"
                f"</title>\n<style>body{{font-family:sans-serif}} table{{border-collapse:collapse}} "
                f"td,th{{border:1px solid #ccc;padding:2px 6px;text-align:right}}</style></head><body>\n"
                f"<h1>Activations of {escape(self.network)}</h1>\n<p>{self.summary()}. Hover a buffer for its "
                f"details.</p>\n{svg[svg.index('<svg'):]}\n<table><tr><th>#</th><th>node</th><th>instruction</th>"
                f"<th>kind</th><th>offset</th><th>bytes</th><th>live</th></tr>\n{rows}\n</table>\n</body></html>\n"
                ).encode()

    def summary(self) -> str:
        return (f"{len(self.buffers)} buffers in {self.region_size:,} bytes (lower bound {self.lower_bound:,}, "
                f"reached at instruction {self.peak_instruction}: {self.instructions[self.peak_instruction]})"
                if self.instructions else "no instructions")

    def _figure(self):
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch, Rectangle

        count = max(len(self.instructions), 1)
        figure = Figure(figsize=(max(10, min(4 + 0.22 * count, 24)), 6.5))
        axes = figure.add_subplot()
        top = max(self.region_size, 1)
        for k, buffer in enumerate(self.buffers):
            axes.add_patch(Rectangle((buffer.first, buffer.offset), buffer.last - buffer.first + 1, buffer.size,
                                     facecolor=ROLES[buffer.role], edgecolor="#333333", linewidth=0.6,
                                     gid=f"buffer-{k}"))
            width, height = buffer.last - buffer.first + 1, buffer.size / top
            if height > 0.045 and width * 70 / count >= len(buffer.node) * 0.55:  # the label fits
                axes.text(buffer.first + width / 2, buffer.offset + buffer.size / 2, buffer.node, ha="center",
                          va="center", fontsize=7, clip_on=True)
        axes.axhline(self.region_size, color="black", linewidth=1)
        axes.axhline(self.lower_bound, color="crimson", linestyle="--", linewidth=1)
        peak = self.peak_instruction
        axes.axvspan(peak, peak + 1, color="crimson", alpha=0.08, gid="peak-instruction")
        axes.set_xlim(0, count)
        axes.set_ylim(0, top * 1.08)
        axes.set_xlabel("instruction (schedule order)")
        axes.set_ylabel("byte offset in activations")
        axes.set_title(f"{self.network}: activations memory plan\n{self.summary()}", fontsize=9)
        handles = [Patch(facecolor=colour, edgecolor="#333333", label=role) for role, colour in ROLES.items()]
        handles += [matplotlib.lines.Line2D([], [], color="black", label=f"region {self.region_size:,} B"),
                    matplotlib.lines.Line2D([], [], color="crimson", linestyle="--",
                                            label=f"lower bound {self.lower_bound:,} B"),
                    Patch(facecolor="crimson", alpha=0.08, label=f"peak at instruction {peak}")]
        axes.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
        figure.tight_layout()
        return figure

    def _with_hover_texts(self, svg: str) -> str:
        """matplotlib's SVG with a `<title>` (a browser's hover text) in each buffer's group."""
        ElementTree.register_namespace("", "http://www.w3.org/2000/svg")
        ElementTree.register_namespace("xlink", "http://www.w3.org/1999/xlink")
        root = ElementTree.fromstring(svg)
        groups = {g.get("id"): g for g in root.iter("{http://www.w3.org/2000/svg}g")}
        for k, buffer in enumerate(self.buffers):
            title = ElementTree.Element("{http://www.w3.org/2000/svg}title")
            title.text = self.hover_text(buffer)
            groups[f"buffer-{k}"].insert(0, title)
        return ElementTree.tostring(root, encoding="unicode", xml_declaration=True)


def _node_name(op: glowll.InstructionOp) -> str:
    """The graph node's name; for an instruction no node names (a quantize the quantizer
    added), its kind."""
    name = op.attributes.get(glow.NODE_NAME)
    if name is not None:
        return name.data
    kind = op.properties.get("kind")
    return kind.data if kind is not None and hasattr(kind, "data") else op.name.removeprefix("glowll.")


def check_picture_path(path: str, option: str = "-memory-plan") -> str:
    """The picture's extension, refused unless `.svg`, `.png` or `.html`."""
    extension = os.path.splitext(path)[1].lower()
    if extension not in PICTURE_FORMATS:
        raise GlowError(f"{option}=\"{path}\": expected a .svg, .png or .html file")
    return extension


def svg_rectangles(svg: str) -> dict[str, tuple[float, float, float, float]]:
    """Each buffer's rectangle in an SVG picture, as (x0, y0, x1, y1) in the picture's units:
    the box of its path's points (for reading a picture back, as the tests do)."""
    root = ElementTree.fromstring(svg)
    boxes = {}
    for group in root.iter("{http://www.w3.org/2000/svg}g"):
        if (group.get("id") or "").startswith("buffer-"):
            path = next(group.iter("{http://www.w3.org/2000/svg}path"))
            numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", path.get("d"))]
            xs, ys = numbers[0::2], numbers[1::2]
            boxes[group.get("id")] = (min(xs), min(ys), max(xs), max(ys))
    return boxes
