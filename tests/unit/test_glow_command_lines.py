"""Command lines copied verbatim from Glow's docs, Glow's example CMake files and NXP's eIQ guide
work as written: only the tool names change (model-compiler → glow-compile, image-classifier and
model-profiler → glow-profile) and paths are adapted to a directory holding the shipped LeNet
in both its forms (`lenet_mnist.onnx` and Glow's Caffe2 directory `lenet_mnist/`) and the
example digit images. Each line runs in bash, as a user pastes it; what it wrote is checked by
building Glow's kind of C main against the bundle and classifying the 20 example digits."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

import numpy as np
import pytest

from glowmlir.quantization.profile import read_profile
from tests.support.caffe2_nets import write_lenet_mnist
from tests.support.models import LENET

REPOSITORY = os.getcwd()
EXAMPLE = os.path.dirname(os.path.abspath(LENET))
TOOLS = {"model-compiler": "glow-compile", "image-classifier": "glow-profile", "model-profiler": "glow-profile"}


@dataclass(frozen=True)
class CommandLine:
    source: str  # where the line is printed
    glow: str  # the line as printed there (placeholders like <model-path> filled in)
    bundle: str | None = None  # the directory the line writes a bundle into
    profile: str | None = None  # the profile file the line writes
    correct: int = 19  # of the 20 example digits, at least (int8 bundles may lose one)
    arm: bool = False  # the bundle is Cortex-M code: checked, not run here
    dynamic: bool = False  # the dynamic bundle API: checked, not run by the static-API main.c
    classifies: int = 0  # the line prints image-classifier's labels for this many images
    after: str | None = None  # the (Glow) line that must run first
    batch: int = 1  # the bundle's batch: main.c classifies batch-1 bundles

    def ours(self) -> str:
        return re.sub(r"^(\S+)", lambda m: TOOLS[m.group(1)], self.glow)


PROFILE_LENET = CommandLine("docs/AOT.md", "image-classifier images/*.png -image-mode=0to1 -model=lenet_mnist "
                            "-model-input-name=data -dump-profile=profile.yml", profile="profile.yml")

COMMAND_LINES = [
    CommandLine("docs/AOT.md", "model-compiler -backend=CPU -model=lenet_mnist.onnx -emit-bundle=build",
                bundle="build"),
    CommandLine("docs/AOT.md", "model-compiler -backend=CPU -model=lenet_mnist -emit-bundle=build "
                "-model-input=data,float,[1,1,28,28]", bundle="build"),
    PROFILE_LENET,
    CommandLine("docs/AOT.md", "model-compiler -backend=CPU -model=lenet_mnist -emit-bundle=build "
                "-model-input=data,float,[1,1,28,28] -load-profile=profile.yml", bundle="build", correct=18),
    CommandLine("docs/AOT.md", "model-compiler -backend=CPU -model=lenet_mnist -emit-bundle=build "
                "-model-input=data,float,[1,1,28,28] -load-profile=profile.yml "
                "-keep-original-precision-for-nodes=Add,Sub,Mul,Div,Exp,SoftMax", bundle="build", correct=18),
    CommandLine("docs/Quantization.md", "image-classifier images/*.png -image-mode=0to1 -m=lenet_mnist "
                "-model-input-name=data -dump-profile=\"profile.yaml\"", profile="profile.yaml"),
    CommandLine("examples/bundles/lenet_mnist/CMakeLists.txt", "image-classifier images/*.png -i=0to1 "
                "-dump-profile=lenet_mnist/profile.yml -m=lenet_mnist -model-input-name=data",
                profile="lenet_mnist/profile.yml"),
    CommandLine("docs/Quantization.md", "image-classifier images/*.png -image-mode=0to1 -m=lenet_mnist "
                "-model-input-name=data -dump-profile=\"lenet.yaml\" -do-not-lower-nodes-for-profiling=Convolution",
                profile="lenet.yaml"),
    CommandLine("docs/Quantization.md", "image-classifier images/*.png -image-mode=0to1 -m=lenet_mnist "
                "-model-input-name=data -load-profile=\"profile.yml\"", classifies=20),
    CommandLine("docs/AOT.md", "model-compiler -backend=CPU -model=lenet_mnist -emit-bundle=build "
                "-model-input=data,float,[4,1,28,28] -load-profile=profile4.yml", bundle="build", batch=4,
                after="image-classifier -minibatch=4 images/*.png -image-mode=0to1 -model=lenet_mnist "
                      "-model-input-name=data -dump-profile=profile4.yml"),
    CommandLine("examples/bundles/lenet_mnist/CMakeLists.txt", "model-compiler -g -model=lenet_mnist "
                "-model-input=data,float,[1,1,28,28] -backend=CPU -emit-bundle=build -bundle-api=static",
                bundle="build"),
    CommandLine("examples/bundles/lenet_mnist/CMakeLists.txt", "model-compiler -g -load-profile=profile.yml "
                "-model=lenet_mnist -model-input=data,float,[1,1,28,28] -backend=CPU -emit-bundle=build "
                "-bundle-api=static", bundle="build", correct=18),
    CommandLine("examples/bundles/resnet50/CMakeLists.txt (LeNet's paths)",
                "model-compiler -g -load-profile=profile.yml -assert-all-nodes-quantized "
                "-keep-original-precision-for-nodes=SoftMax -model=lenet_mnist -model-input=data,float,[1,1,28,28] "
                "-backend=CPU -emit-bundle=build -bundle-api=dynamic",
                bundle="build", dynamic=True),
    CommandLine("NXP eIQ Glow guide", "image-classifier images/*.png -image-mode=0to1 -image-layout=NCHW "
                "-image-channel-order=BGR -model=lenet_mnist -model-input-name=data -dump-profile=profile.yml "
                "-quantization-schema=symmetric_with_power2_scale -quantization-precision-bias=Int8",
                profile="profile.yml"),
    CommandLine("NXP eIQ Glow guide", "model-compiler -model=lenet_mnist -model-input=data,float,[1,1,28,28] "
                "-emit-bundle=bundle -backend=CPU -target=arm -mcpu=cortex-m7 -float-abi=hard "
                "-load-profile=profile.yml -quantization-schema=symmetric_with_power2_scale "
                "-quantization-precision-bias=Int8", bundle="bundle", arm=True),
]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """LeNet as ONNX and as Glow's Caffe2 directory, the example images, and a profile."""
    directory = tmp_path_factory.mktemp("glow-lines")
    shutil.copy(LENET, directory / "lenet_mnist.onnx")
    write_lenet_mnist(directory / "lenet_mnist", LENET)
    shutil.copytree(os.path.join(EXAMPLE, "images"), directory / "images")
    run(PROFILE_LENET.ours(), directory)
    return directory


def run(line: str, directory) -> subprocess.CompletedProcess:
    tools = os.path.dirname(sys.executable)
    environment = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": REPOSITORY}
    result = subprocess.run(["bash", "-c", line], capture_output=True, text=True, cwd=directory, env=environment)
    assert result.returncode == 0, f"{line}\n{result.stderr}"
    assert "Traceback" not in result.stderr
    return result


def classified(bundle_directory, work) -> int:
    """Builds the example's Glow-style C main against the bundle and counts digits it gets right."""
    program = work / "classify"
    subprocess.run(["cc", "-std=c99", "-O2", "-I", str(bundle_directory), os.path.join(EXAMPLE, "main.c"),
                    str(bundle_directory / "lenet_mnist.o"), "-lpng", "-lm", "-o", str(program)], check=True)
    images = sorted(str(path) for path in (work / "images").iterdir())
    output = subprocess.run([str(program), *images], capture_output=True, text=True, check=True).stdout
    return int(re.search(r"(\d+)/20 correct", output).group(1))


def assert_labels_are_onnxruntimes(labels: list[tuple[str, str, str]], work) -> None:
    """Each image's printed label is onnxruntime's argmax of the float model on the image
    (PNG grey levels / 255, -image-mode=0to1), its probability that of onnxruntime's within
    0.05 (the int8 model's softmax, in 1/256 steps)."""
    import onnxruntime as ort
    from PIL import Image

    session = ort.InferenceSession(LENET, providers=["CPUExecutionProvider"])
    for path, label, probability in labels:
        image = np.asarray(Image.open(work / path).convert("L"), np.float32)[None, None] / np.float32(255)
        expected = session.run(None, {"data": image})[0][0]
        assert int(label) == int(np.argmax(expected)), (path, label, expected)
        assert abs(float(probability) - float(expected.max())) <= 0.05, (path, probability, expected.max())


@pytest.mark.parametrize("line", COMMAND_LINES, ids=lambda line: f"{line.source}: {line.glow}")
def test_glow_command_line_works_as_written(line, workspace, tmp_path):
    work = tmp_path / "work"
    shutil.copytree(workspace, work)
    for stale in (line.bundle, line.profile):
        if stale and stale != "profile.yml":
            shutil.rmtree(work / stale, ignore_errors=True)
    if line.after is not None:
        run(CommandLine(line.source, line.after).ours(), work)
    result = run(line.ours(), work)
    if line.classifies:
        labels = re.findall(r"^ File: (\S+)\tLabel-K1: (\d) \(probability: ([\d.]+)\)", result.stdout, re.MULTILINE)
        assert len(labels) == line.classifies, result.stdout
        assert_labels_are_onnxruntimes(labels, work)
    if line.profile:
        profile = read_profile(str(work / line.profile))
        assert len(profile.entries) >= 8  # every value of LeNet's graph, 20 images each
        assert all(entry.max > entry.min for entry in profile.entries.values())
    if line.bundle:
        bundle = work / line.bundle
        for suffix in (".o", ".h", ".weights.bin", *((".weights.txt",) if not line.dynamic else ())):
            assert (bundle / f"lenet_mnist{suffix}").is_file(), suffix
        header = (bundle / "lenet_mnist.h").read_text()
        machine = int.from_bytes((bundle / "lenet_mnist.o").read_bytes()[18:20], "little")
        if " -g " in f" {line.glow} ":
            assert (bundle / "lenet_mnist.glowll.mlir").is_file()
        if line.dynamic:
            assert "extern struct BundleConfig lenet_mnist_config;" in header
            assert "lenet_mnist_config" in subprocess.run(["nm", str(bundle / "lenet_mnist.o")], capture_output=True,
                                                          text=True, check=True).stdout
            return
        assert "#define LENET_MNIST_data" in header and "#define LENET_MNIST_softmax" in header
        if line.arm:
            assert machine == 40  # EM_ARM
        elif line.batch != 1:
            assert f"float<{line.batch} x 1 x 28 x 28>" in header
        else:
            assert classified(bundle, work) >= line.correct
