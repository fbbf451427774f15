"""A convolution's int16-widened global average pool fused into it (`glow-fuse-conv-pool`,
`pool_widening`): an int8 average whose profiled range is much finer than its input's is
taken on the input widened exactly to int16 (`quantized_conversion._averaged`); after a convolution,
the widening and the pool become the convolution's, whose kernels sum its int8 levels and
average 256 times the sum. The outputs must be bit-identical to the unfused build's
(`memory_fusion=False`: the convolution, the int16 widening and the int16 pool apart) on
every kind of Cortex-M kernel: the M3's generic ones, the DSP gathered product (M4, M7,
M33) and Helium's (M55). Hosts and size-first builds keep them apart."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import glowmlir
from glowmlir.compiler import QuantizationOptions
from glowmlir.runtime.boards import run_on_board, target_for
from tests.support.models import ds_cnn_style

SHAPE = (1, 3, 9, 7)


def pointwise_pool_model(seed: int, pool: str) -> onnx.ModelProto:
    """Conv 3x3 (3 -> 16) + Relu, Conv 1x1 (16 -> 16) + Relu, then a global average (`pool`:
    "GlobalAveragePool" or "ReduceMean" over H, W, as PyTorch exports it) and Gemm to 5
    logits; random weights."""
    rng = np.random.default_rng(seed)
    weights = {"w1": rng.normal(0, 0.5, (16, 3, 3, 3)), "b1": rng.normal(0, 0.1, 16),
               "w2": rng.normal(0, 0.3, (16, 16, 1, 1)), "b2": rng.normal(0, 0.1, 16),
               "fw": rng.normal(0, 0.3, (5, 16)), "fb": rng.normal(0, 0.1, 5)}
    if pool == "GlobalAveragePool":
        average = [helper.make_node("GlobalAveragePool", ["r2"], ["g"])]
    else:
        average = [helper.make_node("ReduceMean", ["r2"], ["g"], axes=[2, 3], keepdims=1)]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"]), helper.make_node("Relu", ["c2"], ["r2"]),
             *average, helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "pointwise_pool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
                              [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def profiled(tmp_path, model: onnx.ModelProto, name: str) -> tuple[str, str]:
    from bench.bench_cortex_m import random_profile

    path = str(tmp_path / f"{name}.onnx")
    onnx.save(model, path)
    return path, random_profile(path, str(tmp_path))


def fused_and_unfused(path: str, profile: str, board: str):
    options = QuantizationOptions(profile)
    return (glowmlir.compile(path, quantization=options, target=target_for(board)),
            glowmlir.compile(path, quantization=options, memory_fusion=False, target=target_for(board)))


def outputs_of(bundle, board: str, inputs: list[dict]) -> list[dict]:
    return [run_on_board(bundle, board, sample).outputs for sample in inputs]


def assert_fused(fused, unfused) -> None:
    """The fused build's convolution averages (`pool_widening`), no int16 pool is left, and
    its activations are smaller; the unfused one keeps the widening and the int16 pool."""
    assert "pool_widening = 8" in fused.ir["glowll"]
    assert "glowll.avg_pool" not in fused.ir["glowll"]
    assert "pool_widening" not in unfused.ir["glowll"]
    assert "glowll.avg_pool" in unfused.ir["glowll"] and "i16:f32" in unfused.ir["glowll"]
    assert fused.layout.activations_size < unfused.layout.activations_size


@pytest.mark.parametrize("board", ["mps2-an385", "mps2-an386", "mps2-an500", "mps2-an505", "mps3-an547"])
@pytest.mark.parametrize("pool", ["GlobalAveragePool", "ReduceMean"])
def test_widened_pool_fuses_bit_identically(tmp_path, board, pool):
    """Cortex-M3 (the generic kernel), M4, M7, M33 (the DSP gathered product) and M55
    (Helium's column kernel): the fused build's logits are those of the unfused one on
    random inputs."""
    path, profile = profiled(tmp_path, pointwise_pool_model(7, pool), "pointwise_pool")
    fused, unfused = fused_and_unfused(path, profile, board)
    assert_fused(fused, unfused)
    rng = np.random.default_rng(8)
    inputs = [{"x": rng.normal(size=SHAPE).astype(np.float32)} for _ in range(3)]
    for expected, actual in zip(outputs_of(unfused, board, inputs), outputs_of(fused, board, inputs), strict=True):
        np.testing.assert_array_equal(actual["y"], expected["y"])


@pytest.mark.parametrize("board,level", [(None, "O3"), ("mps2-an500", "Os"), ("mps2-an385", "Oz")])
def test_host_and_size_first_builds_keep_the_widened_pool_apart(tmp_path, board, level):
    """On a host (None; its pooled convolutions run row by row) and at -Os/-Oz (where the
    last pointwise convolution keeps the kernel its three equal-shaped partners share) the
    pool stays a layer of its own (`widened-averages=false`), the int16 widening folded into
    it (`glowll-fold-pool-widening`: it sums the int8 levels, `pool_widening = 8`)."""
    path, profile = profiled(tmp_path, ds_cnn_style(seed=3), "dscnn")
    target = {} if board is None else {"target": target_for(board, level)}
    bundle = glowmlir.compile(path, quantization=QuantizationOptions(profile), **target)
    lines = bundle.ir["glowll"].splitlines()
    assert not any("pool_widening" in line for line in lines if "glowll.convolution" in line)
    pools = [line for line in lines if "glowll.avg_pool" in line]
    assert len(pools) == 1 and "pool_widening = 8" in pools[0] and "uniform<i8" in pools[0].rsplit("memref", 1)[1]
    rescales = [line.split("memref", 2)[1] for line in lines if '"rescale_quantized"' in line]
    assert len(rescales) == 1 and "1x64x1x1x!quant.uniform<i8" in rescales[0]  # the average's, to int8


@pytest.mark.parametrize("board", ["mps2-an500", "mps3-an547"])
def test_ds_cnn_pointwise_pool_fuses_bit_identically(tmp_path, board):
    """The DS-CNN-style net: its last pointwise convolution takes the widening and the 25x5
    int16 pool (its activations 24,000 -> 16,000 B), the logits as the unfused build's on
    random inputs, on the Cortex-M7 (the DSP gathered product) and the M55 (64 taps:
    Helium's dot products, arm-mve-im2col)."""
    path, profile = profiled(tmp_path, ds_cnn_style(seed=3), "dscnn")
    fused, unfused = fused_and_unfused(path, profile, board)
    assert_fused(fused, unfused)
    assert (unfused.layout.activations_size, fused.layout.activations_size) == (24_000, 16_000)
    rng = np.random.default_rng(9)
    inputs = [{"data": rng.normal(size=(1, 1, 49, 10)).astype(np.float32)} for _ in range(2)]
    for expected, actual in zip(outputs_of(unfused, board, inputs), outputs_of(fused, board, inputs), strict=True):
        np.testing.assert_array_equal(actual["logits"], expected["logits"])


def test_unfusing_a_widened_pool_restores_the_widening():
    """`glow-choose-conv-pool-kernels` (-use-cmsis) may split a fused convolution back: a
    widening pool's comes back as the int8 convolution, the exact int16 widening and the
    int16 pool, the ops and types `glow-fuse-conv-pool` took (tests/lit/fuse_widened_average.mlir)."""
    from pathlib import Path

    from xdsl.context import Context
    from xdsl.dialects.builtin import Builtin
    from xdsl.parser import Parser

    from glowmlir.backends.cmsis_nn.choose_conv_pool_kernels import unfuse
    from glowmlir.dialects import glow
    from glowmlir.dialects.glow import Glow
    from glowmlir.dialects.quant import Quant
    from glowmlir.transforms.fuse_conv_pool import FuseConvPool

    context = Context()
    for dialect in (Builtin, Glow, Quant):
        context.load_dialect(dialect)
    text = (Path(__file__).parents[1] / "lit" / "fuse_widened_average.mlir").read_text()

    def ops_and_types(module) -> list[tuple[str, str]]:
        return [(op.name, str(op.results[0].type) if op.results else "") for op in module.walk()
                if op.dialect_name() == "glow"]

    module = Parser(context, text).parse_module()
    before = ops_and_types(module)
    FuseConvPool().apply(context, module)
    fused = [op for op in module.walk() if isinstance(op, glow.ConvolutionOp) and op.pool_widening is not None]
    assert len(fused) == 1 and ops_and_types(module) != before
    unfuse(fused[0])
    module.verify()
    assert ops_and_types(module) == before


def test_pool_widening_belongs_to_an_int16_average():
    """The verifier refuses `pool_widening` on a max pool or on an int8 result; the
    convolution's own levels of a widening pool are the int8 type the result refines."""
    from xdsl.dialects.builtin import i8, i16, i32
    from xdsl.ir import Block
    from xdsl.utils.exceptions import VerifyException

    from glowmlir.dialects import glow
    from glowmlir.dialects.quant import UniformQuantizedType

    level8 = UniformQuantizedType(i8, 0.04, -128)
    x, w, b = Block(arg_types=[glow.tensor((1, 2, 4, 4), UniformQuantizedType(i8, 0.1, 0)),
                               glow.tensor((3, 2, 1, 1), UniformQuantizedType(i8, 0.02, 0)),
                               glow.tensor((3,), UniformQuantizedType(i32, 0.002, 0))]).args
    window = {"pool_kernel": [4, 4], "pool_strides": [1, 1], "pool_pads": [0, 0, 0, 0], "pool_widening": 8}
    widened = glow.ConvolutionOp(x, w, b, pool="avg", **window,
                                 result_element=UniformQuantizedType(i16, 0.04 / 256, -128 * 256))
    widened.verify()
    assert glow.convolved_element(widened) == level8
    for pool, element in (("max", UniformQuantizedType(i16, 0.04 / 256, -128 * 256)), ("avg", level8)):
        with pytest.raises(VerifyException, match="pool_widening belongs to an average pool of int16 result"):
            glow.ConvolutionOp(x, w, b, pool=pool, **window, result_element=element).verify()
