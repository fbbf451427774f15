"""glowll-fuse-lookup-tables (issue 42): the int8 table of an activation written out after a
convolution, a depthwise convolution or a FullyConnected is applied in that layer's kernel as
it stores, in every kernel family, and the outputs are the very bits of the unfused build (the
separate `glowll.int_lookup_table` pass) on the same target. Random weights and inputs."""

from __future__ import annotations

import contextlib
import re

import numpy as np
import onnx
import pytest

import glowmlir
from glowmlir.backends.x86 import layout as vnni_layout
from glowmlir.backends.x86.target import has_avx512_vbmi, has_avx512_vnni
from glowmlir.compiler import CompileOptions, QuantizationOptions
from glowmlir.profiling import Profiler
from glowmlir.quantization.profile import write_profile
from glowmlir.runtime.boards import run_on_board, target_for
from glowmlir.target import HOST
from glowmlir.targets import resolve_target
from glowmlir.transforms.fuse_lookup_tables import FuseLookupTables
from tests.support.models import activations_after_layers

SHAPE = (1, 4, 10, 12)
LAYERS = 4
"""The layers of `activations_after_layers` an activation table follows (three convolutions, a Gemm)."""


@contextlib.contextmanager
def unfused():
    """Builds within it keep every lookup table a pass of its own."""
    saved = FuseLookupTables.apply
    FuseLookupTables.apply = lambda self, ctx, op: None
    try:
        yield
    finally:
        FuseLookupTables.apply = saved


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """The net's path, its int8 quantization (profiled on random inputs) and three other inputs."""
    directory = tmp_path_factory.mktemp("fuse_lookup_tables")
    path = str(directory / "net.onnx")
    onnx.save(activations_after_layers(), path)
    rng = np.random.default_rng(3)
    samples = [{"x": rng.normal(0, 1.5, SHAPE).astype(np.float32)} for _ in range(7)]
    profiler = Profiler.for_model(path, CompileOptions())
    for _ in profiler.run(samples[:4]):
        pass
    write_profile(str(directory / "profile.yaml"), profiler.profile)
    quantization = QuantizationOptions(str(directory / "profile.yaml"), assert_all_nodes_quantized=True)
    return path, quantization, samples[4:]


def fused_layers(glowll: str) -> list[str]:
    """The convolutions and FullyConnected of a glowll listing that apply a lookup table."""
    return [line for line in glowll.splitlines()
            if re.search(r"glowll\.(convolution|fully_connected) .* lookup %", line)]


def fused_and_unfused(model, target=None, **extra) -> tuple:
    path, quantization, _ = model
    options = {"quantization": quantization} | ({} if target is None else {"target": target}) | extra
    fused = glowmlir.compile(path, **options)
    with unfused():
        plain = glowmlir.compile(path, **options)
    assert "lookup %" not in plain.ir["glowll"]
    return fused, plain


def assert_same_bits(fused_outputs: list[dict], plain_outputs: list[dict]) -> None:
    for fused, plain in zip(fused_outputs, plain_outputs, strict=True):
        for name in ("features", "y"):
            np.testing.assert_array_equal(fused[name], plain[name])
    features = np.concatenate([outputs["features"].ravel() for outputs in fused_outputs])
    assert len(np.unique(features)) > 60  # the GELU table spans many levels


def test_every_layer_takes_its_table_and_the_host_outputs_are_the_unfused_bits(model):
    """On the portable kernels (a host build without AVX: no vector unit int8 kernels)."""
    fused, plain = fused_and_unfused(model, resolve_target(mattr="-avx"))
    glowll = fused.ir["glowll"]
    assert len(fused_layers(glowll)) == LAYERS, glowll
    assert "glowll.int_lookup_table" not in glowll
    assert plain.ir["glowll"].count("glowll.int_lookup_table") == LAYERS
    samples = model[2]
    assert_same_bits([fused.run(s) for s in samples], [plain.run(s) for s in samples])


def test_the_host_vector_kernels_keep_their_tables_on_byte_shuffles(model):
    """Without AVX-512 VNNI the host's convolutions take the host vector unit's int8 kernels
    (depthwise, two-column products, paired 1x1 words), which keep their tables apart on
    byte shuffles (`vector-lookup-int8`, faster than a table looked up in their output
    step); the Gemm's portable kernel applies its own."""
    fused, plain = fused_and_unfused(model, resolve_target(mattr="-avx512vnni"))
    glowll = fused.ir["glowll"]
    layers = fused_layers(glowll)
    assert len(layers) == 1 and "microkernel" not in layers[0], layers
    for kernel in ("vector-depthwise-int8", "vector-columns-int8", "vector-pointwise-int8"):
        assert f'microkernel = #glowll.microkernel<"{kernel}"' in glowll, kernel
    assert glowll.count('#glowll.microkernel<"vector-lookup-int8"') == LAYERS - 1, glowll
    samples = model[2]
    assert_same_bits([fused.run(s) for s in samples], [plain.run(s) for s in samples])


VNNI = resolve_target(target="x86_64-unknown-linux-gnu", mcpu="icelake-server",
                      mattr="+avx512vnni,+avx512bw,+avx512vbmi")
VNNI_WITHOUT_VBMI = resolve_target(target="x86_64-unknown-linux-gnu", mcpu="cascadelake",
                                   mattr="+avx512vnni,+avx512bw,-avx512vbmi")
"""Cascade Lake's AVX-512: VNNI, no VBMI byte permutes."""


def layers_with_byte_permutes(llvm_ir: str) -> int:
    """The convolution and FullyConnected functions of a bundle's LLVM IR that call VBMI's
    two-register byte permute (`llvm.x86.avx512.vpermi2var.qi.*`; the kernels' own shuffles are
    `shufflevector`s)."""
    functions, current = set(), None
    for line in llvm_ir.splitlines():
        if line.startswith("define "):
            current = re.search(r"@(\w+)\(", line)[1]
        elif line.startswith("}"):
            current = None
        elif current is not None and re.search(r"_(convolution|fully_connected)$", current) \
                and "@llvm.x86.avx512.vpermi2var.qi" in line:
            functions.add(current)
    return len(functions)


@pytest.mark.parametrize("vbmi", [True, False], ids=["vbmi", "without-vbmi"])
def test_x86_vnni_kernels_apply_the_tables(model, vbmi):
    """Built for AVX-512 VNNI the layers VNNI kernels take apply their tables; run where the host
    has it. With VBMI the 3x3 convolution and the Gemm (x86-vnni, `byte_permutes`) look their
    tables up by `vpermi2b` (`vnni_kernels.PermutedTable`: their functions call it), and so does
    the depthwise one (x86-vnni-depthwise); without VBMI the two x86-vnni layers look them up lane by lane and
    the depthwise layer, which needs VBMI, is the host vector unit's, its table apart on byte
    shuffles. The 1x1 of 8 input channels is vector-pointwise-int8's on an AMD Zen core
    (`x86.select_kernels.shallow_pointwise`), its table apart, and x86-vnni's elsewhere, its
    table applied as the 3x3's is. A flash of 1 MB lets the layers
    pad their channels to VNNI's blocks (by default a model quantized from a profile keeps
    Glow's constants, which no padded filter fits)."""
    if vbmi:
        target = HOST if has_avx512_vnni(HOST) and has_avx512_vbmi(HOST) else VNNI
    else:
        target = resolve_target(mattr="-avx512vbmi") if has_avx512_vnni(HOST) else VNNI_WITHOUT_VBMI
    fused, plain = fused_and_unfused(model, target, flash_size=1 << 20, keep_llvm_ir=True)
    glowll = fused.ir["glowll"]
    layers = fused_layers(glowll)
    vnni = 'microkernel = #glowll.microkernel<"x86-vnni'
    pointwise = int(vnni_layout.shallow_pointwise_channels(target.resolved_cpu) < 8)  # the 1x1 on x86-vnni
    assert len(layers) == (3 if vbmi else 2) + pointwise and all(vnni in line for line in layers), layers
    assert sum('"x86-vnni", {byte_permutes}' in line for line in layers) == (2 + pointwise if vbmi else 0), layers
    assert ('#glowll.microkernel<"vector-pointwise-int8"' in glowll) == (not pointwise)
    assert layers_with_byte_permutes(fused.ir["llvm-ir"]) == (3 + pointwise if vbmi else 0)
    assert layers_with_byte_permutes(plain.ir["llvm-ir"]) == 0
    if not has_avx512_vnni(HOST):
        pytest.skip("built; the host has no AVX-512 VNNI to run it")
    samples = model[2]
    assert_same_bits([fused.run(s) for s in samples], [plain.run(s) for s in samples])


@pytest.mark.parametrize("board, level, kernel", [
    ("mps2-an386", None, "arm-dsp"),  # Cortex-M4
    ("mps2-an500", None, "arm-dsp"),  # Cortex-M7
    ("mps3-an547", None, "arm-mve"),  # Cortex-M55, Helium
    ("mps2-an500", "Os", None),  # size-first: kernels shared by records
    ("mps2-an386", "Oz", None),
])
def test_board_kernels_apply_the_tables(model, board, level, kernel):
    fused, plain = fused_and_unfused(model, target_for(board, level))
    layers = fused_layers(fused.ir["glowll"])
    assert len(layers) == LAYERS, fused.ir["glowll"]
    if kernel is not None:
        assert any(f'microkernel = #glowll.microkernel<"{kernel}' in line for line in layers), layers
    samples = model[2]
    assert_same_bits([run_on_board(fused, board, s).outputs for s in samples],
                     [run_on_board(plain, board, s).outputs for s in samples])


@pytest.mark.parametrize("library, target", [("cmsis-nn", "cortex-m7"), ("hifi4", "hifi4")])
def test_a_library_call_keeps_its_table_a_pass_of_its_own(model, library, target):
    """CMSIS-NN's and HiFi4's functions store their outputs themselves: the table after each
    stays a `glowll.int_lookup_table`."""
    path, quantization, _ = model
    glowll = glowmlir.compile(path, quantization=quantization, target=target, kernel_library=library).ir["glowll"]
    assert fused_layers(glowll) == []
    instructions = [line.split()[0] for line in glowll.splitlines() if line.lstrip().startswith("glowll.")]
    assert instructions.count("glowll.library_call") == instructions.count("glowll.int_lookup_table") == LAYERS


def test_every_int8_convolution_kernel_of_every_backend_applies_tables():
    """Each registered int8 microkernel of convolutions or FullyConnected (Arm DSP, Helium,
    host vector, x86 VNNI, size-first) applies a fused table as it stores
    (`Microkernel.lookup_tables`), so `glowll-fuse-lookup-tables` fuses whichever it picked;
    a kernel added without it fails here. Only float kernels (no int8 table follows them) and
    the host vector unit's int8 kernels (their tables apart, on byte shuffles) do not."""
    from glowmlir.backends import backends

    kernels = [(backend.name, kernel) for backend in backends() for kernel in backend.microkernels
               if {"glowll.convolution", "glowll.fully_connected"} & set(kernel.ops)]
    assert {name for name, _ in kernels} >= {"arm_dsp", "arm_mve", "host_vector", "x86", "size_first"}
    without = [(name, kernel.name) for name, kernel in kernels if kernel.numbers == "i8" and not kernel.lookup_tables]
    # The host vector unit's int8 kernels keep their tables apart, on byte shuffles
    # (`vector-lookup-int8`): measured faster than a lane at a time in their output step.
    assert {name for name, _ in without} <= {"host_vector"}
