"""`glow-compile -g`: DWARF lines of the glowll IR and the entry point's parameters, as Glow's -g."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import glowmlir
from glowmlir.lowering.debug_info import INSTRUCTION_LINE
from tests.support.models import LENET

LENET_PATH = os.path.abspath(LENET)


def compile_cli(tmp_path, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "glowmlir.cli.compile", f"-model={LENET_PATH}", "-emit-bundle=b",
                           *options], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": os.getcwd()})


def dwarf(path, what: str, tool: str = "readelf") -> str:
    command = [tool, f"--debug-dump={what}", str(path)] if tool == "readelf" else [tool, f"--dwarf={what}", str(path)]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("options, tool", [((), "readelf"), (("-mcpu=cortex-m7",), "arm-none-eabi-objdump")])
def test_g_maps_the_code_to_every_glowll_instruction(options, tool, tmp_path):
    result = compile_cli(tmp_path, "-g", *options)
    assert result.returncode == 0, result.stderr
    source = (tmp_path / "b" / "lenet_mnist.glowll.mlir").read_text()
    instruction_lines = {n for n, line in enumerate(source.splitlines(), 1) if INSTRUCTION_LINE.match(line)}
    assert len(instruction_lines) == 5 and all("glowll." in source.splitlines()[n - 1] for n in instruction_lines)
    obj = tmp_path / "b" / "lenet_mnist.o"
    table = dwarf(obj, "decodedline", tool)
    rows = re.findall(r"lenet_mnist\.glowll\.mlir\s+(\d+)\s+0x[0-9a-f]+", table)
    assert rows and {int(line) for line in rows} - {0} == instruction_lines
    info = dwarf(obj, "info", tool)
    names = re.findall(r"DW_AT_name\s*:.*?:?\s*(\S+)\s*$", info, re.MULTILINE)
    for name in ("lenet_mnist.glowll.mlir", "lenet_mnist", "constantWeight", "mutableWeight", "activations",
                 "uint8_t"):
        assert name in names, name
    assert info.count("DW_TAG_subprogram") >= 6 and info.count("DW_TAG_formal_parameter") >= 3
    assert os.path.abspath(tmp_path / "b") in info  # the directory a debugger finds the source in


def test_without_g_the_object_has_no_debug_information(tmp_path):
    assert compile_cli(tmp_path).returncode == 0
    sections = subprocess.run(["readelf", "-S", str(tmp_path / "b" / "lenet_mnist.o")], capture_output=True,
                              text=True, check=True).stdout
    assert ".debug_info" not in sections and ".debug_line" not in sections
    assert not (tmp_path / "b" / "lenet_mnist.glowll.mlir").exists()


def test_g_changes_no_number():
    image = np.random.default_rng(0).random((1, 1, 28, 28), np.float32)
    with_debug = glowmlir.compile(LENET_PATH, debug_info=True)
    assert with_debug.debug_info and "lenet_mnist.glowll.mlir" in with_debug.files()
    np.testing.assert_array_equal(with_debug.run(data=image)["softmax"],
                                  glowmlir.compile(LENET_PATH).run(data=image)["softmax"])


def test_gdb_finds_each_instruction_line(tmp_path):
    assert compile_cli(tmp_path, "-g").returncode == 0
    source = (tmp_path / "b" / "lenet_mnist.glowll.mlir").read_text()
    lines = [n for n, line in enumerate(source.splitlines(), 1) if INSTRUCTION_LINE.match(line)]
    commands = [argument for n in lines for argument in ("-ex", f"info line lenet_mnist.glowll.mlir:{n}")]
    output = subprocess.run(["gdb", "-batch", "-nx", *commands, str(tmp_path / "b" / "lenet_mnist.o")],
                            capture_output=True, text=True, check=True).stdout
    for n in lines:
        assert re.search(rf'Line {n} of "lenet_mnist.glowll.mlir" starts at address 0x[0-9a-f]+', output), output


def test_bundle_instrumentation_as_glows_bundle_instrument_example(tmp_path):
    """Glow's bundle_instrument CMake line, verbatim but for the paths: the bundle's own dumps
    (-instrument-debug) and the user's callbacks (-instrument-ir) see the same bytes."""
    (tmp_path / "ir").mkdir()
    line = ("glow-compile -g -model={model} -model-input=data,float,[1,1,28,28] -backend=CPU -emit-bundle=build "
            "-bundle-api=static -instrument-debug -instrument-debug-format=rawbin -instrument-debug-dir=debug "
            "-instrument-ir").format(model=LENET_PATH)
    tools = os.path.dirname(sys.executable)
    result = subprocess.run(["bash", "-c", line], capture_output=True, text=True, cwd=tmp_path,
                            env={**os.environ, "PATH": f"{tools}:{os.environ['PATH']}", "PYTHONPATH": os.getcwd()})
    assert result.returncode == 0, result.stderr
    info = (tmp_path / "debug" / "instrument-debug.info").read_text()
    assert info.startswith("Format: rawbin\n") and "Name: _conv1_Conv" in info
    assert "ID: 4\nKind: 2 (softmax)\nName: _Softmax" in (tmp_path / "build" / "instrument-ir.info").read_text()
    bundle = glowmlir.compile(LENET_PATH)
    image = np.random.default_rng(3).random((1, 1, 28, 28), np.float32)
    (tmp_path / "input.bin").write_bytes(image.tobytes())
    layout = bundle.layout
    data = layout.placeholder("data")
    program = tmp_path / "instrumented"
    defines = {"BUNDLE_HEADER": '"lenet_mnist.h"', "BUNDLE_ENTRY": "lenet_mnist",
               "BUNDLE_CONSTANT": "LENET_MNIST_CONSTANT_MEM_SIZE", "BUNDLE_MUTABLE": "LENET_MNIST_MUTABLE_MEM_SIZE",
               "BUNDLE_ACTIVATIONS": "LENET_MNIST_ACTIVATIONS_MEM_SIZE", "BUNDLE_INPUT_OFFSET": "LENET_MNIST_data",
               "BUNDLE_INPUT_SIZE": str(data.byte_size), "IR_DIR": f'"{tmp_path / "ir"}"',
               "WEIGHTS_FILE": f'"{tmp_path / "build" / "lenet_mnist.weights.bin"}"',
               "INPUT_FILE": f'"{tmp_path / "input.bin"}"'}
    subprocess.run(["cc", "-O1", "-I", str(tmp_path / "build"), *(f"-D{k}={v}" for k, v in defines.items()),
                    os.path.join(os.getcwd(), "tests", "support", "instrument_main.c"),
                    str(tmp_path / "build" / "lenet_mnist.o"), "-o", str(program)], check=True)
    output = subprocess.run([str(program)], capture_output=True, text=True, check=True).stdout
    files = info.count(".bin    ")
    assert output.strip() == f"instructions 5 dumps {files}"
    for index in range(files):
        name = f"data{index:04d}.bin"
        assert (tmp_path / "debug" / name).read_bytes() == (tmp_path / "ir" / name).read_bytes(), name
    # The first dump is conv1's output: what the bundle computes for that node.
    instrumented = np.frombuffer((tmp_path / "debug" / "data0001.bin").read_bytes(), np.float32)
    np.testing.assert_array_equal(instrumented, image.reshape(-1))
