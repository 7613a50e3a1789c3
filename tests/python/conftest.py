"""Shared helpers of the Python package's suites (bindings/python/plexus)."""
import os
import subprocess
import sys
import textwrap

import pytest

# The ASan + UBSan build runs the interpreter with libasan preloaded: loops are shortened there.
SANITIZED = os.environ.get("PLEXUS_SANITIZED") == "1" or "asan" in os.environ.get("LD_PRELOAD", "")


@pytest.fixture
def sanitized():
    """True under ASan (PLEXUS_SANITIZED=1 or libasan in LD_PRELOAD)."""
    return SANITIZED


def run_python(code, timeout=120):
    """Runs `code` in a fresh interpreter with this one's environment (PYTHONPATH,
    PLEXUS_PLUGIN_PATH, LD_PRELOAD); returns the CompletedProcess (text stdout/stderr)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ))
