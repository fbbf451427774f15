"""Lowering steps: glow → glowll → llvm dialect → object code."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation


def replace_functions(module: ModuleOp, function_type: type[Operation],
                      lower: Callable[[Operation], Sequence[Operation]]) -> None:
    """Replaces every top-level function of `function_type` by the ops `lower` makes of it."""
    for function in list(module.body.block.ops):
        if isinstance(function, function_type):
            module.body.block.insert_ops_before(list(lower(function)), function)
            function.detach()
            function.erase(safe_erase=False)
