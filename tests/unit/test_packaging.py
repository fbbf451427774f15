"""glowmlir as a user gets it: the sdist built from the source files as a release is, the wheel
built from that sdist (as pip builds one from PyPI's), and the wheel installed in a fresh
virtual environment whose tools run outside the checkout: glow-compile, glow-run on a QEMU
board (the board harness is package data), glow-profile, and the CMake package that
`glow-compile -print-cmake-dir` names.

The fresh environment takes glowmlir from the wheel alone; its dependencies are those of the
environment running the tests (a path file), so the test needs no network and installs in
seconds. Nothing of the checkout is on its path: PYTHONPATH is dropped and the tools run
in a temporary directory."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from types import SimpleNamespace

import numpy as np
import onnx
import pytest

from glowmlir.quantization.profile import read_profile
from tests.support.models import LENET, onnxruntime_outputs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMAGES = os.path.join(ROOT, "examples", "lenet_mnist", "images")
RELEASE_SOURCES = ("pyproject.toml", "README.md", "glowmlir")
"""What the sdist is built from: the project's metadata, its readme and the package."""


def source_version() -> str:
    """`__version__` as glowmlir/__init__.py writes it (the one place)."""
    with open(os.path.join(ROOT, "glowmlir", "__init__.py")) as f:
        tree = ast.parse(f.read())
    return next(node.value.value for node in tree.body if isinstance(node, ast.Assign)
                and [target.id for target in node.targets] == ["__version__"])


def package_files() -> set[str]:
    """Every file of the package in the checkout, Python or not (caches aside)."""
    files = set()
    for directory, subdirectories, names in os.walk(os.path.join(ROOT, "glowmlir")):
        subdirectories[:] = [name for name in subdirectories if name != "__pycache__"]
        files.update(os.path.relpath(os.path.join(directory, name), ROOT).replace(os.sep, "/") for name in names)
    return files


def clean_environment(path: str) -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH (helpers and CI may set one), `path`
    as PATH."""
    return {**{key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")},
            "PATH": path}


def run(command: list[str], cwd, env=None, timeout: float = 300) -> subprocess.CompletedProcess:
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{' '.join(command)}:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
    return result


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """The sdist, built from a copy of the release sources (setuptools writes its egg-info
    beside them), and the wheel built from the unpacked sdist, without build isolation (the
    pinned setuptools of the test environment; no download)."""
    work = tmp_path_factory.mktemp("release")
    source = work / "source"
    source.mkdir()
    for name in RELEASE_SOURCES:
        if os.path.isdir(os.path.join(ROOT, name)):
            shutil.copytree(os.path.join(ROOT, name), source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(os.path.join(ROOT, name), source / name)
    environment = clean_environment(os.environ["PATH"])
    built = run([sys.executable, "-c", "import sys; from setuptools import build_meta; "
                 "print(build_meta.build_sdist(sys.argv[1]))", str(work / "sdist")], source, environment)
    sdist = work / "sdist" / built.stdout.strip().splitlines()[-1]
    with tarfile.open(sdist) as archive:
        archive.extractall(work / "unpacked", filter="data")
    (unpacked,) = (work / "unpacked").iterdir()
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "-w", str(work / "wheel"), str(unpacked)], work, environment)
    (wheel,) = (work / "wheel").iterdir()
    return SimpleNamespace(sdist=sdist, wheel=wheel)


def test_sdist_and_wheel_hold_every_package_file_and_the_one_version(release):
    version = source_version()
    with tarfile.open(release.sdist) as archive:
        top = f"glowmlir-{version}/"
        sdist_files = {name.removeprefix(top) for name in archive.getnames() if archive.getmember(name).isfile()}
        metadata = archive.extractfile(top + "PKG-INFO").read().decode()
    with zipfile.ZipFile(release.wheel) as archive:
        wheel_files = set(archive.namelist())
        wheel_metadata = archive.read(f"glowmlir-{version}.dist-info/METADATA").decode()
    expected = package_files()
    assert "glowmlir/runtime/embedded/mps2.ld.in" in expected and "glowmlir/cmake/glowmlirConfig.cmake" in expected
    assert {name for name in sdist_files if name.startswith("glowmlir/")} == expected
    assert {name for name in wheel_files if name.startswith("glowmlir/")} == expected
    assert release.wheel.name == f"glowmlir-{version}-py3-none-any.whl"
    for text in (metadata, wheel_metadata):
        assert re.search(rf"^Version: {re.escape(version)}$", text, re.MULTILINE), text[:500]


@pytest.fixture(scope="module")
def installed(release, tmp_path_factory):
    """A fresh virtual environment holding the wheel; its dependencies through a path file
    naming the test environment's site-packages (whose editable glowmlir is not loaded: a
    path file's directories are not site directories, their own path files are not read)."""
    venv = tmp_path_factory.mktemp("installed") / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], venv.parent)
    python = venv / "bin" / "python"
    run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", "--no-compile",
         "--disable-pip-version-check", str(release.wheel)], venv.parent, clean_environment(os.environ["PATH"]))
    site = run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], venv.parent,
               clean_environment(os.environ["PATH"])).stdout.strip()
    dependencies = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    with open(os.path.join(site, "test-dependencies.pth"), "w") as f:
        f.write("".join(f"{directory}\n" for directory in dependencies))
    return SimpleNamespace(bin=venv / "bin", site=site,
                           env=clean_environment(f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"))


CHECK_REQUIREMENTS = """
import importlib.metadata as metadata
for requirement in metadata.requires("glowmlir"):
    if ";" in requirement:  # an extra's (test, train)
        continue
    name, pinned = requirement.replace(" ", "").split("==")
    assert metadata.version(name) == pinned, (requirement, metadata.version(name))
    print(name)
"""
"""Run by the installed Python: every requirement of the wheel (pinned `==`) is met."""


def test_installed_tools_run_a_model_on_a_board_outside_the_checkout(installed, tmp_path):
    version = source_version()
    where = run(["python", "-c", "import glowmlir; print(glowmlir.__file__)"], tmp_path, installed.env).stdout
    assert where.strip() == os.path.join(installed.site, "glowmlir", "__init__.py")
    assert f"glowmlir {version}," in run(["glow-compile", "-version"], tmp_path, installed.env).stdout
    # The wheel declares the dependencies the tools run with below, at the versions they have.
    checked = run(["python", "-c", CHECK_REQUIREMENTS], tmp_path, installed.env).stdout.split()
    assert "xdsl" in checked and "llvmlite" in checked and "onnx" in checked, checked

    run(["glow-compile", f"-model={os.path.abspath(LENET)}", "-emit-bundle=bundle", "-mcpu=cortex-m7"],
        tmp_path, installed.env)
    assert sorted(os.listdir(tmp_path / "bundle")) == ["lenet_mnist.h", "lenet_mnist.o", "lenet_mnist.weights.bin",
                                                       "lenet_mnist.weights.txt"]

    # glow-run links the harness (main.c, startup.c, the linker script) and builds the QEMU plugin.
    digit = os.path.join(IMAGES, "2401_4.png")
    result = run(["glow-run", f"-model={os.path.abspath(LENET)}", "-board=mps2-an500", f"-input={digit}"],
                 tmp_path, installed.env)
    printed = re.search(r"^softmax \[1, 10\]: \[([^\]]*)\]", result.stdout, re.MULTILINE)
    from PIL import Image

    pixels = np.asarray(Image.open(digit), np.float32).reshape(1, 1, 28, 28) / np.float32(255)
    expected = onnxruntime_outputs(onnx.load(LENET), {"data": pixels})["softmax"].reshape(-1)
    np.testing.assert_allclose(np.array(printed.group(1).split(), np.float32), expected, atol=2e-6, rtol=0)
    assert re.search(r"^instructions per inference on mps2-an500: \d+$", result.stdout, re.MULTILINE)

    run(["glow-profile", f"-model={os.path.abspath(LENET)}", "-image-mode=0to1", IMAGES, "-dump-profile=lenet.yaml"],
        tmp_path, installed.env)
    profile = read_profile(str(tmp_path / "lenet.yaml"))
    assert profile.tools_version == f"glowmlir {version}"
    assert {"data:0", "_conv1_Conv:0", "_fc2_Gemm:0", "_Softmax:0"} <= set(profile.entries)
    assert profile.entries["data:0"].histogram.sum() == 20 * 28 * 28


def test_installed_cmake_package_is_found_with_its_glow_compile(installed, tmp_path):
    """`-print-cmake-dir` names the installed package's CMake directory, and configuring a
    project with it finds the glow-compile of the same installation with none on the PATH."""
    cmake_dir = run(["glow-compile", "-print-cmake-dir"], tmp_path, installed.env).stdout.strip()
    assert cmake_dir == os.path.join(installed.site, "glowmlir", "cmake")
    assert run(["python", "-m", "glowmlir", "--cmake-dir"], tmp_path, installed.env).stdout.strip() == cmake_dir
    path = os.pathsep.join(directory for directory in os.environ["PATH"].split(os.pathsep)
                           if not os.path.exists(os.path.join(directory, "glow-compile")))
    project = os.path.join(ROOT, "examples", "cmake", "host")
    run(["cmake", "-S", project, "-B", str(tmp_path / "build"), f"-Dglowmlir_DIR={cmake_dir}"], tmp_path,
        clean_environment(path))
    with open(tmp_path / "build" / "CMakeCache.txt") as f:
        cache = f.read()
    assert f"GLOW_COMPILE:FILEPATH={installed.bin / 'glow-compile'}\n" in cache
    command = (tmp_path / "build" / "CMakeFiles" / "glowmlir" / "lenet_bundle.command").read_text().splitlines()
    assert command[:2] == [f"glowmlir {source_version()}", str(installed.bin / "glow-compile")]
