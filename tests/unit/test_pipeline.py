"""The pipeline stage by stage: printed and re-parsed between every two passes, same numbers."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.llvm import LLVM
from xdsl.parser import Parser

import glowmlir
from glowmlir.compiler import Bundle, CompileOptions, QuantizationOptions
from glowmlir.bundle import BundleLayout
from glowmlir.dialects import glowll
from glowmlir.dialects.glow import Glow
from glowmlir.dialects.glowll import GlowLL
from glowmlir.dialects.quant import Quant
from glowmlir.profiling import Profiler
from glowmlir.quantization.profile import write_profile
from glowmlir.dialects.weights import printing_all_weights
from glowmlir.importers.onnx import import_onnx
from glowmlir.lowering.glowll_to_llvm import LowerGlowLLToLLVM
from glowmlir.lowering.llvm_to_object import compile_to_object
from glowmlir.pipeline import default_pipeline
from glowmlir.reference import run_function
from tests.support.models import LENET, onnxruntime_outputs, random_inputs


def reparsed(module):
    context = Context()
    for dialect in (Builtin, Glow, GlowLL, Quant, LLVM):
        context.load_dialect(dialect)
    with printing_all_weights():
        text = str(module)
    return Parser(context, text).parse_module()


def test_every_stage_prints_and_parses_back():
    module = import_onnx(LENET)
    inputs = random_inputs(onnx.load(LENET))
    expected = onnxruntime_outputs(onnx.load(LENET), inputs)["softmax"]
    # the reference interpreter on the imported graph agrees with onnxruntime
    np.testing.assert_allclose(run_function(module.body.block.first_op, inputs)["softmax"], expected, atol=1e-6)
    bundle = _compile_reparsing_every_stage(module, default_pipeline().passes)
    np.testing.assert_allclose(bundle.run(inputs)["softmax"], expected, atol=1e-6)


def test_every_quantized_stage_prints_and_parses_back(tmp_path):
    """The same with quantization: the quant types round-trip exactly, so the bundle built
    through text is bit-identical to the one compiled in memory."""
    inputs = random_inputs(onnx.load(LENET))
    profiler = Profiler.for_model(LENET, CompileOptions())
    for _ in profiler.run([inputs, random_inputs(onnx.load(LENET), seed=2)]):
        pass
    write_profile(str(tmp_path / "lenet.yaml"), profiler.profile)
    quantization = QuantizationOptions(str(tmp_path / "lenet.yaml"), channelwise=True)
    bundle = _compile_reparsing_every_stage(import_onnx(LENET), default_pipeline(quantization=quantization).passes)
    expected = glowmlir.compile(LENET, quantization=quantization).run(inputs)["softmax"]
    np.testing.assert_array_equal(bundle.run(inputs)["softmax"], expected)


def _compile_reparsing_every_stage(module, passes) -> Bundle:
    layout = None
    for compiler_pass in passes:
        if isinstance(compiler_pass, LowerGlowLLToLLVM):
            layout = BundleLayout.of(next(op for op in module.body.block.ops if isinstance(op, glowll.FunctionOp)))
        compiler_pass.apply(Context(), module)
        module = reparsed(module)
        module.verify()
    object_code, _ = compile_to_object(module)
    return Bundle(layout, object_code, "static", {}, {}, "")


def test_graph_passes_keep_the_numbers_of_a_batchnorm_network():
    """fold-batchnorm, constant folding and fusion, checked with the reference interpreter."""
    rng = np.random.default_rng(5)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "sh", "m", "v"], ["n"]),
             helper.make_node("Relu", ["n"], ["y"])]
    initializers = {"w": rng.normal(size=(4, 3, 3, 3)), "b": rng.normal(size=4), "s": rng.uniform(0.5, 2, 4),
                    "sh": rng.normal(size=4), "m": rng.normal(size=4), "v": rng.uniform(0.5, 2, 4)}
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])],
                              [numpy_helper.from_array(v.astype(np.float32), k) for k, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "bn.onnx")
        onnx.save(model, path)
        module = import_onnx(path)
    inputs = random_inputs(model)
    before = run_function(module.body.block.first_op, inputs)["y"]
    for compiler_pass in default_pipeline().glow:
        compiler_pass.apply(Context(), module)
    ops = [op.name for op in module.body.block.first_op.body.block.ops]
    assert "glow.batch_normalization" not in ops and "glow.relu" not in ops
    after = run_function(module.body.block.first_op, inputs)["y"]
    np.testing.assert_allclose(after, before, atol=1e-5)
    np.testing.assert_allclose(after, onnxruntime_outputs(model, inputs)["y"], atol=1e-5)
