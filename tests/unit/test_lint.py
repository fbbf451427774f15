"""The checkout passes `ruff check` with the project's configuration ([tool.ruff] in pyproject.toml)."""

import importlib.util
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_ruff_check_passes():
    assert importlib.util.find_spec("ruff") is not None, "ruff is not installed: pip install -e '.[test]'"
    # --no-cache: no .ruff_cache left in the checkout, nothing shared between parallel runs.
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--config",
                             os.path.join(ROOT, "pyproject.toml"), ROOT],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, f"ruff check failed:\n{result.stdout}{result.stderr}"
