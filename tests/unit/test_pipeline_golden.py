"""The pass pipeline `glow-compile -print-pipeline` prints for every CPU preset, at each
optimization level, float and int8 (and with the kernel libraries where they apply), is the
golden one in `tests/fixtures/pipelines/`: moving code between backends must not change
which passes run, in which order, with which options. Regenerate the file on purpose with
`GLOWMLIR_UPDATE_GOLDEN=1`."""

from __future__ import annotations

import os
import pathlib

from glowmlir.compiler import CompileOptions, QuantizationOptions
from glowmlir.targets import CPU_PRESETS, resolve_target

GOLDEN = pathlib.Path(__file__).parents[1] / "fixtures" / "pipelines" / "cpu_presets.txt"
EXTRA_CPUS = {"x86-64+avx512vnni": dict(target="x86_64", mcpu="icelake-server")}
"""Targets beyond the presets: an AVX-512 VNNI and VBMI x86-64 (the host's features are the machine's)."""
LIBRARIES = {"cortex-m4": "cmsis-nn", "cortex-m7": "cmsis-nn", "cortex-m55": "cmsis-nn", "hifi4": "hifi4"}


def pipelines() -> str:
    lines = []
    targets = {name: dict(mcpu=name) for name in CPU_PRESETS} | EXTRA_CPUS
    for name, options in targets.items():
        for level in ("O3", "Os", "Oz"):
            target = resolve_target(**options, opt_level=level)
            for numbers, quantization in (("f32", None), ("int8", QuantizationOptions("profile.yaml"))):
                libraries = (None, LIBRARIES[name]) if name in LIBRARIES and quantization else (None,)
                for library in libraries:
                    spec = CompileOptions(target=target, quantization=quantization, kernel_library=library)
                    lines.append(f"{name} {level} {numbers}{' ' + library if library else ''}: "
                                 f"{spec.pipeline().spec()}")
    return "\n".join(lines) + "\n"


def test_every_cpu_preset_keeps_its_pipeline():
    found = pipelines()
    if os.environ.get("GLOWMLIR_UPDATE_GOLDEN"):
        GOLDEN.write_text(found)
    assert found.splitlines() == GOLDEN.read_text().splitlines()


def test_print_pipeline_prints_the_same(capsys):
    """The command-line option prints what the golden file holds for its preset."""
    from glowmlir.cli.compile import main

    main(["-model=lenet.onnx", "-mcpu=cortex-m55", "-opt-level=Os", "-load-profile=profile.yaml", "-print-pipeline"])
    golden = dict(line.split(": ", 1) for line in GOLDEN.read_text().splitlines())
    assert capsys.readouterr().out.strip() == golden["cortex-m55 Os int8"]
