"""Big models in bounded memory: glow-compile's peak resident memory a small multiple of the weights.

A generated model of 200 MB of random float weights (`tests.support.big_models`) is compiled
into a static bundle (weights.bin and weights.txt written) by `glow-compile` in a child
process limited to 4x the weights of data (`RLIMIT_DATA`: an allocation beyond fails), whose
own peak resident set (its VmHWM as it exits) must stay within 4x the weights too. Before
the weights were held as single buffers and the weight files streamed, it took over 20x.
"""

from __future__ import annotations

import os
import re

import onnx

from tests.support.big_models import measured_glow_compile, weight_bytes, weight_heavy_model

REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIMIT = 4
"""Peak resident memory allowed, in multiples of the model's weights."""


def test_200_mb_of_weights_compile_within_four_times_their_size(tmp_path):
    model = weight_heavy_model(200, width=2048)
    weights = weight_bytes(model)
    # A Gemm's transposed weights ([N, K]) are FullyConnected's as the bundle lays them out.
    gemm = next(onnx.numpy_helper.to_array(t) for t in model.graph.initializer if t.name == "fc0_w")
    assert weights >= 200e6
    onnx.save(model, str(tmp_path / "heavy.onnx"))
    del model
    bundle = tmp_path / "bundle"
    status, peak, _, _, stderr, _ = measured_glow_compile(["-model=heavy.onnx", f"-emit-bundle={bundle}"],
                                                       str(tmp_path), REPOSITORY, data_limit=LIMIT * weights)
    assert status == 0, stderr
    assert peak <= LIMIT * weights, f"peak RSS {peak / 1e6:,.0f} MB > {LIMIT} x {weights / 1e6:,.0f} MB of weights"
    size = int(re.search(r"#define HEAVY_CONSTANT_MEM_SIZE +(\d+)", (bundle / "heavy.h").read_text())[1])
    assert size >= weights
    assert os.path.getsize(bundle / "heavy.weights.bin") == size
    assert os.path.getsize(bundle / "heavy.weights.txt") == 6 * size + -(-size // 20) + 1  # " 0XHH," a byte
    with open(bundle / "heavy.weights.bin", "rb") as binary, open(bundle / "heavy.weights.txt", "rb") as text:
        region = binary.read()
        assert text.readline() == "".join(f" 0X{b:02X}," for b in region[:20]).encode() + b"\n"
        text.seek(-122, os.SEEK_END)
        assert text.read() == "".join(f" 0X{b:02X}," for b in region[-20:]).encode() + b"\n\n"
    assert region.find(gemm.tobytes()) % 64 == 0  # the weights themselves, at an aligned offset
