"""Models and options the importers must refuse with one line naming the culprit (issue 12):
windows that do not fit, out-of-range constant indices, unknown or empty input dimensions,
bad symbols and `-model-input`s, models from the future, damaged files (bit flips and
truncations of ONNX, TFLite and Caffe2 models); and graphs thousands of ops deep, which
must compile and compute the right numbers."""

from __future__ import annotations

import os
import random

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import glowmlir
from glowmlir.errors import GlowError
from glowmlir.importers.onnx import ModelInput, parse_define_symbol
from tests.support import tflite_models as tm
from tests.support.models import LENET, onnxruntime_outputs
from tests.unit.test_caffe2_importer import Weights, op, write_model


def graph_model(nodes, inputs: dict[str, list], output_rank: int, initializers=(), opset: int = 13):
    """A float model; `inputs` maps names to shapes (a None dimension: unset)."""
    values = [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape) for name, shape in inputs.items()]
    output = helper.make_tensor_value_info("y", TensorProto.FLOAT, [f"y{i}" for i in range(output_rank)])
    graph = helper.make_graph(nodes, "g", values, [output],
                              [numpy_helper.from_array(np.asarray(a), n) for n, a in dict(initializers).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def saved(tmp_path, model: onnx.ModelProto, name: str = "model") -> str:
    path = os.path.join(tmp_path, f"{name}.onnx")
    onnx.save(model, path)
    return path


def refusal(path, **options) -> str:
    """The message of the GlowError compiling `path` raises (one line)."""
    with pytest.raises(GlowError) as error:
        glowmlir.compile(path, **options)
    message = str(error.value)
    assert "\n" not in message
    return message


def conv_model(x_shape, w_shape, **attributes) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    return graph_model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv1", **attributes)], {"x": x_shape}, 4,
                       {"w": rng.standard_normal(w_shape).astype(np.float32)})


# ----------------------------------------------------------------------------- derived shapes


def test_max_pool_larger_than_its_input_is_refused(tmp_path):
    """It gave `float<1 x 3 x -7 x -7>` in the header and an output never written."""
    model = graph_model([helper.make_node("MaxPool", ["x"], ["y"], name="pool1", kernel_shape=[16, 16])],
                        {"x": [1, 3, 8, 8]}, 4)
    message = refusal(saved(tmp_path, model))
    assert message.startswith('node "pool1" (MaxPool')
    assert "the window (16) is larger than the padded input (8 + 0 + 0)" in message


def test_convolution_with_an_empty_result_is_refused(tmp_path):
    """A 9x9 kernel on 8x8 gave a 1x4x0x0 result."""
    message = refusal(saved(tmp_path, conv_model([1, 3, 8, 8], [4, 3, 9, 9])))
    assert message.startswith('node "conv1" (Conv') and "the window (9) is larger than the padded input" in message


def test_kernel_that_fits_the_padded_input_still_compiles(tmp_path):
    """The same 9x9 kernel with one pixel of padding on each side fits: a 2x2 result."""
    model = conv_model([1, 3, 8, 8], [4, 3, 9, 9], pads=[1, 1, 1, 1])
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
    actual = glowmlir.compile(saved(tmp_path, model)).run({"x": x})["y"]
    assert actual.shape == (1, 4, 2, 2)
    np.testing.assert_allclose(actual, onnxruntime_outputs(model, {"x": x})["y"], atol=1e-5)


def test_kernel_shape_attribute_must_match_the_filter(tmp_path):
    message = refusal(saved(tmp_path, conv_model([1, 3, 8, 8], [4, 3, 3, 3], kernel_shape=[5, 5])))
    assert message == 'node "conv1" (Conv, opset 13): kernel_shape [5, 5] disagrees with the filter\'s window [3, 3]'


def test_convolution_channel_mismatch_is_an_error_not_a_traceback(tmp_path):
    message = refusal(saved(tmp_path, conv_model([1, 3, 8, 8], [4, 2, 3, 3])))
    assert message == 'node "conv1" (Conv, opset 13): filter [4, 2, 3, 3] does not fit input channels 3 with group 1'


def test_gather_with_constant_indices_out_of_range_is_refused(tmp_path):
    """Indices 10 and -9 on 4 rows wrapped modulo 4; ONNX says they are an error."""
    for indices, bad in (([10, 1], 10), ([1, -9], -9)):
        model = graph_model([helper.make_node("Gather", ["x", "i"], ["y"], name="gather1")], {"x": [4, 3]}, 2,
                            {"i": np.array(indices, np.int64)})
        message = refusal(saved(tmp_path, model))
        assert message == (f'node "gather1" (Gather, opset 13): index {bad} is out of range '
                           f'for an axis of 4 (valid: -4 to 3)')


def test_gather_with_negative_indices_in_range_counts_from_the_end(tmp_path):
    indices = np.array([-4, 3, -1, 0], np.int64)
    model = graph_model([helper.make_node("Gather", ["x", "i"], ["y"])], {"x": [4, 3]}, 2, {"i": indices})
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(glowmlir.compile(saved(tmp_path, model)).run({"x": x})["y"], np.take(x, indices, 0))


def test_gather_with_no_indices_is_refused(tmp_path):
    model = graph_model([helper.make_node("Gather", ["x", "i"], ["y"], name="gather1")], {"x": [4, 3]}, 2,
                        {"i": np.zeros((0,), np.int64)})
    assert refusal(saved(tmp_path, model)) == ('node "gather1" (Gather, opset 13): no indices: the result would be an '
                                              'empty tensor, which a bundle cannot hold')


def test_result_past_a_64_bit_address_space_is_refused_at_its_node(tmp_path):
    """Padding of 2^31 on each side: 2.9e20 bytes; the error named the output, not the node."""
    message = refusal(saved(tmp_path, conv_model([1, 3, 8, 8], [4, 3, 3, 3], pads=[1 << 31] * 4)))
    assert message.startswith('node "conv1" (Conv, opset 13): glow.convolution: result of shape [1, 4, 4294967302, '
                              '4294967302] has 295,147,906,003,986,547,264 bytes, '
                              'more than a 64-bit address space holds')


def test_operands_of_different_element_types_are_refused(tmp_path):
    """Add of a float input and an int64 constant reached LLVM (`Operands must be the same type`)."""
    model = graph_model([helper.make_node("Add", ["x", "i"], ["y"], name="mixed")], {"x": [1, 4]}, 2,
                        {"i": np.ones((1, 4), np.int64)})
    assert refusal(saved(tmp_path, model)) == ('node "mixed" (Add, opset 13): glow.add: operands of different '
                                              'element types f32 and i64')


def test_output_without_a_shape_is_accepted(tmp_path):
    """onnxruntime loads graph outputs whose shape is unset; onnx's checker asked for the field."""
    model = graph_model([helper.make_node("Relu", ["x"], ["y"])], {"x": [2, 3]}, 2)
    model.graph.output[0].type.tensor_type.ClearField("shape")
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    np.testing.assert_array_equal(glowmlir.compile(saved(tmp_path, model)).run(x=x)["y"], np.maximum(x, 0))


def test_dangling_input_is_named_even_when_the_output_has_no_shape(tmp_path):
    model = graph_model([helper.make_node("Relu", ["nowhere"], ["y"], name="r")], {"x": [2, 3]}, 2)
    model.graph.output[0].type.tensor_type.ClearField("shape")
    assert "input 'nowhere' of node: name: r OpType: Relu is not output of any previous nodes" in refusal(
        saved(tmp_path, model))


def test_unknown_operator_is_named(tmp_path):
    model = graph_model([helper.make_node("FooBar", ["x"], ["y"], name="foo")], {"x": [2, 3]}, 2)
    path = saved(tmp_path, model)
    assert refusal(path) == f'"{path}": node "foo": unsupported op type "FooBar" (no ONNX operator has this name)'


def test_graph_without_outputs_or_passing_an_input_through_is_refused(tmp_path):
    no_outputs = graph_model([helper.make_node("Relu", ["x"], ["y"])], {"x": [2, 3]}, 2)
    del no_outputs.graph.output[:]
    path = saved(tmp_path, no_outputs, "no_outputs")
    assert refusal(path) == f'"{path}": the graph has no outputs, so there is nothing to compute'
    passed = graph_model([], {"x": [2, 3]}, 2)
    passed.graph.output[0].CopyFrom(passed.graph.input[0])
    path = saved(tmp_path, passed, "passed")
    assert refusal(path).startswith(f'"{path}": graph output "x" is also a graph input')


def test_missing_external_data_file_is_named(tmp_path):
    model = onnx.load(LENET)
    onnx.save_model(model, str(tmp_path / "lenet.onnx"), save_as_external_data=True, location="lenet.data",
                    size_threshold=0)
    os.remove(tmp_path / "lenet.data")
    message = refusal(str(tmp_path / "lenet.onnx"))
    assert message.startswith(f'-model: "{tmp_path / "lenet.onnx"}": ') and "lenet.data" in message


# ----------------------------------------------------------------------------- input shapes and options


@pytest.mark.parametrize("dims, what", [
    ([-1, 3, 8, 8], "dimension 0 is -1"),
    ([1, -5, 8, 8], "dimension 1 is -5"),
    ([1, 3, 0, 8], "dimension 2 is 0 (an empty input is not supported)"),
    ([1, 3, 8, None], "dimension 3 has no value"),
])
def test_input_dimensions_must_be_known_and_positive(tmp_path, dims, what):
    """These compiled (a placeholder of -768 bytes); the error names the input, the
    dimension and the option that fixes it."""
    model = graph_model([helper.make_node("Relu", ["x"], ["y"])], {"x": dims}, 4)
    assert refusal(saved(tmp_path, model)) == (f'input "x": {what}: '
                                               f'set the input\'s shape with -model-input=x,float,[d0,d1,...]')


def test_empty_input_of_which_only_the_type_is_read_is_accepted(tmp_path):
    """CastLike reads only its second input's type: an empty one is well-defined there."""
    model = graph_model([helper.make_node("CastLike", ["x", "like"], ["y"])], {"x": [2, 3], "like": [0]}, 2, opset=15)
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    outputs = glowmlir.compile(saved(tmp_path, model)).run({"x": x, "like": np.zeros(0, np.float32)})
    np.testing.assert_array_equal(outputs["y"], x)


def test_model_input_from_the_api_must_have_positive_dimensions(tmp_path):
    path = saved(tmp_path, graph_model([helper.make_node("Relu", ["x"], ["y"])], {"x": [2, 3]}, 2))
    message = refusal(path, model_inputs=[ModelInput("x", "float", (0, 3))])
    assert message.startswith('input "x": dimension 0 is 0')


@pytest.mark.parametrize("spec", ["N,0", "N,-2", "N,٣", "N,²", "N,1_0", "N,", ",3", "N,3,4"])
def test_define_symbol_takes_a_positive_ascii_integer(spec):
    with pytest.raises(GlowError, match="-onnx-define-symbol"):
        parse_define_symbol(spec)


def test_define_symbol_accepts_a_positive_integer():
    assert parse_define_symbol("batch,12") == ("batch", 12)


@pytest.mark.parametrize("value", [-3, 0, "x", "3", 2.0, True, None])
def test_api_symbols_must_be_positive_integers(tmp_path, value):
    path = saved(tmp_path, graph_model([helper.make_node("Relu", ["x"], ["y"])], {"x": ["N", 3]}, 2))
    message = refusal(path, symbols={"N": value})
    assert message == f'-onnx-define-symbol: symbol "N" has the value {value!r}: expected a positive integer'


def test_api_symbol_sets_the_dimension(tmp_path):
    path = saved(tmp_path, graph_model([helper.make_node("Relu", ["x"], ["y"])], {"x": ["N", 3]}, 2))
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(glowmlir.compile(path, symbols={"N": 2}).run({"x": x})["y"], np.maximum(x, 0))


@pytest.mark.parametrize("spec, problem", [
    ("data,int8q,inf,0,[1,4]", "finite positive scale"),
    ("data,int8q,nan,0,[1,4]", "finite positive scale"),
    ("data,int8q,1e-60,0,[1,4]", "finite positive scale"),  # 0 in float32
    ("data,int8q,0.5,128,[1,4]", "offset in [-128, 127]"),
    ("data,int8q,0.5,٣,[1,4]", "expected name,float"),
    ("data,float,[99999999999999999999]", "dimensions must be positive integers below 2^63"),
    ("data,float,[1,-1]", "dimensions must be positive integers below 2^63"),
    ("data,float,[1,0]", "dimensions must be positive integers below 2^63"),
    ("data,float,[1,٣]", "expected name,float"),
])
def test_model_input_option_is_checked(spec, problem):
    with pytest.raises(GlowError) as error:
        ModelInput.parse(spec)
    assert str(error.value).startswith(f'-model-input="{spec}": ') and problem in str(error.value)


def test_opset_newer_than_onnx_knows_is_refused(tmp_path):
    path = saved(tmp_path, graph_model([helper.make_node("Relu", ["x"], ["y"])], {"x": [2, 3]}, 2, opset=99))
    assert refusal(path) == (f'"{path}": opset 99 is newer than the newest this onnx knows '
                             f"({onnx.defs.onnx_opset_version()})")


def test_sparse_initializer_is_refused(tmp_path):
    model = graph_model([helper.make_node("Add", ["x", "b"], ["y"])], {"x": [4]}, 1)
    values = numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "b")
    model.graph.sparse_initializer.append(
        helper.make_sparse_tensor(values, numpy_helper.from_array(np.array([0, 3], np.int64)), [4]))
    path = saved(tmp_path, model)
    assert refusal(path) == f'"{path}": sparse initializer "b" is not supported'


# ----------------------------------------------------------------------------- damaged files


def test_name_that_is_not_utf8_is_refused(tmp_path):
    """A bit flip in a name raised UnicodeDecodeError (from onnx's checker)."""
    data = bytearray(open(LENET, "rb").read())
    data[data.index(b"Softmax") + 4] = 0xED  # a UTF-8 lead byte without its continuation
    path = os.path.join(tmp_path, "flipped.onnx")
    open(path, "wb").write(data)
    message = refusal(path)
    assert message.startswith(f'"{path}" is damaged: ') and "is not UTF-8 text" in message


def test_initializer_whose_data_does_not_fit_its_shape_is_refused(tmp_path):
    model = onnx.load(LENET)
    model.graph.initializer[0].dims[0] -= 1  # onnx's checker catches too little data, not too much
    name = model.graph.initializer[0].name
    assert refusal(saved(tmp_path, model)).startswith(f'initializer "{name}": its data cannot be read as data type 1')


def mutations(data: bytes, seed: int, count: int, positions=None):
    """`count` damaged copies of `data`: alternately one bit flipped (at one of `positions`)
    and the file truncated."""
    rng = random.Random(seed)
    positions = range(len(data)) if positions is None else positions
    for trial in range(count):
        if trial % 2:
            yield f"truncated to {(size := rng.randrange(len(data)))} bytes", data[:size]
        else:
            damaged, position, bit = bytearray(data), rng.choice(positions), rng.randrange(8)
            damaged[position] ^= 1 << bit
            yield f"bit {bit} of byte {position} flipped", bytes(damaged)


def assert_success_or_glow_error(compile_damaged, cases) -> int:
    """Runs every case; each compiles or raises a one-line GlowError. Returns the errors' count."""
    errors = 0
    for what, data in cases:
        try:
            compile_damaged(data)
        except GlowError as error:
            assert "\n" not in str(error), what
            errors += 1
        except Exception as error:  # noqa: BLE001 - the point of the test
            pytest.fail(f"{what}: {type(error).__name__}: {error}")
    return errors


def test_damaged_onnx_model_compiles_or_gives_an_error(tmp_path):
    """LeNet with bits flipped in its structure (weight bytes only change numbers) or cut short."""
    data = open(LENET, "rb").read()
    weights = [(data.index(init.raw_data), len(init.raw_data)) for init in onnx.load(LENET).graph.initializer]
    structure = [p for p in range(len(data)) if not any(start <= p < start + size for start, size in weights)]
    path = os.path.join(tmp_path, "damaged.onnx")

    def compile_damaged(damaged: bytes) -> None:
        with open(path, "wb") as f:
            f.write(damaged)
        glowmlir.compile(path)

    assert assert_success_or_glow_error(compile_damaged, mutations(data, seed=12, count=50, positions=structure)) > 25


def tflite_saved(tmp_path, data: bytes) -> str:
    path = os.path.join(tmp_path, "model.tflite")
    with open(path, "wb") as f:
        f.write(data)
    return path


def small_tflite_net() -> tm.Net:
    net = tm.Net(seed=3)
    x = net.input("input", [1, 6, 6, 2])
    x = net.max_pool(net.conv2d(x, 4, 3, 1, "SAME", "RELU"), 2, 2, "VALID")
    net.output(net.fully_connected(net.reshape(x, [1, -1]), 3, name="output"))
    return net


@pytest.mark.parametrize("quantized", [False, True], ids=["float", "int8"])
def test_damaged_tflite_model_compiles_or_gives_an_error(tmp_path, quantized):
    data = tm.build(small_tflite_net(), quantized)
    path = os.path.join(tmp_path, "damaged.tflite")

    def compile_damaged(damaged: bytes) -> None:
        with open(path, "wb") as f:
            f.write(damaged)
        glowmlir.compile(path)

    glowmlir.compile(tflite_saved(tmp_path, data))  # the undamaged model compiles
    assert assert_success_or_glow_error(compile_damaged, mutations(data, seed=12, count=50)) > 20


def test_damaged_caffe2_model_compiles_or_gives_an_error(tmp_path):
    weights = Weights(seed=1)
    weights.filter("conv_w", (4, 1, 3, 3)), weights.vector("conv_b", 4)
    weights.filter("fc_w", (3, 64)), weights.vector("fc_b", 3)
    ops = [op("Conv", ["data", "conv_w", "conv_b"], ["conv"], kernel=3, order="NCHW"),
           op("MaxPool", ["conv"], ["pool"], kernel=2, stride=2),
           op("Relu", ["pool"], ["pool"]),
           op("FC", ["pool", "fc_w", "fc_b"], ["fc"]),
           op("Softmax", ["fc"], ["softmax"])]
    source = write_model(tmp_path / "source", ops, ["data"], ["softmax"], weights)
    files = {name: open(os.path.join(source, name), "rb").read() for name in ("predict_net.pb", "init_net.pb")}
    inputs = [ModelInput("data", "float", (1, 1, 10, 10))]
    glowmlir.compile(source, model_inputs=inputs)  # the undamaged model compiles
    predict = bytearray(files["predict_net.pb"])
    predict[predict.index(b"Softmax") + 4] = 0xED  # not UTF-8: protobuf hands the op type over as bytes
    (tmp_path / "source" / "predict_net.pb").write_bytes(predict)
    message = refusal(source, model_inputs=inputs)
    assert message.startswith('-model: "') and "is damaged: type b'Soft" in message
    for damaged_file in files:
        directory = tmp_path / "damaged"
        os.makedirs(directory, exist_ok=True)

        def compile_damaged(damaged: bytes) -> None:
            for name, data in files.items():
                with open(directory / name, "wb") as f:
                    f.write(damaged if name == damaged_file else data)
            glowmlir.compile(str(directory), model_inputs=inputs)

        assert assert_success_or_glow_error(compile_damaged, mutations(files[damaged_file], seed=12, count=50)) > 20


# ----------------------------------------------------------------------------- deep graphs


def test_chain_of_two_thousand_ops_compiles_and_computes(tmp_path):
    """It raised RecursionError in glow-schedule-for-memory."""
    depth = 2000
    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"]) for i in range(depth)]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [8])],
                              [helper.make_tensor_value_info(f"t{depth}", TensorProto.FLOAT, [8])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    x = np.linspace(-2, 2, 8, dtype=np.float32)
    outputs = glowmlir.compile(saved(tmp_path, model)).run({"t0": x})
    np.testing.assert_array_equal(outputs[f"t{depth}"], np.maximum(x, 0))


def test_sum_of_a_thousand_inputs_compiles_and_computes(tmp_path):
    count = 1000
    graph = helper.make_graph([helper.make_node("Sum", [f"x{i}" for i in range(count)], ["y"])], "sum",
                              [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [3]) for i in range(count)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    rng = np.random.default_rng(0)
    inputs = {f"x{i}": rng.standard_normal(3).astype(np.float32) for i in range(count)}
    expected = np.zeros(3, np.float32)
    for i in range(count):  # Sum adds its inputs in order, in float32
        expected = expected + inputs[f"x{i}"]
    np.testing.assert_allclose(glowmlir.compile(saved(tmp_path, model)).run(inputs)["y"], expected, rtol=0, atol=1e-5)
