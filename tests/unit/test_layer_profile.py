"""`glow-run -profile`: per-layer instructions on an emulated board, per-layer time on the host."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest

import glowmlir
from glowmlir.compiler import CompileOptions
from glowmlir.datasets import ImageOptions, load_image
from glowmlir.errors import GlowError
from glowmlir.layer_profile import parse_profile_option, profile_on_board, profile_on_host, profiling_build
from glowmlir.runtime.boards import run_on_board, target_for
from tests.support.forks import run_module
from tests.support.models import LENET, random_inputs, small_convnet

IMAGE = os.path.join(os.path.dirname(LENET), "images", "3900_7.png")
needs_qemu = pytest.mark.skipif(shutil.which("qemu-system-arm") is None or shutil.which("arm-none-eabi-gcc") is None,
                                reason="qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh) are needed")


def lenet_inputs() -> dict[str, np.ndarray]:
    return {"data": load_image(IMAGE, (1, 1, 28, 28), ImageOptions.parse("0to1", "NCHW", "RGB"))}


def glowll_nodes(bundle) -> list[tuple[str, str]]:
    """(node name, kind) of each instruction of the bundle's glowll stage, read from its text."""
    return re.findall(r"glowll\.(\w+) [^\n]*\bname = \"([^\"]+)\"", bundle.ir["glowll"])


def board_options(board: str) -> CompileOptions:
    return CompileOptions(target=target_for(board))


def cli(*arguments: str, cwd: str | None = None) -> subprocess.CompletedProcess:
    return run_module("glowmlir.cli.run", f"-model={LENET}", f"-input={IMAGE}", *arguments, cwd=cwd,
                      env={**os.environ, "COLUMNS": "120"})


@pytest.fixture(scope="module")
def board_profile():
    """LeNet on the Cortex-M7 board: the normal build's run and the profile."""
    normal_bundle = glowmlir.compile(LENET, target=target_for("mps2-an500"))
    normal = run_on_board(normal_bundle, "mps2-an500", lenet_inputs(), count_instructions=True)
    return normal_bundle, normal, profile_on_board(LENET, "mps2-an500", lenet_inputs(), normal.instructions,
                                                          board_options("mps2-an500"))


@needs_qemu
def test_board_rows_sum_exactly_to_the_instructions_insncount_counts(board_profile):
    _, normal, profile = board_profile
    amounts = [row.amount for row in profile.rows]
    assert all(isinstance(amount, int) and amount >= 0 for amount in amounts)
    # The same profiling build counted whole by insncount.c, the plugin glow-run's count uses.
    bundle, _ = profiling_build(LENET, "kernels", board_options("mps2-an500"))
    assert sum(amounts) == profile.total == run_on_board(bundle, "mps2-an500", lenet_inputs(),
                                                         count_instructions=True).instructions
    assert profile.reference == normal.instructions
    assert f"{sum(amounts):,} (the sum of the rows)" in profile.summary()
    assert f"{normal.instructions:,}" in profile.summary()


@needs_qemu
def test_board_profile_has_every_node_and_the_same_outputs(board_profile):
    normal_bundle, normal, profile = board_profile
    layers = [(row.kind, row.name) for row in profile.rows if row.layer]
    assert layers == glowll_nodes(normal_bundle)
    assert [name for _, name in layers] == ["_conv1_Conv", "_conv2_Conv", "_fc1_Gemm", "_fc2_Gemm", "_Softmax"]
    assert profile.outputs.keys() == normal.outputs.keys()
    for name, value in normal.outputs.items():
        assert profile.outputs[name].tobytes() == value.tobytes()
    assert int(np.argmax(profile.outputs["softmax"])) == 7


@needs_qemu
def test_board_profile_is_dominated_by_the_convolutions(board_profile):
    _, _, profile = board_profile
    layers = {row.name: row.amount for row in profile.rows if row.layer}
    assert max(layers, key=layers.get) == "_conv2_Conv"
    assert layers["_conv1_Conv"] + layers["_conv2_Conv"] > 0.6 * profile.total
    others = [row for row in profile.rows if not row.layer]
    assert [row.name for row in others] == ["(entry point)", "(harness)"]
    assert 0 < sum(row.amount for row in others) < 200  # calls and a loop, no kernel work


@needs_qemu
def test_soft_float_helpers_count_for_the_layer_that_calls_them(tmp_path):
    """On the Cortex-M3 every float operation is a call to __aeabi_f*: outside every layer's
    function, they still count for the layers, and the entry point stays a few calls."""
    path = str(tmp_path / "convnet.onnx")
    onnx.save(small_convnet(), path)
    inputs = random_inputs(onnx.load(path), seed=3)
    bundle, layers = profiling_build(path, "kernels", board_options("mps2-an385"))
    profile = profile_on_board(path, "mps2-an385", inputs, 0, board_options("mps2-an385"))
    from glowmlir.elf import function_ranges
    from glowmlir.lowering.glowll_to_llvm import layer_kernel_name

    convolution = next(i for i, layer in enumerate(layers) if layer.kind == "convolution")
    kernel = function_ranges(bundle.object_code)[layer_kernel_name(bundle.name, convolution, "convolution")]
    assert kernel[0] % 2 == 0  # Thumb's bit 0 cleared
    # Every instruction is in some row (the total is insncount.c's), and the rows that are no
    # layer hold a few calls each: the helpers' instructions are in the layers' rows.
    assert profile.total == run_on_board(bundle, "mps2-an385", inputs, count_instructions=True).instructions
    assert sum(row.amount for row in profile.rows if not row.layer) < 20 * len(layers)
    assert profile.rows[convolution].amount > 0.3 * profile.total


def test_host_profile_times_every_layer(tmp_path):
    normal = glowmlir.compile(LENET)
    expected = normal.run(lenet_inputs())
    profile = profile_on_host(LENET, lenet_inputs(), normal.runner, CompileOptions())
    assert [(row.kind, row.name) for row in profile.rows] == glowll_nodes(normal)
    assert all(row.layer and row.amount > 0 for row in profile.rows)
    assert profile.repeats >= 11 and profile.reference > 0
    assert profile.total == pytest.approx(sum(row.amount for row in profile.rows))
    for name, value in expected.items():
        assert profile.outputs[name].tobytes() == value.tobytes()
    *cells, footer = re.findall(r"│ +(<?\d+\.\d)% │", _printed(profile))  # the share column, "<0.1" if small
    shares = [0.05 if cell.startswith("<") else float(cell) for cell in cells]
    assert len(shares) == len(profile.rows) and footer == "100.0"
    assert sum(shares) == pytest.approx(100, abs=0.05 * len(profile.rows))


def _printed(profile) -> str:
    import io

    text = io.StringIO()
    profile.print(text)
    return text.getvalue()


def test_glow_run_profile_writes_the_picture_with_one_bar_per_layer(tmp_path):
    picture = tmp_path / "pictures" / "lenet.svg"
    result = cli(f"-profile={picture}")
    assert result.returncode == 0, result.stderr
    assert "softmax argmax: 7" in result.stdout
    assert re.search(r"│ 1 │ _conv2_Conv +│ convolution +│ +[\d,.]+ │ +\d+\.\d% │ █", result.stdout)
    assert "the sum of the layers' median times" in result.stdout
    svg = picture.read_text()
    assert svg.count('<g id="layer-') == 5 and 'id="other-' not in svg
    assert [name for name in os.listdir(picture.parent)] == ["lenet.svg"]  # nothing staged left behind


def test_glow_run_profile_bare_prints_the_table_only(tmp_path):
    result = cli("-profile", cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "lenet_mnist on host: µs per layer" in result.stdout and "profile picture" not in result.stdout
    assert os.listdir(tmp_path) == []


def test_glow_run_profile_refuses_another_picture_format_before_compiling(tmp_path):
    result = cli(f"-profile={tmp_path / 'lenet.pdf'}", "-board=mps2-an500")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == (f"glow-run: error: -profile=\"{tmp_path / 'lenet.pdf'}\": expected true, false "
                                     f"or a picture file ending .svg or .png")
    assert os.listdir(tmp_path) == []


def test_profile_option_values(tmp_path):
    assert parse_profile_option(None) == (False, None) == parse_profile_option("false")
    assert parse_profile_option("true") == (True, None)
    assert parse_profile_option("out.PNG") == (True, "out.PNG")
    (tmp_path / "taken.svg").mkdir()
    with pytest.raises(GlowError, match="taken.svg\": is a directory"):
        parse_profile_option(str(tmp_path / "taken.svg"))


def test_profiling_build_kernels_are_separate_and_not_inlined():
    bundle = glowmlir.compile(LENET, target=target_for("mps2-an500"), layer_profile="kernels", keep_llvm_ir=True)
    ir = bundle.ir["llvm-ir"]
    kernels = re.findall(r"^define .*@\"?(lenet_mnist_layer\d+_\w+)\"?\(.*#(\d+)", ir, re.MULTILINE)
    assert [name for name, _ in kernels] == ["lenet_mnist_layer0_convolution", "lenet_mnist_layer1_convolution",
                                             "lenet_mnist_layer2_fully_connected",
                                             "lenet_mnist_layer3_fully_connected", "lenet_mnist_layer4_softmax"]
    for _, group in kernels:
        assert "noinline" in re.search(rf"^attributes #{group} = {{(.*)}}", ir, re.MULTILINE).group(1)
    normal = glowmlir.compile(LENET, target=target_for("mps2-an500"), keep_llvm_ir=True).ir["llvm-ir"]
    assert "noinline" not in normal and re.findall(r"^define .*", normal, re.MULTILINE)[0].count("@") == 1
    with pytest.raises(GlowError, match="layer_profile='fast'"):
        glowmlir.compile(LENET, layer_profile="fast")


def test_long_node_names_keep_their_op_and_last_path_components():
    from glowmlir.layer_profile import SHORT_NAME, short_name

    tflite = ("model/block_3_depthwise/depthwise;model/block_3_depthwise_BN/FusedBatchNormV3;"
              "model/block_3_depthwise_relu/Relu6;model/block_3_project/Conv2D" + ";x" * 40)
    assert short_name(tflite) == "model/block_3_depthwise/depthwise;…"
    assert short_name("sequential_1/" * 4 + "depthwise_conv2d_12/depthwise;a") == "…/depthwise_conv2d_12/depthwise"
    assert short_name("_conv1_Conv") == "_conv1_Conv"
    assert len(short_name("y" * 300)) == SHORT_NAME and short_name("y" * 300).startswith("…")


@needs_qemu
def test_glow_run_cycles_and_the_profile_in_cycles_at_160_columns(tmp_path):
    """-cycles prints the estimate beside the instruction count; -profile then prices each
    layer in cycles, its numbers whole at 160 columns, and the cycles sum to the total."""
    result = subprocess.run([sys.executable, "-m", "glowmlir.cli.run", f"-model={LENET}", f"-input={IMAGE}",
                             "-board=mps2-an386", "-cycles", "-profile"], capture_output=True, text=True,
                            env={**os.environ, "COLUMNS": "160"})
    assert result.returncode == 0, result.stderr
    instructions = int(re.search(r"instructions per inference on mps2-an386: (\d+)", result.stdout).group(1))
    line = re.search(r"estimated core cycles at zero wait states per inference on mps2-an386: ([\d,]+) "
                     r"\(range ([\d,]+)-([\d,]+)\), (\d\.\d\d) cycles/instruction \[Cortex-M4: .*P=1 \(range 1-3\)\]",
                     result.stdout)
    cycles, low, high = (int(group.replace(",", "")) for group in line.groups()[:3])
    assert instructions < low == cycles < high
    assert float(line.group(4)) == pytest.approx(cycles / instructions, abs=0.006)
    rows = re.findall(r"│ +\d │ (\S+) +│ \w+ +│ +([\d,]+) │ +([\d,]+) │", result.stdout)
    assert [name for name, _, _ in rows] == ["_conv1_Conv", "_conv2_Conv", "_fc1_Gemm", "_fc2_Gemm", "_Softmax"]
    total = re.search(r"│ +│ total +│ +│ +([\d,]+) │ +([\d,]+) │", result.stdout)
    layer_cycles = sum(int(c.replace(",", "")) for _, _, c in rows)
    assert 0.99 * int(total.group(2).replace(",", "")) < layer_cycles <= int(total.group(2).replace(",", ""))
    assert "-use-cmsis" not in result.stderr


def test_glow_run_cycles_on_the_host_is_refused():
    result = cli("-cycles")
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == ("glow-run: error: -cycles: cycles are estimated on the "
                                                      "Cortex-M boards only, not on the host")


def test_glow_run_flash_wait_states_needs_cycles():
    result = cli("-flash-wait-states=1")
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == "glow-run: error: -flash-wait-states needs -cycles"
