"""The same model and options give byte-identical bundle files from separate processes
(different hash seeds: no set or dict-of-ids order may reach the output)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

LENET = "examples/lenet_mnist/lenet_mnist.onnx"
IMAGES = "examples/lenet_mnist/images"


def build(out_dir, hash_seed: str, *options: str) -> dict[str, bytes]:
    environment = {**os.environ, "PYTHONHASHSEED": hash_seed}
    subprocess.run([sys.executable, "-m", "glowmlir.cli.compile", f"-model={LENET}", f"-emit-bundle={out_dir}",
                    *options], check=True, capture_output=True, env=environment)
    return {name: (out_dir / name).read_bytes() for name in sorted(os.listdir(out_dir))}


@pytest.mark.parametrize("options", [(), ("-mcpu=cortex-m7",), ("-mcpu=cortex-m7", "-quantized")],
                         ids=["float-host", "float-cortex-m7", "int8-cortex-m7"])
def test_bundle_files_are_byte_identical_across_processes(tmp_path, options):
    if "-quantized" in options:  # the example's int8 flow: a profile over its digits
        profile = tmp_path / "lenet.yaml"
        subprocess.run([sys.executable, "-m", "glowmlir.cli.profile", f"-model={LENET}", "-image-mode=0to1", IMAGES,
                        f"-dump-profile={profile}"], check=True, capture_output=True)
        options = (*options[:-1], f"-load-profile={profile}")
    first = build(tmp_path / "a", "1", *options)
    second = build(tmp_path / "b", "4242", *options)
    assert sorted(first) == sorted(second) and len(first) == 4
    for name in first:
        assert first[name] == second[name], f"{name} differs between two builds"
