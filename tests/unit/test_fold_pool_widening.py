"""`glowll-fold-pool-widening` (issue 42): a squeeze-excitation block's global average pool
reads its int8 input as it is, the exact int16 widening folded into it (`pool_widening`),
and the outputs are the very bits of the op-by-op build (`memory_fusion=False`: the widening
a pass of its own), on the host and on the Cortex-M4 and M7. Random weights and inputs."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import glowmlir
from glowmlir.runtime.boards import run_on_board, target_for
from tests.support.profiles import profiled

SHAPE = (1, 3, 12, 10)


def squeeze_excitation_model(seed: int) -> onnx.ModelProto:
    """Conv 3x3 (3 -> 16) + Relu, a squeeze-excitation block (GlobalAveragePool, Conv 1x1
    16 -> 4 + Relu, Conv 1x1 4 -> 16, HardSigmoid, Mul), Conv 1x1 (16 -> 8), then
    GlobalAveragePool ("y"); random weights. Both averages are of a much finer profiled
    range than their inputs: taken on the input widened to int16."""
    rng = np.random.default_rng(seed)
    weights = {"w1": rng.normal(0, 0.5, (16, 3, 3, 3)), "b1": rng.normal(0, 0.1, 16),
               "ws": rng.normal(0, 0.5, (4, 16, 1, 1)), "bs": rng.normal(0, 0.1, 4),
               "we": rng.normal(0, 0.5, (16, 4, 1, 1)), "be": rng.normal(0, 0.1, 16),
               "w2": rng.normal(0, 0.3, (8, 16, 1, 1)), "b2": rng.normal(0, 0.1, 8)}
    node = helper.make_node
    nodes = [node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]), node("Relu", ["c1"], ["r1"]),
             node("GlobalAveragePool", ["r1"], ["p"]), node("Conv", ["p", "ws", "bs"], ["s"]),
             node("Relu", ["s"], ["sr"]), node("Conv", ["sr", "we", "be"], ["e"]),
             node("HardSigmoid", ["e"], ["gate"]), node("Mul", ["r1", "gate"], ["excited"]),
             node("Conv", ["excited", "w2", "b2"], ["c2"]), node("GlobalAveragePool", ["c2"], ["y"])]
    graph = helper.make_graph(nodes, "squeeze_excitation", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                          SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 1, 1])],
                              [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    directory = tmp_path_factory.mktemp("fold_pool_widening")
    path = str(directory / "squeeze_excitation.onnx")
    onnx.save(squeeze_excitation_model(5), path)
    rng = np.random.default_rng(6)
    samples = [{"x": rng.normal(size=SHAPE).astype(np.float32)} for _ in range(8)]
    return path, profiled(path, samples[:5], str(directory / "profile.yaml")), samples[5:]


def widening_lines(bundle) -> list[str]:
    """The bundle's rescales to int16 (the widenings before the average pools)."""
    return [line for line in bundle.ir["glowll"].splitlines()
            if '"rescale_quantized"' in line and "uniform<i16" in line.split("memref", 2)[1]]


def folded_and_apart(model, target=None):
    path, quantization, _ = model
    options = {} if target is None else {"target": target}
    folded = glowmlir.compile(path, quantization=quantization, **options)
    apart = glowmlir.compile(path, quantization=quantization, memory_fusion=False, **options)
    pools = [line for line in folded.ir["glowll"].splitlines() if "glowll.avg_pool" in line]
    # the squeeze-excitation pool "p" (the last, "y", fuses into its convolution on DSP cores)
    assert any('name = "p"' in line for line in pools) and all("pool_widening = 8" in line for line in pools), pools
    assert not widening_lines(folded)
    assert "pool_widening" not in apart.ir["glowll"]
    assert len(widening_lines(apart)) == 2
    return folded, apart


def test_host_pools_read_int8_levels_with_the_same_bits(model):
    folded, apart = folded_and_apart(model)
    for sample in model[2]:
        expected, actual = apart.run(sample), folded.run(sample)
        np.testing.assert_array_equal(actual["y"], expected["y"])
    assert folded.layout.activations_size <= apart.layout.activations_size


@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an500"])
def test_board_pools_read_int8_levels_with_the_same_bits(model, board):
    folded, apart = folded_and_apart(model, target_for(board))
    for sample in model[2]:
        np.testing.assert_array_equal(run_on_board(folded, board, sample).outputs["y"],
                                      run_on_board(apart, board, sample).outputs["y"])
