"""Every Python block of sdk/python/README.md runs as written against a real server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import OPERATOR, SDK, TelhaServer

BLOCKS = re.findall(r"^```python\n(.*?)^```$", (SDK / "README.md").read_text(), flags=re.S | re.M)


def test_the_readme_has_a_quick_start() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("block", range(len(BLOCKS)))
def test_a_readme_block_runs_as_written(block: int, server: TelhaServer, tmp_path: Path) -> None:
    script = tmp_path / "block.py"
    script.write_text(BLOCKS[block])
    env = {
        **os.environ,
        "PYTHONPATH": str(SDK / "src"),
        "TELHA_ADDRESS": server.address,
        "TELHA_TOKEN": OPERATOR,
        "README_TEST": "1",
    }
    run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    if block == 0:
        assert run.stdout == "Resized(url='https://example.com/cat.png', width=640)\n"
