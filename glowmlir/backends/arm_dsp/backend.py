"""The Arm DSP extension's microkernels: "arm-dsp" (int8 or int16 convolutions and
FullyConnected on packed int16 pairs, `kernels`) and "level-tables" (int8 adds, subs and
softmaxes on tables of levels, `level_tables`); `glowll-select-arm-dsp-kernels` picks them."""

from __future__ import annotations

from xdsl.dialects.builtin import i16
from xdsl.utils.exceptions import VerifyException

from glowmlir.backends import Backend, Microkernel
from glowmlir.backends.arm_dsp import layout
from glowmlir.dialects import glow, glowll
from glowmlir.dialects.quant import storage_type

OWN_PROPERTIES = {"loop_pairs": ", 1 or more channel pairs a step",
                  "biases_in_filter": " with doubled_accumulators"}
"""The convolution properties only an "arm-dsp" convolution has -> what the message adds."""


def verify_packed_pairs(op) -> None:
    """A convolution's filter packed as `layout.pack_filter` packs it (int16 pairs), and the
    properties of a size-first build's loops and of biases packed into the filter."""
    if not isinstance(op, glowll.ConvolutionOp):
        return
    if op.loop_pairs is not None and op.loop_pairs.value.data < 1:
        raise VerifyException(f"{op.name}: loop_pairs is an arm-dsp convolution's{OWN_PROPERTIES['loop_pairs']}")
    if op.biases_in_filter is not None and op.doubled_accumulators is None:
        raise VerifyException(f"{op.name}: biases_in_filter is an arm-dsp convolution's"
                              f"{OWN_PROPERTIES['biases_in_filter']}")
    if op.filter_shape is None:
        raise VerifyException(f"{op.name}: a packed filter needs its filter_shape")
    expected = layout.packed_filter_shape(op)
    if storage_type(op.filter.type.element_type) != i16 or glow.shape_of(op.filter) != expected:
        raise VerifyException(f"{op.name}: the packed filter must be int16 pairs {list(expected)}")


BACKEND = Backend("arm_dsp", (
    Microkernel("arm-dsp", "backends.arm_dsp.kernels", int16=True, properties=tuple(OWN_PROPERTIES),
                verify=verify_packed_pairs),
    Microkernel(layout.LEVEL_TABLES, "backends.arm_dsp.level_tables", ops=("glowll.elementwise", "glowll.softmax"),
                elementwise_kinds=layout.LEVEL_TABLE_ELEMENTWISE),
))
