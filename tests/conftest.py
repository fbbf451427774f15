import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

REQUIRE_TOOLS = "GLOWMLIR_REQUIRE_TOOLS"
"""Set by scripts/run-tests.sh (what CI runs). The policy for missing tools: a test that needs a
tool skips with a reason naming it; a tool scripts/setup.sh installs (QEMU, the cross
compilers, valgrind, a C compiler) says so in its reason ("scripts/setup.sh"), and with this
variable set such a skip is a failure, so CI cannot pass without running those tests. A host
feature no script can install (AVX-512 VNNI, ...) stays a skip with its reason."""
INSTALLED_BY_SETUP = "scripts/setup.sh"

# The autotuner's default cache (the user's, glowmlir/autotune/cache.py) must not change the
# kernels the tests' builds get: a file that does not exist, unless a run names one.
os.environ.setdefault("GLOWMLIR_AUTOTUNE_CACHE", os.path.join(ROOT, ".no-autotune-cache", "autotune.json"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get(REQUIRE_TOOLS) and INSTALLED_BY_SETUP in str(report.longrepr):
        report.outcome = "failed"
        report.longrepr = (f"{REQUIRE_TOOLS} is set (scripts/run-tests.sh) and a tool scripts/setup.sh installs is "
                           f"missing: {report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr}")
