"""glow-profile as Glow's image-classifier: top-k labels, expected labels, minibatches, image
directories, and classification without profiling."""

from __future__ import annotations

import os
import re
import subprocess

import numpy as np
import pytest

import glowmlir
from glowmlir.datasets import ImageOptions, load_image
from glowmlir.quantization.profile import read_profile
from tests.support.forks import run_module
from tests.support.models import LENET

LENET_PATH = os.path.abspath(LENET)
IMAGES = os.path.join(os.path.dirname(LENET_PATH), "images")
FILES = sorted(os.path.join(IMAGES, name) for name in os.listdir(IMAGES))
LABELS = [int(name.rsplit("_", 1)[1].split(".")[0]) for name in FILES]


def profile_tool(*arguments: str, cwd) -> subprocess.CompletedProcess:
    return run_module("glowmlir.cli.profile", f"-model={LENET_PATH}", "-i=0to1", "-model-input-name=data", *arguments,
                      cwd=cwd, env={**os.environ, "PYTHONPATH": os.getcwd()})


def printed_labels(stdout: str) -> dict[str, list[tuple[int, float]]]:
    result: dict[str, list[tuple[int, float]]] = {}
    current = None
    for line in stdout.splitlines():
        match = re.match(r" File: (\S+)\tLabel-K1: (-?\d+) \(probability: ([0-9.]+)\)$", line)
        if match:
            current = match.group(1)
            result[current] = [(int(match.group(2)), float(match.group(3)))]
            continue
        match = re.match(r"\t{5}\tLabel-K(\d+): (-?\d+) \(probability: ([0-9.]+)\)$", line)
        if match:
            assert int(match.group(1)) == len(result[current]) + 1
            result[current].append((int(match.group(2)), float(match.group(3))))
    return result


def test_topk_prints_the_most_likely_labels_as_image_classifier(tmp_path):
    result = profile_tool(*FILES, "-topk=3", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    printed = printed_labels(result.stdout)
    assert list(printed) == FILES and all(len(labels) == 3 for labels in printed.values())
    bundle = glowmlir.compile(LENET_PATH)
    options = ImageOptions.parse("0to1", "NCHW", "BGR")
    for file in FILES[::5]:
        scores = bundle.run(data=load_image(file, (1, 1, 28, 28), options))["softmax"].reshape(-1)
        expected = [(int(label), round(float(scores[label]), 4)) for label in np.argsort(-scores)[:3]]
        assert [(label, round(p, 4)) for label, p in printed[file]] == expected


def test_expected_labels_count_the_mismatches(tmp_path):
    predicted = [labels[0][0] for labels in printed_labels(profile_tool(*FILES, cwd=tmp_path).stdout).values()]
    right = profile_tool(*FILES, f"-expected-labels={','.join(map(str, predicted))}", cwd=tmp_path)
    assert right.returncode == 0, right.stderr
    assert "20 of 20 images have their expected label in the top 1" in right.stdout
    wrong = [index for index, (label, truth) in enumerate(zip(predicted, LABELS)) if label != truth]
    assert len(wrong) <= 1  # LeNet gets 19 or 20 of the example digits
    mislabelled = list(predicted)
    mislabelled[3] = (mislabelled[3] + 1) % 10
    result = profile_tool(*FILES, f"-expected-labels={','.join(map(str, mislabelled))}", cwd=tmp_path)
    assert result.returncode == 1  # image-classifier's exit status counts the mismatches
    assert (f" File: {FILES[3]} doesn't match index: {mislabelled[3]} in the top 1 pairs"
            in result.stdout.splitlines())
    assert "19 of 20 images" in result.stdout
    top = profile_tool(*FILES, "-topk=10", f"-expected-labels={','.join(map(str, mislabelled))}", cwd=tmp_path)
    assert top.returncode == 0 and "20 of 20 images have their expected label in the top 10" in top.stdout


def test_image_dir_label_offset_and_softmax(tmp_path):
    by_files = printed_labels(profile_tool(*FILES, "-topk=2", cwd=tmp_path).stdout)
    by_dir = printed_labels(profile_tool(f"-input-image-dir={IMAGES}", "-topk=2", cwd=tmp_path).stdout)
    assert by_dir == by_files
    shifted = printed_labels(profile_tool(*FILES, "-label-offset=1", cwd=tmp_path).stdout)
    assert all(shifted[file][0][0] == by_files[file][0][0] - 1 for file in FILES)
    softened = printed_labels(profile_tool(*FILES, "-compute-softmax", cwd=tmp_path).stdout)
    for file in FILES:  # softmax of LeNet's probabilities: same order, flatter
        assert softened[file][0][0] == by_files[file][0][0] and softened[file][0][1] < by_files[file][0][1]


def test_minibatch_profiles_the_same_ranges(tmp_path):
    one = profile_tool(IMAGES, "-dump-profile=one.yaml", cwd=tmp_path)
    four = profile_tool(IMAGES, "-minibatch=4", "-dump-profile=four.yaml", "-topk=1", cwd=tmp_path)
    assert one.returncode == 0 and four.returncode == 0, four.stderr
    assert "over 5 inferences" in four.stdout and "over 20 inferences" in one.stdout
    assert len(printed_labels(four.stdout)) == 20
    single, batched = read_profile(str(tmp_path / "one.yaml")), read_profile(str(tmp_path / "four.yaml"))
    assert single.entries.keys() == batched.entries.keys()
    for key, entry in single.entries.items():
        assert (entry.min, entry.max) == (batched.entries[key].min, batched.entries[key].max), key


@pytest.mark.parametrize("options, fragment", [
    (("-topk=0",), "-topk=0: must be at least 1"),
    (("-expected-labels=1,2",), "-expected-labels: 2 labels for 20 images"),
    (("-expected-labels=1,x",), "-expected-labels=\"1,x\": expected comma-separated"),
    (("-input-values-range=U16",), "-input-values-range=\"U16\": only U8"),
    (("-minibatch=3",), "20 images is not a multiple of the input's batch size 3"),
    (("-load-profile=p.yaml", "-dump-profile=q.yaml"), "not with -dump-profile"),
])
def test_bad_values_are_one_line_errors(options, fragment, tmp_path):
    result = profile_tool(IMAGES, *options, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and fragment in result.stderr, result.stderr
