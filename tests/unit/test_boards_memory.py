"""Where a program's weights go on the Cortex-M boards: the code memory when they fit beside
the code, else the board's big RAM (PSRAM, DDR), and a one-line error naming the board and
the sizes when the emulated machine does not have the memory (glowmlir/runtime/boards.py)."""

from __future__ import annotations

import shutil

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import glowmlir
from glowmlir.errors import GlowError
from glowmlir.runtime.boards import BOARDS, MemoryNeeds, memory_sizes, memory_values, run_on_board, target_for

QEMU = shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")
MB = 1 << 20


def test_the_boards_memories_are_the_emulated_machines():
    """QEMU's maps: 4 MB of SSRAM as code, 4 MB of RAM, 16 MB of PSRAM (MPS2); the AN547's
    512 KB TCMs and 16 MB of DDR for the weights."""
    assert memory_sizes(BOARDS["mps2-an500"]) == {"CODE": 4 * MB, "RAM": 4 * MB, "BIG": 16 * MB}
    assert memory_sizes(BOARDS["mps3-an547"]) == {"CODE": 512 << 10, "RAM": 512 << 10, "BIG": 16 * MB, "DDR": 16 * MB}


def test_weights_stay_in_the_code_memory_while_they_fit_beside_the_code():
    needs = MemoryNeeds(code=300_000, ram=70_000, activations=500_000, weights=3_000_000)
    assert memory_values(BOARDS["mps2-an500"], needs)["WEIGHTS_REGION"] == "CODE"


@pytest.mark.parametrize("board", ["mps2-an385", "mps2-an386", "mps2-an500", "mps2-an505"])
def test_weights_too_big_for_the_code_memory_go_to_the_big_ram(board):
    """MobileNetV2's float weights (6.7 MB) with its activations."""
    needs = MemoryNeeds(code=400_000, ram=70_000, activations=700_000, weights=7_000_000)
    assert memory_values(BOARDS[board], needs)["WEIGHTS_REGION"] == "BIG"


def test_the_m55_keeps_its_weights_in_ddr():
    needs = MemoryNeeds(code=300_000, ram=70_000, activations=500_000, weights=7_000_000)
    assert memory_values(BOARDS["mps3-an547"], needs)["WEIGHTS_REGION"] == "DDR"


def test_weights_the_board_has_no_room_for_are_a_one_line_error():
    needs = MemoryNeeds(code=400_000, ram=70_000, activations=700_000, weights=17_000_000)
    with pytest.raises(GlowError, match=r"^mps2-an500: the program does not fit the board's memory: activations "
                                        r"700,000 B \+ weights 17,000,000 B > the 16,777,216 B of its big RAM$"):
        memory_values(BOARDS["mps2-an500"], needs)


def test_a_copy_of_the_weights_in_ram_counts_too():
    """-weights-in=ram: 7 MB in PSRAM and their 7 MB copy, with 3 MB of activations: 17 MB."""
    needs = MemoryNeeds(code=400_000, ram=70_000, activations=3_000_000, weights=7_000_000, weights_copy=True)
    with pytest.raises(GlowError, match=r"activations 3,000,000 B \+ weights copied to RAM 7,000,000 B \+ "
                                        r"weights 7,000,000 B > the 16,777,216 B of its big RAM"):
        memory_values(BOARDS["mps2-an500"], needs)
    assert memory_values(BOARDS["mps2-an500"], MemoryNeeds(400_000, 70_000, 1_000_000, 7_000_000, True))[
        "WEIGHTS_REGION"] == "BIG"


def test_the_m55s_code_memory_holds_a_large_bundle_until_its_code_alone_is_over():
    """The AN547's 512 KB ITCM: 400 KB of code link (the harness's 35 KB on top), 530 KB do
    not; and 17 MB of weights are over its 16 MB of DDR."""
    # the weights go to DDR: 1,000 B beside 400,000 B of code and the harness's 128 KB do not fit
    assert memory_values(BOARDS["mps3-an547"], MemoryNeeds(400_000, 70_000, 10_000, 1_000))["WEIGHTS_REGION"] == "DDR"
    with pytest.raises(GlowError, match=r"^mps3-an547: .*: bundle code and inputs 530,000 B > the 524,288 B of its "
                                        r"code memory$"):
        memory_values(BOARDS["mps3-an547"], MemoryNeeds(530_000, 70_000, 10_000, 1_000))
    with pytest.raises(GlowError, match=r"weights 17,000,000 B > the 16,777,216 B of its DDR$"):
        memory_values(BOARDS["mps3-an547"], MemoryNeeds(400_000, 70_000, 10_000, 17_000_000))


def test_too_much_mutable_data_names_the_ram():
    needs = MemoryNeeds(code=400_000, ram=5 * MB, activations=0, weights=1_000)
    with pytest.raises(GlowError, match=r"mutable data, stack and heap 5,242,880 B > the 4,194,304 B of its RAM$"):
        memory_values(BOARDS["mps2-an386"], needs)


def wide_fully_connected(inputs: int, outputs: int, seed: int = 0) -> tuple[onnx.ModelProto, np.ndarray, np.ndarray]:
    """Gemm of `inputs` x `outputs` float weights (random): the model, its weights and bias."""
    rng = np.random.default_rng(seed)
    weights = rng.normal(0, 1 / np.sqrt(inputs), (inputs, outputs)).astype(np.float32)
    bias = rng.normal(0, 0.1, outputs).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["data", "w", "b"], ["out"])], "wide_fc",
        [helper.make_tensor_value_info("data", onnx.TensorProto.FLOAT, [1, inputs])],
        [helper.make_tensor_value_info("out", onnx.TensorProto.FLOAT, [1, outputs])],
        [numpy_helper.from_array(weights, "w"), numpy_helper.from_array(bias, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), weights, bias


@pytest.mark.skipif(not QEMU, reason="needs qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
@pytest.mark.parametrize("board, weights_in", [("mps2-an500", "flash"), ("mps2-an386", "ram")])
def test_weights_over_the_code_memory_run_from_psram(board, weights_in, tmp_path):
    """4.6 MB of float weights (1,024 x 1,120): over the 4 MB code memory, so in PSRAM (with
    -weights-in=ram, their copy too); the outputs match numpy's."""
    model, weights, bias = wide_fully_connected(1024, 1120)
    path = str(tmp_path / "wide_fc.onnx")
    onnx.save(model, path)
    bundle = glowmlir.compile(path, target=target_for(board, "O3"))
    assert bundle.layout.constant_size > 4 * MB
    data = np.random.default_rng(1).normal(size=(1, 1024)).astype(np.float32)
    outputs = run_on_board(bundle, board, {"data": data}, weights_in).outputs
    np.testing.assert_allclose(outputs["out"], data @ weights + bias, rtol=1e-4, atol=1e-4)


def test_a_full_linker_region_is_named_in_the_link_error():
    from glowmlir.runtime.boards import compiler_error

    stderr = ("/usr/bin/arm-none-eabi-ld: prog1.elf section `.weights' will not fit in region `CODE'\n"
              "/usr/bin/arm-none-eabi-ld: region `CODE' overflowed by 2843328 bytes\n"
              "collect2: error: ld returned 1 exit status\n")
    assert compiler_error(stderr) == ("/usr/bin/arm-none-eabi-ld: prog1.elf section `.weights' will not fit in region "
                                      "`CODE'; /usr/bin/arm-none-eabi-ld: region `CODE' overflowed by 2843328 bytes; "
                                      "collect2: error: ld returned 1 exit status")
