"""onnx's own backend test runner over glowmlir: node tests and the simple, pytorch-converted,
pytorch-operator and light model suites, minus the reviewed list of
tests/conformance/exclusions.txt (each entry with its reason)."""

import warnings

import pytest

from tests.conformance.suite import cpu_test_cases, exclusions, run_case

warnings.filterwarnings("ignore", category=DeprecationWarning)

globals().update(cpu_test_cases())  # the excluded ones are skipped, each with onnx's reason


UNSUPPORTED_FEATURE = ("unsupported op", "is not supported", "are not supported", "are supported", "must be a constant",
                       "needs", "undefined symbolic dimension", "fails onnx's checks", "cannot evaluate constant node",
                       "produces an empty tensor")
"""What an exclusion's reason may say: one of glowmlir's errors for a feature it does not
have, or onnx refusing the model. A wrong number's reason (an assertion) says none of these."""


def test_every_exclusion_is_for_an_unsupported_feature_never_for_wrong_numbers():
    for name, reason in exclusions().items():
        assert any(phrase in reason for phrase in UNSUPPORTED_FEATURE), f"{name}: {reason}"


EXCLUSION_SAMPLE = 20
"""How many excluded cases `test_a_sample_of_the_exclusions_still_fails` re-runs (spread over
the whole list, so every reason group is sampled)."""


@pytest.mark.parametrize("name", sorted(exclusions())[::max(1, len(exclusions()) // EXCLUSION_SAMPLE)])
def test_a_sample_of_the_exclusions_still_fails(name):
    """An excluded case that passes today must leave tests/conformance/exclusions.txt (rerun
    tests/conformance/run_onnx_backend_tests.py --write-exclusions to rewrite it)."""
    assert not run_case(name), f"{name} passes now: remove it from tests/conformance/exclusions.txt"
