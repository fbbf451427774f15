"""Size-first builds (`-opt-level=Os/Oz`, docs/code-size.md): int8 layers read their quantization
numbers from records (`glowll-quantization-records`), so equal-shaped layers share one kernel,
and outputs stay bit-identical to the independent int8 reference
(tests/support/int8_reference.py) on the emulated boards."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from xdsl.passes import PassPipeline

import glowmlir
from glowmlir.backends.arm_dsp.select_kernels import SelectArmDspKernels
from glowmlir.backends.size_first.select_kernels import ShapeParameterisedKernels
from glowmlir.backends.x86.target import has_avx512_vnni
from glowmlir.compiler import CompileOptions, QuantizationOptions
from glowmlir.elf import function_ranges
from glowmlir.pipeline import pipeline_spec
from glowmlir.runtime.boards import run_on_board, target_for
from glowmlir.target import HOST
from glowmlir.targets import resolve_target
from glowmlir.transforms import all_passes
from tests.support.models import small_convnet
from tests.unit.test_arm_dsp_kernels import all_cases, fully_connected_case
from tests.unit.test_kernel_libraries import profile_for
from tests.unit.test_quantized_kernels import CONVOLUTIONS, build, convolution_case


def kernel_names(bundle, kind: str) -> set[str]:
    """The object's kernel functions of one kind (`convolution`, `fully_connected`)."""
    return {name for name in function_ranges(bundle.object_code) if re.fullmatch(rf"net_\d+_{kind}", name)}


def run_cases(cases, board: str | None, level: str | None = None, mattr: str | None = None):
    """Builds the cases' layers as one net for `board` at `level` (None: for this host, at
    `level` or by default, with `mattr`'s features changed), runs it there and checks each
    layer's outputs against its reference; the bundle."""
    body = "".join(case.body for case in cases)
    constants = {name: value for case in cases for name, value in case.constants.items()}
    inputs = {name: value for case in cases for name, value in case.inputs.items()}
    if board is None:
        bundle = build(body, constants, target=None if level is None and mattr is None
                       else resolve_target(opt_level=level, mattr=mattr))
        outputs = bundle.run(inputs)
    else:
        bundle = build(body, constants, target=target_for(board, level))
        outputs = run_on_board(bundle, board, inputs).outputs
    for case in cases:
        actual = outputs[case.output].reshape(case.expected.shape).astype(np.int8)
        np.testing.assert_array_equal(actual, case.expected, err_msg=case.output)
    return bundle


def equal_shaped_layers():
    """Pairs of int8 layers of one shape each, with their own scales and zero points (seeded
    so that no zero point is 0 and every pair has the same zero numbers)."""
    convolution = CONVOLUTIONS["3x3_pad1"]  # rows of pairs: the DSP kernel's tiles and edges
    pointwise = CONVOLUTIONS["1x1"]
    return [convolution_case(11, convolution, activation="relu", suffix="_a"),
            convolution_case(12, convolution, activation="relu", suffix="_b"),
            convolution_case(13, pointwise, suffix="_c"), convolution_case(14, pointwise, suffix="_d"),
            fully_connected_case(15, 2, 37, 10, False, True, "_e"),
            fully_connected_case(17, 2, 37, 10, False, True, "_f")]


def layers_of_many_shapes():
    """Int8 1x1 convolutions of three shapes (7 output channels: an odd count) and
    FullyConnected of two (3 rows; 1 row), random weights, inputs and numbers, per tensor,
    every zero point nonzero (seeded so): alike but for their shapes, with an even count of
    input channels each (the DSP-extension layout's pairs)."""
    pointwise = [((1, 8, 6, 6), (6, 8, 1, 1)), ((1, 4, 5, 3), (10, 4, 1, 1)), ((1, 16, 2, 2), (7, 16, 1, 1))]
    convolutions = [convolution_case(seed, (x, w, (1, 1), (0, 0, 0, 0), (1, 1), 1), suffix=f"_p{index}")
                    for index, (seed, (x, w)) in enumerate(zip((20, 21, 23), pointwise))]
    return convolutions + [fully_connected_case(30, 3, 12, 5, False, True, "_f0"),
                           fully_connected_case(31, 1, 20, 9, False, True, "_f1")]


@pytest.mark.parametrize("board", ["mps2-an500", "mps2-an385"])
def test_layers_of_many_shapes_share_one_shape_parameterised_kernel(board):
    """At -Oz the five layers take the shape-parameterised matrix product, each layer's
    outputs the int8 reference's. On the M3 (the portable form) all five call one kernel
    function. On the M7 the three convolutions take the DSP-extension form (int16 weight
    pairs, two pixels x two output channels a step: 7 channels end in an overlapping block,
    15 pixels in an overlapping pair) and call one kernel; the FullyConnected keep their own
    DSP kernels (int8 weights as they are)."""
    cases = layers_of_many_shapes()
    bundle = run_cases(cases, board, "Oz")
    convolutions = kernel_names(bundle, "convolution")
    if board == "mps2-an385":
        assert bundle.ir["glowll"].count('microkernel = #glowll.microkernel<"shape-parameterised">') == len(cases)
        assert len(convolutions | kernel_names(bundle, "fully_connected")) == 1
    else:
        assert bundle.ir["glowll"].count('microkernel = #glowll.microkernel<"shape-parameterised-dsp">') == 3
        assert bundle.ir["glowll"].count('microkernel = #glowll.microkernel<"arm-dsp"') == 2
        assert len(convolutions) == 1 and len(kernel_names(bundle, "fully_connected")) == 2


def depthwise_layers_of_many_shapes():
    """Int8 depthwise convolutions, random weights, inputs and numbers: 3x3 ones of four shapes
    (strides 1 and 2, symmetric and TF-style asymmetric pads, unpadded; odd and even output
    widths; per tensor with every zero point nonzero, seeded so), two with a clip and two
    with a relu (whose clamp bounds are zero in other places: two kinds of code), two 5x3
    ones of two shapes (per channel, stride 1 x 2), and one of channel multiplier 2 (no
    candidate: it keeps its per-layer kernel)."""
    geometries = [((1, 6, 7, 5), (1, 1), (1, 1, 1, 1)), ((1, 4, 9, 8), (2, 2), (0, 0, 1, 1)),
                  ((1, 5, 6, 6), (2, 2), (1, 1, 1, 1)), ((1, 3, 5, 4), (1, 1), (0, 0, 0, 0))]
    cases = [convolution_case(40 + index, (x, (x[1], 1, 3, 3), strides, pads, (1, 1), x[1]),
                              activation=("clip", "relu")[index // 2], suffix=f"_d{index}")
             for index, (x, strides, pads) in enumerate(geometries)]
    tall = [((1, 3, 8, 6), (1, 2)), ((1, 2, 5, 9), (1, 2))]
    cases += [convolution_case(50 + index, (x, (x[1], 1, 5, 3), strides, (2, 1, 2, 1), (1, 1), x[1]),
                               per_channel=True, activation="relu", suffix=f"_t{index}")
              for index, (x, strides) in enumerate(tall)]
    return cases + [convolution_case(60, CONVOLUTIONS["depthwise_x2"], suffix="_m")]


@pytest.mark.parametrize("board", ["mps2-an500", "mps2-an385", "mps3-an547"])
def test_depthwise_layers_of_many_shapes_share_one_shape_parameterised_kernel(board):
    """At -Oz the depthwise layers take the shape-parameterised depthwise kernel, one kernel
    function for each kind of code (the 3x3 ones with a clip, the 3x3 ones with a relu, the
    5x3 ones, per channel: their tables read with the record's channel count), the channel
    multiplier 2 one its own (on the M7 and M55 a DSP kernel function; the M3's generic kernel
    is inlined). The M7 and M55 (DSP kernels at -Oz) take the kernel's DSP form, the M3 the
    portable one. Each layer's outputs are the int8 reference's."""
    cases = depthwise_layers_of_many_shapes()
    bundle = run_cases(cases, board, "Oz")
    dsp = board != "mps2-an385"
    form = "shape-parameterised-depthwise-dsp" if dsp else "shape-parameterised-depthwise"
    assert bundle.ir["glowll"].count(f'microkernel = #glowll.microkernel<"{form}">') == len(cases) - 1
    assert len(kernel_names(bundle, "convolution")) == (4 if dsp else 3)


def layers_of_a_bias_kind(bias_kind: str, per_channel: bool):
    """Int8 1x1 convolutions of two shapes (an even count of input channels: the DSP form's
    pairs) and 3x3 depthwise ones of two (padded, strides 1 and 2; a relu), random weights,
    inputs and numbers, per tensor or `per_channel`, whose biases are of `bias_kind`
    (`convolution_case`)."""
    pointwise = [((1, 6, 5, 3), (4, 6, 1, 1)), ((1, 10, 2, 4), (5, 10, 1, 1))]
    depthwise = [((1, 4, 6, 5), (1, 1)), ((1, 3, 7, 8), (2, 2))]
    numbers = dict(per_channel=per_channel, bias_kind=bias_kind)
    return ([convolution_case(70 + index, (x, w, (1, 1), (0, 0, 0, 0), (1, 1), 1), suffix=f"_p{index}", **numbers)
             for index, (x, w) in enumerate(pointwise)]
            + [convolution_case(75 + index, (x, (x[1], 1, 3, 3), strides, (1, 1, 1, 1), (1, 1), x[1]),
                                activation="relu", suffix=f"_d{index}", **numbers)
               for index, (x, strides) in enumerate(depthwise)])


def shape_parameterised_ops(bundle) -> list[str]:
    """The glowll lines of the layers that take a shape-parameterised kernel."""
    return [line for line in bundle.ir["glowll"].splitlines()
            if 'microkernel = #glowll.microkernel<"shape-parameterised' in line]


@pytest.mark.parametrize("board", ["mps2-an500", "mps2-an385", "mps3-an547"])
@pytest.mark.parametrize("bias_kind, per_channel, folded", [("int8", False, False), ("large", False, True),
                                                           ("large", True, True)])
def test_shape_parameterised_kernels_take_an_unfolded_offset_and_the_general_requantization(
        board, bias_kind, per_channel, folded):
    """The kernels' paths that the layers above (an int32 bias of a few thousand accumulator
    units: the input zero point folds into it, the requantization is narrow) leave untaken,
    at -Oz, each layer's outputs the int8 reference's. An Int8 bias of its own scale is not
    in accumulator units: the input zero point is subtracted at run time, and the
    requantization is the general one (the narrow one needs a bias bound at compile time in
    accumulator units). A bias of 2^30 accumulator units (per channel: as a near-dead
    filter's tiny scale makes a bias) folds, but its accumulators, doubled, could leave
    int32: the general requantization, per tensor and per channel (its table read with the
    record's channel count). On the M3 the portable forms, on the M7 and M55 the DSP ones."""
    cases = layers_of_a_bias_kind(bias_kind, per_channel)
    bundle = run_cases(cases, board, "Oz")
    suffix = "-dsp" if board != "mps2-an385" else ""
    layers = shape_parameterised_ops(bundle)
    assert sum(f'microkernel = #glowll.microkernel<"shape-parameterised{suffix}">' in line for line in layers) == 2
    assert sum(f'microkernel = #glowll.microkernel<"shape-parameterised-depthwise{suffix}">' in line
               for line in layers) == 2
    assert all(("folded_input_offset" in line) == folded and "narrow_requantization" not in line
               and ("requantization %" in line) == per_channel for line in layers)


UNLIKE_ON_CORTEX_M = {
    # what sets the third layer apart: its `convolution_case` arguments
    "unfoldable bias": dict(bias_kind="lowest"),  # less the input zero point x its weight sum it leaves int32
    "left shift": dict(output_scale=1 / 3),  # an output scale below the accumulators': requantize by 3
}


@pytest.mark.parametrize("board", ["mps2-an500", "mps2-an385"])
@pytest.mark.parametrize("unlike", list(UNLIKE_ON_CORTEX_M))
def test_a_layer_unlike_the_others_is_not_counted_among_them(board, unlike):
    """Two 1x1 convolutions with int32 biases (the input zero point folds into them) and one
    of a third shape that differs in what the kernel compiles in: a bias of int32's lowest
    (`bias_kind="lowest"`: less the input zero point x its weight sum it would leave int32,
    so it cannot fold and the kernel reads the input zero point), or a left shift (an output
    scale a third of its accumulators'; a record's shift keeps its direction in the code,
    `kernel_parameters`). Not alike, the third keeps its per-layer kernel at -Oz and the
    other two share the shape-parameterised one (portable on the M3, DSP on the M7; on the
    M7 the unfoldable bias's general requantization tells it apart too); outputs the int8
    reference's."""
    pointwise = [((1, 6, 5, 3), (4, 6, 1, 1)), ((1, 10, 2, 4), (5, 10, 1, 1)), ((1, 8, 3, 3), (6, 8, 1, 1))]
    cases = [convolution_case(80 + index, (x, w, (1, 1), (0, 0, 0, 0), (1, 1), 1), suffix=f"_p{index}",
                              **(UNLIKE_ON_CORTEX_M[unlike] if index == 2 else {}))
             for index, (x, w) in enumerate(pointwise)]
    bundle = run_cases(cases, board, "Oz")
    lines = [line for line in bundle.ir["glowll"].splitlines() if "glowll.convolution" in line]
    assert ["shape-parameterised" in line for line in lines] == [True, True, False]
    assert all("folded_input_offset" in line for line in lines[:2])
    assert unlike != "unfoldable bias" or "folded_input_offset" not in lines[2]


@pytest.mark.parametrize("board, level, form", [
    ("mps2-an500", "O3", None), ("mps2-an500", "Os", None), ("mps2-an500", "Oz", "dsp"),
    ("mps2-an385", "O3", None), ("mps2-an385", "Os", "portable"), ("mps2-an385", "Oz", "portable"),
    ("mps3-an547", "Os", None), ("mps3-an547", "Oz", "dsp")])
def test_which_builds_take_shape_parameterised_kernels(board, level, form):
    """-Oz on every core; -Os only on the M3 (on the M7 and M55 the per-layer DSP and Helium
    kernels are 1.4x to 3.7x faster, docs/code-size.md); never -O3. The pipeline's printed
    spec parses back into the same passes."""
    pipeline = CompileOptions(target=target_for(board, level)).pipeline()
    chosen = [p for p in pipeline.passes if isinstance(p, ShapeParameterisedKernels)]
    assert [("dsp" if p.dsp else "portable") for p in chosen] == ([form] if form else [])
    assert PassPipeline.parse_spec(all_passes(), pipeline_spec(pipeline.glowll)).passes == pipeline.glowll


def test_equal_shaped_int8_layers_share_one_kernel_in_a_size_build():
    """Six layers, three shapes, on the M7 (whose DSP microkernels stay functions of their
    own, so the object's symbols count them; the M3's generic kernels are inlined): three
    kernels at -Os, six at -O3, where each layer's numbers are compiled into its kernel; the
    reference's outputs either way."""
    cases = equal_shaped_layers()
    size_first, fast = run_cases(cases, "mps2-an500", "Os"), run_cases(cases, "mps2-an500", "O3")
    records = re.findall(r'"\w+_parameters" \{value = dense<\[([^\]]*)\]>', size_first.ir["glowll"])
    assert len(set(records)) == len(cases)  # every layer has numbers of its own
    assert "_parameters\"" not in fast.ir["glowll"]
    assert len(kernel_names(size_first, "convolution")) == 2
    assert len(kernel_names(size_first, "fully_connected")) == 1
    assert len(kernel_names(fast, "convolution")) == 4
    assert len(kernel_names(fast, "fully_connected")) == 2


@pytest.mark.parametrize("board, level, loop_pairs", [
    ("mps2-an500", "O3", 0), ("mps2-an500", "Os", 2), ("mps2-an500", "Oz", 2), ("mps2-an386", "Oz", 2),
    ("mps2-an505", "Os", 2), ("mps3-an547", "O3", 0), ("mps3-an547", "Os", 1), ("mps3-an547", "Oz", 1)])
def test_a_size_first_build_tells_the_dsp_kernels_their_loop_pairs(board, level, loop_pairs):
    """The kernel-selection pass of each core and level carries the channel pairs a step its
    DSP kernels' loops take in a size-first build (0 at -O3: speed first), the M4, M7 and M33
    two and the M55 one (`arm_dsp.LOOP_PAIRS`); the glowll stage's printed pipeline parses back
    (as glow-opt -p does) into the same passes."""
    pipeline = CompileOptions(target=target_for(board, level)).pipeline()
    selection = next(p for p in pipeline.passes if isinstance(p, SelectArmDspKernels))
    assert selection.loop_pairs == loop_pairs
    assert (f"loop-pairs={loop_pairs}" in pipeline.spec()) == bool(loop_pairs)
    glowll_stage = pipeline_spec(pipeline.glowll)
    assert PassPipeline.parse_spec(all_passes(), glowll_stage).passes == pipeline.glowll


@pytest.mark.skipif(not has_avx512_vnni(HOST), reason="the host has no AVX-512 VNNI")
def test_equal_shaped_int8_layers_share_one_kernel_on_a_vnni_host_at_o3():
    """At -O3 on a host with AVX-512 VNNI, only layers with an equal-shaped partner get records
    (`glowll-quantization-records{partnered}`, after the kernel selection, so that
    filters packed alike are what makes partners): two per-channel 3x3 convolutions of one
    shape and input zero point (which the VNNI kernel compiles in), each with its own scales,
    on rows narrower than 16 (their integer requantization tables: no float step table, as
    `pixel_tiles_only`), share one kernel. Two per-channel depthwise layers of one shape take
    proved float step tables (`float_step_table`), which no record holds: a kernel each; so
    does a layer of a shape of its own. Every output is the reference's."""
    depthwise, convolution = CONVOLUTIONS["depthwise"], CONVOLUTIONS["3x3_pad1"]
    cases = [convolution_case(21, depthwise, per_channel=True, activation="relu", suffix="_a"),
             convolution_case(22, depthwise, per_channel=True, activation="relu", suffix="_b"),
             convolution_case(23, convolution, per_channel=True, suffix="_c", input_offset=5),
             convolution_case(24, convolution, per_channel=True, suffix="_d", input_offset=5),
             convolution_case(25, CONVOLUTIONS["stride2"], suffix="_e")]
    bundle = run_cases(cases, None)
    records = re.findall(r'"(\w+)_parameters" \{value = dense<\[([^\]]*)\]>', bundle.ir["glowll"])
    assert [name for name, _ in records] == ["w_c_vnni", "w_d_vnni"] and records[0][1] != records[1][1]
    assert bundle.ir["glowll"].count("float_step_table") == 2
    assert len(kernel_names(bundle, "convolution")) == 4


@pytest.mark.parametrize("board", ["mps2-an500", "mps2-an385", "mps3-an547"])
def test_size_builds_match_the_int8_reference_on_boards(board):
    """Every convolution and FullyConnected the DSP-kernel tests check (per-tensor and
    per-channel, zero points, folded input offsets, fused pools, generic fallbacks), built
    at -Oz, on the M7, on the M3 (no DSP extension) and on the M55 (the DSP kernels at -Oz)."""
    run_cases(all_cases(), board, "Oz")


def test_size_builds_on_helium_match_the_int8_reference():
    """The M55 at -Os: Helium's column and im2col kernels reading their layers' records."""
    run_cases(all_cases(), "mps3-an547", "Os")


def test_the_cifar_sized_net_at_oz_on_the_m55_matches_its_o3_build(tmp_path):
    """A regression test: at -Oz, LLVM 22's ARM low-overhead-loop pass aborted the process
    (an assertion, no message) on Helium's column kernel in this net; at -Oz the M55 runs the
    DSP kernels, with the same outputs as the -O3 build."""
    path = str(tmp_path / "convnet.onnx")
    onnx.save(small_convnet(), path)
    rng = np.random.default_rng(3)
    samples = [{"data": rng.normal(size=(1, 3, 32, 32)).astype(np.float32)} for _ in range(9)]
    profile = profile_for(path, samples[:8], str(tmp_path / "convnet.yaml"))
    outputs = []
    for level in ("O3", "Oz"):
        bundle = glowmlir.compile(path, quantization=QuantizationOptions(profile),
                                  target=target_for("mps3-an547", level))
        outputs.append(run_on_board(bundle, "mps3-an547", samples[8]).outputs["prob"])
    np.testing.assert_array_equal(outputs[0], outputs[1])


def pointwise_layers_on_vnni(per_channel: bool):
    """Int8 layers for the VNNI shape-parameterised kernel, random weights, inputs and numbers,
    weights with a zero point (per tensor; seeded so that none is 0) or per-channel scales:
    1x1 convolutions of 16 pixels or more in three groups of two shapes (a last block of 8
    output channels, none, and 4 with a relu; 25 and 30 pixels: a last tile overlapping the
    one before), and a one-pixel convolution and two FullyConnected (3 rows, 1 row) for its
    FullyConnected steps."""
    tiled = [((1, 8, 4, 4), (24, 8, 1, 1), None), ((1, 12, 5, 5), (40, 12, 1, 1), None),
             ((1, 16, 6, 7), (32, 16, 1, 1), None), ((1, 4, 9, 4), (16, 4, 1, 1), None),
             ((1, 8, 4, 5), (20, 8, 1, 1), "relu"), ((1, 20, 3, 10), (36, 20, 1, 1), "relu"),
             ((1, 24, 1, 1), (6, 24, 1, 1), None)]
    convolutions = [convolution_case(70 + index, (x, w, (1, 1), (0, 0, 0, 0), (1, 1), 1), per_channel, activation,
                                     suffix=f"_p{index}") for index, (x, w, activation) in enumerate(tiled)]
    return convolutions + [fully_connected_case(50, 3, 12, 5, per_channel, True, "_f0"),
                           fully_connected_case(51, 1, 20, 19, per_channel, True, "_f1")]


@pytest.mark.skipif(not has_avx512_vnni(HOST), reason="the host has no AVX-512 VNNI")
@pytest.mark.parametrize("per_channel", [False, True])
def test_pointwise_layers_of_many_shapes_share_vnni_shape_parameterised_kernels_at_o3(per_channel):
    """At -O3 on a host with AVX-512 VNNI the nine layers take the shape-parameterised VNNI
    matrix product (`backends/x86/vnni_shape_parameterised.py`), whose shapes come from their
    records: one kernel for each group of pixel tiles (last block of 8, of none, of 4 with a
    relu) and one for the FullyConnected steps; each layer's outputs are the int8 reference's."""
    cases = pointwise_layers_on_vnni(per_channel)
    bundle = run_cases(cases, None)
    assert bundle.ir["glowll"].count('microkernel = #glowll.microkernel<"x86-vnni-shape-parameterised">') == len(cases)
    assert len(kernel_names(bundle, "convolution") | kernel_names(bundle, "fully_connected")) == 4


@pytest.mark.skipif(not has_avx512_vnni(HOST), reason="the host has no AVX-512 VNNI")
def test_a_lone_pointwise_shape_keeps_its_own_vnni_kernel():
    """A group of one shape gains nothing from reading its shape: two layers of one shape keep
    the per-layer VNNI kernel (a kernel each: their input zero points differ, which that
    kernel compiles in)."""
    # 20 input channels: VNNI's (a shallower 1x1 is vector-pointwise-int8's, x86.select_kernels.shallow_pointwise)
    geometry = ((1, 20, 4, 4), (24, 20, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1)
    bundle = run_cases([convolution_case(60, geometry, suffix="_a"), convolution_case(61, geometry, suffix="_b")], None)
    assert "shape-parameterised" not in bundle.ir["glowll"]
    assert bundle.ir["glowll"].count('microkernel = #glowll.microkernel<"x86-vnni"') == 2


@pytest.mark.skipif(not has_avx512_vnni(HOST), reason="the host has no AVX-512 VNNI")
@pytest.mark.parametrize("level, form", [("O3", "vnni"), ("Os", "vnni"), ("Oz", "portable"),
                                         ("O3 -avx512vnni", None)])
def test_which_host_builds_take_the_vnni_shape_parameterised_kernel(level, form):
    """On a VNNI host its form at -O3 and -Os (the per-layer kernels' speed nearly kept:
    docs/code-size.md), the portable one at -Oz as on every core, none without VNNI."""
    opt_level, *mattr = level.split()
    target = resolve_target(opt_level=opt_level, mattr=mattr[0] if mattr else None)
    chosen = [p for p in CompileOptions(target=target).pipeline().passes if isinstance(p, ShapeParameterisedKernels)]
    assert [("vnni" if p.vnni else "dsp" if p.dsp else "portable") for p in chosen] == ([form] if form else [])


ODD_ONE_OUT = {
    # property: the third layer's `convolution_case` arguments
    "wide requantization": dict(bias_kind="large"),  # a bias of 2^30: its doubled sums could leave int32
    "left shift": dict(output_scale=1 / 3),  # an output scale below the accumulators': requantize by 3
    "unfolded output offset": dict(output_scale=2.0**23),  # a right shift past `OFFSET_SHIFTS`
}


@pytest.mark.skipif(not has_avx512_vnni(HOST), reason="the host has no AVX-512 VNNI")
@pytest.mark.parametrize("level", ["O3", "Os"])
@pytest.mark.parametrize("odd_one_out", list(ODD_ONE_OUT))
def test_vnni_layers_whose_output_step_differs_are_not_alike(odd_one_out, level):
    """Three 1x1 convolutions of three shapes (a last block of 8 output channels each),
    random weights, inputs and numbers, per tensor; the third differs from the first two
    only in one property of its output step that the VNNI shape-parameterised kernel
    compiles in (from the layer it lowers, not its record): a requantization that is not
    narrow, a left shift, or a right shift too long for the narrow step to add the output
    zero point in its rounding term. The first two share the shape-parameterised kernel;
    the third, alike with no other shape, keeps its own per-layer VNNI kernel (were it
    counted among the first two, it would take the shape-parameterised form and still a
    kernel of its own). Each layer's outputs are the int8 reference's."""
    # the third of 20 input channels: VNNI's per-layer kernel (x86.select_kernels.shallow_pointwise)
    geometries = [((1, 8, 4, 4), (24, 8, 1, 1)), ((1, 12, 5, 5), (40, 12, 1, 1)), ((1, 20, 4, 6), (8, 20, 1, 1))]
    cases = [convolution_case(90 + index, (x, w, (1, 1), (0, 0, 0, 0), (1, 1), 1), suffix=f"_p{index}",
                              **(ODD_ONE_OUT[odd_one_out] if index == 2 else {}))
             for index, (x, w) in enumerate(geometries)]
    bundle = run_cases(cases, None, level)
    lines = [line for line in bundle.ir["glowll"].splitlines() if "glowll.convolution" in line]
    assert [re.search(r'microkernel = #glowll.microkernel<"([\w-]+)"', line).group(1) for line in lines] == [
        "x86-vnni-shape-parameterised", "x86-vnni-shape-parameterised", "x86-vnni"]
    assert ["narrow_requantization" in line for line in lines] == [True, True, odd_one_out != "wide requantization"]
    assert len(kernel_names(bundle, "convolution")) == 2
