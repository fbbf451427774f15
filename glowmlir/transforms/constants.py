"""What the graph passes share: reading constants, naming the new ones and building them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from glowmlir.dialects import glow
from glowmlir.dialects.weights import array_from_dense, dense_from_array, release_weights
from glowmlir.names import UniqueNames


def names_in(module: Operation) -> UniqueNames:
    """A name source that avoids every constant/placeholder/output/state name already present."""
    names = UniqueNames()
    for op in module.walk():
        if isinstance(op, glow.ConstantOp | glow.PlaceholderOp | glow.SaveOp | glow.StateOp):
            names.taken.add(op.name_.data)
    return names


def constant_value(value: SSAValue) -> np.ndarray | None:
    """The array of a `glow.constant` or `glow.splat` result, else None."""
    op = value.owner
    if isinstance(op, glow.ConstantOp) and op.value is not None:
        return array_from_dense(op.value)
    if isinstance(op, glow.SplatOp):
        return np.full(glow.shape_of(value), op.value.value.data, np.float32)
    return None


def constant_name(value: SSAValue, suffix: str) -> str:
    """`<name of value's constant>_<suffix>`, without repeating a suffix it already has."""
    op = value.owner
    if not isinstance(op, glow.ConstantOp):
        return suffix
    name = op.name_.data.split("__")[0]
    return name if name.endswith(f"_{suffix}") else f"{name}_{suffix}"


def typed_constant(name: str, data: np.ndarray, element_type: Attribute) -> glow.ConstantOp:
    """A `glow.constant` holding `data` (the stored values: quantized levels, for instance)
    whose result has `element_type`, which may differ from the data's own (a `quant.uniform`)."""
    return glow.ConstantOp(name, dense_from_array(data), result_element=element_type)


def erase_unused_constants(owners: Sequence[Operation], rewriter: PatternRewriter) -> None:
    """Erases the `glow.constant`s among `owners` that nothing uses any more (a rewrite
    replaced their users), their weights let go at once (`release_weights`)."""
    for op in dict.fromkeys(owners):
        if isinstance(op, glow.ConstantOp) and op.parent is not None and not op.result.uses:
            rewriter.erase_op(op)
            release_weights(op)
