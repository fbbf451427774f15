"""Runs the FileCheck tests of tests/lit with lit, so one pytest run covers everything."""

import os
import subprocess
import sys

LIT_DIR = os.path.join(os.path.dirname(__file__), "..", "lit")


def test_lit_suite():
    lit = os.path.join(os.path.dirname(sys.executable), "lit")
    result = subprocess.run([lit, "-q", "-j2", LIT_DIR], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
