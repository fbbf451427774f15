"""A small builder for kernel code in xDSL's `llvm` dialect.

xDSL 0.74 has no arith/scf/memref → llvm conversions, so kernels are emitted directly as
llvm-dialect ops. `KernelBuilder` hides the block plumbing: integer arithmetic on Python
ints folds at build time, counted loops become header/body/exit blocks with block
arguments (the translator turns them into phis), and buffers are addressed with GEPs so
that LLVM's alias analysis and vectorizer see plain affine accesses.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, IntegerType, VectorType, f32, i1, i8, i32, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

Index = int | SSAValue
"""An index: a Python int while it is known at compile time, else an SSA value of the
builder's `index_type` (the target's pointer width: i64, or i32 on 32-bit targets)."""

_I32_RANGE = range(-(2**31), 2**31)
"""What a GEP's constant index holds: the `llvm` dialect keeps them as i32."""

_NSW = llvm.OverflowAttr([llvm.OverflowFlag.NO_SIGNED_WRAP])
CONTRACT = llvm.FastMathAttr([llvm.FastMathFlag.ALLOW_CONTRACT])
"""Lets LLVM fuse a*b+c into one fma, the only liberty taken in most kernels."""
REASSOCIATE = llvm.FastMathAttr([llvm.FastMathFlag.ALLOW_CONTRACT, llvm.FastMathFlag.REASSOC])
"""Also lets LLVM vectorize float reductions (softmax sums)."""


@dataclass
class View:
    """Elements of one buffer: element (i0, i1, ...) is at `base[offset + sum(i_d * strides[d])]`,
    each of `element_type` (f32, or the integer storage type of a quantized buffer)."""

    base: SSAValue
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0
    element_type: Attribute = f32

    @staticmethod
    def contiguous(base: SSAValue, shape: Sequence[int], offset: int = 0, element_type: Attribute = f32) -> View:
        strides, step = [], 1
        for size in reversed(shape):
            strides.append(step)
            step *= size
        return View(base, tuple(shape), tuple(reversed(strides)), offset, element_type)

    def reshaped(self, shape: Sequence[int], strides: Sequence[int], offset: int | None = None) -> View:
        """The same buffer and element type seen with another shape, strides and offset."""
        return View(self.base, tuple(shape), tuple(strides), self.offset if offset is None else offset,
                    self.element_type)


@dataclass
class Loop:
    """An open counted loop; `carried` are the loop-carried values of this iteration."""

    index: SSAValue
    carried: list[SSAValue]
    results: list[SSAValue] = field(default_factory=list)
    next_values: list[SSAValue] | None = None

    def next(self, *values: SSAValue) -> None:
        """The carried values for the next iteration."""
        self.next_values = list(values)


def is_zero(value: int | SSAValue) -> bool:
    """Whether a value is the compile-time integer 0 (an SSA value is not known to be)."""
    return isinstance(value, int) and value == 0


def _byte_size(element_type: Attribute) -> int:
    return element_type.compile_time_size


class KernelBuilder:
    """Appends llvm-dialect ops to the current block of a function region.

    Indices, loop counters and offsets are `index_type` integers, the width of the
    target's pointers, so that every address the target can hold is computed exactly;
    `cache_bytes`: one core's cache the kernels block their loops for (0: unknown, no
    blocking). A kernel whose code is vectorized and unrolled by hand sets `optimize_for_size`:
    its function is then `optsize`, so that LLVM unrolls none of its loops again; a kernel
    whose loops are too short for LLVM's vectorizing to pay (an int8 softmax over a row of
    logits) sets `minimize_size` too: its function is `minsize`. Either keeps the kernel a
    function of its own (inlined, its caller's attributes would apply).
    """

    def __init__(self, region: Region, block: Block, index_type: IntegerType = i64, cache_bytes: int = 0):
        self.region = region
        self.block = block
        self.index_type = index_type
        self.cache_bytes = cache_bytes
        self.optimize_for_size = False  # set by a kernel whose loops LLVM's unroller only inflates
        self.minimize_size = False  # set by a kernel whose loops LLVM's vectorizer only inflates
        self._constants: dict[tuple[int, Attribute], SSAValue] = {}
        self._lane_constants: dict[tuple[tuple[int, ...], Attribute], SSAValue] = {}
        self._lane_ops: set[Operation] = set()

    def constant(self, value: int, int_type: Attribute) -> SSAValue:
        """An integer constant, defined once per function at the top of its entry block (a
        kernel's loops use the same few: emitted at each use, they were a third of its ops)."""
        if isinstance(int_type, VectorType):  # in every lane
            return self.splat(self.constant(value, int_type.element_type), int_type)
        key = (value, int_type)
        if key not in self._constants:
            op = llvm.ConstantOp(IntegerAttr(value, int_type), int_type)
            entry = self.region.blocks[0]
            entry.insert_op_before(op, entry.first_op) if entry.first_op else entry.add_op(op)
            self._constants[key] = op.results[0]
        return self._constants[key]

    def lane_mask(self, lanes: Sequence[bool]) -> SSAValue:
        """A constant `<N x i1>` predicate (`lane_constants`: the column kernels' edge tiles use
        the same few at every tap; emitted at each use, they were 40% of MobileNetV2's ops)."""
        return self.lane_constants([int(on) for on in lanes], i1)

    def lane_constants(self, values: Sequence[int], element_type: Attribute) -> SSAValue:
        """A constant vector of `values`, one a lane, defined once per function after the
        constants and stack arrays at the top of its entry block."""
        key = (tuple(values), element_type)
        if key not in self._lane_constants:
            ops = [llvm.UndefOp(VectorType(element_type, [len(values)]))]
            for lane, value in enumerate(values):
                ops.append(llvm.InsertElementOp(ops[-1].results[0], self.integer(value, element_type),
                                                self.integer(lane)))
            entry = self.region.blocks[0]
            at = entry.first_op
            # after the constants and the stack arrays (`alloca`) at the top: a constant the
            # vector uses may sit below an array allocated after it
            while at is not None and (isinstance(at, (llvm.ConstantOp, llvm.AllocaOp)) or at in self._lane_ops):
                at = at.next_op
            for op in ops:
                entry.insert_op_before(op, at) if at is not None else entry.add_op(op)
            self._lane_ops.update(ops)
            self._lane_constants[key] = ops[-1].results[0]
        return self._lane_constants[key]

    def splat(self, value: SSAValue, vector_type: VectorType) -> SSAValue:
        """A vector of `vector_type` holding `value` in every lane."""
        undefined = self.emit(llvm.UndefOp(vector_type))
        first = self.emit(llvm.InsertElementOp(undefined, value, self.integer(0)))
        lanes = DenseArrayBase.from_list(i32, [0] * vector_type.get_shape()[0])
        return self.emit(llvm.ShuffleVectorOp(first, undefined, lanes, vector_type))

    def lanewise(self, value: int | SSAValue, vector_type: VectorType) -> int | SSAValue:
        """A value for lane-by-lane arithmetic on `vector_type`: a compile-time number as it is
        (`int_value` makes it a constant vector where used), a run-time scalar (as a layer's
        record holds) in every lane, a vector as it is."""
        if isinstance(value, int) or isinstance(value.type, VectorType):
            return value
        return self.splat(value, vector_type)

    def emit(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0] if op.results else None

    def new_block(self, arg_types: Sequence = ()) -> Block:
        block = Block(arg_types=arg_types)
        self.region.add_block(block)
        return block

    # ----------------------------------------------------------------- indices (index_type)

    def index(self, value: Index) -> SSAValue:
        if isinstance(value, int):
            return self.constant(value, self.index_type)
        return value

    def add(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if b == 0:
            return a
        if a == 0:
            return b
        return self.emit(llvm.AddOp(self.index(a), self.index(b), overflow=_NSW))

    def sub(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a - b
        if b == 0:
            return a
        return self.emit(llvm.SubOp(self.index(a), self.index(b), overflow=_NSW))

    def mul(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        if b == 1:
            return a
        if a == 1:
            return b
        if a == 0 or b == 0:
            return 0
        return self.emit(llvm.MulOp(self.index(a), self.index(b), overflow=_NSW))

    def div(self, a: Index, b: int) -> Index:
        """Signed division truncating toward zero (b > 0)."""
        if isinstance(a, int):
            return int(a / b)
        if b == 1:
            return a
        return self.emit(llvm.SDivOp(a, self.index(b)))

    def remainder(self, a: Index, b: int) -> Index:
        """a mod b for a >= 0, b > 0."""
        if isinstance(a, int):
            return a % b
        if b == 1:
            return 0
        return self.emit(llvm.URemOp(a, self.index(b)))

    def compare(self, predicate: str, a: Index, b: Index) -> SSAValue:
        """Integer comparison: predicate is one of slt, sle, sgt, sge, ult, eq, ne."""
        flag = llvm.ICmpPredicateFlag(predicate).to_int()
        return self.emit(llvm.ICmpOp(self.index(a), self.index(b), IntegerAttr(flag, i64)))

    def max(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return max(a, b)
        return self.emit(llvm.SelectOp(self.compare("sgt", a, b), self.index(a), self.index(b)))

    def min(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return min(a, b)
        return self.emit(llvm.SelectOp(self.compare("slt", a, b), self.index(a), self.index(b)))

    def ceil_div(self, a: Index, b: int) -> Index:
        """ceil(a / b) for b > 0, exact whenever a > -b (callers clamp the rest)."""
        return self.div(self.add(a, b - 1), b)

    # ----------------------------------------------------------------- floats (f32)

    def f32(self, value: float) -> SSAValue:
        return self.emit(llvm.ConstantOp(FloatAttr(float(value), f32), f32))

    def fadd(self, a, b, fast_math=CONTRACT):
        return self.emit(llvm.FAddOp(a, b, fast_math))

    def fsub(self, a, b, fast_math=CONTRACT):
        return self.emit(llvm.FSubOp(a, b, fast_math))

    def fmul(self, a, b, fast_math=CONTRACT):
        return self.emit(llvm.FMulOp(a, b, fast_math))

    def fdiv(self, a, b, fast_math=CONTRACT):
        return self.emit(llvm.FDivOp(a, b, fast_math))

    def fma(self, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        """a * b + c rounded once (`llvm.fma`) of f32 vectors: one `vfmadd` where the target has
        FMA3 (elsewhere a library call: the callers ask `host_vector.target.fused_multiply_add`)."""
        lanes = a.type.get_shape()[0]
        return self.emit(llvm.CallIntrinsicOp(f"llvm.fma.v{lanes}f32", [a, b, c], [a.type]))

    def fmax(self, a, b):
        return self.emit(llvm.SelectOp(self.emit(llvm.FCmpOp(a, b, "ogt")), a, b))

    def fmin(self, a, b):
        return self.emit(llvm.SelectOp(self.emit(llvm.FCmpOp(a, b, "olt")), a, b))

    def to_f32(self, a: Index) -> SSAValue:
        if isinstance(a, int):
            return self.f32(float(a))
        return self.emit(llvm.SIToFPOp(a, f32))

    # ----------------------------------------------------------------- integers of any width (quantized kernels)

    def integer(self, value: int, int_type: Attribute = i32) -> SSAValue:
        return self.constant(value, int_type)

    def int_value(self, value: int | SSAValue, int_type: Attribute = i32) -> SSAValue:
        return self.integer(value, int_type) if isinstance(value, int) else value

    def int_add(self, a, b) -> SSAValue:
        return self.emit(llvm.AddOp(*self._same_int(a, b)))

    def int_sub(self, a, b, no_signed_wrap: bool = False) -> SSAValue:
        """a - b; `no_signed_wrap`: the caller knows it does not overflow (LLVM's `nsw`)."""
        if no_signed_wrap:
            return self.emit(llvm.SubOp(*self._same_int(a, b), overflow=_NSW))
        return self.emit(llvm.SubOp(*self._same_int(a, b)))

    def int_mul(self, a, b) -> SSAValue:
        return self.emit(llvm.MulOp(*self._same_int(a, b)))

    def int_and(self, a, b) -> SSAValue:
        return self.emit(llvm.AndOp(*self._same_int(a, b)))

    def int_or(self, a, b) -> SSAValue:
        return self.emit(llvm.OrOp(*self._same_int(a, b)))

    def int_xor(self, a, b) -> SSAValue:
        return self.emit(llvm.XOrOp(*self._same_int(a, b)))

    def shift_right_logical(self, a, b) -> SSAValue:
        return self.emit(llvm.LShrOp(*self._same_int(a, b)))

    def shift_left(self, a, b) -> SSAValue:
        return self.emit(llvm.ShlOp(*self._same_int(a, b)))

    def shift_right(self, a, b) -> SSAValue:
        """Arithmetic (sign-preserving) shift right."""
        return self.emit(llvm.AShrOp(*self._same_int(a, b)))

    def int_div(self, a, b) -> SSAValue:
        """Signed division truncating toward zero."""
        return self.emit(llvm.SDivOp(*self._same_int(a, b)))

    def int_compare(self, predicate: str, a, b) -> SSAValue:
        a, b = self._same_int(a, b)
        return self.emit(llvm.ICmpOp(a, b, IntegerAttr(llvm.ICmpPredicateFlag(predicate).to_int(), i64)))

    def select(self, condition: SSAValue, a, b) -> SSAValue:
        a, b = self._same_int(a, b) if isinstance(a, int) or isinstance(b, int) else (a, b)
        return self.emit(llvm.SelectOp(condition, a, b))

    def assume(self, condition: SSAValue) -> None:
        """Tells LLVM that an i1 `condition` holds (`llvm.assume`: the program is undefined
        where it does not), so that it drops what the fact makes dead."""
        self.emit(llvm.CallIntrinsicOp("llvm.assume", [condition], []))

    def int_max(self, a, b) -> SSAValue:
        return self.select(self.int_compare("sgt", a, b), a, b)

    def int_min(self, a, b) -> SSAValue:
        return self.select(self.int_compare("slt", a, b), a, b)

    def clamp(self, value, low, high) -> SSAValue:
        return self.int_min(self.int_max(value, low), high)

    def sign_extend(self, value: SSAValue, int_type: Attribute = i32) -> SSAValue:
        if value.type == int_type:
            return value
        return self.emit(llvm.SExtOp(value, int_type))

    def as_index(self, value: SSAValue) -> SSAValue:
        """A signed integer value as an index (sign-extended or truncated to `index_type`)."""
        if value.type.width.data > self.index_type.width.data:
            return self.truncate(value, self.index_type)
        return self.sign_extend(value, self.index_type)

    def truncate(self, value: SSAValue, int_type: Attribute) -> SSAValue:
        if value.type == int_type:
            return value
        return self.emit(llvm.TruncOp(value, int_type))

    def _same_int(self, a, b) -> tuple[SSAValue, SSAValue]:
        """Two operands of one integer type; Python ints take the other operand's type (i32 if both are ints)."""
        int_type = a.type if isinstance(a, SSAValue) else b.type if isinstance(b, SSAValue) else i32
        return self.int_value(a, int_type), self.int_value(b, int_type)

    def bitcast(self, value: SSAValue, to_type: Attribute) -> SSAValue:
        return self.emit(llvm.BitcastOp(value, to_type))

    def opaque(self, value: SSAValue) -> SSAValue:
        """`value`, through an empty inline asm LLVM cannot see through: loads from an opaque
        pointer made inside a loop are not hoisted out of it (no instruction is emitted)."""
        return self.emit(llvm.InlineAsmOp("", "=r,0", [value], [value.type]))

    # ----------------------------------------------------------------- memory

    def offset_pointer(self, base: SSAValue, index: Index, element_type: Attribute) -> SSAValue:
        """`&base[index]` for elements of `element_type` (an inbounds GEP).

        A constant index is kept in the GEP only if it fits the i32 the `llvm` dialect
        stores it in; a larger one (a buffer 2 GiB into its region) is an `index_type`
        constant, so it is never wrapped."""
        if isinstance(index, int) and index == 0:
            return base
        if isinstance(index, int) and index in _I32_RANGE:
            return self.emit(llvm.GEPOp(base, [index], element_type, inbounds=True))
        return self.emit(llvm.GEPOp(base, [llvm.GEP_USE_SSA_VAL], element_type, ssa_indices=[self.index(index)],
                                    inbounds=True))

    def byte_address(self, base: SSAValue, byte_offset: int) -> SSAValue:
        """`base + byte_offset` for a region base pointer."""
        return self.offset_pointer(base, byte_offset, i8)

    def element(self, view: View, indices: Sequence[Index]) -> SSAValue:
        """The address of one element of a view."""
        flat: Index = view.offset
        for index, stride in zip(indices, view.strides, strict=True):
            flat = self.add(flat, self.mul(index, stride))
        return self.offset_pointer(view.base, flat, view.element_type)

    def load(self, view: View, indices: Sequence[Index]) -> SSAValue:
        return self.emit(llvm.LoadOp(self.element(view, indices), view.element_type,
                                     alignment=_byte_size(view.element_type)))

    def store(self, value: SSAValue, view: View, indices: Sequence[Index]) -> None:
        self.emit(llvm.StoreOp(value, self.element(view, indices), alignment=_byte_size(view.element_type)))

    def alloca(self, count: Index, element_type: Attribute | None = None, alignment: int = 64) -> SSAValue:
        """A stack array of `count` elements (default f32), allocated once in the function's
        entry block, aligned for the widest vector loads unless told less (a stack aligned
        more than the target's own costs a frame pointer: one register fewer). A run-time
        `count` (a shape-parameterised kernel's, from its record) is allocated where the
        builder is, which must be outside every loop."""
        element_type = element_type or f32
        if isinstance(count, SSAValue):
            return self.emit(llvm.AllocaOp(self.index(count), element_type, alignment=alignment))
        entry = self.region.blocks[0]
        size = llvm.ConstantOp(IntegerAttr(count, self.index_type), self.index_type)
        array = llvm.AllocaOp(size.results[0], element_type, alignment=alignment)
        entry.insert_ops_before([size, array], entry.first_op) if entry.first_op else entry.add_ops([size, array])
        return array.results[0]

    # ----------------------------------------------------------------- control flow

    @contextlib.contextmanager
    def loop(self, start: Index, stop: Index, carried: Sequence[SSAValue] = ()) -> Iterator[Loop]:
        """`for i in range(start, stop)`; the body is emitted inside the `with` block.

        Loop-carried values start as `carried`; the body sets the next ones with
        `loop.next(...)`, and after the `with` block `loop.results` holds the final ones.
        """
        carried_types = [v.type for v in carried]
        header = self.new_block([self.index_type, *carried_types])
        body = self.new_block()
        exit_block = self.new_block(carried_types)
        self.emit(llvm.BrOp(header, self.index(start), *carried))
        self.block = header
        index, *values = header.args
        more = self.compare("slt", index, stop)
        self.emit(llvm.CondBrOp(more, body, [], exit_block, values))
        self.block = body
        loop = Loop(index, list(values))
        yield loop
        if carried and loop.next_values is None:
            raise AssertionError("a loop with carried values must call loop.next()")
        self.emit(llvm.BrOp(header, self.add(index, 1), *(loop.next_values or [])))
        self.block = exit_block
        loop.results = list(exit_block.args)

    def loops(self, shape: Sequence[int]):
        """A nest of loops over `shape` (outermost first); yields the list of indices."""
        return _LoopNest(self, shape)

    @contextlib.contextmanager
    def when(self, condition: SSAValue) -> Iterator[None]:
        """`if condition:`; the guarded code is emitted inside the `with` block."""
        then_block, join = self.new_block(), self.new_block()
        self.emit(llvm.CondBrOp(condition, then_block, [], join, []))
        self.block = then_block
        yield
        self.emit(llvm.BrOp(join))
        self.block = join

    def in_range(self, value: Index, size: int) -> SSAValue:
        """0 <= value < size, as one unsigned comparison."""
        return self.compare("ult", value, size)


class _LoopNest:
    def __init__(self, builder: KernelBuilder, shape: Sequence[int]):
        self.builder, self.shape = builder, list(shape)
        self.stack = contextlib.ExitStack()

    def __enter__(self) -> list[Index]:
        indices: list[Index] = []
        for size in self.shape:
            if size == 1:
                indices.append(0)  # no loop for a unit dimension
            else:
                indices.append(self.stack.enter_context(self.builder.loop(0, size)).index)
        return indices

    def __exit__(self, *exc) -> None:
        self.stack.__exit__(*exc)


