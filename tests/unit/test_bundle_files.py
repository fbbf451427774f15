"""The bundle files byte for byte in Glow's formats."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import glowmlir
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
