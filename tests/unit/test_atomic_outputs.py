"""All outputs of one glow-compile command appear together or not at all.

Output paths are checked before compiling; the bundle files, the DAG and the memory report
are staged and moved into place only when every one of them is written.
"""

from __future__ import annotations

import os
import stat
import subprocess

import pytest

from glowmlir.bundle import StagedFiles
from glowmlir.errors import GlowError
from tests.support.forks import run_module
from tests.support.models import LENET


def glow_compile(*arguments: str, cwd: str | None = None) -> subprocess.CompletedProcess:
    return run_module("glowmlir.cli.compile", f"-model={os.path.abspath(LENET)}", *arguments, cwd=cwd,
                      env={**os.environ, "PYTHONPATH": os.getcwd()})


def assert_clean_failure(result: subprocess.CompletedProcess, *fragments: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("glow-compile: error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def entries(directory) -> list[str]:
    return sorted(os.listdir(directory))


def test_memory_report_into_proc_leaves_nothing(tmp_path):
    result = glow_compile("-emit-bundle=bundle", "-memory-report=/proc/x", cwd=tmp_path)
    assert_clean_failure(result, '-memory-report="/proc/x"', "cannot write")
    assert entries(tmp_path) == []


def test_memory_report_onto_a_directory_leaves_nothing(tmp_path):
    os.mkdir(tmp_path / "report")
    result = glow_compile("-emit-bundle=bundle", "-memory-report=report", "-dump-graph-DAG=g.dot", cwd=tmp_path)
    assert_clean_failure(result, '-memory-report="report": is a directory')
    assert entries(tmp_path) == ["report"] and entries(tmp_path / "report") == []


def test_dag_is_not_written_before_a_later_failure(tmp_path):
    result = glow_compile("-emit-bundle=bundle", "-dump-graph-DAG=g.dot", "-ram-size=1K", "-require-fit", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "does not fit the target" in result.stderr.strip().splitlines()[-1]
    assert entries(tmp_path) == []


def test_emit_bundle_onto_a_file_and_output_under_a_file(tmp_path):
    (tmp_path / "file").write_text("x")
    assert_clean_failure(glow_compile("-emit-bundle=file", cwd=tmp_path),
                         '-emit-bundle="file": exists and is not a directory')
    assert_clean_failure(glow_compile("-emit-bundle=b", "-dump-graph-DAG=file/g.dot", cwd=tmp_path),
                         '-dump-graph-DAG="file/g.dot"', 'is not a directory')
    assert entries(tmp_path) == ["file"]


def test_two_outputs_on_one_file_are_refused(tmp_path):
    result = glow_compile("-emit-bundle=b", "-memory-report=b/lenet_mnist.h", cwd=tmp_path)
    assert_clean_failure(result, '-memory-report="b/lenet_mnist.h": the same file as -emit-bundle')
    assert entries(tmp_path) == []


def test_all_outputs_written_together(tmp_path):
    result = glow_compile("-emit-bundle=deep/er/b", "-dump-graph-DAG=g.dot", "-memory-report=m.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert entries(tmp_path) == ["deep", "g.dot", "m.json"]
    assert entries(tmp_path / "deep/er/b") == ["lenet_mnist.h", "lenet_mnist.o", "lenet_mnist.weights.bin",
                                             "lenet_mnist.weights.txt"]
    assert (tmp_path / "g.dot").read_text().startswith("digraph DAG {")


def test_a_600_character_network_name_works(tmp_path):
    result = glow_compile("-emit-bundle=b", f"-network-name={'n' * 600}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "glow-compile: warning: network name" in result.stderr and "too long" in result.stderr
    assert len(entries(tmp_path / "b")) == 4 and all(len(name) <= 255 for name in entries(tmp_path / "b"))


def test_a_failure_while_committing_removes_every_staged_file_and_created_directory(tmp_path):
    outputs = StagedFiles()
    outputs.add(str(tmp_path / "new/dir/a.bin"), b"a", "-first")
    outputs.add(str(tmp_path / "b.bin"), b"b", "-second")
    outputs.add("/proc/glowmlir-test/c.bin", b"c", "-third")  # cannot be created, even by root
    with pytest.raises(GlowError, match='-third: cannot write "/proc/glowmlir-test/c.bin"'):
        outputs.commit()
    assert entries(tmp_path) == []


def test_commit_replaces_existing_files(tmp_path):
    (tmp_path / "a.txt").write_text("old")
    outputs = StagedFiles()
    outputs.add(str(tmp_path / "a.txt"), b"new", "-a")
    assert outputs.commit() == [str(tmp_path / "a.txt")]
    assert (tmp_path / "a.txt").read_text() == "new" and entries(tmp_path) == ["a.txt"]


def test_device_outputs_are_written_into_not_replaced(tmp_path):
    """An output onto /dev/full replaced the device node by a regular file (as root) and
    exited 0; /dev/null takes the report, /dev/full fails cleanly before any file is placed."""
    import stat

    assert glow_compile("-emit-bundle=bundle", "-memory-report=/dev/null", cwd=tmp_path).returncode == 0
    assert entries(tmp_path / "bundle") == ["lenet_mnist.h", "lenet_mnist.o", "lenet_mnist.weights.bin",
                                            "lenet_mnist.weights.txt"]
    result = glow_compile("-emit-bundle=other", "-dump-graph-DAG=/dev/full", cwd=tmp_path)
    assert_clean_failure(result, '-dump-graph-DAG: cannot write "/dev/full": No space left on device')
    assert entries(tmp_path) == ["bundle"]
    for device in ("/dev/null", "/dev/full"):
        assert stat.S_ISCHR(os.stat(device).st_mode)


def test_written_files_have_the_permissions_open_gives(tmp_path):
    mask = os.umask(0o022)
    os.umask(mask)
    result = glow_compile("-emit-bundle=bundle", "-memory-report=report.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for path in [*(tmp_path / "bundle").iterdir(), tmp_path / "report.json"]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask, path


def test_a_file_written_early_is_committed_with_the_others_in_the_order_added(tmp_path):
    """glow-compile writes the weight files on a thread while LLVM generates the code: the
    file is only renamed into place by `commit`, where the bundle adds it again."""
    outputs = StagedFiles()
    outputs.write_early(str(tmp_path / "b/w.bin"), lambda file: file.write(b"weights" * 1000), "-emit-bundle")
    outputs.add(str(tmp_path / "b/x.o"), b"code", "-emit-bundle")
    outputs.add(str(tmp_path / "b/w.bin"), b"not these", "-emit-bundle")  # already under way: kept
    assert outputs.commit() == [str(tmp_path / "b/x.o"), str(tmp_path / "b/w.bin")]
    assert entries(tmp_path / "b") == ["w.bin", "x.o"]
    assert (tmp_path / "b/w.bin").read_bytes() == b"weights" * 1000


def test_another_output_onto_a_weight_file_is_refused(tmp_path):
    result = glow_compile("-emit-bundle=b", "-memory-report=b/lenet_mnist.weights.bin", cwd=tmp_path)
    assert_clean_failure(result, '-memory-report="b/lenet_mnist.weights.bin": the same file as -emit-bundle')
    assert entries(tmp_path) == []


def test_a_failure_after_an_early_write_leaves_nothing(tmp_path):
    """-require-fit's failure, or the compiler's, once the weight files are under way."""
    with pytest.raises(GlowError, match="does not fit"), StagedFiles() as outputs:
        outputs.write_early(str(tmp_path / "new/b/w.bin"), lambda file: file.write(b"w" * 100000), "-emit-bundle")
        outputs.write_early(str(tmp_path / "new/b/w.txt"), lambda file: file.write(b"t" * 100000), "-emit-bundle")
        raise GlowError("bundle b does not fit the target")
    assert entries(tmp_path) == []


def test_an_early_write_that_failed_is_written_again_by_commit(tmp_path):
    """Its error, if it persists, is commit's one line naming the option and the path."""
    tries = []

    def flaky(file):
        tries.append(1)
        if len(tries) == 1:
            raise OSError("transient")
        file.write(b"ok")

    outputs = StagedFiles()
    outputs.write_early(str(tmp_path / "w.bin"), flaky, "-emit-bundle")
    assert outputs.commit() == [str(tmp_path / "w.bin")]
    assert (tmp_path / "w.bin").read_bytes() == b"ok" and len(tries) == 2 and entries(tmp_path) == ["w.bin"]

    def full(file):
        raise OSError(28, "No space left on device")

    outputs = StagedFiles()
    outputs.write_early(str(tmp_path / "v.bin"), full, "-emit-bundle")
    with pytest.raises(GlowError, match='-emit-bundle: cannot write ".*v.bin": No space left on device'):
        outputs.commit()
    assert entries(tmp_path) == ["w.bin"]
