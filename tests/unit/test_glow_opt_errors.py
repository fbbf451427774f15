"""glow-opt's errors: one `glow-opt: error: ...` line, exit status 2, no traceback, no
output file left behind; parse errors carry xDSL's `file:line:col`."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

from tests.support.forks import run_module

RELU = """\
glow.function @net {
  %x = glow.placeholder "x" : tensor<4xf32>
  %y = glow.relu %x {name = "r"} : (tensor<4xf32>) -> tensor<4xf32>
  glow.save %y as "y" : tensor<4xf32>
}
"""

WEIGHTED = """\
glow.function @net {
  %x = glow.placeholder "x" : tensor<17xf32>
  %w = glow.constant "w" elided : tensor<17xf32>
  %y = glow.add %x, %w {name = "a"} : (tensor<17xf32>, tensor<17xf32>) -> tensor<17xf32>
  glow.save %y as "y" : tensor<17xf32>
}
"""


def glow_opt(*arguments: str, cwd) -> subprocess.CompletedProcess:
    return run_module("glowmlir.cli.opt", *arguments, cwd=cwd, env={**os.environ, "PYTHONPATH": os.getcwd()})


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "relu.mlir").write_text(RELU)
    (tmp_path / "weighted.mlir").write_text(WEIGHTED)
    return tmp_path


def assert_clean_failure(result: subprocess.CompletedProcess, message: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [f"glow-opt: error: {message}"]
    assert result.stdout == ""


def test_parse_error_gives_file_line_column(workdir):
    (workdir / "bad.mlir").write_text('glow.function @net {\n  %x = glow.placeholder "x" : tensor<4xf32\n}\n')
    assert_clean_failure(glow_opt("bad.mlir", cwd=workdir), "bad.mlir:3:1: Expected '>' after builtin parameter list")


def test_verifier_error_names_the_input(workdir):
    (workdir / "bad.mlir").write_text(RELU.replace("-> tensor<4xf32>", "-> tensor<5xf32>")
                                      .replace('as "y" : tensor<4xf32>', 'as "y" : tensor<5xf32>'))
    assert_clean_failure(glow_opt("bad.mlir", cwd=workdir),
                         "bad.mlir: invalid IR: glow.relu: result shape [5] does not match the inferred shape [4]")


@pytest.mark.parametrize("passes, message", [
    ("no-such-pass", "Unrecognized passes: ['no-such-pass']"),
    ("glowll-allocate-memory{reuse=maybe}", "Incompatible types: given ('maybe',), expected <class 'bool'>"),
    ("glowll-allocate-memory{nonsense=1}", 'Provided arguments ["nonsense"] not found in expected arguments'),
    ("glowll-allocate-memory{", "column 24: Expected argument name here"),
])
def test_bad_pass_pipeline(workdir, passes, message):
    result = glow_opt("relu.mlir", "-p", passes, cwd=workdir)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f'glow-opt: error: -p "{passes}": ') and message in line


def test_llvm_target_on_glow_ir_is_the_wrong_stage(workdir):
    assert_clean_failure(glow_opt("relu.mlir", "-t", "llvm", cwd=workdir),
                         "-t llvm needs the llvm dialect, but the module holds glow.function (lower it first: "
                         "-p lower-glow-to-glowll,glowll-allocate-memory,lower-glowll-to-llvm)")


def test_missing_and_unknown_inputs_and_options(workdir):
    assert_clean_failure(glow_opt("missing.mlir", cwd=workdir), 'input file "missing.mlir" not found')
    (workdir / "x.npz").write_bytes(b"garbage")
    assert_clean_failure(glow_opt("x.npz", cwd=workdir),
                         "input file \"x.npz\": Unrecognized file extension 'npz' (known: mlir, onnx, onnxtxt, tflite; "
                         "or give --frontend)")
    assert_clean_failure(glow_opt("relu.mlir", "--frobnicate", cwd=workdir), "unrecognized arguments: --frobnicate")


def test_unwritable_output_is_checked_before_the_work(workdir):
    assert_clean_failure(glow_opt("relu.mlir", "-o", "/proc/x/out.mlir", cwd=workdir),
                         '-o="/proc/x/out.mlir": cannot write in "/proc": No such file or directory')
    assert_clean_failure(glow_opt("relu.mlir", "-o", ".", cwd=workdir), '-o=".": is a directory')


def test_no_output_file_after_a_failure(workdir):
    result = glow_opt("relu.mlir", "-t", "llvm", "-o", "out.ll", cwd=workdir)
    assert result.returncode == 2 and not (workdir / "out.ll").exists()
    result = glow_opt("relu.mlir", "-o", "out.mlir", cwd=workdir)
    assert result.returncode == 0 and "glow.relu" in (workdir / "out.mlir").read_text()


def test_weights_file_problems(workdir):
    assert_clean_failure(glow_opt("weighted.mlir", "--weights-file=missing.npz", cwd=workdir),
                         '--weights-file="missing.npz" not found, and weight "w" is elided')
    (workdir / "garbage.npz").write_bytes(b"garbage")
    result = glow_opt("weighted.mlir", "--weights-file=garbage.npz", cwd=workdir)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith('glow-opt: error: weights file "garbage.npz": not a readable .npz archive')
    np.save(workdir / "array.npy", np.zeros(17, np.float32))
    assert_clean_failure(glow_opt("weighted.mlir", "--weights-file=array.npy", cwd=workdir),
                         'weights file "array.npy": not a readable .npz archive (an .npy array, not an .npz archive)')
    np.savez(workdir / "wrong.npz", w=np.zeros((3, 3), np.float32))
    assert_clean_failure(glow_opt("weighted.mlir", "--weights-file=wrong.npz", cwd=workdir),
                         'weights file "wrong.npz": weight "w" is float32[3, 3], the IR declares tensor<17xf32>')
    np.savez(workdir / "right.npz", w=np.arange(17, dtype=np.float32))
    result = glow_opt("weighted.mlir", "--weights-file=right.npz", "--print-weights", cwd=workdir)
    assert result.returncode == 0 and "1.600000e+01" in result.stdout


def test_source_that_is_not_utf8_is_a_clean_error(workdir):
    (workdir / "binary.mlir").write_bytes(b"builtin.module {\n \xff\xfe }\n")
    assert_clean_failure(glow_opt("binary.mlir", cwd=workdir), "binary.mlir: not UTF-8 text (byte 18)")


def test_deeply_nested_source_is_a_clean_error(workdir):
    depth = 3000
    (workdir / "deep.mlir").write_text("builtin.module {" + '"test.op"() ({' * depth + "})" * depth + "}\n")
    assert_clean_failure(glow_opt("deep.mlir", cwd=workdir), "deep.mlir: nested too deeply to parse")
