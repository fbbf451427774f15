"""The generated int8 kernels, compiled to host bundles, against the independent numpy
reference of TFLite's / CMSIS-NN's int8 arithmetic (tests/support/int8_reference.py),
bit for bit.

Each test writes a glow function with quantized types, random int8 inputs over the full
range, random int8 weights and int32 biases, and scales drawn at random; output scales
are chosen from the data so that outputs spread over the int8 range without saturating.
Quantized placeholders take and return the raw int8 levels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import Builtin
from xdsl.parser import Parser

from glowmlir.compiler import CompileOptions, compile_module
from glowmlir.dialects import glow, glowll, quant
from glowmlir.dialects.weights import dense_from_array
from glowmlir.pipeline import run_passes
from glowmlir.runtime.boards import run_on_board, target_for
from tests.support import int8_reference as ref

# ----------------------------------------------------------------------------- IR text helpers


def fmt(scale: float) -> str:
    """A float32 scale as an MLIR float literal that reads back to the same float32."""
    return f"{ref.f32(scale):.9e}"


def q8(scale: float, offset: int) -> str:
    return f"!quant.uniform<i8:f32, {fmt(scale)}:{int(offset)}>"


def q8_channels(scales) -> str:
    return "!quant.uniform<i8:f32:0, {" + ", ".join(f"{fmt(s)}:0" for s in scales) + "}>"


def q32(scale: float) -> str:
    return f"!quant.uniform<i32:f32, {fmt(scale)}:0>"


def q32_channels(scales) -> str:
    return "!quant.uniform<i32:f32:0, {" + ", ".join(f"{fmt(s)}:0" for s in scales) + "}>"


def tensor(shape, element: str) -> str:
    return f"tensor<{'x'.join(str(d) for d in shape)}x{element}>"


def ints(values) -> str:
    return f"array<i64: {', '.join(str(int(v)) for v in values)}>"


def exact(value: float) -> str:
    """A real attribute value exact in float32 and decimal (a multiple of 2^-10)."""
    value = round(value * 1024) / 1024
    return repr(float(value))


def _context() -> Context:
    ctx = Context()
    for dialect in (Builtin, glow.Glow, glowll.GlowLL, quant.Quant, llvm.LLVM):
        ctx.load_dialect(dialect)
    return ctx


def parse_net(body: str, constants: dict[str, np.ndarray] | None = None):
    """The module of `glow.function @net { body }`; constants written `elided` get their data here."""
    module = Parser(_context(), "glow.function @net {\n" + body + "\n}\n").parse_module()
    constants = dict(constants or {})
    for op in module.walk():
        if isinstance(op, glow.ConstantOp) and op.name_.data in constants:
            op.properties["value"] = dense_from_array(constants.pop(op.name_.data))
    assert not constants, f"unused constants {sorted(constants)}"
    return module


def build(body: str, constants: dict[str, np.ndarray] | None = None, keep_llvm_ir: bool = False, target=None,
          **options):
    """Compiles `glow.function @net { body }` (for the host, or `target`, with more
    `CompileOptions` if given); constants written `elided` get their data here."""
    return compile_module(parse_net(body, constants), compile_options(target, keep_llvm_ir=keep_llvm_ir, **options))


def compile_options(target=None, **options) -> CompileOptions:
    """`CompileOptions` for the host, or for `target` if given."""
    return CompileOptions(**options) if target is None else CompileOptions(target=target, **options)


def lower_to_glowll(body: str, constants: dict[str, np.ndarray] | None = None, target=None, **options) -> str:
    """The glowll IR `build` compiles the net to (its `bundle.ir["glowll"]`: the kernels each
    instruction takes) without the LLVM stage and the object code, a few seconds where the
    whole build takes most of a minute. A speed-first build whose code comes out over its
    budget is built again (`compiler.CODE_BUDGET_BUILDS`): this is its first build's IR; a
    `ram_size` (its plan chosen by building candidates) is not taken."""
    return glowll_stage(parse_net(body, constants), compile_options(target, **options))


def glowll_stage(module, options: CompileOptions) -> str:
    """The glowll IR `compile_module(module, options)` keeps (`lower_to_glowll`)."""
    assert options.ram_size is None, "glowll_stage does not choose plans"
    pipeline = options.pipeline()
    run_passes(module, pipeline.glow)
    run_passes(module, pipeline.glowll)
    return str(module)


def run(body: str, inputs: dict[str, np.ndarray], constants: dict[str, np.ndarray] | None = None):
    return build(body, constants).run(inputs)


def levels(rng: np.random.Generator, *shape) -> np.ndarray:
    return rng.integers(-128, 128, shape, dtype=np.int8)


def scale(rng: np.random.Generator, low: float = 0.005, high: float = 0.1) -> float:
    return ref.f32(rng.uniform(low, high))


def offset(rng: np.random.Generator, spread: int = 30) -> int:
    return int(rng.integers(-spread, spread + 1))


def spread_scale(reals: np.ndarray, levels_std: float = 45.0) -> float:
    """An output scale putting the standard deviation of `reals` at ~`levels_std` levels."""
    return ref.f32(max(float(np.std(reals)), 1e-6) / levels_std)


def assert_spread(y: np.ndarray) -> None:
    """The test is meaningful: outputs take many values and are not mostly saturated."""
    assert len(np.unique(y)) > min(20, y.size // 4), np.unique(y)


# ----------------------------------------------------------------------------- convolution

CONVOLUTIONS = {
    # name: (input shape, filter shape, strides, pads (t, l, b, r), dilations, group)
    "1x1": ((1, 8, 6, 6), (6, 8, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "3x3_pad1": ((1, 3, 8, 8), (4, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "stride2": ((1, 4, 9, 9), (5, 4, 3, 3), (2, 2), (1, 0, 2, 1), (1, 1), 1),
    "dilation2": ((1, 3, 10, 10), (4, 3, 3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 1),
    "groups2": ((1, 4, 7, 7), (6, 2, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2),
    "depthwise": ((1, 6, 8, 8), (6, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 6),
    "depthwise_x2": ((1, 4, 7, 7), (8, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 4),  # channel multiplier 2
    "non_square": ((2, 3, 7, 11), (5, 3, 2, 3), (1, 2), (0, 1, 1, 2), (1, 1), 1),
}


@dataclass
class Case:
    """One op under test: its `glow` IR lines, inputs, constants and the reference output."""

    body: str
    inputs: dict[str, np.ndarray]
    constants: dict[str, np.ndarray]
    output: str
    expected: np.ndarray


def check_convolution(seed: int, geometry, per_channel: bool = False, activation: str | None = None,
                      pool: dict | None = None) -> None:
    case = convolution_case(seed, geometry, per_channel, activation, pool)
    actual = run(case.body, case.inputs, case.constants)[case.output]
    assert actual.dtype == np.int8 and actual.shape == case.expected.shape
    assert_spread(case.expected)
    np.testing.assert_array_equal(actual, case.expected)


def pointwise(in_c: int, out_c: int, height: int, width: int):
    """The geometry `convolution_case` takes of an unpadded 1x1 of stride 1."""
    return (1, in_c, height, width), (out_c, in_c, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1


def depthwise(channels: int, kernel: int, height: int, width: int, row_stride: int):
    """The geometry `convolution_case` takes of a "same"-padded square depthwise of stride
    (`row_stride`, 1)."""
    return ((1, channels, height, width), (channels, 1, kernel, kernel), (row_stride, 1), (kernel // 2,) * 4, (1, 1),
            channels)


def convolution_case(seed: int, geometry, per_channel: bool = False, activation: str | None = None,
                     pool: dict | None = None, suffix: str = "", bias_kind: str = "int32",
                     output_scale: float | None = None, input_offset: int | None = None,
                     dead_channels: tuple[int, ...] = (), edit=None) -> Case:
    """A random int8 convolution (values named x, w, b, y + `suffix`) and its reference output.
    `bias_kind`: "int32" (in accumulator units: input scale x weight scale), "int8" (per
    tensor: an Int8 bias of its own scale and zero point, as Glow's rule keeps it with
    -quantization-precision-bias=Int8, rescaled to accumulator units in the kernel),
    "large" (int32, output channel 0's bias 2^30) or "lowest" (int32, output channel 0's
    bias -(2^31 - 1), what a bias beyond int32 saturates to; a positive input zero point,
    inputs at or above it and channel 0's weights 127, so that its sums fit int32 but its
    bias less the input zero point x its weight sum does not). With "large" and "lowest",
    channel 0's outputs saturate and the output scale is the other channels'. `output_scale`:
    the output scale in accumulator units (per tensor), not one that spreads the outputs;
    `input_offset`: the input zero point, not a random one; `dead_channels`: output channels of
    weights all at their zero point (one level for every input, `fold_constant_channels`);
    `edit(x_levels, w_levels, w_offsets)`: changes the random levels in place before the
    reference is computed (chosen extremes)."""
    x_shape, w_shape, strides, pads, dilations, group = geometry
    rng = np.random.default_rng(seed)
    out_c = w_shape[0]
    x_levels = levels(rng, *x_shape)
    w_levels = levels(rng, *w_shape)
    x_type = (scale(rng), offset(rng, 60))
    if input_offset is not None:
        x_type = (x_type[0], input_offset)
    if per_channel:
        w_scales = np.array([scale(rng) for _ in range(out_c)], np.float32)
        w_offsets = np.zeros(out_c, np.int64)
        w_element = q8_channels(w_scales)
        bias_scales = (np.float32(x_type[0]) * w_scales).astype(np.float32)
        b_element = q32_channels(bias_scales)
    else:
        w_scales = np.full(out_c, scale(rng), np.float32)
        w_offsets = np.full(out_c, offset(rng, 20), np.int64)
        w_element = q8(w_scales[0], w_offsets[0])
        bias_scales = np.full(out_c, np.float32(x_type[0]) * w_scales[0], np.float32)
        b_element = q32(bias_scales[0])
    bias = bias_levels = rng.integers(-5000, 5001, out_c).astype(np.int32)
    dead = list(dead_channels)
    w_levels[dead] = w_offsets[dead].reshape(-1, *[1] * (w_levels.ndim - 1))
    if bias_kind == "int8":
        bias_levels, b_offset = levels(rng, out_c), offset(rng)
        b_scale = ref.f32(float(bias_scales[0]) * rng.uniform(20, 60))
        b_element = q8(b_scale, b_offset)
        bias = ref.requant(bias_levels.astype(np.int64) - b_offset, *ref.multipliers(b_scale / float(bias_scales[0])))
    elif bias_kind == "large":
        bias[0] = 2**30
    elif bias_kind == "lowest":
        x_type = (x_type[0], abs(x_type[1]) + 1)
        x_levels = rng.integers(x_type[1], 128, x_shape).astype(np.int8)
        w_levels[0], bias[0] = 127, -(2**31 - 1)
    if edit is not None:
        edit(x_levels, w_levels, w_offsets)
    acc = ref.conv2d_accumulators(x_levels, w_levels, bias, x_type[1], w_offsets, strides, pads, dilations, group)
    reals = acc * bias_scales[None, :, None, None].astype(np.float64)
    if bias_kind in ("large", "lowest"):
        reals = reals[:, 1:]
    out_type = (spread_scale(reals) if output_scale is None else ref.f32(bias_scales[0] * output_scale),
                offset(rng))
    clip = {}
    if activation == "clip":
        std = float(np.std(reals))
        clip = {"clip_min": float(exact(-0.6 * std)), "clip_max": float(exact(0.9 * std))}
    expected = ref.conv2d(x_levels, w_levels, bias, x_type, w_scales, w_offsets, out_type, strides, pads, dilations,
                          group, activation, pool=pool, **clip)
    x_t, w_t, b_t = tensor(x_shape, q8(*x_type)), tensor(w_shape, w_element), tensor((out_c,), b_element)
    y_t = tensor(expected.shape, q8(*out_type))
    body, (x, w, b, y) = convolution_text(suffix, (x_t, w_t, b_t, y_t), geometry, activation, pool, clip)
    return Case(body, {x: x_levels}, {w: w_levels, b: bias_levels}, y, expected)



def with_lookup_table(case: Case, seed: int) -> Case:
    """`case` with a random int8 table (of seed `seed`, output type 0.02:-5) looked up on its
    saved output: the table's input is the case's output ("y" and its suffix), its output "z"
    (with the same suffix: several such cases make one net) saved instead."""
    save = re.search(r'  glow.save %y(\w*) as "y\w*" : (tensor<[^\n]*>)', case.body)
    suffix, saved_type = save.groups()
    table_type = tensor((256,), q8(0.02, -5))
    out_type = saved_type.rsplit("x!quant", 1)[0] + "x" + q8(0.02, -5) + ">"
    body = case.body.replace(save.group(0), f"""
  %t{suffix} = glow.constant "t{suffix}" elided : {table_type}
  %z{suffix} = glow.int_lookup_table %y{suffix}, %t{suffix} : ({saved_type}, {table_type}) -> {out_type}
  glow.save %z{suffix} as "z{suffix}" : {out_type}""")
    table = np.random.default_rng(seed).integers(-128, 128, 256).astype(np.int8)
    return Case(body, case.inputs, {**case.constants, f"t{suffix}": table}, f"z{suffix}",
                table[case.expected.astype(np.int64) + 128])


def activation_cases(layers: dict, first_seed: int) -> list[Case]:
    """`convolution_case` of each named geometry in `layers` (per channel), once with a relu,
    once without an activation and once with a clip, on seeds from `first_seed`."""
    return [convolution_case(first_seed + 3 * index + k, geometry, per_channel=True, activation=activation,
                             suffix=f"_{name}_{activation}")
            for index, (name, geometry) in enumerate(layers.items())
            for k, activation in enumerate(("relu", None, "clip"))]

def convolution_text(suffix: str, types: tuple[str, str, str, str], geometry, activation: str | None,
                     pool: dict | None, clip: dict | None = None) -> tuple[str, tuple[str, str, str, str]]:
    """The glow lines of a convolution of `geometry` (`CONVOLUTIONS`' form) with a fused
    `activation` (a clip's bounds in `clip`) and `pool`, whose input, filter, bias and output
    (of `types`) are named x, w, b and y + `suffix`, the output saved; and those names."""
    _, _, strides, pads, dilations, group = geometry
    attributes = [f"strides = {ints(strides)}", f"pads = {ints(pads)}", f"dilations = {ints(dilations)}"]
    if group != 1:
        attributes.append(f"group = {group} : i64")
    keywords = f" activation {activation}" if activation else ""
    if clip:
        attributes.append(f'clip_min = {exact(clip["clip_min"])} : f32, clip_max = {exact(clip["clip_max"])} : f32')
    if pool is not None:
        keywords += f' pool {pool["kind"]}'
        attributes.append(f'pool_kernel = {ints(pool["kernel"])}, '
                          f'pool_strides = {ints(pool["strides"])}, pool_pads = {ints(pool["pads"])}')
        if pool.get("count_include_pad"):
            attributes.append("pool_count_include_pad")
    x_t, w_t, b_t, y_t = types
    x, w, b, y = (name + suffix for name in "xwby")
    body = f"""
  %{x} = glow.placeholder "{x}" : {x_t}
  %{w} = glow.constant "{w}" elided : {w_t}
  %{b} = glow.constant "{b}" elided : {b_t}
  %{y} = glow.convolution %{x}, %{w}, %{b}{keywords} {{{', '.join(attributes)}}} : ({x_t}, {w_t}, {b_t}) -> {y_t}
  glow.save %{y} as "{y}" : {y_t}"""
    return body, (x, w, b, y)


@pytest.mark.parametrize("name", list(CONVOLUTIONS))
def test_convolution(name):
    check_convolution(100 + list(CONVOLUTIONS).index(name), CONVOLUTIONS[name])


@pytest.mark.parametrize("name,activation", [("3x3_pad1", "relu"), ("stride2", "clip"), ("depthwise", "relu"),
                                             ("groups2", "clip"), ("1x1", "relu")])
def test_convolution_fused_activation(name, activation):
    check_convolution(200 + list(CONVOLUTIONS).index(name), CONVOLUTIONS[name], activation=activation)


@pytest.mark.parametrize("name,activation", [("3x3_pad1", None), ("depthwise", None), ("stride2", "relu"),
                                             ("non_square", None), ("groups2", "clip"), ("depthwise_x2", None)])
def test_convolution_per_channel(name, activation):
    check_convolution(300 + list(CONVOLUTIONS).index(name), CONVOLUTIONS[name], per_channel=True,
                      activation=activation)



FUSED_POOLS = [
    ("3x3_pad1", None, dict(kind="max", kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0))),
    ("3x3_pad1", "relu", dict(kind="max", kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))),
    ("3x3_pad1", None, dict(kind="avg", kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0))),
    ("non_square", "relu", dict(kind="avg", kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))),
    ("dilation2", "clip", dict(kind="avg", kernel=(3, 3), strides=(1, 1), pads=(1, 1, 1, 1))),
    pytest.param("depthwise", None, dict(kind="avg", kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1),
                                         count_include_pad=True)),
]


@pytest.mark.parametrize("name,activation,pool", FUSED_POOLS)
def test_convolution_fused_pool(name, activation, pool):
    check_convolution(400 + list(CONVOLUTIONS).index(name) + 10 * len(pool["kind"]) * pool["kernel"][0],
                      CONVOLUTIONS[name], activation=activation, pool=pool)


def test_convolution_per_channel_fused_pool():
    check_convolution(450, CONVOLUTIONS["stride2"], per_channel=True, activation="clip",
                      pool=dict(kind="max", kernel=(2, 2), strides=(1, 1), pads=(0, 0, 1, 1)))


# ----------------------------------------------------------------------------- pooling

POOLS = [
    # kind, input shape, kernel, strides, pads, count_include_pad, input offset (None: random)
    ("max", (1, 3, 8, 8), (2, 2), (2, 2), (0, 0, 0, 0), False, None),
    ("max", (2, 2, 9, 7), (3, 3), (2, 2), (1, 1, 1, 1), False, None),
    ("avg", (1, 3, 8, 8), (2, 2), (2, 2), (0, 0, 0, 0), False, None),
    ("avg", (2, 2, 7, 9), (3, 3), (2, 2), (1, 1, 1, 1), False, None),
    ("avg", (1, 4, 6, 6), (3, 2), (1, 2), (2, 0, 1, 1), False, None),
    ("avg", (2, 2, 7, 9), (3, 3), (2, 2), (1, 1, 1, 1), True, 0),
    pytest.param("avg", (2, 2, 7, 9), (3, 3), (2, 2), (1, 1, 1, 1), True, -16),
    pytest.param("avg", (1, 4, 6, 6), (3, 2), (1, 2), (2, 0, 1, 1), True, 19),
]


@pytest.mark.parametrize("kind,shape,kernel,strides,pads,count_include_pad,x_offset", POOLS)
def test_pool(kind, shape, kernel, strides, pads, count_include_pad, x_offset):
    rng = np.random.default_rng(600 + 10 * len(shape) * shape[1] + kernel[0] + 7 * pads[0] + 3 * count_include_pad)
    x = levels(rng, *shape)
    x_scale = scale(rng)
    x_offset = offset(rng, 60) if x_offset is None else x_offset
    element = q8(x_scale, x_offset)
    if kind == "max":
        expected = ref.max_pool(x, kernel, strides, pads)
    else:
        expected = ref.avg_pool(x, kernel, strides, pads, count_include_pad, x_offset)
    attributes = f"kernel = {ints(kernel)}, strides = {ints(strides)}, pads = {ints(pads)}"
    if count_include_pad:
        attributes += ", count_include_pad"
    x_t, y_t = tensor(shape, element), tensor(expected.shape, element)
    body = f"""
  %x = glow.placeholder "x" : {x_t}
  %y = glow.{kind}_pool %x {{{attributes}}} : ({x_t}) -> {y_t}
  glow.save %y as "y" : {y_t}"""
    np.testing.assert_array_equal(run(body, {"x": x})["y"], expected)


# ----------------------------------------------------------------------------- relu / clip / rescale


def check_unary(op_text: str, x: np.ndarray, in_type, out_type, expected: np.ndarray) -> None:
    x_t, y_t = tensor(x.shape, q8(*in_type)), tensor(x.shape, q8(*out_type))
    body = f"""
  %x = glow.placeholder "x" : {x_t}
  %y = {op_text} : ({x_t}) -> {y_t}
  glow.save %y as "y" : {y_t}"""
    np.testing.assert_array_equal(run(body, {"x": x})["y"], expected)


ALL_LEVELS = np.arange(-128, 128, dtype=np.int8).reshape(2, 128)


@pytest.mark.parametrize("seed", [0, 1])
def test_relu(seed):
    rng = np.random.default_rng(700 + seed)
    in_type = (scale(rng), offset(rng, 60))
    out_type = (ref.f32(in_type[0] * rng.uniform(0.4, 0.9)), offset(rng, 100))
    expected = ref.rescale(ALL_LEVELS, in_type, out_type, "relu")
    check_unary("glow.relu %x", ALL_LEVELS, in_type, out_type, expected)


def test_relu_same_type():
    in_type = (0.03, 17)
    check_unary("glow.relu %x", ALL_LEVELS, in_type, in_type, np.maximum(ALL_LEVELS, 17))


@pytest.mark.parametrize("seed", [0, 1])
def test_clip(seed):
    rng = np.random.default_rng(710 + seed)
    in_type = (scale(rng), offset(rng, 60))
    out_type = (ref.f32(in_type[0] * rng.uniform(0.5, 1.5)), offset(rng, 60))
    low, high = float(exact(-40 * in_type[0])), float(exact(50 * in_type[0]))
    expected = ref.rescale(ALL_LEVELS, in_type, out_type, "clip", low, high)
    check_unary(f"glow.clip %x {{min = {exact(low)} : f32, max = {exact(high)} : f32}}", ALL_LEVELS, in_type,
                out_type, expected)


def test_clip_bounds_round_half_to_even():
    """Bounds falling on half levels: 39.5 + 3 = 42.5 -> 42 and -21.5 + 3 = -18.5 -> -18
    (round half to even; TFLite's round half away from zero would give 43 and -19)."""
    element = (0.0625, 3)
    low, high = -21.5 * 0.0625, 39.5 * 0.0625
    assert ref.activation_range(*element, "clip", low, high) == (-18, 42)
    check_unary(f"glow.clip %x {{min = {low!r} : f32, max = {high!r} : f32}}", ALL_LEVELS, element, element,
                np.clip(ALL_LEVELS, -18, 42))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rescale_quantized(seed):
    rng = np.random.default_rng(720 + seed)
    in_type = (scale(rng), offset(rng, 60))
    out_type = (ref.f32(in_type[0] * rng.uniform(0.6, 2.5)), offset(rng, 60))
    expected = ref.rescale(ALL_LEVELS, in_type, out_type)
    check_unary("glow.rescale_quantized %x", ALL_LEVELS, in_type, out_type, expected)


@pytest.mark.parametrize("seed,alpha", [(0, 0.1), (1, 0.3), (2, 1.75)])
def test_leaky_relu(seed, alpha):
    """TFLite's int8 LeakyRelu on every level: one multiplier for x >= 0, one for alpha * x."""
    rng = np.random.default_rng(730 + seed)
    in_type = (scale(rng), offset(rng, 60))
    out_type = (ref.f32(in_type[0] * rng.uniform(0.5, 1.5)), offset(rng, 60))
    expected = ref.leaky_relu(ALL_LEVELS, in_type, out_type, float(exact(alpha)))
    assert_spread(expected[ALL_LEVELS < in_type[1]])  # the negative side spans levels too
    check_unary(f"glow.leaky_relu %x {{alpha = {exact(alpha)} : f32}}", ALL_LEVELS, in_type, out_type, expected)


def binary_text(op: str, x_t: str, s_t: str, y_t: str) -> str:
    """The glow lines of `glow.<op>` of the placeholders x (of type `x_t`) and s, saved as y."""
    return f"""
  %x = glow.placeholder "x" : {x_t}
  %s = glow.placeholder "s" : {s_t}
  %y = glow.{op} %x, %s : ({x_t}, {s_t}) -> {y_t}
  glow.save %y as "y" : {y_t}"""


@pytest.mark.parametrize("x_shape,slope_shape,seed", [((2, 4, 5, 6), (4, 1, 1), 740), ((3, 40), (3, 40), 741),
                                                     ((1, 6, 3, 3), (1,), 742)])
def test_prelu(x_shape, slope_shape, seed):
    """TFLite's int8 PRelu: x >= 0 rescaled, x < 0 times the slope level (slopes of both
    signs, per channel, elementwise or one) requantized with its own multiplier."""
    rng = np.random.default_rng(seed)
    x, slope = levels(rng, *x_shape), levels(rng, *slope_shape)
    x_type, slope_type = (scale(rng), offset(rng, 60)), (scale(rng, 0.002, 0.01), offset(rng, 60))
    out_type = (ref.f32(x_type[0] * rng.uniform(0.5, 1.2)), offset(rng, 30))
    expected = ref.prelu(x, slope, x_type, slope_type, out_type)
    assert_spread(expected)
    x_t, s_t, y_t = tensor(x_shape, q8(*x_type)), tensor(slope_shape, q8(*slope_type)), tensor(x_shape, q8(*out_type))
    body = binary_text("prelu", x_t, s_t, y_t)
    np.testing.assert_array_equal(run(body, {"x": x, "s": slope})["y"], expected)


def q16(scale: float, offset: int) -> str:
    return f"!quant.uniform<i16:f32, {fmt(scale)}:{int(offset)}>"


@pytest.mark.parametrize("mode,axis,in_bits,out_bits", [("nearest", 2, 8, 8), ("linear", 3, 8, 8),
                                                        ("linear", 2, 8, 16), ("linear", 3, 16, 8)])
def test_resample(mode, axis, in_bits, out_bits):
    """One axis of an int8 Resize: taps weighted by Q1.14 weights, requantized (int16 at
    1/256 of the scale: a bilinear Resize's axes before its last)."""
    rng = np.random.default_rng(750 + axis + in_bits + out_bits)
    shape = (1, 3, 5, 7)
    x = levels(rng, *shape) if in_bits == 8 else (levels(rng, *shape).astype(np.int16) * 256
                                                    + rng.integers(-128, 128, shape)).astype(np.int16)
    size, out = shape[axis], 2 * shape[axis] + 1
    position = np.clip((np.arange(out) + 0.5) * size / out - 0.5, 0, size - 1)
    if mode == "nearest":
        taps, weights = np.rint(position).astype(np.int32)[:, None], np.ones((out, 1))
    else:
        low = np.floor(position)
        taps = np.stack([low, np.minimum(low + 1, size - 1)], axis=1).astype(np.int32)
        weights = np.stack([1 - (position - low), position - low], axis=1)
    in_type = (scale(rng), offset(rng, 60))
    if in_bits == 16:
        in_type = (ref.f32(in_type[0] / 256), in_type[1] * 256)
    out_type = (ref.f32(in_type[0] * rng.uniform(0.8, 1.3)), offset(rng, 30)) if out_bits == 8 else \
        (ref.f32(in_type[0] / 256), in_type[1] * 256)
    if in_bits == 16:
        out_type = (ref.f32(in_type[0] * 256 * rng.uniform(0.8, 1.3)), offset(rng, 30))
    expected = ref.resample(x, taps, weights, axis, in_type, out_type, out_bits)
    assert_spread(expected)
    element = {8: q8, 16: q16}
    out_shape = list(shape)
    out_shape[axis] = out
    x_t, y_t = tensor(shape, element[in_bits](*in_type)), tensor(out_shape, element[out_bits](*out_type))
    t_t, w_t = tensor(taps.shape, "i32"), tensor(taps.shape, q16(2.0 ** -14, 0))
    body = f"""
  %x = glow.placeholder "x" : {x_t}
  %t = glow.constant "t" elided : {t_t}
  %w = glow.constant "w" elided : {w_t}
  %y = glow.resample %x, %t, %w {{axis = {axis} : i64}} : ({x_t}, {t_t}, {w_t}) -> {y_t}
  glow.save %y as "y" : {y_t}"""
    fixed = np.rint(weights * 2 ** 14).astype(np.int16)
    np.testing.assert_array_equal(run(body, {"x": x}, {"t": taps, "w": fixed})["y"], expected)


# ----------------------------------------------------------------------------- add / mul / concat


def check_binary(op: str, a_shape, b_shape, seed: int, activation: str | None = None) -> None:
    case = binary_case(op, a_shape, b_shape, seed, activation)
    np.testing.assert_array_equal(run(case.body, case.inputs)[case.output], case.expected)


def binary_case(op: str, a_shape, b_shape, seed: int, activation: str | None = None, suffix: str = "") -> Case:
    """glow.add, glow.sub or glow.mul of random int8 levels (names a, b, y + `suffix`) and its
    int8 reference output."""
    rng = np.random.default_rng(seed)
    a, b = levels(rng, *a_shape), levels(rng, *b_shape)
    a_type, b_type = (scale(rng), offset(rng, 60)), (scale(rng), offset(rng, 60))
    real_a = ref.dequantize(a, *a_type).astype(np.float64)
    real_b = ref.dequantize(b, *b_type).astype(np.float64)
    reals = {"add": real_a + real_b, "sub": real_a - real_b, "mul": real_a * real_b}[op]
    out_type = (spread_scale(reals), offset(rng))
    clip, attributes = {}, ""
    if activation == "relu":
        attributes = ' activation relu'
    elif activation == "clip":
        std = float(np.std(reals))
        clip = {"clip_min": float(exact(-0.7 * std)), "clip_max": float(exact(0.5 * std))}
        attributes = (f' activation clip {{clip_min = {exact(clip["clip_min"])} : f32, '
                      f'clip_max = {exact(clip["clip_max"])} : f32}}')
    if op in ("add", "sub"):
        expected = ref.add(a, b, a_type, b_type, out_type, activation, subtract=op == "sub", **clip)
    else:
        expected = ref.mul(a, b, a_type, b_type, out_type)
    a_t, b_t = tensor(a_shape, q8(*a_type)), tensor(b_shape, q8(*b_type))
    y_t = tensor(expected.shape, q8(*out_type))
    a_name, b_name, y_name = (name + suffix for name in "aby")
    body = f"""
  %{a_name} = glow.placeholder "{a_name}" : {a_t}
  %{b_name} = glow.placeholder "{b_name}" : {b_t}
  %{y_name} = glow.{op} %{a_name}, %{b_name}{attributes} : ({a_t}, {b_t}) -> {y_t}
  glow.save %{y_name} as "{y_name}" : {y_t}"""
    assert_spread(expected)
    return Case(body, {a_name: a, b_name: b}, {}, y_name, expected)


@pytest.mark.parametrize("a_shape,b_shape,activation,seed", [
    ((2, 3, 5, 5), (2, 3, 5, 5), None, 800),
    ((1, 4, 5, 6), (1, 4, 1, 1), None, 801),
    ((1, 4, 1, 1), (2, 4, 3, 3), None, 802),
    ((1, 4, 5, 6), (1, 4, 5, 6), "relu", 803),
    ((2, 6, 3, 3), (1, 6, 1, 1), "relu", 809),
    ((3, 40), (3, 40), "clip", 805),
])
def test_add(a_shape, b_shape, activation, seed):
    check_binary("add", a_shape, b_shape, seed, activation)


@pytest.mark.parametrize("kind,a_type,b_type", [("add", (0.1, -7), (0.0123, 25)), ("sub", (0.0123, 25), (0.1, -7))])
def test_add_and_sub_all_level_pairs(kind, a_type, b_type):
    """TFLite's int8 Add and Sub on every pair of levels, with scales of very different sizes."""
    case = all_level_pairs_case(kind, a_type, b_type, (0.051, 3))
    np.testing.assert_array_equal(run(case.body, case.inputs)[case.output], case.expected)


def all_level_pairs_case(kind: str, a_type, b_type, out_type, columns=range(-128, 128), suffix: str = "") -> Case:
    """glow.add, glow.sub or glow.mul of every level of a (rows) with the levels `columns` of b."""
    a = np.repeat(np.arange(-128, 128), len(columns)).astype(np.int8).reshape(256, len(columns))
    b = np.tile(np.array(columns), 256).astype(np.int8).reshape(256, len(columns))
    if kind == "mul":
        expected = ref.mul(a, b, a_type, b_type, out_type)
    else:
        expected = ref.add(a, b, a_type, b_type, out_type, subtract=kind == "sub")
    a_t, b_t, y_t = tensor(a.shape, q8(*a_type)), tensor(b.shape, q8(*b_type)), tensor(a.shape, q8(*out_type))
    a_name, b_name, y_name = (f"{name}_pairs{suffix}" for name in "aby")
    body = f"""
  %{a_name} = glow.placeholder "{a_name}" : {a_t}
  %{b_name} = glow.placeholder "{b_name}" : {b_t}
  %{y_name} = glow.{kind} %{a_name}, %{b_name} : ({a_t}, {b_t}) -> {y_t}
  glow.save %{y_name} as "{y_name}" : {y_t}"""
    return Case(body, {a_name: a, b_name: b}, {}, y_name, expected)


@pytest.mark.parametrize("a_shape,b_shape,seed", [
    ((2, 3, 5, 5), (2, 3, 5, 5), 810),
    ((1, 4, 5, 6), (1, 4, 1, 1), 811),
    ((6, 40), (6, 40), 812),
])
def test_mul(a_shape, b_shape, seed):
    check_binary("mul", a_shape, b_shape, seed)


def test_concat_axis1():
    rng = np.random.default_rng(820)
    element = q8(scale(rng), offset(rng, 60))
    inputs = [levels(rng, 2, c, 4, 5) for c in (2, 3, 1)]
    types = [tensor(x.shape, element) for x in inputs]
    expected = ref.concat(inputs, 1)
    y_t = tensor(expected.shape, element)
    body = "\n".join(f'  %x{i} = glow.placeholder "x{i}" : {t}' for i, t in enumerate(types)) + f"""
  %y = glow.concat %x0, %x1, %x2 {{axis = 1 : i64}} : ({', '.join(types)}) -> {y_t}
  glow.save %y as "y" : {y_t}"""
    np.testing.assert_array_equal(run(body, {f"x{i}": x for i, x in enumerate(inputs)})["y"], expected)


# ----------------------------------------------------------------------------- softmax


def check_softmax(x: np.ndarray, input_scale: float, input_offset: int = 0) -> np.ndarray:
    expected = ref.softmax_s8(x, input_scale)
    x_t = tensor(x.shape, q8(input_scale, input_offset))
    y_t = tensor(x.shape, q8(*ref.SOFTMAX_OUTPUT))
    body = f"""
  %x = glow.placeholder "x" : {x_t}
  %y = glow.softmax %x {{axis = {x.ndim - 1} : i64}} : ({x_t}) -> {y_t}
  glow.save %y as "y" : {y_t}"""
    np.testing.assert_array_equal(run(body, {"x": x})["y"], expected)
    return expected


@pytest.mark.parametrize("shape,input_scale,seed", [
    ((4, 10), 0.05, 900),
    ((2, 3, 10), 0.1, 901),
    ((3, 10), 0.0123, 902),
    ((2, 1000), 0.08, 903),
])
def test_softmax(shape, input_scale, seed):
    rng = np.random.default_rng(seed)
    expected = check_softmax(levels(rng, *shape), input_scale, offset(rng))
    assert len(np.unique(expected)) > 3


def test_softmax_below_diff_min():
    """With a large input scale diff_min is small: inputs further than it below the row
    maximum give exactly -128 without entering the exp (whose Q5.26 argument would
    overflow); those at diff_min still enter it."""
    mult, shift, diff_min = ref.softmax_parameters(0.25)
    assert (shift, diff_min) == (25, -62)
    rng = np.random.default_rng(910)
    x = levels(rng, 4, 10)
    x[0] = [127, -128, 3, 2, 127 + diff_min, 127 + diff_min + 1, 126 + diff_min, 0, -1, 120]
    x[1] = [-10] * 9 + [117]
    x[2] = [-128] * 5 + [-128 - diff_min] * 5
    expected = check_softmax(x, 0.25, -5)
    assert (expected[0, [1, 2, 3, 6, 7, 8]] == -128).all() and expected[0, 0] > expected[0, 9] > -128
    assert (expected[2, :5] == -128).all()


def test_quantized_softmax_only_on_the_last_axis():
    """arm_softmax_s8 normalizes rows: a quantized softmax on another axis is invalid IR."""
    rng = np.random.default_rng(920)
    x = levels(rng, 2, 10, 3)
    x_t, y_t = tensor(x.shape, q8(0.05, 0)), tensor(x.shape, q8(*ref.SOFTMAX_OUTPUT))
    body = f"""
  %x = glow.placeholder "x" : {x_t}
  %y = glow.softmax %x {{axis = 1 : i64}} : ({x_t}) -> {y_t}
  glow.save %y as "y" : {y_t}"""
    with pytest.raises(Exception, match="last axis"):
        run(body, {"x": x})


def test_softmax_probability_one():
    """One element dominating its row gets level 127 (probability 1 saturates)."""
    x = np.full((2, 10), -128, np.int8)
    x[:, 3] = 127
    assert (check_softmax(x, 0.1)[:, 3] == 127).all()


def test_softmax_flat_row_of_1000():
    """1000 equal inputs: the sum of exps is 1000 * 2^19 >= 2^28, so arm_softmax_s8's final
    rounding shift is 12 - 3 + 23 = 32 (undefined in C); 256 / 1000 rounds to level -128."""
    x = np.zeros((2, 1000), np.int8)
    x[1] = 5
    expected = check_softmax(x, 0.05)
    assert (expected == -128).all()


# ----------------------------------------------------------------------------- multiplier derivation

# Scales for which TFLite's multiplier of s_a * s_b / s_out (Prepare of Conv, FullyConnected
# and Mul: `double(s_a) * double(s_b) / double(s_out)`, which glowmlir follows) differs from
# the one of the float32 product: 1537349372 vs 1537349345 (shift -6). Among all products of two int8 levels, 16
# then requantize differently, e.g. (-94) * (-29) = 2726 -> 31 (TFLite) vs 30.
PRODUCT_SCALES = (0.042577940970659256, 0.09147429466247559, 0.3481937646865845)

def test_product_scales_make_the_two_rules_differ():
    sa, sb, so = PRODUCT_SCALES
    assert ref.quantize_multiplier(ref.real_multiplier(sa, sb, so)) == (1537349372, -6)
    assert ref.quantize_multiplier(ref.real_multiplier(sa, sb, so, "float32")) == (1537349345, -6)
    a, b = np.int8(-94), np.int8(-29)
    assert ref.mul(a, b, (sa, 0), (sb, 0), (so, 0)) == 31
    assert ref.mul(a, b, (sa, 0), (sb, 0), (so, 0), product="float32") == 30


ALL_A = np.repeat(np.arange(-128, 128), 256).astype(np.int8).reshape(256, 256)
ALL_B = np.tile(np.arange(-128, 128), 256).astype(np.int8).reshape(256, 256)


def test_mul_multiplier_from_double_product():
    sa, sb, so = PRODUCT_SCALES
    a_t, b_t, y_t = tensor(ALL_A.shape, q8(sa, 0)), tensor(ALL_B.shape, q8(sb, 0)), tensor(ALL_A.shape, q8(so, 0))
    body = f"""
  %a = glow.placeholder "a" : {a_t}
  %b = glow.placeholder "b" : {b_t}
  %y = glow.mul %a, %b : ({a_t}, {b_t}) -> {y_t}
  glow.save %y as "y" : {y_t}"""
    expected = ref.mul(ALL_A, ALL_B, (sa, 0), (sb, 0), (so, 0))
    np.testing.assert_array_equal(run(body, {"a": ALL_A, "b": ALL_B})["y"], expected)


def fully_connected_body(x_t: str, w_t: str, b_t: str, y_t: str, activation: str | None = None) -> str:
    """glow IR of y = fully_connected(x, w, b): x a placeholder, w and b constants (a fused
    `activation`)."""
    keyword = f" activation {activation}" if activation else ""
    return f"""
  %x = glow.placeholder "x" : {x_t}
  %w = glow.constant "w" elided : {w_t}
  %b = glow.constant "b" elided : {b_t}
  %y = glow.fully_connected %x, %w, %b{keyword} : ({x_t}, {w_t}, {b_t}) -> {y_t}
  glow.save %y as "y" : {y_t}"""


def consecutive_accumulators_case(ratio: float, activation: str | None = None, outputs: int = 4000) -> Case:
    """A FullyConnected whose input levels are its zero point, so that each output's
    accumulator is its bias: a range of consecutive accumulators of both signs (random
    order), with input x weight / output scale `ratio` (a power of two: every rounding of a
    half, away from zero, is met), and the fused `activation`."""
    rng = np.random.default_rng(int(ratio * 1000))
    reach = int(110 / ratio)
    bias = rng.permutation(np.arange(-reach, reach, 2 * reach / outputs).astype(np.int32))[:outputs]
    x, w = np.full((2, 4), -5, np.int8), levels(rng, 4, outputs)
    x_type, w_type = (0.05, -5), (0.01, 0)
    bias_scale = ref.f32(np.float32(x_type[0]) * np.float32(w_type[0]))
    out_type = (float(np.float32(bias_scale / np.float32(ratio))), 3)
    expected = ref.fully_connected(x, w, bias, x_type, w_type, out_type, activation)
    x_t, w_t = tensor(x.shape, q8(*x_type)), tensor(w.shape, q8(*w_type))
    b_t, y_t = tensor((outputs,), q32(bias_scale)), tensor((2, outputs), q8(*out_type))
    return Case(fully_connected_body(x_t, w_t, b_t, y_t, activation), {"x": x}, {"w": w, "b": bias}, "y", expected)


def test_fully_connected_multiplier_from_double_product():
    """x [256, 1] x w [1, 256]: every product of two levels is an accumulator."""
    sa, sb, so = PRODUCT_SCALES
    x, w = ALL_A[:, :1].copy(), ALL_B[:1].copy()
    bias = np.zeros(256, np.int32)
    bias_scale = ref.f32(np.float32(sa) * np.float32(sb))
    x_t, w_t, b_t = tensor(x.shape, q8(sa, 0)), tensor(w.shape, q8(sb, 0)), tensor((256,), q32(bias_scale))
    y_t = tensor((256, 256), q8(so, 0))
    body = fully_connected_body(x_t, w_t, b_t, y_t)
    expected = ref.fully_connected(x, w, bias, (sa, 0), (sb, 0), (so, 0))
    np.testing.assert_array_equal(run(body, {"x": x}, {"w": w, "b": bias})["y"], expected)


def test_convolution_per_channel_multiplier_from_double_product():
    """A 1x1 convolution of one input channel holding every level into 256 per-channel
    output channels whose weights are the 256 levels: every product of two levels."""
    sa, sb, so = PRODUCT_SCALES
    x = np.arange(-128, 128, dtype=np.int8).reshape(1, 1, 16, 16)
    w = np.arange(-128, 128, dtype=np.int8).reshape(256, 1, 1, 1)
    bias = np.zeros(256, np.int32)
    w_scales = np.full(256, sb, np.float32)
    bias_scales = (np.float32(sa) * w_scales).astype(np.float32)
    expected = ref.conv2d(x, w, bias, (sa, 0), w_scales, 0, (so, 0))
    x_t, w_t = tensor(x.shape, q8(sa, 0)), tensor(w.shape, q8_channels(w_scales))
    b_t, y_t = tensor((256,), q32_channels(bias_scales)), tensor(expected.shape, q8(so, 0))
    body = ("\n"
            f'  %x = glow.placeholder "x" : {x_t}\n'
            f'  %w = glow.constant "w" elided : {w_t}\n'
            f'  %b = glow.constant "b" elided : {b_t}\n'
            f"  %y = glow.convolution %x, %w, %b {{strides = {ints((1, 1))}, pads = {ints((0, 0, 0, 0))}, "
            f"dilations = {ints((1, 1))}}} : ({x_t}, {w_t}, {b_t}) -> {y_t}\n"
            f'  glow.save %y as "y" : {y_t}')
    np.testing.assert_array_equal(run(body, {"x": x}, {"w": w, "b": bias})["y"], expected)


# ----------------------------------------------------------------------------- quantize / dequantize


QUANTIZE_ELEMENTS = [(0.0625, -3), (ref.f32(0.0123), 17), (ref.f32(0.0371), 0)]


def quantize_inputs(seed: int, scale: float, offset: int) -> np.ndarray:
    """Floats for a quantize to (scale, offset): random ones over and beyond the int8 range,
    ones whose x / scale + offset is a half k + 0.5 (exactly for a power-of-two scale) and
    the floats either side of them, where x / scale rounded in f32 lands on a half only once
    the offset is added, and the extremes: +-0, levels beyond +-2^22 and +-1.5 * 2^23 (where
    the kernel's rounding leaves its range), 1e30 and the infinities."""
    rng = np.random.default_rng(seed)
    halves = ((np.arange(-140, 140) + 0.5 - offset) * scale).astype(np.float32)
    neighbours = np.concatenate([np.nextafter(halves, np.float32(np.inf)), np.nextafter(halves, np.float32(-np.inf))])
    extremes = np.array([0.0, -0.0, 1e6, -1e6, 1e30, -1e30, np.inf, -np.inf, 1e-45], np.float32)
    levels = np.array([2**22, 2**22 + 3, 1.5 * 2**23, 1.5 * 2**23 + 7, 2**24 + 5], np.float32)
    far = np.concatenate([levels, -levels]) * np.float32(scale)
    wide = rng.uniform(-200 * scale, 200 * scale, 400).astype(np.float32)
    return np.concatenate([halves, neighbours, extremes, far, wide])


@pytest.mark.parametrize("element", QUANTIZE_ELEMENTS)
def test_quantize(element):
    x = quantize_inputs(950, *element)
    x_t, y_t = tensor(x.shape, "f32"), tensor(x.shape, q8(*element))
    body = f"""
  %x = glow.placeholder "x" : {x_t}
  %y = glow.quantize %x : ({x_t}) -> {y_t}
  glow.save %y as "y" : {y_t}"""
    expected = ref.quantize(x, *element)
    assert expected.min() == -128 and expected.max() == 127 and len(np.unique(expected)) > 200
    np.testing.assert_array_equal(run(body, {"x": x})["y"], expected)


@pytest.mark.parametrize("board", ["mps2-an500", "mps2-an386", "mps2-an385"])
def test_quantize_on_boards(board):
    """The quantize kernel on the M7 (FPv5), the M4 (FPv4) and the M3 (soft float), three
    quantizations in one bundle, against the reference bit for bit: the halves, their
    neighbours, saturation at both ends and the infinities."""
    inputs, body = {}, ""
    for i, element in enumerate(QUANTIZE_ELEMENTS):
        inputs[f"x{i}"] = quantize_inputs(960 + i, *element)
        x_t, y_t = tensor(inputs[f"x{i}"].shape, "f32"), tensor(inputs[f"x{i}"].shape, q8(*element))
        body += f"""
  %x{i} = glow.placeholder "x{i}" : {x_t}
  %y{i} = glow.quantize %x{i} : ({x_t}) -> {y_t}
  glow.save %y{i} as "y{i}" : {y_t}"""
    outputs = run_on_board(build(body, target=target_for(board)), board, inputs).outputs
    for i, element in enumerate(QUANTIZE_ELEMENTS):
        expected = ref.quantize(inputs[f"x{i}"], *element)
        np.testing.assert_array_equal(outputs[f"y{i}"].reshape(expected.shape).astype(np.int8), expected,
                                      err_msg=str(element))


def test_dequantize():
    x = np.arange(-128, 128, dtype=np.int8)
    for element in [(0.0625, -3), (ref.f32(0.0123), 17)]:
        x_t, y_t = tensor(x.shape, q8(*element)), tensor(x.shape, "f32")
        body = f"""
  %x = glow.placeholder "x" : {x_t}
  %y = glow.dequantize %x : ({x_t}) -> {y_t}
  glow.save %y as "y" : {y_t}"""
        actual = run(body, {"x": x})["y"]
        assert actual.dtype == np.float32
        np.testing.assert_array_equal(actual, ref.dequantize(x, *element))


def test_quantize_then_dequantize():
    rng = np.random.default_rng(960)
    x = rng.uniform(-2, 2, (4, 16)).astype(np.float32)
    element = (ref.f32(0.0137), -9)
    x_t, q_t = tensor(x.shape, "f32"), tensor(x.shape, q8(*element))
    body = f"""
  %x = glow.placeholder "x" : {x_t}
  %q = glow.quantize %x : ({x_t}) -> {q_t}
  %y = glow.dequantize %q : ({q_t}) -> {x_t}
  glow.save %q as "q" : {q_t}
  glow.save %y as "y" : {x_t}"""
    outputs = run(body, {"x": x})
    levels_ = ref.quantize(x, *element)
    np.testing.assert_array_equal(outputs["q"], levels_)
    np.testing.assert_array_equal(outputs["y"], ref.dequantize(levels_, *element))


# ----------------------------------------------------------------------------- no floating point

FLOAT_INSTRUCTION = re.compile(r"\b(float|double|half|bfloat|fp128|x86_fp80|fadd|fsub|fmul|fdiv|frem|fneg|fcmp|sitofp|"
                               r"uitofp|fptosi|fptoui|fpext|fptrunc)\b|llvm\.(rint|nearbyint|round|floor|ceil|fabs|exp|"
                               r"maxnum|minnum|fma)\.")


def test_quantized_kernels_have_no_floating_point():
    """A quantized conv + relu + pool + fc + softmax network with quantized placeholders in and
    out compiles to LLVM IR without a single floating-point type or instruction."""
    rng = np.random.default_rng(990)
    x_e, c_e, f_e, s_e = q8(0.05, 3), q8(0.1, -10), q8(0.2, 5), q8(*ref.SOFTMAX_OUTPUT)
    w_e, b_e = q8(0.02, 0), q32(ref.f32(np.float32(0.05) * np.float32(0.02)))
    fw_e, fb_e = q8(0.01, 4), q32(ref.f32(np.float32(0.1) * np.float32(0.01)))
    body = ("\n"
            f'  %x = glow.placeholder "x" : {tensor((1, 3, 8, 8), x_e)}\n'
            f'  %w = glow.constant "w" elided : {tensor((4, 3, 3, 3), w_e)}\n'
            f'  %b = glow.constant "b" elided : {tensor((4,), b_e)}\n'
            f"  %c = glow.convolution %x, %w, %b activation relu pool max "
            f"{{strides = {ints((1, 1))}, pads = {ints((1, 1, 1, 1))}, dilations = {ints((1, 1))}, "
            f"pool_kernel = {ints((2, 2))}, pool_strides = {ints((2, 2))}, pool_pads = {ints((0, 0, 0, 0))}}} : "
            f"({tensor((1, 3, 8, 8), x_e)}, {tensor((4, 3, 3, 3), w_e)}, {tensor((4,), b_e)}) "
            f"-> {tensor((1, 4, 4, 4), c_e)}\n"
            f"  %p = glow.avg_pool %c {{kernel = {ints((2, 2))}, strides = {ints((2, 2))}, "
            f"pads = {ints((0, 0, 0, 0))}}} : ({tensor((1, 4, 4, 4), c_e)}) -> {tensor((1, 4, 2, 2), c_e)}\n"
            f"  %r = glow.reshape %p : ({tensor((1, 4, 2, 2), c_e)}) -> {tensor((1, 16), c_e)}\n"
            f'  %fw = glow.constant "fw" elided : {tensor((16, 10), fw_e)}\n'
            f'  %fb = glow.constant "fb" elided : {tensor((10,), fb_e)}\n'
            f"  %f = glow.fully_connected %r, %fw, %fb : "
            f"({tensor((1, 16), c_e)}, {tensor((16, 10), fw_e)}, {tensor((10,), fb_e)}) -> {tensor((1, 10), f_e)}\n"
            f"  %s = glow.softmax %f {{axis = 1 : i64}} : ({tensor((1, 10), f_e)}) -> {tensor((1, 10), s_e)}\n"
            f'  glow.save %s as "y" : {tensor((1, 10), s_e)}')
    constants = {"w": levels(rng, 4, 3, 3, 3), "b": rng.integers(-5000, 5001, 4).astype(np.int32),
                 "fw": levels(rng, 16, 10), "fb": rng.integers(-5000, 5001, 10).astype(np.int32)}
    bundle = build(body, constants, keep_llvm_ir=True)
    llvm_ir = bundle.ir["llvm-ir"]
    assert "define" in llvm_ir
    found = sorted({m.group(0) for m in FLOAT_INSTRUCTION.finditer(llvm_ir)})
    assert not found, f"floating point in the quantized kernels: {found}"
    assert bundle.run({"x": levels(rng, 1, 3, 8, 8)})["y"].dtype == np.int8
    # the pattern does see floating point: a quantize kernel is made of it
    x_t, q_t = tensor((4, 16), "f32"), tensor((4, 16), x_e)
    quantize = build(f"""
  %x = glow.placeholder "x" : {x_t}
  %q = glow.quantize %x : ({x_t}) -> {q_t}
  glow.save %q as "q" : {q_t}""", keep_llvm_ir=True).ir["llvm-ir"]
    assert {"float", "fdiv", "fadd"} <= {m.group(0) for m in FLOAT_INSTRUCTION.finditer(quantize)}


# ----------------------------------------------------------------------------- the reference itself
# Cheap checks that the numpy reference computes what it should, against float arithmetic.


def test_reference_fixed_point_helpers():
    rng = np.random.default_rng(1000)
    a = rng.integers(ref.INT32_MIN, ref.INT32_MAX, 2000, endpoint=True)
    b = rng.integers(ref.INT32_MIN, ref.INT32_MAX, 2000, endpoint=True)
    for x, y, got in zip(a, b, ref.doubling_high_mult(a, b)):
        product = int(x) * int(y)  # round(x * y / 2^31), halves away from zero
        expected = (abs(product) + (1 << 30)) >> 31
        assert got == (expected if product >= 0 else -expected)
    assert ref.doubling_high_mult(ref.INT32_MIN, ref.INT32_MIN) == ref.INT32_MAX
    for exponent in (0, 1, 5, 12, 31, 33):
        values = rng.integers(ref.INT32_MIN, ref.INT32_MAX, 500, endpoint=True)
        exact = [int(np.sign(v)) * ((abs(int(v)) + (1 << exponent >> 1)) >> exponent) if exponent else int(v)
                 for v in values]
        np.testing.assert_array_equal(ref.divide_by_power_of_two(values, exponent), exact)
    x = np.linspace(-31.99, 0, 4001)
    q526 = np.round(x * 2.0 ** 26).astype(np.int64)
    np.testing.assert_allclose(ref.exp_on_negative_values(q526) / 2.0 ** 31, np.exp(q526 / 2.0 ** 26),
                               rtol=0, atol=5e-7)
    for value in np.linspace(0, 1, 101)[:-1]:
        got = ref.one_over_one_plus_x_for_x_in_0_1(int(value * 2 ** 31))
        assert abs(got / 2.0 ** 31 - 1 / (1 + value)) < 1e-8


def test_reference_convolution_is_the_real_convolution():
    rng = np.random.default_rng(1001)
    for x_shape, w_shape, strides, pads, dilations, group in CONVOLUTIONS.values():
        x, w = levels(rng, *x_shape), levels(rng, *w_shape)
        bias = rng.integers(-5000, 5001, w_shape[0])
        x_type, w_type = (scale(rng), offset(rng, 60)), (scale(rng), offset(rng, 20))
        acc = ref.conv2d_accumulators(x, w, bias, x_type[1], w_type[1], strides, pads, dilations, group)
        out_type = (spread_scale(acc * x_type[0] * w_type[0]), offset(rng))
        # the same convolution in float64, one output at a time
        real_x = np.pad((x.astype(np.float64) - x_type[1]) * x_type[0], [(0, 0), (0, 0), pads[0::2], pads[1::2]])
        real_w = (w.astype(np.float64) - w_type[1]) * w_type[0]
        real_b = bias * float(np.float32(x_type[0]) * np.float32(w_type[0]))
        got = ref.conv2d(x, w, bias, x_type, w_type[0], w_type[1], out_type, strides, pads, dilations, group)
        cg, og = w_shape[1], w_shape[0] // group
        for n, o, i, j in np.ndindex(*got.shape):
            g = o // og
            rows = slice(i * strides[0], i * strides[0] + dilations[0] * (w_shape[2] - 1) + 1, dilations[0])
            columns = slice(j * strides[1], j * strides[1] + dilations[1] * (w_shape[3] - 1) + 1, dilations[1])
            taps = real_x[n, g * cg:(g + 1) * cg, rows, columns]
            real = float((taps * real_w[o]).sum()) + real_b[o]
            level = np.clip(real / out_type[0] + out_type[1], -128, 127)
            assert abs(int(got[n, o, i, j]) - level) <= 0.52, (n, o, i, j)  # rounded twice


def test_reference_elementwise_and_pools_are_the_real_operations():
    rng = np.random.default_rng(1002)
    a, b = levels(rng, 3, 50), levels(rng, 1, 50)
    ta, tb, to = (0.05, -10), (0.02, 30), (0.06, 4)
    real = ref.dequantize(a, *ta).astype(np.float64) + ref.dequantize(b, *tb)
    assert np.abs(ref.add(a, b, ta, tb, to) - np.clip(real / to[0] + to[1], -128, 127)).max() <= 0.52
    real = ref.dequantize(a, *ta).astype(np.float64) * ref.dequantize(b, *tb)
    assert np.abs(ref.mul(a, b, ta, tb, (0.02, 4)) - np.clip(real / 0.02 + 4, -128, 127)).max() <= 0.52
    real = ref.dequantize(a, *ta).astype(np.float64)
    assert np.abs(ref.rescale(a, ta, to, "relu") - np.clip(np.maximum(real, 0) / to[0] + to[1], -128, 127)).max() \
        <= 0.52
    x = levels(rng, 1, 2, 7, 7).astype(np.int64)
    padded = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (1, 1), (1, 1)], constant_values=np.nan)
    windows = np.stack([padded[:, :, i:i + 7:2, j:j + 7:2] for i in range(3) for j in range(3)])
    np.testing.assert_array_equal(ref.max_pool(x, (3, 3), (2, 2), (1, 1, 1, 1)), np.nanmax(windows, axis=0))
    mean = np.nanmean(windows, axis=0)
    rounded = np.sign(mean) * np.floor(np.abs(mean) + 0.5)
    np.testing.assert_array_equal(ref.avg_pool(x, (3, 3), (2, 2), (1, 1, 1, 1)), rounded)
    with_pads = np.nan_to_num(windows, nan=7.0).mean(axis=0)  # offset 7: padded taps are real zeros
    np.testing.assert_array_equal(ref.avg_pool(x, (3, 3), (2, 2), (1, 1, 1, 1), True, 7),
                                  np.sign(with_pads) * np.floor(np.abs(with_pads) + 0.5))


def test_reference_softmax_is_the_real_softmax():
    rng = np.random.default_rng(1003)
    for size, input_scale in ((10, 0.05), (10, 0.25), (1000, 0.08), (100, 0.0123)):
        x = levels(rng, 3, size)
        x64 = x.astype(np.int64)
        real = np.exp((x64 - x64.max(axis=1, keepdims=True)) * float(np.float32(input_scale)))
        probability = real / real.sum(axis=1, keepdims=True)
        expected = np.clip(probability * 256 - 128, -128, 127)
        assert np.abs(ref.softmax_s8(x, input_scale) - expected).max() <= 1.0


# ----------------------------------------------------------------------------- lookup table


def lookup_table_text(x_t: str, table_t: str, y_t: str) -> str:
    """The glow lines of an int_lookup_table of input x (of type `x_t`) through the table t,
    saved as y."""
    return f"""
  %x = glow.placeholder "x" : {x_t}
  %t = glow.constant "t" elided : {table_t}
  %y = glow.int_lookup_table %x, %t : ({x_t}, {table_t}) -> {y_t}
  glow.save %y as "y" : {y_t}"""


def check_lookup_table_kernel(shape: tuple[int, ...], seed: int, selected: str, without_feature: str,
                              table: np.ndarray | None = None) -> None:
    """An int8 lookup table of random levels (every level present where the tensor has 256 or
    more) through a random table (or `table`): the default host build's IR names the `selected`
    kernel, the build with `-mattr=<without_feature>` does not, and both give `table[x + 128]`
    bit for bit."""
    from glowmlir.targets import resolve_target

    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    x = rng.permutation(np.resize(np.arange(-128, 128), size)).astype(np.int8).reshape(shape)
    if table is None:
        table = rng.integers(-128, 128, 256, dtype=np.int8)
    x_t, table_t, y_t = tensor(shape, q8(0.05, 3)), tensor((256,), q8(0.02, -7)), tensor(shape, q8(0.02, -7))
    body = lookup_table_text(x_t, table_t, y_t)
    chosen = build(body, {"t": table})
    assert selected in chosen.ir["glowll"]
    generic = build(body, {"t": table}, target=resolve_target(mattr=without_feature))
    assert selected not in generic.ir["glowll"]
    for bundle in (chosen, generic):
        np.testing.assert_array_equal(bundle.run({"x": x})["y"], table[x.astype(np.int64) + 128])


def test_int_lookup_table_reads_the_entry_of_each_level():
    """dest = table[x + 128] for every int8 level (a random table, every level present)."""
    rng = np.random.default_rng(970)
    x = rng.permutation(np.arange(-128, 128, dtype=np.int8)).reshape(4, 64)
    table = rng.integers(-128, 128, 256, dtype=np.int8)
    x_t, table_t, y_t = tensor(x.shape, q8(0.05, 3)), tensor((256,), q8(0.02, -7)), tensor(x.shape, q8(0.02, -7))
    body = lookup_table_text(x_t, table_t, y_t)
    np.testing.assert_array_equal(run(body, {"x": x}, {"t": table})["y"], table[x.astype(np.int64) + 128])
