"""``python -m evalkit.reproduce ROWS_DIR OUT_DIR``: write the reproduction report."""

import sys

from .cli import main

sys.exit(main())
