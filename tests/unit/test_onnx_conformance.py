"""onnx's own backend test runner over glowmlir: node tests and the simple, pytorch-converted,
pytorch-operator and light model suites, minus the reviewed list of
tests/conformance/exclusions.txt (each entry with its reason)."""

import warnings

from tests.conformance.suite import backend_test, exclusions

warnings.filterwarnings("ignore", category=DeprecationWarning)

globals().update(backend_test().test_cases)


def test_every_exclusion_names_a_reason_and_no_supported_float_op_is_excluded_for_numbers():
    """Exclusions are for unsupported features, never for wrong numbers."""
    for name, reason in exclusions().items():
        assert reason, name
        assert "Mismatch" not in reason and "AssertionError" not in reason, f"{name}: {reason}"
