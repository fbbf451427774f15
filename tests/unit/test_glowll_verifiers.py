"""Every malformed glowll case of tests/lit/verify_glowll.mlir, given to `glow-opt` on its
own: exit status 2 and one `glow-opt: error:` line, which names the op (a verifier's
error) or points at its line (an unknown keyword, a parse error), and no traceback. The
lit test checks the messages; this checks that none of them escapes as a Python crash."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from glowmlir.dialects import glow, glowll

ROOT = Path(__file__).resolve().parents[2]
CASES = (ROOT / "tests" / "lit" / "verify_glowll.mlir").read_text().split("// -----\n")[1:]


def case_id(case: str) -> str:
    return re.search(r"glowll\.function @(\w+)", case).group(1)


@pytest.mark.parametrize("case", CASES, ids=map(case_id, CASES))
def test_malformed_glowll_is_one_error_line(tmp_path, case):
    source = "\n".join(line for line in case.splitlines() if not line.startswith("// CHECK"))
    (tmp_path / "case.mlir").write_text(source + "\n")
    result = subprocess.run([str(ROOT / "tools" / "glow-opt"), "case.mlir"], capture_output=True, text=True,
                            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    expected = re.findall(r"// CHECK: (.*)", case)[-1]
    if verified := re.match(r"glowll\.\w+: ", expected):  # the verifier's message, naming the op
        assert line == f"glow-opt: error: case.mlir: invalid IR: {expected}"
    else:  # a parse error at the op's line
        location = re.match(r"glow-opt: error: case\.mlir:(\d+):\d+: (.*)", line)
        assert location and location.group(2) == expected, line
        assert source.splitlines()[int(location.group(1)) - 1].lstrip().startswith(("glowll.", "%"))
    assert verified or "mx" in case or "int<" in case  # parse errors only for unknown keywords and ranges


def test_dest_is_the_first_operand_of_every_instruction():
    """`dest` is declared once, in InstructionOp, yet stays first (IRDL collects a subclass's
    operands before its bases')."""
    instructions = [op for op in glowll.GlowLL.operations if issubclass(op, glowll.InstructionOp)]
    assert len(instructions) == 21
    for op in instructions:
        names = [name for name, _ in op.get_irdl_definition().operands]
        assert names[0] == "dest" and names.count("dest") == 1, (op.name, names)


def test_builders_give_the_parsed_form():
    """The typed builders make the op the parser makes from its text."""
    from xdsl.dialects.builtin import MemRefType, f32, i64

    x = glowll.PlaceholderOp(glowll.PlaceholderKind.INPUT, "x", MemRefType(f32, [1, 3, 8, 8]))
    y = glowll.AllocOp(MemRefType(f32, [1, 3, 4, 4]))
    pool = glowll.AvgPoolOp(y.buffer, x.buffer, kernel=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0],
                            count_include_pad=True, layout=glow.Layout.NCHW)
    pool.verify()
    assert str(pool) == ("glowll.avg_pool %0, %1 layout NCHW {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, "
                         "pads = array<i64: 0, 0, 0, 0>, count_include_pad} : memref<1x3x4x4xf32>, "
                         "memref<1x3x8x8xf32>")
    indices = glowll.AllocOp(MemRefType(i64, [1, 3, 1, 8]))
    arg = glowll.ArgReduceOp(indices.buffer, x.buffer, kind=glow.ArgReduceKind.MAX, axis=2, select_last_index=True)
    arg.verify()
    call = glowll.LibraryCallOp("f", y.buffer, [x.buffer], [glowll.BufferArgument(0), glowll.ContextArgument(None),
                                                             glowll.PointersArgument(0, 1), glowll.IntArgument(-3),
                                                             glowll.NullArgument()], replaces="glowll.avg_pool")
    call.verify()
    assert "arguments = [#glowll.buffer<0>, #glowll.context<none>, #glowll.pointers<0, 1>, #glowll.int<-3>, " \
           "#glowll.null]" in str(call)
