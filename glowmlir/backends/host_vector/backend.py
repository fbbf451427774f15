"""The microkernels of a host's vector unit: float convolutions on register tiles of vectors
of output columns ("vector-columns"), of whole planes ("vector-planes"), of output channels
("vector-channels") and of a depthwise convolution's rows ("vector-depthwise"), all emitted
by `float_kernels`; int8 depthwise ones on int32 lanes ("vector-depthwise-int8",
"vector-planes-int8", `int8_depthwise`). `glowll-select-vector-columns` picks them."""

from __future__ import annotations

from xdsl.dialects.builtin import f32

from glowmlir.backends import Backend, Microkernel, PipelineOptions, SelectionOrder
from glowmlir.dialects import glow
from glowmlir.lowering import vector_layout as layout
from glowmlir.lowering.vector_layout import verify_column_filter


def runs_on_planes(conv, tile) -> bool:
    """A float convolution that alone would run on whole planes, computing fewer lanes than its
    rows (`layout.prefers_planes`): fused with a pool, it would be computed row by row."""
    if glow.is_nhwc(conv) or any(glow.element_of(v) != f32 for v in (conv.input, conv.result)):
        return False
    height, width = glow.shape_of(conv.result)[2:]
    return layout.prefers_planes(glow.shape_of(conv.filter), conv.strides.get_values(), conv.pads.get_values(),
                                 conv.dilations.get_values(), conv.group.value.data, height, width, tile)


def _float(name: str) -> Microkernel:
    return Microkernel(name, "glowmlir.backends.host_vector.float_kernels", ops=("glowll.convolution",), numbers="f32",
                       tiled=True, verify=verify_column_filter)


def _int8(name: str) -> Microkernel:
    return Microkernel(name, "glowmlir.backends.host_vector.int8_depthwise", ops=("glowll.convolution",), tiled=True,
                       verify=verify_column_filter)


def glowll_passes(options: PipelineOptions) -> list:
    """On a target with a vector unit, `glowll-select-vector-columns` on its tile."""
    from glowmlir.backends.host_vector.select_kernels import SelectVectorColumns

    tile = options.target.vector_tile if options.target is not None else None
    if tile is None:
        return []
    return [(SelectionOrder.VECTOR_UNIT, SelectVectorColumns(tile.lanes, tile.accumulators, tile.masked_loads,
                                                             tile.registers))]


PASSES = {"glowll-select-vector-columns": ("glowmlir.backends.host_vector.select_kernels", "SelectVectorColumns")}
"""Its passes for `glow-opt -p`: name -> (module, class)."""

BACKEND = Backend("host_vector", passes=PASSES, microkernels=(
    _int8(layout.INT8_DEPTHWISE), _int8(layout.INT8_PLANES),
    _float(layout.COLUMNS), _float(layout.PLANES), _float(layout.CHANNELS), _float(layout.DEPTHWISE),
), prefers_unfused=runs_on_planes, glowll_passes=glowll_passes)
