"""Cross-compilation: every CPU preset's object, and the bundles run on emulated boards."""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest

import glowmlir
from glowmlir.elf import undefined_symbols
from glowmlir.errors import GlowError
from glowmlir.runtime.boards import BOARDS, run_on_board, target_for
from glowmlir.targets import OBJECT_CPUS, normalize_triple, resolve_target
from tests.support.models import LENET, onnxruntime_outputs, random_inputs, small_convnet

SOFT_FLOAT_ARM = {"__aeabi_fadd", "__aeabi_fsub", "__aeabi_fmul", "__aeabi_fdiv", "__aeabi_fcmplt",
                  "__aeabi_fcmpgt", "__aeabi_lmul"}
SOFT_FLOAT_RISCV = {"__addsf3", "__subsf3", "__mulsf3", "__divsf3", "__ltsf2", "__gtsf2"}
ALLOWED_UNDEFINED = {
    # Cores without an FPU need the compiler's soft-float runtime (libgcc / compiler-rt);
    # the i386 PIC object refers to the linker-made GOT. Nothing else, no C library.
    "cortex-m0": SOFT_FLOAT_ARM, "cortex-m0plus": SOFT_FLOAT_ARM, "cortex-m3": SOFT_FLOAT_ARM,
    "rv32imc": SOFT_FLOAT_RISCV, "i386": {"_GLOBAL_OFFSET_TABLE_"},
}


def test_triples_are_normalised_to_four_parts():
    assert normalize_triple("thumbv7em-none-eabihf") == "thumbv7em-unknown-none-eabihf"
    assert normalize_triple("arm", "hard") == "thumbv7em-unknown-none-eabihf"
    assert normalize_triple("armv7m-none-eabi", "soft") == "armv7m-unknown-none-eabi"
    assert normalize_triple("aarch64") == "aarch64-unknown-linux-gnu"
    assert normalize_triple("x86_64-pc-linux-gnu") == "x86_64-pc-linux-gnu"
    assert resolve_target("thumbv7em-none-eabihf", "cortex-m7").triple == "thumbv7em-unknown-none-eabihf"
    assert resolve_target(mcpu="cortex-m7", float_abi="soft").triple == "thumbv7em-unknown-none-eabi"
    with pytest.raises(GlowError, match="-float-abi"):
        resolve_target(mcpu="cortex-m7", float_abi="medium")


@pytest.fixture(scope="module")
def lenet_objects():
    return {cpu: glowmlir.compile(LENET, target=resolve_target(mcpu=cpu, opt_level="Os")).object_code
            for cpu in OBJECT_CPUS}


@pytest.mark.parametrize("cpu", OBJECT_CPUS)
def test_objects_call_nothing_outside_the_documented_list(cpu, lenet_objects):
    assert undefined_symbols(lenet_objects[cpu]) <= ALLOWED_UNDEFINED.get(cpu, set())


def test_hard_float_cortex_m_passes_floats_in_vfp_registers(lenet_objects):
    """The 3-part-triple trap: hard-float presets must carry Tag_ABI_VFP_args."""
    from glowmlir.elf import sections

    for cpu in ("cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55"):
        data = lenet_objects[cpu]
        attributes = next(s for s in sections(data) if s.name == ".ARM.attributes")
        blob = data[attributes.offset:attributes.offset + attributes.size]
        assert b"\x1c\x01" in blob, cpu  # Tag_ABI_VFP_args (28) = VFP registers (1)


@pytest.fixture(scope="module")
def convnet_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("convnet") / "small_convnet.onnx")
    onnx.save(small_convnet(), path)
    return path


def _check_on_board(model_path: str, board: str, weights_in: str = "flash", count: bool = False):
    model = onnx.load(model_path)
    inputs = random_inputs(model, seed=11)
    expected = onnxruntime_outputs(model, inputs)
    bundle = glowmlir.compile(model_path, target=target_for(board, "Os"))
    result = run_on_board(bundle, board, inputs, weights_in, count_instructions=count)
    for name, value in expected.items():
        scale = max(1.0, float(np.abs(value).max()))
        np.testing.assert_allclose(result.outputs[name].reshape(value.shape), value, atol=2e-5 * scale, rtol=0)
    return result


@pytest.mark.parametrize("board", list(BOARDS))
def test_lenet_on_board(board):
    _check_on_board(LENET, board)


@pytest.mark.parametrize("board", list(BOARDS))
def test_convnet_on_board(board, convnet_path):
    _check_on_board(convnet_path, board)


@pytest.mark.parametrize("board", ["mps2-an385", "mps2-an500"])
def test_weights_copied_to_ram(board):
    _check_on_board(LENET, board, weights_in="ram")


def test_instruction_counts_are_exact_and_repeatable(convnet_path):
    first = _check_on_board(convnet_path, "mps2-an500", count=True).instructions
    second = _check_on_board(convnet_path, "mps2-an500", count=True).instructions
    assert first == second and first > 100_000


def test_unknown_board():
    with pytest.raises(GlowError, match="unknown emulated board"):
        target_for("esp32")


def test_glow_run_on_a_board_and_on_the_host():
    import subprocess
    import sys

    image = os.path.join(os.path.dirname(LENET), "images", "3900_7.png")
    for board in ("mps2-an500", "host"):
        result = subprocess.run([sys.executable, "-m", "glowmlir.cli.run", f"-model={LENET}", f"-board={board}",
                                 f"-input={image}"], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        assert "softmax argmax: 7" in result.stdout
        assert ("instructions per inference on mps2-an500: " in result.stdout) == (board != "host")
    result = subprocess.run([sys.executable, "-m", "glowmlir.cli.run", f"-model={LENET}", "-board=esp32",
                             f"-input={image}"], capture_output=True, text=True)
    assert result.returncode == 2 and "unknown emulated board" in result.stderr and "Traceback" not in result.stderr


def test_link_failure_shows_the_compilers_error():
    """GCC ends with "compilation terminated."; the message must carry the error before it."""
    from glowmlir.runtime.boards import compiler_error

    stderr = ("In file included from main.c:1:\n"
              "/usr/include/stdio.h:27:10: fatal error: bits/libc-header-start.h: No such file or directory\n"
              "   27 | #include <bits/libc-header-start.h>\n"
              "      |          ^~~~~~~~~~~~~~~~~~~~~~~~~~\n"
              "compilation terminated.\n")
    message = compiler_error(stderr)
    assert "fatal error: bits/libc-header-start.h: No such file or directory" in message
    assert "compilation terminated" not in message
    assert compiler_error("ld: something odd\n") == "ld: something odd"
