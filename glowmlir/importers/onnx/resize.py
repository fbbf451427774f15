"""Resize and Upsample: one `glow.resample` per resized axis."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from glowmlir.dialects import glow
from glowmlir.dialects.weights import dense_from_array
from glowmlir.importers.onnx.importer import OnnxImporter, imports

_COORDINATE_TRANSFORMS = {
    "half_pixel": lambda x, scale, out, size: (x + 0.5) / scale - 0.5,
    "pytorch_half_pixel": lambda x, scale, out, size: (x + 0.5) / scale - 0.5 if out > 1 else 0.0 * x,
    "align_corners": lambda x, scale, out, size: x * (size - 1) / (out - 1) if out > 1 else 0.0 * x,
    "asymmetric": lambda x, scale, out, size: x / scale,
    "half_pixel_symmetric": lambda x, scale, out, size:
        size / 2 * (1 - out / (size * scale)) + (x + 0.5) / scale - 0.5,
}
"""ONNX Resize's coordinate_transformation_mode: output coordinate -> input coordinate."""


_NEAREST_MODES = {
    "round_prefer_floor": lambda x: np.where(x - np.floor(x) == 0.5, np.floor(x), np.round(x)),
    "round_prefer_ceil": lambda x: np.where(x - np.floor(x) == 0.5, np.ceil(x), np.round(x)),
    "floor": np.floor,
    "ceil": np.ceil,
}


def _resample_axis(importer: OnnxImporter, x: SSAValue, axis: int, out: int, scale: float, mode: str,
                   transform: str, nearest_mode: str) -> SSAValue:
    """One axis of a Resize: the taps and weights of each output position, computed here."""
    size = glow.shape_of(x)[axis]
    position = _COORDINATE_TRANSFORMS[transform](np.arange(out, dtype=np.float64), scale, out, size)
    if mode == "nearest":
        taps = np.clip(_NEAREST_MODES[nearest_mode](position), 0, size - 1).astype(np.int32)[:, None]
        weights = np.ones_like(taps, np.float32)
    else:  # linear, clamped to the edge as onnxruntime does
        position = np.clip(position, 0, size - 1)
        low = np.floor(position)
        fraction = (position - low).astype(np.float32)
        taps = np.stack([low, np.minimum(low + 1, size - 1)], axis=1).astype(np.int32)
        weights = np.stack([1 - fraction, fraction], axis=1).astype(np.float32)
    if out == size and (taps[:, 0] == np.arange(size)).all() and (weights[:, 0] == 1).all():
        return x  # this axis does not change (linear: every weight on the first tap)
    name = importer.node.name or importer.node.output[0]
    taps_constant = importer.add(glow.ConstantOp(importer.names(f"{name}_taps{axis}"), dense_from_array(taps)))
    weights_constant = importer.constant(f"{name}_weights{axis}", weights)
    return importer.add(glow.ResampleOp(x, taps_constant, weights_constant, axis))


@imports("Resize", "Upsample")
def _resize(importer: OnnxImporter, node, attrs):
    """Nearest or linear resizing with constant scales or sizes, one axis at a time."""
    x = importer.tensor(node.input[0])
    shape = glow.shape_of(x)
    mode = attrs.get("mode", "nearest")
    if mode not in ("nearest", "linear"):
        raise importer.error(f"Resize mode \"{mode}\" is not supported (nearest, linear)")
    if node.op_type == "Upsample":  # the deprecated op: asymmetric coordinates, floor
        transform, nearest_mode = "asymmetric", "floor"
        scales = attrs.get("scales") if importer.opset < 9 else importer.required_known(node.input[1], "scales")
        sizes = None
    else:
        transform = attrs.get("coordinate_transformation_mode", "half_pixel")
        nearest_mode = attrs.get("nearest_mode", "round_prefer_floor")
        if transform not in _COORDINATE_TRANSFORMS or attrs.get("antialias", 0) or "axes" in attrs:
            raise importer.error(f"Resize with coordinate_transformation_mode \"{transform}\", antialias or axes "
                                 "is not supported")
        inputs = list(node.input) + [""] * (4 - len(node.input))
        scales = importer.known(inputs[2]) if importer.opset >= 11 else importer.known(inputs[1])
        sizes = importer.known(inputs[3]) if inputs[3] else None
        if (scales is None or scales.size == 0) and sizes is None:
            raise importer.error("Resize needs constant scales or sizes")
    if sizes is not None and len(sizes):
        outputs = [int(v) for v in sizes]
        scales = [o / s for o, s in zip(outputs, shape)]
    else:
        scales = [float(v) for v in np.asarray(scales).reshape(-1)]
        outputs = [int(np.floor(s * f)) for s, f in zip(shape, scales)]
    if len(outputs) != len(shape):
        raise importer.error(f"Resize needs one scale or size per dimension of {list(shape)}")
    for axis, (out, scale) in enumerate(zip(outputs, scales)):
        x = _resample_axis(importer, x, axis, out, scale, mode, transform, nearest_mode)
    return [x]
