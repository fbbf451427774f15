"""Bundle names that C cannot take: the header must compile and the bundle must link and run.

A network named `int`, `main` or `memcpy`, or I/O names whose header macros clash, used to
give a header that does not compile (or an object that replaces libc's `memcpy`). Each case
here is compiled, its header included by a C program (with the C library headers) built
with `-Wall -Werror`, linked with the bundle's object, and run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import glowmlir
from glowmlir.bundle import MAX_NETWORK_NAME, bundle_name
from glowmlir.errors import GlowWarning
from glowmlir.names import is_reserved_c_name, legalize_name

CC = shutil.which("cc")


def add_model(path: str, first: str = "a", second: str = "b") -> str:
    """y = first + second, float[4] each."""
    graph = helper.make_graph([helper.make_node("Add", [first, second], ["y"])], "g",
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in (first, second)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), path)
    return path


MAIN = """\
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "{name}.h"

static uint8_t constant_region[{upper}_CONSTANT_MEM_SIZE + 1] GLOW_MEM_ALIGN({upper}_MEM_ALIGN);
static uint8_t mutable_region[{upper}_MUTABLE_MEM_SIZE] GLOW_MEM_ALIGN({upper}_MEM_ALIGN);
static uint8_t activations[{upper}_ACTIVATIONS_MEM_SIZE + 1] GLOW_MEM_ALIGN({upper}_MEM_ALIGN);

int main(void) {{
  const float first[4] = {{1, 2, 3, 4}}, second[4] = {{10, 20, 30, 40}};
  memcpy(GLOW_GET_ADDR(mutable_region, {upper}_{first}), first, sizeof first);
  memcpy(GLOW_GET_ADDR(mutable_region, {upper}_{second}), second, sizeof second);
  if ({name}(constant_region, mutable_region, activations) != GLOW_SUCCESS) return 1;
  const float *y = (const float *)GLOW_GET_ADDR(mutable_region, {upper}_y);
  printf("%g %g %g %g %g\\n", y[0], y[1], y[2], y[3], sqrtf(4.0f));
  return 0;
}}
"""


def build_and_run(tmp_path, model: str, network_name: str | None = None) -> tuple[str, list[str], str]:
    """Compiles `model`, builds a program using its header; returns (bundle name, warnings, program output)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", GlowWarning)
        bundle = glowmlir.compile(model, network_name=network_name)
    out = os.path.join(tmp_path, "out")
    bundle.save(out)
    first, second = (p.name for p in bundle.layout.placeholders if p.kind == "input")
    main = os.path.join(tmp_path, "main.c")
    with open(main, "w") as f:
        f.write(MAIN.format(name=bundle.name, upper=bundle.name.upper(), first=first, second=second))
    program = os.path.join(tmp_path, "program")
    build = subprocess.run([CC, "-std=c11", "-Wall", "-Werror", f"-I{out}", main, os.path.join(out, f"{bundle.name}.o"),
                            "-lm", "-o", program], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    cxx = shutil.which("c++")
    if cxx:  # the header is `extern "C"` for C++ programs too
        header_only = subprocess.run([cxx, "-fsyntax-only", "-Wall", "-Werror", "-x", "c++", "-include", "cstring",
                                      "-include", "cmath", os.path.join(out, f"{bundle.name}.h")],
                                     capture_output=True, text=True)
        assert header_only.returncode == 0, header_only.stderr
    run = subprocess.run([program], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return bundle.name, [str(w.message) for w in caught if issubclass(w.category, GlowWarning)], run.stdout.strip()


RESERVED = ["int", "struct", "return", "if", "default", "_Bool", "main", "memcpy", "GLOW_SUCCESS", "glow",
            "uint8_t", "class", "expf", "__x"]


@pytest.mark.skipif(CC is None, reason="needs a C compiler (scripts/setup.sh)")
@pytest.mark.parametrize("network_name", RESERVED)
def test_reserved_network_name_is_renamed_and_the_bundle_builds_and_runs(tmp_path, network_name):
    model = add_model(os.path.join(tmp_path, "m.onnx"))
    name, warned, output = build_and_run(tmp_path, model, network_name)
    assert name != network_name and not is_reserved_c_name(name)
    assert output == "11 22 33 44 2"
    assert len(warned) == 1 and f'"{network_name}" is reserved in C' in warned[0] and f'"{name}"' in warned[0]


@pytest.mark.skipif(CC is None, reason="needs a C compiler (scripts/setup.sh)")
def test_model_file_named_like_a_keyword_gets_a_safe_default_name(tmp_path):
    name, warned, output = build_and_run(tmp_path, add_model(os.path.join(tmp_path, "switch.onnx")))
    assert (name, output) == ("switch_", "11 22 33 44 2") and len(warned) == 1


@pytest.mark.skipif(CC is None, reason="needs a C compiler (scripts/setup.sh)")
@pytest.mark.parametrize("network_name, first, second, renamed", [
    ("net", "a.b", "a_b", None),  # Glow's unique names already keep these apart: a_b, a_b__1
    ("net", "CONSTANT_MEM_SIZE", "x", "CONSTANT_MEM_SIZE__1"),  # NET_CONSTANT_MEM_SIZE is the size macro
    ("net", "x", "MEM_ALIGN", "MEM_ALIGN__1"),
    ("glow_get", "ADDR", "x", "ADDR__1"),  # GLOW_GET_ADDR, the header's address macro
    ("int8", "MAX", "x", "MAX__1"),  # INT8_MAX of <stdint.h>
])
def test_placeholder_macros_that_clash_are_renamed(tmp_path, network_name, first, second, renamed):
    model = add_model(os.path.join(tmp_path, "m.onnx"), first, second)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GlowWarning)
        bundle = glowmlir.compile(model, network_name=network_name)
    names = [p.name for p in bundle.layout.placeholders]
    name, warned, output = build_and_run(tmp_path, model, network_name)
    assert output == "11 22 33 44 2"
    if renamed is None:
        assert names == ["a_b", "a_b__1", "y"]  # the renaming announced, once
        assert len(warned) == 1 and '"a.b" as "a_b", "a_b" as "a_b__1"' in warned[0]
    else:
        assert renamed in names and any(f'is named "{renamed}"' in w for w in warned)
        # the renamed placeholder is the bundle's name for it: run() takes it
        feeds = {p.name: np.full(4, 1.0 + i, np.float32) for i, p in enumerate(bundle.layout.placeholders)
                 if p.kind == "input"}
        np.testing.assert_array_equal(bundle.run(feeds)["y"], np.full(4, 3.0, np.float32))


@pytest.mark.skipif(CC is None, reason="needs a C compiler (scripts/setup.sh)")
def test_a_600_character_network_name_is_shortened_and_builds(tmp_path):
    model = add_model(os.path.join(tmp_path, "m.onnx"))
    name, warned, output = build_and_run(tmp_path, model, "n" * 600)
    assert len(name) == MAX_NETWORK_NAME and name.startswith("n" * 100) and "_trunc_" in name
    assert output == "11 22 33 44 2" and len(warned) == 1 and "too long" in warned[0]


def test_bundle_name_keeps_ordinary_names_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error", GlowWarning)
        assert bundle_name("lenet_mnist") == "lenet_mnist"
        assert bundle_name("my-net.v2") == "my_net_v2"  # Glow's character rule is not a change worth a warning
        assert bundle_name("integer") == "integer"
        assert bundle_name("n" * MAX_NETWORK_NAME) == "n" * MAX_NETWORK_NAME


def test_legalize_name_cuts_long_names_to_the_limit_with_a_hash():
    long = "a" * 700
    assert len(legalize_name(long)) == 500 and legalize_name(long) != legalize_name("a" * 701)
    assert legalize_name(long, 40) == legalize_name(long, 40) and len(legalize_name(long, 40)) == 40


@pytest.mark.skipif(CC is None, reason="needs a C compiler (scripts/setup.sh)")
def test_quantized_placeholder_macros_clash_with_another_placeholder(tmp_path):
    """A quantized `x` defines NET_x_scale and NET_x_offset: an input named `x_scale` is renamed."""
    from glowmlir.bundle import BundleLayout, Placeholder, _distinct_macros, header

    quantized = Placeholder("x", "input", (4,), np.dtype(np.int8), 0, (0.5, 3))
    clashing = Placeholder("x_scale", "input", (4,), np.dtype(np.int8), 64)
    output = Placeholder("x_offset", "output", (4,), np.dtype(np.int8), 128)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", GlowWarning)
        placeholders = _distinct_macros("net", (quantized, clashing, output))
    assert [str(w.message).split(":")[0] for w in caught] == ['placeholder "x_scale"', 'placeholder "x_offset"']
    assert [p.name for p in placeholders] == ["x", "x_scale__1", "x_offset__1"]
    layout = BundleLayout("net", 0, 192, 0, 0, placeholders, ())
    (tmp_path / "net.h").write_text(header(layout))
    (tmp_path / "main.c").write_text('#include "net.h"\nint main(void) { return NET_x_scale__1 + NET_x_offset + '
                                     '(int)NET_x_scale; }\n')
    build = subprocess.run([CC, "-std=c11", "-Wall", "-Werror", "-fsyntax-only", str(tmp_path / "main.c")],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
