"""The package as a user gets it: a wheel built from a copy of sdk/python with Debian's tools
(``python3 -m build --no-isolation``), installed with no package index into a fresh venv that sees
Debian's grpcio and protobuf (``--system-site-packages``), and the README's quick start run with it
from outside the source tree."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import OPERATOR, SDK, TelhaServer
from test_readme import BLOCKS


def run(*command: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{' '.join(map(str, command))} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with the wheel installed, and nothing of this checkout on its path."""
    root = tmp_path_factory.mktemp("package")
    # Built from a copy, so the build's leftovers (build/, *.egg-info) never land in the checkout.
    source = root / "source"
    shutil.copytree(SDK, source, ignore=shutil.ignore_patterns("tests", "build", "*.egg-info", "__pycache__"))
    run(sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", root / "dist", source, cwd=root)
    (wheel,) = (root / "dist").glob("telha-*-py3-none-any.whl")
    run(sys.executable, "-m", "venv", "--system-site-packages", root / "venv", cwd=root)
    # No index: the dependencies (grpcio, protobuf) must be met by Debian's packages as they are.
    run(root / "venv" / "bin" / "python", "-m", "pip", "install", "--no-index", wheel, cwd=root)
    return root / "venv"


def outside_env(server: TelhaServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return {**env, "TELHA_ADDRESS": server.address, "TELHA_TOKEN": OPERATOR}


def test_the_wheel_carries_its_type_hints_and_generated_stubs(venv: Path, tmp_path: Path) -> None:
    where = run(
        venv / "bin" / "python", "-c",
        "import pathlib, telha, telha._gen.telha.v1.queue_pb2_grpc as g; p = pathlib.Path(telha.__file__).parent;"
        "print(p); print((p / 'py.typed').exists(), (p / '_gen/telha/v1/queue_pb2.pyi').exists())",
        cwd=tmp_path,
    ).splitlines()
    assert Path(where[0]).is_relative_to(venv) and where[1] == "True True"
    assert "--concurrency" in run(venv / "bin" / "telha-worker", "--help", cwd=tmp_path)


def test_the_readmes_quick_start_runs_with_the_installed_wheel(
    venv: Path, server: TelhaServer, tmp_path: Path
) -> None:
    (tmp_path / "quickstart.py").write_text(BLOCKS[0])
    printed = run(venv / "bin" / "python", "quickstart.py", cwd=tmp_path, env=outside_env(server))
    assert printed == "Resized(url='https://example.com/cat.png', width=640)\n"
