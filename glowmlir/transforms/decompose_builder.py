"""What the `glow-decompose-*` passes share: `DecompositionBuilder`, which builds the glow
ops replacing one op in front of it, and `window_pattern`, which runs a decomposition on
the ops of some types."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from glowmlir.dialects import glow
from glowmlir.dialects.weights import dense_from_array
from glowmlir.names import UniqueNames


class DecompositionBuilder:
    """Inserts glow ops before `op` (the op being decomposed); new constants get names
    unique in the module from `names`."""

    def __init__(self, rewriter: PatternRewriter, op: Operation, names: UniqueNames):
        self.rewriter, self.op, self.names = rewriter, op, names

    def add(self, op: Operation) -> SSAValue:
        self.rewriter.insert(op, InsertPoint.before(self.op))
        return op.results[0]

    def replace(self, value: SSAValue) -> None:
        """Replaces the decomposed op by `value`, whose op takes over its node name (the
        profile key of the result)."""
        name = self.op.attributes.get(glow.NODE_NAME)
        if name is not None and isinstance(value.owner, Operation):
            value.owner.attributes[glow.NODE_NAME] = name
        self.rewriter.replace(self.op, [], [value])

    def node_name(self, default: str) -> str:
        """The decomposed op's node name, or `default` if it has none."""
        name = self.op.attributes.get(glow.NODE_NAME)
        return name.data if name is not None else default

    def constant(self, name: str, array: np.ndarray) -> SSAValue:
        return self.add(glow.ConstantOp(self.names(name), dense_from_array(array)))

    def reshape(self, x: SSAValue, shape: Sequence[int]) -> SSAValue:
        if glow.shape_of(x) == tuple(shape):
            return x
        return self.add(glow.ReshapeOp(x, shape))

    def transpose(self, x: SSAValue, perm: Sequence[int]) -> SSAValue:
        return self.add(glow.transpose(x, perm))

    def slice(self, x: SSAValue, starts: Sequence[int], sizes: Sequence[int], steps: Sequence[int] | None = None) \
            -> SSAValue:
        """`sizes` elements of x from `starts`, every `steps`-th (1 by default)."""
        return self.add(glow.SliceOp(x, starts, sizes, steps))

    def add_values(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self.add(glow.AddOp(lhs, rhs))

    def zero_pad(self, x: SSAValue, begin: Sequence[int], end: Sequence[int]) -> SSAValue:
        """x with `begin`/`end` zeros before/after each axis (negative amounts crop)."""
        shape = glow.shape_of(x)
        if any(b < 0 for b in begin) or any(e < 0 for e in end):
            starts = [max(0, -b) for b in begin]
            sizes = [s - max(0, -b) - max(0, -e) for s, b, e in zip(shape, begin, end)]
            x = self.slice(x, starts, sizes)
            begin, end, shape = [max(0, b) for b in begin], [max(0, e) for e in end], tuple(sizes)
        if not any(begin) and not any(end):
            return x
        return self.add(glow.PadOp(x, [*begin, *end]))

    def convolution(self, x: SSAValue, filter_: SSAValue, bias: SSAValue, strides: Sequence[int],
                    pads: Sequence[int], dilations: Sequence[int], group: int) -> SSAValue:
        return self.add(glow.ConvolutionOp(x, filter_, bias, strides=strides, pads=pads, dilations=dilations,
                                           group=group))

    def copy_of_op(self, operands: Sequence[SSAValue], shape: Sequence[int], **windows: Sequence[int]) -> SSAValue:
        """The decomposed op on `operands`, giving a tensor of `shape`: its properties are
        kept but for the window ones given in `windows` (its node name is not)."""
        properties = self.op.properties | {key: glow.ints(values) for key, values in windows.items()}
        result_type = glow.tensor(shape, self.op.results[0].type.element_type)
        # A clone of an op whose type is only known at run time, with its properties: `.create`.
        op = type(self.op).create(operands=list(operands), properties=properties, result_types=[result_type])
        return self.add(op)

    def pool(self, x: SSAValue, kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int]) -> SSAValue:
        """The decomposed pool (max or average, its other properties kept) over x with this window."""
        shape = (*glow.shape_of(x)[:2], *glow.window_sizes(glow.shape_of(x)[2:], kernel, strides, pads))
        return self.copy_of_op([x], shape, kernel=kernel, strides=strides, pads=pads)


Decomposition = Callable[[DecompositionBuilder, Operation], SSAValue | None]
"""Builds the replacement of an op, or returns None to leave it."""


class DecomposeOps(RewritePattern):
    """Runs `decomposition` on each op of the types `op_types`: the op is replaced by the
    value it returns."""

    def __init__(self, op_types: tuple[type[Operation], ...], decomposition: Decomposition, names: UniqueNames):
        self.op_types, self.decomposition, self.names = op_types, decomposition, names

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glow.GlowOp, rewriter: PatternRewriter) -> None:
        if not isinstance(op, self.op_types):
            return
        builder = DecompositionBuilder(rewriter, op, self.names)
        value = self.decomposition(builder, op)
        if value is not None:
            builder.replace(value)
