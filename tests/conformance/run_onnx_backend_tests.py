"""onnx's own backend test runner over glowmlir, outside pytest, to (re)write the exclusions.

    .venv/bin/python tests/conformance/run_onnx_backend_tests.py [--write-exclusions]

Runs every node test and the simple, pytorch-converted, pytorch-operator and light model
suites, prints the pass counts per suite, and with --write-exclusions rewrites
exclusions.txt from the failures, each with the first line of its error as the reason.
Review the diff before committing it: a supported op must never land in that file.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import unittest
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from tests.conformance.suite import EXCLUSIONS, backend_test, suite_of  # noqa: E402


def _reason(traceback_text: str) -> str:
    last = traceback_text.strip().splitlines()[-1]
    last = re.sub(r"^glowmlir\.errors\.GlowError: ", "", last)
    last = re.sub(r'"/[^"]*model\.onnx"', "the model", last)
    last = re.sub(r'^(node|input|output) "[^"]*"', r"\1", last)
    return re.sub(r"opset \d+", "opset", last)[:160]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-exclusions", action="store_true")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    counts = collections.Counter()
    failures = {}
    for case in backend_test(exclude=False).test_cases.values():
        for test in unittest.defaultTestLoader.loadTestsFromTestCase(case):
            name = test.id().split(".")[-1]
            result = unittest.TestResult()
            test.run(result)
            if result.skipped:
                continue
            suite = suite_of(name)
            counts[suite, "run"] += 1
            if result.wasSuccessful():
                counts[suite, "passed"] += 1
            else:
                failures[name] = _reason((result.errors + result.failures)[0][1])
    for suite in sorted({s for s, _ in counts}):
        print(f"{suite:18s} passed {counts[suite, 'passed']:5d} / run {counts[suite, 'run']:5d}")
    if args.write_exclusions:
        by_reason = collections.defaultdict(list)
        for name, reason in failures.items():
            by_reason[reason].append(name)
        with open(EXCLUSIONS, "w") as f:
            f.write("# onnx backend tests glowmlir does not pass, each with its reason (first line of the\n"
                    "# error). Written by run_onnx_backend_tests.py --write-exclusions; reviewed by hand.\n")
            for reason in sorted(by_reason, key=lambda r: (-len(by_reason[r]), r)):
                f.write(f"\n# {reason}\n")
                for name in sorted(by_reason[reason]):
                    f.write(f"{name} | {reason}\n")


if __name__ == "__main__":
    main()
