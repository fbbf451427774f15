"""onnx's backend test suites, set up for glowmlir with the reviewed exclusion list."""

from __future__ import annotations

import functools
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


def cpu_test_cases(exclude: bool = True) -> dict[str, type]:
    """`backend_test(exclude).test_cases` without the CUDA copy of each test: onnx's runner
    makes a `_cuda` test beside every `_cpu` one and skips it for a backend without CUDA
    (glowmlir has none), which would only add thousands of meaningless skips."""
    cases = backend_test(exclude).test_cases
    for case in cases.values():
        for name in [name for name in vars(case) if name.startswith("test_") and name.endswith("_cuda")]:
            delattr(case, name)
    return cases


@functools.cache
def _unexcluded_cases() -> tuple[type, ...]:
    return tuple(backend_test(exclude=False).test_cases.values())


def run_case(name: str) -> bool:
    """Runs one backend test (unexcluded) by name: whether it passes."""
    import unittest

    for case in _unexcluded_cases():
        if hasattr(case, name):
            result = unittest.TestResult()
            case(name).run(result)
            return result.wasSuccessful() and not result.skipped
    raise KeyError(f"no onnx backend test {name}")
