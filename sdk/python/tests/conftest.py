import sys
from pathlib import Path

# The package from this checkout, not an installed one.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
