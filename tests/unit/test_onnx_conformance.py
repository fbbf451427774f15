"""onnx's own backend test runner over glowmlir: node tests and the simple, pytorch-converted,
pytorch-operator and light model suites, minus the reviewed list of
tests/conformance/exclusions.txt (each entry with its reason)."""

import warnings

from tests.conformance.suite import backend_test, exclusions

warnings.filterwarnings("ignore", category=DeprecationWarning)

globals().update(backend_test().test_cases)


UNSUPPORTED_FEATURE = ("unsupported op", "is not supported", "are not supported", "are supported", "must be a constant",
                       "needs", "undefined symbolic dimension", "fails onnx's checks", "cannot evaluate constant node",
                       "produces an empty tensor")
"""What an exclusion's reason may say: one of glowmlir's errors for a feature it does not
have, or onnx refusing the model. A wrong number's reason (an assertion) says none of these."""


def test_every_exclusion_is_for_an_unsupported_feature_never_for_wrong_numbers():
    for name, reason in exclusions().items():
        assert any(phrase in reason for phrase in UNSUPPORTED_FEATURE), f"{name}: {reason}"
