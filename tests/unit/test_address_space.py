"""Buffers far into their region: addressed exactly at the target's pointer width, or refused.

The model has two float inputs, a large `x0` and `x1[16]`, and computes y = Relu(x1), so
`x1` sits just past `x0` in the mutable region. Only the pages actually touched are
ever backed by memory, so running a bundle whose region spans gigabytes costs little.
"""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import glowmlir
from glowmlir.errors import GlowError
from glowmlir.target import Target
from glowmlir.targets import resolve_target
from glowmlir.transforms.allocate_memory import max_object_size
from tests.unit.test_errors import assert_clean_failure, glow_compile

X1 = np.linspace(-3.0, 3.0, 16, dtype=np.float32)


def relu_after(tmp_path, elements: int) -> str:
    """y = Relu(x1), with an unused float input x0[elements] placed before x1."""
    inputs = [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [elements]),
              helper.make_tensor_value_info("x1", TensorProto.FLOAT, [16])]
    output = helper.make_tensor_value_info("y", TensorProto.FLOAT, [16])
    graph = helper.make_graph([helper.make_node("Relu", ["x1"], ["y"])], "g", inputs, [output])
    path = str(tmp_path / f"relu_after_{elements}.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def gep_offsets(llvm_ir: str) -> list[int]:
    """The constant byte offsets of every `getelementptr ... i8, ptr %p, i64 <n>`."""
    return [int(n) for n in re.findall(r"getelementptr [^\n]*?i8, ptr %[\w.]+, i64 (-?\d+)", llvm_ir)]


@pytest.mark.parametrize("elements", [537_000_000, 1_100_000_000], ids=["offset-2.1GB", "offset-4.4GB"])
def test_host_bundle_addresses_buffers_past_2_and_4_gib(tmp_path, elements):
    """Offsets between 2^31 and 2^32 used to wrap to -2,146,967,232 (an i32 GEP constant)
    and the bundle wrote 2 GiB below its region; offsets past 2^32 gave a traceback."""
    bundle = glowmlir.compile(relu_after(tmp_path, elements), keep_llvm_ir=True)
    x1_offset = bundle.layout.placeholder("x1").offset
    assert x1_offset == 4 * elements > 2**31
    offsets = gep_offsets(bundle.ir["llvm-ir"])
    assert x1_offset in offsets
    assert min(offsets) >= 0 and max(offsets) < bundle.layout.mutable_size
    # The host runner itself (Bundle.run wants every input): x0 stays untouched, unbacked pages.
    np.testing.assert_array_equal(bundle.runner.run(x1=X1)["y"], np.maximum(X1, 0))


@pytest.mark.parametrize("cpu", ["cortex-m7", "i386"])
def test_32_bit_target_refuses_a_region_past_2_gib(tmp_path, cpu):
    model = relu_after(tmp_path, 537_000_000)
    with pytest.raises(GlowError, match=r'input "x0" \(2,148,000,000 bytes at offset 0 of the mutable region\) '
                                        r"ends past the 2,147,483,647 bytes .* 32-bit pointers"):
        glowmlir.compile(model, target=resolve_target(mcpu=cpu))
    assert_clean_failure(glow_compile(f"-model={model}", f"-emit-bundle={tmp_path / 'out'}", f"-mcpu={cpu}"),
                         'input "x0"', "32-bit pointers")
    assert not (tmp_path / "out").exists()


def test_32_bit_target_refuses_a_region_past_4_gib(tmp_path):
    with pytest.raises(GlowError, match=r'input "x0" \(4,400,000,000 bytes .* 32-bit pointers'):
        glowmlir.compile(relu_after(tmp_path, 1_100_000_000), target=resolve_target(mcpu="cortex-m7"))


def test_64_bit_target_refuses_a_region_past_2_to_the_63(tmp_path):
    """A tensor of 2^64 bytes used to give a traceback (an i64 attribute overflowing)."""
    inputs = [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [2**40, 2**22]),
              helper.make_tensor_value_info("x1", TensorProto.FLOAT, [16])]
    graph = helper.make_graph([helper.make_node("Relu", ["x1"], ["y"])], "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16])])
    model = str(tmp_path / "exabytes.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), model)
    with pytest.raises(GlowError, match=r'input "x0": glow.placeholder: result of shape \[1099511627776, 4194304\] '
                                        r"has 18,446,744,073,709,551,616 bytes, more than a 64-bit address space"):
        glowmlir.compile(model)
    assert_clean_failure(glow_compile(f"-model={model}", f"-emit-bundle={tmp_path / 'out'}"),
                         "more than a 64-bit address space holds")


def test_pointer_width_of_targets():
    assert Target().pointer_width == 64
    assert {cpu: resolve_target(mcpu=cpu).pointer_width for cpu in ("x86-64", "cortex-a53", "i386", "cortex-m0",
                                                                     "cortex-m7", "rv32imc", "hifi4")} == {
        "x86-64": 64, "cortex-a53": 64, "i386": 32, "cortex-m0": 32, "cortex-m7": 32, "rv32imc": 32, "hifi4": 32}
    assert max_object_size(32) == 2**31 - 1 and max_object_size(64) == 2**63 - 1


def test_32_bit_kernels_index_with_i32(tmp_path):
    """On a 32-bit target loop counters and offsets are i32: no 64-bit arithmetic on the core."""
    bundle = glowmlir.compile(relu_after(tmp_path, 1000), target=resolve_target(mcpu="cortex-m7", opt_level="O0"),
                              keep_llvm_ir=True)
    code = bundle.ir["llvm-ir"].split("\ndefine", 1)[1]  # past the data layout, which names i64
    assert "phi i32 " in code and not re.search(r"\bi64\b", code)
