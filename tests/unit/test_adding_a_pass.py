"""docs/architecture.md, "Adding a pass": a pass is a `ModulePass` with a `name`, in its own
module, plus one line in `transforms.PASSES`; `glow-opt -p <name>` then runs it. The toy pass
here goes through exactly that path (its module stands in for `glowmlir/transforms/<file>.py`)."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from glowmlir import transforms
from glowmlir.cli import opt
from glowmlir.dialects import glow


class CancelDoubleNegation(RewritePattern):
    """neg(neg(x)) -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glow.NegOp, rewriter: PatternRewriter) -> None:
        if isinstance(op.input.owner, glow.NegOp):
            rewriter.replace(op, [], [op.input.owner.input])


@dataclass(frozen=True)
class FoldDoubleNegation(ModulePass):
    """Cancels pairs of negations."""

    name = "glow-fold-double-negation"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(CancelDoubleNegation()).rewrite_module(op)


INPUT = """glow.function @net {
  %x = glow.placeholder "x" : tensor<4xf32>
  %n = glow.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  %m = glow.neg %n : (tensor<4xf32>) -> tensor<4xf32>
  glow.save %m as "y" : tensor<4xf32>
}
"""


@pytest.fixture
def registered(monkeypatch):
    module = types.ModuleType("glowmlir.transforms.fold_double_negation")
    module.FoldDoubleNegation = FoldDoubleNegation
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(transforms.PASSES, FoldDoubleNegation.name,
                        ("transforms.fold_double_negation", "FoldDoubleNegation"))


def test_a_registered_pass_runs_in_glow_opt(registered, tmp_path, capsys):
    source = tmp_path / "net.mlir"
    source.write_text(INPUT)
    opt.main([str(source), "-p", "glow-fold-double-negation,dce"])
    printed = capsys.readouterr().out
    assert "glow.neg" not in printed
    assert 'glow.save %x as "y"' in printed


def test_without_its_line_in_passes_glow_opt_does_not_know_it(tmp_path, capsys):
    source = tmp_path / "net.mlir"
    source.write_text(INPUT)
    with pytest.raises(SystemExit):
        opt.main([str(source), "-p", "glow-fold-double-negation"])
    assert "glow-fold-double-negation" in capsys.readouterr().err
