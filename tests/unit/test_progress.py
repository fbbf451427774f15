"""Seeing the compiler work: progress on a terminal and not on a pipe, `-time`, `-verbose`."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys

import pytest

from glowmlir.instrumentation import Instrumentation, PassTimer, instrumented, stage, step
from glowmlir.pipeline import run_passes
from tests.support.models import LENET

LENET_PATH = os.path.abspath(LENET)
IMAGES = os.path.join(os.path.dirname(LENET_PATH), "images")
COMPILE_STAGES = ("import", "graph passes", "glowll passes", "lowering to llvm", "kernels lowered",
                  "LLVM translation", "LLVM optimisation", "object emission", "writing files")


def command(module: str, *arguments: str) -> list[str]:
    return [sys.executable, "-m", f"glowmlir.cli.{module}", *arguments]


def environment() -> dict[str, str]:
    quiet = {key: value for key, value in os.environ.items() if key not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    return {**quiet, "PYTHONPATH": os.getcwd(), "TERM": "xterm-256color", "COLUMNS": "120"}


def run_on_terminal(arguments: list[str], cwd) -> tuple[int, str, str]:
    """Runs with stderr on a pseudo-terminal and stdout on a pipe; returns both texts."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(arguments, stdout=subprocess.PIPE, stderr=terminal, stdin=subprocess.DEVNULL,
                               cwd=cwd, env=environment())
    os.close(terminal)
    seen = bytearray()
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the terminal closed: every writer has exited
            break
        if not chunk:
            break
        seen += chunk
    os.close(controller)
    stdout = process.stdout.read().decode()
    return process.wait(), stdout, seen.decode(errors="replace")


def compile_lenet(tmp_path, *options: str) -> list[str]:
    return command("compile", f"-model={LENET_PATH}", f"-emit-bundle={tmp_path / 'bundle'}", *options)


def test_progress_is_drawn_on_a_terminal(tmp_path):
    status, stdout, terminal = run_on_terminal(compile_lenet(tmp_path), tmp_path)
    assert status == 0, terminal
    for name in COMPILE_STAGES:
        assert name in terminal, name
    assert re.search(r"kernels lowered\S*\s.*\d+/5", terminal), terminal  # LeNet's 5 instructions, n/N
    assert "memory of bundle" not in terminal and "memory of bundle" in stdout  # the summary stays on stdout


def test_nothing_extra_on_a_pipe(tmp_path):
    result = subprocess.run(compile_lenet(tmp_path), capture_output=True, text=True, cwd=tmp_path,
                            env={**environment(), "FORCE_COLOR": "1"})
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_profiling_progress_counts_inferences(tmp_path):
    status, _, terminal = run_on_terminal(command("profile", f"-model={LENET_PATH}", "-image-mode=0to1", IMAGES,
                                                  f"-dump-profile={tmp_path / 'p.yaml'}"), tmp_path)
    assert status == 0, terminal
    assert "profiling" in terminal and "/20" in terminal, terminal  # the 20 example images


def pipeline_pass_names(tmp_path) -> list[str]:
    spec = subprocess.run(compile_lenet(tmp_path, "-print-pipeline"), capture_output=True, text=True, cwd=tmp_path,
                          env=environment(), check=True).stdout.strip()
    return [entry.split("{")[0] for entry in re.split(r",(?![^{]*})", spec)]


def test_verbose_names_every_pass_in_order(tmp_path):
    result = subprocess.run(compile_lenet(tmp_path, "-verbose"), capture_output=True, text=True, cwd=tmp_path,
                            env=environment())
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert [line.split("running ")[1] for line in lines if "running " in line] == pipeline_pass_names(tmp_path)
    alongside = [line for line in lines if "written alongside" in line]  # the weight files' thread, reported at the end
    assert [line.split(",")[0] for line in alongside] == ["glow-compile:   lenet_mnist.weights.bin",
                                                          "glow-compile:   lenet_mnist.weights.txt"]
    stages = [re.split(r" [(\[]", line.removeprefix("glow-compile: "))[0] for line in lines
              if "running " not in line and line not in alongside]
    assert stages == list(COMPILE_STAGES)
    assert any(line.startswith("glow-compile: kernels lowered (5) [RSS ") for line in lines)
    memory = [re.fullmatch(r".* \[RSS ([\d,]+) MiB, peak ([\d,]+) MiB\]", line)
              for line in lines if "running " not in line]
    assert all(memory) and all(int(m[1].replace(",", "")) <= int(m[2].replace(",", "")) for m in memory)


def timing_rows(text: str) -> dict[str, float]:
    rows = {}
    for line in text.splitlines():
        match = re.match(r"│ ( *)([\w -]+?)\s*│\s*([0-9.]+)\s*│", line)
        if match:
            rows[(match.group(1) and "  ") + match.group(2)] = float(match.group(3))
    return rows


def test_time_prints_seconds_per_stage_and_pass(tmp_path):
    result = subprocess.run(compile_lenet(tmp_path, "-time"), capture_output=True, text=True, cwd=tmp_path,
                            env=environment())
    assert result.returncode == 0, result.stderr
    assert "seconds per stage and pass" in result.stderr and "memory of bundle" in result.stdout
    rows = timing_rows(result.stderr)
    for name in (*COMPILE_STAGES, *pipeline_pass_names(tmp_path)):
        assert name in rows or f"  {name}" in rows, name
    outer = sum(seconds for name, seconds in rows.items() if not name.startswith("  ") and name != "total")
    assert rows["total"] == pytest.approx(outer, abs=0.002 * len(COMPILE_STAGES))
    assert rows["LLVM optimisation"] > 0
    assert re.search(r"│   lenet_mnist\.weights\.txt, written alongside\s*│\s*[0-9.]+\s*│", result.stderr)
    peaks = {(m[1] and "  ") + m[2]: int(m[3].replace(",", ""))
             for m in re.finditer(r"│ ( *)([\w -]+?)\s*│[^│]*│[^│]*│\s*([\d,]+)\s*│\n", result.stderr)}
    assert "peak RSS MiB" in result.stderr and len(peaks) == len(rows)  # a peak on every row, "total" too
    stages = [peaks[name] for name in rows if not name.startswith("  ") and name != "total"]  # each run once
    assert stages == sorted(stages) and peaks["total"] == max(peaks.values()) > 50  # a high-water mark


def test_glow_profile_takes_time_and_verbose(tmp_path):
    result = subprocess.run(command("profile", f"-model={LENET_PATH}", "-image-mode=0to1", IMAGES, "-time", "-verbose",
                                    f"-dump-profile={tmp_path / 'p.yaml'}"),
                            capture_output=True, text=True, cwd=tmp_path, env=environment())
    assert result.returncode == 0, result.stderr
    assert any(line.startswith("glow-profile: profiling (20) [RSS ") for line in result.stderr.splitlines())
    assert "glow-profile:   running glow-fold-batchnorm" in result.stderr.splitlines()
    assert timing_rows(result.stderr)["profiling"] > 0


def test_bad_observer_option_value_is_one_line(tmp_path):
    result = subprocess.run(compile_lenet(tmp_path, "-time=maybe"), capture_output=True, text=True, cwd=tmp_path,
                            env=environment())
    assert result.returncode == 2
    assert result.stderr.strip() == 'glow-compile: error: -time="maybe": expected true or false'
    assert not (tmp_path / "bundle").exists()


class Recorder(Instrumentation):
    def __init__(self):
        self.events: list[str] = []

    def stage_started(self, stage, steps=None):
        self.events.append(f"start {stage} {steps}")

    def step(self):
        self.events.append("step")

    def stage_finished(self, stage):
        self.events.append(f"end {stage}")

    def before_pass(self, compiler_pass):
        self.events.append(f"before {compiler_pass.name}")

    def after_pass(self, compiler_pass, module):
        self.events.append(f"after {compiler_pass.name}")


def test_observers_nest_and_are_removed_after_the_block():
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.transforms.dead_code_elimination import DeadCodeElimination

    outer, inner = Recorder(), Recorder()
    with instrumented(outer):
        with instrumented(inner), stage("work", steps=2):
            step()
            run_passes(ModuleOp([]), [DeadCodeElimination()])
            step()
        with stage("after"):
            pass
    with stage("outside"):  # no observer is left installed
        step()
    assert inner.events == ["start work 2", "step", "before dce", "after dce", "step", "end work"]
    assert outer.events == [*inner.events, "start after None", "end after"]


def test_pass_timer_nests_inner_stages_under_their_stage():
    timer = PassTimer()
    with instrumented(timer):
        with stage("outer"), stage("inner"):
            pass
        with stage("second"):
            pass
    assert list(timer.rows) == [("outer",), ("outer", "inner"), ("second",)]
    assert timer.total == pytest.approx(timer.rows[("outer",)] + timer.rows[("second",)])
