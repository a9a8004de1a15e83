"""The "paper vs evalkit" rows of every notebook, and the reproduction report.

Every notebook records the numbers it reproduces in one :class:`ReproTable`. The table the
notebook shows and the rows of the reproduction report are the same data: ``ReproTable.show``
saves the rows as JSON into ``$EVALKIT_REPORT_DIR`` (set by ``make all``), and
:func:`repro_report_write` gathers every notebook's rows into ``reproduction_report.md`` (for
people), ``.json`` and ``.csv`` (for machines). Papers are named by the labels of
:data:`PAPERS` (``"MISSING"``, ``"FAQ"``, ``"CBMM"``, ``"HARMONY"``, ``"ECC"``, and
``"MILLER"`` for the planning reference).

Verdicts
--------
A row's verdict is always computed from its values, never stored on trust; the report
recomputes it from the saved values and refuses a row file whose stored verdict differs.

``"reproduced"``
    The rule below holds for ``evalkit_value`` (and for ``full_run_value`` when one is given).
``"not reproduced"``
    The rule fails for ``evalkit_value`` or for the longer run's ``full_run_value``.
``"inconclusive"``
    The row carries a Monte Carlo standard error ``mcse`` and ``evalkit_value`` lies within
    ``2 * mcse`` of the edge the rule compares against (``threshold``, or ``paper_value``
    plus or minus ``tolerance``): the simulation is too short to tell.
``"not tested in the paper's setting"``
    The row's run cannot speak for the paper's number, and ``not_tested_because`` says why: the
    number belongs to the paper's own data, models or size, and the run has other data, or a
    smaller size (fewer models, trials or queries) that the number depends on. The row still shows
    the value, but such a run can neither reproduce the number nor refute it. With
    ``full_run_value`` (a run in the paper's setting) the verdict is that run's alone. A general
    claim about a method (an estimator is unbiased, an interval covers, one sampler beats another,
    a fit is faster) tested on a design that meets the claim's conditions is not such a row: it
    gets one of the three verdicts above, with the design named in ``setting``.

The rule of a row is, in this order:

1. ``threshold`` and ``compare`` given (a claim such as "coverage below 0.60"):
   ``evalkit_value <compare> threshold``;
2. ``paper_value`` and ``tolerance`` both numbers: ``|evalkit_value - paper_value| <= tolerance``;
3. otherwise the notebook's own ``holds`` (True/False), for claims no number can check.

When ``holds`` is given together with rule 1 or 2 it must agree with that rule (a row whose
text and numbers disagree is refused). A row with ``mcse`` or ``full_run_value`` needs rule 1
or 2, since a verdict can only be recomputed from a number and a rule.

Three columns: paper, authors, evalkit
--------------------------------------
When the paper's authors released code or results, a row can carry their value too
(``authors_value``) with its provenance (``authors_source``: the ``repository``, the
``commit``, the ``file`` and ``how`` the number was computed from it). Two more verdicts are then
computed from the values:

``authors_verdict``
    evalkit against the authors: ``|evalkit_value - authors_value| <= authors_tolerance``
    (``authors_tolerance`` defaults to a numeric ``tolerance``), "inconclusive" within
    ``2 * mcse`` of that edge, as above.
``authors_vs_paper``
    the authors' own value against the paper's rule (rule 1 or 2 above, without ``mcse``):
    whether the authors' released code or logs give the paper's number.

A row without an authors' value has ``None`` in these columns; row files written before these
columns existed are read as such rows.

Command line: ``python -m evalkit.reproduce ROWS_DIR OUT_DIR`` writes the report.
"""

from __future__ import annotations

import json
import math
import numbers
import operator
import os
import pathlib
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..errors import EvalkitInputError, EvalkitInputNotFoundError

__all__ = [
    "COLUMNS",
    "INCONCLUSIVE",
    "NOT_REPRODUCED",
    "NOT_TESTED",
    "PAPERS",
    "PAPER_ALIASES",
    "REPORT_DIR_ENV",
    "REPRODUCED",
    "VERDICTS",
    "ReproFrame",
    "AUTHORS_SOURCE_KEYS",
    "ReproTable",
    "repro_report_write",
]

REPRODUCED = "reproduced"
"""Verdict of a row whose number or claim evalkit reproduces."""

NOT_REPRODUCED = "not reproduced"
"""Verdict of a row whose number or claim evalkit does not reproduce."""

INCONCLUSIVE = "inconclusive"
"""Verdict of a simulated row whose value is within 2 Monte Carlo SEs of the rule's edge."""

NOT_TESTED = "not tested in the paper's setting"
"""Verdict of a row whose run is not in the paper's setting (and has no run in it beside it)."""

VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_TESTED)
"""Every verdict a row can have."""

PAPERS: Mapping[str, str] = {
    "MISSING": (
        "Zhenghao Zeng, David Arbour, Avi Feller, Ishita Dasgupta, Atanu R. Sinha, Edward H. Kennedy. "
        "Handling Missing Responses under Cluster Dependence with Applications to Language Model "
        "Evaluation. NeurIPS 2025, arXiv:2510.20928."
    ),
    "FAQ": (
        "Skyler Wu, Yash Nair, Emmanuel J. Candes. Efficient Evaluation of LLM Performance with "
        "Statistical Guarantees. arXiv:2601.20251, 2026."
    ),
    "CBMM": (
        "Xinhao Qu, Qiang Heng, Hao Zeng, Xiaoqian Liu. An Interpretable and Scalable Framework for "
        "Evaluating Large Language Models. arXiv:2605.07046, 2026."
    ),
    "HARMONY": (
        "Arda Uzunoglu, Tianjian Li, Daniel Khashabi. The Flaw of Averages: Quantifying Uniformity of "
        "Performance on Benchmarks. arXiv:2509.25671, 2025."
    ),
    "ECC": (
        "Fangzhou Wu, Sandeep Silwal, Qiuyi Zhang. Capturing LLM Capabilities via Evidence-Calibrated "
        "Query Clustering. arXiv:2605.17110, 2026."
    ),
    "MILLER": (
        "Evan Miller. Adding Error Bars to Evals: A Statistical Approach to Language Model Evaluations. "
        "arXiv:2411.00640, 2024 (the planning reference of notebooks 01.1 and 01.2; its figures are checked as quoted "
        "by secondary sources, see docs/references.md)."
    ),
}
"""The papers evalkit reproduces (the five methods, then the planning reference): label -> full
citation, as in ``docs/references.md``."""

PAPER_ALIASES: Mapping[str, str] = {
    "papers/000": "MISSING",
    "papers/001": "FAQ",
    "papers/002": "CBMM",
    "papers/003": "HARMONY",
    "papers/004": "ECC",
}
"""Deprecated paper keys (file names of the source documents) -> labels of :data:`PAPERS`."""

COMPARISONS: Mapping[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
"""The ``compare`` operators of a threshold claim."""

COLUMNS = (
    "notebook",
    "paper",
    "claim",
    "setting",
    "paper_value",
    "evalkit_value",
    "tolerance",
    "threshold",
    "compare",
    "holds",
    "mcse",
    "full_run_value",
    "not_tested_because",
    "verdict",
    "authors_value",
    "authors_tolerance",
    "authors_source",
    "authors_verdict",
    "authors_vs_paper",
    "note",
)
"""The columns of a row, in order (``to_frame``, the CSV and the JSON use them)."""

_COMPUTED = ("notebook", "verdict", "authors_verdict", "authors_vs_paper")
_INPUTS = tuple(c for c in COLUMNS if c not in _COMPUTED)
_OPTIONAL = ("not_tested_because", "authors_value", "authors_tolerance", "authors_source", "authors_verdict",
             "authors_vs_paper")
"""Columns a row file written before the three-column report may lack (read as None)."""

AUTHORS_SOURCE_KEYS = ("repository", "commit", "file", "how")
"""The keys of a row's ``authors_source``: where the authors' value comes from and how it was computed."""

REPORT_DIR_ENV = "EVALKIT_REPORT_DIR"
"""Environment variable naming the folder ``ReproTable.save`` writes into by default."""

REPORT_STEM = "reproduction_report"

_NOTEBOOK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# Slack for floating-point noise when a difference sits exactly on the tolerance.
_REL_EPS = 1e-12
# "inconclusive" when the value is this many Monte Carlo SEs from the rule's edge, or closer.
_MCSE_BAND = 2.0


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


def _optional_float(x: object, name: str, *, non_negative: bool = False) -> float | None:
    if x is None:
        return None
    value = _finite_float(x, name)
    if non_negative and value < 0:
        raise ValueError(f"{name} must be non-negative, got {value!r}")
    return value


def _text(x: object, name: str, *, allow_empty: bool = False) -> str:
    if not isinstance(x, str):
        raise TypeError(f"{name} must be a string, got {type(x).__name__} {x!r}")
    if not allow_empty and not x.strip():
        raise ValueError(f"{name} must not be empty")
    return x.strip()


def _paper_label(paper: object) -> str:
    label = _text(paper, "paper")
    if label in PAPER_ALIASES:
        new = PAPER_ALIASES[label]
        warnings.warn(
            f"paper key {label!r} is deprecated: use the label {new!r} (see evalkit.reproduce.PAPERS)",
            PendingDeprecationWarning,
            stacklevel=4,  # _paper_label <- _make_row <- ReproTable.add <- the caller
        )
        return new
    if label not in PAPERS:
        raise ValueError(
            f"paper must be one of the labels {sorted(PAPERS)} (or a deprecated key like 'papers/000'), got {label!r}"
        )
    return label


def _rule(
    value: float,
    paper_value: float | str,
    tolerance: float | str | None,
    threshold: float | None,
    compare: str | None,
) -> tuple[bool, float] | None:
    """Apply the row's numeric rule to ``value``: (passes, distance to the rule's edge), or None."""
    if compare is not None and threshold is not None:
        return COMPARISONS[compare](value, threshold), abs(value - threshold)
    if isinstance(paper_value, float) and isinstance(tolerance, float):
        distance = abs(value - paper_value)
        slack = tolerance + _REL_EPS * max(1.0, abs(paper_value))
        return distance <= slack, abs(distance - tolerance)
    return None


def _verdict(
    paper_value: float | str,
    evalkit_value: float,
    tolerance: float | str | None,
    holds: bool | None,
    *,
    threshold: float | None = None,
    compare: str | None = None,
    mcse: float | None = None,
    full_run_value: float | None = None,
    not_tested_because: str | None = None,
) -> str:
    """The verdict of one row, from its values (the rules are in the module docstring)."""
    if not_tested_because is not None:
        if full_run_value is None:
            if _rule(evalkit_value, paper_value, tolerance, threshold, compare) is None and holds is None:
                raise ValueError(
                    "this row has no verdict rule: give holds=True/False, or give both paper_value and "
                    "tolerance as numbers, or threshold and compare"
                )
            return NOT_TESTED
        # A run outside the paper's setting does not speak for it; the run in that setting alone decides.
        return _verdict(paper_value, full_run_value, tolerance, None, threshold=threshold, compare=compare)
    applied = _rule(evalkit_value, paper_value, tolerance, threshold, compare)
    if applied is None:
        if holds is None:
            raise ValueError(
                "this row has no verdict rule: give holds=True/False, or give both paper_value and "
                "tolerance as numbers, or threshold and compare "
                f"(got paper_value={paper_value!r}, tolerance={tolerance!r})"
            )
        for name, extra in (("mcse", mcse), ("full_run_value", full_run_value)):
            if extra is not None:
                raise ValueError(
                    f"{name} needs a numeric rule to judge against: give threshold and compare "
                    "(e.g. threshold=0.60, compare='<'), or paper_value and tolerance as numbers"
                )
        return REPRODUCED if holds else NOT_REPRODUCED

    passes, edge_distance = applied
    if holds is not None and holds != passes:
        raise ValueError(
            f"holds={holds} disagrees with the row's own numbers (evalkit_value={evalkit_value!r}, "
            f"paper_value={paper_value!r}, tolerance={tolerance!r}, threshold={threshold!r}, compare={compare!r}); "
            "drop holds or fix the numbers"
        )
    if mcse is not None and edge_distance <= _MCSE_BAND * mcse:
        verdict = INCONCLUSIVE
    else:
        verdict = REPRODUCED if passes else NOT_REPRODUCED
    if full_run_value is not None:
        full = _rule(full_run_value, paper_value, tolerance, threshold, compare)
        assert full is not None  # the same rule applies to any value
        full_verdict = REPRODUCED if full[0] else NOT_REPRODUCED
        # Never claim more than the weaker of the two runs supports.
        if NOT_REPRODUCED in (verdict, full_verdict):
            verdict = NOT_REPRODUCED
    return verdict


def _make_row(
    notebook: str,
    paper: object,
    claim: object,
    setting: object,
    paper_value: object,
    evalkit_value: object,
    tolerance: object = None,
    holds: object = None,
    note: object = "",
    *,
    threshold: object = None,
    compare: object = None,
    mcse: object = None,
    full_run_value: object = None,
    not_tested_because: object = None,
    authors_value: object = None,
    authors_tolerance: object = None,
    authors_source: object = None,
) -> dict[str, Any]:
    """Validate one row's inputs and return the row with its computed verdict."""
    label = _paper_label(paper)
    claim_text = _text(claim, "claim")
    setting_text = _text(setting, "setting")
    note_text = _text(note, "note", allow_empty=True)

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

    thr = _optional_float(threshold, "threshold")
    if compare is not None and compare not in COMPARISONS:
        raise ValueError(f"compare must be one of {list(COMPARISONS)}, got {compare!r}")
    if (thr is None) != (compare is None):
        raise ValueError("give threshold and compare together (e.g. threshold=0.60, compare='<'), or neither")
    mc = _optional_float(mcse, "mcse", non_negative=True)
    full = _optional_float(full_run_value, "full_run_value")
    untested = None if not_tested_because is None else _text(not_tested_because, "not_tested_because")

    verdict = _verdict(pv, ev, tol, holds, threshold=thr, compare=compare, mcse=mc,  # type: ignore[arg-type]
                       full_run_value=full, not_tested_because=untested)
    av, atol, asrc, a_verdict, a_vs_paper = _authors(pv, ev, tol, thr, None if compare is None else str(compare),
                                                     mc, authors_value, authors_tolerance, authors_source)
    return {
        "notebook": notebook,
        "paper": label,
        "claim": claim_text,
        "setting": setting_text,
        "paper_value": pv,
        "evalkit_value": ev,
        "tolerance": tol,
        "threshold": thr,
        "compare": compare,
        "holds": holds,
        "mcse": mc,
        "full_run_value": full,
        "not_tested_because": untested,
        "verdict": verdict,
        "authors_value": av,
        "authors_tolerance": atol,
        "authors_source": asrc,
        "authors_verdict": a_verdict,
        "authors_vs_paper": a_vs_paper,
        "note": note_text,
    }


def _authors(
    paper_value: float | str,
    evalkit_value: float,
    tolerance: float | str | None,
    threshold: float | None,
    compare: str | None,
    mcse: float | None,
    authors_value: object,
    authors_tolerance: object,
    authors_source: object,
) -> tuple[float | None, float | None, dict[str, str] | None, str | None, str | None]:
    """Check the authors' value and provenance; return them with the two verdicts they give."""
    if authors_value is None:
        for name, extra in (("authors_tolerance", authors_tolerance), ("authors_source", authors_source)):
            if extra is not None:
                raise ValueError(f"{name} needs an authors_value (the number the authors' code or logs give)")
        return None, None, None, None, None
    av = _finite_float(authors_value, "authors_value")
    if not isinstance(authors_source, Mapping):
        raise TypeError(
            "authors_source must be a mapping with the keys "
            f"{list(AUTHORS_SOURCE_KEYS)} (where the authors' value comes from), got {authors_source!r}"
        )
    missing = [k for k in AUTHORS_SOURCE_KEYS if k not in authors_source]
    unknown = sorted(set(authors_source) - set(AUTHORS_SOURCE_KEYS))
    if missing or unknown:
        raise ValueError(
            f"authors_source must have exactly the keys {list(AUTHORS_SOURCE_KEYS)}; "
            f"missing {missing}, unknown {unknown}"
        )
    src = {k: _text(authors_source[k], f"authors_source[{k!r}]") for k in AUTHORS_SOURCE_KEYS}
    atol = _optional_float(authors_tolerance, "authors_tolerance", non_negative=True)
    if atol is None:
        if not isinstance(tolerance, float):
            raise ValueError(
                "give authors_tolerance (how far evalkit_value may be from authors_value): the row's "
                f"tolerance {tolerance!r} is not a number"
            )
        atol = tolerance
    a_verdict = _verdict(av, evalkit_value, atol, None, mcse=mcse)
    applied = _rule(av, paper_value, tolerance, threshold, compare)
    a_vs_paper = None if applied is None else (REPRODUCED if applied[0] else NOT_REPRODUCED)
    return av, atol, src, a_verdict, a_vs_paper


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


def _display_tolerance(row: Mapping[str, Any]) -> str:
    """The tolerance column for people: the tolerance, or the threshold claim when there is none."""
    if row["tolerance"] is None and row["compare"] is not None:
        return f"{row['compare']} {_format_value(row['threshold'])}"
    return _format_value(row["tolerance"])


def _format_source(src: Mapping[str, str] | None) -> str:
    """``owner/name @ commit, file: how`` (empty without a source)."""
    if not src:
        return ""
    return f"{src['repository']} @ {src['commit']}, {src['file']}: {src['how']}"


_FULL = ("display.max_colwidth", None, "display.max_rows", None, "display.max_columns", None)


class ReproFrame(pd.DataFrame):
    """A DataFrame that shows every cell in full: notes are never cut at 50 characters."""

    @property
    def _constructor(self) -> type[ReproFrame]:
        return ReproFrame

    def __repr__(self) -> str:
        with pd.option_context(*_FULL):
            return super().__repr__()

    def _repr_html_(self) -> str | None:
        with pd.option_context(*_FULL):
            return super()._repr_html_()  # type: ignore[misc]


class ReproTable:
    """The "paper vs evalkit" table of one notebook.

    Rows are added with :meth:`add`; :meth:`show` saves them for the reproduction report and
    returns a frame to display. Adding a row with the same ``(paper, claim, setting)`` as an
    earlier one replaces it, so re-running a notebook cell does not duplicate rows. The verdict
    of each row ("reproduced", "not reproduced" or "inconclusive") is computed from its values;
    the rules are in the :mod:`evalkit.reproduce` module docstring.

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
    >>> table.add("MISSING", "design effect", "m = 50, rho = 0.2", 10.8, 10.8, tolerance=0.05)
    >>> table.add("MISSING", "i.i.d. coverage below 0.60", "ICC 0.2, 400 reps", "< 0.60", 0.59,
    ...           threshold=0.60, compare="<", mcse=0.025)
    >>> table.to_frame()["verdict"].tolist()
    ['reproduced', 'inconclusive']
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
        *,
        threshold: float | None = None,
        compare: str | None = None,
        mcse: float | None = None,
        full_run_value: float | None = None,
        not_tested_because: str | None = None,
        authors_value: float | None = None,
        authors_tolerance: float | None = None,
        authors_source: Mapping[str, str] | None = None,
    ) -> None:
        """Record one reproduced number or claim.

        Parameters
        ----------
        paper : str
            The paper's label, a key of :data:`PAPERS` (``"MISSING"``, ``"FAQ"``, ``"CBMM"``,
            ``"HARMONY"``, ``"ECC"``, ``"MILLER"``). The old keys ``"papers/000"`` ... ``"papers/004"`` still
            work, are stored as the new labels, and raise a ``PendingDeprecationWarning``.
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
            The notebook's own verdict, for claims no number can check. When the row also has a
            numeric rule (``threshold``/``compare``, or numeric ``paper_value`` and
            ``tolerance``), ``holds`` must agree with it.
        note : str, optional
            Why the numbers differ, where they do; shown in full.
        threshold, compare : float and {"<", "<=", ">", ">="}, optional
            A threshold claim: the row reproduces when ``evalkit_value <compare> threshold``
            (e.g. ``threshold=0.60, compare="<"`` for "coverage can fall below 60%").
        mcse : float, optional
            The Monte Carlo standard error of ``evalkit_value`` when a simulation produced it.
            The verdict is ``"inconclusive"`` when ``evalkit_value`` is within ``2 * mcse`` of
            the rule's edge (``threshold``, or ``paper_value +/- tolerance``).
        full_run_value : float, optional
            The value a longer run (e.g. ``EVALKIT_FULL=1``) gave for the same setting. The row
            cannot be "reproduced" unless this value passes the rule too. With
            ``not_tested_because`` it is the run in the paper's setting, and it alone decides.
        not_tested_because : str, optional
            Why this row's run cannot speak for the paper's number (e.g. ``"40 of 1,111 test
            models, 3 trials; the gain grows with the number of models"``, or ``"MMLU-Pro, not the
            paper's Open LLM v2 mixture; the gain is a property of that data"``). Without
            ``full_run_value`` the verdict is ``"not tested in the paper's setting"``, whatever
            ``evalkit_value`` is. Not for a general claim about a method tested on a design that
            meets the claim's conditions: give that row an ordinary verdict and name the design in
            ``setting``.
        authors_value : float, optional
            The same number from the authors' released code or results (the third column).
        authors_tolerance : float, optional
            How far ``evalkit_value`` may be from ``authors_value``; defaults to ``tolerance``
            when that is a number.
        authors_source : mapping, optional
            Required with ``authors_value``: ``{"repository": "owner/name", "commit": ...,
            "file": "path in the repository", "how": "how the number was computed from it"}``.

        Raises
        ------
        TypeError
            If an argument has the wrong type (e.g. a bool as ``evalkit_value``).
        ValueError
            If ``paper`` is not a known label, a text is empty, a number is not finite, the
            tolerance or ``mcse`` is negative, ``threshold`` comes without ``compare`` (or the
            reverse), ``holds`` disagrees with the row's numbers, or the row has no verdict rule.
        """
        row = _make_row(
            self.notebook, paper, claim, setting, paper_value, evalkit_value, tolerance, holds, note,
            threshold=threshold, compare=compare, mcse=mcse, full_run_value=full_run_value,
            not_tested_because=not_tested_because, authors_value=authors_value, authors_tolerance=authors_tolerance,
            authors_source=authors_source,
        )
        key = (row["paper"], row["claim"], row["setting"])
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
            One row per recorded number; ``paper_value``, ``tolerance``, ``threshold``,
            ``compare``, ``holds``, ``mcse`` and ``full_run_value`` are object columns because
            they may hold numbers, text or None.
        """
        data = {column: [row[column] for row in self._rows] for column in COLUMNS}
        frame = pd.DataFrame(data, columns=list(COLUMNS))
        for column in ("paper_value", "tolerance", "threshold", "compare", "holds", "mcse", "full_run_value",
                       "not_tested_because",
                       "authors_value", "authors_tolerance", "authors_source", "authors_verdict",
                       "authors_vs_paper"):
            frame[column] = pd.Series(data[column], index=frame.index, dtype=object)
        frame["evalkit_value"] = frame["evalkit_value"].astype(float)
        return frame

    def show(self, directory: str | os.PathLike[str] | None = None) -> ReproFrame:
        """Save the rows (see :meth:`save`) and return a frame formatted for reading.

        Parameters
        ----------
        directory : str or path-like, optional
            Passed to :meth:`save`.

        Returns
        -------
        ReproFrame
            ``paper, claim, setting, paper_value, evalkit_value, tolerance, verdict, note``, plus
            ``mcse``, ``full_run_value`` and ``not_tested_because`` when some row has them, and ``authors_value,
            authors_verdict, authors_vs_paper, authors_source`` when some row has an authors'
            value. Numbers are text with 4 significant digits (whole numbers as integers), so
            the displayed table is stable across platforms; a threshold claim shows as
            ``"< 0.6"`` in the tolerance column. Every cell is displayed in full.
        """
        self.save(directory)
        columns = ["paper", "claim", "setting", "paper_value", "evalkit_value", "tolerance", "verdict", "note"]
        extra = [c for c in ("mcse", "full_run_value", "not_tested_because")
                 if any(row[c] is not None for row in self._rows)]
        authors = any(row["authors_value"] is not None for row in self._rows)
        three = ["authors_value", "authors_verdict", "authors_vs_paper", "authors_source"] if authors else []
        data: dict[str, list[str]] = {c: [] for c in columns[:6] + extra + columns[6:7] + three + columns[7:]}
        for row in self._rows:
            for column in data:
                if column == "tolerance":
                    data[column].append(_display_tolerance(row))
                elif column in ("paper_value", "evalkit_value", "mcse", "full_run_value", "authors_value"):
                    data[column].append(_format_value(row[column]))
                elif column == "authors_source":
                    data[column].append(_format_source(row[column]))
                else:
                    data[column].append("" if row[column] is None else row[column])
        return ReproFrame(data, columns=list(data))

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
    """Read one row file, re-validate every row and recompute its verdict."""
    if not path.is_file():
        raise ValueError(f"{path} is not a file: the row folder must hold only <notebook>.json row files")
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}); re-run its notebook") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not UTF-8 text ({exc}); re-run its notebook") from exc
    if not isinstance(rows, list):
        raise ValueError(f"{path} must hold a JSON list of rows, as ReproTable.save writes")
    checked: list[dict[str, Any]] = []
    for i, row in enumerate(rows):
        where = f"{path}, row {i}"
        if not isinstance(row, dict):
            raise ValueError(f"{where} is not an object")
        row = {**{c: None for c in _OPTIONAL}, **row}
        missing = [c for c in COLUMNS if c not in row]
        if missing:
            raise ValueError(f"{where} lacks the columns {missing}; re-run its notebook")
        unknown = sorted(set(row) - set(COLUMNS))
        if unknown:
            raise ValueError(f"{where} has unknown columns {unknown}; re-run its notebook")
        if row["notebook"] != path.stem:
            raise ValueError(f"{where} belongs to notebook {row['notebook']!r}, not to {path.stem!r}")
        if row["verdict"] not in VERDICTS:
            raise ValueError(f"{where} has verdict {row['verdict']!r}, not one of {VERDICTS}")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PendingDeprecationWarning)
                fresh = _make_row(path.stem, **{c: row[c] for c in _INPUTS})
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where} (claim {row.get('claim')!r}): {exc}") from exc
        for column in ("verdict", "authors_verdict", "authors_vs_paper"):
            if row[column] is not None and fresh[column] != row[column]:
                raise ValueError(
                    f"{where} (claim {row['claim']!r}) says {'' if column == 'verdict' else column + ' '}"
                    f"{row[column]!r}, but its values give "
                    f"{fresh[column]!r}; re-run its notebook"
                )
        checked.append(fresh)
    return checked


def _md_cell(x: object) -> str:
    return _format_value(x).replace("|", "\\|").replace("\n", " ")


def _totals(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    totals = {"rows": len(rows)}
    for verdict in VERDICTS:
        totals[verdict] = sum(r["verdict"] == verdict for r in rows)
    totals["with_authors_value"] = sum(r["authors_value"] is not None for r in rows)
    return totals


def _markdown(by_notebook: Mapping[str, list[dict[str, Any]]], totals: Mapping[str, int]) -> str:
    headers = ["paper", "claim", "setting", "paper value", "authors' value", "evalkit value", "tolerance", "MCSE",
               "full run", "not tested because", "verdict (evalkit vs paper)", "evalkit vs authors", "authors vs paper",
               "note"]
    lines = [
        "# evalkit reproduction report",
        "",
        "Each row is a number or claim from one of the papers (labels listed at the end) next to the",
        "value evalkit computes for the same kind of setting. Written by `make all` from the rows",
        "each notebook saves with `evalkit.ReproTable`; every verdict is recomputed from the values.",
        "A row is *inconclusive* when its simulated value lies within 2 Monte Carlo standard errors",
        "(MCSE) of the paper's threshold; *full run* is the value of a longer run of the same setting.",
        "A row is *not tested in the paper's setting* when its run differs from the paper's in a way that",
        "matters (*not tested because* says how: a smaller run, a setting the claim does not name, other",
        "data) and no run in the paper's setting is given: its value is shown, but it decides nothing.",
        "Where the authors released code or results, *authors' value* is their number (its source is",
        "listed under the table), *evalkit vs authors* compares evalkit with it and *authors vs paper*",
        "says whether the authors' own code or logs give the paper's number.",
        "",
        f"**Totals: {totals[REPRODUCED]} reproduced, {totals[NOT_REPRODUCED]} not reproduced, "
        f"{totals[INCONCLUSIVE]} inconclusive, {totals[NOT_TESTED]} not tested in the paper's setting** "
        f"({totals['rows']} rows from {len(by_notebook)} notebook{'' if len(by_notebook) == 1 else 's'}).",
    ]
    used: list[str] = []
    for notebook, rows in by_notebook.items():
        lines += ["", f"## {notebook}", ""]
        if not rows:
            lines.append("_No rows recorded._")
            continue
        lines.append("| " + " | ".join(headers) + " |")
        lines.append("|" + "---|" * len(headers))
        sources: list[str] = []
        for row in rows:
            author = _format_value(row["authors_value"])
            if row["authors_source"]:
                sources.append(f"{len(sources) + 1}. {_format_source(row['authors_source'])}")
                author = f"{author} [{len(sources)}]"
            cells = [row["paper"], row["claim"], row["setting"], row["paper_value"], author, row["evalkit_value"],
                     _display_tolerance(row), row["mcse"], row["full_run_value"], row["not_tested_because"],
                     row["verdict"],
                     row["authors_verdict"], row["authors_vs_paper"], row["note"]]
            lines.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
            if row["paper"] not in used:
                used.append(row["paper"])
        if sources:
            lines += ["", "Authors' values:", ""] + sources
    if used:
        lines += ["", "## Papers", ""]
        lines += [f"- **{label}**: {PAPERS[label]}" for label in sorted(used)]
    return "\n".join(lines) + "\n"


def _write_together(files: Mapping[pathlib.Path, str]) -> None:
    """Write every file or none.

    The contents go to temporary files beside the targets first; then each target is moved
    aside and replaced. If any step fails, the targets already replaced are put back as they
    were, so a reader never sees a Markdown report from one run beside a CSV from another.
    """
    in_the_way = [str(path) for path in files if path.exists() and not path.is_file()]
    if in_the_way:
        raise ValueError(f"cannot write the report: {in_the_way} exist and are not files")
    tag = f"{os.getpid()}.tmp"
    temps = {path: path.with_name(f".{path.name}.{tag}") for path in files}
    backups: dict[pathlib.Path, pathlib.Path] = {}
    placed: list[pathlib.Path] = []
    try:
        for path, text in files.items():
            temps[path].write_text(text, encoding="utf-8")
        try:
            for path, tmp in temps.items():
                if path.exists():
                    backups[path] = path.with_name(f".{path.name}.{os.getpid()}.old")
                    path.replace(backups[path])
                tmp.replace(path)
                placed.append(path)
        except OSError:
            for path in placed:
                path.unlink(missing_ok=True)
            for path, backup in backups.items():
                backup.replace(path)
            backups.clear()
            raise
    finally:
        for tmp in temps.values():
            tmp.unlink(missing_ok=True)
        for backup in backups.values():
            backup.unlink(missing_ok=True)


def repro_report_write(rows_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> pathlib.Path:
    """Gather every notebook's saved rows into the reproduction report.

    Reads every ``*.json`` file in ``rows_dir`` (one per notebook, as written by
    :meth:`ReproTable.save`), re-validates every row and recomputes its verdict, and writes
    ``reproduction_report.md`` (a table per notebook, the totals and the citations),
    ``reproduction_report.json`` (``{"totals": ..., "notebooks": [...], "rows": [...]}``) and
    ``reproduction_report.csv`` (the rows, columns :data:`COLUMNS`) into ``out_dir``: all three
    or, when anything fails, none.

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
        If ``rows_dir`` or ``out_dir`` is a file, a row file is malformed, holds a bad value or a
        verdict its values do not give (the message names the file and the row), or two rows
        share notebook, paper, claim and setting.
    """
    rows_path = pathlib.Path(rows_dir)
    if rows_path.exists() and not rows_path.is_dir():
        raise EvalkitInputError(
            "rows_dir", f"the row folder {rows_path} is a file; give the folder that holds the <notebook>.json files")
    if not rows_path.is_dir():
        raise EvalkitInputNotFoundError(
            "rows_dir", f"no row folder {rows_path}: run the notebooks with {REPORT_DIR_ENV} set "
            "(`make all` does), or save tables with ReproTable.save(directory)"
        )
    out = pathlib.Path(out_dir)
    if out.exists() and not out.is_dir():
        raise EvalkitInputError("out_dir", f"the output folder {out} is an existing file; give a folder for the report")
    files = sorted(rows_path.glob("*.json"))
    if not files:
        raise EvalkitInputNotFoundError(
            "rows_dir", f"no *.json row files in {rows_path}: run the notebooks with {REPORT_DIR_ENV}={rows_path} "
            "(`make all` does), and make sure each notebook calls ReproTable.show() or .save()"
        )
    by_notebook: dict[str, list[dict[str, Any]]] = {}
    seen: dict[tuple[str, str, str, str], str] = {}
    for path in files:
        rows = _read_rows(path)
        for i, row in enumerate(rows):
            key = (row["notebook"], row["paper"], row["claim"], row["setting"])
            if key in seen:
                raise ValueError(
                    f"{path}, row {i} repeats {seen[key]} (same notebook, paper, claim and setting "
                    f"{key[1:]!r}); each row must be recorded once"
                )
            seen[key] = f"{path}, row {i}"
        by_notebook[path.stem] = rows
    rows = [row for notebook_rows in by_notebook.values() for row in notebook_rows]
    totals = _totals(rows)

    markdown = _markdown(by_notebook, totals)
    as_json = json.dumps({"totals": totals, "notebooks": list(by_notebook), "rows": rows},
                         indent=2, allow_nan=False) + "\n"
    flat = [{**row, "authors_source": json.dumps(row["authors_source"]) if row["authors_source"] else None}
            for row in rows]
    as_csv = pd.DataFrame(flat, columns=list(COLUMNS)).to_csv(index=False)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except FileExistsError as exc:
        raise ValueError(f"cannot create the output folder {out}: a file is in the way ({exc})") from exc
    md_path = out / f"{REPORT_STEM}.md"
    _write_together({md_path: markdown, out / f"{REPORT_STEM}.json": as_json, out / f"{REPORT_STEM}.csv": as_csv})
    return md_path
