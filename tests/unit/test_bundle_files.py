"""The bundle files byte for byte in Glow's formats."""

from __future__ import annotations

import io
import os
import re

import numpy as np
import pytest

import glowmlir
from glowmlir import bundle as bundle_files
from glowmlir.bundle import weights_text
from glowmlir.names import UniqueNames, legalize_name
from tests.support.models import LENET


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("bundle"))
    bundle = glowmlir.compile(LENET)
    bundle.save(directory)
    return bundle, directory


def read(directory, name, mode="r"):
    with open(os.path.join(directory, name), mode) as f:
        return f.read()


def test_files_written(saved):
    _, directory = saved
    assert sorted(os.listdir(directory)) == ["lenet_mnist.h", "lenet_mnist.o", "lenet_mnist.weights.bin",
                                             "lenet_mnist.weights.txt"]


def test_header_macros_match_glows_documented_lenet_layout(saved):
    bundle, directory = saved
    header = read(directory, "lenet_mnist.h")
    assert "#define LENET_MNIST_data     0\n" in header
    assert "#define LENET_MNIST_softmax  3136\n" in header
    assert "#define LENET_MNIST_MUTABLE_MEM_SIZE      3200\n" in header  # the docs' worked example
    assert "#define LENET_MNIST_MEM_ALIGN  64\n" in header
    assert f"#define LENET_MNIST_CONSTANT_MEM_SIZE     {bundle.layout.constant_size}\n" in header
    assert "int lenet_mnist(uint8_t *constantWeight, uint8_t *mutableWeight, uint8_t *activations);" in header
    assert "//   Type: float<1 x 1 x 28 x 28>" in header


def test_weights_bin_is_the_constant_region(saved):
    bundle, directory = saved
    image = read(directory, "lenet_mnist.weights.bin", "rb")
    assert len(image) == bundle.layout.constant_size and len(image) % 64 == 0
    for name, offset, data in bundle.layout.weights:
        assert offset % 64 == 0
        np.testing.assert_array_equal(np.frombuffer(image, np.float32, data.size, offset), data.reshape(-1))


def test_weights_txt_format(saved):
    _, directory = saved
    text = read(directory, "lenet_mnist.weights.txt")
    image = read(directory, "lenet_mnist.weights.bin", "rb")
    lines = text.split("\n")
    assert lines[0] == "".join(f" 0X{b:02X}," for b in image[:20])
    assert all(re.fullmatch(r"( 0X[0-9A-F]{2},){1,20}", line) for line in lines[:-2])
    assert text.endswith(",\n\n")  # the last line, then one extra newline


def test_weights_txt_small_cases():
    assert weights_text(bytes([0, 255, 16])) == " 0X00, 0XFF, 0X10,\n\n"
    assert weights_text(bytes(range(20))).count("\n") == 2


def per_byte_text(image: bytes) -> str:
    """weights.txt as its definition says, a byte at a time."""
    cells = [f" 0X{b:02X}," for b in image]
    return "".join("".join(cells[i:i + 20]) + "\n" for i in range(0, len(cells), 20)) + "\n"


def test_weights_txt_streamed_across_chunks_and_pieces(monkeypatch):
    monkeypatch.setattr(bundle_files, "TEXT_CHUNK_LINES", 3)  # chunks of 60 bytes
    image = np.random.default_rng(0).integers(0, 256, 7 * 20 + 13, np.uint8).tobytes()
    cuts = [0, 1, 59, 60, 61, 100, 140, len(image)]
    for size in (None, len(image)):
        text = io.BytesIO()
        bundle_files.write_weights_text([memoryview(image[a:b]) for a, b in zip(cuts, cuts[1:])], text, size)
        assert text.getvalue().decode() == per_byte_text(image)
    for length in (0, 1, 20, 60, 61):
        assert weights_text(image[:length]) == per_byte_text(image[:length])


def test_weights_bin_streamed_from_the_weights():
    """Gaps are zeros, a weight sharing an earlier one's offset (equal bytes) is written once,
    the region is padded to CONSTANT_MEM_SIZE."""
    rng = np.random.default_rng(1)
    first, second = rng.standard_normal(10).astype(np.float32), rng.integers(-128, 128, 7).astype(np.int8)
    weights = (("b", 64, second), ("a", 0, first), ("a_again", 0, first.copy()))
    layout = bundle_files.BundleLayout("net", 192, 0, 0, 0, (), weights)
    image = bytearray(192)
    image[0:40], image[64:71] = first.tobytes(), second.tobytes()
    assert bundle_files.constant_region(layout) == bytes(image)
    written = io.BytesIO()
    bundle_files.write_constant_region(layout, written)
    assert written.getvalue() == bytes(image)


def test_names_are_legalized_as_glow_does():
    assert legalize_name("gpu_0/data_0") == "gpu_0_data_0"
    assert legalize_name("mobilenet_v1_0.25_128") == "mobilenet_v1_0_25_128"
    assert legalize_name("0abc") == "A0abc"
    names = UniqueNames()
    assert [names("softmax"), names("softmax"), names("softmax")] == ["softmax", "softmax__1", "softmax__2"]


def test_network_name_option(tmp_path):
    bundle = glowmlir.compile(LENET, network_name="my-net.v2")
    bundle.save(str(tmp_path))
    assert sorted(os.listdir(tmp_path))[0] == "my_net_v2.h"
    assert "#define MY_NET_V2_data" in read(str(tmp_path), "my_net_v2.h")
