"""Glow options glowmlir takes as Glow does, or refuses with the reason: each checked for what it
changes (files, header text, object code, numbers), not only for being accepted."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import glowmlir
from glowmlir.bundle import allocation_efficiency
from tests.support.models import LENET

LENET_PATH = os.path.abspath(LENET)


def tool(program: str, *arguments: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", f"glowmlir.cli.{program}", *arguments], capture_output=True,
                          text=True, cwd=cwd, env={**os.environ, "PYTHONPATH": os.getcwd()})


def compile_lenet(tmp_path, *arguments: str) -> subprocess.CompletedProcess:
    return tool("compile", f"-model={LENET_PATH}", f"-emit-bundle={tmp_path / 'bundle'}", *arguments, cwd=tmp_path)


@pytest.mark.parametrize("program", ["compile", "profile", "run"])
def test_version(program, tmp_path):
    result = tool(program, "-version", cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == ""
    assert f"glowmlir {glowmlir.__version__}," in result.stdout and "LLVM version" in result.stdout


@pytest.mark.parametrize("option, fragment", [
    ("-enable-rowwise", "rowwise-quantized FullyConnected has no kernel"),
    ("-convert-to-fp16=true", "no float16 compute kernels"),
    ("-tflite-uint8-to-int8=false", "always converted to INT8"),
    ("-bundle-objects=test", "self-contained object"),
])
def test_options_glowmlir_cannot_honour_are_refused_with_the_reason(option, fragment, tmp_path):
    result = compile_lenet(tmp_path, option)
    assert result.returncode == 2
    assert result.stderr.startswith(f"glow-compile: error: {option.split('=')[0]}") and fragment in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "bundle").exists()


@pytest.mark.parametrize("option", ["-enable-rowwise=false", "-convert-to-fp16=0", "-tflite-uint8-to-int8"])
def test_the_same_options_at_glowmlirs_value_are_taken(option, tmp_path):
    result = compile_lenet(tmp_path, option)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "bundle" / "lenet_mnist.o").is_file()


def test_dump_graph_prints_the_optimized_graph(tmp_path):
    result = compile_lenet(tmp_path, "-dump-graph")
    assert result.returncode == 0, result.stderr
    assert "glow.function @lenet_mnist" in result.stdout and "glow.convolution" in result.stdout
    assert "glowll." not in result.stdout


def test_code_model_is_the_jits_and_bundle_code_model_the_bundles(tmp_path):
    result = compile_lenet(tmp_path, "-code-model=large")
    assert result.returncode == 0
    assert "glow-compile: warning: -code-model: no effect on bundles" in result.stderr
    small = (tmp_path / "bundle" / "lenet_mnist.o").read_bytes()
    assert compile_lenet(tmp_path, "-bundle-code-model=large").returncode == 0
    assert (tmp_path / "bundle" / "lenet_mnist.o").read_bytes() != small  # x86-64 large: 64-bit addresses
    assert "-code-model=\"huge\"" in compile_lenet(tmp_path, "-code-model=huge").stderr


def test_code_is_static_unless_pic_is_asked_for_as_in_glow(tmp_path):
    from glowmlir.targets import resolve_target

    for target in (resolve_target(), resolve_target(mcpu="cortex-m7"), resolve_target(target="aarch64-linux-gnu")):
        assert target.relocation == "static", target
    objects = {}
    for model in ("static", "pic"):  # 32-bit x86 addresses data absolutely unless position-independent
        result = compile_lenet(tmp_path, "-mcpu=i386", f"-relocation-model={model}")
        assert result.returncode == 0, result.stderr
        objects[model] = (tmp_path / "bundle" / "lenet_mnist.o").read_bytes()
    assert objects["static"] != objects["pic"]
    assert compile_lenet(tmp_path, "-mcpu=i386").returncode == 0
    assert (tmp_path / "bundle" / "lenet_mnist.o").read_bytes() == objects["static"]


def test_allocation_efficiency_is_glows_max_live_over_max_used(tmp_path):
    assert compile_lenet(tmp_path, "-reuse-activation-memory-allocations=false").returncode == 0
    header = (tmp_path / "bundle" / "lenet_mnist.h").read_text()
    bundle = glowmlir.compile(LENET_PATH, reuse_activations=False)
    efficiency = bundle.layout.activations_lower_bound / bundle.layout.activations_size
    assert 0 < efficiency < 1
    assert f"// Activations allocation efficiency: {efficiency:.4f}" in header
    assert allocation_efficiency(glowmlir.compile(LENET_PATH).layout) == 1.0


def test_model_input_element_types_as_glow_spells_them(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Add", ["x", "one"], ["t"]), helper.make_node("Mul", ["t", "two"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]),
                               helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])])
    path = tmp_path / "affine.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    cases = [("x,int32,[1,4]", np.array([[1, -2, 3, 70000]], np.int32), 1.0, 0),
             ("x,int64,[1,4]", np.array([[1, -2, 3, 4]], np.int64), 1.0, 0),
             ("x,bool,[1,4]", np.array([[True, False, True, True]]), 1.0, 0),
             ("x,float16,[1,4]", np.array([[1.5, -2, 0.25, 4]], np.float16), 1.0, 0),
             ("x,int8q,0.5,1,[1,4]", np.array([[-128, 0, 5, 127]], np.int8), 0.5, 1),
             ("x,uint8q,0.5,128,[1,4]", np.array([[0, 128, 200, 255]], np.uint8), 0.5, 128),
             ("x,int16q,0.25,-3,[1,4]", np.array([[-300, 0, 5, 1000]], np.int16), 0.25, -3),
             ("x,int32q,0.001,7,[1,4]", np.array([[-100000, 0, 5, 1000]], np.int32), 0.001, 7)]
    for spec, data, scale, offset in cases:
        bundle = glowmlir.compile(str(path), model_inputs=[spec])
        assert bundle.layout.placeholder("x").dtype == data.dtype, spec
        expected = (np.float32(scale) * (data.astype(np.float64) - offset) + 1) * 2
        np.testing.assert_allclose(bundle.run(x=data)["y"], expected, rtol=1e-6, err_msg=spec)
    result = tool("compile", f"-model={path}", "-model-input=x,bfloat16,[1,4]", "-emit-bundle=b", cwd=tmp_path)
    assert result.returncode == 2 and "bfloat16 has no kernels here" in result.stderr
    result = tool("compile", f"-model={path}", "-model-input=x,uint8q,0.5,256,[1,4]", "-emit-bundle=b", cwd=tmp_path)
    assert result.returncode == 2 and "offset in [0, 255]" in result.stderr


@pytest.mark.parametrize("alias, option", [("-m", "-model"), ("-mattr=+avx2", "-target-feature=+avx2")])
def test_glow_aliases_are_their_options(alias, option, tmp_path):
    def compiled(flag):
        arguments = [f"{flag}={LENET_PATH}"] if flag in ("-m", "-model") else [f"-model={LENET_PATH}", flag]
        result = tool("compile", *arguments, f"-emit-bundle={tmp_path / flag.strip('-=+')}", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        return (tmp_path / flag.strip("-=+") / "lenet_mnist.o").read_bytes()

    assert compiled(alias) == compiled(option)


@pytest.fixture(scope="module")
def lenet_profile(tmp_path_factory):
    directory = tmp_path_factory.mktemp("profile")
    images = os.path.join(os.path.dirname(LENET_PATH), "images")
    result = tool("profile", f"-model={LENET_PATH}", "-image-mode=0to1", images, "-dump-profile=lenet.yaml",
                  cwd=directory)
    assert result.returncode == 0, result.stderr
    return str(directory / "lenet.yaml")


IMAGE = os.path.join(os.path.dirname(LENET_PATH), "images", "3900_7.png")


def printed_output(stdout: str, prefix: str = "softmax [1, 10]:") -> np.ndarray:
    line = next(line for line in stdout.splitlines() if line.startswith(prefix))
    return np.array([float(v) for v in line.removeprefix(prefix).strip(" []").split()])


def test_glow_run_takes_the_quantization_options(lenet_profile, tmp_path):
    from glowmlir.datasets import ImageOptions, load_image
    from glowmlir.transforms.quantization_options import QuantizationOptions

    result = tool("run", f"-model={LENET_PATH}", f"-input={IMAGE}", f"-load-profile={lenet_profile}",
                  "-quantization-schema=symmetric", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    bundle = glowmlir.compile(LENET_PATH, quantization=QuantizationOptions(lenet_profile, schema="symmetric"))
    image = load_image(IMAGE, (1, 1, 28, 28), ImageOptions.parse("0to1", "NCHW", "RGB"))
    expected = bundle.run(data=image)["softmax"].reshape(-1)
    np.testing.assert_allclose(printed_output(result.stdout), expected, atol=1e-6)
    assert not np.allclose(expected, glowmlir.compile(LENET_PATH).run(data=image)["softmax"].reshape(-1), atol=1e-4)


def test_glow_run_links_the_kernel_library_on_a_board(lenet_profile, tmp_path):
    standins = os.path.join(os.getcwd(), "tests", "support", "cmsis_nn", "standins.c")
    arguments = [f"-model={LENET_PATH}", f"-input={IMAGE}", f"-load-profile={lenet_profile}", "-use-cmsis",
                 "-board=mps2-an500", "-convert-placeholders"]
    refused = tool("run", *arguments, cwd=tmp_path)
    assert refused.returncode == 2 and "give it with -link=" in refused.stderr
    result = tool("run", *arguments, f"-link={standins}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "instructions per inference on mps2-an500:" in result.stdout
    levels = printed_output(result.stdout)
    assert levels.max() == 127 and int(levels.argmax()) == 7  # int8 levels of the library's softmax
    dequantized = printed_output(result.stdout, "softmax dequantized:")
    assert dequantized.sum() == pytest.approx(1.0, abs=0.02)


def test_glow_run_compiles_for_the_cpu_given_on_a_board(tmp_path):
    results = {}
    for options in ((), ("-mcpu=cortex-m4", "-float-abi=hard")):  # M4 code runs on the M7 board
        result = tool("run", f"-model={LENET_PATH}", f"-input={IMAGE}", "-board=mps2-an500", *options, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        results[options] = result.stdout
    counts = [int(text.rsplit(":", 1)[1]) for text in results.values()]
    assert counts[0] != counts[1]  # different code: the M7's double-precision FPU, its scheduling
    outputs = [printed_output(text) for text in results.values()]
    np.testing.assert_allclose(outputs[0], outputs[1], atol=1e-5)


def test_main_entry_name_names_the_inference_function(tmp_path):
    result = compile_lenet(tmp_path, "-main-entry-name=lenet_infer", "-bundle-api-verbose=true")
    assert result.returncode == 0, result.stderr
    header = (tmp_path / "bundle" / "lenet_mnist.h").read_text()
    assert "int lenet_infer(uint8_t *constantWeight, uint8_t *mutableWeight, uint8_t *activations);" in header
    assert "#define LENET_MNIST_data" in header  # the macros keep the network's name, as in Glow
    symbols = subprocess.run(["nm", str(tmp_path / "bundle" / "lenet_mnist.o")], capture_output=True, text=True,
                             check=True).stdout
    assert " T lenet_infer" in symbols and " T lenet_mnist\n" not in symbols
    bundle = glowmlir.compile(LENET_PATH, main_entry_name="lenet_infer")
    image = np.random.default_rng(0).random((1, 1, 28, 28), np.float32)
    expected = glowmlir.compile(LENET_PATH).run(data=image)["softmax"]
    np.testing.assert_array_equal(bundle.run(data=image)["softmax"], expected)
    assert "expected a C identifier" in compile_lenet(tmp_path, "-main-entry-name=2x").stderr


def test_bundle_api_verbose_describes_the_weights(tmp_path):
    assert compile_lenet(tmp_path, "-bundle-api-verbose").returncode == 0
    verbose = (tmp_path / "bundle" / "lenet_mnist.h").read_text()
    assert compile_lenet(tmp_path, "-bundle-api-verbose=false").returncode == 0
    plain = (tmp_path / "bundle" / "lenet_mnist.h").read_text()
    assert "// Constants:" in verbose and "// Constants:" not in plain
    layout = glowmlir.compile(LENET_PATH).layout
    for name, offset, data in layout.weights:
        assert f"//   Name: \"{name}\"" in verbose and f"//   Offset: {offset} (bytes)" in verbose
        assert f"//   Size: {data.nbytes} (bytes)" in verbose
        # as stored: the host's convolution filters are packed in blocks of output channels
        assert f"//   Type: float<{' x '.join(str(d) for d in data.shape)}>" in verbose


def onnxruntime_values(names: list[str], image: np.ndarray) -> list[np.ndarray]:
    import onnx
    import onnxruntime

    model = onnx.load(LENET_PATH)
    model.graph.output.extend(onnx.ValueInfoProto(name=name) for name in names if name != "softmax")
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(names, {"data": image})


def test_glow_run_instrument_debug_dumps_every_node_output(tmp_path):
    from glowmlir.datasets import ImageOptions, load_image

    result = tool("run", f"-model={LENET_PATH}", f"-input={IMAGE}", "-instrument-debug",
                  "-instrument-debug-format=txt", "-instrument-debug-dir=dumps", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    info = (tmp_path / "dumps" / "instrument-debug.info").read_text().split("\n\n")
    assert info[0] == "Format: txt"
    nodes = [(block.splitlines()[0], block.splitlines()[1]) for block in info[1:]]
    assert nodes == [("Kind: Convolution", "Name: _conv1_Conv"), ("Kind: Convolution", "Name: _conv2_Conv"),
                     ("Kind: Reshape", "Name: _Flatten"), ("Kind: FullyConnected", "Name: _fc1_Gemm"),
                     ("Kind: FullyConnected", "Name: _fc2_Gemm"), ("Kind: SoftMax", "Name: _Softmax")]
    image = load_image(IMAGE, (1, 1, 28, 28), ImageOptions.parse("0to1", "NCHW", "RGB"))
    expected = onnxruntime_values(["/MaxPool_output_0", "/Relu_output_0", "softmax"], image)
    for file, reference in zip(("data0000.txt", "data0003.txt", "data0005.txt"), expected):
        type_line, values = (tmp_path / "dumps" / file).read_text().splitlines()
        assert type_line == f"float<{' x '.join(map(str, reference.shape))}>"
        np.testing.assert_allclose(np.array(values.split(", "), np.float32), reference.reshape(-1), atol=1e-4)
    assert "softmax argmax: 7" in result.stdout and "debug_" not in result.stdout  # the model's own output only


def test_glow_run_instrument_debug_raw_and_only(lenet_profile, tmp_path):
    result = tool("run", f"-model={LENET_PATH}", f"-input={IMAGE}", f"-load-profile={lenet_profile}",
                  "-instrument-debug", "-instrument-debug-format=rawbin", "-instrument-debug-only=_conv2_Conv",
                  cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    files = sorted(path.name for path in (tmp_path / "debug").iterdir())
    assert files == ["data0000.bin", "instrument-debug.info"]
    assert len((tmp_path / "debug" / "data0000.bin").read_bytes()) == 50 * 4 * 4  # int8 levels, nothing else
    assert "i8[S:" in (tmp_path / "debug" / "instrument-debug.info").read_text()
    console = tool("run", f"-model={LENET_PATH}", f"-input={IMAGE}", "-instrument-debug",
                   "-instrument-debug-only=_fc2_Gemm", cwd=tmp_path)
    assert console.stdout.startswith("FullyConnected _fc2_Gemm: float<1 x 10>\n[")
    refused = tool("compile", f"-model={LENET_PATH}", "-emit-bundle=b", "-instrument-debug", cwd=tmp_path)
    assert refused.returncode == 2 and "glow-run -instrument-debug" in refused.stderr
    bad = tool("run", f"-model={LENET_PATH}", f"-input={IMAGE}", "-instrument-debug", "-instrument-debug-format=csv",
               cwd=tmp_path)
    assert bad.returncode == 2 and "-instrument-debug-format=\"csv\"" in bad.stderr


def test_llvm_save_asm_and_dump_llvm_asm(tmp_path):
    result = compile_lenet(tmp_path, "-mcpu=cortex-m7", "-llvm-save-asm", "-dump-llvm-asm=true")
    assert result.returncode == 0, result.stderr
    assembly = (tmp_path / "bundle" / "lenet_mnist.s").read_text()
    assert ".globl\tlenet_mnist" in assembly and "vfma.f32" in assembly  # the M7's fused multiply-add
    assert assembly.strip() in result.stdout
    plain = tmp_path / "plain"
    plain.mkdir()
    assert compile_lenet(plain).returncode == 0
    assert not (plain / "bundle" / "lenet_mnist.s").exists()


FAKE_LLC = '''import json, sys
from llvmlite import binding as llvm
arguments = sys.argv[1:]
with open(sys.argv[0].rsplit("/", 1)[0] + "/calls.log", "a") as log:
    log.write(json.dumps([sys.argv[0].rsplit("/", 1)[1], *arguments]) + "\\n")
output = arguments[arguments.index("-o") + 1]
module = llvm.parse_bitcode(open(next(a for a in arguments if a.endswith(".bc")), "rb").read())
if "-emit-llvm" in arguments or sys.argv[0].endswith("opt"):
    open(output, "wb").write(module.as_bitcode())
else:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    machine = llvm.Target.from_triple(module.triple).create_target_machine(reloc="static")
    open(output, "wb").write(machine.emit_object(module))
'''


def fake_tool(directory, name: str) -> str:
    path = directory / name
    path.write_text(f"#!{sys.executable}\n{FAKE_LLC}")
    path.chmod(0o755)
    return str(path)


def test_llvm_compiler_makes_the_object_from_our_bitcode(tmp_path):
    import json

    llc, opt = fake_tool(tmp_path, "llc"), fake_tool(tmp_path, "opt")
    result = compile_lenet(tmp_path, f"-llvm-compiler={llc}", "-llvm-compiler-opt=-O2 -march=x86-64",
                           "-llvm-compiler-opt=-filetype=obj", f"-llvm-opt={opt}")
    assert result.returncode == 0, result.stderr
    first, second, third = [json.loads(line) for line in open(tmp_path / "calls.log")]
    assert first[:4] == ["llc", "-O2", "-march=x86-64", "-filetype=obj"] and first[4].endswith("lenet_mnist.bc")
    assert first[5:7] == ["-emit-llvm", "-o"] and first[7].endswith("lenet_mnist.beforeopt.bc")
    assert second[0] == "opt" and second[2:4] == ["-O3", "-o"] and second[4].endswith("lenet_mnist.opt.bc")
    assert third[:4] == ["llc", "-O2", "-march=x86-64", "-filetype=obj"] and third[4].endswith("lenet_mnist.opt.bc")
    bundle = tmp_path / "bundle"
    program = tmp_path / "classify"
    subprocess.run(["cc", "-std=c99", "-O2", "-I", str(bundle), os.path.join(os.path.dirname(LENET_PATH), "main.c"),
                    str(bundle / "lenet_mnist.o"), "-lpng", "-lm", "-o", str(program)], check=True)
    images = os.path.join(os.path.dirname(LENET_PATH), "images")
    output = subprocess.run([str(program), *sorted(os.path.join(images, f) for f in os.listdir(images))],
                            capture_output=True, text=True, check=True).stdout
    assert int(output.rsplit("correct", 1)[0].split()[-1].split("/")[0]) >= 19


def test_llvm_compiler_errors(tmp_path):
    missing = compile_lenet(tmp_path, "-llvm-compiler=no-such-llc")
    assert "-llvm-compiler=\"no-such-llc\": no such program" in missing.stderr
    assert "need -llvm-compiler" in compile_lenet(tmp_path, "-llvm-opt=opt").stderr
    failing = compile_lenet(tmp_path, "-llvm-compiler=false")
    assert failing.returncode == 2 and '"false ' in failing.stderr and "exit status 1" in failing.stderr
    assert not (tmp_path / "bundle").exists()


def test_calibrate_constants_calibrates_the_weights_with_kl(tmp_path):
    import re

    from glowmlir.compiler import CompileOptions, import_network
    from glowmlir.transforms.quantization_options import QuantizationOptions
    from tests.unit.test_quantized_kernels import glowll_stage

    images = os.path.join(os.path.dirname(LENET_PATH), "images")
    assert tool("profile", f"-model={LENET_PATH}", "-image-mode=0to1", images, "-num-histogram-bins=2048",
                "-dump-profile=kl.yaml", cwd=tmp_path).returncode == 0

    def weight_scales(**options) -> dict[str, float]:
        """The weights' scales in the glowll IR a build keeps (`glowll_stage`: no code)."""
        compile_options = CompileOptions(quantization=QuantizationOptions(str(tmp_path / "kl.yaml"), **options))
        glowll = glowll_stage(import_network(LENET_PATH, compile_options), compile_options)
        weights = re.findall(r'glowll.weight "(\w+_weight\w*)".*?quant.uniform<i8:f32, ([0-9.e+-]+)', glowll)
        return {name: float(scale) for name, scale in weights}

    plain, calibrated = weight_scales(calibration="KL"), weight_scales(calibration="KL", calibrate_constants=True)
    assert plain == weight_scales(calibrate_constants=True)  # without KL, as in Glow: nothing changes
    assert plain.keys() == calibrated.keys() and len(plain) == 4
    assert all(calibrated[name] <= plain[name] for name in plain) and calibrated != plain  # narrower ranges
    result = tool("compile", f"-model={LENET_PATH}", "-emit-bundle=b", "-load-profile=kl.yaml", "-calibrate-constants",
                  cwd=tmp_path)
    assert result.returncode == 0
    assert "-calibrate-constants: no effect without -quantization-calibration=KL" in result.stderr
