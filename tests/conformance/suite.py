"""onnx's backend test suites, set up for glowmlir with the reviewed exclusion list."""

from __future__ import annotations

import os

import onnx.backend.test

from glowmlir.onnx_backend import GlowmlirBackend

EXCLUSIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exclusions.txt")


def exclusions() -> dict[str, str]:
    """Test name → reason."""
    entries = {}
    with open(EXCLUSIONS) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, reason = (part.strip() for part in line.split("|", 1))
                entries[name] = reason
    return entries


def suite_of(test_name: str) -> str:
    """Which suite a generated test comes from (node, simple, pytorch-*, light)."""
    from onnx.backend.test.loader import load_model_tests

    global _SUITES
    if "_SUITES" not in globals():
        _SUITES = {}
        for kind in ("simple", "pytorch-converted", "pytorch-operator", "real"):
            for case in load_model_tests(kind=kind):
                _SUITES[case.name] = "light" if kind == "real" else kind
    base = test_name.removesuffix("_cpu").removesuffix("_cuda")
    return _SUITES.get(base, "node")


def backend_test(exclude: bool = True) -> onnx.backend.test.BackendTest:
    test = onnx.backend.test.BackendTest(GlowmlirBackend, __name__)
    if exclude:
        for name in exclusions():
            test.exclude(f"^{name}$")
    return test
