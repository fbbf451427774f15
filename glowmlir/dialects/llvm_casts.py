"""The LLVM cast instructions xDSL 0.74's `llvm` dialect lacks: `fptosi`, `fptoui`, `uitofp`.

They are ops of the `llvm` dialect, spelled as in MLIR's (`llvm.fptosi %x : f32 to i32`).
`LLVMWithCasts` is xDSL's llvm dialect plus them, which glow-opt registers so that the llvm
stage of a pipeline prints and parses back; their translation to llvmlite instructions is
added to xDSL's converter's table of casts here.
"""

from __future__ import annotations

from xdsl.backend.llvm import convert_op
from xdsl.dialects import llvm
from xdsl.ir import Dialect
from xdsl.irdl import irdl_op_definition


@irdl_op_definition
class FPToSIOp(llvm.GenericCastOp):
    """Float to signed integer, rounding toward zero."""

    name = "llvm.fptosi"


@irdl_op_definition
class FPToUIOp(llvm.GenericCastOp):
    """Float to unsigned integer, rounding toward zero."""

    name = "llvm.fptoui"


@irdl_op_definition
class UIToFPOp(llvm.GenericCastOp):
    """Unsigned integer to float."""

    name = "llvm.uitofp"


CASTS = {FPToSIOp: "fptosi", FPToUIOp: "fptoui", UIToFPOp: "uitofp"}
convert_op._CAST_OP_NAMES.update(CASTS)  # xDSL's translator dispatches casts by this table

LLVMWithCasts = Dialect("llvm", [*llvm.LLVM.operations, *CASTS], [*llvm.LLVM.attributes])
