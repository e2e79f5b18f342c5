"""The package's type hints hold: mypy --strict (settings in pyproject.toml) finds nothing in src/telha."""

from __future__ import annotations

import subprocess
import sys

from conftest import SDK


def test_mypy_finds_no_error_in_the_package() -> None:
    # Debian's mypy (apt-get install mypy); the preflight names the package when it is missing.
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", "/dev/null"], cwd=SDK, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Success: no issues found" in run.stdout
