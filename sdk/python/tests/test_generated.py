"""The wire stubs are generated from proto/ by one command, and the committed ones never drift from it."""

import filecmp
import subprocess
from pathlib import Path

SDK = Path(__file__).resolve().parent.parent
GENERATED = SDK / "src" / "telha" / "_gen"


def test_regenerating_the_stubs_from_proto_yields_the_committed_files(tmp_path: Path) -> None:
    subprocess.run([str(SDK / "scripts" / "generate.sh"), str(tmp_path)], check=True)
    fresh = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    committed = sorted(
        p.relative_to(GENERATED) for p in GENERATED.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    )
    assert [p for p in committed if p.name != "__init__.py" or p.parent != Path(".")] == fresh
    mismatched = [str(p) for p in fresh if not filecmp.cmp(tmp_path / p, GENERATED / p, shallow=False)]
    assert mismatched == [], f"stale stubs: run sdk/python/scripts/generate.sh ({mismatched})"
