"""A layer's signature: what its kernel's cost depends on, as a stable cache key."""

from __future__ import annotations

import hashlib
import json

from xdsl.dialects.builtin import MemRefType

from glowmlir.dialects import glow, glowll
from glowmlir.dialects.quant import is_quantized, storage_type

TUNED_OPS = (glowll.ConvolutionOp, glowll.FullyConnectedOp, glowll.ElementwiseOp, glowll.SoftMaxOp)
"""The instructions whose kernel the autotuner chooses."""

IGNORED_PROPERTIES = ("microkernel", "operandSegmentSizes")
"""Properties a selection pass sets or that say nothing of the layer's work."""


def core_key(target, candidates: tuple[str, ...]) -> str:
    """The core and the kernel options a measurement holds for: CPU, features, optimization
    level and size attribute, and the kernels measured."""
    return "/".join((target.cpu, target.features, f"O{target.opt_level}", target.size_attribute or "speed",
                     "+".join(candidates)))


def _number_type(value) -> str:
    element = value.type.element_type if isinstance(value.type, MemRefType) else value.type
    return str(storage_type(element)) if is_quantized(element) else str(element)


def layer_signature(op: glowll.InstructionOp, core: str) -> dict:
    """The instruction's name, each operand's shape and number type (storage type for
    quantized data: scales change no kernel's work), its properties, and `core_key`."""
    properties = {name: str(value) for name, value in sorted(op.properties.items()) if name not in IGNORED_PROPERTIES}
    return {"op": op.name, "operands": [[list(glow.shape_of(v)), _number_type(v)] for v in op.operands],
            "properties": properties, "core": core}


def signature_key(signature: dict) -> str:
    """The signature's cache key: a SHA-256 of its canonical JSON."""
    return hashlib.sha256(json.dumps(signature, sort_keys=True).encode()).hexdigest()


def tuned_layers(module) -> list[glowll.InstructionOp]:
    """The module's instructions whose kernel the autotuner chooses, in order."""
    return [op for op in module.walk() if isinstance(op, TUNED_OPS)]
