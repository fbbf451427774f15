"""The size-first microkernels: int8 matrix products and depthwise convolutions whose shapes
are data (`kernels`), portable or on the Arm DSP extension, read from a layer's parameters
record (`record`); `glowll-shape-parameterised-kernels` picks them."""

from __future__ import annotations

from xdsl.utils.exceptions import VerifyException

from glowmlir.backends import Backend, Microkernel
from glowmlir.backends.size_first import record
from glowmlir.dialects import glow


def record_check(words: int):
    """The rule of a kernel that reads its numbers and shapes from a record of `words` words."""

    def verify(op) -> None:
        if op.parameters is None or glow.shape_of(op.parameters) != (words,):
            raise VerifyException(f"{op.name}: the {op.microkernel.data} microkernel reads its numbers and shapes "
                                  f"from a {words}-word parameters record")

    return verify


def _kernel(name: str, words: int) -> Microkernel:
    return Microkernel(name, "backends.size_first.kernels", verify=record_check(words))


BACKEND = Backend("size_first", (
    _kernel(record.MICROKERNEL, record.RECORD_WORDS), _kernel(record.DSP_MICROKERNEL, record.RECORD_WORDS),
    _kernel(record.DEPTHWISE_MICROKERNEL, record.DEPTHWISE_RECORD_WORDS),
    _kernel(record.DSP_DEPTHWISE_MICROKERNEL, record.DEPTHWISE_RECORD_WORDS),
))
