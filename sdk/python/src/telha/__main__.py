"""``python -m telha worker module[:attr]``: see ``telha.cli``."""

import sys

from .cli import main

sys.exit(main())
