"""The autotuner (`glowmlir.autotune`, `-autotune`): each layer's kernel measured on the board.

A random-weight int8 TFLite net (a MobileNet block and an add: tests/support/tflite_models.py)
is tuned for the Cortex-M4 board (mps2-an386): every candidate kernel ("generic",
"arm-dsp", "level-tables") measured in estimated cycles per layer, once, in worker
processes. The build that reads the cache gives each layer the candidate measured fastest
(`#glowll.tuned_kernel`, its `microkernel`), and runs on the board bit-identical to TFLite's
int8 reference kernels. The cache round-trips (a second tune measures nothing, and the
build is the same); a Ray task on a local instance measures the same cycles as the processes;
a file that is not a cache stops the build with one line naming it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import glowmlir
from glowmlir.autotune import measure
from glowmlir.autotune.cache import TuningCache
from glowmlir.compiler import CompileOptions, tune
from glowmlir.errors import GlowError
from glowmlir.runtime.boards import run_on_board, target_for
from tests.support import tflite_models as tm

QEMU = shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")
needs_qemu = pytest.mark.skipif(not QEMU, reason="qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
BOARD = "mps2-an386"  # Cortex-M4
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def net() -> bytes:
    return tm.build(tm.mobilenet_block_description(5), quantized=True)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """The net's path and its tuning cache (measured by worker processes)."""
    directory = tmp_path_factory.mktemp("autotune")
    path = str(directory / "block.tflite")
    with open(path, "wb") as f:
        f.write(net())
    cache = str(directory / "autotune.json")
    tune(path, options(cache), workers=2)
    return path, cache


def options(cache: str, **extra) -> CompileOptions:
    return CompileOptions(target=target_for(BOARD), autotune=True, autotune_cache=cache, **extra)


def tuned_kernels(bundle) -> list[tuple[str, int, int, str]]:
    """(tuned kernel, its cycles, the generic kernel's, the microkernel given or "generic")
    of each instruction the autotuner chose for."""
    found = []
    for line in bundle.ir["glowll"].splitlines():
        tuned = re.search(r'tuned_kernel = #glowll.tuned_kernel<"([\w-]+)", (\d+), (\d+)>', line)
        if tuned:
            given = re.search(r'microkernel = #glowll.microkernel<"([\w-]+)"', line)  # its parameters after
            found.append((tuned.group(1), int(tuned.group(2)), int(tuned.group(3)),
                          given.group(1) if given else "generic"))
    return found


@needs_qemu
def test_a_tuned_build_takes_the_kernel_measured_fastest(tuned):
    path, cache_path = tuned
    cache = TuningCache.load(cache_path)
    choices = [entry["cycles"] for entry in cache.layers.values() if len(entry["cycles"]) > 1]
    assert len(choices) >= 3, cache.layers  # the convolutions at least: generic or arm-dsp
    assert any("level-tables" in cycles for cycles in choices) or any("arm-dsp" in c for c in choices)
    fastest = sorted((min(cycles, key=cycles.get), min(cycles.values())) for cycles in choices)
    bundle = glowmlir.compile(path, target=target_for(BOARD), autotune_cache=cache_path)
    kernels = tuned_kernels(bundle)
    assert sorted((kernel, cycles) for kernel, cycles, _, _ in kernels) == fastest
    for kernel, cycles, generic, given in kernels:
        assert given == kernel and cycles <= generic  # the flash budget of so small a net takes every choice
    inputs = tm.random_inputs(net(), seed=3)
    expected = tm.run_reference(net(), inputs)
    run = run_on_board(bundle, BOARD, inputs)
    for name, value in expected.items():
        np.testing.assert_array_equal(run.outputs[name].reshape(value.shape), value)


@needs_qemu
def test_the_cache_round_trips_and_reproduces_the_build(tuned, tmp_path, monkeypatch):
    path, cache_path = tuned
    copy = str(tmp_path / "copy.json")
    TuningCache(copy, TuningCache.load(cache_path).layers).save()
    assert json.load(open(copy)) == json.load(open(cache_path))

    def no_measuring(*arguments):
        raise AssertionError("measured a layer the cache holds")

    monkeypatch.setattr(measure, "measure_candidate", no_measuring)
    tune(path, options(copy))  # everything cached: nothing measured
    first = glowmlir.compile(path, target=target_for(BOARD), autotune_cache=cache_path)
    second = glowmlir.compile(path, target=target_for(BOARD), autotune_cache=copy)
    assert first.ir["glowll"] == second.ir["glowll"] and first.object_code == second.object_code
    untuned = glowmlir.compile(path, target=target_for(BOARD), autotune_cache=str(tmp_path / "none.json"))
    assert "tuned_kernel" not in untuned.ir["glowll"]


@needs_qemu
def test_ray_tasks_on_a_local_instance_measure_what_the_processes_do(tuned, tmp_path):
    ray = pytest.importorskip("ray", reason="ray (glowmlir[ray], installed by scripts/setup.sh)")
    path, cache_path = tuned
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": ROOT}})
    try:  # one candidate, one task: the measurements are the processes' bit for bit
        cache = tune(path, options(str(tmp_path / "ray.json")), executor="ray", kernels=("arm-dsp",))
    finally:
        ray.shutdown()
    by_processes = TuningCache.load(cache_path)
    assert cache.layers and all(entry["cycles"] == {"arm-dsp": by_processes.measured(key)["arm-dsp"]}
                                for key, entry in cache.layers.items()), cache.layers
    assert len(cache.layers) == sum("arm-dsp" in entry["cycles"] for entry in by_processes.layers.values())


@pytest.mark.parametrize("content, problem", [("{not json", "not readable JSON"),
                                              ('{"format": "other", "layers": {}}', "not a glowmlir-autotune cache")])
def test_a_bad_cache_file_is_one_line_naming_it(tmp_path, content, problem):
    path = tmp_path / "bad.json"
    path.write_text(content)
    model = tmp_path / "block.tflite"
    model.write_bytes(net())
    with pytest.raises(GlowError, match=f"autotune cache {re.escape(str(path))}: {problem}"):
        glowmlir.compile(str(model), target=target_for(BOARD), autotune_cache=str(path))
    result = subprocess.run([sys.executable, "-m", "glowmlir.cli.compile", f"-model={model}", "-mcpu=cortex-m4",
                             f"-autotune-cache={path}", f"-emit-bundle={tmp_path / 'bundle'}"],
                            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT})
    assert result.returncode != 0 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("glow-compile: error: autotune cache ")
    assert problem in result.stderr, result.stderr
    assert not os.path.exists(tmp_path / "bundle" / "block.o")


def test_a_target_without_kernels_to_tune_says_so(tmp_path):
    model = tmp_path / "block.tflite"
    model.write_bytes(net())
    with pytest.raises(GlowError, match="-autotune: no backend offers kernels to measure for -mcpu=cortex-m3"):
        glowmlir.compile(str(model), target=target_for("mps2-an385"), autotune=True,
                         autotune_cache=str(tmp_path / "c.json"))
