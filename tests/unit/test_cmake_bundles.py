"""glowmlir_add_bundle (glowmlir/cmake/glowmlirConfig.cmake) as the CMake examples use it: the
firmware of examples/cmake/firmware built with its Arm GNU toolchain file and run on QEMU's
mps2-an500, the host program of examples/cmake/host built and run here, both against
onnxruntime; the next `cmake --build` recompiles the bundle when the model or an option has
changed, and does nothing when nothing has; bad arguments stop the configuration with a
message naming them. Makefiles, the generator that does not notice a changed command line by
itself."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnx.helper
import onnx.numpy_helper
import pytest

from tests.support.models import LENET, onnxruntime_outputs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples", "cmake")
CMAKE_DIR = os.path.join(ROOT, "glowmlir", "cmake")
GLOW_COMPILE = shutil.which("glow-compile", path=os.path.dirname(sys.executable)) or shutil.which("glow-compile")
ENVIRONMENT = {**os.environ, "PYTHONPATH": ROOT}  # the glow-compile of this environment runs this checkout
COMPILING = "glowmlir: compiling"
"""The comment `cmake --build` prints when it runs glow-compile."""
PREDICTION = re.compile(r"^(\S+): predicted (\d) \(p=([0-9.]+)\)", re.MULTILINE)


def cmake(*arguments: str, cwd) -> subprocess.CompletedProcess:
    result = subprocess.run(["cmake", *arguments], cwd=cwd, env=ENVIRONMENT, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, f"cmake {' '.join(arguments)}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def configure(project: str, build, *definitions: str) -> None:
    cmake("-G", "Unix Makefiles", "-S", project, "-B", str(build), f"-Dglowmlir_DIR={CMAKE_DIR}",
          f"-DGLOW_COMPILE={GLOW_COMPILE}", *definitions, cwd=build.parent)


def build(directory) -> str:
    return cmake("--build", str(directory), cwd=directory.parent).stdout


def mtimes(*paths) -> list[int]:
    return [os.stat(path).st_mtime_ns for path in paths]


def expected_predictions(model: onnx.ModelProto, images: dict[str, np.ndarray]) -> dict[str, tuple[int, float]]:
    """onnxruntime's class and probability for each image (pixels 0..255, scaled to [0,1])."""
    expected = {}
    for name, pixels in images.items():
        data = (pixels.astype(np.float32) / np.float32(255)).reshape(1, 1, 28, 28)
        softmax = onnxruntime_outputs(model, {"data": data})["softmax"].reshape(-1)
        expected[name] = (int(softmax.argmax()), float(softmax.max()))
    return expected


def assert_predictions(printed: str, expected: dict[str, tuple[int, float]], tolerance: float = 2e-6) -> None:
    """The program's lines `<name>: predicted <digit> (p=<probability>)` against onnxruntime
    (`tolerance`: the printed digits)."""
    found = {os.path.basename(name): (int(digit), float(p)) for name, digit, p in PREDICTION.findall(printed)}
    assert set(found) == set(expected), printed
    for name, (digit, probability) in expected.items():
        assert found[name][0] == digit, f"{name}: {found[name]} != {digit}"
        assert found[name][1] == pytest.approx(probability, abs=tolerance), name


def favouring_three(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with the last layer's bias of class 3 raised by 40: every digit becomes a 3."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    last_gemm = [node for node in model.graph.node if node.op_type == "Gemm"][-1]
    bias = next(tensor for tensor in model.graph.initializer if tensor.name == last_gemm.input[2])
    values = onnx.numpy_helper.to_array(bias).copy()
    values[3] += 40
    bias.CopyFrom(onnx.numpy_helper.from_array(values, bias.name))
    return model


def firmware_digits() -> dict[str, np.ndarray]:
    directory = os.path.join(EXAMPLES, "firmware", "digits")
    digits = {}
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), "rb") as f:
            data = f.read()
        assert data.startswith(b"P5\n28 28\n255\n")
        digits[name] = np.frombuffer(data[13:], np.uint8)
    return digits


def run_on_qemu(program) -> str:
    result = subprocess.run(["qemu-system-arm", "-M", "mps2-an500", "-nographic", "-semihosting-config",
                             "enable=on,target=native", "-kernel", str(program)], capture_output=True, text=True,
                            timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_firmware_example_runs_on_qemu_and_rebuilds_its_bundle_exactly_when_needed(tmp_path):
    model_path = tmp_path / "model" / "lenet.onnx"
    model_path.parent.mkdir()
    shutil.copy(LENET, model_path)
    project, build_dir = os.path.join(EXAMPLES, "firmware"), tmp_path / "build"
    definitions = (f"-DCMAKE_TOOLCHAIN_FILE={os.path.join(project, 'arm-none-eabi.cmake')}",
                   f"-DLENET_MODEL={model_path}")
    configure(project, build_dir, *definitions)
    bundle, program = build_dir / "lenet_bundle" / "lenet_mnist.o", build_dir / "lenet_firmware.elf"
    digits = firmware_digits()
    expected = expected_predictions(onnx.load(LENET), digits)

    assert COMPILING in build(build_dir)
    assert_predictions(run_on_qemu(program), expected)
    assert sorted(digit for digit, _ in expected.values()) == list(range(10))  # the right digits, not just ORT's

    # Nothing changed: nothing runs, nothing is rewritten, also after configuring again.
    before = mtimes(bundle, program)
    output = build(build_dir)
    assert COMPILING not in output and "Linking" not in output and "Re-running CMake" not in output, output
    configure(project, build_dir, *definitions)
    output = build(build_dir)
    assert COMPILING not in output and "Linking" not in output and mtimes(bundle, program) == before, output

    # An option changed: the bundle is recompiled with it, and the firmware relinked.
    float_code = bundle.read_bytes()
    configure(project, build_dir, *definitions, "-DLENET_GLOW_OPTIONS=-opt-level=Os")
    output = build(build_dir)
    assert COMPILING in output and "Linking C executable lenet_firmware.elf" in output, output
    assert bundle.read_bytes() != float_code
    assert "-opt-level=Os" in (build_dir / "CMakeFiles" / "glowmlir" / "lenet_bundle.command").read_text()
    assert_predictions(run_on_qemu(program), expected)

    # The model changed (no configuring): recompiled, and the firmware runs the new weights.
    changed = favouring_three(onnx.load(LENET))
    onnx.save(changed, model_path)
    output = build(build_dir)
    assert COMPILING in output, output
    changed_expected = expected_predictions(changed, digits)
    assert {digit for digit, _ in changed_expected.values()} == {3}
    assert_predictions(run_on_qemu(program), changed_expected)
    assert COMPILING not in build(build_dir)


def test_host_example_builds_the_glow_style_main_and_classifies_the_digits(tmp_path):
    from PIL import Image

    images_dir = os.path.join(ROOT, "examples", "lenet_mnist", "images")
    images = {name: np.asarray(Image.open(os.path.join(images_dir, name))) for name in sorted(os.listdir(images_dir))}
    build_dir = tmp_path / "build"
    configure(os.path.join(EXAMPLES, "host"), build_dir)
    assert COMPILING in build(build_dir)
    result = subprocess.run([str(build_dir / "lenet_mnist"), *(os.path.join(images_dir, name) for name in images)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert_predictions(result.stdout, expected_predictions(onnx.load(LENET), images), tolerance=6e-5)  # %.4f
    assert result.stdout.strip().endswith("19/20 correct")
    output = build(build_dir)
    assert COMPILING not in output and "Building C object" not in output, output


def configure_lines(directory, *lines: str) -> subprocess.CompletedProcess:
    """Configures a project of no language made of `lines`, with the checkout's CMake package."""
    (directory / "CMakeLists.txt").write_text("\n".join(["cmake_minimum_required(VERSION 3.20)", "project(lines NONE)",
                                                         *lines, ""]))
    return subprocess.run(["cmake", "-S", str(directory), "-B", str(directory / "build"), f"-Dglowmlir_DIR={CMAKE_DIR}",
                           f"-DGLOW_COMPILE={GLOW_COMPILE}"], capture_output=True, text=True, env=ENVIRONMENT)


BAD_CALLS = [
    ("MODEL missing.onnx", 'glowmlir_add_bundle(bundle): MODEL "{tmp}/missing.onnx" not found'),
    ("MODEL {lenet} WEIGHTS BIG", 'glowmlir_add_bundle(bundle): WEIGHTS "BIG": expected INCLUDE, LINK or FILE'),
    ("MODEL {lenet} OPTIONS -mcpu=cortex-m7 -model=other.onnx",
     'glowmlir_add_bundle(bundle): OPTIONS: "-model=other.onnx" is an argument of glowmlir_add_bundle'),
    ("MODEL {lenet} NETWORK_NAME 9lives", 'glowmlir_add_bundle(bundle): NETWORK_NAME "9lives": expected a C name'),
    ("SIZE 3 MODEL {lenet}", 'glowmlir_add_bundle(bundle): unknown argument "SIZE"'),
    ("MODEL {lenet} WEIGHTS_SECTION .w", "glowmlir_add_bundle(bundle): WEIGHTS_SECTION needs WEIGHTS LINK"),
    ("MODEL {lenet} NETWORK_NAME", "glowmlir_add_bundle(bundle): NETWORK_NAME needs a value"),
    ("NETWORK_NAME net", "glowmlir_add_bundle(bundle): MODEL <model file> is missing"),
    ("MODEL {lenet} {lenet} {lenet}", "glowmlir_add_bundle(bundle): MODEL takes one model (or a Caffe2 net and"),
]


@pytest.mark.parametrize("arguments, message", BAD_CALLS, ids=[call[1].split(": ", 1)[1] for call in BAD_CALLS])
def test_bad_arguments_stop_the_configuration_naming_them(tmp_path, arguments, message):
    result = configure_lines(tmp_path, "find_package(glowmlir REQUIRED CONFIG)",
                             f"glowmlir_add_bundle(bundle {arguments.format(lenet=os.path.abspath(LENET))})")
    assert result.returncode != 0
    assert message.format(tmp=tmp_path) in " ".join(result.stderr.split()), result.stderr


def version_cases() -> list[tuple[str, bool]]:
    import glowmlir

    major, minor = map(int, glowmlir.__version__.split(".")[:2])
    return [(f"{major}.{minor}", True), (glowmlir.__version__, True), (f"{major}", True),
            (f"{major}.{minor + 1}", False), (f"{major + 1}.0", False)]


@pytest.mark.parametrize("wanted, found", version_cases())
def test_package_version_check(tmp_path, wanted, found):
    """find_package's version check reads the version from glowmlir/__init__.py: this version
    or an older one of the same 0.x minor version is found, a newer one is not."""
    result = configure_lines(tmp_path, f"find_package(glowmlir {wanted} CONFIG)",
                             'message(STATUS "found=${glowmlir_FOUND}")')
    assert result.returncode == 0, result.stderr
    assert f"found={1 if found else 0}" in result.stdout, result.stdout + result.stderr


RUN_BUNDLE_C = """\
/* Runs bundle `net` once: the input `data` from stdin, the output `logits` to stdout (raw bytes). */
#include <stdio.h>
#include "net.h"
#include "net_weights.h"
GLOW_MEM_ALIGN(NET_MEM_ALIGN) static uint8_t mutableWeight[NET_MUTABLE_MEM_SIZE];
GLOW_MEM_ALIGN(NET_MEM_ALIGN) static uint8_t activations[NET_ACTIVATIONS_MEM_SIZE];
int main(void) {
    if (fread(GLOW_GET_ADDR(mutableWeight, NET_data), 1, 3 * 8 * 8 * 4, stdin) != 3 * 8 * 8 * 4) return 2;
    if (net((uint8_t *)net_weights, mutableWeight, activations) != GLOW_SUCCESS) return 1;
    fwrite(GLOW_GET_ADDR(mutableWeight, NET_logits), 1, 10 * 4, stdout);
    return 0;
}
"""


def test_quantized_bundle_with_linked_weights_follows_its_profile(tmp_path):
    """PROFILE and WEIGHTS LINK on the host (x86 ELF): the program runs the int8 bundle exactly
    as glowmlir.compile makes it, weights from the linked `net_weights`; a new profile
    recompiles the bundle at the next build."""
    import glowmlir
    from glowmlir.transforms.quantization_options import QuantizationOptions

    rng = np.random.default_rng(0)
    weights = [onnx.numpy_helper.from_array(rng.normal(0, 0.3, shape).astype(np.float32), name)
               for name, shape in (("w", (4, 3, 3, 3)), ("b", (4,)), ("fc_w", (10, 256)), ("fc_b", (10,)))]
    onnx.save(onnx.helper.make_model(onnx.helper.make_graph(
        [onnx.helper.make_node("Conv", ["data", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
         onnx.helper.make_node("Relu", ["c"], ["r"]), onnx.helper.make_node("Flatten", ["r"], ["f"]),
         onnx.helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], transB=1)], "net",
        [onnx.helper.make_tensor_value_info("data", onnx.TensorProto.FLOAT, [1, 3, 8, 8])],
        [onnx.helper.make_tensor_value_info("logits", onnx.TensorProto.FLOAT, [1, 10])], weights),
        opset_imports=[onnx.helper.make_opsetid("", 13)]), tmp_path / "net.onnx")
    profile = tmp_path / "net.yaml"

    def make_profile(scale: float) -> None:
        np.savez(tmp_path / "calibration.npz", data=scale * rng.random((4, 1, 3, 8, 8), np.float32))
        result = subprocess.run([sys.executable, "-m", "glowmlir.cli.profile", f"-model={tmp_path / 'net.onnx'}",
                                 str(tmp_path / "calibration.npz"), f"-dump-profile={profile}"],
                                capture_output=True, text=True, env=ENVIRONMENT)
        assert result.returncode == 0, result.stderr

    (tmp_path / "main.c").write_text(RUN_BUNDLE_C)
    (tmp_path / "CMakeLists.txt").write_text("\n".join([
        "cmake_minimum_required(VERSION 3.20)", "project(net C)", "find_package(glowmlir REQUIRED CONFIG)",
        "glowmlir_add_bundle(net_bundle MODEL net.onnx PROFILE net.yaml WEIGHTS LINK)",
        "add_executable(run_net main.c)", "target_link_libraries(run_net PRIVATE net_bundle)", ""]))
    data = rng.random((1, 3, 8, 8), np.float32)
    build_dir = tmp_path / "build"

    def run_net() -> np.ndarray:
        result = subprocess.run([str(build_dir / "run_net")], input=data.tobytes(), capture_output=True, timeout=60)
        assert result.returncode == 0, result.stderr
        return np.frombuffer(result.stdout, np.float32).reshape(1, 10)

    def expected() -> np.ndarray:
        bundle = glowmlir.compile(str(tmp_path / "net.onnx"), quantization=QuantizationOptions(str(profile)))
        assert bundle.layout.constant_size < 4000  # int8 weights (float: 10,816 bytes): quantized
        return bundle.run(data=data)["logits"]

    make_profile(1.0)
    configure(str(tmp_path), build_dir)
    assert COMPILING in build(build_dir)
    first = run_net()
    np.testing.assert_array_equal(first, expected())
    assert COMPILING not in build(build_dir)

    make_profile(8.0)  # wider ranges: other scales, other outputs
    assert COMPILING in build(build_dir)
    second = run_net()
    np.testing.assert_array_equal(second, expected())
    assert not np.array_equal(first, second)


@pytest.mark.parametrize("command", [["glowmlir.cli.compile", "-print-cmake-dir"], ["glowmlir.cli.compile",
                                     "--print-cmake-dir"], ["glowmlir", "--cmake-dir"]])
def test_the_tools_name_the_cmake_package(command):
    result = subprocess.run([sys.executable, "-m", *command], capture_output=True, text=True, env=ENVIRONMENT)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert result.stdout == CMAKE_DIR + "\n"
    assert os.path.isfile(os.path.join(CMAKE_DIR, "glowmlirConfig.cmake"))
