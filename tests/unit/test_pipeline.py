"""The pipeline stage by stage: printed and re-parsed between every two passes, same numbers."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.llvm import LLVM
from xdsl.parser import Parser

import glowmlir
from glowmlir.bundle import BundleLayout
from glowmlir.compiler import Bundle, CompileOptions, QuantizationOptions
from glowmlir.dialects import glowll
from glowmlir.dialects.glow import Glow
from glowmlir.dialects.glowll import GlowLL
from glowmlir.dialects.quant import Quant
from glowmlir.dialects.weights import printing_all_weights
from glowmlir.importers.onnx import import_onnx
from glowmlir.lowering.glowll_to_llvm import LowerGlowLLToLLVM
from glowmlir.lowering.llvm_to_object import compile_to_object
from glowmlir.pipeline import default_pipeline
from glowmlir.profiling import Profiler
from glowmlir.quantization.profile import write_profile
from glowmlir.reference import run_function
from glowmlir.target import Target
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


# ----------------------------------------------------------------------------- the pipeline on the command line


def _tool(module: str, *arguments: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", f"glowmlir.cli.{module}", *arguments], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": os.getcwd()})


def _printed_module(text: str) -> str:
    """The first module in `text`: from `builtin.module {` to its closing brace."""
    lines = text.splitlines()
    start = lines.index("builtin.module {")
    return "\n".join(lines[start:lines.index("}", start) + 1])


@pytest.fixture(scope="module")
def lenet_profile(tmp_path_factory) -> str:
    profiler = Profiler.for_model(LENET, CompileOptions())
    for _ in profiler.run([random_inputs(onnx.load(LENET), seed) for seed in (1, 2)]):
        pass
    path = str(tmp_path_factory.mktemp("profile") / "lenet.yaml")
    write_profile(path, profiler.profile)
    return path


@pytest.mark.parametrize("quantized", [False, True])
def test_printed_pipeline_run_by_glow_opt_gives_the_compiled_glowll(tmp_path, quantized, lenet_profile):
    """`glow-compile -print-pipeline` is a `glow-opt -p` string: run on the imported LeNet, it
    gives the glowll IR `glow-compile -dump-ir` prints (the quantized case carries pass options)."""
    model = os.path.abspath(LENET)
    options = [f"-model={model}"]
    if quantized:
        options += [f"-load-profile={lenet_profile}", "-use-cmsis", "-mcpu=cortex-m7",
                    "-reuse-activation-memory-allocations=false"]
    printed = _tool("compile", *options, "-print-pipeline", cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr
    spec = printed.stdout.strip()
    assert "\n" not in spec and not (tmp_path / "b").exists()
    assert spec.startswith("glow-decompose-conv-transpose,glow-decompose-3d-convolution,glow-decompose-3d-pools,"
                           "glow-decompose-1d-windows,glow-choose-hybrid-weights,glow-constant-fold,glow-fold-batchnorm,"
                           "glow-constant-fold,")
    # the host's kernels block their loops for its cache (`Target.cache_bytes`)
    cache = Target().cache_bytes
    assert spec.endswith(",lower-glowll-to-llvm{pointer-width=32}" if quantized else
                         f",lower-glowll-to-llvm{{cache-bytes={cache}}}")
    if quantized:
        assert f'glow-quantize{{profile="{lenet_profile}" symmetric-weights=true}}' in spec
        # what CMSIS-NN does not take runs on the M7's DSP extension, within Glow's constants
        # (a model quantized from a profile: flash_budget.GLOW_CONSTANT_RATIO), speed first (its
        # code within 48 KB: no excess, flash_budget.choose_size_first)
        assert ("glowll-select-cmsis-nn,glowll-select-arm-dsp-kernels{constant-ratio=1.0 code-excess=0},"
                "glowll-fuse-lookup-tables,"
                "glowll-fold-pool-widening,glowll-share-buffers,"
                "glowll-allocate-memory{reuse=false pointer-width=32}") in spec
    compiled = _tool("compile", *options, "-emit-bundle=b", "-dump-ir", cwd=tmp_path)
    assert compiled.returncode == 0, compiled.stderr
    to_glowll = spec.rsplit(",", 1)[0]  # all but lower-glowll-to-llvm
    opt = _tool("opt", model, "-p", to_glowll, cwd=tmp_path)
    assert opt.returncode == 0, opt.stderr
    assert "glowll.function @lenet_mnist" in opt.stdout
    assert _printed_module(opt.stdout) == _printed_module(compiled.stdout)


def test_dump_ir_after_prints_mlir_headers_on_stderr(tmp_path):
    """`-dump-ir-after=PASS,PASS` prints the module after just those passes, in pipeline order;
    the last glowll dump is the IR `-dump-ir` prints."""
    compiled = _tool("compile", f"-model={os.path.abspath(LENET)}", "-emit-bundle=b", "-dump-ir",
                     "-dump-ir-after=glowll-allocate-memory,glow-fuse-activations", cwd=tmp_path)
    assert compiled.returncode == 0, compiled.stderr
    headers = [line for line in compiled.stderr.splitlines() if line.startswith("// -----// IR Dump")]
    assert headers == ["// -----// IR Dump After FuseActivations (glow-fuse-activations) //----- //",
                       "// -----// IR Dump After AllocateMemory (glowll-allocate-memory) //----- //"]
    graph, glowll_dump = compiled.stderr.split(headers[1])
    assert "glow.relu" not in graph and "activation" in graph and "glow.max_pool" in graph  # pools not fused yet
    assert _printed_module(glowll_dump) == _printed_module(compiled.stdout)
    assert "IR Dump" not in compiled.stdout


def test_dump_ir_after_all_names_every_pass(tmp_path):
    result = _tool("compile", f"-model={os.path.abspath(LENET)}", "-emit-bundle=b", "-dump-ir-after=all", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    passes = [line.split("(")[1].split(")")[0] for line in result.stderr.splitlines() if "IR Dump After" in line]
    assert passes == [p.name for p in CompileOptions().pipeline().passes]
    assert passes[-1] == "lower-glowll-to-llvm" and "llvm.func @lenet_mnist" in result.stderr


@pytest.mark.parametrize("selection, fragment", [
    ("glow-fuse-activation", 'no pass "glow-fuse-activation" in this pipeline'),
    ("glowll-select-cmsis-nn", 'no pass "glowll-select-cmsis-nn" in this pipeline'),  # only with -use-cmsis
    ("", 'no pass "" in this pipeline'),
])
def test_dump_ir_after_an_unknown_pass_is_one_line(tmp_path, selection, fragment):
    result = _tool("compile", f"-model={os.path.abspath(LENET)}", "-emit-bundle=b", f"-dump-ir-after={selection}",
                   cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("glow-compile: error: -dump-ir-after=") and fragment in lines[0]
    assert "(all, or one of: glow-decompose-conv-transpose, glow-decompose-3d-convolution," in lines[0]
    assert not (tmp_path / "b").exists()
