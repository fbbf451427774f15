"""glow-profile, glow-run and glow-compile on bad input: one `<tool>: error: ...` line, exit
status 2, no traceback, no file left behind. A bug inside glowmlir still shows its traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import typer

from glowmlir.cli.common import run_app
from glowmlir.errors import GlowError
from glowmlir.quantization.profile import MAX_NUM_BINS
from tests.support.models import LENET

LENET_PATH = os.path.abspath(LENET)


def tool(module: str, *arguments: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", f"glowmlir.cli.{module}", *arguments], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": os.getcwd()})


def assert_clean_failure(result: subprocess.CompletedProcess, program: str, *fragments: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{program}: error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Calibration files, good and damaged, for LeNet's input "data" [1,1,28,28]."""
    directory = tmp_path_factory.mktemp("files")
    rng = np.random.default_rng(0)
    np.save(directory / "good.npy", rng.random((2, 1, 1, 28, 28), np.float32))
    np.save(directory / "wrong.npy", rng.random((3, 5), np.float32))
    np.save(directory / "text.npy", np.array(["a", "b"]))
    good = (directory / "good.npy").read_bytes()
    (directory / "truncated.npy").write_bytes(good[:200])
    (directory / "garbage.npz").write_bytes(b"garbage")
    np.savez(directory / "good.npz", data=rng.random((2, 1, 1, 28, 28), np.float32))
    archive = (directory / "good.npz").read_bytes()
    (directory / "truncated.npz").write_bytes(archive[:len(archive) // 2])
    damaged = bytearray(archive)
    damaged[200] ^= 0xFF  # inside the member's data: a CRC error when read
    (directory / "crc.npz").write_bytes(bytes(damaged))
    os.mkdir(directory / "empty")
    return directory


def profile(files, *arguments: str) -> subprocess.CompletedProcess:
    return tool("profile", f"-model={LENET_PATH}", "-dump-profile=out/p.yaml", *arguments, cwd=files)


@pytest.mark.parametrize("bins", ["1000000000", str(MAX_NUM_BINS + 1), "0"])
def test_histogram_bins_are_bounded(files, bins):
    assert_clean_failure(profile(files, "good.npy", f"-num-histogram-bins={bins}"), "glow-profile",
                         f"-num-histogram-bins={bins}: must be between 1 and 1048576")


@pytest.mark.parametrize("entry, fragment", [
    ("garbage.npz", 'array "garbage.npz": not a readable .npz file'),
    ("truncated.npz", 'array "truncated.npz": not a readable .npz file (File is not a zip file)'),
    ("crc.npz", 'array "crc.npz": not a readable .npz file (Bad CRC-32'),
    ("truncated.npy", 'array "truncated.npy": not a readable .npy file'),
    ("text.npy", 'array "text.npy": <U1 data, expected numbers'),
    ("wrong.npy", 'array "wrong.npy": shape [3,5] does not fit input "data" [1,1,28,28]'),
    ("empty", 'image directory "empty" has no files'),
])
def test_bad_calibration_files(files, entry, fragment):
    assert_clean_failure(profile(files, entry), "glow-profile", fragment)
    assert not (files / "out").exists()


def test_empty_dataset_directory(files):
    assert_clean_failure(profile(files, "-input-dataset=data,rawbin,dir,empty"), "glow-profile",
                         'directory "empty" has no files')


def test_unwritable_profile_is_refused_before_profiling(files):
    result = tool("profile", f"-model={LENET_PATH}", "-dump-profile=/proc/x.yaml", "good.npy", cwd=files)
    assert_clean_failure(result, "glow-profile", '-dump-profile="/proc/x.yaml": cannot write in "/proc"')
    result = tool("profile", f"-model={LENET_PATH}", "-dump-profile=empty", "good.npy", cwd=files)
    assert_clean_failure(result, "glow-profile", '-dump-profile="empty": is a directory')


@pytest.mark.parametrize("entry, fragment", [
    ("truncated.npy", '-input "truncated.npy": not a readable .npy file'),
    ("text.npy", '-input "text.npy": <U1 data, expected numbers'),
])
def test_glow_run_bad_input_arrays(files, entry, fragment):
    assert_clean_failure(tool("run", f"-model={LENET_PATH}", f"-input={entry}", cwd=files), "glow-run", fragment)


def test_glow_compile_warns_in_one_line_when_it_renames(tmp_path):
    result = tool("compile", f"-model={LENET_PATH}", "-emit-bundle=b", "-network-name=main", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == ['glow-compile: warning: network name "main" is reserved in C; '
                                          'the bundle is named "main_"']
    assert sorted(os.listdir(tmp_path / "b"))[0] == "main_.h"


def test_an_empty_output_path_is_refused(tmp_path):
    result = tool("compile", f"-model={LENET_PATH}", "-emit-bundle=", cwd=tmp_path)
    assert_clean_failure(result, "glow-compile", "-emit-bundle: the path is empty")
    assert os.listdir(tmp_path) == []


def test_only_user_errors_are_one_line():
    """A GlowError is the user's; anything else (an OSError from inside included) is a bug and propagates."""
    app = typer.Typer(add_completion=False)

    @app.command()
    def command(kind: str) -> None:
        raise {"user": GlowError("bad option"), "bug": OSError(5, "Input/output error", "internal.tmp")}[kind]

    with pytest.raises(SystemExit) as exit_status:
        run_app(app, "tool", ["user"])
    assert exit_status.value.code == 2
    with pytest.raises(OSError):
        run_app(app, "tool", ["bug"])


def test_profile_of_a_model_with_an_output_named_like_the_instrumentation(tmp_path):
    """The profiler's extra outputs `profile_<k>` used to take a model output's name: the
    profile of the input then recorded the model's output (silently wrong ranges)."""
    import onnx
    from onnx import TensorProto, helper

    from glowmlir.quantization.profile import read_profile

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["t"], name="r"),
                               helper.make_node("Neg", ["t"], ["profile_0"], name="n")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("profile_0", TensorProto.FLOAT, [1, 4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", np.array([[[1, -2, 3, -4]]], np.float32))
    result = tool("profile", "-model=m.onnx", "-dump-profile=p.yaml", "x=x.npy", cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    entries = read_profile(str(tmp_path / "p.yaml")).entries
    assert (entries["x:0"].min, entries["x:0"].max) == (-4.0, 3.0)
    assert (entries["r:0"].min, entries["r:0"].max) == (0.0, 3.0)
    assert (entries["n:0"].min, entries["n:0"].max) == (-3.0, 0.0)


def test_glow_run_checks_weights_in_even_on_the_host(files):
    assert_clean_failure(tool("run", f"-model={LENET_PATH}", "-input=good.npy", "-weights-in=disk", cwd=files),
                         "glow-run", '-weights-in="disk": expected flash or ram')


@pytest.mark.parametrize("options, fragment", [
    (["-model-input=data,float,[1,1,28,28]", "-model-input=data,float,[1,1,28,28]"],
     '-model-input: "data" is given twice'),
    (["-onnx-define-symbol=N,2", "-onnx-define-symbol=N,3"], '-onnx-define-symbol: "N" is given twice'),
    (["-ram-size="], '-ram-size="": expected a size'),
    (["-flash-size="], '-flash-size="": expected a size'),
    (["-load-profile="], "-load-profile: the path is empty"),
])
def test_glow_compile_option_values_found_by_the_campaign(tmp_path, options, fragment):
    """Each exited 0 (the second value silently won, the empty one was ignored) or named a pass."""
    result = tool("compile", f"-model={LENET_PATH}", "-emit-bundle=b", *options, cwd=tmp_path)
    assert_clean_failure(result, "glow-compile", fragment)
    assert not (tmp_path / "b").exists()
