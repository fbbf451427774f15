"""Target options LLVM would ignore with a warning (or abort on) are refused up front."""

from __future__ import annotations

import pytest

from glowmlir.backends.arm_dsp.target import has_arm_dsp
from glowmlir.errors import GlowError
from glowmlir.memory_report import parse_size
from glowmlir.targets import resolve_target
from tests.unit.test_errors import assert_clean_failure, glow_compile

LENET = "examples/lenet_mnist/lenet_mnist.onnx"


@pytest.mark.parametrize("options, message", [
    ({"mcpu": ""}, r'-mcpu="": empty value'),
    ({"target": ""}, r'-target="": empty value'),
    ({"opt_level": ""}, r'-opt-level="": empty value'),
    ({"mattr": "garbage,,,"}, r'-mattr="garbage,,,": "garbage" is not a feature'),
    ({"mcpu": "cortex-m7", "mattr": "+dsp,,"}, r'"" is not a feature'),
    ({"target": "thumbv7em-none-eabihf", "mcpu": "skylake"},
     r'-mcpu="skylake": not a CPU of target thumbv7em-unknown-none-eabihf'),
    ({"target": "x86_64-unknown-linux-gnu", "mcpu": "cortex-m7"},
     r'-mcpu="cortex-m7" \(a CPU of Arm targets\) does not fit -target="x86_64-unknown-linux-gnu"'),
    ({"target": "aarch64-unknown-linux-gnu", "mcpu": "rv32imc"},
     r'-mcpu="rv32imc" \(a CPU of RISC-V targets\) does not fit'),
    ({"mcpu": "cortex-m7", "mattr": "+garbage"}, r'-mattr: "\+garbage" is not a feature of target thumbv7em'),
    ({"mattr": "+nonexistent"}, r'-mattr: "\+nonexistent" is not a feature of the host'),
    ({"mattr": "+dsp"}, r'-mattr: "\+dsp" is not a feature of the host'),
    ({"target": "x86_64-unknown-linux-gnu-extra"}, r'a triple has at most four parts'),
    ({"target": "mips-unknown-linux-gnu"}, r'-target="mips-unknown-linux-gnu": a big-endian target'),
    ({"mcpu": "cortex-m3", "float_abi": "hard"}, r'-float-abi=hard: cortex-m3 has no floating-point unit'),
])
def test_bad_target_options_are_refused(options, message):
    with pytest.raises(GlowError, match=message):
        resolve_target(**options)


M7_FEATURES = "+fp-armv8d16,+dsp"  # ARMv7E-M's DSP extension, FPv5 with 16 double registers
M4_FEATURES = "+vfp4d16sp,+dsp"  # FPv4, single precision only


@pytest.mark.parametrize("options, expected", [
    # (triple, cpu, features, opt level, size attribute, abi), as the Arm, RISC-V and LLVM
    # documentation name them: the M cores are Thumb-only bare-metal eabihf, -mattr is
    # appended to the CPU's features (LLVM's last one wins), -Oz is LLVM's -O2 + minsize
    ({"mcpu": "cortex-m7"}, ("thumbv7em-unknown-none-eabihf", "cortex-m7", M7_FEATURES, 3, None, None)),
    ({"mcpu": "cortex-m4", "mattr": "-dsp"},
     ("thumbv7em-unknown-none-eabihf", "cortex-m4", M4_FEATURES + ",-dsp", 3, None, None)),
    ({"target": "thumbv7em-none-eabihf", "mcpu": "cortex-m7"},
     ("thumbv7em-unknown-none-eabihf", "cortex-m7", M7_FEATURES, 3, None, None)),
    ({"target": "aarch64-linux-gnu", "mcpu": "cortex-a53"},
     ("aarch64-unknown-linux-gnu", "cortex-a53", "+neon", 3, None, None)),
    ({"mcpu": "rv32imafc"}, ("riscv32-unknown-none-elf", "generic-rv32", "+m,+a,+f,+c", 3, None, "ilp32f")),
    ({"mcpu": "hifi4"}, ("xtensa-unknown-none-elf", "hifi4", "", 3, None, None)),
    ({"opt_level": "Oz"}, ("", "", "", 2, "minsize", None)),
    ({"mattr": "+sse2"}, ("", "", "+sse2", 3, None, None)),
    ({"target": "x86_64"}, ("x86_64-unknown-linux-gnu", "", "", 3, None, None)),
    ({"mcpu": "cortex-m4", "float_abi": "hard"},
     ("thumbv7em-unknown-none-eabihf", "cortex-m4", M4_FEATURES, 3, None, None)),
])
def test_good_target_options_resolve_to_what_they_name(options, expected):
    target = resolve_target(**options)
    assert (target.triple, target.cpu, target.features, target.opt_level, target.size_attribute,
            target.abi) == expected


def test_a_feature_turned_off_is_off():
    """-mattr=-dsp on a Cortex-M4 leaves it without the DSP kernels; the M7 keeps them."""
    assert not has_arm_dsp(resolve_target(mcpu="cortex-m4", mattr="-dsp"))
    assert has_arm_dsp(resolve_target(mcpu="cortex-m7"))


def test_arm_cpu_on_x86_triple_is_a_clean_error_not_an_llvm_abort(tmp_path):
    """Used to kill the process with `LLVM ERROR: 64-bit code requested on a subtarget ...`."""
    out = tmp_path / "out"
    result = glow_compile(f"-model={LENET}", f"-emit-bundle={out}", "-mcpu=cortex-m7",
                          "-target=x86_64-unknown-linux-gnu")
    assert_clean_failure(result, '-mcpu="cortex-m7" (a CPU of Arm targets) does not fit')
    assert "LLVM ERROR" not in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("text", ["9" * 400, "99999999999999999999999M"])
def test_memory_size_past_2_to_the_64_is_refused(text):
    with pytest.raises(GlowError, match=r"-ram-size=.*larger than any memory"):
        parse_size("ram-size", text)
