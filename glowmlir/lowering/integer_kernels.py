"""Kernels on integer and boolean tensors, and between element types.

Buffers keep the glow element type in their memref type: signless integers are signed,
`ui*` unsigned, `i1` boolean. In memory (and in LLVM) an unsigned integer is the signless
integer of its width and a boolean a byte holding 0 or 1 (`quant.storage_type`); these
kernels pick signed or unsigned division, comparison and widening from the memref types.

* `glowll.elementwise` on integers (add, sub, mul, div, max, min, neg, abs, relu, clip,
  copy, splat), and the kinds that mix types: convert, compare, and/or/xor/not, select;
* `glowll.arg_reduce` (any element type) and `glowll.gather` (any data, integer indices).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import Attribute, Float16Type, Float32Type, Float64Type, IntegerType, Signedness, f32, i8
from xdsl.ir import SSAValue

from glowmlir.dialects import glow, glowll
from glowmlir.dialects.llvm_casts import FPToSIOp, FPToUIOp, UIToFPOp
from glowmlir.dialects.quant import storage_type
from glowmlir.dialects.weights import numpy_dtype
from glowmlir.errors import GlowError
from glowmlir.lowering.activations import clamp, clamp_interval
from glowmlir.lowering.kernel_builder import KernelBuilder
from glowmlir.lowering.loop_skeletons import ViewOf, elementwise_views, emit_strided_map

_FLOAT_PREDICATES = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
_SIGNED_PREDICATES = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}
_UNSIGNED_PREDICATES = {"eq": "eq", "ne": "ne", "lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge"}


def element_of(buffer: SSAValue) -> Attribute:
    return buffer.type.element_type


def is_float(element: Attribute) -> bool:
    return isinstance(element, Float16Type | Float32Type | Float64Type)


def is_boolean(element: Attribute) -> bool:
    return isinstance(element, IntegerType) and element.width.data == 1


def is_unsigned(element: Attribute) -> bool:
    """Unsigned integers and booleans (both widen with zeros)."""
    return isinstance(element, IntegerType) and (is_boolean(element) or element.signedness.data == Signedness.UNSIGNED)


def is_integer_instruction(op: glowll.InstructionOp) -> bool:
    """An elementwise instruction these kernels emit: a mixed-type kind, or integer data."""
    return isinstance(op, glowll.ElementwiseOp) and (
        op.kind.data in glow.mixed_type_kinds() or isinstance(element_of(op.dest), IntegerType))


# ----------------------------------------------------------------------------- scalar helpers


def compare(b: KernelBuilder, predicate: str, lhs: SSAValue, rhs: SSAValue, element: Attribute) -> SSAValue:
    """An i1: `lhs predicate rhs` for values of `element` (f32, signed or unsigned)."""
    if isinstance(element, Float32Type):
        return b.emit(llvm.FCmpOp(lhs, rhs, _FLOAT_PREDICATES[predicate]))
    table = _UNSIGNED_PREDICATES if is_unsigned(element) else _SIGNED_PREDICATES
    return b.int_compare(table[predicate], lhs, rhs)


def boolean_byte(b: KernelBuilder, bit: SSAValue) -> SSAValue:
    """An i1 as a stored boolean (an i8 of 0 or 1)."""
    return b.emit(llvm.ZExtOp(bit, i8))


def convert(b: KernelBuilder, value: SSAValue, source: Attribute, dest: Attribute) -> SSAValue:
    """`value` (stored as `source`) as a stored `dest`: C's conversions (float to integer
    rounds toward zero), non-zero to boolean true, booleans to 0 and 1."""
    if source == dest:
        return value
    dest_storage = storage_type(dest)
    if is_float(source) and is_float(dest):  # f16 and f64 meet f32 at a graph's boundary
        return b.emit((llvm.FPExtOp if dest.bitwidth > source.bitwidth else llvm.FPTruncOp)(value, dest))
    if isinstance(dest, Float32Type):
        return b.emit((UIToFPOp if is_unsigned(source) else llvm.SIToFPOp)(value, f32))
    if is_boolean(dest):
        zero = b.f32(0.0) if isinstance(source, Float32Type) else b.integer(0, storage_type(source))
        return boolean_byte(b, compare(b, "ne", value, zero, source))
    if isinstance(source, Float32Type):
        return b.emit((FPToUIOp if is_unsigned(dest) else FPToSIOp)(value, dest_storage))
    source_width, dest_width = storage_type(source).width.data, dest_storage.width.data
    if dest_width < source_width:
        return b.emit(llvm.TruncOp(value, dest_storage))
    if dest_width > source_width:
        return b.emit((llvm.ZExtOp if is_unsigned(source) else llvm.SExtOp)(value, dest_storage))
    return value


def _constant(b: KernelBuilder, value: float, element: Attribute) -> SSAValue:
    """`value` as a stored `element`; an infinite bound of an integer clip is its type's limit."""
    if isinstance(element, Float32Type):
        return b.f32(value)
    limits = np.iinfo(numpy_dtype(element)) if not is_boolean(element) else None
    if limits is not None and not np.isfinite(value):
        value = limits.max if value > 0 else limits.min
    return b.integer(int(value), storage_type(element))


# ----------------------------------------------------------------------------- elementwise


def emit_integer_elementwise(b: KernelBuilder, op: glowll.ElementwiseOp, view: ViewOf) -> None:
    dest, sources = elementwise_views(op, view)
    kind, out = op.kind.data, element_of(op.dest)
    element = element_of(op.inputs[0]) if op.inputs else out
    unsigned = is_unsigned(element)

    def maximum(x, y):
        return b.select(compare(b, "gt", x, y, element), x, y)

    def minimum(x, y):
        return b.select(compare(b, "lt", x, y, element), x, y)

    def constant(value):
        return _constant(b, value, element)

    def negate(x):
        return b.int_sub(0, x)

    def shift(op_type, x, amount, beyond):
        """x shifted by `amount`; an amount outside [0, width) (LLVM's poison) shifts every
        bit out: `beyond` (0, or the sign for an arithmetic right shift)."""
        inside = b.int_compare("ult", amount, b.integer(amount.type.width.data, amount.type))
        return b.select(inside, b.emit(op_type(x, amount)), beyond)

    def python_mod(x, y):
        """The remainder with the divisor's sign: C's, plus the divisor when the signs differ."""
        if unsigned:
            return b.emit(llvm.URemOp(x, y))
        remainder = b.emit(llvm.SRemOp(x, y))
        differ = b.int_compare("slt", b.emit(llvm.XOrOp(remainder, y)), 0)
        adjust = b.emit(llvm.AndOp(differ, b.int_compare("ne", remainder, 0)))
        return b.select(adjust, b.int_add(remainder, y), remainder)

    def c_mod(x, y):
        if isinstance(element, Float32Type):
            return b.emit(llvm.FRemOp(x, y))
        return b.emit((llvm.URemOp if unsigned else llvm.SRemOp)(x, y))

    compute: dict[str, Callable[[list[SSAValue]], SSAValue]] = {
        "convert": lambda v: convert(b, v[0], element, out),
        "compare": lambda v: boolean_byte(b, compare(b, op.predicate.data, v[0], v[1], element)),
        "and": lambda v: b.emit(llvm.AndOp(v[0], v[1])),
        "or": lambda v: b.emit(llvm.OrOp(v[0], v[1])),
        "xor": lambda v: b.emit(llvm.XOrOp(v[0], v[1])),
        "not": lambda v: b.emit(llvm.XOrOp(v[0], b.integer(1 if is_boolean(element) else -1, v[0].type))),
        # select's inputs are (condition, lhs, rhs): its element is the condition's
        "select": lambda v: b.select(compare(b, "ne", v[0], b.integer(0, i8), element), v[1], v[2]),
        "add": lambda v: b.int_add(v[0], v[1]),
        "sub": lambda v: b.int_sub(v[0], v[1]),
        "mul": lambda v: b.int_mul(v[0], v[1]),
        "div": lambda v: b.emit((llvm.UDivOp if unsigned else llvm.SDivOp)(v[0], v[1])),
        "max": lambda v: maximum(v[0], v[1]),
        "min": lambda v: minimum(v[0], v[1]),
        "neg": lambda v: negate(v[0]),
        "abs": lambda v: v[0] if unsigned else maximum(v[0], negate(v[0])),
        "relu": lambda v: clamp(v[0], clamp_interval(op, "relu"), maximum, minimum, constant),
        "clip": lambda v: clamp(v[0], clamp_interval(op, "clip"), maximum, minimum, constant),
        "copy": lambda v: v[0],
        "splat": lambda v: _constant(b, op.value.value.data, out),
        "shift_left": lambda v: shift(llvm.ShlOp, v[0], v[1], b.integer(0, v[0].type)),
        "shift_right": lambda v: (shift(llvm.LShrOp, v[0], v[1], b.integer(0, v[0].type)) if unsigned else
                                  shift(llvm.AShrOp, v[0], v[1], b.emit(llvm.AShrOp(v[0], b.integer(
                                      v[0].type.width.data - 1, v[0].type))))),
        "mod": lambda v: python_mod(v[0], v[1]),
        "fmod": lambda v: c_mod(v[0], v[1]),
    }
    if kind not in compute:
        raise NotImplementedError(f"glowll.elementwise \"{kind}\" on {element}")
    emit_strided_map(b, dest, sources, compute[kind])


# ----------------------------------------------------------------------------- arg_reduce, gather


def emit_arg_reduce(b: KernelBuilder, op: glowll.ArgReduceOp, view: ViewOf) -> None:
    """For each dest element: a loop along `axis` carrying the best value and its index."""
    dest, src = view(op.dest), view(op.input)
    axis = op.axis.value.data
    size = src.shape[axis]
    element = element_of(op.input)
    # Strictly better keeps the first index; better or equal moves to the last one.
    last = op.select_last_index is not None
    predicate = {("max", False): "gt", ("min", False): "lt",
                 ("max", True): "ge", ("min", True): "le"}[op.kind.data, last]
    with b.loops(dest.shape) as indices:

        def at(position):
            return [*indices[:axis], position, *indices[axis + 1:]]

        with b.loop(1, size, carried=[b.load(src, at(0)), b.integer(0, b.index_type)]) as step:
            value = b.load(src, at(step.index))
            better = compare(b, predicate, value, step.carried[0], element)
            step.next(b.select(better, value, step.carried[0]), b.select(better, step.index, step.carried[1]))
        b.store(convert(b, step.results[1], b.index_type, element_of(op.dest)), dest, indices)


def _load_index(b: KernelBuilder, indices, op, position) -> SSAValue:
    """An index read as an `index_type` integer; a negative one counts from the end of the data's `axis`."""
    element = element_of(op.indices)
    index = convert(b, b.load(indices, position), element, b.index_type)
    if is_unsigned(element):
        return index
    extent = op.data.type.get_shape()[op.axis.value.data]
    return b.select(b.int_compare("slt", index, 0), b.int_add(index, extent), index)


def emit_gather(b: KernelBuilder, op: glowll.GatherOp, view: ViewOf) -> None:
    dest, data, indices = view(op.dest), view(op.data), view(op.indices)
    axis, rank = op.axis.value.data, len(indices.shape)
    with b.loops(dest.shape) as position:
        index = _load_index(b, indices, op, position[axis:axis + rank])
        b.store(b.load(data, [*position[:axis], index, *position[axis + rank:]]), dest, position)


def emit_gather_elements(b: KernelBuilder, op: glowll.GatherElementsOp, view: ViewOf) -> None:
    dest, data, indices = view(op.dest), view(op.data), view(op.indices)
    axis = op.axis.value.data
    with b.loops(dest.shape) as position:
        index = _load_index(b, indices, op, position)
        b.store(b.load(data, [*position[:axis], index, *position[axis + 1:]]), dest, position)


def _scatter_combine(b: KernelBuilder, reduction: str, element: Attribute):
    """How ScatterND's `reduction` combines the element at a position with its update."""
    if reduction == "none":
        return lambda old, update: update
    if is_boolean(element):
        raise GlowError(f"ScatterND with reduction \"{reduction}\" of booleans is not supported")
    if is_float(element):
        return {"add": b.fadd, "mul": b.fmul, "max": b.fmax, "min": b.fmin}[reduction]
    if reduction in ("add", "mul"):
        return b.int_add if reduction == "add" else b.int_mul
    better = "gt" if reduction == "max" else "lt"
    return lambda old, update: b.select(compare(b, better, update, old, element), update, old)


def emit_scatter_nd(b: KernelBuilder, op: glowll.ScatterNDOp, view: ViewOf) -> None:
    """For each index tuple in order: the slice it names, if it lies inside dest, combined
    with its update (negative indices count from the end)."""
    dest, indices, updates = view(op.dest), view(op.indices), view(op.updates)
    *outer, depth = indices.shape
    combine = _scatter_combine(b, op.reduction.data, element_of(op.dest))
    index_element = element_of(op.indices)
    with b.loops(outer) as position:
        coordinates, inside = [], None
        for axis in range(depth):
            index = convert(b, b.load(indices, [*position, axis]), index_element, b.index_type)
            if not is_unsigned(index_element):
                index = b.select(b.int_compare("slt", index, 0), b.int_add(index, dest.shape[axis]), index)
            within = b.in_range(index, dest.shape[axis])
            inside = within if inside is None else b.emit(llvm.AndOp(inside, within))
            coordinates.append(index)
        with b.when(inside), b.loops(dest.shape[depth:]) as rest:
            at = [*coordinates, *rest]
            b.store(combine(b.load(dest, at), b.load(updates, [*position, *rest])), dest, at)


INTEGER_KERNELS = {glowll.ArgReduceOp: emit_arg_reduce, glowll.GatherOp: emit_gather,
                   glowll.GatherElementsOp: emit_gather_elements, glowll.ScatterNDOp: emit_scatter_nd}
"""The instructions only these kernels emit (any element type)."""
