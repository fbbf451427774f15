"""LeNet's int8 constants against Glow's own bundle's 433,152 B (issue 37), compile only.

Glow's LeNet bundle holds the int8 weights and int32 biases, each 64-byte aligned: 433,152 B.
Ours with every filter int8 holds 433,088 B, so a build is within Glow's only if no filter is
packed wider (docs/arm-dsp-kernels.md, "LeNet against Glow's constants"). A host without
AVX-512 VNNI keeps every filter int8 by default; on the Cortex-M4, M7 (Arm DSP kernels) and
M55 (Helium) a flash budget that leaves the constants exactly Glow's bytes (`-flash-size` =
433,152 + `flash_budget.CODE_BUDGET`) keeps them int8 too (on the DSP cores the first
convolution on int8 words of its asymmetric levels). Their default builds do not yet:
the 1.25x budget packs both convolutions (M4/M7 468,736 B, M55 458,624 B), and a VNNI host
pads channels to whole blocks of 16 (453,632 B).
"""

from __future__ import annotations

import re

import pytest

import glowmlir
from glowmlir.backends.arm_dsp.flash_budget import CODE_BUDGET
from glowmlir.compiler import QuantizationOptions
from glowmlir.targets import resolve_target
from tests.support.models import LENET
from tests.unit.test_kernel_libraries import lenet_profile  # noqa: F401 - a fixture

GLOW_CONSTANTS = 433_152


def filter_storage(bundle) -> list[str]:
    """The storage type of each convolution's filter, in order ("i8": the model's levels)."""
    text = bundle.ir["glowll"]
    storage = dict(re.findall(r"(%\d+) = glowll\.weight .*!quant\.uniform<(\w+):", text))
    return [storage[filt] for filt in re.findall(r"glowll\.convolution %\d+, %\d+, (%\d+), ", text)]


def convolution_kernels(bundle) -> list[str]:
    """Each convolution's microkernel, in order ("generic": none)."""
    return [kernel.group(1) if (kernel := re.search(r'microkernel = #glowll\.microkernel<"([\w-]+)"', line))
            else "generic" for line in bundle.ir["glowll"].splitlines() if "glowll.convolution " in line]


@pytest.mark.parametrize("target", [{"mcpu": "x86-64"}, {"mattr": "+avx2,+fma"}], ids=["sse2", "avx2"])
def test_lenet_on_a_host_without_vnni_holds_no_more_constants_than_glow(lenet_profile, target):  # noqa: F811
    bundle = glowmlir.compile(LENET, quantization=QuantizationOptions(lenet_profile),
                              target=resolve_target(**target, opt_level="O3"))
    assert bundle.layout.constant_size <= GLOW_CONSTANTS
    assert filter_storage(bundle) == ["i8", "i8"]


@pytest.mark.parametrize("cpu", ["cortex-m4", "cortex-m7", "cortex-m55"])
def test_lenet_within_a_flash_budget_of_glows_constants_keeps_its_filters_int8(lenet_profile, cpu):  # noqa: F811
    """On the DSP cores the first convolution (25 taps, window pairs) reads the model's
    asymmetric levels as int8 words (the zero point taken off per gathered window); the
    second (row pairs) and Helium's have no int8 form yet and take the generic kernel."""
    target = resolve_target(mcpu=cpu, opt_level="O3")
    bundle = glowmlir.compile(LENET, quantization=QuantizationOptions(lenet_profile), target=target,
                              flash_size=GLOW_CONSTANTS + CODE_BUDGET)
    assert bundle.layout.constant_size <= GLOW_CONSTANTS
    assert filter_storage(bundle) == ["i8", "i8"], bundle.ir["glowll"]
    if cpu != "cortex-m55":
        assert convolution_kernels(bundle)[0] == "arm-dsp", bundle.ir["glowll"]
