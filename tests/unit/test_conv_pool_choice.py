"""-use-cmsis: each convolution whose pool we fuse keeps our kernel when estimated faster or
when unfusing would exceed -ram-size, else goes to the library (glow-choose-conv-pool-kernels,
backends/cmsis_nn/conv_pool_costs.py); the selection report says who runs it and why."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import glowmlir
from glowmlir.backends.cmsis_nn.conv_pool_costs import COSTS, ConvolutionWork, core_class, row_vectors
from glowmlir.compiler import CompileOptions, QuantizationOptions, import_network
from glowmlir.dialects import glow
from glowmlir.pipeline import run_passes
from glowmlir.runtime.boards import run_on_board, target_for
from glowmlir.targets import resolve_target
from tests.support.conv_pool_table import table_rows, work_of_row
from tests.support.models import LENET
from tests.unit.test_kernel_libraries import STANDINS, lenet_profile  # noqa: F401 - a fixture
from tests.unit.test_quantized_kernels import build, convolution_case

QEMU = shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")

LARGEST_ERROR = {"dsp": (0.18, 0.14), "generic": (0.25, 0.11), "helium": (0.26, 0.12)}
"""Per core class, (ours, CMSIS-NN): the largest relative error of an estimate on the
measured layers, as backends/cmsis_nn/conv_pool_costs.py states it."""
OTHER_SIDE = {"dsp": (0, 0.0), "generic": (2, 0.10), "helium": (3, 0.12)}
"""Per core class: how many measured layers the estimate may give to the measured slower
side, and how close the two sides must then be measured (relative gap)."""


@pytest.mark.parametrize("core", list(COSTS))
def test_estimates_are_within_the_stated_error_of_the_measured_layers(core):
    """Against tests/support/cmsis_nn/conv_pool_costs.json: our kernels as of today
    (bench/bench_conv_pool_costs.py measures them), the real CMSIS-NN's measured once."""
    rows = [row for row in table_rows() if row["core_class"] == core]
    assert len(rows) >= 8
    ours_bound, library_bound = LARGEST_ERROR[core]
    wrong = []
    for row in rows:
        work, library = work_of_row(row), row["cmsis_nn_conv"] + row["cmsis_nn_pool"]
        assert abs(COSTS[core].ours(work) / row["ours"] - 1) <= ours_bound, row["layer"]
        assert abs(COSTS[core].library(work) / library - 1) <= library_bound, row["layer"]
        if (COSTS[core].ours(work) <= COSTS[core].library(work)) != (row["ours"] <= library):
            wrong.append(abs(row["ours"] / library - 1))
    count, gap = OTHER_SIDE[core]
    assert len(wrong) <= count and all(difference < gap for difference in wrong)


def test_dsp_estimates_of_gathered_and_row_kernels():
    """On the M7 our gathered product (LeNet's conv1: 25 taps a window, gathered once per
    pixel) and our row kernel (conv2: 500 taps) are estimated apart: 360,288 and 2,461,728
    instructions (the selection report's figures), measured 336,544 and 2,091,648. With one
    figure per MAC for both, conv1 was estimated at 630,490 (the row kernel's cost)."""
    lenet = {row["layer"]: row for row in table_rows() if row["core_class"] == "dsp"}
    conv1, conv2 = (work_of_row(lenet[f"LeNet conv{index}"]) for index in (1, 2))
    assert (conv1.gathered, conv2.gathered) == (576 * 25, 0)
    assert [COSTS["dsp"].ours(conv1), COSTS["dsp"].ours(conv2)] == [360_288, 2_461_728]


def test_work_of_lenets_fused_convolutions():
    """conv1: 20 x 24 x 24 outputs of 5 x 5 x 1 taps; conv2: 50 x 8 x 8 of 5 x 5 x 20."""
    options = CompileOptions()
    module = import_network(LENET, options)
    run_passes(module, options.pipeline().glow)
    fused = [op for op in module.walk() if isinstance(op, glow.ConvolutionOp) and op.pool is not None]
    # rows of 24 and 8 outputs, every tap inside: whole vectors, none idle
    # conv1 (25 taps a window, its 2x2 pool tiling the output) runs on the DSP kernels'
    # gathered product: 576 pixels' windows gathered once; conv2 (500 taps) on their rows
    assert [ConvolutionWork.of(op) for op in fused] == [ConvolutionWork(288_000, 11_520, 576 * 5, 288_000, 576 * 25),
                                                        ConvolutionWork(1_600_000, 3_200, 64 * 5, 1_600_000)]


def test_helium_rows_count_their_idle_edge_lanes():
    """A 'same' 3x3 over rows of 6: one interior vector (columns 1-4) and two predicated ones
    (column 0, column 5): 12 lanes for 6 outputs."""
    assert row_vectors(6, 6, 3, 1, 1, 1) == 3
    assert row_vectors(28, 24, 5, 1, 0, 1) == 6


def test_core_classes():
    assert [core_class(resolve_target(mcpu=cpu)) for cpu in ("cortex-m0", "cortex-m3", "cortex-m4", "cortex-m7",
                                                             "cortex-m33", "cortex-m55", "cortex-a53")] == \
        ["generic", "generic", "dsp", "dsp", "dsp", "helium", ""]


def convolutions(bundle) -> list[tuple[str, str]]:
    return [(kind, detail) for op, kind, detail in bundle.library_calls if op == "glowll.convolution"]


@pytest.fixture(scope="module")
def lenet_bundles(lenet_profile):  # noqa: F811 - the fixture
    def compile_for(cpu: str, **options):
        return glowmlir.compile(LENET, quantization=QuantizationOptions(lenet_profile), kernel_library="cmsis-nn",
                                target=resolve_target(mcpu=cpu), **options)

    return {"m7": compile_for("cortex-m7"), "m3": compile_for("cortex-m3"),
            "m3 8K": compile_for("cortex-m3", ram_size=8192),
            "m3 unfused": compile_for("cortex-m3", memory_fusion=False)}


def test_lenet_on_the_m7_keeps_both_fused_convolutions_ours(lenet_bundles):
    assert convolutions(lenet_bundles["m7"]) == [
        ("generated: arm-dsp", "ours: faster (est. ours 360,288 vs cmsis-nn 1,749,744 instructions)"),
        ("generated: arm-dsp", "ours: faster (est. ours 2,461,728 vs cmsis-nn 3,015,926 instructions)")]
    assert lenet_bundles["m7"].layout.activations_size == 3_680


def test_lenet_on_the_m3_gives_conv2_to_the_library(lenet_bundles):
    """On the M3 CMSIS-NN's conv2 + pool is estimated faster (measured: 4,412,598 vs ours
    5,425,252): unfused, both calls; conv1 stays ours, and the activations grow."""
    bundle = lenet_bundles["m3"]
    assert convolutions(bundle) == [
        ("generated", "ours: faster (est. ours 1,187,136 vs cmsis-nn 1,935,245 instructions)"),
        ("library", "arm_convolve_wrapper_s8; cmsis-nn: faster (est. cmsis-nn 4,730,842 vs ours 5,452,160 "
                    "instructions)")]
    assert [detail for op, _, detail in bundle.library_calls if op == "glowll.max_pool"] == ["arm_max_pool_s8"]
    assert bundle.layout.activations_size > 3_680


def test_lenet_on_the_m3_keeps_the_fusion_that_fits_the_ram(lenet_bundles):
    """Unfused, conv2 needs 8,080 bytes of activations + 3,200 of placeholders: over 8K."""
    bundle = lenet_bundles["m3 8K"]
    assert convolutions(bundle)[1] == ("generated", "ours: fusion needed to fit -ram-size 8192 (unfused: 11,280 B "
                                                    "of RAM; est. cmsis-nn 4,730,842 vs ours 5,452,160 instructions)")
    assert bundle.layout.activations_size + bundle.layout.mutable_size <= 8192
    unfused = lenet_bundles["m3"]
    assert unfused.layout.activations_size + unfused.layout.mutable_size == 11_280


def test_memory_fusion_false_gives_every_convolution_and_pool_to_the_library_as_before(lenet_bundles):
    bundle = lenet_bundles["m3 unfused"]
    assert convolutions(bundle) == [("library", "arm_convolve_wrapper_s8")] * 2
    assert "kernel_choice" not in bundle.ir["glowll"]


def test_a_host_build_keeps_its_fusions_with_the_reason_as_before(lenet_profile):  # noqa: F811
    bundle = glowmlir.compile(LENET, quantization=QuantizationOptions(lenet_profile), kernel_library="cmsis-nn")
    assert [detail for _, detail in convolutions(bundle)] == [
        "not CMSIS-NN: fused pooling (our kernel never stores the full-resolution output; the library would)"] * 2


def test_glow_compile_prints_each_reason(lenet_profile, tmp_path):  # noqa: F811
    result = subprocess.run([sys.executable, "-m", "glowmlir.cli.compile", f"-model={LENET}",
                             f"-load-profile={lenet_profile}", "-use-cmsis", "-mcpu=cortex-m3", "-ram-size=8K",
                             f"-emit-bundle={tmp_path / 'b'}"], capture_output=True, text=True,
                            env=os.environ | {"COLUMNS": "250"})
    assert result.returncode == 0, result.stderr
    assert "ours: faster (est. ours 1,187,136 vs cmsis-nn 1,935,245 instructions)" in result.stdout
    assert "ours: fusion needed to fit -ram-size 8192 (unfused: 11,280 B of RAM" in result.stdout


@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
def test_mixed_choice_on_the_m3_matches_the_int8_reference():
    """Two fused convolution + max pool layers on the M3: 16 -> 16 channels 3x3 (CMSIS-NN
    estimated faster: unfused, the calls run on the stand-ins) and 3 -> 8 channels 3x3
    (ours); both bit-identical to the independent int8 reference."""
    pool = dict(kind="max", kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0))
    cases = [convolution_case(seed, geometry, per_channel=True, activation="relu", pool=pool, suffix=suffix)
             for seed, geometry, suffix in ((31, ((1, 16, 8, 8), (16, 16, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
                                             "_library"),
                                            (32, ((1, 3, 8, 8), (8, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
                                             "_ours"))]
    body = "".join(case.body for case in cases)
    constants = {name: value for case in cases for name, value in case.constants.items()}
    bundle = build(body, constants, target=target_for("mps2-an385"), kernel_library="cmsis-nn")
    kinds = [(kind, detail.split(" (")[0]) for kind, detail in convolutions(bundle)]
    assert kinds == [("library", "arm_convolve_wrapper_s8; cmsis-nn: faster"), ("generated", "ours: faster")]
    inputs = {name: value for case in cases for name, value in case.inputs.items()}
    outputs = run_on_board(bundle, "mps2-an385", inputs, link=[STANDINS]).outputs
    for case in cases:
        np.testing.assert_array_equal(outputs[case.output].reshape(case.expected.shape), case.expected,
                                      err_msg=case.output)


def test_two_layers_given_to_the_library_with_a_ram_limit():
    """The RAM check of the second fused convolution, after the first went to the library
    (the check had numbered the fused convolutions before the first was unfused: an
    IndexError)."""
    pool = dict(kind="max", kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0))
    geometry = ((1, 16, 8, 8), (16, 16, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1)
    cases = [convolution_case(seed, geometry, per_channel=True, activation="relu", pool=pool, suffix=f"_{seed}")
             for seed in (31, 33)]
    bundle = build("".join(case.body for case in cases), {n: v for case in cases for n, v in case.constants.items()},
                   target=target_for("mps2-an385"), kernel_library="cmsis-nn", ram_size=1 << 20)
    choices = [line for line in bundle.ir["glow"].splitlines() if "kernel_choice" in line]
    assert len(choices) == 2 and all("cmsis-nn: faster" in line and "fits -ram-size" in line for line in choices)
