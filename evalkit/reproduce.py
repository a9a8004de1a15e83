"""The "paper vs evalkit" rows of every notebook, and the reproduction report.

Every notebook records the numbers it reproduces in one :class:`ReproTable`. The table the
notebook shows and the rows of the reproduction report are the same data: ``ReproTable.show``
saves the rows as JSON into ``$EVALKIT_REPORT_DIR`` (set by ``make all``), and
:func:`repro_report_write` gathers every notebook's rows into ``reproduction_report.md`` (for
people), ``.json`` and ``.csv`` (for machines).

Each row has a verdict, decided by one of two rules:

- ``holds`` given: ``"reproduced"`` if it is true, ``"not reproduced"`` otherwise (for claims
  checked by the notebook itself, such as "the i.i.d. interval under-covers");
- otherwise ``paper_value`` and ``tolerance`` must both be numbers, and the row is reproduced
  when ``|evalkit_value - paper_value| <= tolerance``.

Command line: ``python -m evalkit.reproduce ROWS_DIR OUT_DIR`` writes the report.
"""

from __future__ import annotations

import argparse
import json
import math
import numbers
import os
import pathlib
import re
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "COLUMNS",
    "NOT_REPRODUCED",
    "REPORT_DIR_ENV",
    "REPRODUCED",
    "ReproTable",
    "repro_report_write",
]

REPRODUCED = "reproduced"
"""Verdict of a row whose number or claim evalkit reproduces."""

NOT_REPRODUCED = "not reproduced"
"""Verdict of a row whose number or claim evalkit does not reproduce."""

VERDICTS = (REPRODUCED, NOT_REPRODUCED)

COLUMNS = (
    "notebook",
    "paper",
    "claim",
    "setting",
    "paper_value",
    "evalkit_value",
    "tolerance",
    "verdict",
    "note",
)
"""The columns of a row, in order (``to_frame``, the CSV and the JSON use them)."""

REPORT_DIR_ENV = "EVALKIT_REPORT_DIR"
"""Environment variable naming the folder ``ReproTable.save`` writes into by default."""

REPORT_STEM = "reproduction_report"

_PAPER_KEY = re.compile(r"papers/\d{3}")
_NOTEBOOK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# Slack for floating-point noise when a difference sits exactly on the tolerance.
_REL_EPS = 1e-12


def _is_number(x: object) -> bool:
    """True for real numbers (Python or NumPy), False for ``bool`` and everything else."""
    return isinstance(x, numbers.Real) and not isinstance(x, bool | np.bool_)


def _finite_float(x: object, name: str) -> float:
    if not _is_number(x):
        raise TypeError(f"{name} must be a real number, got {type(x).__name__} {x!r}")
    value = float(x)  # type: ignore[arg-type]
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}; record a number the notebook computed")
    return value


def _text(x: object, name: str, *, allow_empty: bool = False) -> str:
    if not isinstance(x, str):
        raise TypeError(f"{name} must be a string, got {type(x).__name__} {x!r}")
    if not allow_empty and not x.strip():
        raise ValueError(f"{name} must not be empty")
    return x.strip()


def _verdict(paper_value: float | str, evalkit_value: float, tolerance: float | str | None, holds: bool | None) -> str:
    if holds is not None:
        return REPRODUCED if holds else NOT_REPRODUCED
    if isinstance(paper_value, float) and isinstance(tolerance, float):
        slack = tolerance + _REL_EPS * max(1.0, abs(paper_value))
        return REPRODUCED if abs(evalkit_value - paper_value) <= slack else NOT_REPRODUCED
    raise ValueError(
        "this row has no verdict rule: give holds=True/False, or give both paper_value and "
        f"tolerance as numbers (got paper_value={paper_value!r}, tolerance={tolerance!r})"
    )


def _format_value(x: object) -> str:
    """Format a value for people: whole numbers as integers, others with 4 significant digits."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    if _is_number(x):
        value = float(x)  # type: ignore[arg-type]
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.4g}"
    return str(x)


class ReproTable:
    """The "paper vs evalkit" table of one notebook.

    Rows are added with :meth:`add`; :meth:`show` saves them for the reproduction report and
    returns a frame to display. Adding a row with the same ``(paper, claim, setting)`` as an
    earlier one replaces it, so re-running a notebook cell does not duplicate rows.

    Parameters
    ----------
    notebook : str
        The notebook's file name without ``.ipynb``, e.g. ``"00-why-the-average-lies"``. It names
        the saved row file, so it may hold only letters, digits, ``.``, ``_`` and ``-``.

    Raises
    ------
    ValueError
        If ``notebook`` is empty or not a plain file-name stem.

    Examples
    --------
    >>> table = ReproTable("00-why-the-average-lies")
    >>> table.add("papers/000", "design effect", "m = 50, rho = 0.2", 10.8, 10.8, tolerance=0.05)
    >>> table.to_frame()["verdict"].tolist()
    ['reproduced']
    """

    def __init__(self, notebook: str) -> None:
        name = _text(notebook, "notebook")
        if name.endswith(".ipynb"):
            name = name[: -len(".ipynb")]
        if not _NOTEBOOK_NAME.fullmatch(name):
            raise ValueError(
                f"notebook must be the notebook's file name without .ipynb, like "
                f"'00-why-the-average-lies'; got {notebook!r}"
            )
        self.notebook: str = name
        self._rows: list[dict[str, Any]] = []

    def __len__(self) -> int:
        return len(self._rows)

    def __repr__(self) -> str:
        return f"ReproTable({self.notebook!r}, {len(self._rows)} rows)"

    def add(
        self,
        paper: str,
        claim: str,
        setting: str,
        paper_value: float | str,
        evalkit_value: float,
        tolerance: float | str | None = None,
        holds: bool | None = None,
        note: str = "",
    ) -> None:
        """Record one reproduced number or claim.

        Parameters
        ----------
        paper : str
            The paper key, ``"papers/000"`` ... ``"papers/004"`` (see the README's paper table).
        claim : str
            What is reproduced: a table cell, a figure or a sentence of the paper
            (e.g. ``"design effect, Sec. 2"``).
        setting : str
            The setting the number belongs to (e.g. ``"m = 50, rho = 0.2"``).
        paper_value : float or str
            The paper's number, or a short text when the paper states no number
            (e.g. ``"below 0.95"``).
        evalkit_value : float
            evalkit's number for the same setting; must be finite.
        tolerance : float, str or None, optional
            How far ``evalkit_value`` may be from ``paper_value`` (a non-negative number), or a
            text describing the rule used for ``holds`` (e.g. ``"4 MCSE"``).
        holds : bool or None, optional
            The verdict decided by the notebook. When given it decides the verdict; otherwise
            ``paper_value`` and ``tolerance`` must both be numbers and the verdict is
            ``|evalkit_value - paper_value| <= tolerance``.
        note : str, optional
            One sentence on why the numbers differ, where they do.

        Raises
        ------
        TypeError
            If an argument has the wrong type (e.g. a bool as ``evalkit_value``).
        ValueError
            If ``paper`` is not a paper key, a text is empty, a number is not finite, the
            tolerance is negative, or the row has no verdict rule.
        """
        paper = _text(paper, "paper")
        if not _PAPER_KEY.fullmatch(paper):
            raise ValueError(f"paper must be a key like 'papers/000' (see the README), got {paper!r}")
        claim = _text(claim, "claim")
        setting = _text(setting, "setting")
        note = _text(note, "note", allow_empty=True)

        pv: float | str
        if isinstance(paper_value, str):
            pv = _text(paper_value, "paper_value")
        else:
            pv = _finite_float(paper_value, "paper_value")
        ev = _finite_float(evalkit_value, "evalkit_value")

        tol: float | str | None
        if tolerance is None:
            tol = None
        elif isinstance(tolerance, str):
            tol = _text(tolerance, "tolerance")
        else:
            tol = _finite_float(tolerance, "tolerance")
            if tol < 0:
                raise ValueError(f"tolerance must be non-negative, got {tol!r}")

        if holds is not None:
            if not isinstance(holds, bool | np.bool_):
                raise TypeError(f"holds must be True, False or None, got {type(holds).__name__} {holds!r}")
            holds = bool(holds)

        row = {
            "notebook": self.notebook,
            "paper": paper,
            "claim": claim,
            "setting": setting,
            "paper_value": pv,
            "evalkit_value": ev,
            "tolerance": tol,
            "verdict": _verdict(pv, ev, tol, holds),
            "note": note,
        }
        key = (paper, claim, setting)
        for i, old in enumerate(self._rows):
            if (old["paper"], old["claim"], old["setting"]) == key:
                self._rows[i] = row
                return
        self._rows.append(row)

    def to_frame(self) -> pd.DataFrame:
        """Return the rows as a DataFrame with the columns :data:`COLUMNS`, in the order added.

        Returns
        -------
        pandas.DataFrame
            One row per recorded number; ``paper_value`` and ``tolerance`` are object columns
            because they may hold numbers or text.
        """
        data = {column: [row[column] for row in self._rows] for column in COLUMNS}
        frame = pd.DataFrame(data, columns=list(COLUMNS))
        for column in ("paper_value", "tolerance"):  # keep text and None as they are
            frame[column] = pd.Series(data[column], index=frame.index, dtype=object)
        frame["evalkit_value"] = frame["evalkit_value"].astype(float)
        return frame

    def show(self, directory: str | os.PathLike[str] | None = None) -> pd.DataFrame:
        """Save the rows (see :meth:`save`) and return a frame formatted for reading.

        Parameters
        ----------
        directory : str or path-like, optional
            Passed to :meth:`save`.

        Returns
        -------
        pandas.DataFrame
            The rows without the ``notebook`` column, numbers as text with 4 significant digits
            (whole numbers as integers), so the displayed table is stable across platforms.
        """
        self.save(directory)
        frame = self.to_frame().drop(columns="notebook")
        for column in ("paper_value", "evalkit_value", "tolerance"):
            frame[column] = [_format_value(v) for v in frame[column]]
        return frame

    def save(self, directory: str | os.PathLike[str] | None = None) -> pathlib.Path | None:
        """Write the rows to ``<directory>/<notebook>.json``, replacing an earlier file.

        Parameters
        ----------
        directory : str or path-like, optional
            Where to write. Defaults to the environment variable ``EVALKIT_REPORT_DIR``
            (``make all`` sets it); if neither is set, nothing is written.

        Returns
        -------
        pathlib.Path or None
            The file written, or ``None`` when there was nowhere to write.
        """
        if directory is None:
            directory = os.environ.get(REPORT_DIR_ENV) or None
        if directory is None:
            return None
        folder = pathlib.Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.notebook}.json"
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self._rows, indent=2, allow_nan=False) + "\n", encoding="utf-8")
        tmp.replace(path)
        return path


def _read_rows(path: pathlib.Path) -> list[dict[str, Any]]:
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}); re-run its notebook") from exc
    if not isinstance(rows, list):
        raise ValueError(f"{path} must hold a JSON list of rows, as ReproTable.save writes")
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ValueError(f"{path}: row {i} is not an object")
        missing = [c for c in COLUMNS if c not in row]
        if missing:
            raise ValueError(f"{path}: row {i} lacks the columns {missing}; re-run its notebook")
        if row["verdict"] not in VERDICTS:
            raise ValueError(f"{path}: row {i} has verdict {row['verdict']!r}, not one of {VERDICTS}")
    return rows


def _md_cell(x: object) -> str:
    return _format_value(x).replace("|", "\\|").replace("\n", " ")


def _totals(rows: Sequence[dict[str, Any]]) -> dict[str, int]:
    n_ok = sum(r["verdict"] == REPRODUCED for r in rows)
    return {"rows": len(rows), REPRODUCED: n_ok, NOT_REPRODUCED: len(rows) - n_ok}


def _markdown(by_notebook: dict[str, list[dict[str, Any]]], totals: dict[str, int]) -> str:
    headers = ["paper", "claim", "setting", "paper value", "evalkit value", "tolerance", "verdict", "note"]
    keys = ["paper", "claim", "setting", "paper_value", "evalkit_value", "tolerance", "verdict", "note"]
    lines = [
        "# evalkit reproduction report",
        "",
        "Each row is a number or claim from one of the papers (keys as in the README) next to the",
        "value evalkit computes for the same kind of setting. Written by `make all` from the rows",
        "each notebook saves with `evalkit.ReproTable`.",
        "",
        f"**Totals: {totals[REPRODUCED]} reproduced, {totals[NOT_REPRODUCED]} not reproduced** "
        f"({totals['rows']} rows from {len(by_notebook)} notebook{'' if len(by_notebook) == 1 else 's'}).",
    ]
    for notebook, rows in by_notebook.items():
        lines += ["", f"## {notebook}", ""]
        if not rows:
            lines.append("_No rows recorded._")
            continue
        lines.append("| " + " | ".join(headers) + " |")
        lines.append("|" + "---|" * len(headers))
        for row in rows:
            lines.append("| " + " | ".join(_md_cell(row[k]) for k in keys) + " |")
    return "\n".join(lines) + "\n"


def repro_report_write(rows_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> pathlib.Path:
    """Gather every notebook's saved rows into the reproduction report.

    Reads every ``*.json`` file in ``rows_dir`` (one per notebook, as written by
    :meth:`ReproTable.save`) and writes ``reproduction_report.md`` (a table per notebook and the
    totals), ``reproduction_report.json`` (``{"totals": ..., "rows": [...]}``) and
    ``reproduction_report.csv`` (the rows, columns :data:`COLUMNS`) into ``out_dir``.

    Parameters
    ----------
    rows_dir : str or path-like
        Folder holding the per-notebook row files.
    out_dir : str or path-like
        Folder for the report; created if needed.

    Returns
    -------
    pathlib.Path
        The path of ``reproduction_report.md``.

    Raises
    ------
    FileNotFoundError
        If ``rows_dir`` does not exist or holds no ``*.json`` files.
    ValueError
        If a row file is malformed.
    """
    rows_path = pathlib.Path(rows_dir)
    if not rows_path.is_dir():
        raise FileNotFoundError(
            f"no row folder {rows_path}: run the notebooks with {REPORT_DIR_ENV} set "
            "(`make all` does), or save tables with ReproTable.save(directory)"
        )
    files = sorted(rows_path.glob("*.json"))
    if not files:
        raise FileNotFoundError(
            f"no *.json row files in {rows_path}: run the notebooks with {REPORT_DIR_ENV}={rows_path} "
            "(`make all` does), and make sure each notebook calls ReproTable.show() or .save()"
        )
    by_notebook: dict[str, list[dict[str, Any]]] = {}
    for path in files:
        by_notebook[path.stem] = _read_rows(path)
    rows = [row for notebook_rows in by_notebook.values() for row in notebook_rows]
    totals = _totals(rows)

    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md_path = out / f"{REPORT_STEM}.md"
    md_path.write_text(_markdown(by_notebook, totals), encoding="utf-8")
    (out / f"{REPORT_STEM}.json").write_text(
        json.dumps({"totals": totals, "notebooks": list(by_notebook), "rows": rows}, indent=2, allow_nan=False) + "\n",
        encoding="utf-8",
    )
    pd.DataFrame(rows, columns=list(COLUMNS)).to_csv(out / f"{REPORT_STEM}.csv", index=False)
    return md_path


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m evalkit.reproduce ROWS_DIR OUT_DIR``; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m evalkit.reproduce",
        description="Write the reproduction report (Markdown, JSON, CSV) from the notebooks' row files.",
    )
    parser.add_argument("rows_dir", help="folder of <notebook>.json row files (EVALKIT_REPORT_DIR)")
    parser.add_argument("out_dir", help="folder for reproduction_report.{md,json,csv}")
    args = parser.parse_args(argv)
    try:
        md_path = repro_report_write(args.rows_dir, args.out_dir)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    totals = json.loads(md_path.with_suffix(".json").read_text(encoding="utf-8"))["totals"]
    print(f"wrote {md_path} (+ .json, .csv): {totals[REPRODUCED]} reproduced, {totals[NOT_REPRODUCED]} not reproduced")
    return 0


if __name__ == "__main__":
    sys.exit(main())
