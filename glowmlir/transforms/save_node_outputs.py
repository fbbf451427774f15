"""`glow-save-node-outputs`: every node's result also becomes an output of the function, so a
run shows what each node computed — Glow's `-instrument-debug`, as `glow-run` offers it.

    %c = glow.convolution %x, %w, %b {name = "conv1"} ...
    glow.save %c as "debug_0_Convolution_conv1"

The outputs are named `debug_<k>_<Glow kind>_<node>` (`k`: the node's position in the
schedule), after the model's own outputs; a quantized node's output keeps its quantized type. `only`: the names of
the nodes to save (Glow's `-instrument-debug-only`), or all when empty.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from glowmlir.dialects import glow
from glowmlir.names import UniqueNames, legalize_name

DEBUG_OUTPUT_PREFIX = "debug_"


@dataclass(frozen=True)
class SaveNodeOutputs(ModulePass):
    """Saves the result of every node (of those named in `only`, if given) as an extra output."""

    name = "glow-save-node-outputs"
    only: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        wanted = {name for name in self.only.split(",") if name}
        for function in (f for f in op.body.block.ops if isinstance(f, glow.FunctionOp)):
            names = UniqueNames()
            for node in function.body.block.ops:
                if isinstance(node, glow.PlaceholderOp | glow.SaveOp):
                    names(node.name_.data)
            for index, node in enumerate(list(function.body.block.ops)):
                label = node.attributes.get(glow.NODE_NAME)
                node_name = label.data if label is not None else node.name.removeprefix("glow.")
                if not node.results or type(node) not in glow.glow_kinds() or (wanted and node_name not in wanted):
                    continue
                kind = glow.node_kind(node)
                output = names(f"{DEBUG_OUTPUT_PREFIX}{index}_{kind}_{legalize_name(node_name)}")
                save = glow.SaveOp(node.results[0], output)
                Rewriter.insert_op(save, InsertPoint.at_end(function.body.block))


def debug_output_node(output: str) -> tuple[int, str, str] | None:
    """(position, Glow kind, node name as legalized) of an output this pass added, else None."""
    if not output.startswith(DEBUG_OUTPUT_PREFIX):
        return None
    position, kind, node = output.removeprefix(DEBUG_OUTPUT_PREFIX).split("_", 2)
    return int(position), kind, node
