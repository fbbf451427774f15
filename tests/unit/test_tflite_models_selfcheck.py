"""Self-check of tests/support/tflite_models.py: its flatbuffers load and run in ai-edge-litert's
reference kernels, read back through the `tflite` package as written, and its int8 models
follow the TFLite int8 spec and track their float twins."""

from __future__ import annotations

import numpy as np
import pytest
import tflite

from tests.support import tflite_models as tm

MODES = ["float", "int8", "int8_float_io"]


def _build(name: str, mode: str, seed: int = 0) -> bytes:
    description, _ = tm.MODELS[name]
    return tm.build(description(seed), quantized=mode != "float", float_io=mode == "int8_float_io")


def _read(model: bytes):
    """(subgraph, opcode name of each operator) via the tflite package's reader."""
    m = tflite.Model.GetRootAs(model, 0)
    names = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
    sg = m.Subgraphs(0)
    codes = [names[max(m.OperatorCodes(op.OpcodeIndex()).BuiltinCode(),
                       m.OperatorCodes(op.OpcodeIndex()).DeprecatedBuiltinCode())]
             for op in (sg.Operators(i) for i in range(sg.OperatorsLength()))]
    return m, sg, codes


def _quant(tensor):
    q = tensor.Quantization()
    return q.ScaleAsNumpy(), q.ZeroPointAsNumpy(), q.QuantizedDimension()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(tm.MODELS))
def test_model_runs_with_reference_kernels(name, mode):
    model = _build(name, mode)
    inputs = tm.random_inputs(model, seed=3)
    outputs = tm.run_reference(model, inputs)
    expected_shapes = tm.MODELS[name][1]
    assert sorted(outputs) == sorted(expected_shapes)
    for out_name, shape in expected_shapes.items():
        assert list(outputs[out_name].shape) == shape
        assert outputs[out_name].dtype == (np.int8 if mode == "int8" else np.float32)
        assert np.isfinite(outputs[out_name].astype(np.float32)).all()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(tm.MODELS))
def test_declared_shapes_match_interpreter(name, mode):
    """The flatbuffer's shapes (as an importer reads them) are the ones TFLite's Prepare computes."""
    model = _build(name, mode)
    _, sg, _ = _read(model)
    declared = {sg.Tensors(i).Name().decode(): list(sg.Tensors(i).ShapeAsNumpy()) for i in range(sg.TensorsLength())}
    interp = tm._interpreter(model)
    for d in interp.get_tensor_details():
        if d["index"] < sg.TensorsLength():  # beyond: kernels' scratch tensors (MEAN adds some)
            assert list(d["shape"]) == declared[d["name"]], d["name"]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name", sorted(tm.MODELS))
def test_int8_tracks_float(name, seed):
    """Dequantized int8 outputs are close to the float model's (softmax within 0.05)."""
    float_model, int8_model, float_io_model = (_build(name, mode, seed) for mode in MODES)
    for sample in range(3):
        inputs = tm.random_inputs(float_model, seed=100 + sample)
        expected = tm.run_reference(float_model, inputs)
        got = tm.run_reference_float(int8_model, inputs)
        got_float_io = tm.run_reference(float_io_model, inputs)
        for out_name, value in expected.items():
            # softmax outputs within 0.05; and every output within 8% of its range
            error = float(np.abs(got[out_name] - value).max())
            if name != "elementwise_net":
                assert error <= 0.05, (out_name, error)
            assert error <= 0.08 * float(np.ptp(value)), (out_name, error, float(np.ptp(value)))
            np.testing.assert_array_equal(got_float_io[out_name], got[out_name])


@pytest.mark.parametrize("name", sorted(tm.MODELS))
def test_int8_follows_tflite_spec(name):
    model = _build(name, "int8")
    _, sg, codes = _read(model)
    tensor = sg.Tensors
    for i, code in enumerate(codes):
        op = sg.Operators(i)
        ins, out = list(op.InputsAsNumpy()), tensor(op.Outputs(0))
        if code in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
            x, w, b = (tensor(j) for j in ins)
            assert w.Type() == tflite.TensorType.INT8 and b.Type() == tflite.TensorType.INT32
            w_scales, w_zps, w_axis = _quant(w)
            assert (w_zps == 0).all()
            if code == "FULLY_CONNECTED":
                assert len(w_scales) == 1
            else:
                axis = {"CONV_2D": 0, "DEPTHWISE_CONV_2D": 3}[code]
                assert w_axis == axis and len(w_scales) == w.ShapeAsNumpy()[axis]
            b_scales, b_zps, _ = _quant(b)
            assert (b_zps == 0).all()
            np.testing.assert_allclose(b_scales, _quant(x)[0][0] * w_scales, rtol=1e-6)
        if code in ("SOFTMAX", "LOGISTIC"):
            assert (_quant(out)[0][0], _quant(out)[1][0]) == (1 / 256, -128)
        if code == "TANH":
            assert (_quant(out)[0][0], _quant(out)[1][0]) == (1 / 128, 0)
        if code in tm.SHARED_PARAMS_OPS:
            for j in ins:
                t = tensor(j)
                if t.Type() == tflite.TensorType.INT8:
                    assert (_quant(t)[0][0], _quant(t)[1][0]) == (_quant(out)[0][0], _quant(out)[1][0]), code
        if out.Type() == tflite.TensorType.INT8:
            scale, zp, _ = _quant(out)
            assert len(scale) == 1 and scale[0] > 0 and -128 <= zp[0] <= 127


def test_float_io_net_has_quantize_and_dequantize():
    model = tm.float_io_net()
    _, sg, codes = _read(model)
    assert codes[0] == "QUANTIZE" and codes[-1] == "DEQUANTIZE"
    assert sg.Tensors(sg.Inputs(0)).Type() == tflite.TensorType.FLOAT32
    assert sg.Tensors(sg.Outputs(0)).Type() == tflite.TensorType.FLOAT32
    assert {tflite.TensorType.INT8} <= {sg.Tensors(i).Type() for i in range(sg.TensorsLength())}
    out = tm.run_reference(model, tm.random_inputs(model, seed=1))["output"]
    assert out.shape == (1, 10) and abs(out.sum() - 1) < 0.05


def test_constructors():
    for fn in (tm.conv_net, tm.mobilenet_block, tm.elementwise_net, tm.lenet):
        assert fn(False) == fn(False, 0)  # deterministic
        assert fn(True, seed=1) != fn(True, seed=2)
        assert fn(False)[4:8] == b"TFL3"


def test_builder_options_enums_vectors_and_optional_inputs():
    b = tm.ModelBuilder()
    x = b.input("x", [1, 4, 4, 2])
    w = b.constant("w", np.arange(6, dtype=np.float32).reshape(3, 1, 1, 2))
    bias = b.constant("bias", np.ones(3, np.float32))
    y = b.tensor("y", [1, 4, 4, 3])
    b.op("CONV_2D", [x, w, bias], [y], "Conv2DOptions", padding="SAME", stride_w=1, stride_h=1,
         fused_activation_function="RELU6")
    r = b.tensor("r", [1, 48])
    b.op("RESHAPE", [y], [r], "ReshapeOptions", new_shape=[1, 48])
    fw = b.constant("fw", np.ones([5, 48], np.float32))
    f = b.tensor("f", [1, 5])
    b.op("FULLY_CONNECTED", [r, fw, -1], [f], "FullyConnectedOptions")  # no bias
    b.output(f)
    model = b.finish()

    m, sg, codes = _read(model)
    assert m.Version() == 3 and len(m.Buffers(0).DataAsNumpy() if m.Buffers(0).DataLength() else []) == 0
    assert codes == ["CONV_2D", "RESHAPE", "FULLY_CONNECTED"]
    conv = sg.Operators(0)
    assert conv.BuiltinOptionsType() == tflite.BuiltinOptions.Conv2DOptions
    opts = tflite.Conv2DOptions()
    opts.Init(conv.BuiltinOptions().Bytes, conv.BuiltinOptions().Pos)
    assert (opts.Padding(), opts.FusedActivationFunction()) == (tflite.Padding.SAME,
                                                                tflite.ActivationFunctionType.RELU6)
    reshape = tflite.ReshapeOptions()
    reshape.Init(sg.Operators(1).BuiltinOptions().Bytes, sg.Operators(1).BuiltinOptions().Pos)
    assert list(reshape.NewShapeAsNumpy()) == [1, 48]
    assert list(sg.Operators(2).InputsAsNumpy()) == [r, fw, -1]

    x_value = np.random.default_rng(0).uniform(-1, 1, [1, 4, 4, 2]).astype(np.float32)
    conv_ref = np.clip(np.einsum("nhwc,oc->nhwo", x_value, np.arange(6, dtype=np.float32).reshape(3, 2)) + 1, 0, 6)
    expected = conv_ref.reshape(1, 48).sum(axis=1, keepdims=True).repeat(5, axis=1)
    np.testing.assert_allclose(tm.run_reference(model, {"x": x_value})["f"], expected, rtol=1e-5)
    with pytest.raises(TypeError):
        tm.run_reference(model, {"x": x_value.astype(np.float64)})


def test_builder_rejects_unknown_names():
    b = tm.ModelBuilder()
    x = b.input("x", [1, 2])
    with pytest.raises(ValueError):
        b.op("NOT_AN_OP", [x], [x])
    with pytest.raises(ValueError):
        b.op("RELU", [x], [x], "NotAnOptions")
    b.op("RESHAPE", [x], [x], "ReshapeOptions", no_such_field=1)
    with pytest.raises(ValueError):
        b.finish()


def test_builder_quantized_per_channel_constant():
    b = tm.ModelBuilder()
    x = b.input("x", [1, 2, 2, 2], "int8", quant=(0.5, -3))
    w = b.constant("w", np.ones([4, 1, 1, 2], np.int8), quant=([0.1, 0.2, 0.3, 0.4], [0, 0, 0, 0], 0))
    b.output(x)
    _, sg, _ = _read(b.finish())
    scales, zps, axis = _quant(sg.Tensors(w))
    np.testing.assert_allclose(scales, [0.1, 0.2, 0.3, 0.4], rtol=1e-6)
    assert list(zps) == [0, 0, 0, 0] and axis == 0
    assert (_quant(sg.Tensors(x))[0][0], _quant(sg.Tensors(x))[1][0]) == (0.5, -3)
