"""The issue-12 bad-input campaign (tests/campaign): its size, and a subset run in the suite.

The whole campaign (about 670 cases, an hour on two cores) is run by
`tests/campaign/run_campaign.py`; here run the cases that once failed (each was a
traceback, a native abort, a silent wrong bundle, leftover files or an unclear message) and
one of each other kind, and each must be clean: a one-line error naming the culprit, or a
success checked against onnxruntime / the header compiled.
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.campaign.cases import TFLITE_MUTANTS_ONCE_TRACEBACKS, all_cases
from tests.campaign.run_campaign import run_case

CASES = {case.name: case for case in all_cases()}

SUBSET = [
    # files
    "files/onnx-bit-flip-12-x8", "files/onnx-op-type-renamed-Conv-bit0", "files/external-data-missing",
    "files/onnx-as-pb", "files/caffe2-without-model-input", "files/tflite-as-onnx",
    *(f"files/tflite-int8-mutant-{seed}" for seed in TFLITE_MUTANTS_ONCE_TRACEBACKS),
    "files/tflite-int8-mutant-30",  # no tensors, inputs or outputs left: was an empty bundle
    "files/onnxtxt-negative-element-type",
    # graphs
    "graphs/add-float-and-int64", "graphs/no-outputs", "graphs/dangling-node-input", "graphs/unknown-op",
    # shapes
    "shapes/gather-empty-indices", "shapes/conv-huge-padding", "shapes/expand-huge",
    "shapes/model-input-overrides-to-huge",
    # glow-profile
    "glow-profile/stddev-negative", "glow-profile/dataset-rawtxt-garbage",
    # options, glow-opt, API
    "options/mcpu-empty", "options/target-x86-mcpu-cortex-m7", "glow-opt/source-non-utf8",
    "glow-opt/source-deep-nesting", "glow-opt/unknown-pass", "api/compile-path", "api/symbols-negative",
    "api/network-name-int",
]


def test_campaign_covers_every_category_with_at_least_450_cases():
    counts = Counter(case.category for case in CASES.values())
    assert sum(counts.values()) >= 450
    assert set(counts) == {"files", "graphs", "shapes", "options", "glow-opt", "glow-profile", "api"}
    assert min(counts.values()) >= 40, counts


@pytest.mark.parametrize("name", SUBSET)
def test_campaign_case_is_clean(name, tmp_path):
    result = run_case(CASES[name], str(tmp_path))
    assert result.clean, f"{result.outcome}: {result.reason}\n  {result.command}"
