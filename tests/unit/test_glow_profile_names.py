"""Profiles keyed as Glow writes them: their keys are Glow's node names. No profile written by
Glow itself is involved (Glow's repository ships none, and its model-profiler was not built
here): the fixtures' keys (tests/fixtures/glow_profiles/) are derived in
`glow_profile_keys` from Glow's naming rules as its sources state them
(tests/support/glow_naming.py: `Module::uniqueName`, `loadOperatorName`,
`NodeValue::generateNodeOutputName`) and the order in which Glow's loaders and optimizer
create nodes (each step cited below), not from glowmlir's names. Every value we quantize must
get its range from the entry of the node Glow computes it with, and the int8 model must agree
with the float one."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import glowmlir
from glowmlir.compiler import CompileOptions, QuantizationOptions, import_network
from glowmlir.dialects import glow
from glowmlir.dialects.quant import is_quantized
from glowmlir.errors import GlowError
from glowmlir.importers.onnx import ModelInput
from glowmlir.pipeline import pre_quantization_passes, run_passes
from glowmlir.quantization.glow_names import GlowNodeNames, glow_prefix
from glowmlir.quantization.params import choose_params
from glowmlir.quantization.profile import read_profile, write_profile
from glowmlir.transforms.profile_keys import value_key
from glowmlir.transforms.quantize import Quantize
from tests.support import glow_naming
from tests.support.caffe2_nets import lenet_ops
from tests.support.models import LENET
from tests.unit.test_caffe2_importer import Weights, write_model

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "glow_profiles")

# ----------------------------------------------------------------------------- the models


def caffe2_lenet(directory) -> str:
    """Glow's Caffe2 LeNet (tests/unit/test_caffe2_importer.py), random weights (seed 1)."""
    weights = Weights(seed=1)
    weights.filter("conv1_w", (20, 1, 5, 5)), weights.vector("conv1_b", 20)
    weights.filter("conv2_w", (50, 20, 5, 5)), weights.vector("conv2_b", 50)
    weights.filter("ip1_w", (500, 800)), weights.vector("ip1_b", 500)
    weights.filter("ip2_w", (10, 500)), weights.vector("ip2_b", 10)
    ops = lenet_ops()
    return write_model(directory, ops, ["data"], ["softmax", "ip2"], weights)


def resnet_block(path) -> str:
    """A stem (conv, relu) and a residual block (conv-bn-relu-conv-bn-add-relu), flatten, a
    fully connected layer and an unnamed softmax writing "prob" (opset 11), random weights."""
    rng = np.random.default_rng(7)
    channels, size = 8, 8
    initializers = []

    def tensor(name, array):
        initializers.append(numpy_helper.from_array(np.asarray(array, np.float32), name))
        return name

    def conv(name, source):
        w = rng.standard_normal((channels, channels, 3, 3)) / np.sqrt(9 * channels)
        return helper.make_node("Conv", [source, tensor(f"{name}_w", w), tensor(f"{name}_b", rng.uniform(-.2, .2,
                                channels))], [f"{name}_out"], name=name, pads=[1, 1, 1, 1], kernel_shape=[3, 3])

    def batch_norm(name, source):
        parts = [tensor(f"{name}_{p}", rng.uniform(lo, hi, channels))
                 for p, lo, hi in (("scale", .5, 1.5), ("bias", -.3, .3), ("mean", -.3, .3), ("var", .5, 1.5))]
        return helper.make_node("BatchNormalization", [source, *parts], [f"{name}_out"], name=name)

    nodes = [conv("stem_conv", "x"), helper.make_node("Relu", ["stem_conv_out"], ["stem"], name="stem_relu"),
             conv("res_conv1", "stem"), batch_norm("res_bn1", "res_conv1_out"),
             helper.make_node("Relu", ["res_bn1_out"], ["r1"], name="res_relu1"),
             conv("res_conv2", "r1"), batch_norm("res_bn2", "res_conv2_out"),
             helper.make_node("Add", ["res_bn2_out", "stem"], ["sum"], name="res_add"),
             helper.make_node("Relu", ["sum"], ["block"], name="res_relu2"),
             helper.make_node("Flatten", ["block"], ["flat"], name="flatten", axis=1),
             helper.make_node("Gemm", ["flat", tensor("fc_w", rng.standard_normal((10, 512)) / np.sqrt(512)),
                                       tensor("fc_b", rng.uniform(-.2, .2, 10))], ["logits"], name="fc", transB=1),
             helper.make_node("Softmax", ["logits"], ["prob"], axis=1)]
    graph = helper.make_graph(nodes, "resnet_block",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, size, size])],
                              [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 10])], initializers)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)]), str(path))
    return str(path)


def lenet_inputs(count: int, seed: int) -> list[dict]:
    data = np.load(os.path.join(os.path.dirname(LENET), "heldout.npz"))
    start = 0 if seed == 0 else 200
    return [{"data": (image.astype(np.float32) / np.float32(255))[None, None]}
            for image in data["images"][start:start + count]]


def normal_inputs(name: str, shape, count: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [{name: rng.standard_normal(shape).astype(np.float32)} for _ in range(count)]


# The cases: model builder, compile options, calibration / test inputs, fixture, the Glow key
# (hand-derived, see the fixture's comments) of every value we quantize, and our key of the logits.
CASES = {
    "lenet_onnx": (lambda d: LENET, CompileOptions(), lambda n, s: lenet_inputs(n, s), "lenet_onnx.yaml", {
        "data:0": "data:0", "_conv1_Conv:0": "_conv1_Conv__2:0", "_MaxPool:0": "_MaxPool__1:0",
        "_conv2_Conv:0": "_conv2_Conv__2:0", "_MaxPool_1:0": "_MaxPool_1__1:0", "_Flatten:0": "_Flatten:0",
        "_fc1_Gemm:0": "_fc1_Gemm:0", "_Relu:0": "_Relu:0", "_fc2_Gemm:0": "_fc2_Gemm:0",
        "_Softmax:0": "_Softmax:0"}, "_fc2_Gemm:0"),
    "lenet_caffe2": (lambda d: caffe2_lenet(d / "lenet_mnist"),
                     CompileOptions(model_inputs=[ModelInput("data", "float", (1, 1, 28, 28))]),
                     lambda n, s: normal_inputs("data", (1, 1, 28, 28), n, s), "lenet_caffe2.yaml", {
        "data:0": "data:0", "conv1:0": "conv1__1:0", "pool1:0": "pool1__1:0", "conv2:0": "conv2__1:0",
        "pool2:0": "pool2__1:0", "ip1_flatten:0": "ip1_reshape2D:0", "ip1:0": "ip1:0", "ip1__1:0": "ip1__1:0",
        "ip2__1:0": "ip2__1:0", "softmax__1:0": "softmax__1:0"}, "ip2__1:0"),
    "resnet_block": (lambda d: resnet_block(d / "resnet_block.onnx"), CompileOptions(),
                     lambda n, s: normal_inputs("x", (1, 8, 8, 8), n, s), "resnet_block.yaml", {
        "x:0": "x:0", "stem_conv:0": "stem_conv__2:0", "stem_relu:0": "stem_relu__1:0",
        "res_conv1:0": "res_conv1__2:0", "res_relu1:0": "res_relu1__1:0", "res_conv2:0": "res_conv2__2:0",
        "res_add:0": "res_add__1:0", "res_relu2:0": "res_relu2__1:0", "flatten:0": "flatten:0", "fc:0": "fc:0",
        "prob__1:0": "Softmax_prob:0"}, "fc:0"),
}


# ----------------------------------------------------------------------------- Glow's keys, from Glow's rules

ONNX_NODES = {
    # op type -> nodes ONNXModelLoader (lib/Importer/ONNXModelLoader.cpp) creates under opName for a 4-D input,
    # in order, and which of them computes the op's value
    "Conv": (4, 2),          # loadConv2D: createTranspose(filter), createTranspose(input), createConv,
                             # createTranspose(output)
    "MaxPool": (3, 1),       # loadPool: createTranspose(input), createMaxPool, createTranspose(result 0)
    "AveragePool": (3, 1),   # loadPool: createTranspose(input), createAvgPool, createTranspose
}
SINKABLE = {"Relu", "BatchNormalization"}
"""lib/Optimizer/GraphOptimizer/GraphOptimizer.cpp SinkCode::run, "Sink Transpose below batch
normalization nodes" / "batch RELU nodes": a node whose input is a layout Transpose is created
again below it under its own name (`F->createRELU(RL->getName(), ...)`); "Sink Transpose below
Arithmetic nodes": likewise an Add whose two inputs both are."""


def onnx_glow_keys(path: str) -> dict[str, str]:
    """ONNX output tensor -> the key of Glow's profile entry for it."""
    model = onnx.load(path)
    names = glow_naming.GlowNames()
    for tensor in model.graph.initializer:  # ONNXModelLoader::loadInitializers: createConstant, before any op
        names.storage(tensor.name)
    for value in model.graph.input:          # loadInputs: createPlaceholder
        if value.name not in {t.name for t in model.graph.initializer}:
            names.storage(value.name)
    node_of: dict[str, str] = {value.name: value.name for value in model.graph.input}
    transposed: set[str] = set()             # tensors whose Glow node is followed by a layout Transpose
    sunk = []
    for node in model.graph.node:
        names.original(node.name)            # ONNXModelLoader::loadOperator: mod_.registerOriginalName(op.name())
        op_name = glow_naming.onnx_operator_name(node.name, node.op_type, list(node.output))
        count, value = ONNX_NODES.get(node.op_type, (1, 0))  # Flatten, Gemm, Relu, Add, Softmax: one node
        created = [names.node(op_name) for _ in range(count)]
        node_of[node.output[0]] = created[value]
        inputs = [name for name in node.input if name in node_of and name not in {t.name for t in
                                                                                   model.graph.initializer}]
        if count > 1:
            transposed.add(node.output[0])
        elif (node.op_type in SINKABLE and inputs[0] in transposed) or \
                (node.op_type == "Add" and all(name in transposed for name in inputs)):
            sunk.append(node.output[0])
            transposed.add(node.output[0])
    for tensor in sunk:  # SinkCode runs after loading (optimize(), to a fixed point)
        node_of[tensor] = names.node(node_of[tensor])
    return {tensor: glow_naming.node_output_name(name) for tensor, name in node_of.items()}


def caffe2_lenet_glow_keys() -> dict[str, str]:
    """Caffe2 output blob (and "ip1_flatten", the FC's flattened input) -> the key of Glow's
    profile entry for it, for `caffe2_lenet` (lib/Importer/Caffe2ModelLoader.cpp)."""
    names = glow_naming.GlowNames()
    for weight in ("conv1_w", "conv1_b", "conv2_w", "conv2_b", "ip1_w", "ip1_b", "ip2_w", "ip2_b", "data"):
        names.storage(weight)                # the init net's constants, the input placeholder
    for output in ("softmax", "ip2"):        # loadNetwork: "Make a claim on the unique name of all output
        names.used_storage_names.add(glow_naming.legalize_name(output))  # Placeholders" (registerStorageName)
    keys = {"data": "data"}
    for conv in ("conv1", "conv2"):
        names.node(f"{conv}_w_NHWC")         # loadConv: createTranspose(w name + "_NHWC")
        names.node(conv)                     # order NCHW: createTranspose(opName, in)
        keys[conv] = names.node(conv)        # createConv(opName)
        names.node(conv)                     # createTranspose(opName, node) back to NCHW
        pool = conv.replace("conv", "pool")  # loadPool: createTranspose(opName), createMaxPool(opName), createTranspose
        names.node(pool)
        keys[pool] = names.node(pool)
        names.node(pool)
    # Graph.cpp createFullyConnected on a 4-D input: createFlatten(name + ".reshape2D")
    keys["ip1_flatten"] = names.node("ip1.reshape2D")
    keys["ip1"] = names.node("ip1")          # createFullyConnected(opName)
    keys["ip1__1"] = names.node("ip1")       # in-place Relu: opName = its output "ip1" (caffe2 loadOperatorName)
    keys["ip2"] = names.node("ip2")          # FC ip2 (2-D input: no flatten); "ip2" is claimed storage
    names.node("softmax.selected")           # loadSoftmax: createSplat(opName + ".selected"),
    names.node("softmax.reshapeInput")       # createFlatten(opName + ".reshapeInput"),
    keys["softmax"] = names.node("softmax")  # createSoftMax(opName); "softmax" is claimed storage
    return {blob: glow_naming.node_output_name(name) for blob, name in keys.items()}


def glow_profile_keys(case_name: str, model: str) -> set[str]:
    """The keys of Glow's profile entries for the values the case quantizes."""
    if case_name == "lenet_caffe2":
        return set(caffe2_lenet_glow_keys().values())
    keys = onnx_glow_keys(model)
    return {keys[tensor] for tensor in onnx_value_tensors(case_name)}


def onnx_value_tensors(case_name: str) -> list[str]:
    if case_name == "lenet_onnx":
        return ["data", "/conv1/Conv_output_0", "/MaxPool_output_0", "/conv2/Conv_output_0", "/MaxPool_1_output_0",
                "/Flatten_output_0", "/fc1/Gemm_output_0", "/Relu_output_0", "/fc2/Gemm_output_0", "softmax"]
    return ["x", "stem_conv_out", "stem", "res_conv1_out", "r1", "res_conv2_out", "sum", "block", "flat", "logits",
            "prob"]


@pytest.mark.parametrize("case_name", sorted(CASES))
def test_fixture_keys_follow_glows_naming_rules(case_name, tmp_path):
    """The Glow keys the cases (and their fixtures) use are those Glow's rules give."""
    build, _, _, fixture, glow_keys, _ = CASES[case_name]
    derived = glow_profile_keys(case_name, build(tmp_path))
    assert set(glow_keys.values()) == derived
    assert derived <= set(read_profile(os.path.join(FIXTURES, fixture)).entries)


@pytest.fixture(params=sorted(CASES))
def case(request, tmp_path):
    build, options, inputs, fixture, glow_keys, logits = CASES[request.param]
    return build(tmp_path), options, inputs, os.path.join(FIXTURES, fixture), glow_keys, logits


# ----------------------------------------------------------------------------- tests


def quantized_graph(model: str, options: CompileOptions, profile: str):
    module = import_network(model, options)
    run_passes(module, pre_quantization_passes())
    Quantize(profile=profile, schema="symmetric").apply(None, module)
    return module


def test_every_value_gets_the_range_of_its_glow_node(case):
    """Our names for the values are not Glow's; each quantized value's parameters are those
    of the fixture entry Glow's naming gives it (and never those of our name's entry)."""
    model, options, _, fixture, glow_keys, _ = case
    profile = read_profile(fixture)
    module = quantized_graph(model, options, fixture)
    seen = set()
    for operation in module.walk():
        if not operation.results or not (isinstance(operation, glow.PlaceholderOp) or glow.NODE_NAME in
                                         operation.attributes):
            continue
        key = value_key(operation.results[0])
        result_type = operation.results[0].type
        if key not in glow_keys:
            continue
        seen.add(key)
        if not is_quantized(result_type) or isinstance(operation, glow.SoftMaxOp) or \
                type(operation) in glow.input_quantization_ops():
            continue  # placeholders stay float; SoftMax has fixed parameters, pools and Reshape their input's
        entry = profile.entries[glow_keys[key]]
        expected = choose_params(entry.min, entry.max, "symmetric", "Int8")
        element = result_type.element_type
        assert (element.scale, element.offset) == (pytest.approx(expected.scale, rel=1e-6), expected.offset), key
    assert seen == set(glow_keys)
    assert {k for k, g in glow_keys.items() if k != g} <= seen and any(k != g for k, g in glow_keys.items())


def test_int8_model_agrees_with_the_float_one(case, tmp_path):
    """glow-compile -load-profile=<Glow's profile> loads it (no hash check: Glow's hash is of
    Glow's graph), and the int8 bundle picks the float model's class, its probabilities off by
    at most a few steps of the logits' quantization (SoftMax's slope is at most 1/2) and one of
    its own output's."""
    model, options, inputs, fixture, glow_keys, logits = case
    entry = read_profile(fixture).entries[glow_keys[logits]]
    logits_step = choose_params(entry.min, entry.max, "symmetric", "Int8").scale
    result = subprocess.run([sys.executable, "-m", "glowmlir.cli.compile", f"-model={model}",
                             f"-load-profile={fixture}", "-quantization-schema=symmetric",
                             f"-emit-bundle={tmp_path / 'bundle'}",
                             *[f"-model-input={s.name},float,[{','.join(map(str, s.shape))}]"
                               for s in options.model_inputs]], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    floating = glowmlir.compile(model, model_inputs=options.model_inputs)
    quantized = glowmlir.compile(model, model_inputs=options.model_inputs,
                                 quantization=QuantizationOptions(fixture, schema="symmetric"))
    output = next(p.name for p in floating.layout.placeholders if p.kind == "output" and "soft" in p.name
                  or p.name == "prob")
    agree = 0
    for feed in inputs(20, 1):
        expected, got = floating.run(feed)[output], quantized.run(feed)[output]
        agree += int(np.argmax(expected) == np.argmax(got))
        assert np.abs(expected - got).max() <= 3 * logits_step / 2 + 1 / 256
    assert agree >= 19


def test_a_glowmlir_profile_still_round_trips(tmp_path):
    """glow-profile's own profile: our keys, our graph hash, which is still checked."""
    from glowmlir.profiling import Profiler

    model = resnet_block(tmp_path / "resnet_block.onnx")
    profiler = Profiler.for_model(model, CompileOptions())
    for _ in profiler.run(normal_inputs("x", (1, 8, 8, 8), 5, 0)):
        pass
    assert "res_conv1:0" in profiler.profile.entries and "res_conv1__2:0" not in profiler.profile.entries
    path = str(tmp_path / "ours.yaml")
    write_profile(path, profiler.profile)
    quantized_graph(model, CompileOptions(), path)
    profiler.profile.graph_hash ^= 1
    write_profile(path, profiler.profile)
    with pytest.raises(GlowError, match="graph hash mismatch"):
        quantized_graph(model, CompileOptions(), path)


def test_a_missing_glow_entry_names_both_keys(tmp_path):
    profile = read_profile(os.path.join(FIXTURES, "resnet_block.yaml"))
    del profile.entries["res_conv1__2:0"]
    path = str(tmp_path / "partial.yaml")
    write_profile(path, profile)
    with pytest.raises(GlowError, match=r"no entry \"res_conv1:0\" \(or Glow's \"res_conv1__2:0\"\)"):
        quantized_graph(resnet_block(tmp_path / "resnet_block.onnx"), CompileOptions(), path)


def test_glow_unique_name_rule():
    """glowmlir's `GlowNodeNames` against `Module::uniqueName` as `Function::addNode` calls it
    (tests/support/glow_naming.py): random streams of node names drawn from a few prefixes
    with and without `__<digits>`, illegal characters, storage names and original names."""
    rng = np.random.default_rng(41)
    pieces = ["conv", "conv__1", "conv__2", "a__", "a__b", "x.y", "x_y", "9lives", "softmax", "relu__12"]
    for _ in range(200):
        storage = list(rng.choice(pieces, 2, replace=False))  # a model's storage names are distinct
        ours, glows = GlowNodeNames(storage=storage), glow_naming.GlowNames()
        for name in storage:
            glows.storage(name)
        for name in rng.choice(pieces, 12):
            if rng.random() < 0.2:
                ours.note_original(name)
                glows.original(name)
            assert ours(name) == glows.node(name), (storage, name)
    for name in pieces:
        assert glow_prefix(name) == glow_naming.get_prefix(name)
