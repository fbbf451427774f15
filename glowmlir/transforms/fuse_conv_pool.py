"""`glow-fuse-conv-pool`: a MaxPool/AvgPool after a Convolution becomes the convolution's
fused `pool` window, so only the pooled output is stored.

A quantized AvgPool whose input is the convolution's int8 output widened exactly to int16
(a `glow.rescale_quantized` to `quant.finer_levels`: `quantized_conversion._averaged` averages a much
finer profiled range so, a global average pool's) fuses too, the widening with it: the
convolution gets `pool_widening` (the bits) and the pool's int16 result, and its kernels
sum its int8 levels and average 2^bits times the sum, exactly the unfused int16 pool's
numbers, without the widened tensor or the full-resolution one. Only the Cortex-M cores'
-O3 builds ask for it (else `widened-averages=false`): in a size-first build (-Os/-Oz) the
convolution (DS-CNN's last pointwise one) shares the kernel of its equal-shaped unpooled
partners, and a pooled kernel of its own costs more code than the widening and the int16
pool (DS-CNN on the M7 at -Os: +856 B for -70k instructions; on the M3, whose pooled kernel
is the generic one, +33k instructions); on a host the pooled convolution is computed row
by row (DS-CNN on an AVX-512 VNNI host: 13% slower, +3.7 KB of code).

With a vector tile (`lanes`, `accumulators`, `masked-loads`, `registers`: the
target's, as `glowll-select-vector-columns` takes them), a pool stays apart from a float
convolution that alone would run on whole planes computing fewer lanes than its rows (a
backend's `Backend.prefers_unfused`: the host vector unit's; one that takes the
vector-channels kernel fuses): fused, it would be computed row by row (VGG-19's pooled
3x3s on 56 x 56: 1.15 x onnxruntime's time as rows, 1.06 as planes). That costs the
convolution's full output in activations, so only hosts (targets with a vector tile) ask
for it."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from glowmlir.backends import backends
from glowmlir.dialects import glow
from glowmlir.dialects.quant import UniformQuantizedType, finer_levels
from glowmlir.quantization.rescaling import FINER_LEVEL_BITS
from glowmlir.target import VectorTile


def widening_of(pool: glow.MaxPoolOp | glow.AvgPoolOp) -> glow.RescaleQuantizedOp | None:
    """The rescale before an AvgPool that widens its source's int8 levels exactly to int16
    (each x 2^`FINER_LEVEL_BITS`, `quant.finer_levels`), if there is one and only the pool
    reads it."""
    rescale = pool.input.owner
    if not isinstance(pool, glow.AvgPoolOp) or not isinstance(rescale, glow.RescaleQuantizedOp) \
            or not pool.input.has_one_use():
        return None
    source, widened = glow.element_of(rescale.input), glow.element_of(rescale.result)
    exact = (isinstance(source, UniformQuantizedType) and source.bitwidth == 8 and not source.per_channel
             and widened == finer_levels(source, FINER_LEVEL_BITS))
    return rescale if exact else None


@dataclass
class FusePoolIntoConvolution(RewritePattern):
    """pool(conv(x)) -> conv(x) {pool = "max" or "avg", pool_kernel, pool_strides, pool_pads};
    avg_pool(widen(conv(x))) -> conv(x) {pool = "avg", ..., pool_widening} (`widening_of`)."""

    tile: VectorTile | None = None
    widened_averages: bool = True

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: glow.MaxPoolOp | glow.AvgPoolOp, rewriter: PatternRewriter) -> None:
        widening = widening_of(op)
        if widening is not None and not self.widened_averages:
            return
        convolved = op.input if widening is None else widening.input
        conv = convolved.owner
        if not isinstance(conv, glow.ConvolutionOp) or conv.pool is not None or not convolved.has_one_use():
            return
        if widening is None and op.result.type.element_type != conv.result.type.element_type:
            return  # quantized with different parameters: the pooled rows could not be reused as they are
        if self.tile is not None and self.runs_on_planes(conv):
            return
        pool_kind = glow.PoolKind.MAX if isinstance(op, glow.MaxPoolOp) else glow.PoolKind.AVG
        count_include_pad = isinstance(op, glow.AvgPoolOp) and op.count_include_pad is not None
        pool = {"pool": pool_kind, "pool_kernel": op.kernel, "pool_strides": op.strides, "pool_pads": op.pads,
                "pool_count_include_pad": count_include_pad,
                "pool_widening": None if widening is None else FINER_LEVEL_BITS}
        fused = glow.with_attributes_of(glow.ConvolutionOp(conv.input, conv.filter, conv.bias,
                                                           **conv.builder_arguments() | pool,
                                                           result_element=op.result.type.element_type), conv)
        rewriter.replace(op, fused)
        if widening is not None:
            rewriter.erase(widening)
        rewriter.erase(conv)

    def runs_on_planes(self, conv: glow.ConvolutionOp) -> bool:
        """A backend runs it faster unpooled (`Backend.prefers_unfused`)."""
        return any(backend.prefers_unfused is not None and backend.prefers_unfused(conv, self.tile)
                   for backend in backends())


@dataclass(frozen=True)
class FuseConvPool(ModulePass):
    """Merges a MaxPool/AvgPool into the Convolution feeding it: the convolution's
    full-resolution output is then never stored, only the pooled one."""

    name = "glow-fuse-conv-pool"
    lanes: int = 0
    """The target's vector tile (0: none, every pool fuses)."""
    accumulators: int = 0
    masked_loads: bool = False
    registers: int = 0
    widened_averages: bool = True
    """An average pool of the convolution's output widened exactly to int16 fuses, the
    widening with it (`widening_of`); false in size-first and host builds (the module doc)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        tile = (VectorTile(self.lanes, self.accumulators, self.masked_loads, self.registers)
                if self.lanes else None)
        PatternRewriteWalker(FusePoolIntoConvolution(tile, self.widened_averages),
                             apply_recursively=False).rewrite_module(op)
