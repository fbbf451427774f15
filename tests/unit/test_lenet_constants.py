"""LeNet's int8 constants against Glow's own bundle's 433,152 B (issue 37).

Glow's LeNet bundle holds the int8 weights and int32 biases, each 64-byte aligned: 433,152 B.
Ours with every filter int8 holds 433,088 B. A model `glow-compile` quantizes itself from a
profile (Glow's flow) gets Glow's constants as its default budget
(`flash_budget.GLOW_CONSTANT_RATIO`: its int8 weights as they are), so its default build on
every target packs no filter wider: on the DSP cores (M4, M7, M33) the convolutions read
int8 filter words (the first on its asymmetric levels) and the FullyConnected its int8
weights; on the M55, Helium's column filters have no int8 form and the convolutions take the
DSP kernel's int8 words instead (the FullyConnected stay Helium's); the VNNI host's
packing pads channels to blocks of 16 (453,632 B), so its layers keep the AVX2 kernels. A
pre-quantized model of the same architecture keeps the 1.25x budget (docs/arm-dsp-kernels.md,
"LeNet against Glow's constants"); an explicit `-flash-size` still replaces either.
"""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

import glowmlir
from glowmlir.backends.arm_dsp.flash_budget import CODE_BUDGET, DEFAULT_CONSTANT_RATIO
from glowmlir.compiler import QuantizationOptions
from glowmlir.runtime.boards import run_on_board, target_for
from glowmlir.targets import resolve_target
from tests.support import tflite_models as tm
from tests.support.models import LENET
from tests.unit.test_kernel_libraries import (
    digits,
    lenet_profile,  # noqa: F401 - a fixture
)

GLOW_CONSTANTS = 433_152
QEMU = shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")
VNNI = {"target": "x86_64-unknown-linux-gnu", "mcpu": "icelake-server", "mattr": "+avx512vnni,+avx512bw,+avx512vbmi"}
TARGETS = {"cortex-m4": {"mcpu": "cortex-m4"}, "cortex-m7": {"mcpu": "cortex-m7"},
           "cortex-m33": {"mcpu": "cortex-m33"}, "cortex-m55": {"mcpu": "cortex-m55"},
           "cortex-m3": {"mcpu": "cortex-m3"}, "sse2": {"mcpu": "x86-64"}, "avx2": {"mattr": "+avx2,+fma"},
           "vnni": VNNI}
"""Every target LeNet's default build is held to Glow's constants on (the VNNI host only
compiled: this machine has no AVX-512)."""


def filter_storage(bundle) -> list[str]:
    """The storage type of each convolution's filter and FullyConnected's weights, in order
    ("i8": the model's levels)."""
    text = bundle.ir["glowll"]
    storage = dict(re.findall(r"(%\d+) = glowll\.weight .*!quant\.uniform<(\w+):", text))
    return [storage[weights] for weights in
            re.findall(r"glowll\.(?:convolution|fully_connected) %\d+, %\d+, (%\d+), ", text)]


def kernels(bundle) -> list[str]:
    """Each convolution's and FullyConnected's microkernel, in order ("generic": none)."""
    return [kernel.group(1) if (kernel := re.search(r'microkernel = #glowll\.microkernel<"([\w-]+)"', line))
            else "generic" for line in bundle.ir["glowll"].splitlines()
            if "glowll.convolution " in line or "glowll.fully_connected " in line]


def compile_lenet(profile: str, target: dict, **options) -> glowmlir.Bundle:
    return glowmlir.compile(LENET, quantization=QuantizationOptions(profile),
                            target=resolve_target(**target, opt_level="O3"), **options)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_lenet_default_build_holds_no_more_constants_than_glow(lenet_profile, name):  # noqa: F811
    bundle = compile_lenet(lenet_profile, TARGETS[name])
    assert bundle.layout.constant_size <= GLOW_CONSTANTS
    assert filter_storage(bundle) == ["i8"] * 4, bundle.ir["glowll"]
    expected = {"cortex-m4": ["arm-dsp"] * 4, "cortex-m7": ["arm-dsp"] * 4, "cortex-m33": ["arm-dsp"] * 4,
                "cortex-m55": ["arm-dsp", "arm-dsp", "arm-mve", "arm-mve"]}.get(name, ["generic"] * 4)
    assert kernels(bundle) == expected, bundle.ir["glowll"]


def test_an_explicit_flash_size_still_packs_what_it_allows(lenet_profile):  # noqa: F811
    """A flash with room for 1.25x Glow's constants beside the code packs filters as int16 pairs."""
    bundle = compile_lenet(lenet_profile, TARGETS["cortex-m4"],
                           flash_size=int(DEFAULT_CONSTANT_RATIO * GLOW_CONSTANTS) + CODE_BUDGET)
    assert GLOW_CONSTANTS < bundle.layout.constant_size <= DEFAULT_CONSTANT_RATIO * GLOW_CONSTANTS
    assert "i16" in filter_storage(bundle)


def test_a_pre_quantized_lenet_keeps_the_quarter_over_its_int8_weights(tmp_path):
    """The same architecture quantized before (TFLite int8): the default budget is 1.25x, spent."""
    path = tmp_path / "lenet.tflite"
    path.write_bytes(tm.build(tm.lenet_description(0), quantized=True))
    int8 = glowmlir.compile(str(path), target=target_for("mps2-an385")).layout.constant_size
    bundle = glowmlir.compile(str(path), target=target_for("mps2-an386"))
    assert int8 < bundle.layout.constant_size <= DEFAULT_CONSTANT_RATIO * int8, (bundle.layout.constant_size, int8)
    assert "i16" in filter_storage(bundle)


@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an505", "mps3-an547"])
def test_lenet_within_glows_constants_is_bit_identical_on_the_board(lenet_profile, board):  # noqa: F811
    """The M4, M33 and M55 default builds (the M7's and M3's: test_quantization.py's
    test_quantized_lenet_is_bit_identical_on_cortex_m) give the host bundle's int8 levels."""
    options = QuantizationOptions(lenet_profile, convert_placeholders=True)
    host = glowmlir.compile(LENET, quantization=options)
    scale, offset = host.layout.placeholder("data").quantization
    device = glowmlir.compile(LENET, quantization=options, target=target_for(board))
    assert device.layout.constant_size <= GLOW_CONSTANTS
    for image in digits(1):
        level = np.clip(np.rint(image / np.float32(scale)) + offset, -128, 127).astype(np.int8)
        result = run_on_board(device, board, {"data": level})
        np.testing.assert_array_equal(result.outputs["softmax"], host.run(data=level)["softmax"])
