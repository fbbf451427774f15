"""`-dump-graph-DAG`: the graph as DOT, or drawn by Graphviz, with what a user looks for on the
nodes (names, fused parts, quantized types)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

import glowmlir
from glowmlir.dialects import glow
from glowmlir.graph_dot import graph_dot
from tests.support.models import LENET

LENET_PATH = os.path.abspath(LENET)
IMAGES = os.path.join(os.path.dirname(LENET_PATH), "images")
SVG = "{http://www.w3.org/2000/svg}"


def tool(program: str, *arguments: str, cwd, env=None) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": os.getcwd(), **(env or {})}
    return subprocess.run([sys.executable, "-m", f"glowmlir.cli.{program}", *arguments], capture_output=True,
                          text=True, cwd=cwd, env=environment)


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    directory = tmp_path_factory.mktemp("graph")
    assert tool("profile", f"-model={LENET_PATH}", "-image-mode=0to1", IMAGES, "-dump-profile=p.yaml",
                cwd=directory).returncode == 0
    return str(directory / "p.yaml")


def node_labels(dot: str) -> list[str]:
    return [label.replace("\\n", "\n") for label in re.findall(r'\[label="((?:[^"\\]|\\.)*)"', dot)]


def test_dot_has_a_node_per_op_and_an_edge_per_use():
    bundle = glowmlir.compile(LENET_PATH)
    module_ops = bundle.ir["glow"].count(" = glow.") + bundle.ir["glow"].count("glow.save ")
    assert len(node_labels(bundle.graph_dot)) == module_ops
    assert bundle.graph_dot.count(" -> ") == sum(len(re.findall(r"%\d+", line.split("=", 1)[1].split(":")[0]))
                                                 if " = glow." in line else line.count("%")
                                                 for line in bundle.ir["glow"].splitlines()
                                                 if "glow." in line and "glow.function" not in line)


def test_nodes_show_names_fusions_and_quantized_types(profile, tmp_path):
    from glowmlir.transforms.quantization_options import QuantizationOptions

    bundle = glowmlir.compile(LENET_PATH, quantization=QuantizationOptions(profile))
    labels = node_labels(bundle.graph_dot)
    conv1 = next(label for label in labels if "_conv1_Conv" in label)
    assert conv1.splitlines()[:3] == ["convolution", "_conv1_Conv", "+ maxpool 2x2 /2"]
    assert re.fullmatch(r"1x20x12x12 i8 scale=[0-9.e-]+ offset=-?\d+", conv1.splitlines()[3])
    fc1 = next(label for label in labels if "_fc1_Gemm" in label)
    assert "+ relu" in fc1.splitlines()
    assert any(label.startswith("quantize\n") for label in labels)
    assert re.search(r'label="quantize[^\]]*fillcolor=orange', bundle.graph_dot)
    assert "placeholder\ndata\n1x1x28x28 f32" in labels


def test_svg_and_png_are_drawn_by_graphviz(profile, tmp_path):
    from glowmlir.transforms.quantization_options import QuantizationOptions

    result = tool("compile", f"-model={LENET_PATH}", f"-load-profile={profile}", "-emit-bundle=b",
                  "-dump-graph-DAG=graph.svg", "-dump-graph-DAG-before-compile=imported.png", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    root = ElementTree.parse(tmp_path / "graph.svg").getroot()
    nodes = [g for g in root.iter(f"{SVG}g") if g.get("class") == "node"]
    texts = [" ".join(t.text or "" for t in node.iter(f"{SVG}text")) for node in nodes]
    quantized = glowmlir.compile(LENET_PATH, quantization=QuantizationOptions(profile))
    assert len(nodes) == len(node_labels(quantized.graph_dot))
    assert any("_conv2_Conv" in text and "+ maxpool 2x2 /2" in text and "i8 scale=" in text for text in texts)
    assert (tmp_path / "imported.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    dot = tool("compile", f"-model={LENET_PATH}", "-emit-bundle=b", "-dump-graph-DAG=graph.dot", cwd=tmp_path)
    assert dot.returncode == 0 and (tmp_path / "graph.dot").read_text().startswith("digraph DAG {")


def test_imported_graph_is_the_one_before_any_pass(tmp_path):
    result = tool("compile", f"-model={LENET_PATH}", "-emit-bundle=b", "-dump-graph-DAG-before-compile=g.dot",
                  cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    labels = node_labels((tmp_path / "g.dot").read_text())
    assert sum(label.startswith("max_pool\n") for label in labels) == 2  # not yet fused into the convolutions
    assert not any("+ maxpool" in label for label in labels)


def test_a_picture_without_graphviz_is_refused_before_compiling(tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    for program in ("cc", "ld", "gcc"):  # the host runner's linker, not Graphviz
        if shutil.which(program):
            os.symlink(shutil.which(program), bare / program)
    result = tool("compile", f"-model={LENET_PATH}", "-emit-bundle=b", "-dump-graph-DAG=g.svg", cwd=tmp_path,
                  env={"PATH": str(bare)})
    assert result.returncode == 2
    assert result.stderr.strip() == ('glow-compile: error: -dump-graph-DAG="g.svg": drawing SVG needs Graphviz\'s '
                                     '"dot" (apt-get install graphviz, or scripts/setup.sh); a .dot file needs nothing')
    assert not (tmp_path / "b").exists() and not (tmp_path / "g.svg").exists()


def test_labels_are_escaped_for_dot():
    from xdsl.dialects.builtin import ModuleOp, StringAttr
    from xdsl.ir import Block, Region

    block = Block()
    x = glow.PlaceholderOp('in"put\\', glow.tensor([2], glow.f32))
    relu = glow.ReluOp(x.result)
    relu.attributes[glow.NODE_NAME] = StringAttr('say "hi"')
    block.add_ops([x, relu, glow.SaveOp(relu.result, "out")])
    dot = graph_dot(ModuleOp([glow.FunctionOp("net", Region(block))]))
    assert 'placeholder\\nin\\"put\\\\\\n2 f32' in dot and 'say \\"hi\\"' in dot
    drawn = subprocess.run(["dot", "-Tsvg"], input=dot.encode(), capture_output=True)
    assert drawn.returncode == 0, drawn.stderr
