"""`-memory-plan`: the activations plan drawn, and read back from the picture."""

from __future__ import annotations

import itertools
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import glowmlir
from glowmlir.memory_plan import MemoryPlan, svg_rectangles
from tests.support.forks import run_module
from tests.support.models import LENET
from tests.unit.test_kernel_libraries import lenet_profile  # noqa: F401 - a fixture

LENET_PATH = os.path.abspath(LENET)


def tool(*arguments: str, cwd) -> subprocess.CompletedProcess:
    return run_module("glowmlir.cli.compile", *arguments, cwd=cwd, env={**os.environ, "PYTHONPATH": os.getcwd()})


def residual_net(path) -> str:
    """conv → relu → conv, + the first relu's output (a residual), → relu, concat with a branch,
    sigmoid (in place), a 1x1 convolution."""
    rng = np.random.default_rng(1)

    def weight(name, shape):
        return numpy_helper.from_array(rng.normal(0, 0.3, shape).astype(np.float32), name)

    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv_a"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu_a"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], name="conv_b"),
             helper.make_node("Add", ["c2", "r1"], ["s"], name="residual"),
             helper.make_node("Relu", ["s"], ["r2"], name="relu_b"),
             helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"], name="branch"),
             helper.make_node("Concat", ["r2", "c3"], ["cat"], axis=1, name="concat"),
             helper.make_node("Sigmoid", ["cat"], ["squashed"], name="squash"),
             helper.make_node("Conv", ["squashed", "w4", "b4"], ["y"], name="head")]
    graph = helper.make_graph(nodes, "residual", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [weight("w1", (8, 4, 3, 3)), weight("b1", (8,)), weight("w2", (8, 8, 3, 3)),
                               weight("b2", (8,)), weight("w3", (4, 8, 1, 1)), weight("b3", (4,)),
                               weight("w4", (3, 12, 1, 1)), weight("b4", (3,))])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return str(path)


def pixel_boxes(svg: str, plan: MemoryPlan) -> list[tuple[float, float, float, float]]:
    boxes = svg_rectangles(svg)
    assert sorted(boxes) == sorted(f"buffer-{k}" for k in range(len(plan.buffers)))
    return [boxes[f"buffer-{k}"] for k in range(len(plan.buffers))]


def assert_no_overlap_where_live_together(boxes, epsilon=0.01) -> None:
    """Read from the picture: two rectangles sharing an instruction column share no bytes."""
    for (ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1) in itertools.combinations(boxes, 2):
        if ax0 < bx1 - epsilon and bx0 < ax1 - epsilon:  # live at a common instruction
            assert ay1 <= by0 + epsilon or by1 <= ay0 + epsilon, ((ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1))


@pytest.mark.parametrize("reuse", [True, False])
def test_svg_has_one_rectangle_per_buffer_and_none_overlap_while_live(reuse, tmp_path):
    for model in (LENET_PATH, residual_net(tmp_path / "residual.onnx")):
        bundle = glowmlir.compile(model, reuse_activations=reuse)
        plan = bundle.memory_plan
        assert len(plan.buffers) == bundle.ir["glowll"].count("glowll.alloc")
        svg = plan.picture(".svg").decode()
        boxes = pixel_boxes(svg, plan)
        assert_no_overlap_where_live_together(boxes)
        if not reuse:  # every buffer its own bytes: no two rectangles overlap at all
            for (ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1) in itertools.combinations(boxes, 2):
                assert ay1 <= by0 + 0.01 or by1 <= ay0 + 0.01
        assert 'id="peak-instruction"' in svg and "lower bound" in svg
        assert svg.count("<title>") >= len(plan.buffers)


def test_the_plan_matches_the_allocation(tmp_path):
    bundle = glowmlir.compile(residual_net(tmp_path / "residual.onnx"))
    plan = bundle.memory_plan
    assert plan.region_size == bundle.layout.activations_size
    assert plan.lower_bound == bundle.layout.activations_lower_bound
    assert max(b.offset + b.size for b in plan.buffers) == plan.region_size
    assert plan.live_bytes(plan.peak_instruction) == max(plan.live_bytes(t) for t in range(len(plan.instructions)))
    roles = {b.node: b.role for b in plan.buffers}
    assert "in place" in roles.values()  # the residual add overwrites its convolution's input, or concat in place
    assert {b.node for b in plan.buffers} <= set(plan.instructions)


def test_cli_writes_png_svg_and_html(tmp_path):
    for extension in ("svg", "png", "html"):
        result = tool(f"-model={LENET_PATH}", "-emit-bundle=b", f"-memory-plan=plan.{extension}", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
    assert (tmp_path / "plan.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = (tmp_path / "plan.html").read_text()
    plan = glowmlir.compile(LENET_PATH).memory_plan
    assert html.count("<title>") == len(plan.buffers) + 1 and html.count("<tr><td>") == len(plan.buffers)
    assert "_conv2_Conv (convolution, fused)" in html


def test_a_bad_extension_is_refused_before_compiling(tmp_path):
    result = tool(f"-model={LENET_PATH}", "-emit-bundle=b", "-memory-plan=plan.jpg", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == 'glow-compile: error: -memory-plan="plan.jpg": expected a .svg, .png or .html file'
    assert not (tmp_path / "b").exists()


def test_library_scratch_is_shown(lenet_profile):  # noqa: F811 - the fixture imported above
    from glowmlir.transforms.quantization_options import QuantizationOptions

    bundle = glowmlir.compile(LENET_PATH, quantization=QuantizationOptions(lenet_profile), kernel_library="cmsis-nn",
                              memory_fusion=False)
    scratch = [b for b in bundle.memory_plan.buffers if b.role == "library scratch"]
    assert scratch and max(b.size for b in scratch) == bundle.layout.library_scratch
    assert all(b.first == b.last for b in scratch)  # live for its one call
    boxes = pixel_boxes(bundle.memory_plan.picture(".svg").decode(), bundle.memory_plan)
    assert_no_overlap_where_live_together(boxes)
