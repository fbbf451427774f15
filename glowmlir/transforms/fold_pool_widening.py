"""`glowll-fold-pool-widening`: the rescale that widens an int8 tensor exactly to int16 for
the average pool alone reading it is folded into that pool.

An int8 average of a much finer profiled range (a squeeze-excitation block's or a
classifier's global pool, `quantized_conversion._averaged`) is taken on the input's levels
widened to int16 (`quant.finer_levels`: each level x 2^k, one `glowll.elementwise
{kind = "rescale_quantized"}` over the whole tensor), then rescaled once. The widening is
exact and the pool only sums: `sum(x << k) = sum(x) << k`, so

    glowll.elementwise %w, %x {kind = "rescale_quantized"}   // i8 -> its finer i16 levels
    glowll.avg_pool %p, %w {...}

becomes `glowll.avg_pool %p, %x {..., pool_widening = k}`: the pool reads the int8 levels,
sums them and shifts the sum left by k before its division (as a convolution's fused
widening pool does, `glow.FusedPool.pool_widening`). The outputs are the same bits; the pass
over the tensor writing int16 levels, and their buffer, are gone. It runs after kernel
selection: a pool a kernel library took (CMSIS-NN, HiFi4) is a library call by then and
keeps its rescale. Only NCHW pools of the generic kernel, whose widened buffer nothing else
reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i8, i16, i64
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from glowmlir.dialects import glowll
from glowmlir.dialects.quant import UniformQuantizedType, finer_levels, storage_type


def widening_bits(rescale: glowll.ElementwiseOp) -> int | None:
    """k where `rescale` widens a per-tensor int8 type exactly to `finer_levels(., k)`."""
    if rescale.kind.data != "rescale_quantized" or rescale.microkernel is not None or len(rescale.inputs) != 1:
        return None
    source, result = rescale.inputs[0].type.element_type, rescale.dest.type.element_type
    if not all(isinstance(t, UniformQuantizedType) and not t.per_channel for t in (source, result)) \
            or storage_type(source) != i8 or storage_type(result) != i16 \
            or rescale.inputs[0].type.get_shape() != rescale.dest.type.get_shape():
        return None
    return next((k for k in range(1, 9) if finer_levels(source, k) == result), None)


def widened_pool(rescale: glowll.ElementwiseOp) -> glowll.AvgPoolOp | None:
    """The NCHW average pool of the generic kernel that alone reads `rescale`'s buffer."""
    widened = rescale.dest
    if not isinstance(widened.owner, glowll.AllocOp) or widened.uses.get_length() != 2:
        return None
    pool = next((use.operation for use in widened.uses if use.operation is not rescale), None)
    if not isinstance(pool, glowll.AvgPoolOp) or pool.input is not widened or pool.dest is widened \
            or pool.pool_widening is not None or pool.layout is not None or pool.parent is not rescale.parent:
        return None
    block, source = pool.parent, rescale.inputs[0]
    first, last = block.get_operation_index(rescale), block.get_operation_index(pool)
    if first > last or any(source in between.operands[:1] for between in list(block.ops)[first + 1:last]):
        return None  # the pool would read levels written after the rescale read them
    return pool


@dataclass(frozen=True)
class FoldPoolWidening(ModulePass):
    """Folds each exact int8-to-int16 widening that only an average pool reads into the
    pool (`pool_widening`, see the module doc)."""

    name = "glowll-fold-pool-widening"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for rescale in [o for o in op.walk() if isinstance(o, glowll.ElementwiseOp)]:
            bits = widening_bits(rescale)
            pool = None if bits is None else widened_pool(rescale)
            if pool is None:
                continue
            widened = rescale.dest
            pool.operands[1] = rescale.inputs[0]
            pool.properties["pool_widening"] = IntegerAttr(bits, i64)
            Rewriter.erase_op(rescale)
            Rewriter.erase_op(widened.owner)

