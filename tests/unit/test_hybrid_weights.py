"""Hybrid ("dynamic range") TFLite layers: int8 weights, float activations. Each compiles in the
float form (weights dequantized at compile time) or the int8 form (the levels kept, dequantized
by the kernel as it reads them), chosen by `glow-choose-hybrid-weights`; both give the float
layer's result, checked against ai-edge-litert on the host and on the Cortex-M7 board."""

from __future__ import annotations

import numpy as np
import pytest

import glowmlir
from glowmlir.cli.compile import parse_compile_options
from glowmlir.errors import GlowError
from glowmlir.runtime.boards import run_on_board, target_for
from glowmlir.transforms.choose_hybrid_weights import CODE_RESERVE
from tests.support import tflite_models as tm
from tests.support.tflite_hybrid import as_hybrid_kernels_quantize, hybrid_layer, quantizes_asymmetrically
from tests.unit.test_tflite_importer import saved

LAYERS = [("CONV_2D", True), ("CONV_2D", False), ("DEPTHWISE_CONV_2D", True), ("FULLY_CONNECTED", False),
          ("FULLY_CONNECTED", True)]
"""(operator, weights quantized per channel). TFLite's hybrid DEPTHWISE_CONV_2D takes per-channel
weights only."""


def _case_id(case) -> str:
    return f"{case[0]}-{'per-channel' if case[1] else 'per-tensor'}"


def _int8_form(bundle) -> bool:
    return "weight_scales" in bundle.ir["glowll"]


def _check_against_interpreter(bundle, hybrid: bytes, dequantized: bytes, run=None) -> None:
    """Ours equal the interpreter on the weights behind a DEQUANTIZE (float kernels), and are
    within its input-quantization error of its hybrid kernels."""
    for seed in range(3):
        inputs = tm.random_inputs(hybrid, seed=seed)
        ours = (run or bundle.run)(inputs)["y"].reshape(tm.run_reference(hybrid, inputs)["y"].shape)
        np.testing.assert_allclose(ours, tm.run_reference(dequantized, inputs)["y"], rtol=1e-4, atol=1e-5)
        interpreter = tm.run_reference(hybrid, inputs)["y"]
        assert np.abs(ours - interpreter).max() <= 0.02 * np.abs(interpreter).max()


@pytest.mark.parametrize("form", ["float", "int8"])
@pytest.mark.parametrize("case", LAYERS, ids=_case_id)
def test_hybrid_layer_in_either_form_matches_the_interpreter(case, form, tmp_path):
    opcode, per_channel = case
    hybrid = hybrid_layer(opcode, per_channel=per_channel)
    dequantized = hybrid_layer(opcode, dequantized_in_file=True, per_channel=per_channel)
    bundle = glowmlir.compile(saved(tmp_path, "hybrid", hybrid), hybrid_weights=form)
    float_bundle = bundle if form == "float" else glowmlir.compile(saved(tmp_path, "hybrid", hybrid),
                                                                   hybrid_weights="float")
    assert _int8_form(bundle) == (form == "int8")
    assert ("!quant.uniform" in bundle.ir["glow"]) == (form == "int8")
    if form == "int8":  # the levels (1 byte) and a scale per output channel instead of 4-byte weights
        assert bundle.layout.constant_size < float_bundle.layout.constant_size
    _check_against_interpreter(bundle, hybrid, dequantized)


@pytest.mark.parametrize("form", ["float", "int8"])
@pytest.mark.parametrize("opcode", ["CONV_2D", "FULLY_CONNECTED"])
def test_int4_hybrid_weights_in_either_form_match_the_interpreter(opcode, form, tmp_path):
    """INT4 weights (two to a byte in the file; the interpreter's hybrid CONV_2D and
    FULLY_CONNECTED take them) are read as int8 levels in [-8, 7]."""
    hybrid = hybrid_layer(opcode, bits=4)
    dequantized = hybrid_layer(opcode, dequantized_in_file=True, bits=4)
    bundle = glowmlir.compile(saved(tmp_path, "hybrid4", hybrid), hybrid_weights=form)
    assert _int8_form(bundle) == (form == "int8")
    _check_against_interpreter(bundle, hybrid, dequantized)


@pytest.mark.parametrize("case", LAYERS, ids=_case_id)
def test_interpreter_hybrid_kernels_quantize_their_input_on_the_fly(case):
    """What ours differ from the interpreter by, and why: its hybrid kernels are the float layer
    run on its input quantized per batch (symmetric, or asymmetric in the per-channel convolution
    kernels), to float rounding."""
    opcode, per_channel = case
    hybrid = hybrid_layer(opcode, per_channel=per_channel)
    dequantized = hybrid_layer(opcode, dequantized_in_file=True, per_channel=per_channel)
    asymmetric = quantizes_asymmetrically(opcode, per_channel)
    for seed in range(3):
        x = tm.random_inputs(hybrid, seed=seed)["x"]
        interpreter = tm.run_reference(hybrid, {"x": x})["y"]
        emulated = tm.run_reference(dequantized, {"x": as_hybrid_kernels_quantize(x, asymmetric)})["y"]
        np.testing.assert_allclose(emulated, interpreter, rtol=0, atol=2e-6 * np.abs(interpreter).max())


def _check_equal_to_hybrid_kernels(hybrid: bytes, run) -> None:
    for seed in range(3):
        inputs = tm.random_inputs(hybrid, seed=seed)
        interpreter = tm.run_reference(hybrid, inputs)["y"]
        ours = run(inputs)["y"].reshape(interpreter.shape)
        np.testing.assert_allclose(ours, interpreter, rtol=0, atol=1e-6 * np.ptp(interpreter))


@pytest.mark.parametrize("case", LAYERS, ids=_case_id)
def test_quantized_hybrid_inputs_give_the_interpreters_hybrid_kernels(case, tmp_path):
    """-tflite-hybrid-inputs=quantized: each layer's input quantized per batch as TFLite's
    hybrid kernels quantize it; the interpreter's results to float rounding (int8 form; the
    per-channel convolution in the float form too)."""
    opcode, per_channel = case
    hybrid = hybrid_layer(opcode, per_channel=per_channel)
    forms = ["int8", "float"] if case == ("CONV_2D", True) else ["int8"]
    for form in forms:
        bundle = glowmlir.compile(saved(tmp_path, "hybrid", hybrid), hybrid_weights=form,
                                  tflite_hybrid_inputs="quantized")
        _check_equal_to_hybrid_kernels(hybrid, bundle.run)


def test_auto_form_without_a_flash_size_follows_the_estimated_cost(tmp_path):
    """A convolution of output rows 8 wide or more goes int8 (its kernel dequantizes a weight
    once per output row), one of rows 5 wide and a FullyConnected stay float."""
    wide = glowmlir.compile(saved(tmp_path, "wide", hybrid_layer("CONV_2D", size=8)))
    narrow = glowmlir.compile(saved(tmp_path, "narrow", hybrid_layer("CONV_2D", size=5)))
    fully_connected = glowmlir.compile(saved(tmp_path, "fc", hybrid_layer("FULLY_CONNECTED", size=8)))
    assert (_int8_form(wide), _int8_form(narrow), _int8_form(fully_connected)) == (True, False, False)


def test_auto_form_keeps_int8_weights_where_float_ones_do_not_fit_the_flash(tmp_path):
    path = saved(tmp_path, "fc", hybrid_layer("FULLY_CONNECTED", size=8))  # 6 x 256 weights: 6,144 bytes in float
    assert not _int8_form(glowmlir.compile(path, flash_size=CODE_RESERVE + 8192))
    assert _int8_form(glowmlir.compile(path, flash_size=CODE_RESERVE + 4096))
    # -board gives the flash size: 8 MB on the i.MX RT1060 EVK
    _, options = parse_compile_options([f"-model={path}", "-board=imxrt1060", "-hybrid-weights=int8"])
    assert (options.flash_size, options.hybrid_weights) == (8 << 20, "int8")


def test_bad_hybrid_options_are_one_clear_error(tmp_path):
    path = saved(tmp_path, "fc", hybrid_layer("FULLY_CONNECTED"))
    with pytest.raises(GlowError, match=r"tflite_hybrid_inputs='int8' \(-tflite-hybrid-inputs\): expected float or "
                                        r"quantized"):
        glowmlir.compile(path, tflite_hybrid_inputs="int8")
    with pytest.raises(GlowError, match=r"hybrid_weights='int4' \(-hybrid-weights\): expected auto, float or int8"):
        glowmlir.compile(path, hybrid_weights="int4")
    with pytest.raises(GlowError, match=r"flash_size=0 \(-flash-size\): expected a positive number of bytes"):
        glowmlir.compile(path, flash_size=0)


@pytest.mark.parametrize("case", [("CONV_2D", True), ("DEPTHWISE_CONV_2D", True), ("FULLY_CONNECTED", False)],
                         ids=_case_id)
def test_int8_form_on_the_cortex_m7_board(case, tmp_path):
    """The dequantizing kernels built for the Cortex-M7 (hard float) give the interpreter's
    float-kernel result under QEMU."""
    opcode, per_channel = case
    hybrid = hybrid_layer(opcode, per_channel=per_channel)
    dequantized = hybrid_layer(opcode, dequantized_in_file=True, per_channel=per_channel)
    bundle = glowmlir.compile(saved(tmp_path, "hybrid", hybrid), hybrid_weights="int8",
                              target=target_for("mps2-an500", "Os"))
    assert _int8_form(bundle)
    _check_against_interpreter(bundle, hybrid, dequantized,
                               run=lambda inputs: run_on_board(bundle, "mps2-an500", inputs).outputs)


def test_quantized_hybrid_inputs_on_the_cortex_m7_board(tmp_path):
    """The input quantization's ops (reductions, floor, sign, clips) built for the Cortex-M7:
    a per-channel hybrid convolution (asymmetric input quantization) in the int8 form equals
    the interpreter's hybrid kernels under QEMU."""
    hybrid = hybrid_layer("CONV_2D", per_channel=True)
    bundle = glowmlir.compile(saved(tmp_path, "hybrid", hybrid), hybrid_weights="int8",
                              tflite_hybrid_inputs="quantized", target=target_for("mps2-an500", "Os"))
    _check_equal_to_hybrid_kernels(hybrid, lambda inputs: run_on_board(bundle, "mps2-an500", inputs).outputs)
