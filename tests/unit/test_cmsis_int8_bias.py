"""NXP's CMSIS-NN recipe for Glow (-quantization-schema=symmetric_with_power2_scale
-quantization-precision-bias=Int8 -use-cmsis): the Int8 bias Glow's rule picks is widened to
the Int32 bias CMSIS-NN adds to its accumulators (exactly: every scale is a power of two), so
convolutions and fully connected layers go to arm_* functions, and compute what our kernels
compute with the Int8 bias."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import glowmlir
from glowmlir.compiler import QuantizationOptions
from glowmlir.runtime.host import HostRunner
from tests.support.models import LENET
from tests.unit.test_kernel_libraries import STANDINS, digits, lenet_profile  # noqa: F401 - a fixture

RECIPE = dict(schema="symmetric_with_power2_scale", precision_bias="Int8")


@pytest.fixture(scope="module")
def recipe_bundles(lenet_profile):  # noqa: F811 - the fixture imported above
    """LeNet with the recipe and -use-cmsis (unfused, so that the convolutions can be calls),
    and without -use-cmsis (our kernels, Int8 bias rescaled in the kernel)."""
    library = glowmlir.compile(LENET, quantization=QuantizationOptions(lenet_profile, **RECIPE),
                               kernel_library="cmsis-nn", memory_fusion=False)
    ours = glowmlir.compile(LENET, quantization=QuantizationOptions(lenet_profile, **RECIPE), memory_fusion=False)
    return library, ours


def test_convolution_and_fully_connected_go_to_cmsis(recipe_bundles):
    library, ours = recipe_bundles
    selected = {(op, detail) for op, kind, detail in library.library_calls if kind == "library"}
    assert ("glowll.convolution", "arm_convolve_wrapper_s8") in selected
    assert ("glowll.fully_connected", "arm_fully_connected_s8") in selected
    assert not [row for row in library.library_calls if "int32 bias" in row[2] or "bias scale" in row[2]]
    # without a library the Int8 bias stays Int8 (Glow's rule), rescaled by our kernels
    assert "!quant.uniform<i8" in ours.ir["glow"] and "tensor<20x!quant.uniform<i8" in ours.ir["glow"]
    assert "tensor<20x!quant.uniform<i32" in library.ir["glow"]


def test_widened_bias_computes_what_the_int8_bias_does(recipe_bundles):
    """The stand-ins of the arm_* functions with the widened bias against our kernels with
    the Int8 one: within one level (in fact equal: the widening is exact)."""
    library, ours = recipe_bundles
    runner = HostRunner(library.layout, library.object_code, link=[STANDINS])
    for image in digits(10):
        with_cmsis = runner.run(data=image)["softmax"]
        without = ours.run(data=image)["softmax"]
        np.testing.assert_allclose(with_cmsis, without, atol=1 / 256 + 1e-7, rtol=0)  # SoftMax's int8 step


def test_glow_compile_reports_the_calls(lenet_profile, tmp_path):  # noqa: F811
    result = subprocess.run([sys.executable, "-m", "glowmlir.cli.compile", f"-model={LENET}",
                             f"-load-profile={lenet_profile}", "-quantization-schema=symmetric_with_power2_scale",
                             "-quantization-precision-bias=Int8", "-use-cmsis", "-memory-fusion=false",
                             f"-emit-bundle={tmp_path / 'b'}"],
                            capture_output=True, text=True, env=os.environ | {"COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    assert "arm_convolve_wrapper_s8" in result.stdout and "arm_fully_connected_s8" in result.stdout
    assert "needs int8 tensors and an int32 bias" not in result.stdout
