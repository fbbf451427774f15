"""`glow-fold-lookup-tables`: a chain of elementwise ops computing a function of one int8
tensor becomes one `glow.int_lookup_table`.

Exporters often spell activations out: HardSwish as `x * clip(x + 3, 0, 6) / 6`, HardSigmoid
as `clip(0.2 x + 0.5, 0, 1)`, SiLU as `x * sigmoid(x)`, GELU as `0.5 x (1 + erf(x / sqrt 2))`.
Quantized op by op, each step is a pass over memory that requantizes; but every value of
such a subgraph is a function of its one int8 input X, whose 256 levels give 256 results,
so one 256-entry table computes the whole subgraph, from the float function rounded once.

The pass runs after quantization (a profile's, or a QDQ model's own). A *member* is an
elementwise op with a float semantics (`ElementwiseFacts.numpy`, not mixed-type), a lookup
table that records its float op (`lookup_tables.TABLE_FUNCTION`, which `glow-quantize`
writes) or a conversion (quantize, dequantize, rescale: the identity on reals), whose
operands other than constants of one value (splats, per-tensor) are all X or members
derived from X, and whose result has X's shape; X is an int8 per-tensor quantized value.
The members of one X form its subgraph; a member value read outside it (by a non-member, or
saved) is an *output*. Each int8 output whose subgraph part (its cone back to X) holds two
ops or more becomes a table, sampled at X's 256 levels dequantized through the cone's float
semantics (constants dequantized) and quantized to the output's own type (its profiled or
imported parameters). Intermediate values read elsewhere are outputs too (they get their
own table from X), and float ones stay computed as they were: every other user keeps what it
needs. What no one reads any longer is erased. Where only the new tables read X and X's
producer requantizes anyway, X takes the finer type of the span where the tables still change
(`narrowed_type`), as glow-quantize does for a value only lookup-table ops read; only with
`narrow-sources=true`, which the pipeline sets when the compiler chose the types (a profile):
the types a quantized model brings are kept, so that its producers round as the model's own
interpreter does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, f32, i8
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.transforms.dead_code_elimination import dce

from glowmlir.dialects import glow
from glowmlir.dialects.quant import UniformQuantizedType, storage_type
from glowmlir.dialects.weights import array_from_dense
from glowmlir.quantization.glow_names import PROFILE_NAME
from glowmlir.quantization.lookup_tables import table_function, varying_span
from glowmlir.quantization.params import QuantParams, choose_params, dequantize, dequantize_as, quantize
from glowmlir.transforms.constants import names_in, typed_constant

MINIMUM_CONE = 2
"""Ops a cone must hold to become a table: a single op is one pass over memory already."""


def _int8_per_tensor(value: SSAValue) -> UniformQuantizedType | None:
    """The value's type if it is int8 (signed storage, as the tables are) per tensor."""
    element = glow.element_of(value)
    if isinstance(element, UniformQuantizedType) and storage_type(element) == i8 and not element.per_channel:
        return element
    return None


def scalar_constant(value: SSAValue) -> float | None:
    """The one real a constant operand holds in every element (a splat, a float constant or a
    per-tensor quantized one, dequantized); None for any other value."""
    op = value.owner
    if isinstance(op, glow.SplatOp) and not isinstance(glow.element_of(value), UniformQuantizedType):
        return float(op.value.value.data)
    if not isinstance(op, glow.ConstantOp) or op.value is None:
        return None
    data = array_from_dense(op.value)
    element = glow.element_of(value)
    if isinstance(element, UniformQuantizedType):
        if element.per_channel:
            return None
        data = dequantize_as(data, element)
    elif element != f32:
        return None
    flat = np.asarray(data, np.float32).ravel()
    if flat.size == 0 or not (flat == flat[0]).all():
        return None
    return float(flat[0])


def _real_function(op: Operation) -> Callable[..., np.ndarray] | None:
    """A member's float semantics on reals (its data operands' arrays in, the result's out)."""
    if isinstance(op, glow.ConversionOp):
        return lambda x: x
    if isinstance(op, glow.IntLookupTableOp):
        function = table_function(op)
        return None if function is None else (lambda x, table=None: function(x))
    facts = getattr(op, "FACTS", None)
    if isinstance(facts, glow.ElementwiseFacts) and facts.numpy is not None and not facts.mixed_types \
            and type(op) in glow.numpy_semantics():
        return lambda *arrays: facts.numpy(op, *arrays)
    return None


def _real_typed(value: SSAValue) -> bool:
    element = glow.element_of(value)
    return element == f32 or (isinstance(element, UniformQuantizedType) and not element.per_channel)


@dataclass
class _Subgraphs:
    """The members of one function (see the module doc) by the int8 value X they derive from."""

    source: dict[SSAValue, SSAValue]  # member result -> X
    members: dict[SSAValue, list[Operation]]  # X -> its members, in program order

    @staticmethod
    def of(block) -> _Subgraphs:
        """The subgraphs of `block`'s ops, without the members whose float results are read
        outside their subgraph (a dequantize before a float op, a saved float output: only
        int8 values can be tables' results) and what derives from those: the members found
        again without them until none is left out."""
        left_out: set[Operation] = set()
        while True:
            subgraphs = _Subgraphs.found(block, left_out)
            released = {op for ops in subgraphs.members.values() for op in ops
                        if _int8_per_tensor(op.results[0]) is None and subgraphs.read_outside(op)}
            if not released:
                return subgraphs
            left_out |= released

    @staticmethod
    def found(block, left_out: set[Operation]) -> _Subgraphs:
        source: dict[SSAValue, SSAValue] = {}
        members: dict[SSAValue, list[Operation]] = {}
        for op in block.ops:
            if op in left_out or len(op.results) != 1 or _real_function(op) is None \
                    or not _real_typed(op.results[0]):
                continue
            data = op.operands[:1] if isinstance(op, glow.IntLookupTableOp) else op.operands
            roots = {source.get(operand, operand) if _real_typed(operand) else None
                     for operand in data if scalar_constant(operand) is None}
            if len(roots) != 1:
                continue
            root = roots.pop()
            if root is None or _int8_per_tensor(root) is None or glow.shape_of(op.results[0]) != glow.shape_of(root):
                continue
            source[op.results[0]] = root
            members.setdefault(root, []).append(op)
        return _Subgraphs(source, members)

    def read_outside(self, op: Operation) -> bool:
        """Whether a member's result is read outside its subgraph."""
        root = self.source[op.results[0]]
        return any(not use.operation.results or self.source.get(use.operation.results[0]) is not root
                   for use in op.results[0].uses)

    def outputs(self, root: SSAValue) -> list[SSAValue]:
        """The members' values read by something outside the subgraph of `root`."""
        inside = {op for op in self.members[root]}
        return [op.results[0] for op in self.members[root]
                if any(use.operation not in inside for use in op.results[0].uses)]

    def cone(self, value: SSAValue) -> list[Operation]:
        """The members `value` is computed from, in program order."""
        seen: set[Operation] = set()
        stack = [value]
        while stack:
            op = stack.pop().owner
            if op in seen or not isinstance(op, Operation) or op.results[0] not in self.source:
                continue
            seen.add(op)
            stack.extend(op.operands)
        root = self.source[value]
        return [op for op in self.members[root] if op in seen]


def cone_function(cone: list[Operation], root: SSAValue, output: SSAValue) -> Callable[[np.ndarray], np.ndarray]:
    """`output` as a function of the reals of `root`: the cone's float semantics, in float32."""

    def function(reals: np.ndarray) -> np.ndarray:
        values: dict[SSAValue, np.ndarray] = {root: np.asarray(reals, np.float32)}
        with np.errstate(all="ignore"):
            for op in cone:
                data = op.operands[:1] if isinstance(op, glow.IntLookupTableOp) else op.operands
                arrays = [values[v] if v in values else np.float32(scalar_constant(v)) for v in data]
                values[op.results[0]] = np.asarray(_real_function(op)(*arrays), np.float32)
        return values[output]

    return function


def sampled_levels(function: Callable[[np.ndarray], np.ndarray], element: UniformQuantizedType,
                   result: UniformQuantizedType) -> np.ndarray:
    """The 256 int8 levels of `function` at the 256 levels of `element` (its input's type):
    each level dequantized, the function applied, the result quantized to `result`."""
    levels = np.arange(-128, 128)  # int8 storage is signed (quant.STORAGE_TYPES)
    finite = np.nan_to_num(function(dequantize(levels, QuantParams(element.scale, element.offset))), nan=0.0)
    return quantize(finite, QuantParams(result.scale, result.offset))


REQUANTIZING_OPS = (glow.ConvolutionOp, glow.FullyConnectedOp, glow.AddOp, glow.SubOp, glow.MulOp)
"""Ops whose int8 result may take any parameters (they requantize their accumulators)."""


def narrowed_type(root: SSAValue, functions: list[Callable[[np.ndarray], np.ndarray]]) -> UniformQuantizedType | None:
    """A finer type for `root` when only the tables of `functions` read it and its producer
    requantizes (`REQUANTIZING_OPS`): its range cut to the span where they still change
    (`lookup_tables.varying_span`; HardSwish written out is 0 below -3, a squeeze-excitation
    gate 0 below -2.5 and 1 above 2.5), as glow-quantize quantizes a value that only lookup-table
    ops read. Beyond it, the saturated levels give the tables' same entries. None: no gain."""
    element = _int8_per_tensor(root)
    if not isinstance(root.owner, REQUANTIZING_OPS):
        return None
    low, high = ((np.array([-128.0, 127.0]) - element.offset) * element.scale).tolist()
    span = varying_span(functions, low, high)
    if span == (low, high):
        return None
    params = choose_params(*span, "symmetric" if element.offset == 0 else "asymmetric")
    if params.scale >= element.scale:
        return None
    return UniformQuantizedType(storage_type(element), params.scale, params.offset)


@dataclass(frozen=True)
class FoldLookupTables(ModulePass):
    """Folds each function of one int8 tensor computed by several elementwise ops into one
    256-entry `glow.int_lookup_table` (see the module doc)."""

    name = "glow-fold-lookup-tables"

    narrow_sources: bool = False
    """Give a source only the new tables read a finer type (`narrowed_type`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        names = names_in(op)
        folded = False
        for function in [f for f in op.body.block.ops if isinstance(f, glow.FunctionOp)]:
            subgraphs = _Subgraphs.of(function.body.block)
            for root in list(subgraphs.members):
                outputs = subgraphs.outputs(root)
                tabled = {output: cone_function(cone, root, output) for output in outputs
                          if len(cone := subgraphs.cone(output)) >= MINIMUM_CONE and _int8_per_tensor(output)}
                if not tabled:
                    continue
                inside = set(subgraphs.members[root])
                only_tables = len(tabled) == len(outputs) and all(use.operation in inside for use in root.uses)
                element = narrowed_type(root, list(tabled.values())) if only_tables and self.narrow_sources else None
                levels = {output: sampled_levels(function, element or _int8_per_tensor(root),
                                                 _int8_per_tensor(output)) for output, function in tabled.items()}
                if element is not None:
                    root = Rewriter.replace_value_with_new_type(root, glow.tensor(glow.shape_of(root), element))
                for output, table_levels in levels.items():
                    self.replace(output, root, table_levels, names)
                folded = True
        if folded:
            dce(op)

    @staticmethod
    def replace(output: SSAValue, root: SSAValue, levels: np.ndarray, names) -> None:
        """`output` read from a new table of `levels` of `root`, with its producer's names."""
        producer = output.owner
        named = {k: v for k, v in producer.attributes.items() if k in (glow.NODE_NAME, PROFILE_NAME)}
        label = named[glow.NODE_NAME].data if glow.NODE_NAME in named else producer.name.split(".")[-1]
        table = typed_constant(names(f"{label}_table"), levels.astype(np.int8), glow.element_of(output))
        lookup = glow.IntLookupTableOp(root, table.result)
        lookup.attributes.update(named)
        for name in named:
            del producer.attributes[name]
        Rewriter.insert_op([table, lookup], InsertPoint.before(producer))
        output.replace_all_uses_with(lookup.result)
