"""TFLite operators a mobile or microcontroller model uses beyond the basic ones: resizing,
strided slices with every mask, splits, depth/space rearrangement and transposed
convolutions (MediaPipe's custom `Convolution2DTransposeBias` too), float and int8, each
checked against ai-edge-litert's reference kernels on random inputs."""

from __future__ import annotations

import numpy as np
import pytest

import glowmlir
from glowmlir.errors import GlowError
from tests.support import tflite_models as tm
from tests.unit.test_tflite_importer import saved

INT8 = (0.05, 3)


def _one_op(opcode: str, shape, out_shapes, constants=(), options=None, int8=False, **fields) -> bytes:
    """x -> opcode(x, *constants) -> outputs y0, y1, ...; int8 tensors share one (scale, zero point)."""
    dtype, quant = ("int8", INT8) if int8 else ("float32", None)
    builder = tm.ModelBuilder()
    x = builder.input("x", shape, dtype, quant=quant)
    inputs = [x] + [builder.constant(f"c{i}", c) if c is not None else -1 for i, c in enumerate(constants)]
    outputs = [builder.tensor(f"y{i}", s, dtype, quant=quant) for i, s in enumerate(out_shapes)]
    builder.op(opcode, inputs, outputs, options, **fields)
    for y in outputs:
        builder.output(y)
    return builder.finish()


def _check(data: bytes, tmp_path, levels: int = 0, seeds=range(3), micro: bool = True) -> None:
    """Float to 1e-5; int8 equal, or within `levels` levels, to ai-edge-litert and (`micro`)
    to TFLite Micro."""
    bundle = glowmlir.compile(saved(tmp_path, "op", data))
    for seed in seeds:
        inputs = tm.random_inputs(data, seed=seed, low=-3, high=3)
        expected = tm.run_reference(data, inputs)
        actual = bundle.run(inputs)
        int8 = any(v.dtype == np.int8 for v in expected.values())
        on_micro = tm.run_micro(data, inputs) if int8 and micro else {}
        for name, value in expected.items():
            if value.dtype == np.int8:
                assert np.abs(actual[name].astype(int) - value.astype(int)).max() <= levels, name
                if on_micro:
                    assert np.abs(actual[name].astype(int) - on_micro[name].astype(int)).max() <= levels, name
            else:
                np.testing.assert_allclose(actual[name], value, rtol=1e-5, atol=1e-5, err_msg=name)


RESIZE_MODES = [dict(align_corners=False, half_pixel_centers=False), dict(align_corners=True, half_pixel_centers=False),
                dict(align_corners=False, half_pixel_centers=True)]


@pytest.mark.parametrize("int8", [False, True])
@pytest.mark.parametrize("mode", RESIZE_MODES, ids=["asymmetric", "align_corners", "half_pixel"])
@pytest.mark.parametrize("size", [(7, 10), (3, 2)], ids=["up", "down"])
def test_resize_bilinear(size, mode, int8, tmp_path):
    """TFLite's float kernel's coordinates; its int8 kernel's 10-bit weights (one level: we
    resize one axis after the other, each rounding to a finer int16 level)."""
    data = _one_op("RESIZE_BILINEAR", [1, 4, 5, 3], [[1, *size, 3]], [np.array(size, np.int32)],
                   "ResizeBilinearOptions", int8=int8, **mode)
    _check(data, tmp_path, levels=1)


@pytest.mark.parametrize("int8", [False, True])
@pytest.mark.parametrize("mode", RESIZE_MODES, ids=["asymmetric", "align_corners", "half_pixel"])
def test_resize_nearest_neighbor(mode, int8, tmp_path):
    data = _one_op("RESIZE_NEAREST_NEIGHBOR", [1, 4, 5, 3], [[1, 7, 3, 3]], [np.array([7, 3], np.int32)],
                   "ResizeNearestNeighborOptions", int8=int8, **mode)
    _check(data, tmp_path)


STRIDED = {  # begin, end, strides, masks, output shape; input [2, 5, 6, 4]
    "plain": ([0, 1, 0, 1], [2, 4, 6, 3], [1, 1, 2, 1], {}, [2, 3, 3, 2]),
    "negative-indices": ([0, -4, -1, 0], [2, -1, -7, 4], [1, 1, -2, 1], {}, [2, 3, 3, 4]),
    "begin-end-masks": ([1, 3, 5, 2], [0, 0, 0, 3], [1, 1, -1, 1], dict(begin_mask=0b0101, end_mask=0b0111),
                        [2, 2, 6, 1]),
    "shrink": ([1, 0, 2, 0], [2, 5, 3, 4], [1, 2, 1, 1], dict(shrink_axis_mask=0b0101), [3, 4]),
    "ellipsis-new-axis": ([0, 0, 1], [0, 0, 3], [1, 1, 1], dict(ellipsis_mask=0b001, new_axis_mask=0b010),
                          [2, 5, 6, 1, 2]),
    "offset": ([0, 1, 1, 0], [2, 3, 4, 4], [1, 1, 1, 2], dict(offset=True), [2, 3, 4, 2]),
    "reversed": ([0, 4, 0, 3], [2, -6, 6, -5], [1, -1, 1, -1], {}, [2, 5, 6, 4]),
}


@pytest.mark.parametrize("int8", [False, True])
@pytest.mark.parametrize("case", STRIDED)
def test_strided_slice(case, int8, tmp_path):
    begin, end, strides, masks, shape = STRIDED[case]
    constants = [np.array(v, np.int32) for v in (begin, end, strides)]
    micro = case not in ("ellipsis-new-axis", "offset")  # TFLite Micro's STRIDED_SLICE refuses those
    _check(_one_op("STRIDED_SLICE", [2, 5, 6, 4], [shape], constants, "StridedSliceOptions", int8=int8, **masks),
           tmp_path, seeds=range(1), micro=micro)


@pytest.mark.parametrize("int8", [False, True])
def test_split_v_and_split(int8, tmp_path):
    _check(_one_op("SPLIT_V", [1, 4, 9, 2], [[1, 4, 2, 2], [1, 4, 4, 2], [1, 4, 3, 2]],
                   [np.array([2, -1, 3], np.int32), np.array([2], np.int32)], "SplitVOptions", int8=int8, num_splits=3),
           tmp_path, seeds=range(1))
    builder = tm.ModelBuilder()
    dtype, quant = ("int8", INT8) if int8 else ("float32", None)
    axis = builder.constant("axis", np.array([-1], np.int32))
    x = builder.input("x", [1, 4, 6], dtype, quant=quant)
    outputs = [builder.tensor(f"y{i}", [1, 4, 2], dtype, quant=quant) for i in range(3)]
    builder.op("SPLIT", [axis, x], outputs, "SplitOptions", num_splits=3)
    for y in outputs:
        builder.output(y)
    _check(builder.finish(), tmp_path, seeds=range(1))


@pytest.mark.parametrize("int8", [False, True])
def test_depth_to_space_and_back(int8, tmp_path):
    _check(_one_op("DEPTH_TO_SPACE", [1, 3, 2, 12], [[1, 6, 4, 3]], (), "DepthToSpaceOptions", int8=int8,
                   block_size=2), tmp_path, seeds=range(1))
    _check(_one_op("SPACE_TO_DEPTH", [1, 6, 4, 3], [[1, 3, 2, 12]], (), "SpaceToDepthOptions", int8=int8,
                   block_size=2), tmp_path, seeds=range(1))


def _transposed(custom: bool, padding: str, stride: int, out: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    builder = tm.ModelBuilder()
    x = builder.input("x", [1, 4, 5, 3])
    w = builder.constant("w", rng.normal(0, 0.3, (6, 3, 3, 3)).astype(np.float32))  # [O, KH, KW, I]
    b = builder.constant("b", rng.normal(0, 0.2, 6).astype(np.float32))
    out_w = (5 - 1) * stride + 3 if padding == "VALID" else 5 * stride
    y = builder.tensor("y", [1, out, out_w, 6])
    if custom:
        options = np.array([1 if padding == "SAME" else 2, stride, stride], "<i4").tobytes()
        builder.custom_op("Convolution2DTransposeBias", [x, w, b], [y], options)
    else:
        shape = builder.constant("shape", np.array([1, out, out_w, 6], np.int32))
        builder.op("TRANSPOSE_CONV", [shape, w, x, b], [y], "TransposeConvOptions", padding=padding,
                   stride_w=stride, stride_h=stride)
    builder.output(y)
    return builder.finish()


@pytest.mark.parametrize("padding, stride, out", [("SAME", 2, 8), ("VALID", 2, 9), ("SAME", 1, 4)])
def test_transposed_convolutions(padding, stride, out, tmp_path):
    """TRANSPOSE_CONV against the interpreter; MediaPipe's custom Convolution2DTransposeBias
    (which the interpreter lacks) against the TRANSPOSE_CONV it is."""
    builtin, custom = _transposed(False, padding, stride, out), _transposed(True, padding, stride, out)
    _check(builtin, tmp_path, seeds=range(2))
    bundle = glowmlir.compile(saved(tmp_path, "custom", custom))
    for seed in range(2):
        inputs = tm.random_inputs(builtin, seed=seed)
        np.testing.assert_allclose(bundle.run(inputs)["y"], tm.run_reference(builtin, inputs)["y"],
                                   rtol=1e-5, atol=1e-5)


def test_custom_operator_with_bad_options_is_named(tmp_path):
    builder = tm.ModelBuilder()
    x = builder.input("x", [1, 4, 5, 3])
    w = builder.constant("w", np.zeros((6, 3, 3, 3), np.float32))
    y = builder.tensor("y", [1, 8, 10, 6])
    builder.custom_op("Convolution2DTransposeBias", [x, w, builder.constant("b", np.zeros(6, np.float32))], [y],
                      b"\x01\x00")
    builder.output(y)
    with pytest.raises(GlowError,
                       match=r'\(CUSTOM:Convolution2DTransposeBias, output "y"\): 2 bytes of custom options'):
        glowmlir.compile(saved(tmp_path, "custom", builder.finish()))


@pytest.mark.parametrize("opcode", ["FLOOR", "SIN", "COS", "SQUARE"])
def test_float_elementwise(opcode, tmp_path):
    _check(_one_op(opcode, [2, 3, 4], [[2, 3, 4]]), tmp_path, seeds=range(2))


def test_elu_against_tflite_micro(tmp_path):
    """ai-edge-litert's reference resolver has no ELU; TFLite Micro's has."""
    data = _one_op("ELU", [2, 3, 4], [[2, 3, 4]])
    bundle = glowmlir.compile(saved(tmp_path, "elu", data))
    inputs = {"x": np.random.default_rng(0).uniform(-3, 3, (2, 3, 4)).astype(np.float32)}
    np.testing.assert_allclose(bundle.run(inputs)["y0"], tm.run_micro(data, inputs)["y0"], rtol=1e-5, atol=1e-6)


def test_squared_difference_add_n_pack_and_unpack(tmp_path):
    rng = np.random.default_rng(0)
    builder = tm.ModelBuilder()
    x = builder.input("x", [2, 3])
    c = builder.constant("c", rng.normal(0, 1, (2, 3)).astype(np.float32))
    squared, summed = builder.tensor("squared", [2, 3]), builder.tensor("summed", [2, 3])
    packed, parts = builder.tensor("packed", [2, 3, 3]), [builder.tensor(f"part{i}", [2, 3]) for i in range(3)]
    builder.op("SQUARED_DIFFERENCE", [x, c], [squared])
    builder.op("ADD_N", [x, squared, c], [summed])
    builder.op("PACK", [x, squared, summed], [packed], "PackOptions", values_count=3, axis=-1)
    builder.op("UNPACK", [packed], parts, "UnpackOptions", num=3, axis=2)
    for tensor in (packed, *parts):
        builder.output(tensor)
    _check(builder.finish(), tmp_path, seeds=range(2))


@pytest.mark.parametrize("opcode", ["PACK", "UNPACK"])
def test_int8_pack_and_unpack(opcode, tmp_path):
    builder = tm.ModelBuilder()
    x = builder.input("x", [2, 3, 4], "int8", quant=INT8)
    if opcode == "PACK":
        y = builder.tensor("y", [2, 2, 3, 4], "int8", quant=INT8)
        builder.op("PACK", [x, x], [y], "PackOptions", values_count=2, axis=1)
        builder.output(y)
    else:
        parts = [builder.tensor(f"y{i}", [2, 4], "int8", quant=INT8) for i in range(3)]
        builder.op("UNPACK", [x], parts, "UnpackOptions", num=3, axis=1)
        for part in parts:
            builder.output(part)
    _check(builder.finish(), tmp_path, seeds=range(1))
