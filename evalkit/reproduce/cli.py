"""Command line of the reproduction report: ``python -m evalkit.reproduce ROWS_DIR OUT_DIR``.

Kept apart from :mod:`evalkit.reproduce` (which ``evalkit/__init__`` imports) so that running the
package as a script does not re-run a module that is already imported.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from . import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTED, REPRODUCED, repro_report_write

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Write the report from the notebooks' row files; return the exit status (0 ok, 1 error).

    Every expected failure (a missing or malformed row folder, a bad row, an output path that
    is a file, a file system error) is printed as one ``error: ...`` line, without a traceback.
    """
    parser = argparse.ArgumentParser(
        prog="python -m evalkit.reproduce",
        description="Write the reproduction report (Markdown, JSON, CSV) from the notebooks' row files.",
    )
    parser.add_argument("rows_dir", help="folder of <notebook>.json row files (EVALKIT_REPORT_DIR)")
    parser.add_argument("out_dir", help="folder for reproduction_report.{md,json,csv}")
    args = parser.parse_args(argv)
    try:
        md_path = repro_report_write(args.rows_dir, args.out_dir)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    totals = json.loads(md_path.with_suffix(".json").read_text(encoding="utf-8"))["totals"]
    print(
        f"wrote {md_path} (+ .json, .csv): {totals[REPRODUCED]} reproduced, {totals[NOT_REPRODUCED]} not reproduced, "
        f"{totals[INCONCLUSIVE]} inconclusive, {totals[NOT_TESTED]} not tested in the paper's setting"
    )
    return 0
