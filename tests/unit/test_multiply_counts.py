"""The instruction counter's multiply count (`BoardRun.multiplies`): which mnemonics multiply,
and the count on the boards for FullyConnected layers whose multiply instructions per
multiply-accumulate are known."""

from __future__ import annotations

import shutil

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import glowmlir
from glowmlir.compiler import CompileOptions, QuantizationOptions
from glowmlir.profiling import Profiler
from glowmlir.quantization.params import QuantParams, quantize
from glowmlir.quantization.profile import write_profile
from glowmlir.runtime.boards import run_on_board, target_for
from glowmlir.runtime.multiplies import is_multiply, multiply_addresses

QEMU = shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")


@pytest.mark.parametrize("mnemonic", ["mul", "muls", "mul.w", "mla", "mls", "mlaeq", "umull", "umlal", "smlal",
                                      "smlalbb", "smlallt", "smulbb", "smlad", "smladx", "smlsd", "smuad", "smmulr",
                                      "smmlar", "vmul.f32", "vnmul.f32", "vmla.f32", "vfma.f32", "vfms.f64",
                                      "vmlava.s8", "vmlavat.s8", "vmladavax.s16", "vmullb.s8", "vqrdmulh.s32",
                                      "vrmlaldavha.s32", "vmlsdav.s16"])
def test_multiplies(mnemonic):
    assert is_multiply(mnemonic)


@pytest.mark.parametrize("mnemonic", ["mov", "movs", "mvns", "ldr.w", "add.w", "sdiv", "udiv", "vdiv.f32", "vmov.f32",
                                      "vmaxnm.f32", "vldrw.u32", "sxtb16", "ssat", "smc", "bls.w", "vaddva.s8",
                                      ".word", "le", "letp"])
def test_not_multiplies(mnemonic):
    assert not is_multiply(mnemonic)


def test_multiply_addresses_of_a_disassembly():
    disassembly = ("10000986:\tee31 0e62 \tvmul.f32\tq0, q0, r2\n"
                   "1000098a:\tfb20 5503 \tsmlad\tr5, r0, r3, r5\n"
                   "1000098e:\t2500      \tmovne\tr5, #0\n"
                   "10000990:\t0000      \t.word\t0x00000000\n"
                   "10000994:\tfb03 f202 \tmulne.w\tr2, r3, r2\n")
    assert multiply_addresses(disassembly) == [0x10000986, 0x1000098A, 0x10000994]


def fully_connected(depth: int, width: int, seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    weights = numpy_helper.from_array(rng.normal(size=(depth, width)).astype(np.float32), "w")
    bias = numpy_helper.from_array(rng.normal(size=(width,)).astype(np.float32), "b")
    graph = helper.make_graph([helper.make_node("Gemm", ["x", "w", "b"], ["y"])], "fc",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, depth])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, width])], [weights, bias])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


DEPTH, WIDTH = 64, 24
MACS = DEPTH * WIDTH


@pytest.fixture(scope="module")
def fc_model(tmp_path_factory):
    """A 64 x 24 FullyConnected (1,536 multiply-accumulates), its input and a profile of it."""
    directory = tmp_path_factory.mktemp("fc")
    path = str(directory / "fc.onnx")
    onnx.save(fully_connected(DEPTH, WIDTH), path)
    x = np.random.default_rng(1).normal(size=(1, DEPTH)).astype(np.float32)
    profiler = Profiler.for_model(path, CompileOptions())
    for _ in profiler.run([{"x": x}]):
        pass
    write_profile(str(directory / "fc.yaml"), profiler.profile)
    return path, str(directory / "fc.yaml"), x


def count(fc_model, board: str, int8: bool):
    path, profile, x = fc_model
    bundle = glowmlir.compile(path, quantization=QuantizationOptions(profile) if int8 else None,
                              target=target_for(board, "O3"))
    inputs = {"x": x}
    if int8:
        placeholder = bundle.layout.placeholder("x")
        inputs = {"x": x} if placeholder.quantization is None else {
            "x": quantize(x, QuantParams(*placeholder.quantization))}
    run = run_on_board(bundle, board, inputs, count_instructions=True)
    assert 0 < run.multiplies < run.instructions
    return run.multiplies


@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
@pytest.mark.parametrize("board, multiplies_per_mac", [
    ("mps2-an500", 1),  # M7 float: one VFMA.F32 per multiply-accumulate, nothing else multiplies
    ("mps2-an385", 1),  # M3 soft float: one UMULL inside each __aeabi_fmul
    ("mps3-an547", 1 / 4),  # M55: one VFMA.F32 on four lanes (Helium) per four
])
def test_float_fully_connected_multiplies_once_per_mac(fc_model, board, multiplies_per_mac):
    assert count(fc_model, board, int8=False) == MACS * multiplies_per_mac


@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
def test_int8_fully_connected_on_the_dsp_extension_does_two_macs_per_smlad(fc_model):
    """On the M7 the int8 kernel's SMLAD does two multiply-accumulates and its requantization
    one `SMMLAR` an output; the float input's quantize (`reciprocal-quantize`: one `VMLA.F32`
    an element, a `VDIV` only again near a half level) and the float output's dequantize (one
    `VMUL.F32` an output, in the entry function) multiply too: 768 + 24 + 64 + 24 = 880
    (disassembly of the M7 bundle; 816 with the quantize on `VDIV`s). On the M3 the generic
    kernel multiplies once per MAC."""
    m7 = count(fc_model, "mps2-an500", int8=True)
    assert m7 == MACS // 2 + WIDTH + DEPTH + WIDTH
    assert MACS <= count(fc_model, "mps2-an385", int8=True) <= MACS + 4 * WIDTH
