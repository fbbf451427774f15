"""Int8 products of a tensor by one level per channel (`microkernel = "channel-products"`:
`glowll-select-arm-dsp-kernels` on cores with the DSP extension and no Helium).

A squeeze-excitation block multiplies each channel plane of a tensor by its gate, one int8
level broadcast over the plane (`glowll.elementwise {kind = "mul"}` of [N, C, H, W] by
[N, C, 1, 1]). The generic kernel (`quantized_kernels.binary_level`) loads the gate and
subtracts both zero points at every element: it cannot keep the gate in a register, as the
store it makes may alias it. This kernel loops over the planes, and per plane computes once
the doubled centred gate `g2 = 2 (s - s_offset)` and the term `-x_offset g2`; per element
`x g2 + term` is twice TFLite's product `(x - x_offset)(s - s_offset)`, which the narrow
requantization multiplies as it is (`requantize_narrow(doubled=True)`, the rounding terms and
the output zero point one register, `rounding_terms`, the multiplier opaque: one `SMMLAR`):
on the M7 `LDRSB`, `ADD`, `MUL` (LLVM folds the term back into `(x - x_offset) g2`), `ADD t,
k, p, ASR #31`, `SMMLAR`, `SSAT` with its shift, `STRB`. The numbers are the generic
kernel's, bit for bit. Where the product does not stay narrow (`is_narrow`), the element's
product is requantized the generic way, the gate still hoisted.

On the PP-OCR-cls-style net's squeeze-excitation products the M7 went from 10.4 estimated
cycles an element to 6.6, the M4 from 16.4 to 9.3 (docs/arm-dsp-kernels.md).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import i8, i32
from xdsl.utils.exceptions import VerifyException

from glowmlir.dialects import glow, glowll
from glowmlir.dialects.quant import UniformQuantizedType, storage_type
from glowmlir.lowering.kernel_builder import KernelBuilder, View
from glowmlir.lowering.loop_skeletons import ViewOf, elementwise_views, emit_strided_map, merge_dimensions
from glowmlir.lowering.requantization import is_narrow, requantize_bounded, requantize_narrow, rounding_terms
from glowmlir.quantization.rescaling import largest_difference, mul_multiplier


def gate_operand(op: glowll.ElementwiseOp) -> int | None:
    """Which input of an int8 Mul is one level per channel, broadcast over the rest of the
    other's shape (its shape: the output's with trailing dimensions of 1 where the output's
    hold more than one element, some leading one more than 1), the other of the output's
    shape; None if neither is."""
    if op.kind.data != "mul" or len(op.inputs) != 2:
        return None
    shape = glow.shape_of(op.dest)
    for index in (0, 1):
        gate, tensor = (glow.shape_of(op.inputs[i]) for i in (index, 1 - index))
        if tensor != shape or len(gate) != len(shape):
            continue
        kept = len(shape) - next((i for i, size in enumerate(reversed(gate)) if size != 1), len(shape))
        if 0 < kept < len(shape) and gate[:kept] == shape[:kept] and max(gate) > 1 \
                and int(np.prod(shape[kept:])) > 1:
            return index
    return None


def verify_channel_products(op) -> None:
    """The kernel takes an int8 Mul of a tensor by one level per channel (`gate_operand`)."""
    if not isinstance(op, glowll.ElementwiseOp) or gate_operand(op) is None \
            or not all(storage_type(v.type.element_type) == i8 and not v.type.element_type.per_channel
                       for v in op.operands):
        raise VerifyException(f"{op.name}: the channel-products microkernel takes an int8 Mul of a tensor by one "
                              "level per channel, broadcast over the rest of its shape")


def channel_operand(shape: list[int], sources: list[View]) -> int | None:
    """Which source of a Mul (after `merge_dimensions`) is one level per run of the innermost
    loop, the other a tensor read in order along it; None if neither is."""
    if len(shape) < 2 or shape[-1] < 2:
        return None
    for index, (gate, tensor) in enumerate((sources, sources[::-1])):
        if gate.strides[-1] == 0 and tensor.strides[-1] == 1 and any(gate.strides[:-1]):
            return index
    return None


def emit_elementwise(b: KernelBuilder, op: glowll.ElementwiseOp, view: ViewOf) -> None:
    """An int8 Mul of a tensor by one level per channel (see the module doc)."""
    assert op.kind.data == "mul", f"channel-products takes a Mul, not a {op.kind.data}"
    dest, sources = elementwise_views(op, view)
    shape, (dest, *sources) = merge_dimensions(dest, sources)
    gate_index = channel_operand(shape, sources)
    if gate_index is None:  # strided views: the generic kernel
        from glowmlir.lowering.quantized_kernels import binary_level  # the module that picks this one

        level_of, (low, high) = binary_level(b, op), op.dest.type.element_type.value_range
        emit_strided_map(b, dest, sources, lambda v: b.truncate(
            b.clamp(level_of(b.sign_extend(v[0]), b.sign_extend(v[1])), low, high), dest.element_type))
        return
    gate, tensor = sources[gate_index], sources[1 - gate_index]
    gate_type, tensor_type = (op.inputs[i].type.element_type for i in (gate_index, 1 - gate_index))
    out_type: UniformQuantizedType = op.dest.type.element_type
    assert isinstance(gate_type, UniformQuantizedType) and isinstance(tensor_type, UniformQuantizedType)
    multiplier, shift = mul_multiplier(tensor_type, gate_type, out_type)
    bound = largest_difference(tensor_type) * largest_difference(gate_type)
    low, high = out_type.value_range
    narrow = is_narrow(bound, shift)
    terms = rounding_terms(shift, out_type.offset)
    # made where the kernel starts, opaque: LLVM adds the sign to the rounding terms in one
    # instruction and multiplies by the multiplier with one SMMLAR (a constant: UMLAL, MUL)
    rounding = b.opaque(b.integer(terms)) if narrow and terms is not None else None
    if narrow:
        multiplier = b.opaque(b.integer(multiplier))
    factor = 2 if narrow else 1  # the narrow requantization takes the doubled product
    with b.loops(shape[:-1]) as outer:
        level = b.sign_extend(b.load(gate, [*outer, 0]), i32)
        centred = b.shift_left(b.int_sub(level, gate_type.offset), factor - 1)
        term = b.int_mul(centred, -tensor_type.offset)
        with b.loop(0, shape[-1]) as inner:
            x = b.sign_extend(b.load(tensor, [*outer, inner.index]), i32)
            product = b.int_add(b.int_mul(x, centred), term)
            if narrow:
                result = requantize_narrow(b, product, multiplier, shift, out_type.offset, doubled=True,
                                           rounding=rounding)
            else:
                result = requantize_bounded(b, product, bound, multiplier, shift, out_type.offset)
            b.store(b.truncate(b.clamp(result, low, high), dest.element_type), dest, [*outer, inner.index])
