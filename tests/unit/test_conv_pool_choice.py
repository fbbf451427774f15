"""-use-cmsis: each convolution whose pool we fuse keeps our kernel when estimated faster or
when unfusing would exceed -ram-size, else goes to the library (glow-choose-conv-pool-kernels,
backends/cmsis_nn/conv_pool_costs.py); the selection report says who runs it and why.

Choices are asserted by outcome: the kernel chosen is the one measured cheaper on the board
(tests/support/cmsis_nn/conv_pool_costs.json: both sides under QEMU, in the unit the core
class's cost model counts: instructions, or estimated cycles, the table's *_cycles columns),
and the estimates the report prints are within the cost model's stated error of those
measurements; no figure is copied from the cost model."""

from __future__ import annotations

import os
import re
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

LARGEST_ERROR = {"dsp": (0.21, 0.14), "generic": (0.25, 0.11), "helium": (0.24, 0.10)}
"""Per core class, (ours, CMSIS-NN): the largest relative error of an estimate on the
measured layers, as backends/cmsis_nn/conv_pool_costs.py states it."""
OTHER_SIDE = {"dsp": (1, 0.12), "generic": (2, 0.11), "helium": (0, 0.0)}
"""Per core class: how many measured layers the estimate may give to the measured slower
side, and how close the two sides must then be measured (relative gap)."""


@pytest.mark.parametrize("core", list(COSTS))
def test_estimates_are_within_the_stated_error_of_the_measured_layers(core):
    """Against tests/support/cmsis_nn/conv_pool_costs.json: our kernels as of today
    (bench/bench_conv_pool_costs.py measures them), the real CMSIS-NN's; in the unit the
    class's figures count (instructions, or estimated cycles: the table's *_cycles)."""
    unit = measured_unit(core)
    rows = [row for row in table_rows() if row["core_class"] == core]
    assert len(rows) >= 8
    ours_bound, library_bound = LARGEST_ERROR[core]
    wrong = []
    for row in rows:
        work, library = work_of_row(row), row[f"cmsis_nn_conv{unit}"] + row[f"cmsis_nn_pool{unit}"]
        assert abs(COSTS[core].ours(work) / row[f"ours{unit}"] - 1) <= ours_bound, row["layer"]
        assert abs(COSTS[core].library(work) / library - 1) <= library_bound, row["layer"]
        if (COSTS[core].ours(work) <= COSTS[core].library(work)) != (row[f"ours{unit}"] <= library):
            wrong.append(abs(row[f"ours{unit}"] / library - 1))
    count, gap = OTHER_SIDE[core]
    assert len(wrong) <= count and all(difference < gap for difference in wrong)


def measured_unit(core: str) -> str:
    """The suffix of the table's columns in the unit `core`'s cost model counts."""
    return "_cycles" if COSTS[core].unit == "cycles" else ""


def measured(core: str, layer: str) -> dict[str, int]:
    """A layer's measured cost on the board of `core`'s class (instructions or estimated
    cycles, as its cost model counts): ours, and CMSIS-NN's convolution + pool."""
    unit = measured_unit(core)
    row = next(row for row in table_rows() if row["core_class"] == core and row["layer"] == layer)
    return {"ours": row[f"ours{unit}"], "cmsis-nn": row[f"cmsis_nn_conv{unit}"] + row[f"cmsis_nn_pool{unit}"]}


ESTIMATE = re.compile(r"est\. (ours|cmsis-nn) ([\d,]+) vs (ours|cmsis-nn) ([\d,]+) (?:instructions|cycles)")


def assert_chosen_by_outcome(core: str, layer: str, kind: str, detail: str) -> None:
    """The side that runs `layer` (`kind`: "generated" ours, "library" CMSIS-NN) is the one
    measured cheaper on the board, and the estimates the report gives are within the stated
    error of the measured counts."""
    counts = measured(core, layer)
    cheaper = min(counts, key=counts.get)
    assert kind.startswith("generated" if cheaper == "ours" else "library"), (layer, counts, detail)
    estimates = ESTIMATE.search(detail)
    assert estimates is not None, detail
    for side, figure in (estimates.group(1, 2), estimates.group(3, 4)):
        bound = LARGEST_ERROR[core][side != "ours"]
        assert abs(int(figure.replace(",", "")) / counts[side] - 1) <= bound, (layer, side, figure, counts)


def test_dsp_estimates_of_gathered_and_row_kernels():
    """Our gathered product (LeNet's conv1: 25 taps a window, gathered once per pixel) and
    our row kernel (conv2: 500 taps) are each estimated within the stated error of their
    measured cost (estimated cycles on the M4: 436,067 and 2,840,590)."""
    lenet = {row["layer"]: row for row in table_rows() if row["core_class"] == "dsp"}
    conv1, conv2 = (work_of_row(lenet[f"LeNet conv{index}"]) for index in (1, 2))
    assert (conv1.gathered, conv2.gathered) == (576 * 25, 0)
    for index, work in ((1, conv1), (2, conv2)):
        cost = measured("dsp", f"LeNet conv{index}")["ours"]
        assert abs(COSTS["dsp"].ours(work) / cost - 1) <= LARGEST_ERROR["dsp"][0]


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
    """Both measured cheaper ours (estimated cycles on the M4, the class's board)."""
    chosen = convolutions(lenet_bundles["m7"])
    assert [kind for kind, _ in chosen] == ["generated: arm-dsp"] * 2
    for index, (kind, detail) in enumerate(chosen, 1):
        assert detail.startswith("ours: faster (")
        assert_chosen_by_outcome("dsp", f"LeNet conv{index}", kind, detail)
    assert lenet_bundles["m7"].layout.activations_size == 3_680


def test_lenet_on_the_m3_gives_conv2_to_the_library(lenet_bundles):
    """On the M3 CMSIS-NN's conv2 + pool is measured faster (estimated
    cycles 7,340,636 vs ours 8,922,832): unfused, both calls; conv1 stays ours, and the
    activations grow."""
    bundle = lenet_bundles["m3"]
    (kind1, detail1), (kind2, detail2) = convolutions(bundle)
    assert (kind1, kind2) == ("generated", "library")
    assert detail1.startswith("ours: faster (") and detail2.startswith("arm_convolve_wrapper_s8; cmsis-nn: faster (")
    assert_chosen_by_outcome("generic", "LeNet conv1", kind1, detail1)
    assert_chosen_by_outcome("generic", "LeNet conv2", kind2, detail2)
    assert [detail for op, _, detail in bundle.library_calls if op == "glowll.max_pool"] == ["arm_max_pool_s8"]
    assert bundle.layout.activations_size > 3_680


def test_lenet_on_the_m3_keeps_the_fusion_that_fits_the_ram(lenet_bundles):
    """Unfused, conv2 needs 8,080 bytes of activations + 3,200 of placeholders: over 8K."""
    bundle = lenet_bundles["m3 8K"]
    kind, detail = convolutions(bundle)[1]
    assert kind == "generated" and detail.startswith("ours: fusion needed to fit -ram-size 8192 (unfused: 11,280 B "
                                                     "of RAM; est. cmsis-nn ")
    assert_chosen_by_outcome("generic", "LeNet conv2", "library", detail)  # the library, had RAM allowed
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
    chosen = [line for line in result.stdout.splitlines() if "ours: " in line]
    assert len(chosen) == 2, result.stdout
    assert "ours: faster (est. ours " in chosen[0]
    assert_chosen_by_outcome("generic", "LeNet conv1", "generated", chosen[0])
    assert "ours: fusion needed to fit -ram-size 8192 (unfused: 11,280 B of RAM" in chosen[1]


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
